/**
 * A session taken over by another host continues its trace: host-a, which runs the worker (and
 * owns its sub-tasks' spans), is killed with SIGKILL while the sub-tasks run on host-b; host-c
 * restores the worker from its record in the snapshots bucket, which kept the spawn's trace
 * headers. The run is started in a caller's trace (TRACEPARENT), so only those headers can put
 * host-c's spans in it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { spanIdOf } from '../../actors/observation/tracing.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aHost, capture, killAll, savedWithCheckpoint, served, splitWorkspace, waitFor } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { spanTree, startReceiver, type ReceivedSpan, type Receiver } from './receiver.js';

const RUN = 'otel-failover-1';
const TRACE = '5bf92f3577b34da6a3ce929d0e0e4737';
const CALLER = '10f067aa0ba902b8';

let server: NatsServer;
let rx: Receiver;
let spans: ReceivedSpan[];
let events: RunEvent[];

const from = (s: ReceivedSpan) => String(s.resource['service.instance.id'] ?? s.resource['service.name']);

beforeAll(async () => {
  server = await startNatsServer();
  rx = await startReceiver();
  const env = { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_BSP_SCHEDULE_DELAY: '100' };
  const ws = splitWorkspace({ partMs: 1_500 });
  const a = a2aHost(server.url, ws, 'host-a', 'architect', { env });
  const b = a2aHost(server.url, ws, 'host-b', 'coder', { env });
  await Promise.all([served(a), served(b)]);
  const c = capture();
  process.env.TRACEPARENT = `00-${TRACE}-${CALLER}-01`;
  const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', RUN, '--no-tree', '--otel', rx.url], c.io);
  await waitFor('the parts to start on host-b', () => {
    try {
      return new FileRunStore(ws).events(RUN).filter((e) => e.type === 'update.queued' && e.data.message === 'started').length >= 3;
    } catch {
      return false;
    }
  });
  // once host-a saved the worker (else host-c would start it afresh, with nothing to restore)
  await savedWithCheckpoint(server.url, `${RUN}.w-design`);
  a.child.kill('SIGKILL');
  const a2 = a2aHost(server.url, ws, 'host-c', 'architect', { env });
  await served(a2);
  const code = await running;
  delete process.env.TRACEPARENT;
  expect(code, c.out() + c.err()).toBe(0);
  events = new FileRunStore(ws).events(RUN);
  // host-c's spans: the worker's last model call, and the restored stand-ins of its sub-tasks
  await rx.until((got) => got.some((s) => from(s) === 'host-c' && s.name.startsWith('chat ')));
  b.child.kill('SIGTERM');
  a2.child.kill('SIGTERM');
  await Promise.all([b.exited, a2.exited]);
  // and the run's own (its root ends last)
  spans = [...(await rx.runExported())];
}, 30_000);

afterAll(async () => {
  killAll();
  await rx?.close();
  await server?.stop();
});

describe('a session taken over by another host', () => {
  it('is restored on host-c, and its spans there are in the caller\'s trace, under the worker\'s span', () => {
    expect(events.some((e) => e.type === 'session.restored' && e.subTaskId === 'w-design' && e.data.host === 'host-c')).toBe(true);
    expect(new Set(spans.map((s) => s.traceId)), spanTree(spans)).toEqual(new Set([TRACE]));
    const worker = spans.find((s) => s.name === 'invoke_agent architect')!;
    expect(worker.spanId).toBe(spanIdOf(RUN, 'w-design'));
    const onC = spans.filter((s) => from(s) === 'host-c');
    const chats = onC.filter((s) => s.name.startsWith('chat '));
    expect(chats.length).toBeGreaterThan(0);
    for (const chat of chats) expect(chat.parentSpanId).toBe(worker.spanId);
  });

  it('links the sub-tasks\' spans restored on host-c to the ones host-a had before it died', () => {
    const restored = spans.filter((s) => from(s) === 'host-c' && s.name === 'invoke_agent coder');
    expect(restored.map((s) => s.attributes['gen_ai.agent.id']).sort(), spanTree(spans)).toEqual(['w-design.1', 'w-design.2', 'w-design.3']);
    for (const s of restored) {
      const id = String(s.attributes['gen_ai.agent.id']);
      expect(s.attributes['a2a.restored']).toBe(true);
      expect(s.parentSpanId).toBe(spanIdOf(RUN, 'w-design'));
      expect(s.links.map((l) => `${l.traceId}/${l.spanId}`)).toEqual([`${TRACE}/${spanIdOf(RUN, id)}`]);
      expect(s.attributes['a2a.result.status']).toBe('success');
    }
    // the sub-tasks' model calls on host-b hang from their first spans (in the trace, by id)
    for (const id of ['w-design.1', 'w-design.2', 'w-design.3']) {
      const chats = spans.filter((s) => from(s) === 'host-b' && s.name.startsWith('chat ') && s.parentSpanId === spanIdOf(RUN, id));
      expect(chats.length, id).toBeGreaterThan(0);
    }
  });
});
