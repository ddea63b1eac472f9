/**
 * A local OTLP/HTTP trace receiver for the tests: it accepts `POST /v1/traces` in both encodings
 * the exporter speaks (protobuf, the default, and JSON), decodes every span, and answers as a
 * collector does. The protobuf reader covers the fields of ExportTraceServiceRequest a span
 * tree needs (ids, names, kinds, times, attributes, events, links, status, resource).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttributeValue = string | number | boolean | AttributeValue[] | null;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startMs: number;
  endMs: number;
  attributes: Record<string, AttributeValue>;
  status: { code: number; message: string };
  events: Array<{ name: string; timeMs: number; attributes: Record<string, AttributeValue> }>;
  links: Array<{ traceId: string; spanId: string; attributes: Record<string, AttributeValue> }>;
  resource: Record<string, AttributeValue>;
}

// ---------------------------------------------------------------------------------------------
// protobuf

class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}
  get done() {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  /** The fields of a message: [field number, wire type, value]. */
  *fields(): Generator<[number, number, bigint | Buffer]> {
    while (!this.done) {
      const tag = Number(this.varint());
      const field = tag >> 3;
      const wire = tag & 7;
      if (wire === 0) yield [field, wire, this.varint()];
      else if (wire === 1) {
        const v = this.buf.readBigUInt64LE(this.pos);
        this.pos += 8;
        yield [field, wire, v];
      } else if (wire === 2) {
        const len = Number(this.varint());
        const v = this.buf.subarray(this.pos, this.pos + len);
        this.pos += len;
        yield [field, wire, v];
      } else if (wire === 5) {
        const v = BigInt(this.buf.readUInt32LE(this.pos));
        this.pos += 4;
        yield [field, wire, v];
      } else throw new Error(`unsupported wire type ${wire}`);
    }
  }
}

const msg = (b: Buffer) => new Reader(b).fields();
const hex = (b: Buffer) => b.toString('hex');

function anyValue(b: Buffer): AttributeValue {
  for (const [f, w, v] of msg(b)) {
    if (f === 1) return (v as Buffer).toString('utf8');
    if (f === 2) return (v as bigint) !== 0n;
    if (f === 3) return Number(BigInt.asIntN(64, v as bigint));
    if (f === 4 && w === 1) {
      const buf = Buffer.alloc(8);
      buf.writeBigUInt64LE(v as bigint);
      return buf.readDoubleLE(0);
    }
    if (f === 5) {
      const values: AttributeValue[] = [];
      for (const [ff, , vv] of msg(v as Buffer)) if (ff === 1) values.push(anyValue(vv as Buffer));
      return values;
    }
  }
  return null;
}

function keyValue(b: Buffer, into: Record<string, AttributeValue>): void {
  let key = '';
  let value: AttributeValue = null;
  for (const [f, , v] of msg(b)) {
    if (f === 1) key = (v as Buffer).toString('utf8');
    if (f === 2) value = anyValue(v as Buffer);
  }
  into[key] = value;
}

const ms = (ns: bigint) => Number(ns / 1000n) / 1000;

function protoSpan(b: Buffer, resource: Record<string, AttributeValue>): ReceivedSpan {
  const span: ReceivedSpan = { traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, startMs: 0, endMs: 0, attributes: {}, status: { code: 0, message: '' }, events: [], links: [], resource };
  for (const [f, , v] of msg(b)) {
    if (f === 1) span.traceId = hex(v as Buffer);
    else if (f === 2) span.spanId = hex(v as Buffer);
    else if (f === 4) span.parentSpanId = hex(v as Buffer);
    else if (f === 5) span.name = (v as Buffer).toString('utf8');
    else if (f === 6) span.kind = Number(v);
    else if (f === 7) span.startMs = ms(v as bigint);
    else if (f === 8) span.endMs = ms(v as bigint);
    else if (f === 9) keyValue(v as Buffer, span.attributes);
    else if (f === 11) {
      const event = { name: '', timeMs: 0, attributes: {} as Record<string, AttributeValue> };
      for (const [ff, , vv] of msg(v as Buffer)) {
        if (ff === 1) event.timeMs = ms(vv as bigint);
        if (ff === 2) event.name = (vv as Buffer).toString('utf8');
        if (ff === 3) keyValue(vv as Buffer, event.attributes);
      }
      span.events.push(event);
    } else if (f === 13) {
      const link = { traceId: '', spanId: '', attributes: {} as Record<string, AttributeValue> };
      for (const [ff, , vv] of msg(v as Buffer)) {
        if (ff === 1) link.traceId = hex(vv as Buffer);
        if (ff === 2) link.spanId = hex(vv as Buffer);
        if (ff === 4) keyValue(vv as Buffer, link.attributes);
      }
      span.links.push(link);
    } else if (f === 15) {
      for (const [ff, , vv] of msg(v as Buffer)) {
        if (ff === 2) span.status.message = (vv as Buffer).toString('utf8');
        if (ff === 3) span.status.code = Number(vv);
      }
    }
  }
  return span;
}

function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const [f, , rs] of msg(body)) {
    if (f !== 1) continue;
    const resource: Record<string, AttributeValue> = {};
    const scopes: Buffer[] = [];
    for (const [ff, , v] of msg(rs as Buffer)) {
      if (ff === 1) for (const [fff, , kv] of msg(v as Buffer)) if (fff === 1) keyValue(kv as Buffer, resource);
      if (ff === 2) scopes.push(v as Buffer);
    }
    for (const scope of scopes) for (const [ff, , v] of msg(scope)) if (ff === 2) spans.push(protoSpan(v as Buffer, resource));
  }
  return spans;
}

// ---------------------------------------------------------------------------------------------
// JSON

type JsonAny = { stringValue?: string; boolValue?: boolean; intValue?: string | number; doubleValue?: number; arrayValue?: { values?: JsonAny[] } };
const jsonValue = (v: JsonAny | undefined): AttributeValue =>
  !v ? null : v.stringValue !== undefined ? v.stringValue : v.boolValue !== undefined ? v.boolValue : v.intValue !== undefined ? Number(v.intValue) : v.doubleValue !== undefined ? v.doubleValue : v.arrayValue ? (v.arrayValue.values ?? []).map(jsonValue) : null;
const jsonAttributes = (list: Array<{ key: string; value?: JsonAny }> | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, jsonValue(kv.value)]));
const nanos = (v: string | number | { low: number; high: number }) => (typeof v === 'object' ? ms((BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0)) : ms(BigInt(v)));

function decodeJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8')) as { resourceSpans?: Array<{ resource?: { attributes?: [] }; scopeSpans?: Array<{ spans?: Array<Record<string, any>> }> }> };
  const spans: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const scope of rs.scopeSpans ?? []) {
      for (const s of scope.spans ?? []) {
        spans.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind,
          startMs: nanos(s.startTimeUnixNano),
          endMs: nanos(s.endTimeUnixNano),
          attributes: jsonAttributes(s.attributes),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
          events: (s.events ?? []).map((e: any) => ({ name: e.name, timeMs: nanos(e.timeUnixNano), attributes: jsonAttributes(e.attributes) })),
          links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId, attributes: jsonAttributes(l.attributes) })),
          resource,
        });
      }
    }
  }
  return spans;
}

// ---------------------------------------------------------------------------------------------

export interface Receiver {
  /** The base endpoint (give it as --otel or OTEL_EXPORTER_OTLP_ENDPOINT). */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** The content types of the requests received. */
  readonly contentTypes: string[];
  /** The request headers received (the exporter's OTEL_EXPORTER_OTLP_HEADERS). */
  readonly headers: Array<Record<string, string | string[] | undefined>>;
  /** Every request body received, as it came (to look for what must not be there, byte for byte). */
  readonly bodies: Buffer[];
  /**
   * Resolves once `predicate` holds for the spans received (checked on each request). The limit
   * (30 s by default) is a safety net for a loaded machine, not a measure: a run waits at most 5 s
   * for its last spans to be taken, and exports the rest after it ends.
   */
  until(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  /**
   * Resolves once the run's root span (`invoke_agent orchestrator`, of the trace `traceId` when
   * given) has arrived: it ends last, so every span its process exported before is here too.
   */
  runExported(traceId?: string, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes: string[] = [];
  const headers: Array<Record<string, string | string[] | undefined>> = [];
  const bodies: Buffer[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const type = String(req.headers['content-type'] ?? '');
      contentTypes.push(type);
      headers.push(req.headers);
      const body = Buffer.concat(chunks);
      try {
        spans.push(...(type.includes('json') ? decodeJson(body) : decodeProtobuf(body)));
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
        return;
      }
      if (type.includes('json')) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      for (const w of [...waiters]) w();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const receiver: Receiver = {
    url,
    spans,
    contentTypes,
    headers,
    bodies,
    until(predicate, timeoutMs = UNTIL_MS) {
      if (predicate(spans)) return Promise.resolve(spans);
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(spans)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(spans);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the receiver did not get the expected spans in ${timeoutMs} ms (${spans.length} received: ${[...new Set(spans.map((s) => s.name))].join(', ')})`));
        }, timeoutMs);
        waiters.add(check);
      });
    },
    runExported(traceId, timeoutMs = UNTIL_MS) {
      return receiver.until((got) => got.some((s) => s.name === 'invoke_agent orchestrator' && (traceId === undefined || s.traceId === traceId)), timeoutMs);
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  return receiver;
}

/** How long `until` waits by default. */
const UNTIL_MS = 30_000;

/** The spans as an indented tree with durations (for notes and failure messages). */
export function spanTree(spans: ReceivedSpan[]): string {
  const byParent = new Map<string, ReceivedSpan[]>();
  const ids = new Set(spans.map((s) => s.spanId));
  for (const s of spans) {
    const parent = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : '';
    byParent.set(parent, [...(byParent.get(parent) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string, depth: number) => {
    for (const s of (byParent.get(parent) ?? []).sort((a, b) => a.startMs - b.startMs)) {
      lines.push(`${'  '.repeat(depth)}${s.name}  ${(s.endMs - s.startMs).toFixed(1)} ms${s.status.code === 2 ? `  ERROR ${s.attributes['error.type'] ?? ''}` : ''}`);
      walk(s.spanId, depth + 1);
    }
  };
  walk('', 0);
  return lines.join('\n');
}
