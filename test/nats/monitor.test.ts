/**
 * `a2a monitor` over a real nats-server: two `a2a host` processes (architect on host-a, coder on
 * host-b) and a run across them; the monitor runs in this process (`main([...])`) and must see the
 * tree across both hosts, the hosts alive with their load, the metrics; then host-a is killed with
 * SIGKILL and must show as lost (in --json and in the human view).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import type { MonitorSnapshot, TreeNode } from '../../adapters/monitor.js';
import { a2aHost as startHost, capture as captureIo, killAll, splitWorkspace, waitFor } from './cluster.js';
import { startNatsServer, type NatsServer } from './server.js';

/** The hosts' heartbeat: a host is lost after 3 missed ones. */
const HEARTBEAT_MS = 300;
let server: NatsServer | null = null;

afterEach(async () => {
  killAll();
  await server?.stop();
  server = null;
});

const a2aHost = (ws: string, id: string, agents: string) => startHost(server!.url, ws, id, agents, { heartbeatMs: HEARTBEAT_MS, drainMs: 1_000 });

/** A capturing io whose NDJSON lines can be read back. */
function capture(tty = false) {
  const c = captureIo(tty);
  return {
    ...c,
    lines: () =>
      c
        .out()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { kind: string; [k: string]: unknown }),
  };
}

type Snapshot = MonitorSnapshot & { kind: 'snapshot'; final?: boolean };
const snapshots = (c: ReturnType<typeof capture>) => c.lines().filter((l): l is Snapshot & { [k: string]: unknown } => l.kind === 'snapshot');
const hostIn = (s: Snapshot, id: string) => s.hosts.find((h) => h.id === id);

const workspace = (partMs: number) => splitWorkspace({ partMs, notify: false, planId: 'mon', prefix: 'a2a-monitor-ws-' });

describe('a2a monitor over NATS', () => {
  it('shows a run across two hosts (tree with hosts, load, metrics), then a host killed with SIGKILL as lost', async () => {
    const started = Date.now();
    server = await startNatsServer();
    const ws = workspace(800);
    const a = a2aHost(ws, 'host-a', 'architect');
    const b = a2aHost(ws, 'host-b', 'coder');
    await waitFor('the hosts to serve', () => a.out().includes(' serves ') && b.out().includes(' serves '));

    // the monitor, watching run m-1 until it is done
    const mon = capture();
    const monitoring = main(['monitor', '--nats', server.url, '--json', '--until-done', '--run', 'm-1', '--interval', '100', '--for', '45000'], mon.io);
    // and the view on a terminal
    const screen = capture(true);
    const viewing = main(['monitor', '--nats', server.url, '--until-done', '--run', 'm-1', '--for', '45000'], screen.io);
    // its first snapshot comes once it listens; both hosts are registered by then
    const context = () => `monitor:\n${mon.out().slice(-3_000)}${mon.err()}\nhost-a:\n${a.out()}\nhost-b:\n${b.out()}`;
    await waitFor('the monitor to see both hosts', () => snapshots(mon).some((s) => hostIn(s, 'host-a')?.alive && hostIn(s, 'host-b')?.alive), 20_000, context);
    await waitFor('the view to show both hosts', () => /host-b\s+\S*ready/.test(screen.out()));

    const run = capture();
    const code = await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'm-1', '--no-tree'], run.io);
    expect(code, run.out() + run.err()).toBe(0);
    expect(await monitoring, mon.err()).toBe(0);
    expect(await viewing, screen.err()).toBe(0);
    // redrawn in place; its last drawing shows the whole tree with hosts
    const drawings = screen.out().split(/\x1b\[\d+F/);
    expect(drawings.length).toBeGreaterThan(1);
    const lastDrawing = drawings.at(-1)!.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '');
    expect(lastDrawing).toMatch(/design \(w-design\)\s+@architect\s+success\s+@host-a/);
    expect(lastDrawing).toMatch(/w-design\.3\s+@coder\s+success\s+@host-b/);
    expect(lastDrawing).toContain('completion 100% (4/4)');

    const lines = mon.lines();
    const events = lines.filter((l) => l.kind === 'event');
    // the run's events come from the orchestrator, from host-a (the worker's supervisor places
    // its parts on host-b) and from host-b (its sessions' states and model calls); hosts may add
    // host events (host.joined …, run id `host`)
    const origins = (run: string) => new Set(events.filter((e) => e.runId === run).map((e) => e.origin));
    expect(origins('m-1')).toEqual(new Set(['run-m-1', 'host-a', 'host-b']));
    expect(events.some((e) => e.origin === 'host-b' && e.type === 'session.state' && String(e.subTaskId).startsWith('w-design.'))).toBe(true);
    expect(events.every((e) => e.runId === 'm-1' || e.runId === 'host')).toBe(true);
    const all = snapshots(mon);
    const last = all.at(-1)!;
    expect(last.final).toBe(true);
    expect(lines.at(-1)).toEqual(last); // the final snapshot is the last line
    expect(events.some((e) => e.type === 'run.finished')).toBe(true);

    // the tree across hosts: the worker on host-a, its parts on host-b
    expect(last.runs.map((r) => [r.runId, r.status])).toEqual([['m-1', 'completed']]);
    const tree = last.runs[0]!.tree;
    const flat = (nodes: TreeNode[]): string[] => nodes.flatMap((n) => [`${n.id}@${n.host}:${n.status}`, ...flat(n.children)]);
    expect(flat(tree).sort()).toEqual(['w-design.1@host-b:success', 'w-design.2@host-b:success', 'w-design.3@host-b:success', 'w-design@host-a:success']);
    expect(tree[0]!.children.map((c) => c.id).sort()).toEqual(['w-design.1', 'w-design.2', 'w-design.3']);
    expect(last.runs[0]!.processes).toEqual(['host-a', 'host-b', 'run-m-1']);

    // both hosts alive, each seen with load while the run ran
    // (not asserted on the final snapshot alone: a host busy on a loaded machine may skip a heartbeat or two)
    expect(hostIn(last, 'host-a')).toMatchObject({ agents: ['architect'], capacity: 4 });
    expect(hostIn(last, 'host-b')).toMatchObject({ agents: ['coder'], capacity: 4 });
    const busy = (s: Snapshot, id: string) => hostIn(s, id)?.alive === true && hostIn(s, id)!.load > 0 && hostIn(s, id)!.running > 0;
    const hostLines = () => JSON.stringify(all.map((s) => s.hosts.map((h) => `${h.id}:${h.state}:${h.running}:${h.lastSeenMs}`).join(' ')));
    expect(all.some((s) => busy(s, 'host-a') && hostIn(s, 'host-a')!.sessions.includes('m-1.w-design')), hostLines()).toBe(true);
    expect(all.some((s) => busy(s, 'host-b')), hostLines()).toBe(true);
    expect(all.some((s) => busy(s, 'host-a') && busy(s, 'host-b')), hostLines()).toBe(true);

    // metrics
    const m = last.metrics;
    expect(m.sessions).toEqual({ spawned: 4, running: 0, settled: 4, succeeded: 4, failed: 0 });
    expect(m.completionRate).toBe(1);
    expect(m.queueLatencyMs.count).toBe(4);
    expect(m.queueLatencyMs.avg!).toBeGreaterThan(0);
    expect(m.executionMs.count).toBe(4);
    expect(m.executionMs.max!).toBeGreaterThanOrEqual(800); // a part takes 800 ms
    expect(m.errorRates.byType).not.toHaveProperty('result.failed');
    expect(m.agentAvailability.coder).toMatchObject({ alive: 1, available: true });

    // a monitor of the whole namespace in JSON, and one for a person (no TTY: appended lines)
    const watchJson = capture();
    const watchText = capture();
    const jsonDone = main(['monitor', '--nats', server.url, '--json', '--interval', '100'], watchJson.io);
    const textDone = main(['monitor', '--nats', server.url], watchText.io);
    // alive, and its heartbeat interval learnt from its heartbeats: it is lost after 3 missed ones
    const watching = () => `json:\n${watchJson.out().slice(-3_000)}\ntext:\n${watchText.out()}`;
    await waitFor('the monitors to see host-a alive', () => snapshots(watchJson).some((s) => hostIn(s, 'host-a')?.alive && hostIn(s, 'host-a')!.heartbeatMs < 2_000) && watchText.out().includes('+ host host-a up'), 20_000, watching);
    a.child.kill('SIGKILL');
    await waitFor('host-a lost in JSON', () => watchJson.lines().some((l) => l.kind === 'host' && l.host === 'host-a' && l.to === 'lost'), 20_000, watching);
    await waitFor('host-a lost in the text', () => watchText.out().includes('✗ host host-a lost'), 20_000, watching);
    watchJson.stop();
    watchText.stop();
    expect(await jsonDone).toBe(0);
    expect(await textDone).toBe(0);
    const final = snapshots(watchJson).at(-1)!;
    expect(hostIn(final, 'host-a')).toMatchObject({ alive: false, state: 'lost' });
    expect(hostIn(final, 'host-a')!.lastSeenMs).toBeGreaterThanOrEqual(HEARTBEAT_MS * 2.5); // 3 missed heartbeats
    expect(hostIn(final, 'host-b')).toMatchObject({ agents: ['coder'] });
    expect(final.metrics.agentAvailability.architect).toMatchObject({ alive: 0, available: false });
    expect(watchText.out()).toMatch(/host-a\s+LOST/);
    expect(watchText.out()).not.toContain('\x1b[');

    // a run that never comes: --for ends the wait, with an error
    const never = capture();
    expect(await main(['monitor', '--nats', server.url, '--json', '--run', 'nope', '--until-done', '--for', '300'], never.io)).toBe(1);
    expect(never.err()).toContain('run nope did not finish within 300ms');
    expect(snapshots(never).at(-1)).toMatchObject({ final: true, runs: [] });

    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    expect(Date.now() - started).toBeLessThan(40_000);
  }, 60_000);
});
