/**
 * The soak: a 3-node JetStream cluster on loopback, three `a2a host` processes (one per node: the
 * architects on the first, the coders on the other two, so that every sub-task is a remote spawn;
 * started with --expose-gc so that their heartbeats carry live memory), and `a2a run` started back
 * to back for a while, each run's plan a fan-out of workers into sub-tasks.
 *
 * Every run is checked for exactly one terminal result per session (test/faults/harness.ts tally:
 * events, audit and owner). Each host's RSS and heap are read from its heartbeats (the protocol's
 * HostHeartbeat, parsed), against the number of sub-tasks finished so far: the slope after warm-up
 * is MB per 1,000 sub-tasks (least squares). `npm run soak` prints it (test/soak/index.ts); a short
 * version is a test (test/nats/soak.test.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../adapters/transport/nats.js';
import { BOXES_BUCKET } from '../../actors/distribution/runBoxes.js';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { HostHeartbeat, RunBoxSlot } from '../../machines/protocol/index.js';
import { faultWorkspace, sessionIds, tally } from '../faults/harness.js';
import { a2aProcess, capture, killAll, served, type Proc } from '../nats/cluster.js';
import { startNatsCluster, type NatsCluster } from '../nats/server.js';
import { natsLatency } from '../bench/scenarios.js';

export interface SoakOptions {
  /** How long runs are started for (the last one started finishes). */
  durationMs: number;
  /** Or stop after this many runs. */
  maxRuns?: number;
  /** Each run: `workers` architects, each fanning out `parts` coder sub-tasks of `partMs` each. */
  workers: number;
  parts: number;
  partMs: number;
  /** Share of the runs left out of the memory slope (warm-up: code loaded, caches filled). */
  warmup: number;
  /** Called with a line after each run. */
  progress?: (line: string) => void;
  /** Every this many ms, a line with each node's RSS and each stream's messages, bytes and deleted (default 60 s). */
  sampleMs?: number;
  /** After the last run, wait this long idle and count records and consumers again (finished records go 2 min after). */
  settleMs?: number;
  /** An already started cluster (the test shares its own); else one is started and stopped here. */
  cluster?: NatsCluster;
}

export interface HostFigures {
  host: string;
  samples: number;
  rssMB: [number, number];
  heapMB: [number, number];
  /** MB per 1,000 sub-tasks finished, after warm-up (least squares over the heartbeats). */
  rssSlope: number;
  heapSlope: number;
  /** The most sessions it ran at once (from the runs' logs), and its RSS then (the nearest heartbeat). */
  maxSessions: number;
  rssAtMaxMB: number;
}

export interface SoakReport {
  runs: number;
  failedRuns: string[];
  sessions: number;
  subtasks: number;
  lost: string[];
  duplicated: string[];
  ms: number;
  /** Remote sessions (workers and sub-tasks) finished per second, over the whole soak. */
  sessionsPerSec: number;
  hosts: HostFigures[];
  /** Messages still in each work queue after the last run (unacknowledged): 0 each. */
  leftInQueues: Record<string, number>;
  /** Consumers on the cluster's streams 1.2 s after the last run. */
  consumers: number;
  /** Their names (`<queue>/<consumer>`), right after the last run. */
  consumerNames: string[];
  /** The runs' box slots (the boxes bucket: `slot.<n>` → the run that holds it, null when free), after the last run. */
  boxSlots: Record<string, string | null>;
  /** Remote spawn -> placed under this load (ms, from the runs' logs: subtask.spawned to subtask.placed). */
  placement: { p50: number; p99: number; n: number };
  /** Records left in the snapshots bucket after the last run (finished ones are removed 2 min after). */
  recordsLeft: number;
  /** After `settleMs` idle: records in the snapshots and effects buckets, consumers, each node's RSS (MB). */
  settled?: { ms: number; records: number; effects: number; consumers: number; consumerNames: string[]; serverRssMB: number[] };
  /** Each node's RSS (MB) before the first run and after the last. */
  serverRssStartMB: number[];
  serverRssMB: number[];
  /** Each node's RSS (MB) every `sampleMs`, from the first run on: where the servers' memory goes in time. */
  serverRssSeries: Array<{ minute: number; rssMB: number[] }>;
}

/** A process's resident memory in MB (Linux /proc), NaN when unknown. */
function rssOf(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Number(kb) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

interface Sample {
  at: number;
  /** Sub-tasks finished when it was taken. */
  done: number;
  rss: number;
  heap: number;
  running: number;
}

const MB = 1024 * 1024;

/** The least-squares slope of y over x (0 with fewer than two distinct x). */
export function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

export async function soak(o: SoakOptions): Promise<SoakReport> {
  const own = !o.cluster;
  const cluster = o.cluster ?? (await startNatsCluster(3));
  const plan = { workers: o.workers, parts: o.parts, partMs: o.partMs };
  const ws = faultWorkspace(plan, 'a2a-soak-');
  const ids = sessionIds(plan);
  const samples = new Map<string, Sample[]>();
  let done = 0;
  let warmDone = Infinity;
  const nc = await connect({ servers: cluster.urls.split(',') });
  const hosts: Proc[] = [];
  try {
    nc.subscribe('a2a.default.hosts.*.heartbeat', {
      callback: (error, msg) => {
        if (error) return;
        let data: unknown;
        try {
          data = msg.json();
        } catch {
          return;
        }
        const beat = HostHeartbeat.safeParse(data);
        if (!beat.success || !beat.data.memory) return;
        const list = samples.get(beat.data.hostId) ?? [];
        list.push({ at: Date.now(), done, rss: beat.data.memory.rss, heap: beat.data.memory.heapUsed, running: beat.data.running });
        samples.set(beat.data.hostId, list);
      },
    });
    // the architects on h1, the coders on h2 and h3: every sub-task is spawned across hosts
    cluster.nodes.forEach((node, i) => {
      const args = ['host', '--nats', node.url, '--agents', i === 0 ? 'architect' : 'coder', '--id', `soak-h${i + 1}`, '--concurrency', '64'];
      args.push('--script', join(ws, 'script.json'), '--workspace', ws, '--heartbeat', '500', '--drain', '2000');
      hosts.push(a2aProcess(args, ws, process.env, ['--expose-gc']));
    });
    await Promise.all(hosts.map((h) => served(h)));

    const serverRssStartMB = cluster.nodes.map((n) => rssOf(n.pid));
    const start = Date.now();
    const serverRssSeries: SoakReport['serverRssSeries'] = [];
    const jsmSampler = await jetstreamManager(nc, { checkAPI: false });
    const sampler = setInterval(() => {
      void (async () => {
        const rssMB = cluster.nodes.map((n) => rssOf(n.pid));
        const minute = (Date.now() - start) / 60_000;
        serverRssSeries.push({ minute, rssMB });
        const streams: string[] = [];
        for await (const si of jsmSampler.streams.list()) {
          const st = si.state;
          streams.push(`${si.config.name.replace(/^(KV_)?a2a_default_/, '')} ${st.messages}m/${(st.bytes / MB).toFixed(1)}MB/${st.num_deleted ?? 0}del/${st.num_subjects ?? 0}subj/${st.consumer_count}c`);
        }
        o.progress?.(`servers at ${minute.toFixed(1)} min: RSS MB ${rssMB.map((x) => x.toFixed(0)).join(', ')} · ${streams.sort().join(' · ')}`);
      })().catch(() => undefined);
    }, o.sampleMs ?? 60_000);
    const failedRuns: string[] = [];
    const lost: string[] = [];
    const duplicated: string[] = [];
    let runs = 0;
    while (Date.now() - start < o.durationMs && (o.maxRuns === undefined || runs < o.maxRuns)) {
      const runId = `soak-${++runs}`;
      const c = capture();
      const t0 = Date.now();
      const code = await main(['run', join(ws, 'plan.json'), '--nats', cluster.urls, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', runId, '--no-tree'], c.io);
      if (code !== 0) failedRuns.push(`${runId} (exit ${code}): ${(c.out() + c.err()).slice(-2_000)}`);
      const counted = tally(ws, runId, ids);
      lost.push(...counted.lost.map((x) => `${runId}: ${x}`));
      duplicated.push(...counted.duplicated.map((x) => `${runId}: ${x}`));
      done += o.workers * o.parts;
      if (warmDone === Infinity && Date.now() - start >= o.durationMs * o.warmup) warmDone = done;
      o.progress?.(`run ${runId}: exit ${code}, ${Date.now() - t0} ms, ${done} sub-tasks so far, lost ${counted.lost.length}, duplicated ${counted.duplicated.length}`);
    }
    const ms = Date.now() - start;
    clearInterval(sampler);
    const overlap = mostAtOnce(ws, runs);
    // a last heartbeat from each host after the last run; and every queue drained: each message
    // acknowledged (a work queue keeps what is not)
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const left: Record<string, number> = {};
    const drainedBy = Date.now() + 5_000;
    for (;;) {
      for (const queue of ['spawn', 'up', 'down', 'hostevents']) left[queue] = (await jsm.streams.info(`a2a_default_${queue}`)).state.messages;
      if (Object.values(left).every((n) => n === 0) || Date.now() > drainedBy) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // what the servers hold after it: the consumers left (per-session ones go 15 s after their
    // session), and each node's memory
    await new Promise((r) => setTimeout(r, 1_200));
    let consumers = 0;
    const consumerNames: string[] = [];
    for await (const si of jsm.streams.list()) {
      consumers += si.state.consumer_count;
      for await (const ci of jsm.consumers.list(si.config.name)) consumerNames.push(`${si.config.name.replace(/^a2a_default_/, '')}/${ci.name}`);
    }
    consumerNames.sort();
    const boxSlots: Record<string, string | null> = {};
    // read as a2a reads it (no consumer left behind: a KV key listing would leave an ordered one)
    const reader = await connectNats({ servers: cluster.urls, namespace: 'default', name: 'soak-boxes' });
    try {
      const boxes = await reader.readKeyValue(BOXES_BUCKET);
      for (const key of await boxes.keys()) {
        const entry = await boxes.get(key);
        if (entry) boxSlots[key] = RunBoxSlot.parse(entry.value).runId;
      }
    } finally {
      await reader.close();
    }
    const serverRssMB = cluster.nodes.map((n) => rssOf(n.pid));
    const recordsLeft = (await jsm.streams.info('KV_a2a_default_snapshots')).state.messages;
    let settled: SoakReport['settled'];
    if (o.settleMs) {
      o.progress?.(`idle for ${Math.round(o.settleMs / 1000)} s, then what is left is counted again`);
      await new Promise((r) => setTimeout(r, o.settleMs));
      let after = 0;
      const names: string[] = [];
      for await (const si of jsm.streams.list()) {
        after += si.state.consumer_count;
        for await (const ci of jsm.consumers.list(si.config.name)) names.push(`${si.config.name.replace(/^a2a_default_/, '')}/${ci.name}`);
      }
      const messagesOf = async (stream: string) => (await jsm.streams.info(stream).catch(() => null))?.state.messages ?? 0;
      settled = { ms: o.settleMs, records: await messagesOf('KV_a2a_default_snapshots'), effects: await messagesOf('KV_a2a_default_effects'), consumers: after, consumerNames: names.sort(), serverRssMB: cluster.nodes.map((n) => rssOf(n.pid)) };
    }
    if (warmDone === Infinity) warmDone = Math.floor(done * o.warmup);
    const figures: HostFigures[] = [...samples.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([host, list]) => {
        const warm = list.filter((s) => s.done >= warmDone);
        const most = overlap.get(host) ?? { count: 0, at: 0 };
        // its memory at that moment: the heartbeat nearest to it
        const top = list.reduce((best, s) => (Math.abs(s.at - most.at) < Math.abs(best.at - most.at) ? s : best), list[0]!);
        return {
          host,
          samples: list.length,
          rssMB: [list[0]!.rss / MB, list[list.length - 1]!.rss / MB],
          heapMB: [list[0]!.heap / MB, list[list.length - 1]!.heap / MB],
          rssSlope: slope(warm.map((s) => [s.done / 1000, s.rss / MB])),
          heapSlope: slope(warm.map((s) => [s.done / 1000, s.heap / MB])),
          maxSessions: most.count,
          rssAtMaxMB: top.rss / MB,
        };
      });
    const sessions = runs * ids.length;
    return { runs, failedRuns, sessions, subtasks: done, lost, duplicated, ms, sessionsPerSec: sessions / (ms / 1000), hosts: figures, leftInQueues: left, consumers, consumerNames, boxSlots, serverRssMB, serverRssStartMB, serverRssSeries, placement: placementTimes(ws, runs), recordsLeft, ...(settled ? { settled } : {}) };
  } finally {
    for (const h of hosts) h.child.kill('SIGTERM');
    await Promise.all(hosts.map((h) => Promise.race([h.exited, new Promise((r) => setTimeout(r, 5_000))])));
    killAll();
    await nc.close();
    if (own) await cluster.stop();
  }
}

/**
 * Per host, the most sessions it held at once over all runs, and when: from each run's log, a
 * session is held from its first state to its last, as the host that ran it stamped them
 * (`session.state`, relayed from that host), so that a late relay cannot shorten or split it.
 */
function mostAtOnce(ws: string, runs: number): Map<string, { count: number; at: number }> {
  const store = new FileRunStore(ws);
  const edges = new Map<string, Array<[number, number]>>();
  for (let k = 1; k <= runs; k++) {
    const spans = new Map<string, { host: string; from: number; to: number }>();
    for (const e of store.events(`soak-${k}`)) {
      const host = e.data.relayedFrom;
      if (e.type !== 'session.state' || !e.subTaskId || typeof host !== 'string') continue;
      const span = spans.get(e.subTaskId);
      if (span) span.to = e.ts;
      else spans.set(e.subTaskId, { host, from: e.ts, to: e.ts });
    }
    for (const { host, from, to } of spans.values()) {
      const list = edges.get(host) ?? [];
      list.push([from, 1], [to, -1]);
      edges.set(host, list);
    }
  }
  const most = new Map<string, { count: number; at: number }>();
  for (const [host, list] of edges) {
    // ends before starts at the same instant: a session that ended as another began is not two
    list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    let best = { count: 0, at: 0 };
    for (const [at, d] of list) {
      now += d;
      if (now > best.count) best = { count: now, at };
    }
    most.set(host, best);
  }
  return most;
}

/** Each remote session's spawn -> placed (ms) over all runs, from the runs' logs (one machine: one clock). */
function placementTimes(ws: string, runs: number): { p50: number; p99: number; n: number } {
  const store = new FileRunStore(ws);
  const times: number[] = [];
  for (let k = 1; k <= runs; k++) {
    const spawned = new Map<string, number>();
    for (const e of store.events(`soak-${k}`)) {
      if (!e.subTaskId) continue;
      // when it happened: a host's event by the host's clock (its ts is when the run's log took it)
      const at = typeof e.data.relayedAt === 'number' ? e.data.relayedAt : e.ts;
      if (e.type === 'subtask.spawned' && !spawned.has(e.subTaskId)) spawned.set(e.subTaskId, at);
      if (e.type === 'subtask.placed' && spawned.has(e.subTaskId) && e.data.restored !== true) times.push(at - spawned.get(e.subTaskId)!);
    }
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => (times.length ? times[Math.min(times.length - 1, Math.floor(q * times.length))]! : NaN);
  return { p50: at(0.5), p99: at(0.99), n: times.length };
}

/** The report as the table `npm run soak` prints. */
export function formatSoak(r: SoakReport): string {
  const lines = [
    `runs ${r.runs} (${r.failedRuns.length} failed) in ${(r.ms / 1000).toFixed(0)} s · sessions ${r.sessions} (sub-tasks ${r.subtasks}) · lost ${r.lost.length} · duplicated ${r.duplicated.length} · ${r.sessionsPerSec.toFixed(1)} remote sessions/s`,
    `remote spawn -> placed under this load: p50 ${r.placement.p50.toFixed(0)} ms, p99 ${r.placement.p99.toFixed(0)} ms (${r.placement.n} spawns) · records left in the snapshots bucket: ${r.recordsLeft}`,
    ...(r.settled
      ? [`after ${Math.round(r.settled.ms / 1000)} s idle: records ${r.settled.records} (snapshots), ${r.settled.effects} (effects) · consumers ${r.settled.consumers} (${r.settled.consumerNames.join(', ')}) · nats-server RSS MB: ${r.settled.serverRssMB.map((x) => x.toFixed(0)).join(', ')}`]
      : []),
    `left unacknowledged in the queues: ${Object.entries(r.leftInQueues).map(([q, n]) => `${q} ${n}`).join(', ')} · consumers left: ${r.consumers} (${r.consumerNames.join(', ')}) · run box slots: ${Object.entries(r.boxSlots).map(([k, v]) => `${k} ${v ?? 'free'}`).join(', ')} · nats-server RSS MB: ${r.serverRssStartMB.map((a, i) => `${a.toFixed(0)} → ${r.serverRssMB[i]!.toFixed(0)}`).join(', ')}`,
    '',
    'host      beats  RSS MB first→last  heap MB first→last  RSS MB/1k sub-tasks  heap MB/1k sub-tasks  most sessions (RSS MB)',
  ];
  for (const h of r.hosts) {
    lines.push(
      `${h.host.padEnd(9)} ${String(h.samples).padStart(5)}  ${`${h.rssMB[0].toFixed(1)} → ${h.rssMB[1].toFixed(1)}`.padStart(17)}  ${`${h.heapMB[0].toFixed(1)} → ${h.heapMB[1].toFixed(1)}`.padStart(18)}  ${h.rssSlope.toFixed(2).padStart(19)}  ${h.heapSlope.toFixed(2).padStart(20)}  ${`${h.maxSessions} (${h.rssAtMaxMB.toFixed(1)})`.padStart(22)}`,
    );
  }
  for (const f of [...r.failedRuns, ...r.lost.map((x) => `lost: ${x}`), ...r.duplicated.map((x) => `duplicated: ${x}`)].slice(0, 20)) lines.push(f);
  return lines.join('\n');
}

/** One server's NATS figures beside the cluster's (hop, remote spawn placed, burst of 200), as lines of a table. */
export async function natsFigures(cluster: NatsCluster): Promise<string[]> {
  const single = await natsLatency(1000, 40, { burst: 200 });
  const clustered = await natsLatency(1000, 40, { burst: 200, servers: cluster.urls, namespace: 'benchc' });
  const row = (name: string, key: string, unit: string, digits = 2) => `${name.padEnd(28)} ${`${single[key]!.toFixed(digits)} ${unit}`.padStart(14)} ${`${clustered[key]!.toFixed(digits)} ${unit}`.padStart(14)}`;
  return [
    'NATS figures: one server beside a 3-node cluster (replicas 3), loopback',
    `${''.padEnd(28)} ${'one server'.padStart(14)} ${'cluster of 3'.padStart(14)}`,
    row('hop p50', 'hopP50', 'ms'),
    row('hop p99', 'hopP99', 'ms'),
    row('remote spawn → placed p50', 'spawnP50', 'ms'),
    row('remote spawn → placed p99', 'spawnP99', 'ms'),
    row('remote spawns (burst 200)', 'spawnsPerSec', '/s', 1),
  ];
}
