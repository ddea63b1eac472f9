/**
 * The runs' boxes (actors/distribution/runBoxes.ts) on a real nats-server: slots of the boxes
 * bucket taken by compare-and-set (runs starting at once never share one), freed at a run's end
 * and taken again by the next run, kept by a run stopped by a failure for its resume; and what
 * comes late for a box's earlier run is dropped by the next one without a word.
 */
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimRunBox, BOXES_BUCKET, KnownRunBoxes, runBoxOf } from '../../actors/distribution/runBoxes.js';
import { mailboxOf } from '../../actors/distribution/mailbox.js';
import { enqueueSurely, ensureQueues, subjects } from '../../actors/distribution/remote.js';
import { connectNats, type NatsConnectedTransport } from '../../adapters/transport/nats.js';
import { startNatsServer, type NatsServer } from './server.js';
import { waitFor } from './cluster.js';

let server: NatsServer;
let transport: NatsConnectedTransport;
beforeAll(async () => {
  server = await startNatsServer();
  transport = await connectNats({ servers: server.url, namespace: 'rb', name: 'rb-test' });
});
afterAll(async () => {
  await transport?.close();
  await server?.stop();
});

describe('run boxes', () => {
  it('gives runs starting at once distinct slots, the lowest free first; a freed slot goes to the next run, a held one back to its run', async () => {
    const claims = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((run) => claimRunBox(transport, `run-${run}`)));
    expect(claims.map((c) => c.box).sort()).toEqual(['rs0', 'rs1', 'rs2', 'rs3', 'rs4']);
    const third = claims[2]!;
    await third.release();
    expect((await claimRunBox(transport, 'run-f')).box).toBe(third.box);
    // a resume (the same run id) takes back the slot it held, not a new one
    expect((await claimRunBox(transport, 'run-d')).box).toBe(claims[3]!.box);
    expect((await claimRunBox(transport, 'run-g')).box).toBe('rs5');
  });

  it('takes a slot whose record is not valid as free, and says so', async () => {
    const kv = await transport.keyValue(BOXES_BUCKET);
    for (const key of await kv.keys('slot.')) await kv.put(key, { runId: 'busy', at: 1 });
    await kv.put('slot.9', { runId: 42, at: 'yesterday' });
    const warnings: string[] = [];
    const claim = await claimRunBox(transport, 'run-h', (w) => warnings.push(w));
    expect(claim.box).toBe('rs9');
    expect(warnings).toEqual([expect.stringMatching(/boxes bucket's slot\.9 is not a run box slot \(runId: .*\): taken as free/)]);
  });

  it("hosts learn a run's box from its sessions' specs (a spec from before slots: the run's old box)", () => {
    const known = new KnownRunBoxes(2);
    expect(runBoxOf({ runId: 'r1', runBox: 'rs3' })).toBe('rs3');
    expect(runBoxOf({ runId: 'r1' })).toBe('r-r1');
    known.learn({ runId: 'r1', runBox: 'rs3' });
    known.learn({ runId: 'r2', runBox: 'rs4' });
    known.learn({ runId: 'r3', runBox: 'rs5' });
    // bounded: the oldest is forgotten
    expect([known.of('r1'), known.of('r2'), known.of('r3')]).toEqual(['r-r1', 'rs4', 'rs5']);
  });

  it("drops what comes late for the box's earlier run without a word, and hands its own run's mail over", async () => {
    await ensureQueues(transport, 'rb');
    const s = subjects('rb');
    const mailbox = mailboxOf(transport, 'rb', 'rs7');
    mailbox.occupant = 'now';
    const dropped: string[] = [];
    mailbox.onDrop = (parcel, why) => dropped.push(`${parcel.message.subject}: ${why}`);
    const got: string[] = [];
    await mailbox.register('up', 'now.w-a', async (m) => {
      got.push(m.subject);
      await m.ack();
    });
    await enqueueSurely(transport, s.up('rs7', 'h1', 'before.w-a'), { kind: 'error', error: 'late' }, 'late-1', () => undefined);
    await enqueueSurely(transport, s.up('rs7', 'h1', 'now.w-a'), { kind: 'error', error: 'mine' }, 'mine-1', () => undefined);
    const nc = await connect({ servers: server.url });
    try {
      const jsm = await jetstreamManager(nc);
      let left = -1;
      const count = () => void jsm.streams.info('a2a_rb_up').then((i) => (left = i.state.messages));
      await waitFor('both messages taken off the queue', () => (count(), got.length >= 1 && left === 0), 10_000, () => `handed over ${got.length}, left ${left}`);
      expect(got).toEqual(['a2a.rb.up.rs7.h1.now.w-a']);
      expect((await jsm.streams.info('a2a_rb_up')).state.messages).toBe(0);
      expect(dropped).toEqual([]);
    } finally {
      await nc.close();
      await mailbox.stop();
    }
  });
});
