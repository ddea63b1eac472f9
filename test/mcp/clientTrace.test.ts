/**
 * Trace context in a call's `_meta` (W3C `traceparent`, SEP-414): with tracing on, an MCP server
 * gets the context of the tool call's span, so that its spans join the run's trace; with tracing
 * off it gets none (test/mcp/client.test.ts). Against SDK-built servers of both generations.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tracingEnabled } from '../../actors/observation/tracing.js';
import { tempDir } from '../helpers.js';
import { call, complete, runWith } from './fixtures/clientRun.js';

const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'clientServers.mjs');

describe.each(['v2', 'v1'] as const)('trace context for an MCP server (%s-SDK server, stdio)', (kind) => {
  it('puts the tool span\'s traceparent in the call\'s _meta when tracing is on', async () => {
    const { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } = await import('@opentelemetry/sdk-trace');
    const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
    const { propagation, trace } = await import('@opentelemetry/api');
    const memory = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
    trace.setGlobalTracerProvider(provider);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const dir = tempDir();
    try {
      const { run } = await runWith({
        servers: { m: { command: process.execPath, args: [FIXTURE, kind, dir], permission: 'auto_approve' } },
        turns: [call('mcp__m__meta'), complete('ok')],
        otel: true,
      });
      expect((await run.done).status).toBe('completed');
      expect(tracingEnabled()).toBe(false);
      const meta = JSON.parse(readFileSync(join(dir, 'meta-meta'), 'utf8')) as Record<string, string>;
      const [, traceId, spanId] = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(meta.traceparent ?? '') ?? [];
      const span = memory.getFinishedSpans().find((s) => s.name.startsWith('execute_tool') && s.name.includes('mcp__m__meta'));
      expect(span, memory.getFinishedSpans().map((s) => s.name).join(', ')).toBeDefined();
      expect({ traceId, spanId }).toEqual({ traceId: span!.spanContext().traceId, spanId: span!.spanContext().spanId });
      expect(String(meta['io.a2a/idempotency-key'])).toMatch(/\S/);
    } finally {
      trace.disable();
      propagation.disable();
      await provider.shutdown();
    }
  });
});
