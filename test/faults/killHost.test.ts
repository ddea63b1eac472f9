/**
 * kill -9 of one host process in the middle of a run across four hosts (two serve @architect, two
 * @coder), at a seeded random moment: the sessions it held are restored on another host from their
 * last snapshot, and every worker and sub-task has exactly one terminal result, by id, in the run's
 * events.jsonl, its audit.jsonl and at its owner. The figure is the failover time in heartbeats
 * (from the kill to the first session restored elsewhere).
 */
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { a2aHost, capture, killAll, served, type Proc } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { FULL_MATRIX, faultSeed, faultWorkspace, printTable, seeded, sessionIds, tally, type Row } from './harness.js';

const PLAN = { workers: 2, parts: 3, partMs: 250 };
/** 5 with the full matrix (FAULT_TRIALS=all), 3 in the suite. */
const TRIALS = FULL_MATRIX ? 5 : 3;
const HEARTBEAT_MS = 200;
const SEED = faultSeed(4242);
const row: Row = { fault: 'kill -9 of one host (failover)', trials: 0, passed: 0, lost: 0, duplicated: 0, figure: '' };
const failovers: number[] = [];

let server: NatsServer;
let ws: string;
const hosts = new Map<string, { proc: Proc; agents: string }>();
let generation = 0;

async function startHost(role: 'architect' | 'coder'): Promise<void> {
  const id = `${role}-${++generation}`;
  const proc = a2aHost(server.url, ws, id, role, { heartbeatMs: HEARTBEAT_MS });
  hosts.set(id, { proc, agents: role });
  await served(proc);
}

beforeAll(async () => {
  server = await startNatsServer();
  ws = faultWorkspace(PLAN, 'a2a-fault-hosts-');
  // a poisoned snapshots bucket (the record that once stopped every new host at start, and every
  // adoption after it): the hosts start, skip it with a warning, and fail over all the same
  const nc = await connect({ servers: server.url });
  await new Kvm(jetstream(nc)).create('a2a_default_snapshots', { history: 1 });
  nc.publish('$KV.a2a_default_snapshots.r-bad.w-x', JSON.stringify({ spec: {}, state: 'released', host: 'gone' }));
  nc.publish('$KV.a2a_default_snapshots.r-bad.w-y', 'not json at all');
  await nc.flush();
  await nc.close();
  await Promise.all([startHost('architect'), startHost('architect'), startHost('coder'), startHost('coder')]);
  for (const { proc } of hosts.values()) expect(proc.out()).not.toContain('internal error');
}, 30_000);

afterAll(async () => {
  killAll();
  await server?.stop();
  const sorted = [...failovers].sort((a, b) => a - b);
  row.figure = sorted.length
    ? `failover in ${sorted.map((f) => f.toFixed(1)).join(', ')} heartbeats of ${HEARTBEAT_MS} ms (dead after 3) (seed ${SEED})`
    : `no kill hit a host holding sessions (seed ${SEED})`;
  printTable([row]);
});

describe('fault: kill -9 of a host mid-run', () => {
  for (let trial = 0; trial < TRIALS; trial++) {
    it(`restores what the killed host held and loses and duplicates nothing (trial ${trial + 1} of ${TRIALS})`, async () => {
      const random = seeded(SEED + trial);
      const runId = `hostkill-${trial + 1}`;
      const c = capture();
      const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', runId, '--no-tree'], c.io);
      // a random host, at a random moment of the run (parts take 250, 500 and 750 ms)
      const live = [...hosts.keys()];
      const victim = live[Math.floor(random() * live.length)]!;
      const delay = 150 + Math.floor(random() * 700);
      await new Promise((r) => setTimeout(r, delay));
      const { proc, agents } = hosts.get(victim)!;
      proc.child.kill('SIGKILL');
      const killedAt = Date.now();
      await proc.exited;
      hosts.delete(victim);
      row.trials++;
      // its replacement joins while the run goes on (the next trial needs two of each)
      const replacement = startHost(agents as 'architect' | 'coder');

      const code = await Promise.race([running, new Promise<string>((r) => setTimeout(() => r('hung'), 15_000))]);
      if (code === 'hung') {
        const logs = [...hosts.entries()].map(([id, h]) => `--- ${id}\n${h.proc.out().slice(-3000)}`).join('\n');
        // what the run's log says happened last (results, takeovers, warnings), to find where it stopped
        const tail = new FileRunStore(ws)
          .events(runId)
          .filter((e) => ['subtask.result', 'subtask.placed', 'session.restored', 'session.state', 'warning', 'model.called'].includes(e.type))
          .slice(-40)
          .map((e) => `${e.seq} ${e.type} ${e.subTaskId ?? ''} ${JSON.stringify(e.data).slice(0, 160)}`)
          .join('\n');
        throw new Error(`the run did not end 15 s after ${victim} was killed ${delay} ms in (seed ${SEED + trial})\n${c.out()}${c.err()}\n${logs}\n--- killed ${victim}\n${proc.out().slice(-3000)}\n--- the run's log, last events\n${tail}`);
      }
      expect(code, `killed ${victim} after ${delay} ms (seed ${SEED + trial})\n${c.out()}${c.err()}`).toBe(0);
      await replacement;
      const store = new FileRunStore(ws);
      const summary = store.read(runId).summary as RunSummary;
      expect(summary.tasks.map((t) => t.result?.output)).toEqual(Array(PLAN.workers).fill('all parts built'));
      const counted = tally(ws, runId, sessionIds(PLAN));
      row.lost += counted.lost.length;
      row.duplicated += counted.duplicated.length;
      expect(counted, `killed ${victim} after ${delay} ms (seed ${SEED + trial})`).toEqual({ lost: [], duplicated: [] });
      // the poisoned records were skipped, said, and left alone
      for (const { proc } of hosts.values()) expect(proc.out()).not.toMatch(/internal error|could not consider/);
      // failover: from the kill to the first of the killed host's sessions taken over elsewhere
      const takeovers = store.events(runId).filter((e) => e.type === 'warning' && new RegExp(` takes over .* from ${victim} `).test(String(e.data.message)) && e.ts >= killedAt);
      if (takeovers.length > 0) failovers.push((Math.min(...takeovers.map((e) => e.ts)) - killedAt) / HEARTBEAT_MS);
      row.passed++;
    }, 20_000);
  }
});
