/**
 * The user's index of runs (`runs/<runId>.json` in the config directory) keeps the newest
 * INDEX_KEPT runs: it does not grow with every run ever made; entries of workspaces that are gone
 * leave first.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { indexedRuns, indexRun } from '../../adapters/store/runIndex.js';
import { tempDir } from '../helpers.js';

let before: string | undefined;
let config: string;
beforeEach(() => {
  before = process.env.A2A_CONFIG_HOME;
  config = tempDir('a2a-index-');
  process.env.A2A_CONFIG_HOME = config;
});
afterEach(() => {
  if (before === undefined) delete process.env.A2A_CONFIG_HOME;
  else process.env.A2A_CONFIG_HOME = before;
});

describe('the run index', () => {
  it('keeps the newest runs up to its limit, dropping those of workspaces that are gone first', async () => {
    const live = tempDir('a2a-index-ws-');
    const gone = join(tempDir('a2a-index-gone-'), 'ws');
    mkdirSync(gone);
    indexRun('run-gone', gone, 3);
    await new Promise((r) => setTimeout(r, 2));
    rmSync(gone, { recursive: true });
    for (const id of ['run-1', 'run-2', 'run-3', 'run-4']) {
      indexRun(id, live, 3);
      await new Promise((r) => setTimeout(r, 2));
    }
    expect(readdirSync(join(config, 'runs')).length).toBe(3);
    expect(indexedRuns().map((e) => e.runId)).toEqual(['run-4', 'run-3', 'run-2']);
  });
});
