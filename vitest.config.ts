import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { SlowestFirst } from './test/sequencer.js';

/**
 * Files that set up process-wide state a later file in the same process must not inherit: the
 * OpenTelemetry globals and the tracing a run starts for its process (one exporter per process).
 */
const OWN_PROCESS = ['test/otel/**/*.test.ts'];

export default defineConfig({
  test: {
    // test/setup.ts runs before each file and puts back what files share (see isolate)
    setupFiles: ['test/setup.ts'],
    // removes the CLI bundles of test processes that were killed (test/helpers.ts bundleOnce)
    globalSetup: ['test/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // More workers than cores: most files wait on processes, servers and timers (elections,
    // heartbeats, kills), not on the CPU. On 2 cores, 2 workers took 297 s, 3 take 200 s.
    maxWorkers: Math.max(3, availableParallelism()),
    // the longest files first, so that none runs alone at the end (test/sequencer.ts)
    sequence: { sequencer: SlowestFirst },
    projects: [
      {
        extends: true,
        // The files of a worker share its process and modules (xstate, zod, the protocol's
        // schemas): with a fresh module graph per file, imports took 100 s of the suite's 5
        // minutes on 2 cores (34 s shared). test/setup.ts resets the environment and the secrets.
        test: { name: 'shared', include: ['test/**/*.test.ts'], exclude: OWN_PROCESS, isolate: false },
      },
      { extends: true, test: { name: 'own-process', include: OWN_PROCESS, isolate: true } },
    ],
  },
});
