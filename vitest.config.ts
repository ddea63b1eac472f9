import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Vitest leaves a core free by default: one worker on a 2-core machine, 228 s for the suite.
    // Two take 164 s; the tests that time things wait on conditions, not on fixed sleeps.
    maxWorkers: 2,
    projects: [
      { extends: true, test: { name: 'suite', include: ['test/**/*.test.ts'], exclude: ['test/faults/**'], sequence: { groupOrder: 0 } } },
      // The fault tests run real processes against deadlines (a host must answer 800 hostile
      // messages within 8 s): they run after the rest, among themselves, so that a type-check or
      // an npm install in another file does not take their CPU.
      { extends: true, test: { name: 'faults', include: ['test/faults/**/*.test.ts'], sequence: { groupOrder: 1 } } },
    ],
  },
});
