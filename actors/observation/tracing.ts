/**
 * Traces (OpenTelemetry), as the core path sees them: a switch. The agent loop, the wire, the
 * hosts and the A2A and MCP adapters call the functions here; while tracing is off each returns
 * at its first line, and nothing of tracing is built or loaded: the spans are built by spans.ts,
 * which `enableTracing` imports with `@opentelemetry/api` (`a2a run` without traces loads neither,
 * nor any other OpenTelemetry code: test/otel/offPath.test.ts looks). The SDK and the OTLP
 * exporter are loaded on demand by adapters/otel/.
 *
 * What stays here, loaded always: the run's trace id (a run's log names it whether or not it is
 * traced: `traceIdOf`, public), a session's first span id (traceIds.ts) and the validation of
 * trace headers a message carries (kept with what it started, for a run that is traced later).
 */
import { createHash } from 'node:crypto';
import type { SpanContext } from '@opentelemetry/api';
import type { ModelReply, ToolCall } from '../../machines/protocol/index.js';
import { TraceHeaders } from '../../machines/protocol/index.js';
import type { ToolOutcome } from '../../machines/ports.js';
import type { ChatSpanInfo, SpanFactory } from './spans.js';
import { spanIdOf } from './traceIds.js';

export type { ChatSpanInfo, SpanFactory, TraceBuilder } from './spans.js';

type Api = typeof import('@opentelemetry/api');
type Spans = typeof import('./spans.js');

/** The API, imported by `otelApi` (never before tracing is asked for). */
let api: Api | null = null;
/** spans.ts while tracing is on; null while it is off (never loaded until it is first turned on). */
let on: Spans | null = null;

/** The API, loaded (tracing is on, or was): for the assemblies that need its context functions. */
export async function otelApi(): Promise<Api> {
  return (api ??= await import('@opentelemetry/api'));
}

/** Turns tracing on for this process: spans from `factory` (adapters/otel), else from the API's global tracer provider. */
export async function enableTracing(options: { content?: boolean; factory?: SpanFactory } = {}): Promise<void> {
  const [a, spans] = await Promise.all([otelApi(), import('./spans.js')]);
  spans.enable(a, options);
  on = spans;
}

/** Turns tracing off and forgets every span context. */
export function disableTracing(): void {
  on?.disable();
  on = null;
}

export function tracingEnabled(): boolean {
  return on !== null;
}

// ---------------------------------------------------------------------------------------------
// Ids

const digest = (text: string, chars: number) => createHash('sha256').update(text).digest('hex').slice(0, chars);

const derivedTraces = new Map<string, string>();

export { spanIdOf };

/** The trace id of a run (32 hex digits). */
export function traceIdOf(runId: string): string {
  let id = derivedTraces.get(runId);
  if (id === undefined) {
    id = digest(`a2a-trace\0${runId}`, 32);
    if (derivedTraces.size >= 1_024) derivedTraces.delete(derivedTraces.keys().next().value as string);
    derivedTraces.set(runId, id);
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
// Trace headers of messages (spans.ts says what each does)

/** The trace headers (W3C `traceparent`, `tracestate`) of a session's span, for a message about it; none when tracing is off. */
export function headersFor(runId: string, sessionId: string): Record<string, string> | undefined {
  return on?.headersFor(runId, sessionId);
}

/** The span context in a message's trace headers, or null when they hold none or an invalid one, or tracing is off. */
export function contextOfHeaders(headers: Record<string, string> | undefined): SpanContext | null {
  return on ? on.contextOfHeaders(headers) : null;
}

/** The trace headers of what a session does now (its running tool call's span, else its own), for a request it makes to another service; none when tracing is off. */
export function callHeaders(runId: string, sessionId: string): Record<string, string> | undefined {
  return on?.callHeaders(runId, sessionId);
}

/** The trace headers of a message (validated; other headers dropped), to keep with what it started; undefined when it has none. */
export function traceHeadersOf(headers: Record<string, string> | undefined): TraceHeaders | undefined {
  if (!headers?.traceparent) return undefined;
  const parsed = TraceHeaders.safeParse({ traceparent: headers.traceparent, ...(headers.tracestate ? { tracestate: headers.tracestate } : {}) });
  return parsed.success ? parsed.data : undefined;
}

/** A message about a session arrived with trace headers: what happens to the session here hangs from that span (unless its span is this process's). */
export function adopt(runId: string, sessionId: string, headers: Record<string, string> | undefined): void {
  on?.adopt(runId, sessionId, headers);
}

/** A session that ran here for an owner elsewhere has ended: its context is forgotten. */
export function forget(runId: string, sessionId: string): void {
  on?.forget(runId, sessionId);
}

// ---------------------------------------------------------------------------------------------
// Hooks of the agent loop: model calls and tool calls

/** Starts a model call's span (`chat <model>`); null when tracing is off. */
export function startChat(info: ChatSpanInfo): { end(reply: ModelReply, costUsd: number | undefined): void; fail(error: unknown): void } | null {
  return on ? on.startChat(info) : null;
}

/** Starts a tool call's span (`execute_tool <tool>`); null when tracing is off. */
export function startTool(runId: string, sessionId: string, call: ToolCall, type: 'function' | 'extension'): { end(outcome: ToolOutcome): void; fail(error: unknown): void } | null {
  return on ? on.startTool(runId, sessionId, call, type) : null;
}
