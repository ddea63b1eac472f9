/**
 * The model-coverage table of docs/reference/machines.md (between `<!-- coverage -->` and
 * `<!-- /coverage -->`): one row per machine with its states, transitions and the number of
 * generated paths, as `npm run test:model` prints them when every state and transition is covered.
 * `npm run docs` writes it; test/model/suite.ts checks each machine's row against what it ran.
 */
import { generatePaths, machineGraph } from '../../actors/graph/paths.js';
import { chartModels as models } from '../../actors/graph/charts/index.js';

export interface CoverageRow {
  machine: string;
  states: string;
  transitions: string;
  paths: string;
}

/** A machine's row when everything is covered (as the model suite requires). */
export function coverageRow(name: string): CoverageRow {
  const base = models.find((m) => m.name === name);
  if (!base) throw new Error(`no model for machine "${name}"`);
  const graph = machineGraph(base.machine);
  let paths = 0;
  for (const { label, input } of [{ label: '', input: base.input }, ...(base.variants ?? [])]) {
    const { shortest, simple, edges } = generatePaths({ ...base, input, simplePaths: label === '' && base.simplePaths === true });
    paths += shortest.length + simple.length + edges.length;
  }
  return { machine: name, states: `${graph.states.length}/${graph.states.length}`, transitions: `${graph.transitions.length}/${graph.transitions.length}`, paths: String(paths) };
}

export function formatCoverage(rows: CoverageRow[]): string {
  const cells = [['machine', 'states covered', 'transitions covered', 'paths'], ...rows.map((r) => [r.machine, r.states, r.transitions, r.paths])];
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

export function coverageBlock(rows: CoverageRow[]): string {
  return `<!-- coverage -->\n\`\`\`\n${formatCoverage(rows)}\n\`\`\`\n<!-- /coverage -->`;
}

/** The rows of a page's table, by machine (empty when the page has none). */
export function pageCoverage(text: string): Map<string, CoverageRow> {
  const block = /<!-- coverage -->\n```\n([\s\S]*?)\n```\n<!-- \/coverage -->/.exec(text)?.[1] ?? '';
  const rows = new Map<string, CoverageRow>();
  for (const line of block.split('\n').slice(2)) {
    const [machine, states, transitions, paths] = line.trim().split(/\s{2,}/);
    if (machine && states && transitions && paths) rows.set(machine, { machine, states, transitions, paths });
  }
  return rows;
}

/** Every machine's row, in the models' order. */
export function coverageRows(): CoverageRow[] {
  return models.map((m) => coverageRow(m.name));
}
