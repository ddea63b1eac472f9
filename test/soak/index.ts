/**
 * `npm run soak [-- --minutes N]`: the soak of test/soak/soak.ts on a 3-node cluster (default 10
 * minutes; SOAK_MINUTES also sets it), after the NATS figures of one server beside the cluster's:
 * one hop p50/p99, a remote spawn's p50/p99, and remote spawns per second in a burst of 200.
 * `--figures-only`: those figures and no soak. Not part of `npm test` (test/nats/soak.test.ts is its short version). Exits 1 when a run failed
 * or a session lost or duplicated its result.
 */
import { parseArgs } from 'node:util';
import { startNatsCluster } from '../nats/server.js';
import { formatSoak, natsFigures, soak } from './soak.js';

const { values } = parseArgs({
  options: { minutes: { type: 'string' }, workers: { type: 'string' }, parts: { type: 'string' }, 'no-latency': { type: 'boolean' }, 'figures-only': { type: 'boolean' }, gomemlimit: { type: 'string' } },
  strict: true,
});
const number = (name: string, given: string | undefined, fallback: number) => {
  if (given === undefined) return fallback;
  const n = Number(given);
  if (!(n > 0)) {
    console.error(`npm run soak: --${name} must be a positive number, got "${given}"`);
    process.exit(2);
  }
  return n;
};
const minutes = number('minutes', values.minutes ?? process.env.SOAK_MINUTES, 10);
const workers = number('workers', values.workers, 4);
const parts = number('parts', values.parts, 5);

// the servers' Go runtime: GOMEMLIMIT (e.g. 128MiB) makes its collector return memory to the
// system before the heap grows past it (README, "The servers' memory")
const gomemlimit = values.gomemlimit ?? process.env.SOAK_GOMEMLIMIT;
if (gomemlimit !== undefined && !/^\d+(B|KiB|MiB|GiB)$/.test(gomemlimit)) {
  console.error(`npm run soak: --gomemlimit must be a size such as 128MiB (B, KiB, MiB or GiB), got "${gomemlimit}"`);
  process.exit(2);
}
const cluster = await startNatsCluster(3, gomemlimit ? { env: { GOMEMLIMIT: gomemlimit } } : {});
if (gomemlimit) console.log(`nats-server runs with GOMEMLIMIT=${gomemlimit}`);
try {
  if (!values['no-latency']) {
    for (const line of await natsFigures(cluster)) console.log(line);
    console.log('');
  }
  if (!values['figures-only']) {
    console.log(`soak: ${minutes} min of runs (${workers} workers × ${parts} parts each) on 3 hosts, one per node`);
    // then 2 min 10 s idle: finished sessions' records are removed 2 min after their result
    const report = await soak({ durationMs: minutes * 60_000, workers, parts, partMs: 100, warmup: 0.2, cluster, settleMs: 130_000, progress: (line) => console.log(line) });
    console.log(`\n${formatSoak(report)}`);
    process.exitCode = report.failedRuns.length || report.lost.length || report.duplicated.length ? 1 : 0;
  }
} finally {
  await cluster.stop();
}
