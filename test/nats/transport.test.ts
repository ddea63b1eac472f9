/**
 * Both transports against the shared contract (the NATS one against its own nats-server, started
 * per test so that restarts and state never leak between tests), then what only one of them can
 * show: exact timing on a SimulatedClock (memory), credentials and namespaces (NATS).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { createMemoryTransport } from '../../adapters/transport/memory.js';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connectNats } from '../../adapters/transport/nats.js';
import { isA2AError } from '../../actors/errors.js';
import type { DurableMessage, Transport } from '../../machines/ports.js';
import { measureHop, hopPayload } from './hop.js';
import { natsServerBinary, startNatsServer, type NatsServer } from './server.js';
import { transportContract, waitFor } from './transport.contract.js';

/** Lets microtasks and immediate callbacks run (memory deliveries are microtasks). */
async function settle(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

transportContract('memory', async () => {
  const transport = createMemoryTransport();
  return { transport, cleanup: () => transport.close() };
});

transportContract('nats', async () => {
  const server = await startNatsServer();
  const transport = await connectNats({ servers: server.url, namespace: 'test' });
  return {
    transport,
    restartServer: () => server.restart(),
    cleanup: async () => {
      await transport.close();
      await server.stop();
    },
  };
}, { restarts: true });

describe('memory transport on a SimulatedClock', () => {
  let clock: SimulatedClock;
  let t: Transport;
  const setup = () => {
    clock = new SimulatedClock();
    t = createMemoryTransport({ clock });
  };
  afterEach(() => t.close());

  async function queueWithOne(options: { workQueue?: boolean; maxAgeMs?: number; duplicateWindowMs?: number } = {}) {
    setup();
    await t.ensureQueue('q', { subjects: ['q.>'], workQueue: options.workQueue ?? true, maxAgeMs: options.maxAgeMs, duplicateWindowMs: options.duplicateWindowMs });
    await t.enqueue('q.a', 'x', { msgId: 'one' });
  }

  it('should time a request out exactly after timeoutMs', async () => {
    setup();
    await t.subscribe('svc', () => undefined);
    let outcome: unknown = 'pending';
    t.request('svc', 1, { timeoutMs: 1_000 }).then(
      () => (outcome = 'replied'),
      (error: unknown) => (outcome = error),
    );
    clock.increment(999);
    await settle();
    expect(outcome).toBe('pending');
    clock.increment(1);
    await settle();
    expect(isA2AError(outcome, 'AGENT_TIMEOUT')).toBe(true);
    expect((outcome as Error).message).toMatchInlineSnapshot(`"no reply on subject "svc" within 1000 ms (in-process transport)"`);
  });

  it('should redeliver exactly at ackWaitMs, and count deliveries', async () => {
    await queueWithOne();
    const deliveries: number[] = [];
    await t.consume('q', { consumer: 'c', ackWaitMs: 1_000, maxInFlight: 1 }, (m) => void deliveries.push(m.deliveries));
    await settle();
    expect(deliveries).toEqual([1]);
    clock.increment(999);
    await settle();
    expect(deliveries).toEqual([1]);
    clock.increment(1);
    await settle();
    expect(deliveries).toEqual([1, 2]);
    clock.increment(1_000);
    await settle();
    expect(deliveries).toEqual([1, 2, 3]);
  });

  it('should restart the ack timer on working()', async () => {
    await queueWithOne();
    const got: DurableMessage[] = [];
    await t.consume('q', { consumer: 'c', ackWaitMs: 1_000, maxInFlight: 1 }, (m) => void got.push(m));
    await settle();
    clock.increment(800);
    await got[0]!.working();
    clock.increment(999);
    await settle();
    expect(got).toHaveLength(1);
    clock.increment(1);
    await settle();
    expect(got.map((m) => m.deliveries)).toEqual([1, 2]);
  });

  it('should redeliver a nak with delay after the delay, not at ackWait', async () => {
    await queueWithOne();
    const got: DurableMessage[] = [];
    await t.consume('q', { consumer: 'c', ackWaitMs: 10_000, maxInFlight: 1 }, (m) => void got.push(m));
    await settle();
    await got[0]!.nak(300);
    clock.increment(299);
    await settle();
    expect(got).toHaveLength(1);
    clock.increment(1);
    await settle();
    expect(got).toHaveLength(2);
    await got[1]!.ack();
    clock.increment(20_000);
    await settle();
    expect(got).toHaveLength(2);
  });

  it('should forget message ids after the dedup window', async () => {
    await queueWithOne({ duplicateWindowMs: 1_000 });
    clock.increment(999);
    expect(await t.enqueue('q.a', 'x', { msgId: 'one' })).toEqual({ duplicate: true });
    clock.increment(1);
    expect(await t.enqueue('q.a', 'x', { msgId: 'one' })).toEqual({ duplicate: false });
  });

  it('should drop messages at maxAgeMs', async () => {
    await queueWithOne({ workQueue: false, maxAgeMs: 1_000 });
    clock.increment(1_000);
    await t.enqueue('q.b', 'fresh', { msgId: 'two' });
    const got: unknown[] = [];
    await t.consume('q', { consumer: 'c', ackWaitMs: 1_000, maxInFlight: 10 }, (m) => void got.push(m.data));
    await settle();
    expect(got).toEqual(['fresh']);
  });

  it('should fail waiting requests and stop timers on close', async () => {
    await queueWithOne();
    await t.subscribe('svc', () => undefined);
    const pending = t.request('svc', 1, { timeoutMs: 1_000 });
    await t.close();
    await expect(pending).rejects.toThrow(/closed/);
    await expect(t.publish('a', 1)).rejects.toThrow(/closed/);
  });

  it('should hand messages to the members of a consumer in turn', async () => {
    setup();
    await t.ensureQueue('q', { subjects: ['q.>'], workQueue: true });
    const members: number[][] = [[], [], []];
    for (const list of members) await t.consume('q', { consumer: 'pool', ackWaitMs: 1_000, maxInFlight: 100 }, (m) => void list.push(m.data as number));
    for (let i = 0; i < 6; i++) await t.enqueue(`q.${i}`, i, { msgId: `m${i}` });
    await settle();
    expect(members).toEqual([
      [0, 3],
      [1, 4],
      [2, 5],
    ]);
  });
});

describe('nats transport specifics', () => {
  let server: NatsServer;
  const open: Transport[] = [];

  beforeAll(async () => {
    server = await startNatsServer({
      config: `authorization { users: [
        { user: "agent", password: "s3cret-pw" }
        # replies only on its own inbox prefix (as examples/nats/server.conf gives each role)
        { user: "boxed", password: "boxed-pw", permissions: { subscribe: { allow: [ "_INBOX_boxed.>", "svc.>" ], deny: [ "_INBOX.>" ] } } }
      ] }`,
    });
  });
  afterEach(async () => {
    for (const t of open.splice(0)) await t.close();
  });
  afterAll(() => server?.stop());

  async function connectAgent(namespace?: string): Promise<Transport> {
    const t = await connectNats({ servers: server.url, user: 'agent', pass: 's3cret-pw', namespace });
    open.push(t);
    return t;
  }

  it('should refuse wrong credentials with an error that names the server and not the password', async () => {
    const error = await connectNats({ servers: `nats://agent:wrong-pw@127.0.0.1:${server.port}`, reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(error, 'CONFIGURATION_INVALID')).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain(`127.0.0.1:${server.port}`);
    expect(message).not.toContain('wrong-pw');
    const withOption = await connectNats({ servers: server.url, user: 'agent', pass: 'not-it', reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(withOption, 'CONFIGURATION_INVALID')).toBe(true);
    expect((withOption as Error).message).not.toContain('not-it');
  });

  it('should fail fast when no server listens, naming the address', async () => {
    const error = await connectNats({ servers: 'nats://127.0.0.1:1', reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(error)).toBe(true);
    expect((error as Error).message).toContain('127.0.0.1:1');
  });

  it('should keep the buckets and streams of two namespaces apart', async () => {
    const a = await connectAgent('ns-a');
    const b = await connectAgent('ns-b');
    await (await a.keyValue('snapshots')).put('k', 'from a');
    expect(await (await b.keyValue('snapshots')).get('k')).toBeNull();
    await a.ensureQueue('inbox', { subjects: ['a2a.ns-a.inbox.>'], workQueue: true });
    await b.ensureQueue('inbox', { subjects: ['a2a.ns-b.inbox.>'], workQueue: true });
    expect(await a.enqueue('a2a.ns-a.inbox.1', 1, { msgId: 'same' })).toEqual({ duplicate: false });
    expect(await b.enqueue('a2a.ns-b.inbox.1', 1, { msgId: 'same' })).toEqual({ duplicate: false });
  });

  it('should bring every reply back on its own inbox prefix: requests, enqueue, pull consumers, KV get and keys', async () => {
    const t = await connectNats({ servers: server.url, user: 'boxed', pass: 'boxed-pw', namespace: 'boxed', inboxPrefix: '_INBOX_boxed' });
    open.push(t);
    // core request/reply, from another connection of the same user
    const responder = await connectNats({ servers: server.url, user: 'boxed', pass: 'boxed-pw', namespace: 'boxed', inboxPrefix: '_INBOX_boxed' });
    open.push(responder);
    await responder.subscribe('svc.boxed', (m) => void responder.respond(m, { pong: m.data }));
    expect((await t.request('svc.boxed', 'ping', { timeoutMs: 10_000 })).data).toEqual({ pong: 'ping' });
    // JetStream: stream API, publish acks, a durable pull consumer
    await t.ensureQueue('inbox', { subjects: ['a2a.boxed.inbox.>'], workQueue: true });
    for (const i of [1, 2, 3]) expect(await t.enqueue(`a2a.boxed.inbox.${i}`, i, { msgId: `m-${i}` })).toEqual({ duplicate: false });
    const got: unknown[] = [];
    const consumer = await t.consume('inbox', { consumer: 'boxed', ackWaitMs: 30_000, maxInFlight: 10 }, async (m) => {
      got.push(m.data);
      await m.ack();
    });
    await waitFor(() => got.length >= 3, 'the three queued messages');
    await consumer.stop();
    expect(got.sort()).toEqual([1, 2, 3]);
    // KV: create, put, get (direct get), keys (the stream's info, answered on the inbox)
    const kv = await t.keyValue('snapshots');
    await kv.put('k1', { v: 1 });
    await kv.put('k2', { v: 2 });
    expect((await kv.get('k1'))?.value).toEqual({ v: 1 });
    expect((await kv.keys()).sort()).toEqual(['k1', 'k2']);
    expect(server.log()).not.toMatch(/Subscription Violation/);

    // the client's default prefix (`_INBOX`) is refused to this user: the error says what to set
    const unboxed = await connectNats({ servers: server.url, user: 'boxed', pass: 'boxed-pw', namespace: 'boxed' });
    open.push(unboxed);
    const error = await unboxed.request('svc.boxed', 'ping', { timeoutMs: 2_000 }).catch((e: unknown) => e);
    expect(isA2AError(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(/Permissions Violation for Subscription to "_INBOX\./);
    expect((error as Error).message).toContain('A2A_NATS_INBOX_PREFIX');
  });

  it('should list keys without making a consumer, and delete a key without leaving a marker behind', async () => {
    const t = await connectAgent('listing');
    const kv = await t.keyValue('records');
    for (const k of ['a.1', 'a.2', 'b.1']) await kv.put(k, { k });
    const nc = await connect({ servers: server.url, user: 'agent', pass: 's3cret-pw' });
    try {
      const jsm = await jetstreamManager(nc);
      const stream = 'KV_a2a_listing_records';
      for (let i = 0; i < 20; i++) expect(await kv.keys()).toEqual(['a.1', 'a.2', 'b.1']);
      expect(await kv.keys('a.')).toEqual(['a.1', 'a.2']);
      // a KV key listing (kv.keys()) leaves an ordered consumer on the server for minutes: 20 here
      expect((await jsm.streams.info(stream)).state.consumer_count).toBe(0);
      await kv.delete('a.2');
      expect(await kv.get('a.2')).toBeNull();
      expect(await kv.keys()).toEqual(['a.1', 'b.1']);
      // nothing is left of it: no delete marker per key for ever
      const state = (await jsm.streams.info(stream, { subjects_filter: '>' })).state;
      expect(Object.keys(state.subjects ?? {}).sort()).toEqual(['$KV.a2a_listing_records.a.1', '$KV.a2a_listing_records.b.1']);
      expect(state.messages).toBe(2);
      // a key deleted by another client (a marker) is no key either
      const { Kvm } = await import('@nats-io/kv');
      await (await new Kvm(nc).open('a2a_listing_records')).delete('b.1');
      expect(await kv.keys()).toEqual(['a.1']);
      // and written again after it was removed
      expect(await kv.update('a.2', { k: 'again' }, 0)).not.toBeNull();
      expect(await kv.keys()).toEqual(['a.1', 'a.2']);
    } finally {
      await nc.close();
    }
  });

  it('should refuse an inbox prefix that is not a subject without wildcards, before connecting', async () => {
    for (const bad of ['', '>', '_INBOX.>', '_INBOX.*', 'a*b', 'a..b', '.x', 'x.', 'with space', 'tab\tx']) {
      const error = await connectNats({ servers: server.url, user: 'agent', pass: 's3cret-pw', inboxPrefix: bad, reconnect: false }).catch((e: unknown) => e);
      expect(isA2AError(error, 'CONFIGURATION_INVALID'), JSON.stringify(bad)).toBe(true);
      expect((error as Error).message).toContain(`invalid NATS inbox prefix "${bad}"`);
    }
    const ok = await connectNats({ servers: server.url, user: 'agent', pass: 's3cret-pw', inboxPrefix: '_INBOX_a.b-c' });
    open.push(ok);
  });

  it('should refuse a JetStream API prefix with wildcards or empty tokens, before connecting', async () => {
    for (const bad of ['', 'JS.>', 'JS.*.API', 'JS..API', 'JS API']) {
      const error = await connectNats({ servers: server.url, user: 'agent', pass: 's3cret-pw', jsApiPrefix: bad, reconnect: false }).catch((e: unknown) => e);
      expect(isA2AError(error, 'CONFIGURATION_INVALID'), JSON.stringify(bad)).toBe(true);
      expect((error as Error).message).toContain(`invalid JetStream API prefix "${bad}" (A2A_NATS_JS_API_PREFIX)`);
    }
  });

  it('should deliver between two connections (two actor systems)', async () => {
    const a = await connectAgent();
    const b = await connectAgent();
    await b.subscribe('a2a.default.actor.x', (m) => void b.respond(m, { pong: m.data }));
    const reply = await a.request('a2a.default.actor.x', 'ping', { timeoutMs: 10_000 });
    expect(reply.data).toEqual({ pong: 'ping' });
  });

  it('should keep consuming after the server crashed (SIGKILL) and came back', async () => {
    const own = await startNatsServer();
    const t = await connectNats({ servers: own.url });
    try {
      await t.ensureQueue('crash', { subjects: ['crash.>'], workQueue: true });
      const acked = new Set<string>();
      await t.consume('crash', { consumer: 'c', ackWaitMs: 1_000, maxInFlight: 10 }, async (m) => {
        await m.ack();
        acked.add(m.msgId);
      });
      await t.enqueue('crash.1', 1, { msgId: 'one' });
      await waitFor(() => acked.has('one'), 'the first message');
      await own.kill();
      await own.restart();
      await t.enqueue('crash.2', 2, { msgId: 'two' });
      await waitFor(() => acked.has('two'), 'the message after the crash', 30_000);
    } finally {
      await t.close();
      await own.stop();
    }
  });

  it('should stop a consumer and close the transport while the server is down', async () => {
    const own = await startNatsServer();
    const t = await connectNats({ servers: own.url });
    await t.ensureQueue('down', { subjects: ['down.>'], workQueue: true });
    const consumer = await t.consume('down', { consumer: 'c', ackWaitMs: 1_000, maxInFlight: 1 }, () => undefined);
    await own.stop();
    await consumer.stop();
    await t.close();
    const error = await t.publish('down.x', 1).catch((e: unknown) => e);
    expect(isA2AError(error)).toBe(true);
    expect((error as Error).message).toMatch(/closed/);
  });

  it('should measure a hop with a ~1 KB payload', async () => {
    expect(JSON.stringify(hopPayload()).length).toBeGreaterThan(900);
    expect(JSON.stringify(hopPayload()).length).toBeLessThan(1_100);
    const hop = await measureHop(await connectAgent(), 50);
    expect(hop.p50Ms).toBeGreaterThan(0);
    expect(hop.p99Ms).toBeGreaterThanOrEqual(hop.p50Ms);
  });
});

describe('nats-server fixture', () => {
  it('should throw, not skip, when the binary is missing, saying how to install it', async () => {
    expect(() => natsServerBinary({ PATH: '/nonexistent' }, '/nonexistent/nats-server')).toThrow(/apt-get install nats-server.*NATS_SERVER_BIN/s);
    expect(() => natsServerBinary({ NATS_SERVER_BIN: '/nonexistent/nats-server' })).toThrow(/NATS_SERVER_BIN is set to "\/nonexistent\/nats-server"/);
    const saved = process.env.NATS_SERVER_BIN;
    process.env.NATS_SERVER_BIN = '/nonexistent/nats-server';
    try {
      await expect(startNatsServer()).rejects.toThrow(/not an executable/);
    } finally {
      if (saved === undefined) delete process.env.NATS_SERVER_BIN;
      else process.env.NATS_SERVER_BIN = saved;
    }
  });

  it('should keep JetStream state across restart() and kill()', async () => {
    const server = await startNatsServer();
    const t = await connectNats({ servers: server.url });
    try {
      const kv = await t.keyValue('fixture');
      await kv.put('k', 1);
      await server.kill();
      await server.restart();
      let value: unknown;
      for (let i = 0; i < 100 && value === undefined; i++) {
        value = await kv.get('k').then((e) => e?.value, () => undefined);
        if (value === undefined) await new Promise((r) => setTimeout(r, 100));
      }
      expect(value).toBe(1);
    } finally {
      await t.close();
      await server.stop();
    }
  });
});

describe('measureHop', () => {
  it('should measure a hop in memory', async () => {
    const t = createMemoryTransport();
    const hop = await measureHop(t, 20);
    expect(hop.p50Ms).toBeGreaterThan(0);
    expect(hop.p99Ms).toBeGreaterThanOrEqual(hop.p50Ms);
    await t.close();
  });
});
