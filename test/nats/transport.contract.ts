/**
 * The one behaviour both transports must have (adapters/transport/memory.ts and nats.ts): a suite
 * each adapter runs with its own factory. Assertions are on what arrives, never on how fast: waits
 * poll with generous deadlines, and "nothing more arrives" is checked after a message sent later
 * has arrived (delivery is in order), or after a short settle that a slow machine cannot break.
 * With `restartServer`, the suite also checks that durable queues survive a server restart.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DurableConsumer, DurableMessage, Transport, TransportMessage } from '../../machines/ports.js';
import { isA2AError } from '../../actors/errors.js';

export interface TransportUnderTest {
  transport: Transport;
  /** Stops and starts the server on the same port and store (NATS only). */
  restartServer?: () => Promise<void>;
  cleanup(): Promise<void>;
}

const WAIT_MS = 15_000;

/** Polls until `check` holds (real time), failing with `what` after `timeoutMs`. */
export async function waitFor(check: () => boolean, what: string, timeoutMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/**
 * `restarts`: the adapter's server can be restarted (`restartServer`), and the suite checks that
 * durable queues survive it. Without it those tests are not declared at all (not skipped): the
 * memory transport has no server to restart.
 */
export function transportContract(name: string, make: () => Promise<TransportUnderTest>, options: { restarts?: boolean } = {}): void {
  describe(`${name} transport`, () => {
    let under: TransportUnderTest;
    let t: Transport;
    const consumers: DurableConsumer[] = [];

    beforeEach(async () => {
      under = await make();
      t = under.transport;
    });
    afterEach(async () => {
      for (const c of consumers.splice(0)) await c.stop();
      await under.cleanup();
    });

    /** Every message published before it has been delivered once this resolves (in-order delivery). */
    let barriers = 0;
    async function barrier(): Promise<void> {
      const subject = `barrier.${++barriers}`;
      let seen = false;
      const sub = await t.subscribe(subject, () => {
        seen = true;
      });
      await t.publish(subject, null);
      await waitFor(() => seen, `barrier ${subject}`);
      await sub.unsubscribe();
    }

    async function consume(queue: string, options: { consumer: string; filter?: string; ackWaitMs?: number; maxInFlight?: number }, handler: (m: DurableMessage) => void | Promise<void>) {
      const c = await t.consume(queue, { ackWaitMs: 30_000, maxInFlight: 100, ...options }, handler);
      consumers.push(c);
      return c;
    }

    describe('core messaging', () => {
      it('should match subjects with "*" (one token) and ">" (the rest)', async () => {
        const got: Record<string, string[]> = { star: [], rest: [], exact: [] };
        await t.subscribe('a.*.c', (m) => got.star!.push(m.subject));
        await t.subscribe('a.>', (m) => got.rest!.push(m.subject));
        await t.subscribe('a.b', (m) => got.exact!.push(m.subject));
        for (const s of ['a.b.c', 'a.b', 'a.x.c', 'a.b.c.d', 'b.b.c', 'a']) await t.publish(s, { s });
        await barrier();
        expect(got).toEqual({ star: ['a.b.c', 'a.x.c'], rest: ['a.b.c', 'a.b', 'a.x.c', 'a.b.c.d'], exact: ['a.b'] });
      });

      it('should carry data and headers, and stop delivering after unsubscribe', async () => {
        const got: TransportMessage[] = [];
        const sub = await t.subscribe('events.x', (m) => got.push(m));
        await t.publish('events.x', { n: 1, list: [1, 'two', null], nested: { ok: true } }, { 'X-Trace': 'abc' });
        await barrier();
        await sub.unsubscribe();
        await t.publish('events.x', { n: 2 });
        await barrier();
        expect(got).toEqual([{ subject: 'events.x', data: { n: 1, list: [1, 'two', null], nested: { ok: true } }, headers: { 'X-Trace': 'abc' } }]);
      });

      it('should give each message to one member of a queue group, and to every plain subscriber', async () => {
        const members: number[][] = [[], [], []];
        const plain: number[] = [];
        for (const m of members) await t.subscribe('jobs.x', (msg) => m.push(msg.data as number), { queue: 'workers' });
        await t.subscribe('jobs.x', (msg) => plain.push(msg.data as number));
        const n = 60;
        for (let i = 0; i < n; i++) await t.publish('jobs.x', i);
        await barrier();
        await waitFor(() => plain.length === n, 'the plain subscriber to get every message');
        const all = members.flat().sort((a, b) => a - b);
        expect(all).toEqual([...Array(n).keys()]);
        for (const m of members) expect(m.length).toBeGreaterThan(0);
      });

      it('should answer a request through respond, with data and headers passed on', async () => {
        await t.subscribe('svc.echo', (m) => void t.respond(m, { echo: m.data, headers: m.headers }));
        const reply = await t.request('svc.echo', { q: 'hi' }, { timeoutMs: 10_000, headers: { 'X-Who': 'me' } });
        expect(reply.data).toEqual({ echo: { q: 'hi' }, headers: { 'X-Who': 'me' } });
      });

      it('should answer a request once even with several responders in a queue group', async () => {
        let calls = 0;
        for (let i = 0; i < 3; i++) {
          await t.subscribe(
            'svc.one',
            (m) => {
              calls++;
              void t.respond(m, i);
            },
            { queue: 'svc' },
          );
        }
        const reply = await t.request('svc.one', null, { timeoutMs: 10_000 });
        expect([0, 1, 2]).toContain(reply.data);
        await barrier();
        expect(calls).toBe(1);
      });

      it('should fail a request nobody answers in time with AGENT_TIMEOUT naming the subject', async () => {
        await t.subscribe('svc.silent', () => undefined);
        const error = await rejection(t.request('svc.silent', {}, { timeoutMs: 200 }));
        expect(isA2AError(error, 'AGENT_TIMEOUT')).toBe(true);
        expect((error as Error).message).toContain('svc.silent');
      });

      it('should fail a request on a subject nobody subscribes to with "no responders"', async () => {
        const error = await rejection(t.request('svc.nobody', {}, { timeoutMs: 10_000 }));
        expect(isA2AError(error)).toBe(true);
        expect((error as Error).message).toMatch(/no responders/);
        expect((error as Error).message).toContain('svc.nobody');
      });

      it('should refuse to respond to a message that is not a request', async () => {
        const got: TransportMessage[] = [];
        await t.subscribe('plain.msg', (m) => got.push(m));
        await t.publish('plain.msg', 1);
        await waitFor(() => got.length === 1, 'the message');
        const error = await rejection(t.respond(got[0]!, 'x'));
        expect(isA2AError(error, 'VALIDATION_ERROR')).toBe(true);
      });

      it('should refuse invalid subjects: wildcards in a publish, empty tokens', async () => {
        for (const bad of ['a.*', 'a.>', 'a..b', '', 'a b']) {
          const error = await rejection(t.publish(bad, 1));
          expect(isA2AError(error, 'VALIDATION_ERROR'), bad).toBe(true);
        }
        expect(isA2AError(await rejection(t.subscribe('a.>.b', () => undefined)), 'VALIDATION_ERROR')).toBe(true);
      });
    });

    describe('JSON on the wire', () => {
      it('should deep-copy published data: later changes by the sender and between receivers are not shared', async () => {
        const got: TransportMessage[] = [];
        await t.subscribe('copy.x', (m) => got.push(m));
        await t.subscribe('copy.x', (m) => got.push(m));
        const data = { list: [1, 2], inner: { v: 'a' }, when: new Date(0), gone: undefined };
        const sent = t.publish('copy.x', data);
        data.list.push(3);
        data.inner.v = 'changed';
        await sent;
        await waitFor(() => got.length === 2, 'both receivers');
        expect(got[0]!.data).toEqual({ list: [1, 2], inner: { v: 'a' }, when: '1970-01-01T00:00:00.000Z' });
        expect(got[0]!.data).not.toBe(got[1]!.data);
        (got[0]!.data as { list: number[] }).list.push(99);
        expect((got[1]!.data as { list: number[] }).list).toEqual([1, 2]);
      });

      it('should deep-copy enqueued data and requests', async () => {
        await t.ensureQueue('copies', { subjects: ['copies.>'], workQueue: true });
        const data = { v: [1] };
        const stored = t.enqueue('copies.a', data, { msgId: 'c1' });
        data.v.push(2);
        await stored;
        const got: DurableMessage[] = [];
        await consume('copies', { consumer: 'c' }, (m) => {
          got.push(m);
          return m.ack();
        });
        await waitFor(() => got.length === 1, 'the message');
        expect(got[0]!.data).toEqual({ v: [1] });

        let asked: unknown;
        await t.subscribe('copy.req', (m) => {
          asked = m.data;
          void t.respond(m, m.data);
        });
        const question = { q: [1] };
        const reply = await t.request('copy.req', question, { timeoutMs: 10_000 });
        expect(reply.data).toEqual({ q: [1] });
        expect(reply.data).not.toBe(question);
        expect(reply.data).not.toBe(asked);
      });

      it('should refuse data that is not JSON-serializable', async () => {
        const cyclic: Record<string, unknown> = {};
        cyclic.self = cyclic;
        expect(isA2AError(await rejection(t.publish('x.y', cyclic)), 'VALIDATION_ERROR')).toBe(true);
      });
    });

    describe('durable queues', () => {
      it('should deliver enqueued messages with subject, data, headers, msgId and deliveries, and not again once acked', async () => {
        await t.ensureQueue('jobs', { subjects: ['q.jobs.>'], workQueue: true });
        for (let i = 1; i <= 3; i++) {
          expect(await t.enqueue(`q.jobs.${i}`, { i }, { msgId: `m${i}`, headers: { 'X-N': String(i) } })).toEqual({ duplicate: false });
        }
        const got: DurableMessage[] = [];
        const first = await consume('jobs', { consumer: 'workers' }, async (m) => {
          got.push(m);
          await m.ack();
        });
        await waitFor(() => got.length === 3, 'three messages');
        expect(got.map((m) => [m.subject, m.data, m.headers, m.msgId, m.deliveries])).toEqual([
          ['q.jobs.1', { i: 1 }, { 'X-N': '1' }, 'm1', 1],
          ['q.jobs.2', { i: 2 }, { 'X-N': '2' }, 'm2', 1],
          ['q.jobs.3', { i: 3 }, { 'X-N': '3' }, 'm3', 1],
        ]);
        await first.stop();
        // Same consumer again: the acked ones are gone, only the new one comes.
        const later: string[] = [];
        await consume('jobs', { consumer: 'workers' }, async (m) => {
          later.push(m.msgId);
          await m.ack();
        });
        await t.enqueue('q.jobs.4', { i: 4 }, { msgId: 'm4' });
        await waitFor(() => later.length >= 1, 'the fourth message');
        expect(later).toEqual(['m4']);
      });

      it('should drop a message whose msgId was seen within the window, and say so', async () => {
        await t.ensureQueue('dedup', { subjects: ['dedup.>'], workQueue: true });
        expect(await t.enqueue('dedup.a', { v: 1 }, { msgId: 'same' })).toEqual({ duplicate: false });
        expect(await t.enqueue('dedup.a', { v: 2 }, { msgId: 'same' })).toEqual({ duplicate: true });
        expect(await t.enqueue('dedup.b', { v: 3 }, { msgId: 'other' })).toEqual({ duplicate: false });
        const got: unknown[] = [];
        await consume('dedup', { consumer: 'c' }, async (m) => {
          got.push(m.data);
          await m.ack();
        });
        await waitFor(() => got.length >= 2, 'two messages');
        expect(got).toEqual([{ v: 1 }, { v: 3 }]);
      });

      it('should deliver a message again after ackWait when it was not acknowledged', async () => {
        await t.ensureQueue('redeliver', { subjects: ['redeliver.>'], workQueue: true });
        await t.enqueue('redeliver.a', 'x', { msgId: 'r1' });
        const deliveries: number[] = [];
        await consume('redeliver', { consumer: 'c', ackWaitMs: 500 }, async (m) => {
          deliveries.push(m.deliveries);
          if (m.deliveries >= 2) await m.ack();
        });
        await waitFor(() => deliveries.length >= 2, 'the redelivery');
        expect(deliveries.slice(0, 2)).toEqual([1, 2]);
      });

      it('should deliver again at once on nak(), and after the delay on nak(delayMs)', async () => {
        await t.ensureQueue('naks', { subjects: ['naks.>'], workQueue: true });
        await t.enqueue('naks.a', 'x', { msgId: 'n1' });
        const seen: Array<{ deliveries: number; at: number }> = [];
        await consume('naks', { consumer: 'c', ackWaitMs: 60_000 }, async (m) => {
          seen.push({ deliveries: m.deliveries, at: Date.now() });
          if (m.deliveries === 1) await m.nak();
          else if (m.deliveries === 2) await m.nak(700);
          else await m.ack();
        });
        await waitFor(() => seen.length === 3, 'three deliveries (ackWait is a minute: only naks bring it back)');
        expect(seen.map((s) => s.deliveries)).toEqual([1, 2, 3]);
        expect(seen[2]!.at - seen[1]!.at).toBeGreaterThanOrEqual(500);
      });

      it('should not redeliver while the handler reports working()', async () => {
        await t.ensureQueue('slow', { subjects: ['slow.>'], workQueue: true });
        await t.enqueue('slow.a', 'x', { msgId: 's1' });
        const deliveries: number[] = [];
        let done = false;
        await consume('slow', { consumer: 'c', ackWaitMs: 1_500 }, async (m) => {
          deliveries.push(m.deliveries);
          if (m.deliveries > 1) return;
          for (let i = 0; i < 8; i++) {
            await sleep(300);
            await m.working();
          }
          await m.ack();
          done = true;
        });
        await waitFor(() => done, 'the slow handler to finish');
        await sleep(300);
        expect(deliveries).toEqual([1]);
      });

      it('should hold back new messages beyond maxInFlight until one is acknowledged', async () => {
        await t.ensureQueue('limited', { subjects: ['limited.>'], workQueue: true });
        for (let i = 0; i < 5; i++) await t.enqueue(`limited.${i}`, i, { msgId: `l${i}` });
        const got: DurableMessage[] = [];
        await consume('limited', { consumer: 'c', maxInFlight: 2 }, (m) => {
          got.push(m);
        });
        await waitFor(() => got.length >= 2, 'two messages');
        await sleep(500);
        expect(got.map((m) => m.data)).toEqual([0, 1]);
        await got[0]!.ack();
        await waitFor(() => got.length >= 3, 'a third message once one is acked');
        await sleep(300);
        expect(got.map((m) => m.data)).toEqual([0, 1, 2]);
      });

      it('should share the messages between consumers of the same name (each handled once)', async () => {
        await t.ensureQueue('shared', { subjects: ['shared.>'], workQueue: true });
        const byMember: string[][] = [[], []];
        for (const list of byMember) {
          await consume('shared', { consumer: 'pool', maxInFlight: 5 }, async (m) => {
            list.push(m.msgId);
            await sleep(5);
            await m.ack();
          });
        }
        const n = 40;
        for (let i = 0; i < n; i++) await t.enqueue(`shared.${i % 4}`, i, { msgId: `s${i}` });
        await waitFor(() => byMember.flat().length >= n, `${n} messages handled`);
        await sleep(300);
        const all = byMember.flat();
        expect(all).toHaveLength(n);
        expect(new Set(all).size).toBe(n);
        for (const list of byMember) expect(list.length).toBeGreaterThan(0);
      });

      it('should split one work queue between consumers with disjoint filters, and refuse overlapping ones', async () => {
        await t.ensureQueue('work', { subjects: ['work.>'], workQueue: true });
        const a: string[] = [];
        const b: string[] = [];
        await consume('work', { consumer: 'a', filter: 'work.a.>' }, async (m) => {
          a.push(m.subject);
          await m.ack();
        });
        await consume('work', { consumer: 'b', filter: 'work.b.*' }, async (m) => {
          b.push(m.subject);
          await m.ack();
        });
        for (const s of ['work.a.1', 'work.b.1', 'work.a.2.x', 'work.b.2']) await t.enqueue(s, s, { msgId: s });
        await waitFor(() => a.length + b.length >= 4, 'four messages');
        expect(a).toEqual(['work.a.1', 'work.a.2.x']);
        expect(b).toEqual(['work.b.1', 'work.b.2']);
        // nats-server 2.9 refuses a filter within another one (2.10 any overlap; memory too).
        const overlapping = await rejection(t.consume('work', { consumer: 'c', filter: 'work.a.1', ackWaitMs: 1000, maxInFlight: 1 }, () => undefined));
        expect(isA2AError(overlapping, 'VALIDATION_ERROR')).toBe(true);
        const unfiltered = await rejection(t.consume('work', { consumer: 'd', ackWaitMs: 1000, maxInFlight: 1 }, () => undefined));
        expect(isA2AError(unfiltered, 'VALIDATION_ERROR')).toBe(true);
      });

      it('should keep acknowledged messages of a limits queue for every consumer name', async () => {
        await t.ensureQueue('log', { subjects: ['log.>'], workQueue: false });
        await t.enqueue('log.a', 1, { msgId: 'a' });
        await t.enqueue('log.b', 2, { msgId: 'b' });
        const first: unknown[] = [];
        const second: unknown[] = [];
        await consume('log', { consumer: 'first' }, async (m) => {
          first.push(m.data);
          await m.ack();
        });
        await waitFor(() => first.length >= 2, 'the first consumer');
        await consume('log', { consumer: 'second', filter: 'log.>' }, async (m) => {
          second.push(m.data);
          await m.ack();
        });
        await waitFor(() => second.length >= 2, 'the second consumer');
        expect(first).toEqual([1, 2]);
        expect(second).toEqual([1, 2]);
      });

      it('should drop messages of a limits queue older than maxAgeMs', async () => {
        await t.ensureQueue('short', { subjects: ['short.>'], workQueue: false, maxAgeMs: 1_000 });
        await t.enqueue('short.a', 'old', { msgId: 'old' });
        await sleep(1_600);
        await t.enqueue('short.a', 'new', { msgId: 'new' });
        const got: unknown[] = [];
        await consume('short', { consumer: 'c' }, async (m) => {
          got.push(m.data);
          await m.ack();
        });
        await waitFor(() => got.length >= 1, 'the new message');
        await sleep(200);
        expect(got).toEqual(['new']);
      });

      it('should update a queue in place, and refuse to change its retention', async () => {
        await t.ensureQueue('grow', { subjects: ['grow.a.>'], workQueue: true });
        await t.ensureQueue('grow', { subjects: ['grow.a.>', 'grow.b.>'], workQueue: true });
        expect(await t.enqueue('grow.b.1', 1, { msgId: 'g1' })).toEqual({ duplicate: false });
        const error = await rejection(t.ensureQueue('grow', { subjects: ['grow.a.>'], workQueue: false }));
        expect(isA2AError(error, 'VALIDATION_ERROR')).toBe(true);
        expect((error as Error).message).toContain('grow');
      });

      it('should name what is wrong: invalid queue names, overlapping queues, subjects no queue holds, unknown queues', async () => {
        expect(isA2AError(await rejection(t.ensureQueue('bad.name', { subjects: ['x.>'], workQueue: true })), 'VALIDATION_ERROR')).toBe(true);
        await t.ensureQueue('one', { subjects: ['over.>'], workQueue: true });
        expect(isA2AError(await rejection(t.ensureQueue('two', { subjects: ['over.a'], workQueue: true })), 'VALIDATION_ERROR')).toBe(true);
        const homeless = await rejection(t.enqueue('nowhere.a', 1, { msgId: 'x' }));
        expect(isA2AError(homeless, 'NOT_FOUND')).toBe(true);
        expect((homeless as Error).message).toContain('nowhere.a');
        const dotted = await rejection(t.consume('one', { consumer: 'a.b', ackWaitMs: 1000, maxInFlight: 1 }, () => undefined));
        expect(isA2AError(dotted, 'VALIDATION_ERROR')).toBe(true);
        // Session ids with ":" make valid consumer names.
        consumers.push(await t.consume('one', { consumer: 'up-st:1', filter: 'over.st:1', ackWaitMs: 1000, maxInFlight: 1 }, () => undefined));
        const unknown = await rejection(t.consume('missing', { consumer: 'c', ackWaitMs: 1000, maxInFlight: 1 }, () => undefined));
        expect(isA2AError(unknown, 'NOT_FOUND')).toBe(true);
        expect((unknown as Error).message).toContain('missing');
      });

      it('should leave in-flight messages to others when a consumer stops', async () => {
        await t.ensureQueue('handover', { subjects: ['handover.>'], workQueue: true });
        await t.enqueue('handover.a', 'x', { msgId: 'h1' });
        const firstGot: number[] = [];
        const first = await t.consume('handover', { consumer: 'c', ackWaitMs: 600, maxInFlight: 1 }, (m) => {
          firstGot.push(m.deliveries);
        });
        await waitFor(() => firstGot.length === 1, 'the first delivery');
        await first.stop();
        const secondGot: number[] = [];
        await consume('handover', { consumer: 'c', ackWaitMs: 600, maxInFlight: 1 }, async (m) => {
          secondGot.push(m.deliveries);
          await m.ack();
        });
        await waitFor(() => secondGot.length === 1, 'the redelivery to the new member');
        expect(secondGot[0]).toBeGreaterThanOrEqual(2);
      });
    });

    describe('key-value', () => {
      it('should put, get, compare-and-set, list and delete', async () => {
        const kv = await t.keyValue('state');
        expect(await kv.get('a.1')).toBeNull();
        const r1 = await kv.put('a.1', { v: 1 });
        expect(r1).toBeGreaterThan(0);
        expect(await kv.get('a.1')).toEqual({ value: { v: 1 }, revision: r1 });

        const r2 = await kv.update('a.1', { v: 2 }, r1);
        expect(await kv.update('a.1', { v: 3 }, r1)).toBeNull();
        const current = await kv.get('a.1');
        expect(current?.value).toEqual({ v: 2 });
        expect(current!.revision).toBeGreaterThan(r1);
        expect(r2).toBe(current!.revision);

        const created = await kv.update('a.2', 'new', 0);
        expect(created).toBe((await kv.get('a.2'))?.revision);
        expect(await kv.update('a.2', 'again', 0)).toBeNull();
        await kv.put('b.1', true);
        await kv.put('ab', null);
        expect(await kv.keys()).toEqual(['a.1', 'a.2', 'ab', 'b.1']);
        expect(await kv.keys('a.')).toEqual(['a.1', 'a.2']);
        expect(await kv.keys('a')).toEqual(['a.1', 'a.2', 'ab']);
        expect(await kv.keys('zzz')).toEqual([]);

        await kv.delete('a.1');
        expect(await kv.get('a.1')).toBeNull();
        expect(await kv.keys('a.')).toEqual(['a.2']);
        expect(await kv.update('a.1', 'reborn', 0)).toBeGreaterThan(0);
        expect((await kv.get('a.1'))?.value).toBe('reborn');
        expect((await kv.get('ab'))?.value).toBeNull();
      });

      it('should share a bucket between handles, keep buckets apart and copy values', async () => {
        const one = await t.keyValue('shared');
        const two = await t.keyValue('shared');
        const other = await t.keyValue('other');
        const value = { list: [1] };
        await one.put('k', value);
        value.list.push(2);
        const read = await two.get('k');
        expect(read?.value).toEqual({ list: [1] });
        (read!.value as { list: number[] }).list.push(3);
        expect((await one.get('k'))?.value).toEqual({ list: [1] });
        expect(await other.get('k')).toBeNull();
      });

      it('should read a bucket without writing or creating it: the same keys and values, deleted keys left out', async () => {
        const reader = await t.readKeyValue('readonly');
        // nobody wrote to it yet: it reads as empty and is not created by reading
        expect(await reader.keys()).toEqual([]);
        expect(await reader.get('a.1')).toBeNull();
        const kv = await t.keyValue('readonly');
        const r1 = await kv.put('a.1', { v: 1 });
        await kv.put('a.2', 'two');
        await kv.put('b.1', [true]);
        await kv.put('gone', 1);
        await kv.delete('gone');
        // the reader made before the bucket existed sees it now, as does a new one
        for (const r of [reader, await t.readKeyValue('readonly')]) {
          expect(await r.get('a.1')).toEqual({ value: { v: 1 }, revision: r1 });
          expect(await r.get('gone')).toBeNull();
          expect(await r.get('never')).toBeNull();
          expect(await r.keys()).toEqual(['a.1', 'a.2', 'b.1']);
          expect(await r.keys('a.')).toEqual(['a.1', 'a.2']);
          expect(await r.keys('b')).toEqual(['b.1']);
        }
        const r2 = await kv.put('a.1', { v: 2 });
        expect(await reader.get('a.1')).toEqual({ value: { v: 2 }, revision: r2 });
        expect(isA2AError(await rejection(reader.get('a b')), 'VALIDATION_ERROR')).toBe(true);
        expect(isA2AError(await rejection(t.readKeyValue('bad.bucket')), 'VALIDATION_ERROR')).toBe(true);
      });

      it('should refuse invalid bucket names and keys', async () => {
        expect(isA2AError(await rejection(t.keyValue('bad.bucket')), 'VALIDATION_ERROR')).toBe(true);
        const kv = await t.keyValue('keys');
        for (const bad of ['', '.a', 'a.', 'a b', 'a*']) expect(isA2AError(await rejection(kv.put(bad, 1)), 'VALIDATION_ERROR'), bad).toBe(true);
      });
    });

    if (options.restarts) describe('server restarts', () => {
      it('should keep enqueued messages across a server restart', async () => {
        await t.ensureQueue('durable', { subjects: ['durable.>'], workQueue: true });
        for (let i = 0; i < 5; i++) await t.enqueue(`durable.${i}`, i, { msgId: `d${i}` });
        await under.restartServer!();
        const got: unknown[] = [];
        await consume('durable', { consumer: 'c' }, async (m) => {
          got.push(m.data);
          await m.ack();
        });
        await waitFor(() => got.length >= 5, 'the five messages after the restart');
        expect(got).toEqual([0, 1, 2, 3, 4]);
      });

      it('should keep a consumer working across a server restart, and redeliver what was in flight', async () => {
        await t.ensureQueue('across', { subjects: ['across.>'], workQueue: true });
        const acked = new Set<string>();
        const deliveries: Record<string, number[]> = {};
        await consume('across', { consumer: 'c', ackWaitMs: 1_000 }, async (m) => {
          (deliveries[m.msgId] ??= []).push(m.deliveries);
          if (m.msgId === 'held' && m.deliveries === 1) return; // in flight during the restart
          await m.ack();
          acked.add(m.msgId);
        });
        for (const id of ['before1', 'held', 'before2']) await t.enqueue(`across.${id}`, id, { msgId: id });
        await waitFor(() => acked.has('before1') && acked.has('before2') && deliveries.held !== undefined, 'the messages before the restart');
        await under.restartServer!();
        for (const id of ['after1', 'after2']) {
          // Published while the client may still be reconnecting: retried as the caller would, same msgId.
          await enqueueRetrying(t, `across.${id}`, id, id);
        }
        await waitFor(() => ['before1', 'before2', 'held', 'after1', 'after2'].every((id) => acked.has(id)), 'every message acked after the restart', 30_000);
        expect(deliveries.held!.length).toBeGreaterThanOrEqual(2);
        expect(deliveries.before1).toEqual([1]);
      });
    });
  });
}

/** Enqueue as a careful caller does across a reconnect: retry with the same msgId (dedup makes it safe). */
async function enqueueRetrying(t: Transport, subject: string, data: unknown, msgId: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    try {
      await t.enqueue(subject, data, { msgId });
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(200);
    }
  }
}
