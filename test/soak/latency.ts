/**
 * The NATS figures of `npm run soak` alone (one server beside a 3-node cluster: hop, remote spawn
 * placed, burst), without the soak after them: `npx tsx test/soak/latency.ts`.
 */
import { natsLatency } from '../bench/scenarios.js';
import { startNatsCluster } from '../nats/server.js';

const cluster = await startNatsCluster(3);
try {
  const single = await natsLatency(1000, 40, { burst: 200 });
  const clustered = await natsLatency(1000, 40, { burst: 200, servers: cluster.urls, namespace: 'benchc' });
  const row = (name: string, key: string, unit: string, digits = 2) => `${name.padEnd(28)} ${`${single[key]!.toFixed(digits)} ${unit}`.padStart(14)} ${`${clustered[key]!.toFixed(digits)} ${unit}`.padStart(14)}`;
  console.log('NATS figures: one server beside a 3-node cluster (replicas 3), loopback');
  console.log(`${''.padEnd(28)} ${'one server'.padStart(14)} ${'cluster of 3'.padStart(14)}`);
  console.log(row('hop p50', 'hopP50', 'ms'));
  console.log(row('hop p99', 'hopP99', 'ms'));
  console.log(row('remote spawn → placed p50', 'spawnP50', 'ms'));
  console.log(row('remote spawn → placed p99', 'spawnP99', 'ms'));
  console.log(row('remote spawns (burst 200)', 'spawnsPerSec', '/s', 1));
} finally {
  await cluster.stop();
}
