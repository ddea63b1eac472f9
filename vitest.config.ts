import { defineConfig } from 'vitest/config';

/** Drives Debian's chromium: run after everything else, on its own (see below). */
const BROWSER = 'test/studio/browser.test.ts';
/** Kills nodes of a 3-node NATS cluster and times the elections: run last, alone (see below). */
const CLUSTER_FAULTS = 'test/faults/natsCluster.test.ts';

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Vitest leaves a core free by default: one worker on a 2-core machine, 228 s for the suite.
    // Two take 164 s; the tests that time things wait on conditions, not on fixed sleeps.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [BROWSER, CLUSTER_FAULTS], sequence: { groupOrder: 0 } } },
      // Chromium's processes beside the fault tests (hosts answering hundreds of hostile messages
      // within a deadline) slowed those ninefold on a 2-core machine: the browser tests come after.
      { extends: true, test: { name: 'browser', include: [BROWSER], sequence: { groupOrder: 1 } } },
      // A leader's election takes 4-9 s, and a trial must end within 22 s: beside the rest of the
      // suite (hosts and NATS servers of other files on the same two cores) a trial once ran out
      // of time (1 of 6 suite runs), alone never (6 of 6). It runs after everything, on its own.
      { extends: true, test: { name: 'cluster', include: [CLUSTER_FAULTS], sequence: { groupOrder: 2 } } },
    ],
  },
});
