/**
 * A run across three processes is one trace: the orchestrator (this process) deploys the worker
 * to `a2a host` host-a, whose sub-tasks go to host-b, over a real nats-server; all three export
 * to the receiver. Each process exports the spans of what it owns and runs, and the parent of
 * every span exported by a host is a span another process exported, found through the trace
 * headers of the spawn messages (checked on the wire too).
 */
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { spanIdOf, traceIdOf } from '../../actors/observation/tracing.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aHost, capture, killAll, served, splitWorkspace } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { spanTree, startReceiver, type ReceivedSpan, type Receiver } from './receiver.js';

const RUN = 'otel-hosts-1';
/** The trace the run is started in (TRACEPARENT, as a CI job gives it): the hosts can only know it from the headers. */
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = '00f067aa0ba902b7';

let server: NatsServer;
let rx: Receiver;
let nc: NatsConnection;
let spans: ReceivedSpan[];
let events: RunEvent[];
const spawnHeaders: Array<{ subject: string; traceparent: string | undefined; id: string }> = [];
const hostEventHeaders: Array<{ subTaskId: string | undefined; type: string; origin: string; traceparent: string | undefined }> = [];

const sessionSpan = (id: string) => spans.filter((s) => s.name.startsWith('invoke_agent ') && s.attributes['gen_ai.agent.id'] === id);
const from = (s: ReceivedSpan) => `${s.resource['service.name']}/${s.resource['service.instance.id'] ?? ''}`;

beforeAll(async () => {
  server = await startNatsServer();
  rx = await startReceiver();
  // what crosses the wire: the spawn requests and the hosts' events, with their headers
  nc = await connect({ servers: server.url });
  const spawns = nc.subscribe('a2a.default.spawn.>');
  void (async () => {
    for await (const m of spawns) spawnHeaders.push({ subject: m.subject, traceparent: m.headers?.get('traceparent') || undefined, id: (m.json() as { spec: { id: string } }).spec.id });
  })();
  const hostEvents = nc.subscribe('a2a.default.hostevents.>');
  void (async () => {
    for await (const m of hostEvents) hostEventHeaders.push({ subTaskId: (m.json() as RunEvent).subTaskId, type: (m.json() as RunEvent).type, origin: (m.json() as { origin: string }).origin, traceparent: m.headers?.get('traceparent') || undefined });
  })();
  const ws = splitWorkspace({ partMs: 50 });
  const a = a2aHost(server.url, ws, 'host-a', 'architect', { env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url } });
  const b = a2aHost(server.url, ws, 'host-b', 'coder', { env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url } });
  await Promise.all([served(a), served(b)]);
  const c = capture();
  process.env.TRACEPARENT = `00-${TRACE}-${CALLER}-01`;
  const code = await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', RUN, '--no-tree', '--otel', rx.url], c.io);
  delete process.env.TRACEPARENT;
  expect(code, c.out() + c.err()).toBe(0);
  events = new FileRunStore(ws).events(RUN);
  // the hosts export on their own schedule (a batch a second): every session's model calls
  const sessions = ['w-design', 'w-design.1', 'w-design.2', 'w-design.3'];
  const calls = (id: string) => events.filter((e) => e.type === 'model.called' && e.subTaskId === id).length;
  const chatsOf = (got: ReceivedSpan[], id: string) => got.filter((s) => s.name.startsWith('chat ') && s.parentSpanId === spanIdOf(RUN, id));
  await rx.until((got) => sessions.every((id) => chatsOf(got, id).length >= calls(id)));
  // and the hosts' last batches on their way out (SIGTERM flushes)
  a.child.kill('SIGTERM');
  b.child.kill('SIGTERM');
  expect(await a.exited).toBe(0);
  expect(await b.exited).toBe(0);
  // and the run's own (its root ends last)
  spans = [...(await rx.runExported())];
}, 30_000);

afterAll(async () => {
  killAll();
  await nc?.close();
  await rx?.close();
  await server?.stop();
});

describe('a run across two hosts', () => {
  it('is one trace, the caller\'s, whose every span hangs from a span of the trace', () => {
    expect(new Set(spans.map((s) => s.traceId)), spanTree(spans)).toEqual(new Set([TRACE]));
    expect(TRACE).not.toBe(traceIdOf(RUN));
    const ids = new Set(spans.map((s) => s.spanId));
    expect(ids.size).toBe(spans.length);
    // the run's root hangs from the caller's span (TRACEPARENT)
    expect(spans.filter((s) => !ids.has(s.parentSpanId)).map((s) => `${s.name} < ${s.parentSpanId}`)).toEqual([`invoke_agent orchestrator < ${CALLER}`]);
    // three processes exported: the run, host-a, host-b
    expect(new Set(spans.map(from))).toEqual(new Set(['a2a/', 'a2a-host/host-a', 'a2a-host/host-b']));
  });

  it('has each session span in its owner process and its model calls in the host that ran it', () => {
    const placed = new Map(events.filter((e) => e.type === 'subtask.placed').map((e) => [e.subTaskId!, String(e.data.host)]));
    expect(Object.fromEntries(placed)).toEqual({ 'w-design': 'host-a', 'w-design.1': 'host-b', 'w-design.2': 'host-b', 'w-design.3': 'host-b' });
    const worker = sessionSpan('w-design');
    expect(worker).toHaveLength(1);
    expect(from(worker[0]!)).toBe('a2a/');
    expect(worker[0]!.spanId).toBe(spanIdOf(RUN, 'w-design'));
    expect(worker[0]!.attributes['a2a.host']).toBe('host-a');
    for (const id of ['w-design.1', 'w-design.2', 'w-design.3']) {
      const span = sessionSpan(id);
      expect(span, id).toHaveLength(1);
      // its owner, the worker, runs on host-a: its span is there, under the worker's
      expect(from(span[0]!)).toBe('a2a-host/host-a');
      expect(span[0]!.parentSpanId).toBe(worker[0]!.spanId);
      expect(span[0]!.attributes['a2a.host']).toBe('host-b');
    }
    for (const [id, host] of placed) {
      const chats = spans.filter((s) => s.name.startsWith('chat ') && s.parentSpanId === sessionSpan(id)[0]!.spanId);
      expect(chats.length, id).toBe(events.filter((e) => e.type === 'model.called' && e.subTaskId === id).length);
      for (const c of chats) {
        expect(from(c)).toBe(`a2a-host/${host}`);
        expect(c.parentSpanId).toBe(sessionSpan(id)[0]!.spanId);
      }
      const tools = spans.filter((s) => s.name.startsWith('execute_tool ') && s.parentSpanId === sessionSpan(id)[0]!.spanId);
      expect(tools.map((t) => t.attributes['gen_ai.tool.call.id']).sort()).toEqual(events.filter((e) => e.type === 'tool.called' && e.subTaskId === id).map((e) => e.data.callId).sort());
      for (const t of tools) expect(from(t)).toBe(`a2a-host/${host}`);
    }
  });

  it('carries the trace context in the headers of the spawn requests and of the hosts\' events', () => {
    expect(spawnHeaders.map((h) => h.id).sort()).toEqual(['w-design', 'w-design.1', 'w-design.2', 'w-design.3']);
    for (const h of spawnHeaders) expect(h.traceparent, h.subject).toBe(`00-${TRACE}-${spanIdOf(RUN, h.id)}-01`);
    const about = hostEventHeaders.filter((h) => h.subTaskId);
    expect(about.length).toBeGreaterThan(10);
    for (const h of about) expect(h.traceparent, `${h.type} of ${h.subTaskId} from ${h.origin}: ${JSON.stringify(about.filter((x) => !x.traceparent?.includes(TRACE)).map((x) => `${x.type}/${x.subTaskId}/${x.origin}`))}`).toBe(`00-${TRACE}-${spanIdOf(RUN, h.subTaskId!)}-01`);
  });
});
