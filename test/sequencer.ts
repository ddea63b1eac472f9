/**
 * The order the suite's files start in: the longest first, so that none of them starts last and
 * runs alone while the other workers have nothing left (Vitest's own order needs the timings of a
 * previous run, which a fresh checkout does not have, and puts small files last). The rest in
 * Vitest's order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Measured with `npx vitest run --reporter=json` on 2 cores: each of these takes 10 s or more. */
export const SLOWEST = [
  'test/faults/effects.test.ts',
  'test/faults/natsCluster.test.ts',
  'test/studio/browser.test.ts',
  'test/model/orchestrator.test.ts',
  'test/model/worker.test.ts',
  'test/model/subtask.test.ts',
  'test/nats/distributed.test.ts',
  'test/faults/killRun.test.ts',
  'test/faults/fuzz.test.ts',
  'test/library/package.test.ts',
  // builds the documentation site (TypeDoc, VitePress) before its browser tests: 35-50 s beside the suite
  'test/docs/site.test.ts',
  'test/nats/transport.test.ts',
  'test/faults/killHost.test.ts',
  'test/workflow/pauseKill.test.ts',
  'test/nats/soak.test.ts',
  'test/workflow/sdlc.test.ts',
  'test/nats/replicas.test.ts',
];

export class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (spec: TestSpecification) => {
      const at = SLOWEST.findIndex((path) => spec.moduleId.endsWith(path));
      return at === -1 ? SLOWEST.length : at;
    };
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}
