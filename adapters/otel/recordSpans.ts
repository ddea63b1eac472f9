/**
 * Spans as plain records, for the process that exports its own traces (`--otel`,
 * OTEL_EXPORTER_OTLP_ENDPOINT). Measured on a 1,000-sub-task fan-out (about 3,000 spans), the
 * SDK's tracer cost 10 µs per span on the run's thread before any export (its Span objects, the
 * attribute checks, the garbage), a fifth of the run again; a record here costs about 1 µs. The
 * records go in batches to a worker thread (offThread.ts), where the library's OTLP exporter
 * rebuilds, encodes and sends them. Sampling uses the SDK's samplers (OTEL_TRACES_SAMPLER).
 *
 * A program that traces with an SDK of its own (`otel: true` without an endpoint) gets ordinary
 * API spans instead (actors/observation/tracing.ts): this path is only for what a2a exports itself.
 */
import { randomFillSync } from 'node:crypto';
import { ROOT_CONTEXT, SamplingDecision, trace, TraceFlags, type Attributes, type AttributeValue, type Exception, type HrTime, type Link, type Sampler, type Span, type SpanContext, type SpanKind, type SpanStatus, type TimeInput } from '@opentelemetry/api';
import type { SpanFactory } from '../../actors/observation/tracing.js';
import type { SpanRecord } from './offThread.js';

/**
 * Random ids from a pooled buffer (one getrandom call per 512 span ids), as hex: the pool's hex
 * text made once per refill, an id a slice of it (a Buffer's toString per id was a tenth of the
 * span builder's cost on the run's thread, cold).
 */
class Ids {
  #pool = Buffer.alloc(4_096);
  #hex = '';
  /** Where the next id starts, in hex digits. */
  #at = Infinity;
  #take(digits: number): string {
    if (this.#at + digits > this.#hex.length) {
      randomFillSync(this.#pool);
      this.#hex = this.#pool.toString('hex');
      this.#at = 0;
    }
    const hex = this.#hex.slice(this.#at, (this.#at += digits));
    // all zeros is the invalid id (W3C)
    return hex === ZEROS.slice(0, digits) ? this.#take(digits) : hex;
  }
  spanId(): string {
    return this.#take(16);
  }
  traceId(): string {
    return this.#take(32);
  }
}

const ZEROS = '0'.repeat(32);

const origin = performance.timeOrigin;

function hrTime(time?: TimeInput): HrTime {
  if (Array.isArray(time)) return time as HrTime;
  const ms = time === undefined ? origin + performance.now() : time instanceof Date ? time.getTime() : time;
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

class RecordSpan implements Span {
  readonly #ctx: SpanContext;
  readonly #record: SpanRecord;
  readonly #done: (record: SpanRecord) => void;
  #ended = false;

  constructor(ctx: SpanContext, record: SpanRecord, done: (record: SpanRecord) => void) {
    this.#ctx = ctx;
    this.#record = record;
    this.#done = done;
  }
  spanContext(): SpanContext {
    return this.#ctx;
  }
  setAttribute(key: string, value: AttributeValue): this {
    if (!this.#ended && value !== undefined) this.#record.a[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    if (!this.#ended) for (const key in attributes) if (attributes[key] !== undefined) this.#record.a[key] = attributes[key];
    return this;
  }
  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.#ended) return this;
    const timed = typeof attributesOrTime === 'number' || Array.isArray(attributesOrTime) || attributesOrTime instanceof Date;
    (this.#record.ev ??= []).push({ name, time: hrTime(timed ? (attributesOrTime as TimeInput) : time), ...(!timed && attributesOrTime ? { attributes: attributesOrTime as Attributes } : {}) });
    return this;
  }
  addLink(link: Link): this {
    if (!this.#ended) (this.#record.l ??= []).push({ t: link.context.traceId, s: link.context.spanId, f: link.context.traceFlags, ...(link.attributes ? { a: link.attributes } : {}) });
    return this;
  }
  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }
  setStatus(status: SpanStatus): this {
    if (!this.#ended) this.#record.c = status.message === undefined ? { code: status.code } : { code: status.code, message: status.message };
    return this;
  }
  updateName(name: string): this {
    if (!this.#ended) this.#record.n = name;
    return this;
  }
  end(endTime?: TimeInput): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#record.et = hrTime(endTime);
    this.#done(this.#record);
  }
  isRecording(): boolean {
    return !this.#ended;
  }
  recordException(exception: Exception, time?: TimeInput): void {
    const e = typeof exception === 'string' ? { message: exception } : (exception as { name?: string; message?: string });
    this.addEvent('exception', { ...(e.name ? { 'exception.type': e.name } : {}), ...(e.message ? { 'exception.message': e.message } : {}) }, time);
  }
}

/**
 * The span factory of an exporting process: sampled spans become records handed to `done` when
 * they end. `parentBased`: the sampler follows a parent's decision (OTEL_TRACES_SAMPLER
 * parentbased_*, the default): a child is decided from its parent's flag without asking it.
 */
export function recordSpanFactory(sampler: Sampler, done: (record: SpanRecord) => void, parentBased = false): SpanFactory {
  const ids = new Ids();
  return {
    start(name, options, parent, forced) {
      const traceId = parent?.traceId ?? forced?.traceId ?? ids.traceId();
      const spanId = forced?.spanId ?? ids.spanId();
      const kind = (options.kind ?? 0) as SpanKind;
      // the caller's object (tracing.ts makes one per span): attributes set later go into it
      const attributes: Attributes = options.attributes ?? {};
      const decision =
        parentBased && parent
          ? { decision: parent.traceFlags & TraceFlags.SAMPLED ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD }
          : sampler.shouldSample(parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT, traceId, name, kind, attributes, options.links ?? []);
      const sampled = decision.decision === SamplingDecision.RECORD_AND_SAMPLED;
      const traceState = ('traceState' in decision ? decision.traceState : undefined) ?? parent?.traceState;
      const ctx: SpanContext = { traceId, spanId, traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE, ...(traceState ? { traceState } : {}) };
      // not sampled: a context that propagates (flags 0), nothing recorded
      if (!sampled) return trace.wrapSpanContext(ctx);
      if ('attributes' in decision && decision.attributes) Object.assign(attributes, decision.attributes);
      const record: SpanRecord = { n: name, k: kind, t: traceId, s: spanId, f: TraceFlags.SAMPLED, st: hrTime(options.startTime), et: [0, 0], a: attributes, c: { code: 0 }, da: 0 };
      const state = traceState?.serialize();
      if (state) record.ts = state;
      if (parent) {
        record.p = parent.spanId;
        if (parent.isRemote) record.pr = true;
      }
      if (options.links?.length) record.l = options.links.map((l) => ({ t: l.context.traceId, s: l.context.spanId, f: l.context.traceFlags, ...(l.attributes ? { a: l.attributes } : {}) }));
      return new RecordSpan(ctx, record, done);
    },
  };
}
