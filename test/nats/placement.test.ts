/**
 * A replicated stream or bucket asked of a cluster whose servers are routed but not yet JetStream
 * peers (10005, "no suitable peers for placement"): tried again for about 10 s when the cluster
 * has enough servers for the replicas, refused at once when it has too few (adapters/transport/
 * natsQueues.ts, peersJoining). On a fresh cluster beside a loaded suite, the example cluster's
 * test once met the first case and failed.
 */
import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import { peersJoining } from '../../adapters/transport/natsQueues.js';
import type { NatsLink } from '../../adapters/transport/natsLink.js';

const noPeers = new JetStreamApiError({ code: 400, err_code: 10005, description: 'no suitable peers for placement' });
const other = new JetStreamApiError({ code: 500, err_code: 10077, description: 'other' });
const link = (clusterSize: number) => ({ clusterSize }) as unknown as NatsLink;

describe('placement while a cluster forms', () => {
  it('tries again when the cluster has the servers for the replicas, up to its attempts', async () => {
    expect(await peersJoining(link(3), noPeers, 3, 0)).toBe(true);
    expect(await peersJoining(link(3), noPeers, 3, 12)).toBe(false);
  });

  it('refuses at once when the cluster has too few servers, or for another error', async () => {
    expect(await peersJoining(link(2), noPeers, 3, 0)).toBe(false);
    expect(await peersJoining(link(3), other, 3, 0)).toBe(false);
    expect(await peersJoining(link(3), new Error('no suitable peers'), 3, 0)).toBe(false);
  });
});
