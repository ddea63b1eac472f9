/**
 * The `Transport` port in one process: what the NATS adapter does, with the same semantics, so
 * that a deployment on one machine needs no server and tests run on xstate's `SimulatedClock`.
 *   - core messaging: subjects with wildcards (`*` one token, `>` the rest), queue groups (each
 *     message to one member, round robin), request/reply with a timeout and "no responders";
 *   - durable queues (JetStream streams): work-queue (removed once acked) or limits retention
 *     (kept for `maxAgeMs`), de-duplication by message id, named consumers shared by their
 *     members, redelivery after `ackWaitMs`, `nak` with a delay, `working()`, `maxInFlight`;
 *   - key-value buckets with revisions and compare-and-set.
 * Every payload goes through JSON on the way in (as over a wire): senders and receivers never
 * share objects. Names, subjects and keys are checked with the rules NATS applies, so that what
 * runs here also runs over NATS. Timers use the injected clock; handlers run on microtasks.
 */
import type { Clock, DurableConsumer, DurableMessage, KeyValue, KeyValueReader, Transport, TransportMessage, TransportSubscription } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';
import { realClock } from '../clock.js';
import { errorText } from '../../machines/errorText.js';
import { assertConsumerName, assertKey, assertName, assertPrefix, assertSubject, subjectMatches, tokensMatch } from './names.js';

// Subjects and names: the rules NATS applies (names.ts)

/** Whether some subject matches both patterns. */
function overlaps(a: string, b: string): boolean {
  const ta = a.split('.');
  const tb = b.split('.');
  for (let i = 0; ; i++) {
    if (i === ta.length || i === tb.length) return ta.length === tb.length;
    if (ta[i] === '>' || tb[i] === '>') return true;
    if (ta[i] !== '*' && tb[i] !== '*' && ta[i] !== tb[i]) return false;
  }
}

/** Whether every subject matching `inner` matches `outer`. */
function isSubset(inner: string, outer: string): boolean {
  const ti = inner.split('.');
  const to = outer.split('.');
  for (let i = 0; ; i++) {
    if (i === to.length || i === ti.length) return to.length === ti.length;
    if (to[i] === '>') return true;
    if (ti[i] === '>') return false;
    if (to[i] === '*') continue;
    if (ti[i] === '*' || ti[i] !== to[i]) return false;
  }
}

/** JSON text of a payload: what would travel on a wire. */
function toWire(data: unknown, subject: string): string {
  try {
    return JSON.stringify(data === undefined ? null : data) ?? 'null';
  } catch (error) {
    throw new A2AError('VALIDATION_ERROR', `data for subject "${subject}" is not JSON-serializable: ${errorText(error)}`, {
      cause: error,
      where: subject,
    });
  }
}

function copyHeaders(headers: Record<string, string> | undefined, subject: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers ?? {})) {
    if (typeof value !== 'string' || !/^[!-9;-~]+$/.test(key) || /^nats-/i.test(key)) {
      throw new A2AError('VALIDATION_ERROR', `invalid header "${key}" for subject "${subject}": names are printable ASCII without ":", not starting with "Nats-"; values strings`, {
        where: subject,
      });
    }
    out[key] = value;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// State

interface Subscription {
  tokens: string[];
  queue: string | undefined;
  deliver(subject: string, wire: string, headers: Record<string, string>, reply: string | undefined): void;
}

interface Stored {
  seq: number;
  subject: string;
  wire: string;
  headers: Record<string, string>;
  msgId: string;
  storedAt: number;
}

interface Queue {
  name: string;
  subjects: string[];
  workQueue: boolean;
  maxAgeMs: number;
  duplicateWindowMs: number;
  /** By sequence, in sequence order (insertion order of a Map). */
  messages: Map<number, Stored>;
  lastSeq: number;
  /** msgId → when it was stored. */
  seen: Map<string, number>;
  consumers: Map<string, ConsumerState>;
}

interface Pending {
  deliveries: number;
  /** delivered: out with a member, ack timer running; delayed: nak'd with a delay; queued: waiting for redelivery. */
  state: 'delivered' | 'delayed' | 'queued';
  timer: unknown;
}

interface Member {
  handler: (message: DurableMessage) => void | Promise<void>;
  active: boolean;
}

interface ConsumerState {
  name: string;
  filter: string | undefined;
  ackWaitMs: number;
  maxInFlight: number;
  /** Next stream sequence never delivered to this consumer. */
  nextSeq: number;
  /** Delivered and not acknowledged, by stream sequence: counts against `maxInFlight`. */
  pending: Map<number, Pending>;
  redeliver: number[];
  members: Member[];
  turn: number;
}

interface Bucket {
  revision: number;
  entries: Map<string, { wire: string; revision: number; deleted: boolean }>;
}

const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;

class MemoryTransport implements Transport {
  readonly kind = 'memory' as const;
  readonly #clock: Clock;
  readonly #subs = new Set<Subscription>();
  readonly #turns = new Map<string, number>();
  readonly #queues = new Map<string, Queue>();
  readonly #buckets = new Map<string, Bucket>();
  /** The reply subject of each request handed to a subscriber (for `respond`). */
  readonly #replies = new WeakMap<TransportMessage, string>();
  readonly #timers = new Set<unknown>();
  /** Rejecters of the requests waiting for a reply (closing the transport fails them). */
  readonly #waiting = new Set<(error: Error) => void>();
  #inbox = 0;
  #closed = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  // -- core messaging ---------------------------------------------------------------------------

  async publish(subject: string, data: unknown, headers?: Record<string, string>): Promise<void> {
    this.#open();
    assertSubject(subject, 'subject', false);
    this.#route(subject, toWire(data, subject), copyHeaders(headers, subject), undefined);
  }

  async subscribe(subject: string, handler: (message: TransportMessage) => void, options: { queue?: string } = {}): Promise<TransportSubscription> {
    this.#open();
    const tokens = assertSubject(subject, 'subscription subject', true);
    if (options.queue !== undefined) assertSubject(options.queue, 'queue group', false);
    const sub: Subscription = {
      tokens,
      queue: options.queue,
      deliver: (s, wire, headers, reply) => {
        const message: TransportMessage = { subject: s, data: JSON.parse(wire), headers: { ...headers } };
        if (reply !== undefined) this.#replies.set(message, reply);
        this.#run(() => (this.#subs.has(sub) ? handler(message) : undefined));
      },
    };
    this.#subs.add(sub);
    return {
      unsubscribe: async () => {
        this.#subs.delete(sub);
      },
    };
  }

  async request(subject: string, data: unknown, options: { timeoutMs: number; headers?: Record<string, string> }): Promise<TransportMessage> {
    this.#open();
    const tokens = assertSubject(subject, 'subject', false);
    const wire = toWire(data, subject);
    const headers = copyHeaders(options.headers, subject);
    if (![...this.#subs].some((s) => tokensMatch(s.tokens, tokens))) {
      throw new A2AError('AGENT_ERROR', `no responders on subject "${subject}" (in-process transport)`, { where: subject });
    }
    const inbox = `_INBOX.${++this.#inbox}`;
    return new Promise<TransportMessage>((resolve, reject) => {
      const fail = (error: Error) => {
        this.#waiting.delete(fail);
        reject(error);
      };
      const sub: Subscription = {
        tokens: inbox.split('.'),
        queue: undefined,
        deliver: (s, replyWire, replyHeaders) => {
          if (!this.#subs.delete(sub)) return;
          this.#waiting.delete(fail);
          this.#clearTimer(timer);
          resolve({ subject: s, data: JSON.parse(replyWire), headers: { ...replyHeaders } });
        },
      };
      const timer = this.#setTimer(() => {
        if (!this.#subs.delete(sub)) return;
        fail(new A2AError('AGENT_TIMEOUT', `no reply on subject "${subject}" within ${options.timeoutMs} ms (in-process transport)`, { where: subject }));
      }, options.timeoutMs);
      this.#waiting.add(fail);
      this.#subs.add(sub);
      this.#route(subject, wire, headers, inbox);
    });
  }

  async respond(request: TransportMessage, data: unknown): Promise<void> {
    this.#open();
    const reply = this.#replies.get(request);
    if (reply === undefined) {
      throw new A2AError('VALIDATION_ERROR', `the message on subject "${request.subject}" is not a request received here: there is no one to respond to`, {
        where: request.subject,
      });
    }
    this.#route(reply, toWire(data, request.subject), {}, undefined);
  }

  /** Each plain subscriber gets the message; each queue group, one member in turn. */
  #route(subject: string, wire: string, headers: Record<string, string>, reply: string | undefined): void {
    const tokens = subject.split('.');
    const groups = new Map<string, Subscription[]>();
    for (const sub of this.#subs) {
      if (!tokensMatch(sub.tokens, tokens)) continue;
      if (sub.queue === undefined) sub.deliver(subject, wire, headers, reply);
      else groups.set(sub.queue, [...(groups.get(sub.queue) ?? []), sub]);
    }
    for (const [queue, members] of groups) {
      const turn = this.#turns.get(queue) ?? 0;
      this.#turns.set(queue, turn + 1);
      members[turn % members.length]!.deliver(subject, wire, headers, reply);
    }
  }

  // -- durable queues ---------------------------------------------------------------------------

  async ensureQueue(name: string, options: { subjects: string[]; workQueue: boolean; maxAgeMs?: number; duplicateWindowMs?: number }): Promise<void> {
    this.#open();
    assertName(name, 'queue name');
    if (!Array.isArray(options.subjects) || options.subjects.length === 0) {
      throw new A2AError('VALIDATION_ERROR', `queue ${name} needs at least one subject`, { where: name });
    }
    for (const s of options.subjects) assertSubject(s, `subject of queue ${name}`, true);
    for (const other of this.#queues.values()) {
      if (other.name === name) continue;
      const clash = options.subjects.find((s) => other.subjects.some((o) => overlaps(s, o)));
      if (clash) throw new A2AError('VALIDATION_ERROR', `subject "${clash}" of queue ${name} overlaps with the subjects of queue ${other.name}`, { where: name });
    }
    const maxAgeMs = options.maxAgeMs ?? 0;
    const duplicateWindowMs = Math.min(options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS, maxAgeMs > 0 ? maxAgeMs : Infinity);
    const existing = this.#queues.get(name);
    if (existing) {
      if (existing.workQueue !== options.workQueue) {
        throw new A2AError('VALIDATION_ERROR', `queue ${name} exists with ${existing.workQueue ? 'work-queue' : 'limits'} retention, which cannot be changed`, { where: name });
      }
      Object.assign(existing, { subjects: [...options.subjects], maxAgeMs, duplicateWindowMs });
      return;
    }
    this.#queues.set(name, {
      name,
      subjects: [...options.subjects],
      workQueue: options.workQueue,
      maxAgeMs,
      duplicateWindowMs,
      messages: new Map(),
      lastSeq: 0,
      seen: new Map(),
      consumers: new Map(),
    });
  }

  async enqueue(subject: string, data: unknown, options: { msgId: string; headers?: Record<string, string> }): Promise<{ duplicate: boolean }> {
    this.#open();
    assertSubject(subject, 'subject', false);
    if (typeof options.msgId !== 'string' || options.msgId.length === 0) {
      throw new A2AError('VALIDATION_ERROR', `enqueue on subject "${subject}" needs a non-empty msgId`, { where: subject });
    }
    const wire = toWire(data, subject);
    const headers = copyHeaders(options.headers, subject);
    const queue = [...this.#queues.values()].find((q) => q.subjects.some((p) => subjectMatches(p, subject)));
    if (!queue) throw new A2AError('NOT_FOUND', `no durable queue holds subject "${subject}" (in-process transport)`, { where: subject });
    const now = this.#clock.now();
    this.#expire(queue, now);
    if (queue.seen.has(options.msgId)) return { duplicate: true };
    const seq = ++queue.lastSeq;
    queue.messages.set(seq, { seq, subject, wire, headers, msgId: options.msgId, storedAt: now });
    queue.seen.set(options.msgId, now);
    for (const consumer of queue.consumers.values()) this.#pump(queue, consumer);
    return { duplicate: false };
  }

  async consume(
    queueName: string,
    options: { consumer: string; filter?: string; ackWaitMs: number; maxInFlight: number; join?: boolean },
    handler: (message: DurableMessage) => void | Promise<void>,
  ): Promise<DurableConsumer> {
    this.#open();
    const queue = this.#queues.get(queueName);
    if (!queue) throw new A2AError('NOT_FOUND', `no durable queue "${queueName}" (in-process transport): create it with ensureQueue`, { where: queueName });
    assertConsumerName(options.consumer, queueName);
    const where = `${queueName}/${options.consumer}`;
    if (!(options.ackWaitMs > 0) || !Number.isInteger(options.maxInFlight) || options.maxInFlight < 1) {
      throw new A2AError('VALIDATION_ERROR', `consumer ${where} needs ackWaitMs > 0 and an integer maxInFlight >= 1`, { where });
    }
    const { filter } = options;
    if (filter !== undefined) {
      assertSubject(filter, `filter of consumer ${where}`, true);
      if (!queue.subjects.some((s) => isSubset(filter, s))) {
        throw new A2AError('VALIDATION_ERROR', `filter "${filter}" of consumer ${where} is not within the subjects of queue ${queueName} (${queue.subjects.join(', ')})`, {
          where,
        });
      }
    }
    if (queue.workQueue) {
      for (const other of queue.consumers.values()) {
        if (other.name === options.consumer) continue;
        if (filter === undefined || other.filter === undefined) {
          throw new A2AError('VALIDATION_ERROR', `work queue ${queueName} already has consumer ${other.name}: several consumers need filters that do not overlap`, {
            where,
          });
        }
        if (overlaps(filter, other.filter)) {
          throw new A2AError('VALIDATION_ERROR', `filter "${filter}" of consumer ${where} overlaps with the filter "${other.filter}" of consumer ${other.name}`, { where });
        }
      }
    }
    let state = queue.consumers.get(options.consumer);
    if (!state && options.join) throw new A2AError('NOT_FOUND', `no consumer ${options.consumer} on queue ${queueName} to join`, { where });
    if (!state) {
      state = { name: options.consumer, filter, ackWaitMs: 0, maxInFlight: 0, nextSeq: 1, pending: new Map(), redeliver: [], members: [], turn: 0 };
      queue.consumers.set(options.consumer, state);
    }
    // Like a durable consumer updated on the server: the latest settings win for every member.
    if (!options.join) Object.assign(state, { filter, ackWaitMs: options.ackWaitMs, maxInFlight: options.maxInFlight });
    const member: Member = { handler, active: true };
    state.members.push(member);
    const consumer = state;
    this.#pump(queue, consumer);
    return {
      stop: async () => {
        member.active = false;
        consumer.members = consumer.members.filter((m) => m !== member);
      },
      remove: async () => {
        member.active = false;
        consumer.members = [];
        if (queue.consumers.get(consumer.name) === consumer) queue.consumers.delete(consumer.name);
      },
      pending: async () => {
        let waiting = consumer.pending.size;
        for (const message of queue.messages.values()) {
          if (message.seq >= consumer.nextSeq && (consumer.filter === undefined || subjectMatches(consumer.filter, message.subject))) waiting++;
        }
        return waiting;
      },
    };
  }

  /** Drops messages older than the queue's max age, and message ids older than its dedup window. */
  #expire(queue: Queue, now: number): void {
    for (const [msgId, at] of queue.seen) {
      if (now - at < queue.duplicateWindowMs) break;
      queue.seen.delete(msgId);
    }
    if (queue.maxAgeMs <= 0) return;
    for (const [seq, message] of queue.messages) {
      if (now - message.storedAt < queue.maxAgeMs) break;
      queue.messages.delete(seq);
    }
  }

  /** Hands out what the consumer may take now: redeliveries first, then new messages up to maxInFlight. */
  #pump(queue: Queue, consumer: ConsumerState): void {
    if (this.#closed || consumer.members.length === 0) return;
    this.#expire(queue, this.#clock.now());
    while (consumer.redeliver.length > 0 && consumer.members.length > 0) {
      const seq = consumer.redeliver.shift()!;
      const pending = consumer.pending.get(seq);
      const message = queue.messages.get(seq);
      if (!pending || pending.state !== 'queued') continue;
      if (!message) {
        consumer.pending.delete(seq);
        continue;
      }
      this.#deliver(queue, consumer, message, pending);
    }
    if (consumer.pending.size >= consumer.maxInFlight || consumer.nextSeq > queue.lastSeq) return;
    for (const message of queue.messages.values()) {
      if (consumer.pending.size >= consumer.maxInFlight || consumer.members.length === 0) break;
      if (message.seq < consumer.nextSeq) continue;
      consumer.nextSeq = message.seq + 1;
      if (consumer.filter !== undefined && !subjectMatches(consumer.filter, message.subject)) continue;
      const pending: Pending = { deliveries: 0, state: 'queued', timer: undefined };
      consumer.pending.set(message.seq, pending);
      this.#deliver(queue, consumer, message, pending);
    }
  }

  #deliver(queue: Queue, consumer: ConsumerState, message: Stored, pending: Pending): void {
    const member = consumer.members[consumer.turn++ % consumer.members.length]!;
    pending.deliveries += 1;
    pending.state = 'delivered';
    const { seq } = message;
    const requeue = () => {
      pending.timer = undefined;
      if (consumer.pending.get(seq) !== pending || pending.state === 'queued') return;
      pending.state = 'queued';
      consumer.redeliver.push(seq);
      this.#pump(queue, consumer);
    };
    const arm = (ms: number) => {
      this.#clearTimer(pending.timer);
      pending.timer = this.#setTimer(requeue, ms);
    };
    arm(consumer.ackWaitMs);
    const current = () => consumer.pending.get(seq) === pending;
    const durable: DurableMessage = {
      subject: message.subject,
      data: JSON.parse(message.wire),
      headers: { ...message.headers },
      msgId: message.msgId,
      deliveries: pending.deliveries,
      ack: async () => {
        if (!current()) return;
        this.#clearTimer(pending.timer);
        consumer.pending.delete(seq);
        if (queue.workQueue) queue.messages.delete(seq);
        this.#pump(queue, consumer);
      },
      nak: async (delayMs = 0) => {
        if (!current() || pending.state !== 'delivered') return;
        if (delayMs > 0) {
          pending.state = 'delayed';
          arm(delayMs);
        } else {
          this.#clearTimer(pending.timer);
          requeue();
        }
      },
      working: async () => {
        if (current() && pending.state === 'delivered') arm(consumer.ackWaitMs);
      },
    };
    // A member stopped before its turn came leaves the message to the ack timer, as over NATS.
    this.#run(() => (member.active ? member.handler(durable) : undefined));
  }

  // -- key-value --------------------------------------------------------------------------------

  async keyValue(name: string): Promise<KeyValue> {
    this.#open();
    assertName(name, 'bucket name');
    let bucket = this.#buckets.get(name);
    if (!bucket) {
      bucket = { revision: 0, entries: new Map() };
      this.#buckets.set(name, bucket);
    }
    const b = bucket;
    const write = (key: string, value: unknown): number => {
      const revision = ++b.revision;
      b.entries.set(key, { wire: toWire(value, `${name}/${key}`), revision, deleted: false });
      return revision;
    };
    return {
      get: async (key) => {
        this.#open();
        assertKey(key, name);
        const entry = b.entries.get(key);
        return entry && !entry.deleted ? { value: JSON.parse(entry.wire), revision: entry.revision } : null;
      },
      put: async (key, value) => {
        this.#open();
        assertKey(key, name);
        return write(key, value);
      },
      update: async (key, value, revision) => {
        this.#open();
        assertKey(key, name);
        const entry = b.entries.get(key);
        const ok = revision === 0 ? !entry || entry.deleted : entry !== undefined && entry.revision === revision;
        return ok ? write(key, value) : null;
      },
      delete: async (key) => {
        this.#open();
        assertKey(key, name);
        // nothing is left of it (as over NATS: a purge, no marker)
        b.entries.delete(key);
        b.revision++;
      },
      deleteUnder: async (prefix) => {
        this.#open();
        assertPrefix(prefix, name);
        for (const key of [...b.entries.keys()]) if (key.startsWith(prefix)) b.entries.delete(key);
        b.revision++;
      },
      keys: async (prefix = '') => {
        this.#open();
        return [...b.entries].filter(([k, e]) => !e.deleted && k.startsWith(prefix)).map(([k]) => k).sort();
      },
    };
  }

  async readKeyValue(name: string): Promise<KeyValueReader> {
    this.#open();
    assertName(name, 'bucket name');
    // never created here: a bucket nobody wrote to reads as empty
    const entries = (): Bucket['entries'] => this.#buckets.get(name)?.entries ?? new Map();
    return {
      get: async (key) => {
        this.#open();
        assertKey(key, name);
        const entry = entries().get(key);
        return entry && !entry.deleted ? { value: JSON.parse(entry.wire), revision: entry.revision } : null;
      },
      keys: async (prefix = '') => {
        this.#open();
        return [...entries()].filter(([k, e]) => !e.deleted && k.startsWith(prefix)).map(([k]) => k).sort();
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) this.#clock.clearTimeout(timer);
    this.#timers.clear();
    this.#subs.clear();
    for (const fail of [...this.#waiting]) fail(new A2AError('AGENT_ERROR', 'the in-process transport was closed while waiting for a reply'));
    for (const queue of this.#queues.values()) for (const consumer of queue.consumers.values()) consumer.members = [];
  }

  // -- plumbing ---------------------------------------------------------------------------------

  #open(): void {
    if (this.#closed) throw new A2AError('AGENT_ERROR', 'the in-process transport is closed');
  }

  /** Runs a handler later (as a message arriving); its errors stay with it, as over NATS. */
  #run(fn: () => unknown): void {
    queueMicrotask(() => {
      if (this.#closed) return;
      try {
        const result = fn();
        if (result instanceof Promise) result.catch(() => undefined);
      } catch {
        // A failing handler does not break delivery to the others; durable messages come back.
      }
    });
  }

  #setTimer(fn: () => void, ms: number): unknown {
    const id: unknown = this.#clock.setTimeout(() => {
      this.#timers.delete(id);
      fn();
    }, ms);
    this.#timers.add(id);
    return id;
  }

  #clearTimer(id: unknown): void {
    if (id === undefined) return;
    this.#timers.delete(id);
    this.#clock.clearTimeout(id);
  }
}

/** An in-process transport; `clock` drives ack timers and request timeouts (default: real time). */
export function createMemoryTransport(options: { clock?: Clock } = {}): Transport {
  return new MemoryTransport(options.clock ?? realClock);
}
