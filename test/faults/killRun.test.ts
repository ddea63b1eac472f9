/**
 * kill -9 of `a2a run` at random points, then `a2a run --resume`: every worker and sub-task has
 * exactly one terminal result, by id, in events.jsonl, in audit.jsonl and at its owner; the event
 * sequence continues across lives. The points come from a seeded source (printed), so that a
 * failure can be replayed with FAULT_SEED.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { FileRunStore } from '../../adapters/store/file.js';
import { segmentNumbers } from '../../adapters/store/runLog.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { a2aProcess, killAll, waitFor } from '../nats/cluster.js';
import { FULL_MATRIX, faultSeed, faultWorkspace, printTable, seeded, sessionIds, tally, type Row } from './harness.js';

const PLAN = { workers: 6, parts: 3, partMs: 150 };
/** 10 with the full matrix; the suite's sample takes the first 4 (2 of them in segments). */
const TRIALS = FULL_MATRIX ? 10 : 4;
const SEED = faultSeed(20261123);
const row: Row = { fault: 'kill -9 of a2a run, then --resume', trials: 0, passed: 0, lost: 0, duplicated: 0, figure: '' };
/** A run of this plan prints about this many events (--json): the kill points are spread over them. */
const EVENTS = 180;
const killedAt: number[] = [];

afterEach(() => killAll());
afterAll(() => {
  row.figure = `killed after event ${killedAt.join(', ')} (seed ${SEED})`;
  printTable([row]);
});

describe('fault: kill -9 of the orchestrator process', () => {
  for (let trial = 0; trial < TRIALS; trial++) {
    it(`loses nothing and duplicates nothing when killed at random point ${trial + 1} of ${TRIALS}`, async () => {
      const random = seeded(SEED + trial);
      const ws = faultWorkspace(PLAN);
      const runId = `kill-${trial + 1}`;
      const store = new FileRunStore(ws);
      const args = ['run', 'plan.json', '--script', 'script.json', '--max-workers', String(PLAN.workers), '--run-id', runId, '--json'];
      // every other trial closes the log into segments of 4 KB (a dozen events): the resume then
      // reads the log's index and the segments after it, and every reader reads across them
      const segmented = trial % 2 === 1;
      const env = segmented ? { ...process.env, A2A_LOG_SEGMENT_MB: '0.004' } : process.env;
      const first = a2aProcess(args, ws, env);
      // anywhere in its life, by how far it got: before the first checkpoint, while parts run,
      // while results come in, while workers complete (each event is a line of --json)
      const at = Math.floor(random() * EVENTS);
      const printed = () => first.out().split('\n').filter((l) => l.startsWith('{')).length;
      await waitFor(`event ${at}`, () => printed() >= at || first.child.exitCode !== null, 8_000, first.out);
      expect(first.child.exitCode, `the run ended before event ${at}:\n${first.out().slice(-2000)}`).toBeNull();
      first.child.kill('SIGKILL');
      await first.exited;
      killedAt.push(at);
      row.trials++;

      const before = store.eventsStart(runId).seq;
      const second = a2aProcess(['run', '--resume', runId, '--no-tree'], ws, env);
      const code = await second.exited;
      expect(code, `${first.out().slice(-3000)}\n--- resume ---\n${second.out()}`).toBe(0);
      const record = store.read(runId);
      expect(record.status).toBe('completed');
      expect((record.summary as RunSummary).tasks.map((t) => t.result?.output)).toEqual(Array(PLAN.workers).fill('all parts built'));

      const counted = tally(ws, runId, sessionIds(PLAN));
      row.lost += counted.lost.length;
      row.duplicated += counted.duplicated.length;
      expect(counted, `seed ${SEED + trial}, killed after event ${at}`).toEqual({ lost: [], duplicated: [] });
      // one sequence across both lives: no number twice, none going back
      const seqs = store.events(runId).map((e) => e.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      expect(seqs.every((s, i) => i === 0 || s > seqs[i - 1]!)).toBe(true);
      expect(Math.max(...seqs)).toBeGreaterThanOrEqual(before);
      if (segmented) {
        const dir = store.dir(runId);
        expect(segmentNumbers(dir, 'events').length, 'segments of the event log').toBeGreaterThan(3);
        expect(existsSync(join(dir, 'events.index.json'))).toBe(true);
      }
      row.passed++;
    }, 20_000);
  }
});
