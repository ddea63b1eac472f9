/**
 * A host's events while the server is away: past the sends in flight they wait in a file (not in
 * memory), and every one is stored once the server is back; flush waits for those in the file too.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureQueues, subjects } from '../../actors/distribution/remote.js';
import { realClock } from '../../adapters/clock.js';
import { createMemoryTransport } from '../../adapters/transport/memory.js';
import { transportSink } from '../../adapters/transport/events.js';
import type { Transport } from '../../machines/ports.js';
import { tempDir, transportWith } from '../helpers.js';

describe('a host\'s events while the server is away', () => {
  it('keeps at most `inFlight` sends in memory, the rest in a file, and stores every one when the server is back', async () => {
    const shared = createMemoryTransport();
    await ensureQueues(shared, 'sp');
    let down = true;
    const transport = transportWith(shared, {
      enqueue: (...a: Parameters<Transport['enqueue']>) => (down ? Promise.reject(new Error('the server went away (connection lost)')) : shared.enqueue(...a)),
    });
    const file = join(tempDir('a2a-spill-'), 'hosts', 'h1', 'events-waiting.jsonl');
    const sink = transportSink(transport, 'sp', 'h1', realClock, () => undefined, { file, inFlight: 5 });
    for (let i = 0; i < 30; i++) sink.emit({ type: 'session.state', runId: 'r1', subTaskId: `w-a.${i}`, data: { state: 'thinking' } } as never);
    expect(sink.waiting).toEqual({ inFlight: 5, spilled: 25 });
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(25);
    down = false;
    await sink.flush();
    expect(sink.waiting).toEqual({ inFlight: 0, spilled: 0 });
    expect(existsSync(file)).toBe(false);
    const got: string[] = [];
    const s = subjects('sp');
    await shared.consume('hostevents', { consumer: 'check', filter: s.hostEventsOf('r1'), ackWaitMs: 1_000, maxInFlight: 100 }, async (m) => {
      got.push(String((m.data as { subTaskId: string }).subTaskId));
      await m.ack();
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(got.sort()).toEqual(Array.from({ length: 30 }, (_, i) => `w-a.${i}`).sort());

    // a host killed while events waited: the next life of it sends them (the queue drops repeats)
    down = true;
    const killed = transportSink(transport, 'sp', 'h1', realClock, () => undefined, { file, inFlight: 1 });
    for (let i = 30; i < 33; i++) killed.emit({ type: 'session.state', runId: 'r1', subTaskId: `w-a.${i}`, data: { state: 'idle' } } as never);
    expect(killed.waiting.spilled).toBe(2);
    down = false;
    const next = transportSink(transport, 'sp', 'h1', realClock, () => undefined, { file, inFlight: 1 });
    expect(next.waiting.spilled).toBe(2);
    await next.flush();
    await killed.flush();
    await new Promise((r) => setTimeout(r, 50));
    expect(got.filter((id) => ['w-a.30', 'w-a.31', 'w-a.32'].includes(id)).sort()).toEqual(['w-a.30', 'w-a.31', 'w-a.32']);
    await shared.close();
  }, 10_000);
});
