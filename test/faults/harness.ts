/**
 * What the fault-injection tests share: a seeded random source (a failure can be replayed with
 * the seed it printed: `FAULT_SEED=<n> npm test -- test/faults`), the plan they run (workers that
 * each split their task into parallel coder sub-tasks), the exactly-once check by id, and the
 * table of figures each file prints at the end.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { architectSplitting } from '../nats/cluster.js';

/** mulberry32: small, fast, and the same sequence for the same seed on every machine. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of this run of the suite: FAULT_SEED, else a fixed one (CI replays the same points). */
export function faultSeed(fallback: number): number {
  const given = process.env.FAULT_SEED;
  return given && /^\d+$/.test(given) ? Number(given) : fallback;
}

/**
 * Whether this run takes every trial of the fault matrices (`FAULT_TRIALS=all`, `npm run
 * test:faults`) or the suite's sample: one trial of each kind of kill point, so that `npm test`
 * stays within its time on 2 cores. The sample is a fixed subset of the matrix (the same points,
 * the same seed), never other points.
 */
export const FULL_MATRIX = process.env.FAULT_TRIALS === 'all';

/** The trials to run: all of them with FULL_MATRIX, else those `inSample` keeps. */
export function faultTrials<T>(all: T[], inSample: (trial: T, index: number) => boolean): T[] {
  return FULL_MATRIX ? all : all.filter(inSample);
}

export interface FaultPlan {
  workers: number;
  parts: number;
  partMs: number;
}

/** `workers` architect tasks; each spawns `parts` coder sub-tasks in parallel and completes when all have. */
export function faultWorkspace(o: FaultPlan, prefix = 'a2a-fault-'): string {
  const ws = tempDir(prefix);
  const parts = Array.from({ length: o.parts }, (_, i) => i + 1);
  writeFileSync(
    join(ws, 'plan.json'),
    JSON.stringify({ id: 'faults', tasks: Array.from({ length: o.workers }, (_, i) => ({ id: `t${i + 1}`, agent: '@architect', prompt: `design and build part set ${i + 1}` })) }),
  );
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        architectSplitting(o.parts),
        // parts finish one after the other (partMs, 2×, 3× …), so that results, wake-ups and
        // completions are spread over the run's life
        ...parts.map((i) => ({ agent: 'coder', prompt: `build part ${i}\\b`, turns: [{ delayMs: o.partMs * i, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'part built' } }] }] })),
      ],
    }),
  );
  return ws;
}

/** Every session of a fault plan: the workers and their sub-tasks, by id. */
export function sessionIds(o: FaultPlan): string[] {
  const ids: string[] = [];
  for (let w = 1; w <= o.workers; w++) {
    ids.push(`w-t${w}`);
    for (let p = 1; p <= o.parts; p++) ids.push(`w-t${w}.${p}`);
  }
  return ids;
}

export interface Tally {
  /** Sessions with no terminal result (where: events, audit, owner). */
  lost: string[];
  /** Sessions with more than one terminal result, where (events, audit, owner). */
  duplicated: string[];
}

/**
 * Exactly one terminal result per session, by id: in events.jsonl, in audit.jsonl, and at the owner
 * (one result handed to it, and no second result it had to ignore).
 */
export function tally(ws: string, runId: string, ids: string[]): Tally {
  const store = new FileRunStore(ws);
  const events = store.events(runId);
  const audit = store.logLines(runId, 'audit') as RunEvent[];
  const lost = new Set<string>();
  const duplicated = new Set<string>();
  const count = (list: RunEvent[], id: string) => list.filter((e) => e.type === 'subtask.result' && e.subTaskId === id).length;
  for (const id of ids) {
    for (const [where, list] of [['events', events], ['audit', audit]] as const) {
      const n = count(list, id);
      if (n === 0) lost.add(`${id} (${where})`);
      if (n > 1) duplicated.add(`${id} (${where} ×${n})`);
    }
    // handed to its owner: the family that queued the update is its parent's (a sub-task's parent is
    // its id without the last number; a worker's updates are queued by the orchestrator's family)
    const owner = id.includes('.') ? id.slice(0, id.lastIndexOf('.')) : id;
    const results = events.filter((e) => e.type === 'update.queued' && e.data.from === id && (e.data.updateType === 'completed' || e.data.updateType === 'failed'));
    const handed = results.filter((e) => e.subTaskId === owner).length;
    if (results.length > handed) lost.add(`${id} (handed to ${results.filter((e) => e.subTaskId !== owner).map((e) => e.subTaskId).join(', ')} instead of ${owner})`);
    if (handed === 0) lost.add(`${id} (owner)`);
    if (handed > 1) duplicated.add(`${id} (owner ×${handed})`);
  }
  for (const e of events) {
    if (e.type === 'warning' && /^second result for /.test(String(e.data.message))) duplicated.add(`${String(e.data.message)} (owner)`);
  }
  return { lost: [...lost], duplicated: [...duplicated] };
}

export interface Row {
  fault: string;
  trials: number;
  passed: number;
  lost: number;
  duplicated: number;
  figure: string;
}

/** Prints the closing note's table: fault | trials | passed | lost | duplicated | figure. */
export function printTable(rows: Row[]): void {
  const header = ['fault', 'trials', 'passed', 'lost', 'duplicated', 'figure'];
  const cells = rows.map((r) => [r.fault, String(r.trials), String(r.passed), String(r.lost), String(r.duplicated), r.figure]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => v.padEnd(widths[i]!)).join('  ');
  console.log(['', line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line), ''].join('\n'));
}
