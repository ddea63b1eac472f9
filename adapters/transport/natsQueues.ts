/**
 * Durable queues over JetStream, for the NATS transport: a queue is a stream (file storage, one
 * replica); `ensureQueue` creates or updates it, `enqueue` publishes with `Nats-Msg-Id` so the
 * server drops duplicates within the stream's window, and `consume` is a durable pull consumer
 * (explicit acks, `ack_wait`, `max_ack_pending`, `filter_subject`) read by a fetch loop that
 * survives server restarts (PullConsumer).
 */
import { nanos } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type ConsumerConfig,
  type ConsumerMessages,
  type JsMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import type { DurableConsumer, DurableMessage } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';
import { assertConsumerName, assertName, assertSubject } from './names.js';
import { decode, encode, fromHeaders, toHeaders } from './natsCodec.js';
import { isApiError, isNoResponders, isRefused, isTimeout, isTransient, reason } from './natsErrors.js';
import { attemptTimeout, backoff, pause, RECONNECT_WAIT_MS, type NatsLink } from './natsLink.js';

/** Default dedup window of a queue (JetStream's own default). */
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;
/** Tries at creating or updating a queue's stream when the cluster is slow to answer (see ensureQueue). */
const CREATE_ATTEMPTS = 6;
/** Tries while a cluster with enough servers has too few JetStream peers yet (about 10 s). */
const PLACEMENT_ATTEMPTS = 12;
/** How long one pull request waits on the server; shorter means faster recovery, more requests. */
const FETCH_EXPIRES_MS = 5_000;
/**
 * The server's heartbeat on an idle pull. A pull whose consumer leader died (a node of a cluster
 * killed) is gone with it: two heartbeats missed end it, instead of its whole expiry.
 */
const FETCH_HEARTBEAT_MS = 1_000;

export interface QueueOptions {
  subjects: string[];
  workQueue: boolean;
  maxAgeMs?: number;
  duplicateWindowMs?: number;
}

export interface ConsumerOptions {
  consumer: string;
  filter?: string;
  ackWaitMs: number;
  maxInFlight: number;
  inactiveMs?: number;
  /** Read it without making or changing it (Transport.consume). */
  join?: boolean;
}

/** The JetStream stream of queue `queue`. */
export function streamNameFor(queue: string, namespace = 'default'): string {
  assertName(namespace, 'namespace');
  assertName(queue, 'queue name');
  return `a2a_${namespace}_${queue}`;
}

/** Creates queue `name`'s stream, or brings its subjects, age and dedup window up to date. */
export async function ensureQueue(link: NatsLink, name: string, options: QueueOptions): Promise<void> {
  const stream = streamNameFor(name, link.namespace);
  if (!Array.isArray(options.subjects) || options.subjects.length === 0) {
    throw new A2AError('VALIDATION_ERROR', `queue ${name} needs at least one subject`, { where: name });
  }
  for (const s of options.subjects) assertSubject(s, `subject of queue ${name}`, true);
  const maxAgeMs = options.maxAgeMs ?? 0;
  // JetStream refuses a dedup window longer than the max age.
  const windowMs = Math.min(options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS, maxAgeMs > 0 ? maxAgeMs : Infinity);
  const retention = options.workQueue ? RetentionPolicy.Workqueue : RetentionPolicy.Limits;
  const wanted = { subjects: [...options.subjects], max_age: nanos(maxAgeMs), duplicate_window: nanos(windowMs) };
  const where = `queue ${name} (stream ${stream})`;
  await link.ready(`create or update ${where}`, name);
  for (let attempt = 0; ; attempt++) {
    try {
      let current: StreamConfig | null = null;
      try {
        current = (await link.jsm.streams.info(stream)).config;
      } catch (error) {
        if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
      }
      if (current) link.found(current.num_replicas ?? 1);
      const replicas = link.replicas(name);
      if (!current) {
        await link.jsm.streams.add({ name: stream, retention, storage: StorageType.File, discard: DiscardPolicy.Old, num_replicas: replicas, ...wanted });
        return;
      }
      // told only when asked for: a size-chosen number counts the servers up now, one may be down
      if (link.replicasAsked && (current.num_replicas ?? 1) !== replicas) {
        // not changed here: scaling a stream moves its data, an operator's decision
        link.warn(`${where} has ${current.num_replicas ?? 1} replica(s), and this connection asks for ${replicas}: it keeps ${current.num_replicas ?? 1} (change it with \`nats stream edit ${stream} --replicas ${replicas}\`)`);
      }
      if (current.retention !== retention) {
        throw new A2AError('VALIDATION_ERROR', `${where} exists with ${current.retention} retention, which cannot be changed to ${retention}`, { where: name });
      }
      // updated only when it differs: an update of a replicated stream just created by another
      // process waits for its leader, past the API's timeout, for nothing
      const same =
        current.subjects.length === wanted.subjects.length &&
        current.subjects.every((x, i) => x === wanted.subjects[i]) &&
        current.max_age === wanted.max_age &&
        current.duplicate_window === wanted.duplicate_window;
      if (!same) await link.jsm.streams.update(stream, { ...current, ...wanted });
      return;
    } catch (error) {
      if (error instanceof A2AError) throw error;
      // Created meanwhile by someone else (10058: name in use): look again.
      if (attempt === 0 && isApiError(error, 10058)) continue;
      // In a cluster, processes starting together create the same replicated stream at once, and
      // all but one wait on the meta leader past the API's timeout; a leader election does the
      // same. Idempotent (info, then add or update): look again, a few times, with backoff.
      if (attempt < CREATE_ATTEMPTS && isTransient(error)) {
        await pause(backoff(attempt + 2));
        continue;
      }
      if (await peersJoining(link, error, link.replicas(name), attempt)) continue;
      if (isApiError(error, 10005) || isApiError(error, 10074)) throw replicasRefused(link, where, name, error);
      throw link.fail(isRefused(error) ? 'VALIDATION_ERROR' : 'AGENT_ERROR', `could not create or update ${where} on subjects ${options.subjects.join(', ')}`, name, error);
    }
  }
}

/**
 * No peers for the replicas (10005), in a cluster with enough servers: servers that have just
 * started are routed (so counted) before the JetStream meta group has them as peers (seen on a
 * cluster started beside a loaded test suite); it passes within seconds. True after a pause, for
 * the caller to try again (PLACEMENT_ATTEMPTS times, about 10 s); false when it is not that.
 */
export async function peersJoining(link: NatsLink, error: unknown, replicas: number, attempt: number): Promise<boolean> {
  if (attempt >= PLACEMENT_ATTEMPTS || !isApiError(error, 10005) || link.clusterSize < replicas) return false;
  await pause(backoff(attempt + 2));
  return true;
}

/** The cluster could not place the replicas asked for (10005: no suitable peers; 10074: not clustered). */
export function replicasRefused(link: NatsLink, where: string, name: string, error: unknown): A2AError {
  return link.fail('VALIDATION_ERROR', `could not create ${where} with ${link.replicas(name)} replica(s): the JetStream cluster has too few servers up to hold them (A2A_NATS_REPLICAS sets the number; a cluster of ${link.clusterSize} was seen)`, name, error);
}

/** Publishes into the queue holding `subject`; a retry with the same msgId is dropped by the server. */
export async function enqueue(link: NatsLink, subject: string, data: unknown, options: { msgId: string; headers?: Record<string, string> }): Promise<{ duplicate: boolean }> {
  assertSubject(subject, 'subject', false);
  if (typeof options.msgId !== 'string' || options.msgId.length === 0) {
    throw new A2AError('VALIDATION_ERROR', `enqueue on subject "${subject}" needs a non-empty msgId`, { where: subject });
  }
  const payload = encode(data, `subject "${subject}"`);
  const h = toHeaders(options.headers, subject);
  const noStream = (error: unknown) => isNoResponders(error) || /not enabled/i.test(reason(error));
  const streamMissing = async () => {
    try {
      await link.jsm.streams.find(subject);
      return false;
    } catch (error) {
      if (/no stream matches/i.test(reason(error))) return true;
      throw error;
    }
  };
  try {
    const ack = await link.retrying(
      `enqueue on subject "${subject}"`,
      subject,
      (attempt) => link.js.publish(subject, payload, { msgID: options.msgId, timeout: attemptTimeout(attempt), ...(h ? { headers: h } : {}) }),
      // "no stream" right after a restart may be JetStream still recovering it
      async (error) => !noStream(error) || link.recovering || !(await streamMissing()),
    );
    return { duplicate: ack.duplicate };
  } catch (error) {
    if (error instanceof A2AError) throw error;
    // The client reports a publish nobody stored as "JetStream not enabled": say what it means here.
    if (noStream(error)) throw link.fail('NOT_FOUND', `no durable queue holds subject "${subject}" (or JetStream is not enabled)`, subject);
    if (isTimeout(error)) throw link.fail('AGENT_TIMEOUT', `enqueue on subject "${subject}" was not confirmed (msgId ${options.msgId}): retry with the same msgId`, subject);
    throw link.fail('AGENT_ERROR', `could not enqueue on subject "${subject}" (msgId ${options.msgId})`, subject, error);
  }
}

/** The durable consumer's configuration, after checking the options. */
function consumerConfig(queue: string, options: ConsumerOptions): Partial<ConsumerConfig> & { durable_name: string } {
  assertConsumerName(options.consumer, queue);
  const where = `${queue}/${options.consumer}`;
  if (!(options.ackWaitMs > 0) || !Number.isInteger(options.maxInFlight) || options.maxInFlight < 1) {
    throw new A2AError('VALIDATION_ERROR', `consumer ${where} needs ackWaitMs > 0 and an integer maxInFlight >= 1`, { where });
  }
  if (options.filter !== undefined) assertSubject(options.filter, `filter of consumer ${where}`, true);
  return {
    durable_name: options.consumer,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    ack_wait: nanos(options.ackWaitMs),
    max_ack_pending: options.maxInFlight,
    max_deliver: -1,
    ...(options.filter !== undefined ? { filter_subject: options.filter } : {}),
    // a work queue keeps what is not acknowledged: a consumer removed while idle loses nothing
    ...(options.inactiveMs !== undefined ? { inactive_threshold: nanos(options.inactiveMs) } : {}),
  };
}

/** Creates (or joins: consumers with the same name share its messages) a durable consumer and reads it. */
export async function consume(link: NatsLink, queue: string, options: ConsumerOptions, handler: (message: DurableMessage) => void | Promise<void>): Promise<DurableConsumer> {
  const stream = streamNameFor(queue, link.namespace);
  const config = consumerConfig(queue, options);
  const where = `${queue}/${options.consumer}`;
  const open = (): Promise<Consumer> =>
    options.join
      ? link.retrying(`join consumer ${options.consumer} on queue ${queue}`, where, () => link.js.consumers.get(stream, options.consumer))
      : link.retrying(`create consumer ${options.consumer} on queue ${queue}`, where, async () => {
          await link.jsm.consumers.add(stream, config);
          return link.js.consumers.get(stream, options.consumer);
        });
  let consumer: Consumer;
  try {
    consumer = await open();
  } catch (error) {
    if (isApiError(error, JetStreamApiCodes.StreamNotFound)) {
      throw link.fail('NOT_FOUND', `no durable queue "${queue}" (stream ${stream}): create it with ensureQueue`, queue);
    }
    if (options.join && isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw link.fail('NOT_FOUND', `no consumer ${options.consumer} on queue ${queue} to join`, where);
    throw link.fail(isRefused(error) ? 'VALIDATION_ERROR' : 'AGENT_ERROR', `could not create consumer ${options.consumer} on queue ${queue}`, where, error);
  }
  return new PullConsumer(link, { queue, name: options.consumer, maxInFlight: options.maxInFlight }, consumer, open, handler);
}

/**
 * A durable consumer read by a fetch loop: a pull of up to maxInFlight messages at a time, each
 * handed to the handler as a DurableMessage. A server restart, JetStream not ready yet or the
 * consumer deleted are waited out with backoff (the consumer recreated when it is gone); a pull
 * made before a reconnect is ended at once, as it died with the old connection.
 */
class PullConsumer implements DurableConsumer {
  readonly #link: NatsLink;
  readonly #queue: string;
  readonly #name: string;
  readonly #where: string;
  readonly #fetch: { max_messages: number; expires: number; idle_heartbeat: number };
  readonly #open: () => Promise<Consumer>;
  readonly #handler: (message: DurableMessage) => void | Promise<void>;
  #consumer: Consumer;
  #stopped = false;
  #batch: ConsumerMessages | null = null;
  readonly #stopping = new AbortController();
  readonly #refetch = () => this.#batch?.stop();
  readonly #running: Promise<void>;

  constructor(link: NatsLink, of: { queue: string; name: string; maxInFlight: number }, consumer: Consumer, open: () => Promise<Consumer>, handler: (message: DurableMessage) => void | Promise<void>) {
    this.#link = link;
    this.#queue = of.queue;
    this.#name = of.name;
    this.#where = `${of.queue}/${of.name}`;
    this.#fetch = { max_messages: of.maxInFlight, expires: FETCH_EXPIRES_MS, idle_heartbeat: FETCH_HEARTBEAT_MS };
    this.#consumer = consumer;
    this.#open = open;
    this.#handler = handler;
    link.onReconnect.add(this.#refetch);
    this.#running = this.#loop();
  }

  async #loop(): Promise<void> {
    let failures = 0;
    while (!this.#stopped) {
      try {
        await this.#link.ready(`fetch from queue ${this.#queue}`, this.#where, RECONNECT_WAIT_MS, this.#stopping.signal);
        if (this.#stopped) break;
        this.#batch = await this.#consumer.fetch(this.#fetch);
        for await (const m of this.#batch) {
          if (this.#stopped) break; // not handled: redelivered after ackWait, to another member
          this.#deliver(m);
        }
        failures = 0;
      } catch (error) {
        if (this.#stopped || this.#link.closed) break;
        await pause(backoff(failures++), this.#stopping.signal);
        if (this.#stopped) break;
        await this.#recover(error);
      } finally {
        this.#batch = null;
      }
    }
  }

  #deliver(m: JsMsg): void {
    try {
      const result: unknown = this.#handler(durableMessage(this.#link, m, this.#queue));
      if (result instanceof Promise) result.catch(() => undefined);
    } catch {
      // Left unacknowledged: it comes back after ackWait.
    }
  }

  /** After a failed pull: a consumer that is gone is created again; anything else is waited out. */
  async #recover(error: unknown): Promise<void> {
    if (!(isApiError(error, JetStreamApiCodes.ConsumerNotFound) || /consumer (not found|deleted)/i.test(reason(error)))) return;
    try {
      this.#consumer = await this.#open();
    } catch {
      // Still not there: the next round tries again.
    }
  }

  async pending(): Promise<number> {
    try {
      const info = await this.#link.retrying(`read the state of consumer ${this.#name} on queue ${this.#queue}`, this.#where, () => this.#consumer.info());
      return info.num_pending + info.num_ack_pending;
    } catch (error) {
      // gone (removed by the server after its idle time): nothing can be read through it
      if (isApiError(error, JetStreamApiCodes.ConsumerNotFound) || /consumer not found/i.test(reason(error))) return 0;
      throw error;
    }
  }

  /** Stops it, then removes it from the server (a consumer already gone is no error). */
  async remove(): Promise<void> {
    await this.stop();
    try {
      await this.#link.jsm.consumers.delete(streamNameFor(this.#queue, this.#link.namespace), this.#name);
    } catch (error) {
      if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw this.#link.fail('AGENT_ERROR', `could not remove consumer ${this.#name} of queue ${this.#queue}`, this.#where, error);
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#link.onReconnect.delete(this.#refetch);
    this.#batch?.stop();
    this.#stopping.abort();
    await this.#running;
  }
}

/** A pulled message as the port gives it: ack waits for the server's confirmation. */
function durableMessage(link: NatsLink, m: JsMsg, queue: string): DurableMessage {
  const msgId = m.headers?.get('Nats-Msg-Id') ?? '';
  const what = `message ${msgId || `#${m.seq}`} on subject "${m.subject}" of queue ${queue}`;
  return {
    subject: m.subject,
    data: decode(m.data),
    headers: fromHeaders(m.headers),
    msgId,
    deliveries: m.info.deliveryCount,
    ack: async () => {
      await link.ready(`acknowledge ${what}`, m.subject);
      try {
        // Waits for the server's confirmation, so that "acked" means it will not come back.
        await m.ackAck();
      } catch (error) {
        throw link.fail('AGENT_ERROR', `could not acknowledge ${what}`, m.subject, error);
      }
    },
    nak: async (delayMs) => {
      await link.ready(`nak ${what}`, m.subject);
      m.nak(delayMs !== undefined && delayMs > 0 ? delayMs : undefined);
    },
    working: async () => {
      await link.ready(`extend the ack wait of ${what}`, m.subject);
      m.working();
    },
  };
}
