/**
 * Sending to a remote session must neither lose a message to a passing outage nor retry for ever
 * what can never succeed (bad input, a missing queue, a closed transport).
 */
import { describe, expect, it } from 'vitest';
import { enqueueSurely } from '../../actors/remote.js';
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
