/**
 * The A2A server killed (SIGKILL) while a task runs, and started again: the task's record holds
 * every event sent, the run is resumed, and a client that resubscribes gets what it missed and
 * the task's one terminal state.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aProcess, killAll, waitFor, type Proc } from '../nats/cluster.js';
import { freePort } from '../nats/server.js';
import { tempDir } from '../helpers.js';
import { artifacts, clientOf, drain, lastStatusText, message, send, SERVE_SCRIPT, seqOf, states, taskIdOf } from './fixtures.js';

let ws: string;
let port: number;
let before: Awaited<ReturnType<typeof drain>>;
let after: Awaited<ReturnType<typeof drain>>;
let taskId = '';
let foreverId = '';
let second: Proc;

async function serve(): Promise<Proc> {
  const p = a2aProcess(['serve', '--a2a', '--port', String(port), '--agent', 'coder', '--script', 'script.json'], ws);
  await waitFor('the A2A server to listen', () => p.out().includes('a2a A2A server on ') || p.child.exitCode !== null, 20_000, p.out);
  if (p.child.exitCode !== null) throw new Error(`a2a serve exited: ${p.out()}`);
  return p;
}

beforeAll(async () => {
  ws = tempDir('a2a-serve-restart-');
  port = await freePort();
  writeFileSync(join(ws, 'script.json'), JSON.stringify(SERVE_SCRIPT));
  const first = await serve();
  const url = `http://127.0.0.1:${port}`;
  // the worker's only model call takes 1.5 s: the kill lands while it runs
  before = await drain(send(await clientOf(url), message('take it slow', { skill: 'coder' })), (e) => states([e])[0] === 'WORKING');
  taskId = taskIdOf(before);
  // and one that never ends by itself: cancelled after the restart
  foreverId = taskIdOf(await drain(send(await clientOf(url), message('work forever', { skill: 'coder' })), (e) => states([e])[0] === 'WORKING'));
  first.child.kill('SIGKILL');
  await new Promise((done) => first.child.once('exit', done));
  second = await serve();
  after = await drain((await clientOf(url)).resubscribeTask({ tenant: '', id: taskId }));
}, 25_000);

afterAll(() => killAll());

describe('a2a serve --a2a killed mid-task', () => {
  it('resumes the task\'s run when it starts again, and says so', () => {
    expect(second.out()).toMatch(/unfinished tasks: 2 resumed/);
    expect(after.some((e) => /^the server restarted: run .* resumed$/.test(lastStatusText([e])))).toBe(true);
  });

  it('replays what the client saw before the kill, then follows the task to one terminal state', async () => {
    const seqs = after.map(seqOf).filter((n): n is number => n !== undefined);
    expect(seqs[0]).toBe(2);
    expect(seqs).toEqual(seqs.map((_, i) => 2 + i));
    const seenBefore = before.map(seqOf).filter((n): n is number => n !== undefined);
    expect(seqs.slice(0, seenBefore.length)).toEqual(seenBefore);
    expect(states(after).filter((s) => ['COMPLETED', 'FAILED', 'CANCELED'].includes(s))).toEqual(['COMPLETED']);
    const task = await (await clientOf(`http://127.0.0.1:${port}`)).getTask({ tenant: '', id: taskId });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifacts(task)).toContain('slow but done');
  });

  it('cancels a task it resumed: its run stops, and the task ends CANCELED once', async () => {
    const client = await clientOf(`http://127.0.0.1:${port}`);
    const cancelled = await client.cancelTask({ tenant: '', id: foreverId, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // its record holds one terminal state (a finished task is read, not followed: SubscribeToTask is refused)
    const logged = readFileSync(join(ws, '.a2a', 'a2a-protocol', 'tasks', `${foreverId}.events.jsonl`), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as { event: { statusUpdate?: { status?: { state?: string } } } });
    const terminal = logged.map((e) => e.event.statusUpdate?.status?.state).filter((s) => s !== undefined && ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED'].includes(s));
    expect(terminal).toEqual(['TASK_STATE_CANCELED']);
    await expect(drain(client.resubscribeTask({ tenant: '', id: foreverId }))).rejects.toThrow(/has ended/);
    const runId = JSON.parse(readFileSync(join(ws, '.a2a', 'a2a-protocol', 'tasks', `${foreverId}.json`), 'utf8')).runId as string;
    await waitFor('the run to be recorded cancelled', () => JSON.parse(readFileSync(join(ws, '.a2a', 'runs', runId, 'run.json'), 'utf8')).status === 'cancelled', 5_000);
  });
});
