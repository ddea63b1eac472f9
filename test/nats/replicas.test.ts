/**
 * Replication (A2A_NATS_REPLICAS, `replicas`): on a 3-node JetStream cluster started by the test
 * (routes on loopback, a store dir per node), every stream and bucket a run and its hosts create
 * gets 3 replicas without being told, with each host on a node of its own and the run given every
 * node (`--nats a,b,c`); an existing stream keeps its replicas, and a setting that differs is
 * told; a setting the cluster cannot hold is refused with a clear error, as is a bad value.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { main } from '../../bin/cli.js';
import { connectNats, describeServers } from '../../adapters/transport/nats.js';
import { warnIfUnauthenticated } from '../../adapters/assembly/nats.js';
import { natsCredentials } from '../../adapters/assembly/nats.js';
import { streamNameFor } from '../../adapters/transport/natsQueues.js';
import { bucketNameFor } from '../../adapters/transport/natsKv.js';
import { faultWorkspace, sessionIds, tally } from '../faults/harness.js';
import { a2aBundle, a2aHost, capture, killAll, served } from './cluster.js';
import { freePort, startNatsCluster, startNatsServer, type NatsCluster, type NatsServer } from './server.js';

let cluster: NatsCluster;
let single: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  a2aBundle(); // the hosts' CLI, bundled once before the clock of any test starts
  [cluster, single] = await Promise.all([startNatsCluster(3), startNatsServer()]);
  nc = await connect({ servers: cluster.urls.split(',') });
  jsm = await jetstreamManager(nc);
}, 30_000);

afterAll(async () => {
  killAll();
  await nc?.close();
  await Promise.all([cluster?.stop(), single?.stop()]);
});

describe('replicas on a 3-node cluster', () => {
  it('gives every stream and bucket of a run across hosts 3 replicas, the hosts on different nodes', async () => {
    const PLAN = { workers: 2, parts: 3, partMs: 100 };
    const ws = faultWorkspace(PLAN, 'a2a-cluster-');
    const arch = a2aHost(cluster.node('n2').url, ws, 'arch', 'architect', { heartbeatMs: 300 });
    const coder = a2aHost(cluster.node('n3').url, ws, 'coder', 'coder', { heartbeatMs: 300 });
    await Promise.all([served(arch), served(coder)]);
    const c = capture();
    const code = await main(['run', join(ws, 'plan.json'), '--nats', cluster.urls, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'cluster-1', '--no-tree'], c.io);
    expect(code, `${c.out()}${c.err()}\n--- arch\n${arch.out()}\n--- coder\n${coder.out()}`).toBe(0);
    for (const stream of ['spawn', 'up', 'down', 'hostevents'].map((q) => streamNameFor(q)).concat(['snapshots', 'hosts'].map((b) => `KV_${bucketNameFor(b)}`))) {
      const info = await jsm.streams.info(stream);
      expect([stream, info.config.num_replicas, (info.cluster?.replicas ?? []).length + 1]).toEqual([stream, 3, 3]);
    }
    expect(tally(ws, 'cluster-1', sessionIds(PLAN))).toEqual({ lost: [], duplicated: [] });
    expect(c.err()).not.toContain('replica');
  }, 25_000);

  it('keeps the replicas of an existing stream, and tells a setting that differs', async () => {
    const one = await connectNats({ servers: cluster.urls, namespace: 'keep', replicas: 1 });
    await one.ensureQueue('jobs', { subjects: ['a2a.keep.jobs.>'], workQueue: true });
    await one.close();
    const warnings: string[] = [];
    const three = await connectNats({ servers: cluster.urls, namespace: 'keep', replicas: 3, onWarning: (w) => warnings.push(w) });
    await three.ensureQueue('jobs', { subjects: ['a2a.keep.jobs.>'], workQueue: true });
    // unasked, a connection says nothing and makes its new streams like the existing ones
    const quiet: string[] = [];
    const auto = await connectNats({ servers: cluster.urls, namespace: 'keep', onWarning: (w) => quiet.push(w) });
    await auto.ensureQueue('jobs', { subjects: ['a2a.keep.jobs.>'], workQueue: true });
    await Promise.all([three.close(), auto.close()]);
    expect(warnings).toEqual(['queue jobs (stream a2a_keep_jobs) has 1 replica(s), and this connection asks for 3: it keeps 1 (change it with `nats stream edit a2a_keep_jobs --replicas 3`)']);
    expect(quiet).toEqual([]);
    expect((await jsm.streams.info('a2a_keep_jobs')).config.num_replicas).toBe(1);
  });

  it('refuses more replicas than the cluster has servers, naming the setting', async () => {
    const five = await connectNats({ servers: cluster.urls, namespace: 'five', replicas: 5 });
    await expect(five.ensureQueue('jobs', { subjects: ['a2a.five.jobs.>'], workQueue: true })).rejects.toThrow(
      /replicas 5 \(A2A_NATS_REPLICAS\) needs a JetStream cluster of at least 5 servers, and .* is a cluster of 3: set A2A_NATS_REPLICAS to at most 3, or leave it unset \(3 here\)/,
    );
    await five.close();
  });
});

describe('replicas on one server, and the setting itself', () => {
  it('makes one replica on a single server unasked, and refuses three', async () => {
    const auto = await connectNats({ servers: single.url, namespace: 'solo' });
    await auto.ensureQueue('jobs', { subjects: ['a2a.solo.jobs.>'], workQueue: true });
    await auto.close();
    const three = await connectNats({ servers: single.url, namespace: 'solo3', replicas: 3 });
    await expect(three.keyValue('snapshots')).rejects.toThrow(/replicas 3 \(A2A_NATS_REPLICAS\) needs a JetStream cluster of at least 3 servers, and .* is a single server: set A2A_NATS_REPLICAS to at most 1/);
    await three.close();
  });

  it('reads A2A_NATS_REPLICAS strictly, and takes several servers separated by commas', async () => {
    expect(natsCredentials({ A2A_NATS_REPLICAS: '3' })).toMatchObject({ replicas: 3 });
    expect(natsCredentials({})).not.toHaveProperty('replicas');
    for (const bad of ['0', '6', 'three', '1.5', '-1']) {
      expect(() => natsCredentials({ A2A_NATS_REPLICAS: bad }), bad).toThrow(`A2A_NATS_REPLICAS must be an integer from 1 to 5 (JetStream's limit), got`);
    }
    await expect(connectNats({ servers: single.url, replicas: 0 })).rejects.toThrow('replicas must be an integer from 1 to 5');
    await expect(connectNats({ servers: ' , ' })).rejects.toThrow('no NATS server given');
    // a dead address first: the client goes on to the next
    const dead = await freePort();
    const t = await connectNats({ servers: `nats://127.0.0.1:${dead}, ${single.url}`, namespace: 'two' });
    await t.ensureQueue('jobs', { subjects: ['a2a.two.jobs.>'], workQueue: true });
    await t.close();
  });

  it('names every server of a cluster without its credentials, in messages and in the warning about a server without authentication', async () => {
    expect(describeServers('nats://ann:pw1@10.0.0.1:4222, nats://bob:pw2@10.0.0.2:4222,nats://10.0.0.3:4222')).toBe('nats://10.0.0.1:4222, nats://10.0.0.2:4222, nats://10.0.0.3:4222');
    const t = await connectNats({ servers: single.url, namespace: 'warn' });
    const lines: string[] = [];
    warnIfUnauthenticated(t, `nats://ann:pw1@127.0.0.1:1,${single.url.replace('//', '//bob:pw2@')}`, (line) => lines.push(line));
    await t.close();
    expect(lines.join('\n')).toContain(`the NATS server at nats://127.0.0.1:1, ${single.url} does not require authentication`);
    expect(lines.join('\n')).not.toMatch(/pw1|pw2/);
  });
});
