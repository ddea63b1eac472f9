import { defineConfig } from 'vitest/config';

/** Drives Debian's chromium: run after everything else, on its own (see below). */
const BROWSER = 'test/studio/browser.test.ts';

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Vitest leaves a core free by default: one worker on a 2-core machine, 228 s for the suite.
    // Two take 164 s; the tests that time things wait on conditions, not on fixed sleeps.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: [BROWSER], sequence: { groupOrder: 0 } } },
      // Chromium's processes beside the fault tests (hosts answering hundreds of hostile messages
      // within a deadline) slowed those ninefold on a 2-core machine: the browser tests come after.
      { extends: true, test: { name: 'browser', include: [BROWSER], sequence: { groupOrder: 1 } } },
    ],
  },
});
