/**
 * Trace export of a process, loaded on demand (see options.ts): spans as records
 * (recordSpans.ts), sampled by the SDK's samplers, batched to a worker thread where the
 * library's OTLP/HTTP exporter sends them (offThread.ts: protobuf by default, JSON with
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/json), and the W3C trace-context propagator for the headers
 * of messages between processes. The standard variables are honoured: OTEL_EXPORTER_OTLP_
 * (TRACES_)ENDPOINT, _HEADERS, _TIMEOUT, _COMPRESSION and the certificate ones (by the exporter),
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (resource), OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*.
 *
 * No global tracer provider is registered: a program's own (its NodeSDK) stays as it is; a2a's
 * spans go to the endpoint given here. A program's propagator stays too.
 */
import { diag, DiagLogLevel, propagation, type Attributes, type DiagLogger } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, envDetector, hostDetector, processDetector, detectResources, resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace';
import { disableTracing, enableTracing } from '../../actors/observation/tracing.js';
import { secrets } from '../../actors/config/secrets.js';
import { shownUrl, type OtelSettings } from './options.js';
import { OffThreadExporter } from './offThread.js';
import { recordSpanFactory } from './recordSpans.js';

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

/** What the process and host detectors give that is exported: no command line, no executable path, no user. */
const RESOURCE_ALLOWED = new Set([
  'host.name',
  'host.arch',
  'host.id',
  'os.type',
  'process.pid',
  'process.runtime.name',
  'process.runtime.version',
  'process.runtime.description',
  'process.executable.name',
]);
/** Keys of the detectors that are left out (the env detector's are the user's own OTEL_RESOURCE_ATTRIBUTES). */
const DETECTOR_KEYS = /^(host|os|process)\./;

/**
 * The resource attributes exported with every span: the host and process detectors' allowlisted
 * ones, and what the user set (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); every string value
 * passes the redactor of the logs, with credentials in URLs taken out.
 */
export function exportedResource(detected: Attributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(detected)) {
    if (value === undefined) continue;
    if (DETECTOR_KEYS.test(key) && !RESOURCE_ALLOWED.has(key)) continue;
    out[key] = typeof value === 'string' ? withoutCredentials(secrets.text(value)) : Array.isArray(value) ? (value as unknown[]).map((v) => (typeof v === 'string' ? withoutCredentials(secrets.text(v)) : v)) as typeof value : value;
  }
  return out;
}

/** A text with the user and password of every URL in it taken out (`http://u:p@host` → `http://host`). */
export function withoutCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, '$1');
}

/**
 * Starts trace export for this process (once: later calls share it), and turns tracing on.
 * `service`: the service name when OTEL_SERVICE_NAME does not give one (`a2a`, `a2a-host`).
 */
export async function startOtel(settings: OtelSettings, options: { service: string; instance?: string; notify?: (line: string) => void; env?: NodeJS.ProcessEnv }): Promise<OtelHandle> {
  const notify = options.notify ?? ((line: string) => void process.stderr.write(`${line}\n`));
  if (started) {
    // one exporter per process: a second run in the same program shares it
    if (started.url !== settings.url || started.protocol !== settings.protocol) notify(`a2a: tracing: this process already exports to ${started.handle.target}; the spans of this run go there too`);
    started.users++;
    return started.handle;
  }
  const env = options.env ?? process.env;
  const sampler = samplerOf(settings);
  const found = detectResources({ detectors: [envDetector, hostDetector, processDetector] });
  await found.waitForAsyncAttributes?.();
  // an allowlist, not the detectors as they are: the process detector gives the command line
  // (`a2a run "<task>"`: the task, any key in it, an --otel URL's password) with every span
  const detected = resourceFromAttributes(exportedResource(found.attributes));
  const attributes: Attributes = {
    ...(env.OTEL_SERVICE_NAME?.trim() || detected.attributes['service.name'] ? {} : { 'service.name': options.service }),
    ...(options.instance && !detected.attributes['service.instance.id'] ? { 'service.instance.id': options.instance } : {}),
  };
  const resource = defaultResource().merge(resourceFromAttributes(attributes)).merge(detected);
  // a program's own propagator stays (false: one was registered before; the API's diag logger
  // would say so: it is set only after this)
  const ourPropagator = propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const said = new SaidOnce(notify);
  diag.setLogger(said, DiagLogLevel.WARN);
  // printed: a user name and password in the URL are left out
  const target = `${shownUrl(settings.url ?? (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || tracesUrlOf(env.OTEL_EXPORTER_OTLP_ENDPOINT)))} (${settings.protocol})`;
  const exporter = new OffThreadExporter({ ...(settings.url ? { url: settings.url } : {}), protocol: settings.protocol, target, resource: resource.attributes, ...settings.batch, onProblem: (level, message) => said[level](message) });
  const failed = (error: unknown) => notify(`a2a: tracing: export failed: ${secrets.text(String(error))}`);
  // the end of a run waits this long for its last spans: a collector that is down (its exporter
  // retrying until OTEL_EXPORTER_OTLP_TIMEOUT) must not hold every run's end for that long
  const waitMs = Math.min(settings.batch.exportTimeoutMillis, FLUSH_WAIT_MS);
  const handle: OtelHandle = {
    target,
    async flush() {
      const done = await exporter.forceFlush(waitMs).catch((error: unknown) => (failed(error), true));
      if (!done) said.warn(`the collector at ${target} has not taken the last ${exporter.pending} spans within ${Math.round(waitMs / 1000)} s: they are retried in the background (until OTEL_EXPORTER_OTLP_TIMEOUT), and lost if this process ends first`);
    },
    async shutdown() {
      if (!started || started.handle !== handle) return;
      if (--started.users > 0) return handle.flush();
      started = null;
      disableTracing();
      await exporter.shutdown(waitMs).catch(failed);
      if (ourPropagator) propagation.disable();
      diag.disable();
    },
  };
  started = { handle, users: 1, url: settings.url, protocol: settings.protocol };
  await enableTracing({ content: settings.content, factory: recordSpanFactory(sampler, (record) => exporter.push(record), settings.sampler.name.startsWith('parentbased_')) });
  return handle;
}

/** How long the end of a run (or of the process) waits for its last spans to be exported. */
const FLUSH_WAIT_MS = 5_000;

const tracesUrlOf = (base: string | undefined) => (base ? `${base.replace(/\/+$/, '')}/v1/traces` : 'http://localhost:4318/v1/traces');
