import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Vitest leaves a core free by default: one worker on a 2-core machine, 228 s for the suite.
    // Two take 164 s; the tests that time things wait on conditions, not on fixed sleeps.
    maxWorkers: 2,
  },
});
