/**
 * The NATS figures of `npm run soak` alone (one server beside a 3-node cluster: hop, remote spawn
 * placed, burst), without the soak after them: `npx tsx test/soak/latency.ts`.
 */
import { startNatsCluster } from '../nats/server.js';
import { natsFigures } from './soak.js';

const cluster = await startNatsCluster(3);
try {
  for (const line of await natsFigures(cluster)) console.log(line);
} finally {
  await cluster.stop();
}
