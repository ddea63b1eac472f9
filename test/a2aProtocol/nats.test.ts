/**
 * `a2a serve --a2a --nats` with the example server's permissions (the orchestrator user): tasks
 * are kept in the namespace's KV bucket, so that another server of the namespace, in another
 * workspace, reads them (GetTask, ListTasks, SubscribeToTask's replay). A served task's run answers
 * its control subject (the example's studio user asks it, as `a2a studio --nats` does).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aHost, a2aProcess, killAll, served, waitFor, type Proc } from '../nats/cluster.js';
import { examplePasswords, freePort, startNatsServer, type NatsServer } from '../nats/server.js';
import { tempDir } from '../helpers.js';
import { artifacts, clientOf, drain, message, send, SERVE_SCRIPT, states, taskIdOf } from './fixtures.js';

const root = resolve(import.meta.dirname, '../..');
const passwords = examplePasswords();
let nats: NatsServer;
const env = () => ({ ...process.env, A2A_NATS_USER: 'orchestrator', A2A_NATS_PASSWORD: passwords.A2A_ORCHESTRATOR_PASSWORD, A2A_NATS_INBOX_PREFIX: '_INBOX_orchestrator' });
const hostEnv = () => ({ ...process.env, A2A_NATS_USER: 'host-alpha', A2A_NATS_PASSWORD: passwords.A2A_HOST_ALPHA_PASSWORD, A2A_NATS_INBOX_PREFIX: '_INBOX_host-alpha' });

async function serve(ws: string, port: number): Promise<Proc> {
  writeFileSync(join(ws, 'script.json'), JSON.stringify(SERVE_SCRIPT));
  const p = a2aProcess(['serve', '--a2a', '--port', String(port), '--agent', 'coder', '--script', 'script.json', '--nats', nats.url], ws, env());
  await waitFor('the A2A server to listen', () => p.out().includes('a2a A2A server on ') || p.child.exitCode !== null, 20_000, p.out);
  if (p.child.exitCode !== null) throw new Error(`a2a serve exited: ${p.out()}`);
  return p;
}

let a: string;
let b: string;
let taskId = '';
let events: Awaited<ReturnType<typeof drain>>;

beforeAll(async () => {
  nats = await startNatsServer({ base: readFileSync(join(root, 'examples/nats/server.conf'), 'utf8'), env: passwords });
  const [pa, pb] = await Promise.all([freePort(), freePort()]);
  a = `http://127.0.0.1:${pa}`;
  b = `http://127.0.0.1:${pb}`;
  // with --nats the runs' workers are placed on hosts: one serves the coder
  const hostWs = tempDir('a2a-serve-nats-host-');
  writeFileSync(join(hostWs, 'script.json'), JSON.stringify(SERVE_SCRIPT));
  const host = a2aHost(nats.url, hostWs, 'alpha', 'coder', { heartbeatMs: 1_000, env: hostEnv() });
  await Promise.all([served(host), serve(tempDir('a2a-serve-nats-a-'), pa), serve(tempDir('a2a-serve-nats-b-'), pb)]);
  events = await drain(send(await clientOf(a), message('hello over nats', { skill: 'coder', contextId: 'ctx-nats' })));
  taskId = taskIdOf(events);
}, 25_000);

afterAll(async () => {
  killAll();
  await nats?.stop();
});

describe('a2a serve --a2a --nats', () => {
  it('runs the task on the server it was sent to', () => {
    expect(states(events).at(-1)).toBe('COMPLETED');
  });

  it('keeps the task in the namespace: another server reads it, lists it and replays it', async () => {
    const other = await clientOf(b);
    const task = await other.getTask({ tenant: '', id: taskId });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifacts(task)).toEqual(['print("hello world")']);
    const listed = await other.listTasks({ tenant: '', contextId: 'ctx-nats', status: 0, pageToken: '', statusTimestampAfter: undefined });
    expect(listed.tasks.map((t) => t.id)).toEqual([taskId]);
    // finished: read, not followed (SubscribeToTask on a finished task is refused, as the protocol says)
    await expect(drain(other.resubscribeTask({ tenant: '', id: taskId }))).rejects.toThrow(/has ended \(TASK_STATE_COMPLETED\): SubscribeToTask follows a task that is not finished; read it with GetTask/);
  });

  it('refuses a message or a cancel for a task another server runs, and leaves the task as it is; its run answers its control subject', async () => {
    // the studio user of the example: it hears which run serves the task, and asks that run
    const studio = await connect({ servers: nats.url, user: 'studio-ops', pass: passwords.A2A_STUDIO_OPS_PASSWORD, inboxPrefix: '_INBOX_studio-ops' });
    const runs = new Map<string, string>();
    studio.subscribe('a2a.default.events.*.a2a.served', { callback: (_e, m) => void (({ runId, data }) => runs.set(data.taskId, runId))(m.json<{ runId: string; data: { taskId: string } }>()) });
    await studio.flush();
    const onA = await clientOf(a);
    const running = taskIdOf(await drain(send(onA, message('work forever', { skill: 'coder', contextId: 'ctx-nats-2' })), (e) => states([e])[0] === 'WORKING'));
    await waitFor('the served task\'s run to be heard', () => runs.has(running), 5_000);
    const ask = async (body: unknown, timeout = 3_000) => (await studio.request(`a2a.default.control.${runs.get(running)!}.studio-ops`, JSON.stringify(body), { timeout })).json<Record<string, unknown>>();
    // the served task is heard a moment before its run answers its control subject (the run
    // subscribes as it starts, and across accounts the server says no "no responders": an early
    // request only times out), so the first answer is waited for, as the studio's feed polls again
    let status: Record<string, unknown> | null = null;
    for (let tries = 0; status === null && tries < 20; tries++) status = await ask({ command: 'status' }, 500).catch(() => null);
    expect(status).toMatchObject({ ok: true, record: { runId: runs.get(running), status: 'running' } });
    const log = (await ask({ command: 'events', after: -1 })) as { events: Array<{ type: string; data: { taskId?: string; state?: string } }> };
    expect(log.events.filter((e) => e.type === 'a2a.served').map((e) => e.data.taskId)).toContain(running);
    expect(await ask({ command: 'redirect', taskId: 'task', by: 'ann' })).toEqual({ ok: false, error: expect.stringMatching(/^invalid request: instructions: /) });
    await studio.close();
    const onB = await clientOf(b);
    await expect(onB.cancelTask({ tenant: '', id: running, metadata: undefined })).rejects.toThrow(/runs on the A2A server serving .*: send its messages and its cancel there/);
    await expect(drain(send(onB, message('more', { taskId: running, contextId: 'ctx-nats-2' })))).rejects.toThrow(/runs on the A2A server serving/);
    expect((await onA.getTask({ tenant: '', id: running })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect((await onA.cancelTask({ tenant: '', id: running, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('was allowed every request by the orchestrator user\'s permissions', () => {
    expect(nats.log()).not.toMatch(/Permissions Violation.*protocol_tasks/);
  });
});
