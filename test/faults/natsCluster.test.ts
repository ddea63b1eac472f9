/**
 * A run across hosts on a 3-node JetStream cluster (every stream and bucket at 3 replicas, chosen
 * by the cluster's size), with the orchestrator given every node and each host one node:
 * - the node that leads the spawn stream is killed with SIGKILL at a seeded random moment once a
 *   worker runs on its host (0-500 ms after it was placed, its sub-tasks being spawned): the
 *   run completes with exactly one terminal result per worker and sub-task (by id, in
 *   events.jsonl, audit.jsonl and at the owner), and the node, started again, catches up;
 * - the node a host is connected to is killed: the host reconnects to another node and keeps its
 *   sessions (none is restored elsewhere, no host is lost).
 *
 * A killed leader is replaced by an election that nats-server times at 4-9 s (compiled in; 4.7-8.7 s
 * measured here for a stream with nothing else going on): a run that would take 2 s takes 9-15 s.
 * So each trial runs in its describe's beforeAll, under its own limit, and the tests that follow
 * only look at what it left. FAULT_CLUSTER_TRIALS sets how many leader kills (default 1, 2 with FAULT_TRIALS=all).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { streamNameFor } from '../../adapters/transport/natsQueues.js';
import { bucketNameFor } from '../../adapters/transport/natsKv.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { a2aHost, capture, killAll, served, waitFor, type Proc } from '../nats/cluster.js';
import { startNatsCluster, type NatsCluster } from '../nats/server.js';
import { FULL_MATRIX, faultSeed, faultWorkspace, printTable, seeded, sessionIds, tally, type Row } from './harness.js';

const PLAN = { workers: 2, parts: 3, partMs: 300 };
const SEED = faultSeed(4242);
const TRIALS = Math.max(1, Number(process.env.FAULT_CLUSTER_TRIALS ?? (FULL_MATRIX ? 2 : 1)) || 1);
/** The longest a trial's run may take: the worst seen was 15 s (an election of 9 s, then the run). */
const RUN_LIMIT_MS = 22_000;
/**
 * The longest a restarted node may take to be back in step: 4.1 s while consumers lived an hour,
 * 16.1 s since the per-session ones go 15 s after their session (the node replays the consumers
 * made and removed while it was down before its streams report current).
 */
const CATCH_UP_LIMIT_MS = 26_000;
const SPAWN = streamNameFor('spawn', 'default');
const leaderRow: Row = { fault: 'cluster: spawn-stream leader killed', trials: 0, passed: 0, lost: 0, duplicated: 0, figure: '' };
const hostRow: Row = { fault: "cluster: a host's node killed", trials: 0, passed: 0, lost: 0, duplicated: 0, figure: '' };
const runTimes: number[] = [];
const recovered: number[] = [];
let cluster: NatsCluster;
let ws: string;
let nc: NatsConnection;
let jsm: JetStreamManager;
let arch: Proc;
let coder: Proc;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  ws = faultWorkspace(PLAN, 'a2a-fault-cluster-');
  nc = await connect({ servers: cluster.urls.split(',') });
  jsm = await jetstreamManager(nc);
  // hosts on different nodes: the architect on n2, the coders on n3; the runs on all three. A
  // host is taken for dead after 3 silent heartbeats: at 300 ms (the failover tests' setting) a
  // host whose node dies can be taken for dead while its client reconnects to another node; at
  // 1 s (the default is 2 s), not
  arch = a2aHost(cluster.node('n2').url, ws, 'arch', 'architect', { heartbeatMs: 1_000 });
  coder = a2aHost(cluster.node('n3').url, ws, 'coder', 'coder', { heartbeatMs: 1_000 });
  await Promise.all([served(arch), served(coder)]);
}, 30_000);

afterAll(async () => {
  killAll();
  await nc?.close();
  await cluster?.stop();
  leaderRow.figure = `runs took ${runTimes.join(', ')} ms; node back in step ${recovered.join(', ')} ms after its restart (seed ${SEED})`;
  printTable([leaderRow, hostRow]);
});

/**
 * The restarted `node` back in step: every stream, and every consumer shared by the processes
 * (hosts' spawn consumers, the run's event consumer), has a leader, `node` among its peers, and
 * every replica current. Only then is another node killed: a second node lost while the first
 * still catches up leaves no quorum (a double fault, not this test's). The consumers of ended
 * sessions are left out: an idle one can stay a couple of entries behind until it is used.
 */
async function inStep(node: string, ms = CATCH_UP_LIMIT_MS): Promise<number> {
  const start = Date.now();
  let lagging: string[] = [];
  const ok = (c: { leader?: string; replicas?: Array<{ name: string; current: boolean }> } | undefined) =>
    !!c?.leader && [c.leader, ...(c.replicas ?? []).map((r) => r.name)].includes(node) && (c.replicas ?? []).every((r) => r.current);
  for (;;) {
    try {
      lagging = [];
      for await (const si of jsm.streams.list()) {
        if (!ok(si.cluster)) lagging.push(si.config.name);
        for await (const ci of jsm.consumers.list(si.config.name)) {
          const shared = ci.config.durable_name && !/^(up|down)-/.test(ci.name);
          if (shared && !ok(ci.cluster)) lagging.push(`${si.config.name}/${ci.name}`);
        }
      }
      if (lagging.length === 0) return Date.now() - start;
    } catch (error) {
      lagging = [`(${String(error)})`];
    }
    if (Date.now() - start > ms) throw new Error(`the cluster was not back in step on ${node} within ${ms} ms: ${lagging.join(', ')}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Resolves once the run's log has an event `match` finds (the run writes it as it goes). */
function reached(runId: string, what: string, match: (e: { type: string; agentType?: string }) => boolean): Promise<void> {
  const store = new FileRunStore(ws);
  const has = () => {
    try {
      return store.events(runId).some(match);
    } catch {
      return false; // not created yet
    }
  };
  return waitFor(`run ${runId} to reach ${what}`, has, 10_000);
}

/** The node that leads `stream` now (waiting out an election). */
async function leaderOf(stream: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const leader = (await jsm.streams.info(stream).catch(() => null))?.cluster?.leader;
    if (leader) return leader;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${stream} has no leader`);
}

interface Trial {
  code: number | string;
  ms: number;
  out: string;
}

/** `a2a run` of the plan on every node of the cluster, with `during` run beside it. */
async function runOnCluster(runId: string, during: () => Promise<void>): Promise<Trial> {
  const c = capture();
  const started = Date.now();
  const running = main(['run', join(ws, 'plan.json'), '--nats', cluster.urls, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', runId, '--no-tree'], c.io);
  await during();
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([running, new Promise<string>((r) => (timer = setTimeout(() => r(`still running after ${RUN_LIMIT_MS} ms`), RUN_LIMIT_MS - (Date.now() - started))))]);
  clearTimeout(timer);
  const ms = Date.now() - started;
  return { code, ms, out: `${c.out()}${c.err()}\n--- host arch\n${arch.out().slice(-4_000)}\n--- host coder\n${coder.out().slice(-4_000)}` };
}

/** One result per worker and sub-task, at the owner and in the run's files. */
function checkRun(runId: string, trial: Trial, row: Row, context: string): void {
  expect(trial.code, `${context}\n${trial.out}`).toBe(0);
  const summary = new FileRunStore(ws).read(runId).summary as RunSummary;
  expect(summary.tasks.map((t) => t.result?.output)).toEqual(Array(PLAN.workers).fill('all parts built'));
  const counted = tally(ws, runId, sessionIds(PLAN));
  row.lost += counted.lost.length;
  row.duplicated += counted.duplicated.length;
  expect(counted, context).toEqual({ lost: [], duplicated: [] });
}

describe('fault: a node of a 3-node NATS cluster dies mid-run', () => {
  describe('no fault', () => {
    let trial: Trial;
    beforeAll(async () => {
      trial = await runOnCluster('cluster-0', async () => undefined);
    }, RUN_LIMIT_MS + 2_000);

    it('runs across hosts on different nodes', () => {
      checkRun('cluster-0', trial, { ...hostRow }, 'no fault');
    });

    it('creates every stream and bucket with 3 replicas on a cluster of 3, without being told', async () => {
      for (const stream of [SPAWN, streamNameFor('up'), streamNameFor('down'), streamNameFor('hostevents'), `KV_${bucketNameFor('snapshots')}`, `KV_${bucketNameFor('hosts')}`]) {
        const info = await jsm.streams.info(stream);
        expect([stream, info.config.num_replicas, (info.cluster?.replicas ?? []).length + 1]).toEqual([stream, 3, 3]);
      }
    });
  });

  for (let n = 0; n < TRIALS; n++) {
    describe(`the spawn stream's leader killed (trial ${n + 1} of ${TRIALS})`, () => {
      const runId = `leader-${n + 1}`;
      let killed = '';
      let trial: Trial;
      beforeAll(async () => {
        const random = seeded(SEED + n);
        trial = await runOnCluster(runId, async () => {
          // mid-run: once a worker runs on its host (its sub-tasks being spawned), at a seeded moment
          await reached(runId, 'a placed worker', (e) => e.type === 'subtask.placed');
          await new Promise((r) => setTimeout(r, Math.floor(random() * 500)));
          killed = await leaderOf(SPAWN);
          await cluster.node(killed).kill();
        });
        leaderRow.trials++;
        runTimes.push(trial.ms);
      }, RUN_LIMIT_MS + 6_000);

      it('completes the run and loses and duplicates nothing', () => {
        checkRun(runId, trial, leaderRow, `seed ${SEED + n}, killed ${killed}`);
      });

      describe('the killed node, started again', () => {
        // the next trial starts from a whole cluster, whatever this one did
        let caughtUp: number | Error;
        beforeAll(async () => {
          await cluster.node(killed).restart();
          caughtUp = await inStep(killed).catch((error: Error) => error);
        }, CATCH_UP_LIMIT_MS + 4_000);

        it('catches up: every stream and shared consumer current, with it among the peers', () => {
          if (caughtUp instanceof Error) throw caughtUp;
          recovered.push(caughtUp);
          leaderRow.passed++;
        });
      });
    });
  }

  describe("a host's node killed", () => {
    let trial: Trial;
    beforeAll(async () => {
      trial = await runOnCluster('host-node', async () => {
        // the coders' host is connected to n3 alone (it learns the other nodes from the cluster):
        // n3 dies while the host runs a coder
        await reached('host-node', 'a coder placed', (e) => e.type === 'subtask.placed' && e.agentType === '@coder');
        await cluster.node('n3').kill();
      });
      hostRow.trials++;
    }, RUN_LIMIT_MS + 6_000);

    it('completes the run and loses and duplicates nothing', () => {
      checkRun('host-node', trial, hostRow, 'n3 killed');
    });

    it('keeps the sessions on their host: none restored elsewhere, no host lost', () => {
      const events = new FileRunStore(ws).events('host-node');
      const placed = events.filter((e) => e.type === 'subtask.placed');
      const context = events.filter((e) => e.type === 'warning' || e.type.startsWith('host.') || e.type === 'session.restored' || e.type === 'subtask.placed').map((e) => `${e.type} ${e.subTaskId ?? ''} ${JSON.stringify(e.data).slice(0, 200)}`).join('\n');
      expect(placed.filter((e) => e.agentType === '@coder').map((e) => e.data.host), context).toEqual(Array(PLAN.workers * PLAN.parts).fill('coder'));
      expect(events.filter((e) => e.type === 'session.restored' || e.type === 'host.lost').map((e) => e.type), context).toEqual([]);
      hostRow.passed++;
      hostRow.figure = `run took ${trial.ms} ms; no session restored, no host lost`;
    });
  });
});
