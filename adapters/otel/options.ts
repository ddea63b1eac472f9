/**
 * Whether this process exports traces, decided from the flags and the standard `OTEL_*`
 * variables without loading anything: the SDK and the exporter (adapters/otel/sdk.ts) are
 * imported only when it does, so that `a2a run` without tracing starts as fast as before.
 */
import { A2AError } from '../../actors/errors.js';

export interface OtelRequest {
  /** `--otel <url>`: the OTLP/HTTP endpoint (a base like http://127.0.0.1:4318, or the full …/v1/traces). */
  url?: string;
  /** `--otel-content`: prompts, outputs, tool arguments and results as span attributes (redacted). */
  content?: boolean;
}

export interface OtelSettings {
  /** The traces endpoint, when given by the flag (otherwise the exporter reads the OTEL_EXPORTER_OTLP_* variables). */
  url?: string;
  protocol: 'http/protobuf' | 'http/json';
  content: boolean;
  /** OTEL_TRACES_SAMPLER and its ratio (OTEL_TRACES_SAMPLER_ARG). */
  sampler: { name: SamplerName; ratio: number };
  /** The batch span processor (OTEL_BSP_*; a larger queue than the SDK's 2,048 by default: a 1,000-session fan-out ends about 5,000 spans at once). */
  batch: { maxQueueSize: number; maxExportBatchSize: number; scheduledDelayMillis: number; exportTimeoutMillis: number };
}

export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
export type SamplerName = (typeof SAMPLERS)[number];

function positive(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new A2AError('VALIDATION_ERROR', `${name}: "${raw}" is not a positive whole number`, { where: name });
  return value;
}

function sampler(env: NodeJS.ProcessEnv): OtelSettings['sampler'] {
  const name = env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(name)) {
    throw new A2AError('VALIDATION_ERROR', `OTEL_TRACES_SAMPLER: "${name}" is not supported; use one of ${SAMPLERS.join(', ')}`, { where: 'OTEL_TRACES_SAMPLER' });
  }
  const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = raw === undefined || raw === '' ? 1 : Number(raw);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) throw new A2AError('VALIDATION_ERROR', `OTEL_TRACES_SAMPLER_ARG: "${raw}" is not a ratio; give a number from 0 to 1`, { where: 'OTEL_TRACES_SAMPLER_ARG' });
  return { name: name as SamplerName, ratio };
}

const truthy = (v: string | undefined) => v !== undefined && /^(true|1|yes|on)$/i.test(v.trim());

/** Whether spans may carry prompt and output text: `--otel-content`, or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT. */
export function captureContent(requested: boolean | undefined, env: NodeJS.ProcessEnv = process.env): boolean {
  return requested === true || truthy(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT);
}

/** A URL as it may be printed: without a user name and password in it. */
export function shownUrl(value: string): string {
  try {
    const url = new URL(value);
    if (!url.username && !url.password) return value;
    url.username = '';
    url.password = '';
    return url.toString();
  } catch {
    return value;
  }
}

function checkUrl(value: string, where: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new A2AError('VALIDATION_ERROR', `${where}: "${value}" is not a URL; give the OTLP/HTTP endpoint, e.g. http://127.0.0.1:4318`, { where });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new A2AError('VALIDATION_ERROR', `${where}: "${shownUrl(value)}" is a ${url.protocol} URL; traces are exported over OTLP/HTTP: give an http:// or https:// endpoint`, { where });
  }
  return value;
}

/** The traces URL of a base endpoint (`/v1/traces` appended, as for OTEL_EXPORTER_OTLP_ENDPOINT), or the URL itself when it names that path. */
export function tracesUrl(base: string): string {
  const url = new URL(base);
  if (url.pathname.endsWith('/v1/traces')) return url.toString();
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/v1/traces`;
  return url.toString();
}

/**
 * The settings of trace export, or null when nothing asks for it (no `--otel`, no
 * OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_SDK_DISABLED=true,
 * or OTEL_TRACES_EXPORTER=none). Bad values are refused, naming the variable and what is allowed.
 */
export function otelSettings(request: OtelRequest = {}, env: NodeJS.ProcessEnv = process.env): OtelSettings | null {
  if (truthy(env.OTEL_SDK_DISABLED)) return null;
  const exporters = env.OTEL_TRACES_EXPORTER?.split(',').map((s) => s.trim()).filter(Boolean);
  if (exporters?.length) {
    if (exporters.includes('none')) return null;
    const unknown = exporters.filter((e) => e !== 'otlp');
    if (unknown.length) throw new A2AError('VALIDATION_ERROR', `OTEL_TRACES_EXPORTER: "${unknown.join(', ')}" is not supported; use otlp (or none)`, { where: 'OTEL_TRACES_EXPORTER' });
  }
  const url = request.url !== undefined ? checkUrl(request.url, '--otel') : undefined;
  const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const general = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (specific) checkUrl(specific, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (general) checkUrl(general, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (url === undefined && !specific && !general) return null;
  const protocolVar = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[protocolVar]?.trim() || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new A2AError('VALIDATION_ERROR', `${protocolVar}: "${protocol}" is not supported; use http/protobuf (the default) or http/json${protocol === 'grpc' ? ' (gRPC is not exported: point the endpoint at the collector\'s OTLP/HTTP port, usually 4318)' : ''}`, { where: protocolVar });
  }
  const content = captureContent(request.content, env);
  const batch = {
    maxQueueSize: positive(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 65_536),
    maxExportBatchSize: positive(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 1_024),
    scheduledDelayMillis: positive(env, 'OTEL_BSP_SCHEDULE_DELAY', 1_000),
    exportTimeoutMillis: positive(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000),
  };
  return { ...(url !== undefined ? { url: tracesUrl(url) } : {}), protocol, content, sampler: sampler(env), batch };
}
