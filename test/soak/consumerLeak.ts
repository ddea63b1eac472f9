/**
 * What a nats-server keeps of a replicated consumer once it is removed: on a 3-node cluster (Go's
 * profiling port on loopback), `--consumers` durable consumers of 3 replicas made and removed one
 * after another on a work-queue stream, in 3 rounds, each node's live heap and the part its RAFT
 * groups hold read after each round (after a forced collection). `npx tsx test/soak/consumerLeak.ts
 * [--consumers 300] [--replicas 3]`. On nats-server 2.9.10 each consumer of 3 replicas made and
 * removed leaves 16-23 KB on every node for good (its RAFT group's clients and queues): this is
 * why a2a makes no consumer per session, and why runs share boxes (actors/distribution/runBoxes.ts;
 * README, "The servers' memory").
 */
import { parseArgs } from 'node:util';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { freePort, startNatsCluster } from '../nats/server.js';
import { liveHeap } from './serverHeap.js';

const { values } = parseArgs({ options: { consumers: { type: 'string' }, replicas: { type: 'string' } }, strict: true });
const perRound = Number(values.consumers ?? 300);
const replicas = Number(values.replicas ?? 3);
if (!Number.isInteger(perRound) || perRound < 1 || ![1, 3].includes(replicas)) {
  console.error('consumerLeak: --consumers must be a whole number >= 1 and --replicas 1 or 3');
  process.exit(2);
}
const ports = await Promise.all([0, 1, 2].map(() => freePort()));
const cluster = await startNatsCluster(3, { extraConfig: (i) => `prof_port: ${ports[i]}` });
const nc = await connect({ servers: cluster.urls.split(',') });
try {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  await jsm.streams.add({ name: 'leak', subjects: ['leak.>'], num_replicas: 3, retention: RetentionPolicy.Workqueue });
  const figures = async () => (await Promise.all(ports.map((p) => liveHeap(p)))).map((h, i) => `n${i + 1} ${h.totalMB.toFixed(1)} (RAFT ${h.raftMB.toFixed(1)})`).join(' · ');
  console.log(`live heap MB before: ${await figures()}`);
  for (let round = 1; round <= 3; round++) {
    for (let i = 0; i < perRound; i++) {
      const name = `c${round}_${i}`;
      await jsm.consumers.add('leak', { durable_name: name, filter_subject: `leak.${name}.>`, ack_policy: AckPolicy.Explicit, num_replicas: replicas });
      await jsm.consumers.delete('leak', name);
    }
    await new Promise((r) => setTimeout(r, 2_000));
    console.log(`live heap MB after ${round * perRound} consumers of ${replicas} replica(s) made and removed: ${await figures()}`);
  }
} finally {
  await nc.close();
  await cluster.stop();
}
