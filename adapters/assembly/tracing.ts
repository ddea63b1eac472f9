/**
 * Tracing of a process, assembled: the SDK and exporter (adapters/otel/sdk.ts) are imported only
 * when `--otel` or the OTEL_* variables ask for export; `otel: true` in code without them sends
 * the spans to the program's own tracer provider. The span builder turns the process's run
 * events into spans (actors/observation/spans.ts, loaded with tracing: none of it while it is off).
 */
import { disableTracing, enableTracing, type TraceBuilder } from '../../actors/observation/tracing.js';
import { captureContent, otelSettings, type OtelSettings } from '../otel/options.js';

/** Runs tracing through the program's own provider (`otel: true` without an endpoint). */
let apiUsers = 0;

export interface TracingRequest {
  /** An OTLP/HTTP endpoint; `true`: the OTEL_* variables, else the program's own provider; `false`: never (even with the variables set). */
  otel?: string | boolean;
  /** Prompts, outputs, tool arguments and results as span attributes (redacted); also OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true. */
  otelContent?: boolean;
}

export interface ProcessTracing {
  readonly builder: TraceBuilder;
  /** Where the spans go, for a line to the user. */
  readonly target: string;
  /** Ends what is still open, exports what is left and lets the exporter go (shared: the last user stops it). */
  close(): Promise<void>;
}

/**
 * The export settings of a request (null: nothing to export), checked: a command calls this
 * before it connects or writes anything, and hands the result to `tracingFor`.
 */
export function exportSettings(request: TracingRequest): OtelSettings | null {
  if (request.otel === false) return null;
  return otelSettings({ ...(typeof request.otel === 'string' ? { url: request.otel } : {}), ...(request.otelContent ? { content: true } : {}) });
}

/** The tracing of a run or a host, or null when nothing asks for it (nothing is loaded then). */
export async function tracingFor(
  request: TracingRequest,
  settings: OtelSettings | null,
  service: string,
  notify: (line: string) => void,
  instance?: string,
): Promise<ProcessTracing | null> {
  if (request.otel === false || (!settings && request.otel !== true)) return null;
  const builder = new (await import('../../actors/observation/spans.js')).TraceBuilder();
  if (!settings) {
    // the program's own tracer provider, through the API (on while a run of it wants traces)
    if (apiUsers++ === 0) await enableTracing({ content: captureContent(request.otelContent) });
    let closed = false;
    return {
      builder,
      target: "the program's tracer provider",
      async close() {
        if (closed) return;
        closed = true;
        builder.close();
        if (--apiUsers === 0) disableTracing();
      },
    };
  }
  const { startOtel } = await import('../otel/sdk.js');
  const handle = await startOtel(settings, { service, notify, ...(instance ? { instance } : {}) });
  let closed = false;
  return {
    builder,
    target: handle.target,
    async close() {
      if (closed) return;
      closed = true;
      builder.close();
      await handle.shutdown();
    },
  };
}

/**
 * The trace context a command was started in: TRACEPARENT / TRACESTATE in its environment (the
 * convention of CI tracing and otel-cli), so that `a2a run` in a traced job joins the job's trace.
 */
export function environmentTrace(env: NodeJS.ProcessEnv = process.env): Record<string, string> | undefined {
  const traceparent = env.TRACEPARENT?.trim();
  if (!traceparent) return undefined;
  const tracestate = env.TRACESTATE?.trim();
  return { traceparent, ...(tracestate ? { tracestate } : {}) };
}
