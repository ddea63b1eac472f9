/**
 * The nats-server restarted in the middle of a run across hosts, at a seeded random moment: every
 * publish is retried with its message id until stored, consumers re-attach, hosts' events reach
 * the run's log through their durable stream, and every worker and sub-task has exactly one
 * terminal result, by id, in events.jsonl, in audit.jsonl and at its owner.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { a2aHost, capture, killAll, served, waitFor } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { faultSeed, faultWorkspace, printTable, seeded, sessionIds, tally, type Row } from './harness.js';

const PLAN = { workers: 2, parts: 3, partMs: 300 };
const TRIALS = 3;
const SEED = faultSeed(777);
const row: Row = { fault: 'nats-server restart mid-run', trials: 0, passed: 0, lost: 0, duplicated: 0, figure: '' };
const outages: number[] = [];
let server: NatsServer;
let ws: string;
const procs: Array<ReturnType<typeof a2aHost>> = [];

beforeAll(async () => {
  server = await startNatsServer();
  ws = faultWorkspace(PLAN, 'a2a-fault-restart-');
  procs.push(a2aHost(server.url, ws, 'arch', 'architect'), a2aHost(server.url, ws, 'coder', 'coder'));
  await Promise.all(procs.map(served));
}, 30_000);

afterAll(async () => {
  killAll();
  await server?.stop();
  row.figure = `server down for ${outages.join(', ')} ms (seed ${SEED})`;
  printTable([row]);
});

describe('fault: the NATS server restarts mid-run', () => {
  for (let trial = 0; trial < TRIALS; trial++) {
    it(`loses and duplicates nothing (trial ${trial + 1} of ${TRIALS})`, async () => {
      const random = seeded(SEED + trial);
      const runId = `restart-${trial + 1}`;
      const c = capture();
      const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', runId, '--no-tree'], c.io);
      // mid-run: the run connected and started (on a loaded machine its start can take longer than
      // the delay below: a server down before it connected is another case, refused at once)
      await waitFor('the run to start', () => new FileRunStore(ws).events(runId).some((e) => e.type === 'run.started'), 10_000, () => c.out() + c.err());
      await new Promise((r) => setTimeout(r, 100 + Math.floor(random() * 700)));
      const down = Date.now();
      await server.restart();
      outages.push(Date.now() - down);
      row.trials++;
      const code = await Promise.race([running, new Promise<string>((r) => setTimeout(() => r('hung'), 15_000))]);
      expect(code, `seed ${SEED + trial}\n${c.out()}${c.err()}`).toBe(0);
      const summary = new FileRunStore(ws).read(runId).summary as RunSummary;
      expect(summary.tasks.map((t) => t.result?.output)).toEqual(Array(PLAN.workers).fill('all parts built'));
      const counted = tally(ws, runId, sessionIds(PLAN));
      row.lost += counted.lost.length;
      row.duplicated += counted.duplicated.length;
      expect(counted, `seed ${SEED + trial}: ${JSON.stringify(counted)}\n${procs.map((p) => p.out().slice(-1500)).join('\n---\n')}`).toEqual({ lost: [], duplicated: [] });
      row.passed++;
    }, 25_000);
  }
});
