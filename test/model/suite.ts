/**
 * Tests generated from the machines' graphs: every shortest path, every simple path (small
 * graphs) and one path per edge of each chart is executed against the real machine; every step
 * checks the state the graph predicted and the model's invariants. Adding a state, a transition
 * or a guard to a machine changes its graph, and so the paths, with no test edited; a transition
 * that the modelled events cannot reach fails the coverage test.
 *
 * One file per big chart (orchestrator.test.ts, worker.test.ts, subtask.test.ts) and one for the
 * rest (charts.test.ts), so that the suite's workers share them: the three big ones take 8-13 s each.
 */
import { readFileSync } from 'node:fs';
import { pageCoverage } from '../docs/coverage.js';
import { MACHINES_PAGE } from '../docs/graphs.js';
import { afterAll, describe, expect, it } from 'vitest';
import { describePath, executePath, generatePaths, machineGraph, type Coverage } from './graph.js';
import { chartModels as models } from '../../actors/graph/charts/index.js';

/**
 * `npm test` executes every path of one per edge (every transition, so every state: the coverage
 * stays 100 %), a quarter of the shortest paths of the charts that have thousands, and a tenth of
 * the simple paths; `npm run test:model` (MODEL_PATHS=all) executes every generated path. The
 * sample is a fixed stride over the generated order, so the same paths run every time. All of them
 * took 45 s of the suite's 4 minutes on 2 cores (38,000 paths).
 */
const ALL_PATHS = process.env.MODEL_PATHS === 'all';
function sample<T>(paths: T[], every: number): T[] {
  return ALL_PATHS || paths.length < 1_000 ? paths : paths.filter((_, i) => i % every === 0);
}

/** Declares the generated tests of the named machines, and prints their coverage table after them. */
export function modelSuite(names: readonly string[]): void {
  const table: Array<{ machine: string; states: string; transitions: string; paths: number }> = [];
  for (const name of names) {
    const base = models.find((m) => m.name === name);
    if (!base) throw new Error(`no chart model named ${name} in actors/graph/charts/ (there are: ${models.map((m) => m.name).join(', ')})`);
    describeMachine(base, table);
  }
  afterAll(() => {
    if (table.length === 0) return;
    const rows = [['machine', 'states covered', 'transitions covered', 'paths'], ...table.map((r) => [r.machine, r.states, r.transitions, String(r.paths)])];
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ');
    process.stdout.write(`\nModel-based coverage\n${line(rows[0]!)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${rows.slice(1).map(line).join('\n')}\n\n`);
  });
}

function describeMachine(base: (typeof models)[number], table: Array<{ machine: string; states: string; transitions: string; paths: number }>): void {
  describe(`machine ${base.name}`, () => {
    const coverage: Coverage = { states: new Set(), transitions: new Set() };
    const graph = machineGraph(base.machine);
    let total = 0;
    for (const { label, input } of [{ label: '', input: base.input }, ...(base.variants ?? [])]) {
      // simple paths grow exponentially: only from the base input
      const model = { ...base, input, simplePaths: label === '' && base.simplePaths === true };
      const { shortest, simple, edges } = generatePaths(model);
      total += shortest.length + simple.length + edges.length;
      const prefix = label ? `(${label}) ` : '';

      it.each(sample(shortest, 4).map((p) => [describePath(p), p] as const))(`${prefix}shortest path: %s`, (_name, path) => {
        executePath(model, path, coverage);
      });

      if (simple.length > 0) {
        it.each(sample(simple, 10).map((p) => [describePath(p), p] as const))(`${prefix}simple path: %s`, (_name, path) => {
          executePath(model, path, coverage);
        });
      }

      it(`${prefix}should hold on every edge of the graph (${edges.length} paths)`, () => {
        for (const path of edges) executePath(model, path, coverage);
      });
    }
    const model = base;

    it('should cover every state and every transition', () => {
      const missingStates = graph.states.filter((s) => !coverage.states.has(s));
      const missingTransitions = graph.transitions.filter((t) => !coverage.transitions.has(t.key)).map((t) => t.key);
      table.push({
        machine: model.name,
        states: `${graph.states.length - missingStates.length}/${graph.states.length}`,
        transitions: `${graph.transitions.length - missingTransitions.length}/${graph.transitions.length}`,
        paths: total,
      });
      expect(missingStates, 'states no generated path reaches').toEqual([]);
      // the docs' table says what ran (docs/reference/machines.md; npm run docs writes it)
      expect(pageCoverage(readFileSync(MACHINES_PAGE, 'utf8')).get(model.name), 'the coverage row of docs/reference/machines.md (run npm run docs)').toEqual({
        machine: model.name,
        states: `${graph.states.length}/${graph.states.length}`,
        transitions: `${graph.transitions.length}/${graph.transitions.length}`,
        paths: String(total),
      });
      expect(missingTransitions, 'transitions no generated path takes: add the events that reach them to its chart model in actors/graph/charts/').toEqual([]);
    });
  });
}
