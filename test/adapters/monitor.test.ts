/**
 * The monitor's aggregator (adapters/monitor.ts), fed by hand: no NATS, no timers. The tree with
 * the host of each session, host liveness (lost after 3 missed heartbeats), the metrics, the view.
 */
import { describe, expect, it } from 'vitest';
import { MonitorState, renderMonitor, stats, type MonitorEvent, type ReceivedHeartbeat } from '../../adapters/monitor.js';
import type { RunEventType } from '../../machines/protocol/index.js';
import { main } from '../../bin/cli.js';

let seq = 0;
function ev(type: RunEventType, ts: number, fields: Partial<MonitorEvent> = {}, data: Record<string, unknown> = {}): MonitorEvent {
  return { type, runId: 'r1', seq: seq++, ts, data, origin: 'run-r1', ...fields };
}

function beat(hostId: string, at: number, over: Partial<ReceivedHeartbeat> = {}): ReceivedHeartbeat {
  return { hostId, agents: ['coder'], concurrency: 4, running: 0, sessions: [], startedAt: 0, at, status: 'ready', ...over };
}

const worker = { taskId: 'design', workerId: 'w-design', subTaskId: 'w-design', parentId: 'orchestrator', depth: 0, agentType: '@architect' };
const part = (i: number) => ({ taskId: 'design', workerId: 'w-design', subTaskId: `st-${i}`, parentId: 'w-design', depth: 1, agentType: '@coder' });

/** A run: the worker on host-a, two parts on host-b (one fails), one local grandchild of st-1. */
function run(state: MonitorState): void {
  state.apply(ev('run.started', 1_000, {}, { planId: 'p', tasks: 1 }));
  state.apply(ev('worker.deployed', 1_000, worker, { prompt: 'design it' }));
  state.apply(ev('subtask.placed', 1_040, worker, { host: 'host-a', restored: false }));
  state.apply(ev('subtask.spawned', 1_100, { ...part(1), origin: 'host-a' }, { prompt: 'part 1' }));
  state.apply(ev('subtask.spawned', 1_100, { ...part(2), origin: 'host-a' }, { prompt: 'part 2' }));
  state.apply(ev('subtask.placed', 1_120, { ...part(1), origin: 'host-a' }, { host: 'host-b', restored: false }));
  state.apply(ev('subtask.placed', 1_160, { ...part(2), origin: 'host-a' }, { host: 'host-b', restored: false }));
  // a child of st-1 of a type host-b serves: it runs on host-b, in st-1's process
  state.apply(ev('subtask.spawned', 1_200, { taskId: 'design', workerId: 'w-design', subTaskId: 'st-1.1', parentId: 'st-1', depth: 2, agentType: '@coder', origin: 'host-b' }, { prompt: 'a detail' }));
  state.apply(ev('tool.called', 1_250, { ...part(2), origin: 'host-b' }, { name: 'read_file', isError: true }));
  state.apply(ev('tool.called', 1_260, { ...part(2), origin: 'host-b' }, { name: 'read_file' }));
  state.apply(ev('subtask.result', 1_400, { taskId: 'design', workerId: 'w-design', subTaskId: 'st-1.1', parentId: 'st-1', depth: 2, agentType: '@coder', origin: 'host-b' }, { status: 'success', output: 'ok' }));
  state.apply(ev('subtask.result', 1_620, { ...part(1), origin: 'host-a' }, { status: 'success', output: 'ok' }));
  state.apply(ev('subtask.result', 2_160, { ...part(2), origin: 'host-a' }, { status: 'failed', output: '', error: 'boom' }));
}

describe('MonitorState', () => {
  it('builds the tree with the host of every session', () => {
    const state = new MonitorState();
    run(state);
    const snap = state.snapshot(3_000);
    expect(snap.runs).toHaveLength(1);
    const r = snap.runs[0]!;
    expect(r.runId).toBe('r1');
    expect(r.status).toBe('running');
    expect(r.processes).toEqual(['host-a', 'host-b', 'run-r1']);
    const [w] = r.tree;
    expect(w).toMatchObject({ id: 'w-design', host: 'host-a', placed: true, queueLatencyMs: 40, status: 'running' });
    expect(w!.children.map((c) => [c.id, c.host, c.status, c.queueLatencyMs])).toEqual([
      ['st-1', 'host-b', 'success', 20],
      ['st-2', 'host-b', 'failed', 60],
    ]);
    // not placed: it runs where it was spawned
    expect(w!.children[0]!.children[0]).toMatchObject({ id: 'st-1.1', host: 'host-b', placed: false, queueLatencyMs: null, elapsedMs: 200 });
    expect(state.placement('r1', 'st-2')).toEqual({ host: 'host-b', queueLatencyMs: 60 });
  });

  it('computes completion rate, execution time, queue latency and error rates', () => {
    const state = new MonitorState();
    run(state);
    const m = state.metrics(3_000);
    expect(m.sessions).toEqual({ spawned: 4, running: 1, settled: 3, succeeded: 2, failed: 1 });
    expect(m.completionRate).toBe(0.667);
    // st-1.1: 1200 → 1400 (spawned; not placed), st-1: 1120 → 1620, st-2: 1160 → 2160
    expect(m.executionMs).toEqual({ count: 3, avg: 566.7, p50: 500, p95: 1000, max: 1000 });
    expect(m.queueLatencyMs).toEqual({ count: 3, avg: 40, p50: 40, p95: 60, max: 60 });
    expect(m.errorRates.byType).toEqual({
      'result.failed': { count: 1, rate: 0.333, per: 'settled sessions' },
      'tool.failed': { count: 1, rate: 0.5, per: 'tool calls' },
    });
    expect(m.errorRates.total).toBe(2);

    state.apply(ev('subtask.result', 2_500, worker, { status: 'success', output: 'done' }));
    state.apply(ev('run.finished', 2_600, {}, { status: 'completed' }));
    expect(state.finished('r1')).toBe(true);
    const after = state.snapshot(3_000);
    expect(after.runs[0]!.status).toBe('completed');
    expect(after.metrics.completionRate).toBe(0.75);
    expect(after.metrics.sessions.running).toBe(0);
  });

  it('matches tool calls by call id: one told again (by a host that took the session over, or a relay) counts once', () => {
    const state = new MonitorState();
    run(state);
    const call = (origin: string, callId: string, isError: boolean) =>
      state.apply(ev('tool.called', 1_300, { ...part(1), origin }, { name: 'run_command', isError, callId, turn: 2 }));
    call('host-b', 'call_7', true);
    call('host-c', 'call_7', true); // the same call, told by the host that restored st-1
    call('host-b', 'call_8', false);
    // the same call id in another turn is another call (providers reuse "call_0" from one reply to the next)
    state.apply(ev('tool.called', 1_310, { ...part(1), origin: 'host-b' }, { name: 'run_command', isError: false, callId: 'call_8', turn: 3 }));
    const m = state.metrics(3_000);
    // run(): 2 calls without ids (1 failed); here 3 distinct calls (1 failed)
    expect(m.errorRates.byType['tool.failed']).toEqual({ count: 2, rate: 0.4, per: 'tool calls' });
  });

  it('counts a restored session once in the queue latency and moves it to its new host', () => {
    const state = new MonitorState();
    run(state);
    state.apply(ev('session.restored', 2_200, { ...worker, origin: 'host-c' }, { host: 'host-c', savedAt: 2_100 }));
    state.apply(ev('subtask.placed', 2_210, worker, { host: 'host-c', restored: true }));
    const snap = state.snapshot(3_000);
    expect(snap.runs[0]!.tree[0]).toMatchObject({ host: 'host-c', restored: 1, queueLatencyMs: 40 });
    expect(snap.metrics.queueLatencyMs.count).toBe(3);
  });

  it('counts limits, circuit breakers, stuck sessions and warnings by type', () => {
    const state = new MonitorState();
    run(state);
    state.apply(ev('limit.hit', 2_000, part(1), { code: 'DEPTH_LIMIT_EXCEEDED', message: 'too deep' }));
    state.apply(ev('circuit.open', 2_000, part(2), { failures: 5 }));
    state.apply(ev('warning', 2_000, { runId: 'host' }, { message: 'x' }));
    const byType = state.metrics(3_000).errorRates.byType;
    expect(byType['limit.DEPTH_LIMIT_EXCEEDED']).toEqual({ count: 1, rate: 0.25, per: 'sessions' });
    expect(byType['circuit.open']!.count).toBe(1);
    expect(byType.warning!.count).toBe(1);
    // host events open no run
    expect(state.runIds()).toEqual(['r1']);
  });

  it('has no rates before anything settled', () => {
    const m = new MonitorState().metrics(0);
    expect(m.completionRate).toBeNull();
    expect(m.executionMs).toEqual({ count: 0, avg: null, p50: null, p95: null, max: null });
    expect(m.errorRates).toEqual({ total: 0, byType: {} });
  });
});

describe('host liveness', () => {
  it('reports load and sessions; a host is lost after 3 missed heartbeats of its own interval', () => {
    const state = new MonitorState();
    expect(state.applyHeartbeat(beat('host-a', 1_000, { running: 1, sessions: ['w-design'] }), 1_000)).toEqual({ host: 'host-a', from: null, to: 'ready' });
    expect(state.applyHeartbeat(beat('host-a', 1_200, { running: 2, sessions: ['w-design', 'w-x'] }), 1_205)).toBeNull();
    const h = state.snapshot(1_300).hosts[0]!;
    expect(h).toEqual({ id: 'host-a', alive: true, state: 'ready', agents: ['coder'], load: 0.5, running: 2, capacity: 4, sessions: ['w-design', 'w-x'], lastSeenMs: 95, heartbeatMs: 200, startedAt: 0, invalidRecords: [] });
    // interval 200 (inferred): silent up to 600 ms is still alive
    expect(state.tick(1_805)).toEqual([]);
    expect(state.tick(1_806)).toEqual([{ host: 'host-a', from: 'ready', to: 'lost' }]);
    expect(state.snapshot(1_900).hosts[0]).toMatchObject({ alive: false, state: 'lost', lastSeenMs: 695 });
    expect(state.metrics(1_900).errorRates.byType['host.lost']).toMatchObject({ count: 1 });
    // heard from again
    expect(state.applyHeartbeat(beat('host-a', 2_000), 2_000)).toEqual({ host: 'host-a', from: 'lost', to: 'ready' });
  });

  it('shows the records hosts skip as invalid, once per key, so that a bad record is seen and not silently in the way', () => {
    const state = new MonitorState();
    const bad = { key: 'snapshots/r-1.w-x', problem: 'spec: Invalid input: expected object, received undefined' };
    state.applyHeartbeat(beat('host-a', 1_000, { invalidRecords: [bad] }), 1_000);
    state.applyHeartbeat(beat('host-b', 1_000, { invalidRecords: [bad, { key: 'hosts/ghost', problem: 'hostId: Required' }] }), 1_000);
    const text = renderMonitor(state, 1_100).join('\n');
    expect(text).toContain('invalid records skipped (2)');
    expect(text.match(/snapshots\/r-1\.w-x/g)).toHaveLength(1);
    expect(text).toContain('hosts/ghost  hostId: Required');
  });

  it('uses the interval a heartbeat carries, and the default until it knows one', () => {
    const state = new MonitorState({ defaultHeartbeatMs: 1_000 });
    state.applyHeartbeat(beat('a', 0), 0);
    state.applyHeartbeat(beat('b', 0, { intervalMs: 100 }), 0);
    expect(state.tick(301)).toEqual([{ host: 'b', from: 'ready', to: 'lost' }]);
    expect(state.tick(3_001)).toEqual([{ host: 'a', from: 'ready', to: 'lost' }]);
  });

  it('is not fooled by a drain heartbeat right after a regular one', () => {
    const state = new MonitorState();
    state.applyHeartbeat(beat('a', 0), 0);
    state.applyHeartbeat(beat('a', 200), 200);
    state.applyHeartbeat(beat('a', 205, { status: 'draining' }), 205);
    expect(state.snapshot(500).hosts[0]).toMatchObject({ state: 'draining', alive: true, heartbeatMs: 200 });
    // a drained host that falls silent left: it was not lost
    expect(state.tick(900)).toEqual([{ host: 'a', from: 'draining', to: 'gone' }]);
    expect(state.metrics(900).hosts).toEqual({ alive: 0, lost: 0, gone: 1 });
  });

  it('takes a stale registration from the hosts bucket as lost, ignores older copies, believes host.lost from a peer', () => {
    const state = new MonitorState();
    state.tick(60_000);
    expect(state.applyHeartbeat(beat('old', 1_000))).toEqual({ host: 'old', from: null, to: 'lost' });
    state.applyHeartbeat(beat('a', 59_900), 60_000);
    expect(state.applyHeartbeat(beat('a', 59_800))).toBeNull();
    expect(state.apply(ev('host.lost', 60_050, { runId: 'host', origin: 'b' }, { host: 'a', sessions: [] }))).toEqual([{ host: 'a', from: 'ready', to: 'lost' }]);
    expect(state.snapshot(60_100).hosts.find((h) => h.id === 'a')!.alive).toBe(false);
    state.applyHeartbeat(beat('a', 60_100), 60_100);
    expect(state.snapshot(60_150).hosts.find((h) => h.id === 'a')!.alive).toBe(true);
  });

  it('says which agent types are available, with free slots on live ready hosts', () => {
    const state = new MonitorState();
    state.applyHeartbeat(beat('a', 0, { agents: ['architect'], running: 1, concurrency: 2 }), 0);
    state.applyHeartbeat(beat('b', 0, { agents: ['coder', 'reviewer'], running: 3, concurrency: 4 }), 0);
    state.applyHeartbeat(beat('c', 0, { agents: ['reviewer'], concurrency: 2, status: 'draining' }), 0);
    expect(state.metrics(100).agentAvailability).toEqual({
      architect: { hosts: 1, alive: 1, capacity: 2, running: 1, free: 1, available: true },
      coder: { hosts: 1, alive: 1, capacity: 4, running: 3, free: 1, available: true },
      reviewer: { hosts: 2, alive: 2, capacity: 6, running: 3, free: 1, available: true },
    });
    state.tick(10_000);
    expect(state.metrics(10_000).agentAvailability.coder).toEqual({ hosts: 1, alive: 0, capacity: 0, running: 0, free: 0, available: false });
  });
});

describe('stats', () => {
  it('nearest-rank percentiles', () => {
    expect(stats([5])).toEqual({ count: 1, avg: 5, p50: 5, p95: 5, max: 5 });
    const hundred = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(stats(hundred)).toMatchObject({ avg: 50.5, p50: 50, p95: 95, max: 100 });
  });
});

describe('renderMonitor', () => {
  it('draws hosts, the tree with hosts, and the metrics', () => {
    const state = new MonitorState();
    state.applyHeartbeat(beat('host-a', 900, { agents: ['architect'], running: 1, sessions: ['w-design'] }), 900);
    state.applyHeartbeat(beat('host-b', 900, { running: 2, sessions: ['st-1', 'st-2'] }), 900);
    run(state);
    const text = renderMonitor(state, 2_200, { title: 'a2a monitor · nats://127.0.0.1:4222' }).join('\n');
    expect(text).toContain('a2a monitor · nats://127.0.0.1:4222');
    expect(text).toMatch(/host-a\s+ready\s+1\/4\s+architect/);
    expect(text).toMatch(/host-b\s+ready\s+2\/4\s+coder/);
    expect(text).toMatch(/design \(w-design\)\s+@architect\s+running\s+@host-a/);
    expect(text).toMatch(/├─ st-1\s+@coder\s+success\s+@host-b/);
    expect(text).toMatch(/st-1\.1\s+@coder\s+success\s+@host-b/);
    expect(text).toContain('completion 66.7% (2/3)');
    expect(text).toMatch(/queue\s+avg 40ms\s+p50 40ms\s+p95 60ms\s+\(n=3\)/);
    expect(text).toContain('result.failed 1 (33.3% of settled sessions)');
    expect(text).toContain('architect 3/4 free on 1 host(s)');
    expect(text).not.toMatch(/\x1b\[/);
  });
});

describe('a2a monitor options', () => {
  const capture = () => {
    let out = '';
    let err = '';
    return { io: { stdout: { write: (s: string) => ((out += s), true) }, stderr: { write: (s: string) => ((err += s), true) } } as never, text: () => out + err };
  };

  it.each([
    [['--for', 'soon'], '--for must be an integer >= 1, got "soon"'],
    [['--interval', '10'], '--interval must be an integer >= 50, got "10"'],
    [['--run', 'a.b'], '--run may contain letters, digits, "_" and "-" only, got "a.b"'],
    [['--namespace', 'x>'], '--namespace may contain letters, digits, "_" and "-" only, got "x>"'],
  ])('rejects %j', async (args, message) => {
    const c = capture();
    expect(await main(['monitor', '--nats', 'nats://127.0.0.1:1', ...args], c.io)).toBe(2);
    expect(c.text()).toContain(message);
  });

  it('needs --nats, and --run with --until-done', async () => {
    const c = capture();
    expect(await main(['monitor'], c.io)).toBe(2);
    expect(c.text()).toContain("required option '--nats <url>' not specified");
    const d = capture();
    expect(await main(['monitor', '--nats', 'nats://127.0.0.1:1', '--until-done'], d.io)).toBe(2);
    expect(d.text()).toContain('--until-done needs --run <runId>');
  });
});
