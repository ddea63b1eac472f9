/**
 * Runs across processes over a real nats-server (started by the test, JetStream in a temp dir):
 * an orchestrator and two `a2a host` processes; a host killed with SIGKILL in the middle; the NATS
 * server restarted in the middle; the orchestrator killed and resumed. Every run completes, and no
 * session's result is delivered twice.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aHost, a2aProcess, capture, killAll, savedWithCheckpoint, served, splitWorkspace, waitFor } from './cluster.js';
import { startNatsServer, type NatsServer } from './server.js';
import { faultWorkspace, sessionIds, tally } from '../faults/harness.js';

let server: NatsServer | null = null;

afterEach(async () => {
  killAll();
  await server?.stop();
  server = null;
});

const workspace = (partMs: number) => splitWorkspace({ partMs });
const host = (ws: string, id: string, agents: string) => a2aHost(server!.url, ws, id, agents);
const a2a = a2aProcess;

/** Waits until the parts run on their host: their "started" updates reached the run's event log. */
function partsStarted(ws: string, runId: string) {
  return waitFor('the parts to start on host-b', () => {
    try {
      return new FileRunStore(ws).events(runId).filter((e) => e.type === 'update.queued' && e.data.message === 'started').length >= 3;
    } catch {
      return false; // the run's files are not there yet
    }
  });
}

/** One result per session: in the run's events, each session settles once. */
function expectOneResultEach(events: RunEvent[], ids: string[]) {
  for (const id of ids) {
    const results = events.filter((e) => e.type === 'subtask.result' && e.subTaskId === id);
    expect(results.length, `results of ${id}`).toBe(1);
  }
  expect(events.filter((e) => e.type === 'warning' && String(e.data.message).startsWith('second result'))).toEqual([]);
}

describe('runs across processes over NATS', () => {
  it('deploys the worker to one host and its sub-tasks to another; results and updates cross back', async () => {
    server = await startNatsServer();
    const ws = workspace(100);
    const a = host(ws, 'host-a', 'architect');
    const b = host(ws, 'host-b', 'coder');
    await Promise.all([served(a), served(b)]);
    const c = capture();
    const code = await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'n-1', '--no-tree'], c.io);
    expect(code, c.out() + c.err()).toBe(0);
    const summary = new FileRunStore(ws).read('n-1').summary as RunSummary;
    expect(summary.tasks[0]!.result!.output).toBe('all parts built');
    const events = new FileRunStore(ws).events('n-1');
    // the tree spans three processes: the worker on host-a, its parts on host-b
    const placed = events.filter((e) => e.type === 'subtask.placed').map((e) => `${e.subTaskId}@${String(e.data.host)}`).sort();
    expect(placed).toEqual(['w-design.1@host-b', 'w-design.2@host-b', 'w-design.3@host-b', 'w-design@host-a']);
    // and the run's own tree says where each session ran
    expect(c.out()).toMatch(/design \(w-design\)\s+@architect\s+success\s+@host-a/);
    expect(c.out()).toMatch(/w-design\.3\s+@coder\s+success\s+@host-b/);
    expect(events.filter((e) => e.type === 'update.queued' && e.data.message === 'started' && e.workerId === 'w-design')).toHaveLength(3);
    expectOneResultEach(events, ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']);
    // the same plan again on the same hosts: session ids repeat, so everything on the wire is per run
    const again = capture();
    expect(await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'n-1b', '--no-tree'], again.io), again.out() + again.err()).toBe(0);
    const second = new FileRunStore(ws).events('n-1b');
    const parts = second.filter((e) => e.type === 'subtask.spawned').map((e) => e.subTaskId!);
    expect(parts).toHaveLength(3);
    expectOneResultEach(second, ['w-design', ...parts]);
    a.child.kill('SIGTERM');
    b.child.kill('SIGTERM');
    expect(await a.exited).toBe(0);
    expect(await b.exited).toBe(0);
    expect(a.out()).toContain('host host-a drained: 0 finished, 0 handed back');
  }, 60_000);

  it('completes when a host is killed with SIGKILL in the middle: another restores its sessions', async () => {
    server = await startNatsServer();
    const ws = workspace(1_500);
    const a = host(ws, 'host-a', 'architect');
    const b = host(ws, 'host-b', 'coder');
    await Promise.all([served(a), served(b)]);
    const c = capture();
    const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'n-2', '--no-tree'], c.io);
    await partsStarted(ws, 'n-2');
    // killed once host-a saved the worker (its first snapshot waits a moment, longer on a busy
    // machine): a host killed before it would leave nothing to restore, and host-c would start
    // the worker afresh (a flake seen once on a loaded machine)
    await savedWithCheckpoint(server.url, 'n-2.w-design');
    a.child.kill('SIGKILL');
    const a2 = host(ws, 'host-c', 'architect');
    await served(a2);
    expect(await running, c.out() + c.err()).toBe(0);
    const events = new FileRunStore(ws).events('n-2');
    expect(events.some((e) => e.type === 'session.restored' && e.subTaskId === 'w-design' && e.data.host === 'host-c')).toBe(true);
    expect((new FileRunStore(ws).read('n-2').summary as RunSummary).tasks[0]!.result!.output).toBe('all parts built');
    expectOneResultEach(events, ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']);
  }, 90_000);

  it('hands back what a draining host holds (SIGTERM): another host takes the sessions over and the run completes', async () => {
    server = await startNatsServer();
    const ws = workspace(2_000);
    const a = host(ws, 'host-a', 'architect');
    const b = a2aHost(server.url, ws, 'host-b', 'coder', { drainMs: 100 });
    await Promise.all([served(a), served(b)]);
    const c = capture();
    const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'n-5', '--no-tree'], c.io);
    await partsStarted(ws, 'n-5');
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    // the parts could not finish in 100 ms: handed back, with their last snapshots
    expect(b.out()).toMatch(/host host-b drained: 0 finished, 3 handed back \(w-design\.\d, w-design\.\d, w-design\.\d\)/);
    const b2 = host(ws, 'host-b2', 'coder');
    await served(b2);
    expect(await running, c.out() + c.err()).toBe(0);
    const events = new FileRunStore(ws).events('n-5');
    expect(events.filter((e) => e.type === 'session.restored' && e.data.host === 'host-b2').map((e) => e.subTaskId).sort()).toEqual(['w-design.1', 'w-design.2', 'w-design.3']);
    expectOneResultEach(events, ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']);
  }, 90_000);

  it('loses nothing when the NATS server restarts in the middle', async () => {
    server = await startNatsServer();
    const ws = workspace(1_500);
    const a = host(ws, 'host-a', 'architect');
    const b = host(ws, 'host-b', 'coder');
    await Promise.all([served(a), served(b)]);
    const c = capture();
    const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'n-3', '--no-tree'], c.io);
    await partsStarted(ws, 'n-3');
    await server.restart();
    expect(await running, c.out() + c.err()).toBe(0);
    const events = new FileRunStore(ws).events('n-3');
    expect((new FileRunStore(ws).read('n-3').summary as RunSummary).tasks[0]!.result!.output).toBe('all parts built');
    // every part's result crossed the restart, once
    expectOneResultEach(events, ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']);
  }, 90_000);

  it('resumes when the orchestrator is killed in the middle and started again with --resume', async () => {
    server = await startNatsServer();
    const ws = workspace(1_500);
    const a = host(ws, 'host-a', 'architect');
    const b = host(ws, 'host-b', 'coder');
    await Promise.all([served(a), served(b)]);
    const orch = a2a(['run', 'plan.json', '--nats', server.url, '--script', join(ws, 'script.json'), '--run-id', 'n-4', '--no-tree'], ws);
    await partsStarted(ws, 'n-4');
    orch.child.kill('SIGKILL');
    await orch.exited;
    const again = a2a(['run', '--resume', 'n-4', '--no-tree'], ws);
    expect(await again.exited, again.out()).toBe(0);
    const record = new FileRunStore(ws).read('n-4');
    expect(record.status).toBe('completed');
    const events = new FileRunStore(ws).events('n-4');
    expect(events.some((e) => e.type === 'run.resumed')).toBe(true);
    // the worker's result reached the orchestrator once, across the kill
    expect(events.filter((e) => e.type === 'task.completed')).toHaveLength(1);
    expectOneResultEach(events, ['w-design']);
    expect((record.summary as RunSummary).tasks[0]!.result!.output).toBe('all parts built');
  }, 90_000);
});

describe('ids across hosts', () => {
  it('gives every parent exactly its own children\'s results when two hosts run the same agent type', async () => {
    server = await startNatsServer();
    const plan = { workers: 6, parts: 3, partMs: 100 };
    const ws = faultWorkspace(plan, 'a2a-nats-ids-');
    await Promise.all([served(host(ws, 'host-a', 'architect')), served(host(ws, 'host-b', 'architect')), served(host(ws, 'host-c', 'coder'))]);
    const c = capture();
    const code = await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'ids-1', '--no-tree', '--max-workers', '6'], c.io);
    expect(code, c.out() + c.err()).toBe(0);
    const events = new FileRunStore(ws).events('ids-1');
    // the workers ran on both architect hosts, and their sub-tasks (numbered per parent) on host-c
    const placed = new Map(events.filter((e) => e.type === 'subtask.placed').map((e) => [e.subTaskId!, String(e.data.host)]));
    expect(new Set(sessionIds(plan).filter((id) => !id.includes('.')).map((id) => placed.get(id)))).toEqual(new Set(['host-a', 'host-b']));
    expect(tally(ws, 'ids-1', sessionIds(plan))).toEqual({ lost: [], duplicated: [] });
  }, 20_000);
});
