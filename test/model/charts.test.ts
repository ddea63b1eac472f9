/** The tests generated from the smaller charts' graphs (test/model/suite.ts), and the check that every machine has a chart model. */
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartModels } from '../../actors/graph/charts/index.js';
import { GRAPH_MACHINES } from '../../bin/commands/graphNames.js';
import { machines } from '../../actors/graph/index.js';
import { modelSuite } from './suite.js';

/** The charts with a file of their own (the big ones). */
const OWN_FILE = ['orchestrator', 'worker', 'subtask'];

describe('every machine in machines/ has a model', () => {
  it('should model each *.machine.ts', () => {
    const files = readdirSync(resolve(import.meta.dirname, '../../machines')).filter((f) => f.endsWith('.machine.ts'));
    expect(files.map((f) => f.replace('.machine.ts', '')).sort()).toEqual(chartModels.map((m) => m.name).sort());
  });

  it('should list every machine in the CLI\'s help of a2a graph', () => {
    expect([...GRAPH_MACHINES].sort()).toEqual(Object.keys(machines).sort());
  });
});

modelSuite(chartModels.map((m) => m.name).filter((name) => !OWN_FILE.includes(name)));
