/**
 * examples/nats/cluster/: three nats-server configurations that include ../server.conf (its
 * accounts and per-role users) and add a name, a client port, a store and routes. Each is valid
 * where it stands; started together (ports moved to free ones, stores in temp dirs) they form a
 * JetStream cluster where the role users work: the orchestrator's queues get 3 replicas without
 * being told, a host opens its buckets, and the monitor, in its own account, is refused a write.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectNats } from '../../adapters/transport/nats.js';
import { ensureQueues } from '../../actors/distribution/remote.js';
import type { NatsConnectedTransport } from '../../adapters/transport/nats.js';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { examplePasswords, freePort, natsServerBinary, startNatsServer, type NatsServer } from './server.js';

const root = resolve(import.meta.dirname, '../..');
const files = ['n1', 'n2', 'n3'].map((n) => join(root, `examples/nats/cluster/${n}.conf`));
const passwords = examplePasswords();
let nodes: NatsServer[] = [];
const open: NatsConnectedTransport[] = [];
const raw: NatsConnection[] = [];

describe('examples/nats/cluster', () => {
  it('each node configuration is valid where it stands, its include of ../server.conf too (nats-server -t)', () => {
    for (const file of files) {
      const check = spawnSync(natsServerBinary(), ['-t', '-c', file], { env: { PATH: process.env.PATH ?? '', ...passwords }, encoding: 'utf8' });
      expect(check.status, check.stdout + check.stderr).toBe(0);
      expect(check.stdout + check.stderr).toContain('is valid');
      const text = readFileSync(file, 'utf8');
      expect(text).toMatch(/^include \.\.\/server\.conf$/m);
      expect(text).toMatch(/^server_name: n\d$/m);
    }
  });

  describe('started together', () => {
    beforeAll(async () => {
      // as written, but on free ports and temp stores (the fixture's listen and store_dir come
      // after the file's, and the last value wins); the include inlined, as the fixture writes
      // its own config file elsewhere
      const server = readFileSync(join(root, 'examples/nats/server.conf'), 'utf8');
      const routes = await Promise.all(files.map(() => freePort()));
      const texts = files.map((f) =>
        readFileSync(f, 'utf8')
          .replace(/^include \.\.\/server\.conf$/m, server)
          .replace(/127\.0\.0\.1:623(\d)/g, (_, d: string) => `127.0.0.1:${routes[Number(d) - 1]}`),
      );
      nodes = await Promise.all(texts.map((base) => startNatsServer({ base, env: passwords })));
      // formed: a metadata leader elected, every node known to the others
      const deadline = Date.now() + 15_000;
      while (!nodes.some((n) => /new metadata leader/.test(n.log()))) {
        if (Date.now() > deadline) throw new Error(`the cluster elected no metadata leader:\n${nodes.map((n) => n.log()).join('\n---\n')}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }, 20_000);

    afterAll(async () => {
      for (const t of open) await t.close().catch(() => undefined);
      for (const c of raw) await c.close().catch(() => undefined);
      await Promise.all(nodes.map((n) => n.stop()));
    });

    const as = async (user: 'orchestrator' | 'host-alpha' | 'monitor', node: number) => {
      const pass = { orchestrator: passwords.A2A_ORCHESTRATOR_PASSWORD, 'host-alpha': passwords.A2A_HOST_ALPHA_PASSWORD, monitor: passwords.A2A_MONITOR_PASSWORD }[user];
      const t = await connectNats({ servers: nodes[node]!.url, user, pass, inboxPrefix: `_INBOX_${user}`, ...(user === 'monitor' ? { jsApiPrefix: 'JS.A2A.API' } : {}) });
      open.push(t);
      return t;
    };

    it("gives the orchestrator's queues 3 replicas, and lets a host on another node open its buckets", async () => {
      // the orchestrator's own connection, to read what its queues became
      const nc = await connect({ servers: nodes[0]!.url, user: 'orchestrator', pass: passwords.A2A_ORCHESTRATOR_PASSWORD, inboxPrefix: '_INBOX_orchestrator' });
      raw.push(nc);
      // the cluster's size as a client sees it: the members' addresses, gossiped once the routes are up
      const deadline = Date.now() + 8_000;
      while ((nc.info?.connect_urls?.length ?? 0) < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const orchestrator = await as('orchestrator', 0);
      await ensureQueues(orchestrator, 'default');
      const jsm = await jetstreamManager(nc, { checkAPI: false });
      for (const queue of ['spawn', 'up', 'down', 'hostevents']) {
        const info = await jsm.streams.info(`a2a_default_${queue}`);
        expect([queue, info.config.num_replicas, (info.cluster?.replicas ?? []).length + 1]).toEqual([queue, 3, 3]);
      }
      const host = await as('host-alpha', 2);
      const snapshots = await host.keyValue('snapshots');
      expect(await snapshots.put('probe', { ok: true })).toBeGreaterThan(0);
      // a replicated bucket's reads may be served by a replica that has not applied the write yet
      // (direct get: eventually consistent), so the value is awaited, not read once
      let read: unknown;
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
        read = (await snapshots.get('probe'))?.value;
        if (read !== undefined) break;
      }
      expect(read).toEqual({ ok: true });
      expect((await jsm.streams.info('KV_a2a_default_snapshots')).config.num_replicas).toBe(3);
    });

    it('keeps the monitor read-only on every node: its enqueue into the spawn queue is refused', async () => {
      const monitor = await as('monitor', 1);
      const refused = await monitor.enqueue('a2a.default.spawn.coder', { forged: true }, { msgId: 'forged-1' }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(Error);
    });
  });
});
