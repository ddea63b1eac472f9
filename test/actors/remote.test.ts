/**
 * Sending to a remote session must neither lose a message to a passing outage nor retry for ever
 * what can never succeed (bad input, a missing queue, a closed transport).
 */
import { describe, expect, it } from 'vitest';
import { createActor, fromCallback, fromPromise } from 'xstate';
import { createParentLinkLogic, enqueueSurely, ensureQueues } from '../../actors/distribution/remote.js';
import { realClock } from '../../adapters/clock.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import { createMemoryTransport } from '../../adapters/transport/memory.js';
import type { Transport } from '../../machines/ports.js';

/** A transport whose enqueue fails with `failures` in turn, then succeeds. */
function flaky(failures: unknown[]): Transport & { calls: Array<{ msgId: string }> } {
  const calls: Array<{ msgId: string }> = [];
  return {
    calls,
    enqueue: async (_subject: string, _data: unknown, options: { msgId: string }) => {
      calls.push({ msgId: options.msgId });
      const next = failures.shift();
      if (next) throw next;
      return { duplicate: false };
    },
  } as unknown as Transport & { calls: Array<{ msgId: string }> };
}

describe('enqueueSurely', () => {
  it('should retry a passing failure with the same message id until the queue confirms', async () => {
    const transport = flaky([new A2AError('AGENT_TIMEOUT', 'not confirmed'), new A2AError('AGENT_ERROR', 'connection lost')]);
    const retries: unknown[] = [];
    await enqueueSurely(transport, 'a2a.t.up.r.s', { kind: 'done' }, 'r.s:done', (e) => retries.push(e));
    expect(retries).toHaveLength(2);
    expect(transport.calls.map((c) => c.msgId)).toEqual(['r.s:done', 'r.s:done', 'r.s:done']);
  });

  it('should give up at once on what cannot succeed: bad input, a missing queue, a closed transport, an oversized payload', async () => {
    for (const error of [
      new A2AError('VALIDATION_ERROR', 'data is not JSON-serializable'),
      new A2AError('NOT_FOUND', 'no durable queue holds subject'),
      new A2AError('AGENT_ERROR', 'could not enqueue: max_payload size exceeded'),
    ]) {
      const transport = flaky([error]);
      await expect(enqueueSurely(transport, 'a2a.t.up.r.s', {}, 'id', () => {})).rejects.toBe(error);
      expect(transport.calls).toHaveLength(1);
    }
    const closed = createMemoryTransport();
    await closed.ensureQueue('up', { subjects: ['a2a.t.up.>'], workQueue: true });
    await closed.close();
    await expect(enqueueSurely(closed, 'a2a.t.up.r.s', {}, 'id', () => {})).rejects.toThrow(/closed/);
  });

  it('should stop retrying once its sender has stopped', async () => {
    let stopped = false;
    const transport = flaky([new A2AError('AGENT_TIMEOUT', 'not confirmed'), new A2AError('AGENT_TIMEOUT', 'not confirmed')]);
    const sending = enqueueSurely(transport, 'a2a.t.spawn.coder', {}, 'r.s:spawn', () => (stopped = true), () => stopped);
    await expect(sending).rejects.toThrow(/not confirmed/);
    expect(transport.calls).toHaveLength(2);
  });
});

/** What a link reads of a session's spec. */
function fakeSpec(id: string): SessionSpec {
  return {
    id,
    owner: { ownerType: 'worker', ownerId: 'w-a' },
    agent: { raw: '@coder', backend: 'default', agentName: 'coder' },
    depth: 1,
    correlation: { runId: 'r-1', planId: 'p', taskId: 'a', workerId: 'w-a', worktreePath: '/tmp', depth: 1 },
  } as unknown as SessionSpec;
}

describe('parent link', () => {
  it('should send the result of a session restored after it had ended (its host finished it, then was taken for dead)', async () => {
    const transport = createMemoryTransport();
    await ensureQueues(transport, 't');
    const spec = fakeSpec('w-a.1');
    const result = { taskId: 'w-a.1', status: 'success' as const, output: 'finished on the first host' };
    const deps = (hostId: string) => ({
      transport,
      ns: 't',
      process: hostId,
      hostId,
      clock: realClock,
      events: { emit: () => {} },
      sessionLogic: () => fromPromise(async () => result),
    });
    // the first host runs it to the end; its last snapshot holds the ended session
    const first = createActor(createParentLinkLogic(deps('host-a')), { input: { spec, owner: { box: 'r-owner' } } });
    first.start();
    await new Promise((r) => setTimeout(r, 20));
    const snapshot = JSON.parse(JSON.stringify(first.getPersistedSnapshot()));
    first.stop();
    // another host restores it from there: it must still report the result to the owner
    const reports: Array<{ subject: string; data: unknown }> = [];
    const second = createActor(createParentLinkLogic(deps('host-b')), { snapshot } as never);
    second.start();
    await transport.consume('up', { consumer: 'owner', filter: 'a2a.t.up.r-owner.host-b.>', ackWaitMs: 1_000, maxInFlight: 10 }, async (m) => {
      reports.push({ subject: m.subject, data: m.data });
      await m.ack();
    });
    const deadline = Date.now() + 2_000;
    while (!reports.some((r) => (r.data as { kind: string }).kind === 'done') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(reports.map((r) => (r.data as { kind: string }).kind)).toEqual(['started', 'done']);
    expect(reports[1]!.data).toEqual({ kind: 'done', output: result });
    await transport.close();
  });

  it('should stop its session when it is stopped (a copy dropped because another host holds the session now)', async () => {
    const transport = createMemoryTransport();
    await ensureQueues(transport, 't');
    const spec = fakeSpec('w-a.2');
    let stopped = false;
    const link = createActor(
      createParentLinkLogic({
        transport,
        ns: 't',
        process: 'host-a',
        hostId: 'host-a',
        clock: realClock,
        events: { emit: () => {} },
        sessionLogic: () =>
          fromCallback(() => () => {
            stopped = true;
          }),
      }),
      { input: { spec } },
    );
    link.start();
    link.stop();
    expect(stopped).toBe(true);
    await transport.close();
  });
});
