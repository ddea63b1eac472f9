/**
 * The batching and export of span records (recordSpans.ts), in a worker thread: the OTLP
 * encoding took about 15 µs per span on the thread that runs the actors (measured on a
 * 1,000-sub-task fan-out), where it also stalls every actor for the length of a batch. The run's
 * thread posts the records as they are (a structured clone); the worker passes their JSON text
 * through the logs' redactor (actors/config/secrets.ts's `jsonRedactorSource`, given the
 * process's known secrets, sent again whenever they change), rebuilds the records in the shape the
 * exporter reads, and the library's own OTLP exporter (OTEL_EXPORTER_OTLP_* honoured: endpoint,
 * headers, timeout, compression, certificates; its retries) encodes and sends them. The worker
 * also loads the exporter, off the run's startup path.
 *
 * Measured on the 1k fan-out (3,000 spans, 1.4 MB of JSON), cold as a first run is: the records'
 * JSON text and its redaction cost the run's thread about 35 ms, the clone of the same records
 * about 15 (of a run of 1.2 s).
 *
 * Export keeps pace with the run: a chunk is posted every `CHUNK` spans (not every
 * OTEL_BSP_MAX_EXPORT_BATCH_SIZE), and the worker exports whatever has arrived as soon as its
 * previous export is done (up to the batch size). The end of a run waits for the spans not yet
 * exported: with batches of 1,024 the 1k fan-out's last thousand spans were encoded and sent
 * after its last event, 30 to 45 ms of its 1.2 s; now a chunk or less is.
 *
 * Queue limits as the SDK's batch processor has them (OTEL_BSP_*): a span ended while more than
 * `maxQueueSize` wait (a collector that cannot keep up) is dropped and counted, and the count is
 * said.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { jsonRedactorSource, secrets } from '../../actors/config/secrets.js';
import type { Attributes, HrTime } from '@opentelemetry/api';

/** An ended span as posted to the worker (structured-clone friendly). */
export interface SpanRecord {
  n: string;
  k: number;
  t: string;
  s: string;
  f: number;
  ts?: string;
  p?: string;
  pr?: boolean;
  st: HrTime;
  et: HrTime;
  a: Attributes;
  c: { code: number; message?: string };
  ev?: Array<{ name: string; time: HrTime; attributes?: Attributes }>;
  l?: Array<{ t: string; s: string; f: number; a?: Attributes }>;
  da: number;
}

/**
 * The worker: CommonJS evaluated from this string (it runs the same under plain node, tsx,
 * vitest and a bundle), requiring the exporter by the path the main thread resolved.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const api = require(workerData.paths.api);
api.diag.setLogger({
  error: (m, ...a) => parentPort.postMessage({ type: 'diag', level: 'error', message: [m, ...a.map(String)].join(' ') }),
  warn: (m, ...a) => parentPort.postMessage({ type: 'diag', level: 'warn', message: [m, ...a.map(String)].join(' ') }),
  info() {}, debug() {}, verbose() {},
}, api.DiagLogLevel.WARN);
const { OTLPTraceExporter } = require(workerData.paths.exporter);
const { resourceFromAttributes } = require(workerData.paths.resources);
// Exporting waits behind the run: once its modules are loaded (at full priority: loading them
// at nice 19 beside a busy machine took longer than a run's 5 s wait for its spans) this thread
// is niced to 10 (on Linux, its id from /proc/thread-self). A flush is the run waiting for it:
// back to full priority where the system allows it (root; others cannot lower their nice value).
const thread = (() => { try { return Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop()); } catch { return null; } })();
const nice = (n) => { if (thread !== null) try { require('node:os').setPriority(thread, n); } catch {} };
nice(10);
const exporter = new OTLPTraceExporter(workerData.url ? { url: workerData.url } : {});
const resource = resourceFromAttributes(workerData.resource);
const scope = workerData.scope;
const state = (s) => (s ? { serialize: () => s } : undefined);
const dur = (a, b) => { let s = b[0] - a[0], n = b[1] - a[1]; if (n < 0) { s -= 1; n += 1e9; } return [s, n]; };
function span(r) {
  const ctx = { traceId: r.t, spanId: r.s, traceFlags: r.f, traceState: state(r.ts) };
  return {
    name: r.n, kind: r.k, spanContext: () => ctx,
    parentSpanContext: r.p ? { traceId: r.t, spanId: r.p, traceFlags: r.f, isRemote: r.pr === true } : undefined,
    startTime: r.st, endTime: r.et, duration: dur(r.st, r.et), ended: true,
    status: r.c, attributes: r.a,
    events: r.ev || [], links: (r.l || []).map((l) => ({ context: { traceId: l.t, spanId: l.s, traceFlags: l.f }, attributes: l.a || {} })),
    resource, instrumentationScope: scope,
    droppedAttributesCount: r.da || 0, droppedEventsCount: 0, droppedLinksCount: 0,
  };
}
// the logs' redactor (actors/config/secrets.ts: known secrets and credential shapes) over the JSON
// text of every chunk: no attribute, event or status message is exported without passing it
const redactorOf = eval(workerData.redactor);
let redact = redactorOf(workerData.known);
// one export at a time, of what has arrived (at most a batch); then the next
const queue = [];
let exporting = false;
let drained = [];
function pump() {
  if (exporting) return;
  if (queue.length === 0) { const waiting = drained; drained = []; for (const done of waiting) done(); return; }
  exporting = true;
  const records = queue.splice(0, workerData.maxBatch);
  exporter.export(records.map(span), (result) => {
    if (result.code !== 0) parentPort.postMessage({ type: 'diag', level: 'error', message: 'export of ' + records.length + ' spans failed: ' + (result.error && result.error.message || 'unknown error') });
    exporting = false;
    parentPort.postMessage({ type: 'sent', count: records.length });
    pump();
  });
}
const allSent = () => new Promise((resolve) => { drained.push(resolve); pump(); });
parentPort.on('message', (m) => {
  if (m.type === 'spans') { for (const r of JSON.parse(redact(JSON.stringify(m.records)))) queue.push(r); pump(); }
  else if (m.type === 'secrets') redact = redactorOf(m.known);
  else if (m.type === 'flush') { nice(0); allSent().then(() => exporter.forceFlush()).catch(() => {}).then(() => { nice(10); parentPort.postMessage({ type: 'flushed', id: m.id }); }); }
  else if (m.type === 'shutdown') { nice(0); allSent().then(() => exporter.shutdown()).catch(() => {}).then(() => parentPort.postMessage({ type: 'closed' })); }
});
`;

/**
 * Spans per chunk posted to the worker. Smaller chunks keep the worker's exports closer behind the
 * run (a shorter wait at its end) for more messages and more, smaller exports: on the 1k fan-out
 * (3,000 spans over 1.2 s) 256 left a few ms at its end, for a dozen exports.
 */
const CHUNK = 256;

export interface OffThreadOptions {
  /** The traces URL, when given by the flag (otherwise the exporter in the worker reads OTEL_EXPORTER_OTLP_*). */
  url?: string;
  protocol: 'http/protobuf' | 'http/json';
  /** Where the spans go, for messages. */
  target: string;
  resource: Attributes;
  maxQueueSize: number;
  maxExportBatchSize: number;
  scheduledDelayMillis: number;
  /** Export problems (said by the worker's exporter, and spans dropped). */
  onProblem: (level: 'error' | 'warn', message: string) => void;
}

export class OffThreadExporter {
  readonly #o: OffThreadOptions;
  readonly #worker: Worker;
  #buffer: SpanRecord[] = [];
  /** Posted to the worker, not yet sent by it. */
  #inFlight = 0;
  #timer: NodeJS.Timeout | null = null;
  #dropped = 0;
  #flushes = new Map<number, () => void>();
  #nextFlush = 0;
  #closed: Promise<void> | null = null;
  readonly #chunk: number;
  /** The version of the process's secrets the worker redacts with. */
  #secrets: number;
  #onClosed: (() => void) | null = null;
  #exited = false;

  constructor(options: OffThreadOptions) {
    this.#o = options;
    this.#chunk = Math.min(CHUNK, options.maxExportBatchSize);
    this.#secrets = secrets.version;
    const require = createRequire(import.meta.url);
    const exporter = options.protocol === 'http/json' ? '@opentelemetry/exporter-trace-otlp-http' : '@opentelemetry/exporter-trace-otlp-proto';
    this.#worker = new Worker(WORKER_SOURCE, {
      eval: true,
      // none of the process's flags: the code is plain CommonJS requiring absolute paths, and some
      // flags break it (`--input-type=module` makes it ESM) or are refused in a worker (`--expose-gc`)
      execArgv: [],
      workerData: {
        paths: { api: require.resolve('@opentelemetry/api'), exporter: require.resolve(exporter), resources: require.resolve('@opentelemetry/resources') },
        url: options.url,
        resource: options.resource,
        scope: { name: 'a2a', version: '0.1.0' },
        maxBatch: options.maxExportBatchSize,
        redactor: jsonRedactorSource,
        known: secrets.forRedactorThread(),
      },
    });
    // a process that forgot to shut tracing down is not kept alive by it
    this.#worker.unref();
    this.#worker.on('message', (m: { type: string; count?: number; id?: number; level?: 'error' | 'warn'; message?: string }) => {
      if (m.type === 'sent') this.#inFlight -= m.count ?? 0;
      else if (m.type === 'flushed') {
        this.#flushes.get(m.id!)?.();
        this.#flushes.delete(m.id!);
      } else if (m.type === 'diag') this.#o.onProblem(m.level ?? 'warn', m.message ?? '');
      else if (m.type === 'closed') this.#onClosed?.();
    });
    this.#worker.on('error', (error) => this.#o.onProblem('error', `the export thread failed: ${error.message}`));
    this.#worker.on('exit', () => {
      this.#exited = true;
      for (const done of this.#flushes.values()) done();
      this.#flushes.clear();
      this.#onClosed?.();
    });
  }

  /** An ended, sampled span. */
  push(record: SpanRecord): void {
    if (this.#closed) return;
    if (this.#buffer.length + this.#inFlight >= this.#o.maxQueueSize) {
      if (this.#dropped++ === 0) this.#o.onProblem('warn', `the span queue is full (${this.#o.maxQueueSize}, OTEL_BSP_MAX_QUEUE_SIZE): spans are dropped until the collector catches up`);
      return;
    }
    this.#buffer.push(record);
    if (this.#buffer.length >= this.#chunk) this.#post();
    else if (!this.#timer) {
      this.#timer = setTimeout(() => this.#post(), this.#o.scheduledDelayMillis);
      this.#timer.unref();
    }
  }

  #post(): void {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#buffer.length === 0 || this.#exited) return;
    const spans = this.#buffer;
    this.#buffer = [];
    this.#inFlight += spans.length;
    // every attribute, event and status message passes the redactor of the logs in the worker,
    // whatever instrumentation put it there; a secret learnt since the last chunk goes first (the
    // port keeps the order), and so redacts this chunk as it would have here
    if (secrets.version !== this.#secrets) {
      this.#secrets = secrets.version;
      this.#worker.postMessage({ type: 'secrets', known: secrets.forRedactorThread() });
    }
    try {
      this.#worker.postMessage({ type: 'spans', records: spans });
    } catch {
      // a value the clone refuses (a function an instrumentation put in an attribute): as JSON
      // has it (left out); what JSON refuses too (a cycle, a BigInt) is dropped, and said
      try {
        this.#worker.postMessage({ type: 'spans', records: JSON.parse(JSON.stringify(spans)) as SpanRecord[] });
      } catch (error) {
        this.#inFlight -= spans.length;
        this.#o.onProblem('error', `${spans.length} spans were dropped: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
  }

  /** Spans handed to the export thread and not yet sent (or given up on). */
  get pending(): number {
    return this.#buffer.length + this.#inFlight;
  }

  /**
   * Resolves true once every span ended so far has been sent (or given up on by the exporter,
   * which says why), false when `waitMs` passed first: the collector is slow or down, and the
   * exporter goes on retrying in the background.
   */
  forceFlush(waitMs = Infinity): Promise<boolean> {
    this.#post();
    if (this.#exited) return Promise.resolve(true);
    const id = this.#nextFlush++;
    return new Promise<boolean>((resolve) => {
      const timer = Number.isFinite(waitMs) ? setTimeout(() => (this.#flushes.delete(id), resolve(false)), waitMs) : null;
      timer?.unref();
      this.#flushes.set(id, () => {
        if (timer) clearTimeout(timer);
        resolve(true);
      });
      this.#worker.postMessage({ type: 'flush', id });
    });
  }

  /** Sends what is left (for at most `waitMs`: what the collector has not taken by then is dropped, and said), then stops the thread. */
  shutdown(waitMs = Infinity): Promise<void> {
    if (this.#closed) return this.#closed;
    this.#closed = (async () => {
      this.#post();
      if (!this.#exited) {
        const closed = await new Promise<boolean>((resolve) => {
          const timer = Number.isFinite(waitMs) ? setTimeout(() => resolve(false), waitMs) : null;
          timer?.unref();
          this.#onClosed = () => {
            if (timer) clearTimeout(timer);
            resolve(true);
          };
          this.#worker.postMessage({ type: 'shutdown' });
        });
        if (!closed && this.#inFlight > 0) this.#o.onProblem('error', `${this.#inFlight} spans were not exported: the collector at ${this.#o.target} did not take them within ${Math.round(waitMs / 1000)} s`);
      }
      if (this.#dropped > 0) this.#o.onProblem('warn', `${this.#dropped} spans were dropped: the span queue was full`);
      await this.#worker.terminate();
    })();
    return this.#closed;
  }
}
