/**
 * Benchmark scenarios, run through the real machines with the scripted model and no event
 * listeners. Each one runs in a fresh process (see index.ts) so that peak RSS is its own.
 */
import { RunConfig } from '../../actors/config/config.js';
import { nullSink } from '../../actors/observation/events.js';
import { standaloneSpec, startStandalone } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { createRootActor } from '../../actors/scheduler.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import type { Family } from '../../actors/session/family.js';
import type { StreamResponse } from '@a2a-js/sdk';
import { loadRegistry } from '../../adapters/config.js';
import { ScriptedModel, parseScript, type Script } from '../../adapters/model/scripted.js';
import { realClock } from '../../adapters/clock.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { percentile } from '../../adapters/monitor.js';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bubblewrapRunner, unconfinedRunner } from '../../adapters/sandbox/index.js';
import type { CommandRunner } from '../../machines/ports.js';

const catalog = new ToolCatalog();
const registry = loadRegistry({ workspace: process.cwd(), knownTools: catalog.names() });

/** Totals and rate are raised to N (the defaults refuse a fan-out of 1k); `parallel` is the slots. */
function setup(script: Script, n: number, parallel = n, idle?: { idleThresholdMs: number; inquiryDelayMs: number }) {
  const model = new ScriptedModel(script, realClock);
  model.record = false;
  const runtime = createRuntime({ registry, clock: realClock, events: nullSink, model });
  const config = RunConfig.parse({ limits: { maxParallelSubtasks: parallel, maxSubtasksPerWorker: n, spawnRatePerMinute: n }, ...(idle ? { idle } : {}) });
  const spec = standaloneSpec('fan out', runtime, { runId: 'bench', config, workspace: process.cwd(), agent: '@agent' });
  return { runtime, spec };
}

const children = (n: number, word: string) =>
  Array.from({ length: n }, (_, i) => ({ agentType: '@agent', prompt: `${word} ${i}`, expectedOutput: 'nothing' }));

/** One parent spawns N no-op sub-tasks in one call, awaits them all, completes. */
export async function fanout(n: number, parallel = n): Promise<{ wallMs: number }> {
  const { runtime, spec } = setup(
    parseScript(
      {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: children(n, 'noop') } }] },
              { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children' } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] },
            ],
          },
          { agent: 'agent', depth: 1, turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'noop' } }] }] },
        ],
      },
      'bench',
    ),
    n,
    parallel,
  );
  const t0 = performance.now();
  const result = await startStandalone(runtime, spec, { clock: realClock }).done;
  const wallMs = performance.now() - t0;
  if (result.status !== 'success') throw new Error(`fan-out ended ${result.status}: ${result.error}`);
  return { wallMs };
}

/** N sub-tasks that answer with text and no tool call: they sit idle, each with its watchdog armed. */
/**
 * `mode`: `idle`, idle within the threshold, each watched by a timer of its own; `grace`, past the
 * threshold, in the grace period before the first inquiry (still a timer: a session starts its
 * watchdog actor only when the inquiry is due); `inquiry`, the inquiry sent and the model still
 * thinking about its answer (it never returns), the watchdog actor waiting for it.
 */
export async function idle(n: number, mode: 'idle' | 'grace' | 'inquiry' = 'idle'): Promise<{ heapPerIdle: number; idle: number }> {
  const settings = {
    idle: undefined,
    grace: { idleThresholdMs: 20, inquiryDelayMs: 600_000 },
    inquiry: { idleThresholdMs: 10, inquiryDelayMs: 10, inquiryTimeoutMs: 600_000 },
  }[mode];
  const { runtime, spec } = setup(
    parseScript(
      {
        rules: [
          { agent: 'agent', depth: 0, turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: children(n, 'idle') } }] }, { text: 'waiting' }] },
          { agent: 'agent', depth: 1, turns: [{ text: 'thinking about it' }], reactions: [{ when: 'appear to be idle', turn: { hang: true } }] },
        ],
      },
      'bench',
    ),
    n,
    n,
    settings,
  );
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  const before = process.memoryUsage().heapUsed;
  const started = performance.now();
  const run = startStandalone(runtime, spec, { clock: realClock });
  const family = () => {
    const session = (run.root.getSnapshot() as unknown as { family: Family }).family.members.get(spec.id)?.ref;
    const sub = (session?.getSnapshot() as { children?: Record<string, { getSnapshot(): unknown }> } | undefined)?.children?.subtasks;
    return (sub?.getSnapshot() as { family?: Family } | undefined)?.family;
  };
  const countIdle = () => {
    let count = 0;
    for (const m of family()?.members.values() ?? []) {
      const snapshot = m.ref?.getSnapshot() as { value?: { running?: string }; children?: { idleInquiry?: { getSnapshot(): { value: unknown } } } } | undefined;
      const watchdog = snapshot?.children?.idleInquiry?.getSnapshot().value;
      if (mode === 'inquiry' ? watchdog === 'inquiring' : snapshot?.value?.running === 'idle' && !watchdog) count++;
    }
    return count;
  };
  for (let i = 0; i < 600 && countIdle() < n; i++) await new Promise((r) => setTimeout(r, 50));
  // in the grace period: every session has sat idle past its 20 ms threshold
  if (mode === 'grace') await new Promise((r) => setTimeout(r, Math.max(0, 100 - (performance.now() - started))));
  gc();
  const after = process.memoryUsage().heapUsed;
  const idleCount = countIdle();
  run.stop('bench done');
  return { heapPerIdle: (after - before) / n, idle: idleCount };
}


/**
 * Latency of one spawn: from SPAWN reaching a parent's supervisor to the child running (its actor
 * created, started and its first model call requested), on a warm process. Children finish
 * between spawns, as in steady operation; the measured part is synchronous.
 */
export async function spawnLatency(samples: number): Promise<{ p50: number; p99: number }> {
  const { runtime, spec } = setup(
    { rules: [{ agent: '*', prompt: '', turns: [{ text: '', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] }], reactions: [] }] },
    samples + 1,
  );
  const root = createRootActor(runtime.supervisor, { input: { owner: spec, ownerId: spec.id, maxParallel: samples + 1 }, clock: realClock });
  root.start();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const child: SessionSpec = {
      ...spec,
      id: `lat-${i}`,
      role: 'subtask',
      depth: 1,
      prompt: `latency ${i}`,
      owner: { ownerType: 'agent', ownerId: spec.id },
      lineage: [{ agentName: 'agent', prompt: spec.prompt }],
    };
    const t0 = performance.now();
    root.send({ type: 'SPAWN', requestId: child.id, specs: [child] });
    times.push(performance.now() - t0);
    await new Promise((r) => setImmediate(r));
  }
  root.stop();
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 0.5), p99: percentile(times, 0.99) };
}

/**
 * Inbox throughput: N messages of mixed types arrive in batches of 100 (as update batches do) at
 * the orchestrator's inbox, journaled to the file store (every arrival appended before it can be
 * handled; handled ids committed in groups, as the checkpointer does) or, with `journaled` false,
 * in memory only (the in-process transport without a store); an owner handles each one
 * as soon as it is offered. Measures messages per second from the first arrival to the last
 * HANDLED.
 */
export async function inbox(n: number, journaled = true): Promise<{ perSecond: number; wallMs: number }> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { createActor } = await import('xstate');
  const { createInboxLogic } = await import('../../actors/people/inbox.js');
  const { FileRunStore } = await import('../../adapters/store/file.js');
  const { QUEUE_PRIORITY } = await import('../../machines/protocol/index.js');
  const ws = mkdtempSync(join(tmpdir(), 'a2a-bench-inbox-'));
  const store = new FileRunStore(ws);
  store.create({ runId: 'bench', pid: process.pid, status: 'running', startedAt: Date.now(), planId: 'p', source: 'bench' });
  const journal = journaled ? store.inboxJournal('bench') : undefined;
  const types = ['status_update', 'permission_request', 'question', 'completion', 'error', 'idle_response'] as const;
  let handled = 0;
  let inbox: { send(e: unknown): void } | null = null;
  const ownerLogic = {
    transition: (s: unknown, e: { type: string; message?: { id: string } }) => {
      if (e.type === 'INBOX_MESSAGE') {
        handled++;
        queueMicrotask(() => inbox!.send({ type: 'HANDLED', id: e.message!.id }));
        if (handled % 1000 === 0) journal?.commit();
      }
      return s;
    },
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }),
    getPersistedSnapshot: (s: unknown) => s,
  };
  const owner = createActor(ownerLogic as unknown as import('xstate').AnyActorLogic);
  owner.start();
  const actor = createActor(createInboxLogic({ clock: realClock, journal }), { parent: owner } as never);
  inbox = actor as unknown as { send(e: unknown): void };
  actor.start();
  const t0 = performance.now();
  for (let b = 0; b < n / 100; b++) {
    const messages = Array.from({ length: 100 }, (_, i) => {
      const type = types[(b * 100 + i) % types.length]!;
      return { id: `m-${b}-${i}`, type, priority: QUEUE_PRIORITY[type], timestamp: 0, runId: 'bench', planId: 'p', taskId: 't', workerId: 'w', worktreePath: '.', content: { message: 'status of the work so far' } };
    });
    actor.send({ type: 'ENQUEUE', messages });
    await new Promise((r) => setImmediate(r));
  }
  while (handled < n) await new Promise((r) => setImmediate(r));
  journal?.commit();
  const wallMs = performance.now() - t0;
  const lines = store.readJournal('bench').length;
  rmSync(ws, { recursive: true, force: true });
  if (lines !== (journaled ? 2 * n : 0)) throw new Error(`journal holds ${lines} records, expected ${journaled ? 2 * n : 0}`);
  return { perSecond: (n / wallMs) * 1000, wallMs };
}

const percentiles = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  return { p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99) };
};

/**
 * NATS latencies on a private nats-server (loopback, JetStream on a temp dir), all in ms:
 *   - `hop`: one hop through the project's Transport (request → subscribed responder → respond,
 *     ~1 KB JSON each way; test/nats/hop.ts);
 *   - `raw`: the same round trip with the bare client (payload encoded once, echoed as bytes): the
 *     floor under the Transport;
 *   - `spawn`: a remote sub-task, from its spawn enqueue (the owner's remoteSession actor starting)
 *     to its `started` up-message reaching the owner (`subtask.placed`), with a Host on its own
 *     connection in this process: spawn queue → host (claim in the snapshots bucket, session
 *     started under its parent link) → up queue → the owner's new up consumer. Spawns are
 *     sequential, each one finished (its result back at the owner) before the next;
 *   - `burst` (when asked for): that many remote sub-tasks started at once, the host running up to
 *     32 at a time: remote spawns per second, from the first start to the last result.
 * `servers` runs it on given servers (a cluster's URLs, comma-separated) instead of a private one.
 * NATS modules are imported here only, so that the other scenarios do not load them.
 */
export async function natsLatency(hopSamples: number, spawnSamples: number, options: { servers?: string; burst?: number; namespace?: string } = {}): Promise<Record<string, number>> {
  const { performance } = await import('node:perf_hooks');
  const { createActor } = await import('xstate');
  const { connect } = await import('@nats-io/transport-node');
  const { startNatsServer } = await import('../nats/server.js');
  const { measureHop, hopPayload } = await import('../nats/hop.js');
  const { connectNats } = await import('../../adapters/transport/nats.js');
  const { Host } = await import('../../adapters/host.js');
  const { createRemoteSessionLogic, ensureQueues } = await import('../../actors/distribution/remote.js');

  const server = options.servers ? null : await startNatsServer();
  const url = options.servers ?? server!.url;
  const closers: Array<() => Promise<unknown>> = [];
  try {
    // (a) one hop through the Transport
    const transport = await connectNats({ servers: url, namespace: 'bench', name: 'bench-hop' });
    closers.push(() => transport.close());
    const hop = await measureHop(transport, hopSamples);

    // (b) the same with the bare client
    const nc = await connect({ servers: url.split(','), name: 'bench-raw' });
    closers.push(() => nc.close());
    const subject = `a2a.bench.raw.${process.pid}`;
    nc.subscribe(subject, { callback: (error, msg) => void (error ? undefined : msg.respond(msg.data)) });
    await nc.flush();
    const bytes = new TextEncoder().encode(JSON.stringify(hopPayload()));
    for (let i = 0; i < Math.min(50, hopSamples); i++) await nc.request(subject, bytes, { timeout: 10_000 });
    const rawTimes: number[] = [];
    for (let i = 0; i < hopSamples; i++) {
      const t0 = performance.now();
      await nc.request(subject, bytes, { timeout: 10_000 });
      rawTimes.push(performance.now() - t0);
    }
    const raw = percentiles(rawTimes);

    // (c) remote sub-task spawn → started at the owner
    const ns = options.namespace ?? 'bench';
    const burst = options.burst ?? 0;
    const { runtime, spec } = setup(
      { rules: [{ agent: '*', prompt: '', turns: [{ text: '', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] }], reactions: [] }] },
      spawnSamples + burst + 10,
    );
    const hostTransport = await connectNats({ servers: url, namespace: ns, name: 'bench-host' });
    const ownerTransport = await connectNats({ servers: url, namespace: ns, name: 'bench-owner' });
    closers.push(() => hostTransport.close(), () => ownerTransport.close());
    const host = new Host({
      transport: hostTransport,
      ns,
      hostId: 'bench-host',
      agents: [spec.agent.agentName],
      concurrency: burst > 0 ? 32 : 4,
      sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask),
      clock: realClock,
      events: nullSink,
    });
    await host.start();
    closers.unshift(() => host.stop());
    await ensureQueues(ownerTransport, ns);
    let placedAt = 0;
    const logic = createRemoteSessionLogic({
      transport: ownerTransport,
      ns,
      process: 'bench-owner',
      clock: realClock,
      events: { listening: true, emit: (e) => void (e.type === 'subtask.placed' && (placedAt = performance.now())) },
    });
    const warmup = 5;
    const spawnTimes: number[] = [];
    const childSpec = (i: number): SessionSpec => ({
      ...spec,
      id: `rs-${i}`,
      role: 'subtask',
      depth: 1,
      prompt: `remote ${i}`,
      owner: { ownerType: 'agent', ownerId: spec.id },
      lineage: [{ agentName: spec.agent.agentName, prompt: spec.prompt }],
    });
    const run = (child: SessionSpec, limitMs: number) => {
      const actor = createActor(logic, { input: { spec: child } });
      const finished = new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`remote sub-task ${child.id} did not finish within ${limitMs} ms`)), limitMs);
        actor.subscribe({
          complete: () => (clearTimeout(timer), resolve()),
          error: (error) => (clearTimeout(timer), reject(error instanceof Error ? error : new Error(String(error)))),
        });
      });
      actor.start();
      return finished;
    };
    for (let i = 0; i < warmup + spawnSamples; i++) {
      const child = childSpec(i);
      placedAt = 0;
      const t0 = performance.now();
      await run(child, 20_000);
      if (!placedAt) throw new Error(`remote sub-task ${child.id} finished without a started message`);
      if (i >= warmup) spawnTimes.push(placedAt - t0);
    }
    const remote = percentiles(spawnTimes);
    let spawnsPerSec = 0;
    if (burst > 0) {
      const t0 = performance.now();
      await Promise.all(Array.from({ length: burst }, (_, i) => run(childSpec(warmup + spawnSamples + i), 60_000)));
      spawnsPerSec = burst / ((performance.now() - t0) / 1000);
    }
    return { hopP50: hop.p50Ms, hopP99: hop.p99Ms, rawP50: raw.p50, rawP99: raw.p99, spawnP50: remote.p50, spawnP99: remote.p99, ...(burst > 0 ? { spawnsPerSec } : {}) };
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    await server?.stop();
  }
}

/**
 * How soon a host's freed slot takes the next queued spawn (issue 39): a host of `concurrency`
 * slots gets `sessions` spawns at once, each session taking about `workMs`; for every session
 * started after the first `concurrency`, the time from the latest session end before it (a slot
 * freeing: its result sent, its record written) to its start. p50 and p99 in ms, and the wall time.
 */
export async function slotRefill(sessions: number, concurrency = 4, workMs = 20): Promise<Record<string, number>> {
  const { createActor } = await import('xstate');
  const { startNatsServer } = await import('../nats/server.js');
  const { connectNats } = await import('../../adapters/transport/nats.js');
  const { Host } = await import('../../adapters/host.js');
  const { createRemoteSessionLogic, ensureQueues } = await import('../../actors/distribution/remote.js');
  const server = await startNatsServer();
  const closers: Array<() => Promise<unknown>> = [];
  try {
    const { runtime, spec } = setup(
      { rules: [{ agent: '*', prompt: '', turns: [{ delayMs: workMs, text: '', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] }], reactions: [] }] },
      sessions + 10,
    );
    const starts = new Map<string, number>();
    const ends: number[] = [];
    const hostTransport = await connectNats({ servers: server.url, namespace: 'refill', name: 'bench-refill-host' });
    const ownerTransport = await connectNats({ servers: server.url, namespace: 'refill', name: 'bench-refill-owner' });
    closers.push(() => hostTransport.close(), () => ownerTransport.close());
    const host = new Host({
      transport: hostTransport,
      ns: 'refill',
      // a slot frees when a tree stops running here (its result sent, its record written)
      onTreeEnded: () => void ends.push(performance.now()),
      hostId: 'refill-host',
      agents: [spec.agent.agentName],
      concurrency,
      sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask),
      clock: realClock,
      events: {
        listening: true,
        emit: (e) => {
          if (e.type === 'session.state' && e.subTaskId && !starts.has(e.subTaskId)) starts.set(e.subTaskId, performance.now());
        },
      },
    });
    await host.start();
    closers.unshift(() => host.stop());
    await ensureQueues(ownerTransport, 'refill');
    const logic = createRemoteSessionLogic({ transport: ownerTransport, ns: 'refill', process: 'bench-refill-owner', clock: realClock, events: nullSink });
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: sessions }, (_, i) => {
        const child: SessionSpec = { ...spec, id: `rf-${i}`, role: 'subtask', depth: 1, prompt: `refill ${i}`, owner: { ownerType: 'agent', ownerId: spec.id }, lineage: [{ agentName: spec.agent.agentName, prompt: spec.prompt }] };
        const actor = createActor(logic, { input: { spec: child } });
        const done = new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`remote sub-task ${child.id} did not finish within 60 s`)), 60_000);
          actor.subscribe({ complete: () => (clearTimeout(timer), resolve()), error: (error) => (clearTimeout(timer), reject(error instanceof Error ? error : new Error(String(error)))) });
        });
        actor.start();
        return done;
      }),
    );
    const wallMs = performance.now() - t0;
    const ordered = [...starts.values()].sort((a, b) => a - b);
    const gaps: number[] = [];
    for (const start of ordered.slice(concurrency)) {
      const before = ends.filter((end) => end <= start);
      if (before.length > 0) gaps.push(start - before[before.length - 1]!);
    }
    if (process.env.REFILL_DEBUG) console.error(gaps.map((g) => g.toFixed(1)).join(" "));
    const { p50, p99 } = percentiles(gaps);
    return { refillP50: p50, refillP99: p99, refillWallMs: wallMs, refillSamples: gaps.length };
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    await server.stop();
  }
}

/**
 * What an idle host costs with `records` sessions of the past in the snapshots bucket (finished
 * ones, and ones held by another live host): two hosts of default heartbeat (2 s) idle for
 * `idleMs` after their start; CPU of this process (both hosts) and of the nats-server, in % of a
 * core, and the consumers on the server at the end (issue 39: every heartbeat used to list and
 * read every record, and leave an ordered consumer per listing).
 */
export async function idleHosts(records: number, idleMs = 10_000): Promise<Record<string, number>> {
  const { readFileSync } = await import('node:fs');
  const { startNatsServer } = await import('../nats/server.js');
  const { connectNats } = await import('../../adapters/transport/nats.js');
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const { Host } = await import('../../adapters/host.js');
  const { wireId } = await import('../../actors/distribution/remote.js');
  const server = await startNatsServer();
  const closers: Array<() => Promise<unknown>> = [];
  const ticks = (pid: number) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  };
  // heartbeats measure memory after a collection when gc is exposed: a host started by a user has
  // no such collection, and this is to be run without --expose-gc
  if ((globalThis as { gc?: unknown }).gc) throw new Error('idle-hosts: run it without --expose-gc (a heartbeat would collect garbage, which hosts started by users do not)');
  try {
    const { runtime, spec } = setup({ rules: [] }, 10);
    const seed = await connectNats({ servers: server.url, namespace: 'idle', name: 'bench-idle-seed' });
    closers.push(() => seed.close());
    const kv = await seed.keyValue('snapshots');
    const now = Date.now();
    for (let i = 0; i < records; i++) {
      const past: SessionSpec = { ...spec, id: `past-${i}`, role: 'subtask', depth: 1 };
      await kv.put(wireId(past), { spec: past, host: i % 2 ? 'idle-b' : 'idle-a', state: i % 3 ? 'finished' : 'running', checkpoint: null, at: now });
    }
    const hosts = [];
    for (const id of ['idle-a', 'idle-b']) {
      const transport = await connectNats({ servers: server.url, namespace: 'idle', name: `bench-${id}` });
      closers.push(() => transport.close());
      const host = new Host({ transport, ns: 'idle', hostId: id, agents: ['nobody'], concurrency: 4, sessionLogic: () => runtime.subtask, clock: realClock, events: nullSink });
      await host.start();
      closers.unshift(() => host.stop());
      hosts.push(host);
    }
    // past their start (each read every record once): idle from here
    await new Promise((r) => setTimeout(r, 2_500));
    const hz = 100;
    const cpu0 = process.cpuUsage();
    const server0 = ticks(server.pid!);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, idleMs));
    const wall = performance.now() - t0;
    const used = process.cpuUsage(cpu0);
    const serverTicks = ticks(server.pid!) - server0;
    const nc = await connect({ servers: server.url });
    closers.push(() => nc.close());
    const jsm = await jetstreamManager(nc);
    let consumers = 0;
    for await (const info of jsm.streams.list()) consumers += info.state.consumer_count;
    return {
      idleHostsCpuPct: ((used.user + used.system) / 1000 / wall) * 100,
      idleServerCpuPct: ((serverTicks / hz) * 1000 / wall) * 100,
      idleConsumers: consumers,
    };
  } finally {
    for (const close of closers) await close().catch(() => undefined);
    await server.stop();
  }
}

/**
 * What the sandbox costs per run_command: `true`, `n` times each unconfined and in the bubblewrap
 * sandbox, in a plain directory and in a git worktree (more mounts: the git directory), after one
 * warm-up each (the sandbox's one-time self-check and /etc scan are not billed to a command).
 * The parts: bwrap alone with the same mounts and no limits (no prlimit, cgroup, sized /tmp,
 * seccomp filter or disk watch); the runner with its limits; with `network: true` (slirp4netns);
 * and in a worktree of 50,000 files and 5,000 directories (a node_modules among them) with the
 * hard-link scan (`outsideHardLinks: mask`, the default) and without it (`allow`), the first
 * scan of that worktree timed on its own. Medians in ms.
 */
export async function commandCost(n: number): Promise<Record<string, number>> {
  const base = mkdtempSync(join(tmpdir(), 'a2a-bench-cmd-'));
  const plain = join(base, 'plain');
  const repo = join(base, 'repo');
  const worktree = join(repo, '.a2a', 'worktrees', 'bench', 'task');
  const large = join(base, 'large');
  mkdirSync(plain);
  mkdirSync(repo);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=bench', '-c', 'user.email=bench@localhost', ...args], { cwd: repo, stdio: 'ignore' });
  git('init', '-q', '-b', 'main');
  git('commit', '-q', '--allow-empty', '-m', 'init');
  git('worktree', 'add', '-q', '-b', 'a2a/bench/task', worktree);
  largeWorktree(large);
  // a directory changed in the last 2 s is read again by every scan (hardlinks.ts): the worktree ages first
  await new Promise((resolve) => setTimeout(resolve, 2_100));
  const signal = new AbortController().signal;
  type Way = { runner: CommandRunner | ((dir: string) => Promise<number | null>); dir: string; network?: boolean };
  const once = async ({ runner, dir, network = false }: Way) => {
    const started = performance.now();
    const exitCode = typeof runner === 'function' ? await runner(dir) : (await runner.run({ command: 'true', worktree: dir, cwd: dir, timeoutMs: 10_000, signal, network })).exitCode;
    if (exitCode !== 0) throw new Error(`true failed (${exitCode}) in ${typeof runner === 'function' ? 'bwrap' : runner.name}`);
    return performance.now() - started;
  };
  try {
    const sandbox = bubblewrapRunner();
    const status = await sandbox.check();
    if (!status.ready) throw new Error(status.reason);
    // the first scan of the large worktree, timed on its own (later commands reuse what it read)
    const { outsideLinks } = await import('../../adapters/sandbox/hardlinks.js');
    const started = performance.now();
    const scan = await outsideLinks(large);
    const firstScanMs = performance.now() - started;
    if (scan.dirs < 5000) throw new Error(`the large worktree has ${scan.dirs} directories`);
    const ways: Record<string, Way> = {
      unconfinedMs: { runner: unconfinedRunner(), dir: plain },
      bwrapOnlyMs: { runner: bwrapAlone, dir: plain },
      sandboxedMs: { runner: sandbox, dir: plain },
      networkMs: { runner: sandbox, dir: plain, network: true },
      sandboxedGitMs: { runner: sandbox, dir: worktree },
      largeScanMs: { runner: sandbox, dir: large },
      largeNoScanMs: { runner: bubblewrapRunner({ outsideHardLinks: 'allow' }), dir: large },
    };
    // one warm-up each, then the ways in turn, so that a busy moment of the machine weighs on all
    const samples: Record<string, number[]> = {};
    for (const [key, way] of Object.entries(ways)) {
      await once(way);
      samples[key] = [];
    }
    for (let i = 0; i < n; i++) for (const [key, way] of Object.entries(ways)) samples[key]!.push(await once(way));
    const out: Record<string, number> = { firstScanMs };
    for (const [key, xs] of Object.entries(samples)) out[key] = percentile(xs.sort((x, y) => x - y), 0.5);
    return out;
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

/** bwrap with the runner's namespaces and mounts, and nothing else (no limits, no scan): its exit code. */
async function bwrapAlone(dir: string): Promise<number | null> {
  const { MountPlan, systemArgs, worktreeMounts } = await import('../../adapters/sandbox/mounts.js');
  const { runProcess } = await import('../../adapters/sandbox/process.js');
  const plan = new MountPlan();
  try {
    plan.args.push('--die-with-parent', '--new-session', '--cap-drop', 'ALL', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net');
    plan.args.push(...(await systemArgs()), '--tmpfs', '/tmp');
    await worktreeMounts(plan, dir);
    plan.args.push('--remount-ro', '/', '--chdir', dir, '--info-fd', String(3 + plan.fds.length), '/bin/sh', '-c', 'true');
    const result = await runProcess('bwrap', plan.args, { cwd: dir, env: { PATH: '/usr/bin:/bin' }, timeoutMs: 10_000, signal: new AbortController().signal, fds: plan.fds, info: true });
    return result.exitCode;
  } finally {
    await plan.close();
  }
}

/** 50,000 files in 5,000 directories: 1,000 packages under node_modules, and 3,000 source directories. */
function largeWorktree(root: string): void {
  for (let p = 0; p < 1000; p++) {
    const pkg = join(root, 'node_modules', `pkg-${p}`);
    mkdirSync(join(pkg, 'lib'), { recursive: true });
    writeFileSync(join(pkg, 'package.json'), `{"name":"pkg-${p}"}\n`);
    for (let f = 0; f < 19; f++) writeFileSync(join(pkg, 'lib', `m${f}.js`), `module.exports = ${f};\n`);
  }
  for (let d = 0; d < 3000; d++) {
    const dir = join(root, 'src', `area-${d % 30}`, `mod-${d}`);
    mkdirSync(dir, { recursive: true });
    for (let f = 0; f < 10; f++) writeFileSync(join(dir, `f${f}.ts`), `export const x${f} = ${d};\n`);
  }
}

/**
 * One A2A delegation on loopback against the same work done by an in-process sub-task: a worker
 * spawns one sub-task that answers at once, and the run's wall time is taken (`samples` runs per
 * kind, after 3 warm-up runs): a local @coder; a remote agent built with the SDK alone
 * (test/a2aProtocol/remoteServer.ts); another a2a served with `serveA2A`.
 */
export async function a2aRoundTrip(samples: number): Promise<Record<string, number>> {
  const { startRun } = await import('../../adapters/assembly/library.js');
  const { serveA2A } = await import('../../adapters/a2aProtocol/server.js');
  const { remoteAgent } = await import('../a2aProtocol/remoteServer.js');
  const { SERVE_SCRIPT } = await import('../a2aProtocol/fixtures.js');
  const script = (type: string, prompt: string) =>
    parseScript(
      {
        rules: [
          {
            agent: 'architect',
            depth: 0,
            prompt: 'go',
            turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: type, prompt, expectedOutput: 'x' }] } }] }, { text: 'waiting' }],
            reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'ok' } }] } }],
          },
          { agent: 'coder', depth: 1, turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'bonjour' } }] }] },
        ],
      },
      'the round-trip script',
    );
  const dirs: string[] = [];
  const dir = (prefix: string) => {
    const d = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(d);
    return d;
  };
  const time = async (type: string, prompt: string, url?: string): Promise<number[]> => {
    const out: number[] = [];
    for (let i = 0; i < samples + 3; i++) {
      const t = performance.now();
      const run = await startRun({
        workspace: dir('a2a-bench-rt-'),
        task: 'go',
        agent: '@architect',
        store: 'memory',
        notify: () => undefined,
        scriptData: script(type, prompt),
        ...(url ? { agents: [{ name: 'translator', description: 'remote', remote: { url } as never }] } : {}),
        settings: { permissions: { auto_approve: ['remote_agent_delegation'] } },
      });
      const outcome = await run.done;
      if (outcome.status !== 'completed') throw new Error(`the round-trip run ended ${outcome.status}`);
      if (i >= 3) out.push(performance.now() - t);
    }
    return out.sort((a, b) => a - b);
  };
  const remote = await remoteAgent();
  const served = await serveA2A({ workspace: dir('a2a-bench-served-'), version: 'bench', agent: 'coder', notify: () => undefined, run: { scriptData: SERVE_SCRIPT, store: 'memory' } });
  try {
    const direct = await time('@coder', 'part');
    const sdk = await time('@translator', 'translate hello', remote.url);
    const a2a = await time('@translator', 'say hello', served.url);
    return { directP50: percentile(direct, 0.5), sdkP50: percentile(sdk, 0.5), a2aP50: percentile(a2a, 0.5) };
  } finally {
    await remote.close();
    await served.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/** A @coder worker (prompt "fan out") that spawns `n` @coder sub-tasks in parallel, each completing at once, and completes when all have. */
function fanOutScript(n: number): Script {
  return parseScript(
    {
      rules: [
        {
          agent: 'coder',
          depth: 0,
          prompt: 'fan',
          turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: Array.from({ length: n }, (_, i) => ({ agentType: '@coder', prompt: `part ${i}`, expectedOutput: 'x' })) } }] }, { text: 'waiting' }],
          reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'all done' } }] } }],
        },
        { agent: 'coder', depth: 1, turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'part done' } }] }] },
      ],
    },
    'the fan-out script',
  );
}

/**
 * A task of `n` parallel sub-tasks run directly (startRun) and the same task sent to `a2a serve
 * --a2a` by the SDK's client, streamed to its end: what serving it over A2A costs (one status and
 * one artifact per sub-task, each logged and sent). Both warm and in the same process: each kind
 * is run once first (the JIT warmed up, the run's lazily loaded modules loaded: a process's first
 * run pays for them, its second does not), then measured twice, in the order direct, served,
 * served, direct (a machine whose load drifts weighs on both alike), the garbage collected before
 * each; `directMs` and `servedMs` are the means of the two, `ratio` theirs (`cpuRatio`: the same
 * in CPU time of the process's main thread, which a loaded machine moves less). The client counts the
 * events and keeps the last (the task's end), as one that hands them on would, not all 2,004.
 * Before issue 38 the direct run came first, cold, and the served one second: the served run's
 * cost was compared with a direct run that carried a start-up cost it did not.
 */
export async function a2aFanout(n: number): Promise<{ directMs: number; servedMs: number; ratio: number; cpuRatio: number; events: number }> {
  const { startRun } = await import('../../adapters/assembly/library.js');
  const { serveA2A } = await import('../../adapters/a2aProtocol/server.js');
  const { clientOf, message, send } = await import('../a2aProtocol/fixtures.js');
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  const { readFileSync } = await import('node:fs');
  /** CPU time of this (the main) thread, in ms (10 ms ticks; 0 where /proc is missing). */
  const mainCpu = () => {
    try {
      const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) * 10;
    } catch {
      return 0;
    }
  };
  const script = fanOutScript(n);
  const limits = { maxParallel: n, maxSubtasks: n, spawnRate: n * 10 };
  const dirs = [mkdtempSync(join(tmpdir(), 'a2a-bench-fan-')), mkdtempSync(join(tmpdir(), 'a2a-bench-served-fan-'))];
  try {
    const server = await serveA2A({ workspace: dirs[1]!, version: 'bench', agent: 'coder', notify: () => undefined, run: { scriptData: script, ...limits } });
    try {
      const client = await clientOf(server.url);
      const direct = async () => {
        gc();
        const cpu = mainCpu();
        const t = performance.now();
        const run = await startRun({ workspace: dirs[0]!, task: 'fan out', agent: '@coder', notify: () => undefined, scriptData: script, ...limits });
        if ((await run.done).status !== 'completed') throw new Error('the direct fan-out did not complete');
        return { ms: performance.now() - t, cpu: mainCpu() - cpu };
      };
      const served = async () => {
        gc();
        const cpu = mainCpu();
        const t = performance.now();
        let events = 0;
        let last: StreamResponse | undefined;
        for await (const event of send(client, message('fan out', { skill: 'coder' }))) {
          events++;
          last = event;
        }
        const ms = performance.now() - t;
        if (last?.payload?.$case !== 'statusUpdate' || last.payload.value.status?.state !== 3) throw new Error('the served fan-out did not complete');
        return { ms, cpu: mainCpu() - cpu, events };
      };
      await direct();
      await served();
      const d1 = await direct();
      const s1 = await served();
      const s2 = await served();
      const d2 = await direct();
      if (s1.events !== s2.events) throw new Error(`the served fan-outs sent ${s1.events} and ${s2.events} events`);
      return { directMs: (d1.ms + d2.ms) / 2, servedMs: (s1.ms + s2.ms) / 2, ratio: (s1.ms + s2.ms) / (d1.ms + d2.ms), cpuRatio: (s1.cpu + s2.cpu) / (d1.cpu + d2.cpu), events: s1.events };
    } finally {
      await server.close();
    }
  } finally {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

/**
 * The cost of tracing: a run whose worker fans out N sub-tasks (file store, events logged, as
 * `a2a run` does it), without tracing (`off`) and with spans exported over OTLP/HTTP (`on`) to
 * a collector stand-in in a process of its own that reads and discards them. The export is
 * started before the clock (its thread and modules: `loadMs`, once per process); the time runs
 * from the start to `done`, which with tracing settles only once the last spans are exported.
 * `cpuMs`: CPU time of the run's own thread (Linux), apart from the export thread's.
 */
export async function tracedFanout(n: number, mode: 'on' | 'off', journal = true): Promise<{ wallMs: number; cpuMs: number; loadMs: number; exportedBytes: number; exports: number }> {
  const { startRun } = await import('../../adapters/assembly/library.js');
  const { spawn } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const sink = spawn(
    process.execPath,
    [
      '-e',
      `let bytes = 0, exports = 0;
       const server = require('node:http').createServer((req, res) => { req.on('data', (c) => (bytes += c.length)); req.on('end', () => { exports++; res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(); }); });
       server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
       process.stdin.on('data', () => console.log(JSON.stringify({ bytes, exports })));
       process.stdin.on('end', () => process.exit(0));`,
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines: string[] = [];
  const waiting: Array<(line: string) => void> = [];
  let partial = '';
  sink.stdout!.on('data', (d: Buffer) => {
    partial += d.toString();
    for (let i = partial.indexOf('\n'); i >= 0; i = partial.indexOf('\n')) {
      const line = partial.slice(0, i);
      partial = partial.slice(i + 1);
      const w = waiting.shift();
      if (w) w(line);
      else lines.push(line);
    }
  });
  const nextLine = () => new Promise<string>((r) => (lines.length ? r(lines.shift()!) : waiting.push(r)));
  const url = `http://127.0.0.1:${(JSON.parse(await nextLine()) as { port: number }).port}`;
  const counts = async () => {
    sink.stdin!.write('?');
    return JSON.parse(await nextLine()) as { bytes: number; exports: number };
  };
  /** CPU time of this (the main) thread, in ms (10 ms ticks; 0 where /proc is missing). */
  const threadCpu = () => {
    try {
      const f = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(f[11]) + Number(f[12])) * 10;
    } catch {
      return 0;
    }
  };
  const script = fanOutScript(n);
  const dir = mkdtempSync(join(tmpdir(), 'a2a-bench-traced-'));
  let loadMs = 0;
  let warm: { flush(): Promise<void>; shutdown(): Promise<void> } | null = null;
  try {
    if (mode === 'on') {
      const t0 = performance.now();
      const { startOtel } = await import('../../adapters/otel/sdk.js');
      const { otelSettings } = await import('../../adapters/otel/options.js');
      // the export thread started and its modules loaded (the run shares it)
      warm = await startOtel(otelSettings({ url })!, { service: 'bench' });
      await warm.flush();
      loadMs = performance.now() - t0;
    }
    const cpu0 = threadCpu();
    const t = performance.now();
    const run = await startRun({ workspace: dir, task: 'fan out', agent: '@coder', notify: () => undefined, scriptData: script, maxParallel: n, maxSubtasks: n, spawnRate: n * 10, otel: mode === 'on' ? url : false, ...(journal ? {} : { settings: { effects: { journal: false } } }) });
    if ((await run.done).status !== 'completed') throw new Error('the traced fan-out did not complete');
    const wallMs = performance.now() - t;
    const cpuMs = threadCpu() - cpu0;
    const { bytes: exportedBytes, exports } = await counts();
    if (mode === 'on' && exports === 0) throw new Error('tracing on, but nothing was exported');
    return { wallMs, cpuMs, loadMs, exportedBytes, exports };
  } finally {
    await warm?.shutdown();
    sink.stdin!.end();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What a finished sub-task leaves in memory while its run goes on: a parent spawns N sub-tasks that
 * complete at once, awaits them (their results delivered to it), and then sits idle; the heap
 * growth per sub-task, after a full collection, from before the run to then (`heapPerFinished`:
 * the parent's own conversation holds its spawn call's N prompts and the N results it was given),
 * and the part of it the family keeps of each finished child (`familyPerFinished`: the heap freed
 * when the family forgets them; a slim record each since issue 38).
 */
export async function finished(n: number): Promise<{ heapPerFinished: number; familyPerFinished: number; finished: number }> {
  const { runtime, spec } = setup(
    parseScript(
      {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: children(n, 'done') } }] },
              { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children' } }] },
              { text: 'resting' },
            ],
          },
          { agent: 'agent', depth: 1, turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'noop' } }] }] },
        ],
      },
      'bench',
    ),
    n,
  );
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  const before = process.memoryUsage().heapUsed;
  const run = startStandalone(runtime, spec, { clock: realClock });
  const session = () => (run.root.getSnapshot() as unknown as { family: Family }).family.members.get(spec.id)?.ref;
  const family = () => {
    const sub = (session()?.getSnapshot() as { children?: Record<string, { getSnapshot(): unknown }> } | undefined)?.children?.subtasks;
    return (sub?.getSnapshot() as { family?: Family } | undefined)?.family;
  };
  const settled = () => {
    const f = family();
    if (!f) return 0;
    let count = f.finished.size;
    for (const m of f.members.values()) if (m.state === 'settled') count++;
    return count;
  };
  const resting = () => (session()?.getSnapshot() as { value?: { running?: string } } | undefined)?.value?.running === 'idle';
  for (let i = 0; i < 1200 && !(settled() === n && resting()); i++) await new Promise((r) => setTimeout(r, 25));
  gc();
  const after = process.memoryUsage().heapUsed;
  const count = settled();
  // what the family itself keeps of them: the heap they free when it forgets them (measured, then the run stops)
  const f = family()!;
  const kept = [...f.members.values()].filter((m) => m.state === 'settled').length + f.finished.size;
  for (const [id, m] of f.members) if (m.state === 'settled') f.members.delete(id);
  f.finished.clear();
  gc();
  const forgotten = process.memoryUsage().heapUsed;
  run.stop('bench done');
  if (count !== n || kept !== n) throw new Error(`only ${count} of ${n} sub-tasks finished`);
  return { heapPerFinished: (after - before) / n, familyPerFinished: (after - forgotten) / n, finished: count };
}
