/**
 * One hop between actor systems, measured: the round trip of a request with a ~1 KB JSON payload
 * to a responder subscribed on the same transport (for the benchmark; no assertions here).
 */
import { performance } from 'node:perf_hooks';
import type { Transport } from '../../machines/ports.js';
import { percentile } from '../../adapters/monitor.js';

/** A JSON payload of about 1 KB, shaped like an actor event (type, ids, a text, some numbers). */
export function hopPayload(): Record<string, unknown> {
  return {
    type: 'SUBTASK_UPDATE',
    from: 'session-0001',
    to: 'session-0000',
    seq: 42,
    costUsd: 0.0123,
    tags: ['a', 'b', 'c'],
    text: 'x'.repeat(860),
  };
}


/**
 * Round-trip times of `samples` sequential requests (after a warm-up of min(50, samples)), in ms.
 * The responder echoes the payload back, so both directions carry ~1 KB.
 */
export async function measureHop(transport: Transport, samples: number): Promise<{ p50Ms: number; p99Ms: number }> {
  if (!Number.isInteger(samples) || samples < 1) throw new Error(`measureHop needs a positive integer number of samples, got ${samples}`);
  const subject = `a2a.bench.hop.${process.pid}.${Math.random().toString(36).slice(2, 10)}`;
  const payload = hopPayload();
  const sub = await transport.subscribe(subject, (message) => {
    void transport.respond(message, message.data);
  });
  try {
    const warmup = Math.min(50, samples);
    for (let i = 0; i < warmup; i++) await transport.request(subject, payload, { timeoutMs: 10_000 });
    const times: number[] = [];
    for (let i = 0; i < samples; i++) {
      const start = performance.now();
      await transport.request(subject, payload, { timeoutMs: 10_000 });
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    return { p50Ms: percentile(times, 0.5), p99Ms: percentile(times, 0.99) };
  } finally {
    await sub.unsubscribe();
  }
}
