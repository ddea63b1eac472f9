/**
 * What `a2a monitor` knows about a namespace, rebuilt from what it hears on NATS alone: run events
 * (from every process: orchestrators and hosts) and host heartbeats. Pure: no transport, no timers;
 * the caller feeds it (`apply`, `applyHeartbeat`), says what time it is (`tick`) and reads it
 * (`snapshot`, `renderMonitor`).
 *
 * - **Tree**: per run, the tree of `actors/observation/runView.ts` (the same one `a2a run` draws), each session
 *   with the host it runs on: where it was placed (`subtask.placed`, `session.restored`), else the
 *   process that spawned it (a local child runs in its parent's process).
 * - **Hosts**: agent types, capacity, load and sessions from their heartbeats. A host is lost once
 *   it missed `missedBeats` (3) heartbeats: its interval is the heartbeat's `intervalMs` when it
 *   carries one, else the smallest gap seen between two of its heartbeats, else `defaultHeartbeatMs`
 *   (the hosts' default, 2 s). A host whose last heartbeat said `draining` and then fell silent has
 *   left (`gone`) rather than been lost.
 * - **A2A tasks**: per run, the task `a2a serve --a2a` serves in it and the tasks its sessions
 *   delegated to remote A2A agents (actors/observation/a2aView.ts), each with its state; a delegated
 *   session's node names its remote task.
 * - **Metrics** (seed 004): completion rate (successful or partial results of the settled sessions),
 *   execution time (placed or spawned → result), queue latency (spawn request → placed on a host:
 *   both times are the owner's clock), error rates by type, agent availability (live hosts and free
 *   slots per agent type).
 */
import { z } from 'zod';
import { HostHeartbeat, RunEvent } from '../machines/protocol/index.js';
import { formatElapsed, oneLine, RunView, type NodeView } from '../actors/observation/runView.js';
import { factKey } from '../actors/observation/events.js';
import { A2AView, type DelegatedTaskView, type ServedTaskView } from '../actors/observation/a2aView.js';
import { palette, renderTree } from './terminal.js';

/** A heartbeat as received: the protocol's, plus an interval if the host says it. */
export const ReceivedHeartbeat = HostHeartbeat.extend({ intervalMs: z.number().int().positive().optional() });
export type ReceivedHeartbeat = z.infer<typeof ReceivedHeartbeat>;

/** A run event as received: the protocol's, plus the process that published it. */
export type MonitorEvent = RunEvent & { origin?: string };

export type HostState = 'ready' | 'draining' | 'lost' | 'gone';

export interface HostView {
  id: string;
  alive: boolean;
  state: HostState;
  agents: string[];
  /** Sessions it runs / its capacity (0..1). */
  load: number;
  running: number;
  capacity: number;
  /** The sessions it said it runs (the top sessions it took from the queue). */
  sessions: string[];
  /** Since its last heartbeat. */
  lastSeenMs: number;
  heartbeatMs: number;
  startedAt: number;
  /** Records of the snapshots and hosts buckets this host skips as invalid (key and why). */
  invalidRecords: Array<{ key: string; problem: string }>;
  /** Its process's memory, when it reports it. */
  memory?: { rss: number; heapUsed: number };
}

export interface TreeNode {
  id: string;
  taskId?: string;
  agentType: string;
  depth: number;
  status: string;
  /** Where it runs: a host id, or the process that spawned it (`run-<runId>` for the orchestrator). */
  host: string | null;
  /** True when a host took it from the queue (else it runs in its parent's process). */
  placed: boolean;
  /** Times it was restored on another host after its host was lost or drained. */
  restored: number;
  elapsedMs: number;
  queueLatencyMs: number | null;
  /** The remote A2A task this session delegated (its agent is a remote A2A agent). */
  remoteTask?: { url: string; taskId: string; state: string };
  children: TreeNode[];
}

export interface RunMonitorView {
  runId: string;
  status: string;
  startedAt: number | null;
  finishedAt: number | null;
  sessions: number;
  /** The processes it spans: those that published its events and the hosts its sessions were placed on. */
  processes: string[];
  tree: TreeNode[];
  /** Its A2A tasks: the one it serves (a2a serve --a2a) and those its sessions delegated. */
  a2a: { served: ServedTaskView[]; delegated: DelegatedTaskView[] };
}

export interface Stats {
  count: number;
  avg: number | null;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

export interface ErrorRate {
  count: number;
  /** count / the number of `per`. */
  rate: number | null;
  per: 'settled sessions' | 'tool calls' | 'sessions';
}

export interface MonitorMetrics {
  sessions: { spawned: number; running: number; settled: number; succeeded: number; failed: number };
  /** Succeeded (success or partial) / settled; null before any session settled. */
  completionRate: number | null;
  executionMs: Stats;
  queueLatencyMs: Stats;
  errorRates: { total: number; byType: Record<string, ErrorRate> };
  /** Per agent type served by some host: live hosts, their capacity and free slots. */
  agentAvailability: Record<string, { hosts: number; alive: number; capacity: number; running: number; free: number; available: boolean }>;
  hosts: { alive: number; lost: number; gone: number };
}

export interface MonitorSnapshot {
  at: number;
  hosts: HostView[];
  runs: RunMonitorView[];
  metrics: MonitorMetrics;
  /** Messages dropped as neither a valid run event nor a valid heartbeat. */
  invalidMessages: number;
}

/** A host's liveness changed (for a log line). */
export interface HostChange {
  host: string;
  from: HostState | null;
  to: HostState;
}

export interface MonitorOptions {
  /** Heartbeats a host may miss before it is lost. Default 3. */
  missedBeats?: number;
  /** The interval assumed until a host's interval is known. Default 2000 (the hosts' default). */
  defaultHeartbeatMs?: number;
}

interface HostRecord {
  beat: ReceivedHeartbeat;
  lastSeen: number;
  /** Gaps between its last heartbeats (its interval is their upper median: a drain beat right after a regular one, or a lost one, does not skew it). */
  gaps: number[];
  state: HostState;
  /** Another host reported it lost (host.lost) and it was not heard from since. */
  lostByPeer: boolean;
}

interface SessionRecord {
  id: string;
  spawnedAt: number;
  /** The process whose event spawned it. */
  spawnedBy: string | null;
  host: string | null;
  placedAt: number | null;
  restored: number;
  endedAt: number | null;
  status: string;
}

interface RunRecord {
  view: RunView;
  sessions: Map<string, SessionRecord>;
  processes: Set<string>;
  /**
   * The tool calls counted, by call id (factKey: session, epoch, turn, call id): the same call told
   * twice (a host that took a session over tells what the session's journal gave back; a relay
   * sends an event again after a lost acknowledgement) is one call, and a failed one one failure.
   */
  toolCalls: Set<string>;
  a2a: A2AView;
}

const FINAL = new Set(['success', 'partial', 'failed', 'timeout', 'cancelled']);
const OK = new Set(['success', 'partial']);

/** The nearest-rank `q` quantile (0 < q ≤ 1) of values sorted ascending (not empty). */
export function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export function stats(values: number[]): Stats {
  if (values.length === 0) return { count: 0, avg: null, p50: null, p95: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => percentile(sorted, q);
  const avg = sorted.reduce((s, v) => s + v, 0) / sorted.length;
  return { count: sorted.length, avg: Math.round(avg * 10) / 10, p50: at(0.5), p95: at(0.95), max: sorted[sorted.length - 1]! };
}

export class MonitorState {
  readonly #hosts = new Map<string, HostRecord>();
  readonly #runs = new Map<string, RunRecord>();
  readonly #errors = new Map<string, number>();
  readonly #missed: number;
  readonly #defaultMs: number;
  #toolCalls = 0;
  #now = 0;
  /** Changes found while taking a snapshot, for the next `tick`. */
  #pending: HostChange[] = [];
  /** Messages that were not valid events or heartbeats. */
  invalid = 0;

  constructor(options: MonitorOptions = {}) {
    this.#missed = options.missedBeats ?? 3;
    this.#defaultMs = options.defaultHeartbeatMs ?? 2_000;
  }

  /**
   * A run event (its `origin`: the process that published it). Events of hosts outside any run
   * (run id `host`: host.joined, host.lost, their warnings) change no tree. Returns the hosts whose
   * state changed (a host.lost from a peer).
   */
  apply(event: MonitorEvent): HostChange[] {
    const d = event.data ?? {};
    const changes: HostChange[] = [];
    if (event.type === 'host.lost' && typeof d.host === 'string') {
      const record = this.#hosts.get(d.host);
      if (record && (record.state === 'ready' || record.state === 'draining')) {
        record.lostByPeer = true;
        changes.push(this.#set(d.host, record, 'lost'));
      }
    }
    if (event.type === 'warning') this.#count('warning');
    if (event.runId === 'host') return changes;

    const run = this.#run(event.runId);
    if (event.origin) run.processes.add(event.origin);
    run.view.apply(event);
    run.a2a.apply(event);
    const id = event.subTaskId;
    const session = id ? run.sessions.get(id) : undefined;
    switch (event.type) {
      case 'worker.deployed':
      case 'subtask.spawned':
        if (id && !session) {
          run.sessions.set(id, { id, spawnedAt: event.ts, spawnedBy: event.origin ?? null, host: null, placedAt: null, restored: 0, endedAt: null, status: 'running' });
        }
        break;
      case 'subtask.placed':
        if (session && typeof d.host === 'string') {
          session.host = d.host;
          if (d.restored) session.restored++;
          else session.placedAt ??= event.ts;
        }
        break;
      case 'session.restored':
        if (session && typeof d.host === 'string') session.host = d.host;
        break;
      case 'subtask.result':
        if (session && session.endedAt === null) {
          session.endedAt = event.ts;
          session.status = String(d.status);
          if (!OK.has(session.status)) this.#count(`result.${session.status}`);
        }
        break;
      case 'tool.called': {
        const key = factKey(event);
        if (key !== undefined && run.toolCalls.has(key)) break;
        if (key !== undefined) run.toolCalls.add(key);
        this.#toolCalls++;
        if (d.isError) this.#count('tool.failed');
        break;
      }
      case 'limit.hit':
        this.#count(`limit.${String(d.code ?? 'unknown')}`);
        break;
      case 'circuit.open':
      case 'stuck.detected':
      case 'budget.reached':
      case 'branch.conflict':
        this.#count(event.type);
        break;
    }
    return changes;
  }

  /** A heartbeat, received at `receivedAt` (default: the time it carries, as for one read from the hosts bucket). */
  applyHeartbeat(beat: ReceivedHeartbeat, receivedAt: number = beat.at): HostChange | null {
    this.#now = Math.max(this.#now, receivedAt);
    const known = this.#hosts.get(beat.hostId);
    if (known && beat.at <= known.beat.at) return null; // seen already (the bucket's copy of a live one), or older
    const gaps = known ? [...known.gaps, beat.at - known.beat.at].slice(-8) : [];
    const record: HostRecord = { beat, lastSeen: Math.max(receivedAt, known?.lastSeen ?? 0), gaps, state: known?.state ?? beat.status, lostByPeer: false };
    this.#hosts.set(beat.hostId, record);
    // a heartbeat already too old (read from the bucket) counts as silence
    const next = this.#liveness(record, this.#now);
    if (!known) {
      record.state = next;
      if (next === 'lost') this.#count('host.lost');
      return { host: beat.hostId, from: null, to: next };
    }
    return next === known.state ? null : this.#set(beat.hostId, record, next);
  }

  /** It is `now`: hosts silent too long are lost. Returns the hosts whose state changed (since the last tick). */
  tick(now: number): HostChange[] {
    this.#evaluate(now);
    return this.#pending.splice(0);
  }

  #evaluate(now: number): void {
    this.#now = Math.max(this.#now, now);
    for (const [id, record] of this.#hosts) {
      const next = this.#liveness(record, this.#now);
      if (next !== record.state) this.#pending.push(this.#set(id, record, next));
    }
  }

  /** The run ids seen, in order. */
  runIds(): string[] {
    return [...this.#runs.keys()];
  }

  /** The tree of a run (for `renderTree`). */
  view(runId: string): RunView | undefined {
    return this.#runs.get(runId)?.view;
  }

  /** Where a session runs (see TreeNode.host). */
  hostOf(runId: string, sessionId: string): string | null {
    const s = this.#runs.get(runId)?.sessions.get(sessionId);
    return s ? (s.host ?? s.spawnedBy) : null;
  }

  /** Where a session runs and how long it waited for a host (null: it did not go through the queue). */
  placement(runId: string, sessionId: string): { host: string | null; queueLatencyMs: number | null } | null {
    const s = this.#runs.get(runId)?.sessions.get(sessionId);
    return s ? { host: s.host ?? s.spawnedBy, queueLatencyMs: s.placedAt !== null ? s.placedAt - s.spawnedAt : null } : null;
  }

  /** True once the run's orchestrator published run.finished. */
  finished(runId: string): boolean {
    return this.#runs.get(runId)?.view.finishedAt != null;
  }

  /** Everything, as of `now` (hosts silent too long are lost; the next `tick` reports them). */
  snapshot(now: number = this.#now): MonitorSnapshot {
    this.#evaluate(now);
    const hosts = [...this.#hosts.entries()].map(([id, r]) => this.#hostView(id, r, now)).sort((a, b) => a.id.localeCompare(b.id));
    const runs = [...this.#runs.entries()].map(([runId, r]) => this.#runView(runId, r, now));
    return { at: now, hosts, runs, metrics: this.#metrics(hosts), invalidMessages: this.invalid };
  }

  metrics(now: number = this.#now): MonitorMetrics {
    return this.snapshot(now).metrics;
  }

  // -------------------------------------------------------------------------------------------

  #run(runId: string): RunRecord {
    let run = this.#runs.get(runId);
    if (!run) {
      run = { view: new RunView(), sessions: new Map(), processes: new Set(), toolCalls: new Set(), a2a: new A2AView() };
      this.#runs.set(runId, run);
    }
    return run;
  }

  #count(type: string): void {
    this.#errors.set(type, (this.#errors.get(type) ?? 0) + 1);
  }

  #set(id: string, record: HostRecord, to: HostState): HostChange {
    const change = { host: id, from: record.state, to };
    record.state = to;
    if (to === 'lost') this.#count('host.lost');
    return change;
  }

  #interval(record: HostRecord): number {
    if (record.beat.intervalMs) return record.beat.intervalMs;
    if (record.gaps.length === 0) return this.#defaultMs;
    const sorted = [...record.gaps].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  }

  #liveness(record: HostRecord, now: number): HostState {
    const silent = now - record.lastSeen > this.#missed * this.#interval(record);
    if (silent) return record.beat.status === 'draining' ? 'gone' : 'lost';
    return record.lostByPeer ? 'lost' : record.beat.status;
  }

  #hostView(id: string, r: HostRecord, now: number): HostView {
    const alive = r.state === 'ready' || r.state === 'draining';
    return {
      id,
      alive,
      state: r.state,
      agents: r.beat.agents,
      load: Math.round((r.beat.running / r.beat.concurrency) * 100) / 100,
      running: r.beat.running,
      capacity: r.beat.concurrency,
      sessions: r.beat.sessions,
      lastSeenMs: Math.max(0, now - r.lastSeen),
      heartbeatMs: this.#interval(r),
      startedAt: r.beat.startedAt,
      invalidRecords: r.beat.invalidRecords ?? [],
      ...(r.beat.memory ? { memory: r.beat.memory } : {}),
    };
  }

  #runView(runId: string, run: RunRecord, now: number): RunMonitorView {
    const node = (n: NodeView): TreeNode => {
      const s = run.sessions.get(n.id);
      return {
        id: n.id,
        ...(n.taskId ? { taskId: n.taskId } : {}),
        agentType: n.agentType,
        depth: n.depth,
        status: n.status,
        host: s ? (s.host ?? s.spawnedBy) : null,
        placed: s?.placedAt != null || (s?.restored ?? 0) > 0,
        restored: s?.restored ?? 0,
        elapsedMs: Math.max(0, (n.endedAt ?? now) - n.startedAt),
        queueLatencyMs: s?.placedAt != null ? s.placedAt - s.spawnedAt : null,
        ...remoteTaskOf(run.a2a, n.id),
        children: n.children.map((c) => run.view.nodes.get(c)).filter((c): c is NodeView => !!c).map(node),
      };
    };
    return {
      runId,
      status: run.view.status,
      startedAt: run.view.startedAt,
      finishedAt: run.view.finishedAt,
      sessions: run.sessions.size,
      processes: [...new Set([...run.processes, ...[...run.sessions.values()].flatMap((s) => (s.host ? [s.host] : []))])].sort(),
      tree: run.view.roots.map((r) => run.view.nodes.get(r)).filter((n): n is NodeView => !!n).map(node),
      a2a: { served: [...run.a2a.served.values()], delegated: [...run.a2a.delegated.values()] },
    };
  }

  /** A run's A2A tasks (see A2AView). */
  a2a(runId: string): A2AView | undefined {
    return this.#runs.get(runId)?.a2a;
  }

  #metrics(hosts: HostView[]): MonitorMetrics {
    const all = [...this.#runs.values()].flatMap((r) => [...r.sessions.values()]);
    const settled = all.filter((s) => s.endedAt !== null && FINAL.has(s.status));
    const succeeded = settled.filter((s) => OK.has(s.status)).length;
    const execution = settled.map((s) => s.endedAt! - (s.placedAt ?? s.spawnedAt));
    const queue = all.filter((s) => s.placedAt !== null).map((s) => s.placedAt! - s.spawnedAt);
    const byType: Record<string, ErrorRate> = {};
    let total = 0;
    for (const [type, count] of [...this.#errors.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      total += count;
      const per: ErrorRate['per'] = type.startsWith('result.') ? 'settled sessions' : type === 'tool.failed' ? 'tool calls' : 'sessions';
      const of = per === 'settled sessions' ? settled.length : per === 'tool calls' ? this.#toolCalls : all.length;
      byType[type] = { count, rate: of > 0 ? Math.round((count / of) * 1000) / 1000 : null, per };
    }
    const agentAvailability: MonitorMetrics['agentAvailability'] = {};
    for (const h of hosts) {
      for (const agent of h.agents) {
        const a = (agentAvailability[agent] ??= { hosts: 0, alive: 0, capacity: 0, running: 0, free: 0, available: false });
        a.hosts++;
        if (!h.alive) continue;
        a.alive++;
        a.capacity += h.capacity;
        a.running += h.running;
        a.free += h.state === 'ready' ? Math.max(0, h.capacity - h.running) : 0;
        a.available ||= h.state === 'ready';
      }
    }
    return {
      sessions: { spawned: all.length, running: all.length - settled.length, settled: settled.length, succeeded, failed: settled.length - succeeded },
      completionRate: settled.length > 0 ? Math.round((succeeded / settled.length) * 1000) / 1000 : null,
      executionMs: stats(execution),
      queueLatencyMs: stats(queue),
      errorRates: { total, byType },
      agentAvailability,
      hosts: { alive: hosts.filter((h) => h.alive).length, lost: hosts.filter((h) => h.state === 'lost').length, gone: hosts.filter((h) => h.state === 'gone').length },
    };
  }
}

function remoteTaskOf(a2a: A2AView, sessionId: string): { remoteTask?: TreeNode['remoteTask'] } {
  const t = a2a.delegatedBy(sessionId);
  return t ? { remoteTask: { url: t.url, taskId: t.taskId, state: t.state } } : {};
}

// ---------------------------------------------------------------------------------------------
// The human view

const ms = (v: number | null) => (v === null ? '-' : formatElapsed(v));
const pct = (v: number | null) => (v === null ? '-' : `${Math.round(v * 1000) / 10}%`);

export interface RenderOptions {
  colour?: boolean;
  /** Header facts: server (without credentials), namespace, run filter. */
  title?: string;
  width?: number;
}

/** The compact text view: hosts, each run's tree with the host of every session, metrics. */
export function renderMonitor(state: MonitorState, now: number, options: RenderOptions = {}): string[] {
  const p = palette(options.colour ?? false);
  const snap = state.snapshot(now);
  const lines: string[] = [];
  if (options.title) lines.push(p.bold(options.title));
  lines.push(p.bold(`hosts (${snap.metrics.hosts.alive} alive${snap.metrics.hosts.lost ? `, ${snap.metrics.hosts.lost} lost` : ''}${snap.metrics.hosts.gone ? `, ${snap.metrics.hosts.gone} gone` : ''})`));
  if (snap.hosts.length === 0) lines.push(p.dim('  none heard from yet'));
  const idWidth = Math.max(4, ...snap.hosts.map((h) => h.id.length));
  const agentsWidth = Math.max(6, ...snap.hosts.map((h) => h.agents.join(',').length));
  for (const h of snap.hosts) {
    const state = h.state === 'ready' ? p.green('ready   ') : h.state === 'draining' ? p.yellow('draining') : h.state === 'lost' ? p.red('LOST    ') : p.dim('gone    ');
    const load = `${h.running}/${h.capacity}`.padStart(5);
    const seen = h.alive ? p.dim(`beat ${ms(h.lastSeenMs)} ago`) : p.red(`silent ${ms(h.lastSeenMs)}`);
    const sessions = h.sessions.length ? `  ${oneLine(h.sessions.join(', '), 60)}` : '';
    lines.push(`  ${h.id.padEnd(idWidth)}  ${state}  ${load}  ${h.agents.join(',').padEnd(agentsWidth)}  ${seen}${sessions}`);
  }
  // records a host skips (invalid or foreign): said once per key, whichever hosts see it
  const invalid = new Map<string, string>();
  for (const h of snap.hosts) for (const r of h.invalidRecords) if (!invalid.has(r.key)) invalid.set(r.key, r.problem);
  if (invalid.size > 0) {
    lines.push(p.yellow(`invalid records skipped (${invalid.size})`));
    for (const [key, problem] of [...invalid].slice(0, 10)) lines.push(`  ${p.yellow(key)}  ${oneLine(problem, 100)}`);
    if (invalid.size > 10) lines.push(p.dim(`  … ${invalid.size - 10} more`));
  }
  for (const run of snap.runs) {
    const view = state.view(run.runId)!;
    lines.push('');
    lines.push(p.bold(`run ${run.runId}`) + p.dim(`  ${run.sessions} session(s) on ${run.processes.join(', ') || '?'}`));
    const a2a = state.a2a(run.runId);
    const host = (node: NodeView) => {
      const where = state.hostOf(run.runId, node.id);
      // a session that delegated to a remote A2A agent: its remote task beside it
      const remote = a2a?.delegatedBy(node.id);
      return `${where ? p.cyan(`@${where}`) : p.dim('@?')}${remote ? ` ⇄ ${remote.taskId.slice(0, 8)} ${remote.state}` : ''}`;
    };
    lines.push(...renderTree(view, now, p, host));
    // its A2A tasks: the one served, and each delegated one with the session that sent it
    for (const t of run.a2a.served) {
      lines.push(`  ${p.cyan('⇄')} A2A task ${t.taskId} ${t.state}${t.owner ? ` · client ${t.owner}` : ''} · @${t.agent} · context ${t.contextId} · ${t.messages.length} message(s)`);
    }
    for (const t of run.a2a.delegated) {
      lines.push(`  ${p.cyan('⇄')} ${t.sessionId} → ${t.url}: remote task ${t.taskId} ${t.state}${t.error ? p.dim(` (${oneLine(t.error, 60)})`) : ''}`);
    }
  }
  const m = snap.metrics;
  lines.push('');
  lines.push(p.bold('metrics'));
  lines.push(
    `  sessions ${m.sessions.spawned} · running ${m.sessions.running} · settled ${m.sessions.settled} · completion ${pct(m.completionRate)}${m.sessions.settled ? ` (${m.sessions.succeeded}/${m.sessions.settled})` : ''}`,
  );
  const st = (s: Stats) => (s.count ? `avg ${ms(s.avg)}  p50 ${ms(s.p50)}  p95 ${ms(s.p95)}  (n=${s.count})` : p.dim('-'));
  lines.push(`  execution  ${st(m.executionMs)}`);
  lines.push(`  queue      ${st(m.queueLatencyMs)}`);
  const errors = Object.entries(m.errorRates.byType).map(([type, e]) => `${type} ${e.count}${e.rate !== null ? ` (${pct(e.rate)} of ${e.per})` : ''}`);
  lines.push(`  errors     ${errors.length ? p.red(errors.join(' · ')) : p.dim('none')}`);
  const agents = Object.entries(m.agentAvailability)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([agent, a]) => (a.available ? `${agent} ${a.free}/${a.capacity} free on ${a.alive} host(s)` : p.red(`${agent} unavailable`)));
  lines.push(`  agents     ${agents.length ? agents.join(' · ') : p.dim('no host')}`);
  const width = options.width;
  return width ? lines.map((l) => (l.length > width + 40 ? l.slice(0, width + 40) : l)) : lines;
}

/** A log line for a host's change of state. */
export function describeHostChange(change: HostChange, state: MonitorSnapshot): string {
  const h = state.hosts.find((x) => x.id === change.host);
  const what = h ? `${h.agents.join(',')} ${h.running}/${h.capacity}` : '';
  switch (change.to) {
    case 'ready':
      return change.from === null || change.from === 'gone' || change.from === 'lost' ? `+ host ${change.host} up (${what})` : `host ${change.host} ready (${what})`;
    case 'draining':
      return `… host ${change.host} draining (${what})`;
    case 'lost':
      return `✗ host ${change.host} lost: no heartbeat for ${ms(h?.lastSeenMs ?? null)}${h?.sessions.length ? ` (it ran ${h.sessions.join(', ')})` : ''}`;
    case 'gone':
      return `- host ${change.host} left after draining`;
  }
}
