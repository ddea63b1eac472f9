/**
 * The OpenTelemetry SDK of a process that exports traces, loaded on demand (see options.ts):
 * a tracer provider with a batch processor and the OTLP/HTTP exporter (protobuf by default, JSON
 * with OTEL_EXPORTER_OTLP_PROTOCOL=http/json), the W3C trace-context propagator, and an id
 * generator that gives a run's spans the ids actors/tracing.ts derives (a resumed run continues
 * its trace). The standard variables are honoured: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT,
 * _HEADERS, _TIMEOUT, _COMPRESSION, the certificate ones (by the exporter), OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES (resource), OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*.
 *
 * A program that registered a tracer provider of its own keeps it: a2a's spans go there (and a
 * flush here flushes nothing of it).
 */
import { diag, DiagLogLevel, propagation, trace, type Attributes, type DiagLogger } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, envDetector, hostDetector, processDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  RandomIdGenerator,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type IdGenerator,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace';
import { disableTracing, enableTracing, idSlot } from '../../actors/tracing.js';
import { secrets } from '../../actors/secrets.js';
import type { OtelSettings } from './options.js';

/** Gives a span the ids tracing.ts asked for (idSlot), else random ones. */
class RunIdGenerator implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  generateTraceId(): string {
    return idSlot.traceId ?? this.#random.generateTraceId();
  }
  generateSpanId(): string {
    return idSlot.spanId ?? this.#random.generateSpanId();
  }
}

function samplerOf(settings: OtelSettings): Sampler {
  const { name, ratio } = settings.sampler;
  switch (name) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(ratio) });
  }
}

/** Export problems (a collector down, a refused batch) said once per kind, redacted (headers may hold keys). */
class SaidOnce implements DiagLogger {
  readonly #said = new Set<string>();
  constructor(private readonly notify: (line: string) => void) {}
  #say(level: string, message: string, args: unknown[]) {
    const text = secrets.text([message, ...args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : ''))].filter(Boolean).join(' ')).slice(0, 400);
    const kind = `${level}:${text.slice(0, 60)}`;
    if (this.#said.has(kind)) return;
    this.#said.add(kind);
    this.notify(`a2a: tracing: ${text}`);
  }
  error = (message: string, ...args: unknown[]) => this.#say('error', message, args);
  warn = (message: string, ...args: unknown[]) => this.#say('warn', message, args);
  info = () => {};
  debug = () => {};
  verbose = () => {};
}

export interface OtelHandle {
  /** Exports every span ended so far (a run's end: its trace is complete at the collector). */
  flush(): Promise<void>;
  /** Flushes, then stops the exporter (the process is ending). */
  shutdown(): Promise<void>;
  /** Where spans go ("http://…/v1/traces (http/protobuf)", or the program's own provider). */
  readonly target: string;
}

let started: { handle: OtelHandle; users: number; url: string | undefined; protocol: string } | null = null;

/**
 * Starts trace export for this process (once: later calls share it), and turns tracing on.
 * `service`: the service name when OTEL_SERVICE_NAME does not give one (`a2a-run`, `a2a-host`).
 */
export async function startOtel(
  settings: OtelSettings,
  options: { service: string; instance?: string; notify?: (line: string) => void; env?: NodeJS.ProcessEnv; exporter?: SpanExporter },
): Promise<OtelHandle> {
  if (started) {
    // one exporter per process: a second run in the same program shares it
    if (started.url !== settings.url || started.protocol !== settings.protocol) {
      (options.notify ?? ((line: string) => void process.stderr.write(`${line}\n`)))(`a2a: tracing: this process already exports to ${started.handle.target}; the spans of this run go there too`);
    }
    started.users++;
    enableTracing({ content: settings.content });
    return started.handle;
  }
  const env = options.env ?? process.env;
  const notify = options.notify ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const sampler = samplerOf(settings);
  const exporter =
    options.exporter ??
    (settings.protocol === 'http/json'
      ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(settings.url ? { url: settings.url } : {})
      : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(settings.url ? { url: settings.url } : {}));
  const detected = detectResources({ detectors: [envDetector, hostDetector, processDetector] });
  const attributes: Attributes = {
    ...(env.OTEL_SERVICE_NAME?.trim() || detected.attributes['service.name'] ? {} : { 'service.name': options.service }),
    ...(options.instance && !detected.attributes['service.instance.id'] ? { 'service.instance.id': options.instance } : {}),
  };
  const resource = defaultResource().merge(resourceFromAttributes(attributes)).merge(detected);
  const processor = new BatchSpanProcessor({ exporter, ...settings.batch });
  const provider = new TracerProvider({ resource, sampler, idGenerator: new RunIdGenerator(), spanProcessors: [processor] });
  // a program's own provider and propagator stay (false: one was registered before; said by the
  // API's diag logger, set only after this so that nothing is printed)
  const ours = trace.setGlobalTracerProvider(provider);
  const ourPropagator = propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  diag.setLogger(new SaidOnce(notify), DiagLogLevel.WARN);
  if (!ours) await provider.shutdown();
  const target = ours ? `${settings.url ?? (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || tracesUrlOf(env.OTEL_EXPORTER_OTLP_ENDPOINT))} (${settings.protocol})` : "the program's own tracer provider";
  const handle: OtelHandle = {
    target,
    flush: () => provider.forceFlush().catch((error: unknown) => notify(`a2a: tracing: export failed: ${secrets.text(String(error))}`)),
    async shutdown() {
      if (!started) return;
      if (--started.users > 0) return handle.flush();
      started = null;
      await provider.shutdown().catch((error: unknown) => notify(`a2a: tracing: export failed: ${secrets.text(String(error))}`));
      if (ours) trace.disable();
      if (ourPropagator) propagation.disable();
      diag.disable();
      disableTracing();
    },
  };
  started = { handle, users: 1, url: settings.url, protocol: settings.protocol };
  enableTracing({ content: settings.content });
  return handle;
}

const tracesUrlOf = (base: string | undefined) => (base ? `${base.replace(/\/+$/, '')}/v1/traces` : 'http://localhost:4318/v1/traces');
