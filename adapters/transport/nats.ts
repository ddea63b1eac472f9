/**
 * The `Transport` port over NATS (client v3: @nats-io/transport-node, @nats-io/jetstream, @nats-io/kv).
 *   - core publish/subscribe/request on the connection, JSON payloads and string headers;
 *   - durable queues are JetStream streams (file storage, one replica): `ensureQueue` creates or
 *     updates the stream, `enqueue` publishes with `Nats-Msg-Id` so the server drops duplicates
 *     within the stream's window, `consume` is a durable pull consumer (explicit acks, `ack_wait`,
 *     `max_ack_pending`, `filter_subject`) read by a fetch loop that survives server restarts;
 *   - key-value buckets are JetStream KV buckets (history 1, file storage), created if missing.
 * Stream and bucket names are account-wide, so they are scoped by the namespace: queue `inbox`
 * is stream `a2a_<ns>_inbox`, bucket `snapshots` is KV `a2a_<ns>_snapshots` (subjects are used as
 * given: callers put the namespace in them, `a2a.<ns>.…`). Names, subjects and keys follow the
 * same rules as the in-process transport (adapters/transport/memory.ts), which checks them.
 * Errors name the server and the subject, queue or bucket; never the credentials.
 */
import {
  AuthorizationError,
  connect,
  nanos,
  PermissionViolationError,
  UserAuthenticationExpiredError,
  type Msg,
  type NatsConnection,
} from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiCodes,
  RetentionPolicy,
  StorageType,
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import type { DurableConsumer, DurableMessage, KeyValue, KeyValueReader, Transport, TransportMessage, TransportSubscription } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';
import { assertConsumerName, assertKey, assertName, assertSubject } from './names.js';
import { decode, encode, fromHeaders, toHeaders } from './natsCodec.js';
import { isApiError, isNoResponders, isRefused, isTimeout, isTransient, reason, redact, secretsOf } from './natsErrors.js';

export interface NatsTransportOptions {
  /** `nats://host:port`, or several for a cluster. Credentials in URLs are never shown in errors. */
  servers: string | string[];
  /** Scopes stream and bucket names (`a2a_<ns>_…`) so that deployments can share a server. Default `default`. */
  namespace?: string;
  user?: string;
  pass?: string;
  token?: string;
  /** Connection name, shown by the server's monitoring. Default `a2a`. */
  name?: string;
  /** Reconnect forever after a lost connection (default true): durable consumers resume by themselves. */
  reconnect?: boolean;
  /**
   * Where the replies to this connection's requests come back (core requests, JetStream API
   * answers, pulled queue messages, KV reads and key listings): `<prefix>.<unique>…` instead of
   * `_INBOX.<unique>…`. One prefix per user (`_INBOX_host`), with `subscribe: allow:
   * ["<prefix>.>"]` in that user's permissions, keeps users from hearing each other's replies.
   * Subject tokens separated by ".", no wildcards, no whitespace. Default `_INBOX`.
   */
  inboxPrefix?: string;
  /**
   * Where this connection reaches JetStream's API: `$JS.API` (default), or the subject an
   * account import maps another account's API to (examples/nats/server.conf gives the monitor
   * its own account that imports only the reads of the hosts bucket, as `JS.A2A.API.…`).
   * Same rules as `inboxPrefix`.
   */
  jsApiPrefix?: string;
}

/** A NATS transport, and what the server said of itself when it accepted the connection. */
export interface NatsConnectedTransport extends Transport {
  /**
   * The server asked for credentials (`auth_required` in its INFO). When it did not, any client
   * that reaches it may publish anything: forge results, events, cancels.
   */
  readonly serverRequiresAuth: boolean;
}

/** Default dedup window of a queue (JetStream's own default). */
const DEFAULT_DUPLICATE_WINDOW_MS = 120_000;
/** How long one pull request waits on the server; shorter means faster recovery, more requests. */
const FETCH_EXPIRES_MS = 5_000;
/**
 * How long an operation waits for a lost connection to come back. The client drops what is
 * published while it is disconnected (its buffer is reset on each reconnect attempt), so nothing
 * is sent before the connection is up again: a request would wait for a reply that cannot come.
 */
const RECONNECT_WAIT_MS = 10_000;
const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 2_000;
/**
 * How long an idempotent operation (an enqueue with its msgId, creating a consumer, reading a
 * key) is retried while the server is restarting: its reply can be lost, or JetStream can still
 * be recovering (no responders, timeouts) after the connection is back.
 */
const TRANSIENT_RETRY_MS = 30_000;
/**
 * After a reconnect, JetStream may still be recovering its streams from disk: for this long a
 * stream that seems missing is taken as not there yet (the operation is retried), not as absent.
 */
const RECOVERY_GRACE_MS = 10_000;

/** The JetStream stream of queue `queue`. */
export function streamNameFor(queue: string, namespace = 'default'): string {
  assertName(namespace, 'namespace');
  assertName(queue, 'queue name');
  return `a2a_${namespace}_${queue}`;
}

/** The JetStream KV bucket of bucket `bucket`. */
export function bucketNameFor(bucket: string, namespace = 'default'): string {
  assertName(namespace, 'namespace');
  assertName(bucket, 'bucket name');
  return `a2a_${namespace}_${bucket}`;
}

/** Checks an inbox prefix (see NatsTransportOptions.inboxPrefix): a subject without wildcards. */
export function assertInboxPrefix(prefix: string): void {
  assertPrefix(prefix, 'inboxPrefix', `NATS inbox prefix "${prefix}" (A2A_NATS_INBOX_PREFIX)`, 'e.g. "_INBOX_host", matching the user\'s `subscribe` permission "<prefix>.>"');
}

/** Checks a JetStream API prefix (see NatsTransportOptions.jsApiPrefix). */
export function assertJsApiPrefix(prefix: string): void {
  assertPrefix(prefix, 'jsApiPrefix', `JetStream API prefix "${prefix}" (A2A_NATS_JS_API_PREFIX)`, 'e.g. "JS.A2A.API", the subject the account imports JetStream\'s API to');
}

function assertPrefix(prefix: string, where: string, what: string, example: string): void {
  const bad = (why: string) => new A2AError('CONFIGURATION_INVALID', `invalid ${what}: ${why}; use subject tokens separated by ".", ${example}`, { where });
  if (typeof prefix !== 'string' || prefix.length === 0) throw bad('it is empty');
  if (/[\s\0]/.test(prefix)) throw bad('it contains whitespace');
  if (/[*>]/.test(prefix)) throw bad('wildcards ("*", ">") are not allowed');
  if (prefix.split('.').some((token) => token.length === 0)) throw bad('empty token (leading, trailing or double ".")');
  if (!/^[!-~]+$/.test(prefix)) throw bad('only printable ASCII is allowed');
}

/** Server URLs without user info, for messages. */
export function describeServers(servers: string | string[]): string {
  return (Array.isArray(servers) ? servers : [servers]).map((s) => s.replace(/\/\/[^@/]*@/, '//')).join(', ');
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Connects (failing fast if no server answers now), then reconnects by itself unless told not to. */
export async function connectNats(options: NatsTransportOptions): Promise<NatsConnectedTransport> {
  const servers = describeServers(options.servers);
  const secrets = secretsOf(options);
  const namespace = options.namespace ?? 'default';
  assertName(namespace, 'namespace');
  if (options.inboxPrefix !== undefined) assertInboxPrefix(options.inboxPrefix);
  if (options.jsApiPrefix !== undefined) assertJsApiPrefix(options.jsApiPrefix);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: options.servers,
      name: options.name ?? 'a2a',
      user: options.user,
      pass: options.pass,
      token: options.token,
      reconnect: options.reconnect ?? true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      waitOnFirstConnect: false,
      ...(options.inboxPrefix !== undefined ? { inboxPrefix: options.inboxPrefix } : {}),
    });
  } catch (error) {
    // the client's own classes, not the server's words
    const auth = error instanceof AuthorizationError || error instanceof UserAuthenticationExpiredError || error instanceof PermissionViolationError;
    // The server only says "Authorization Violation": say which credentials were tried (never their values).
    const given = [
      options.user !== undefined ? `user "${options.user}"${options.pass !== undefined ? ' with a password' : ''}` : options.pass !== undefined ? 'a password' : '',
      options.token !== undefined ? 'a token' : '',
      (Array.isArray(options.servers) ? options.servers : [options.servers]).some((s) => /\/\/[^@/]+@/.test(s)) ? 'credentials in the server URL' : '',
    ].filter(Boolean);
    const message = !auth
      ? `could not connect to NATS at ${servers}: ${reason(error)}`
      : given.length === 0
        ? `could not connect to NATS at ${servers}: the server requires credentials and none were given (the a2a commands read A2A_NATS_USER and A2A_NATS_PASSWORD, or A2A_NATS_TOKEN) (server: ${reason(error)})`
        : `could not connect to NATS at ${servers}: the server refused the credentials (${given.join(', ')}): check them (the a2a commands read A2A_NATS_USER and A2A_NATS_PASSWORD, or A2A_NATS_TOKEN) against the server's authorization block (server: ${reason(error)})`;
    throw new A2AError(auth ? 'CONFIGURATION_INVALID' : 'AGENT_ERROR', redact(message, secrets), { where: servers });
  }
  // checkAPI: false, so that a server without JetStream still serves core messaging.
  const api = options.jsApiPrefix !== undefined ? { apiPrefix: options.jsApiPrefix } : {};
  const jsm = await jetstreamManager(nc, { checkAPI: false, ...api });
  return new NatsTransport(nc, jetstream(nc, api), jsm, namespace, servers, secrets, options.inboxPrefix ?? '_INBOX');
}

class NatsTransport implements NatsConnectedTransport {
  readonly kind = 'nats' as const;
  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #namespace: string;
  readonly #servers: string;
  readonly #secrets: string[];
  readonly #requests = new WeakMap<TransportMessage, Msg>();
  readonly #consumers = new Set<DurableConsumer>();
  #kvm: Kvm | null = null;
  /** False between a disconnect and the reconnect (see RECONNECT_WAIT_MS). */
  #up = true;
  /** When the connection last came back (0: never lost). */
  #reconnectedAt = 0;
  #onUp = new Set<() => void>();
  /** Called on each reconnect: pull requests made before it died with the old connection. */
  #onReconnect = new Set<() => void>();

  /** Where replies come back (`<prefix>.…`), to explain a refused inbox subscription. */
  readonly #inboxPrefix: string;

  constructor(nc: NatsConnection, js: JetStreamClient, jsm: JetStreamManager, namespace: string, servers: string, secrets: string[], inboxPrefix = '_INBOX') {
    this.#secrets = secrets;
    this.#inboxPrefix = inboxPrefix;
    this.#nc = nc;
    this.#js = js;
    this.#jsm = jsm;
    this.#namespace = namespace;
    this.#servers = servers;
    void this.#watch();
  }

  async #watch(): Promise<void> {
    for await (const status of this.#nc.status()) {
      if (status.type === 'disconnect') this.#up = false;
      else if (status.type === 'reconnect' || status.type === 'close') {
        this.#up = status.type === 'reconnect';
        if (this.#up) this.#reconnectedAt = Date.now();
        for (const wake of [...this.#onUp]) wake();
        if (status.type === 'reconnect') for (const refetch of [...this.#onReconnect]) refetch();
      }
    }
  }

  /** Resolves when the connection is up; fails after `timeoutMs`, or at once when it is closed. */
  async #ready(what: string, where: string, timeoutMs = RECONNECT_WAIT_MS, signal?: AbortSignal): Promise<void> {
    if (this.#nc.isClosed()) throw this.#fail('AGENT_ERROR', `cannot ${what}: the connection is closed`, where);
    if (this.#up) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#onUp.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      this.#onUp.add(done);
      signal?.addEventListener('abort', done);
    });
    if (signal?.aborted) return;
    if (this.#nc.isClosed()) throw this.#fail('AGENT_ERROR', `cannot ${what}: the connection is closed`, where);
    if (!this.#up) throw this.#fail('AGENT_TIMEOUT', `cannot ${what}: disconnected, and not reconnected within ${timeoutMs} ms`, where);
  }

  get serverRequiresAuth(): boolean {
    return this.#nc.info?.auth_required === true;
  }

  /** The server in use (host:port, no credentials), for messages. */
  get #server(): string {
    try {
      return this.#nc.getServer() || this.#servers;
    } catch {
      return this.#servers;
    }
  }

  #fail(code: 'AGENT_ERROR' | 'AGENT_TIMEOUT' | 'NOT_FOUND' | 'VALIDATION_ERROR', what: string, where: string, error?: unknown): A2AError {
    const detail = error === undefined ? '' : `: ${reason(error)}`;
    // The replies of a request come back on `<inbox prefix>.…`: a user whose permissions allow
    // another prefix (server.conf gives each its own) cannot make requests until it uses that one.
    const hint = detail.includes(`Permissions Violation for Subscription to "${this.#inboxPrefix}.`)
      ? ` (replies come back on "${this.#inboxPrefix}.…", which this user may not subscribe to: set A2A_NATS_INBOX_PREFIX to the inbox prefix its permissions allow, if any)`
      : '';
    return new A2AError(code, redact(`${what} (NATS ${this.#server})${detail}${hint}`, this.#secrets), { cause: error, where });
  }

  /**
   * Runs an idempotent operation, again after transient failures (see isTransient), with
   * backoff, for up to TRANSIENT_RETRY_MS; then (or on any other failure) throws its last error.
   * `stillTransient` may look closer at a failure (is the stream really missing?).
   */
  async #retrying<T>(what: string, where: string, op: () => Promise<T>, stillTransient?: (error: unknown) => Promise<boolean>): Promise<T> {
    const deadline = Date.now() + TRANSIENT_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      await this.#ready(what, where, Math.max(1, Math.min(RECONNECT_WAIT_MS, deadline - Date.now())));
      try {
        return await op();
      } catch (error) {
        const retry = !this.#nc.isClosed() && Date.now() < deadline && isTransient(error) && (stillTransient ? await stillTransient(error).catch(() => true) : true);
        if (!retry) throw error;
        await pause(Math.min(RETRY_MIN_MS * 2 ** attempt, RETRY_MAX_MS));
      }
    }
  }

  // -- core messaging ---------------------------------------------------------------------------

  async publish(subject: string, data: unknown, headers?: Record<string, string>): Promise<void> {
    assertSubject(subject, 'subject', false);
    const payload = encode(data, `subject "${subject}"`);
    const h = toHeaders(headers, subject);
    await this.#ready(`publish on subject "${subject}"`, subject);
    try {
      this.#nc.publish(subject, payload, h ? { headers: h } : undefined);
    } catch (error) {
      throw this.#fail('AGENT_ERROR', `could not publish on subject "${subject}"`, subject, error);
    }
  }

  async subscribe(subject: string, handler: (message: TransportMessage) => void, options: { queue?: string } = {}): Promise<TransportSubscription> {
    assertSubject(subject, 'subscription subject', true);
    if (options.queue !== undefined) assertSubject(options.queue, 'queue group', false);
    await this.#ready(`subscribe to subject "${subject}"`, subject);
    let sub;
    // A subscription the server refuses (permissions) is closed with this error, before the flush returns.
    const refusal: { error?: Error } = {};
    try {
      sub = this.#nc.subscribe(subject, {
        queue: options.queue,
        callback: (error, msg) => {
          if (error) {
            refusal.error = error;
            return;
          }
          const message: TransportMessage = { subject: msg.subject, data: decode(msg.data), headers: fromHeaders(msg.headers) };
          if (msg.reply) this.#requests.set(message, msg);
          try {
            const result: unknown = handler(message);
            if (result instanceof Promise) result.catch(() => undefined);
          } catch {
            // A failing handler must not close the subscription (the client would).
          }
        },
      });
      // The server knows of the interest once this returns: a publish from anywhere reaches it.
      await this.#nc.flush();
    } catch (error) {
      throw this.#fail('AGENT_ERROR', `could not subscribe to subject "${subject}"`, subject, error);
    }
    if (refusal.error) throw this.#fail('AGENT_ERROR', `could not subscribe to subject "${subject}": the server refused it`, subject, refusal.error);
    return {
      unsubscribe: async () => {
        if (!sub.isClosed()) sub.unsubscribe();
      },
    };
  }

  async request(subject: string, data: unknown, options: { timeoutMs: number; headers?: Record<string, string> }): Promise<TransportMessage> {
    assertSubject(subject, 'subject', false);
    const payload = encode(data, `subject "${subject}"`);
    const h = toHeaders(options.headers, subject);
    const started = Date.now();
    await this.#ready(`send a request on subject "${subject}"`, subject, options.timeoutMs);
    const timeout = Math.max(1, options.timeoutMs - (Date.now() - started));
    try {
      const reply = await this.#nc.request(subject, payload, { timeout, ...(h ? { headers: h } : {}) });
      return { subject: reply.subject, data: decode(reply.data), headers: fromHeaders(reply.headers) };
    } catch (error) {
      if (isNoResponders(error)) throw this.#fail('AGENT_ERROR', `no responders on subject "${subject}"`, subject);
      if (isTimeout(error)) throw this.#fail('AGENT_TIMEOUT', `no reply on subject "${subject}" within ${options.timeoutMs} ms`, subject);
      throw this.#fail('AGENT_ERROR', `request on subject "${subject}" failed`, subject, error);
    }
  }

  async respond(request: TransportMessage, data: unknown): Promise<void> {
    const msg = this.#requests.get(request);
    if (!msg) {
      throw new A2AError('VALIDATION_ERROR', `the message on subject "${request.subject}" is not a request received here: there is no one to respond to`, {
        where: request.subject,
      });
    }
    const payload = encode(data, `the reply to "${request.subject}"`);
    await this.#ready(`respond to a request on subject "${request.subject}"`, request.subject);
    try {
      msg.respond(payload);
    } catch (error) {
      throw this.#fail('AGENT_ERROR', `could not respond to a request on subject "${request.subject}"`, request.subject, error);
    }
  }

  // -- durable queues ---------------------------------------------------------------------------

  async ensureQueue(name: string, options: { subjects: string[]; workQueue: boolean; maxAgeMs?: number; duplicateWindowMs?: number }): Promise<void> {
    const stream = streamNameFor(name, this.#namespace);
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
    await this.#ready(`create or update ${where}`, name);
    for (let attempt = 0; ; attempt++) {
      try {
        let current: StreamConfig | null = null;
        try {
          current = (await this.#jsm.streams.info(stream)).config;
        } catch (error) {
          if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error;
        }
        if (!current) {
          await this.#jsm.streams.add({ name: stream, retention, storage: StorageType.File, discard: DiscardPolicy.Old, num_replicas: 1, ...wanted });
          return;
        }
        if (current.retention !== retention) {
          throw new A2AError('VALIDATION_ERROR', `${where} exists with ${current.retention} retention, which cannot be changed to ${retention}`, { where: name });
        }
        await this.#jsm.streams.update(stream, { ...current, ...wanted });
        return;
      } catch (error) {
        if (error instanceof A2AError) throw error;
        // Created meanwhile by someone else (10058: name in use): look again.
        if (attempt === 0 && isApiError(error, 10058)) continue;
        throw this.#fail(isRefused(error) ? 'VALIDATION_ERROR' : 'AGENT_ERROR', `could not create or update ${where} on subjects ${options.subjects.join(', ')}`, name, error);
      }
    }
  }

  async enqueue(subject: string, data: unknown, options: { msgId: string; headers?: Record<string, string> }): Promise<{ duplicate: boolean }> {
    assertSubject(subject, 'subject', false);
    if (typeof options.msgId !== 'string' || options.msgId.length === 0) {
      throw new A2AError('VALIDATION_ERROR', `enqueue on subject "${subject}" needs a non-empty msgId`, { where: subject });
    }
    const payload = encode(data, `subject "${subject}"`);
    const h = toHeaders(options.headers, subject);
    // A retry with the same msgId is safe: the queue drops the duplicate.
    const streamMissing = async () => {
      try {
        await this.#jsm.streams.find(subject);
        return false;
      } catch (error) {
        if (/no stream matches/i.test(reason(error))) return true;
        throw error;
      }
    };
    try {
      const ack = await this.#retrying(`enqueue on subject "${subject}"`, subject, () =>
        this.#js.publish(subject, payload, { msgID: options.msgId, ...(h ? { headers: h } : {}) }),
        async (error) =>
          !(isNoResponders(error) || /not enabled/i.test(reason(error))) || Date.now() - this.#reconnectedAt < RECOVERY_GRACE_MS || !(await streamMissing()),
      );
      return { duplicate: ack.duplicate };
    } catch (error) {
      if (error instanceof A2AError) throw error;
      // The client reports a publish nobody stored as "JetStream not enabled": say what it means here.
      if (isNoResponders(error) || /not enabled/i.test(reason(error))) {
        throw this.#fail('NOT_FOUND', `no durable queue holds subject "${subject}" (or JetStream is not enabled)`, subject);
      }
      if (isTimeout(error)) throw this.#fail('AGENT_TIMEOUT', `enqueue on subject "${subject}" was not confirmed (msgId ${options.msgId}): retry with the same msgId`, subject);
      throw this.#fail('AGENT_ERROR', `could not enqueue on subject "${subject}" (msgId ${options.msgId})`, subject, error);
    }
  }

  async consume(
    queue: string,
    options: { consumer: string; filter?: string; ackWaitMs: number; maxInFlight: number; inactiveMs?: number },
    handler: (message: DurableMessage) => void | Promise<void>,
  ): Promise<DurableConsumer> {
    const stream = streamNameFor(queue, this.#namespace);
    assertConsumerName(options.consumer, queue);
    const where = `${queue}/${options.consumer}`;
    if (!(options.ackWaitMs > 0) || !Number.isInteger(options.maxInFlight) || options.maxInFlight < 1) {
      throw new A2AError('VALIDATION_ERROR', `consumer ${where} needs ackWaitMs > 0 and an integer maxInFlight >= 1`, { where });
    }
    if (options.filter !== undefined) assertSubject(options.filter, `filter of consumer ${where}`, true);
    const config = {
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
    // Creates the durable consumer, or updates it: consumers with the same name share its messages.
    const ensure = (): Promise<Consumer> =>
      this.#retrying(`create consumer ${options.consumer} on queue ${queue}`, where, async () => {
        await this.#jsm.consumers.add(stream, config);
        return this.#js.consumers.get(stream, options.consumer);
      });
    let consumer: Consumer;
    try {
      consumer = await ensure();
    } catch (error) {
      if (isApiError(error, JetStreamApiCodes.StreamNotFound)) {
        throw this.#fail('NOT_FOUND', `no durable queue "${queue}" (stream ${stream}): create it with ensureQueue`, queue);
      }
      throw this.#fail(isRefused(error) ? 'VALIDATION_ERROR' : 'AGENT_ERROR', `could not create consumer ${options.consumer} on queue ${queue}`, where, error);
    }
    const fetch = { max_messages: options.maxInFlight, expires: FETCH_EXPIRES_MS };
    let stopped = false;
    let batch: ConsumerMessages | null = null;
    const stopping = new AbortController();

    const deliver = (m: JsMsg) => {
      const message = this.#durable(m, queue);
      try {
        const result: unknown = handler(message);
        if (result instanceof Promise) result.catch(() => undefined);
      } catch {
        // Left unacknowledged: it comes back after ackWait.
      }
    };

    const loop = async () => {
      let failures = 0;
      while (!stopped) {
        try {
          await this.#ready(`fetch from queue ${queue}`, where, RECONNECT_WAIT_MS, stopping.signal);
          if (stopped) break;
          batch = await consumer.fetch(fetch);
          for await (const m of batch) {
            if (stopped) break; // not handled: redelivered after ackWait, to another member
            deliver(m);
          }
          failures = 0;
        } catch (error) {
          if (stopped || this.#nc.isClosed()) break;
          // Server restarting, JetStream not ready yet, consumer deleted: wait, recreate, resume.
          failures += 1;
          await new Promise<void>((resolve) => {
            const done = () => {
              clearTimeout(timer);
              resolve();
            };
            const timer = setTimeout(done, Math.min(RETRY_MIN_MS * 2 ** (failures - 1), RETRY_MAX_MS));
            stopping.signal.addEventListener('abort', done, { once: true });
          });
          if (stopped) break;
          if (isApiError(error, JetStreamApiCodes.ConsumerNotFound) || /consumer (not found|deleted)/i.test(reason(error))) {
            try {
              consumer = await ensure();
            } catch {
              // Still not there: the next round tries again.
            }
          }
        } finally {
          batch = null;
        }
      }
    };
    // A pull request made before a reconnect is gone with the old connection (the server may have
    // restarted): end it now rather than wait for it to expire, and ask again.
    const refetch = () => (batch as ConsumerMessages | null)?.stop();
    this.#onReconnect.add(refetch);
    const running = loop();
    const handle: DurableConsumer = {
      pending: async () => {
        const info = await this.#retrying(`read the state of consumer ${options.consumer} on queue ${queue}`, where, () => consumer.info());
        return info.num_pending + info.num_ack_pending;
      },
      stop: async () => {
        if (stopped) return;
        stopped = true;
        this.#onReconnect.delete(refetch);
        this.#consumers.delete(handle);
        (batch as ConsumerMessages | null)?.stop();
        stopping.abort();
        await running;
      },
    };
    this.#consumers.add(handle);
    return handle;
  }

  #durable(m: JsMsg, queue: string): DurableMessage {
    const msgId = m.headers?.get('Nats-Msg-Id') ?? '';
    const what = `message ${msgId || `#${m.seq}`} on subject "${m.subject}" of queue ${queue}`;
    return {
      subject: m.subject,
      data: decode(m.data),
      headers: fromHeaders(m.headers),
      msgId,
      deliveries: m.info.deliveryCount,
      ack: async () => {
        await this.#ready(`acknowledge ${what}`, m.subject);
        try {
          // Waits for the server's confirmation, so that "acked" means it will not come back.
          await m.ackAck();
        } catch (error) {
          throw this.#fail('AGENT_ERROR', `could not acknowledge ${what}`, m.subject, error);
        }
      },
      nak: async (delayMs) => {
        await this.#ready(`nak ${what}`, m.subject);
        m.nak(delayMs !== undefined && delayMs > 0 ? delayMs : undefined);
      },
      working: async () => {
        await this.#ready(`extend the ack wait of ${what}`, m.subject);
        m.working();
      },
    };
  }

  // -- key-value --------------------------------------------------------------------------------

  async keyValue(bucket: string): Promise<KeyValue> {
    const name = bucketNameFor(bucket, this.#namespace);
    this.#kvm ??= new Kvm(this.#js);
    let kv: KV;
    await this.#ready(`open the KV bucket ${bucket}`, bucket);
    try {
      kv = await this.#kvm.create(name, { history: 1, storage: StorageType.File });
    } catch (error) {
      throw this.#fail('AGENT_ERROR', `could not open or create the KV bucket ${bucket} (${name})`, bucket, error);
    }
    const failed = (op: string, key: string, error: unknown) => this.#fail('AGENT_ERROR', `KV ${op} of key "${key}" in bucket ${bucket} failed`, `${bucket}/${key}`, error);
    return {
      get: async (key) => {
        assertKey(key, bucket);
        try {
          const entry = await this.#retrying(`use key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, () => kv.get(key));
          return entry && entry.operation === 'PUT' ? { value: decode(entry.value), revision: entry.revision } : null;
        } catch (error) {
          throw failed('get', key, error);
        }
      },
      put: async (key, value) => {
        assertKey(key, bucket);
        const payload = encode(value, `key "${key}" of bucket ${bucket}`);
        try {
          // a blind write: writing it twice leaves the same value
          return await this.#retrying(`write key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, () => kv.put(key, payload));
        } catch (error) {
          throw failed('put', key, error);
        }
      },
      update: async (key, value, revision) => {
        assertKey(key, bucket);
        const payload = encode(value, `key "${key}" of bucket ${bucket}`);
        const isConflict = (error: unknown) =>
          isApiError(error, JetStreamApiCodes.StreamWrongLastSequence) || isApiError(error, JetStreamApiCodes.StreamWrongLastSequenceUnknown) || /wrong last sequence|key exists/i.test(reason(error));
        let attempts = 0;
        let lost = false;
        let written: number | null = null;
        try {
          await this.#retrying(`write key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, async () => {
            attempts += 1;
            try {
              written = revision === 0 ? await kv.create(key, payload) : await kv.update(key, payload, revision);
            } catch (error) {
              // lost the compare-and-set: an answer, never retried
              if (!isConflict(error)) throw error;
              lost = true;
            }
          });
        } catch (error) {
          throw failed('update', key, error);
        }
        if (!lost) return written;
        if (attempts === 1) return null;
        // A retry after a lost reply: the first attempt may have been the write that moved the
        // revision. Not knowing is an error (the caller retries), not a lost compare-and-set.
        let now: Awaited<ReturnType<typeof kv.get>>;
        try {
          now = await this.#retrying(`read key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, () => kv.get(key));
        } catch (error) {
          throw failed('update', key, error);
        }
        return now !== null && now.operation === 'PUT' && new TextDecoder().decode(now.value) === payload ? now.revision : null;
      },
      delete: async (key) => {
        assertKey(key, bucket);
        try {
          await this.#retrying(`use key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, () => kv.delete(key));
        } catch (error) {
          throw failed('delete', key, error);
        }
      },
      keys: async (prefix = '') => {
        try {
          // A prefix ending in "." is a subject prefix the server can filter on; others are filtered here.
          const filter = prefix.endsWith('.') && prefix.length > 1 ? `${prefix}>` : '>';
          return await this.#retrying(`list the keys of bucket ${bucket}`, bucket, async () => {
            const out: string[] = [];
            for await (const key of await kv.keys(filter)) if (key.startsWith(prefix)) out.push(key);
            return [...new Set(out)].sort();
          });
        } catch (error) {
          throw this.#fail('AGENT_ERROR', `could not list the keys of bucket ${bucket}`, bucket, error);
        }
      },
    };
  }

  async readKeyValue(bucket: string): Promise<KeyValueReader> {
    const name = bucketNameFor(bucket, this.#namespace);
    // what @nats-io/kv names them: stream KV_<bucket>, a key's subject $KV.<bucket>.<key>
    const stream = `KV_${name}`;
    const subjectPrefix = `$KV.${name}.`;
    /** The stream's info, with the subjects under `filter` listed; null when there is no bucket. */
    const info = async (filter?: string): Promise<StreamInfo | null> => {
      try {
        return await this.#jsm.streams.info(stream, filter === undefined ? undefined : { subjects_filter: filter });
      } catch (error) {
        if (isApiError(error, JetStreamApiCodes.StreamNotFound)) return null;
        throw error;
      }
    };
    // Direct get when the bucket allows it (any server in a cluster answers), else message get;
    // learnt from the stream's config on first use.
    let direct: boolean | null = null;
    const get = async (key: string) => {
      if (direct === null) {
        const i = await info();
        if (!i) return null;
        direct = i.config.allow_direct === true;
      }
      const query = { last_by_subj: `${subjectPrefix}${key}` };
      const m = direct ? await this.#jsm.direct.getMessage(stream, query) : await this.#jsm.streams.getMessage(stream, query);
      // a deleted or purged key keeps a marker as its last entry
      const operation = m?.header?.get('KV-Operation');
      return m && operation !== 'DEL' && operation !== 'PURGE' ? { value: decode(m.data), revision: m.seq } : null;
    };
    return {
      get: async (key) => {
        assertKey(key, bucket);
        try {
          return await this.#retrying(`read key "${key}" of bucket ${bucket}`, `${bucket}/${key}`, () => get(key));
        } catch (error) {
          throw this.#fail('AGENT_ERROR', `KV get of key "${key}" in bucket ${bucket} failed`, `${bucket}/${key}`, error);
        }
      },
      keys: async (prefix = '') => {
        try {
          return await this.#retrying(`list the keys of bucket ${bucket}`, bucket, async () => {
            // A prefix ending in "." is a subject prefix the server can filter on; others are filtered here.
            const filter = `${subjectPrefix}${prefix.endsWith('.') && prefix.length > 1 ? prefix : ''}>`;
            const i = await info(filter);
            if (!i) return [];
            direct ??= i.config.allow_direct === true;
            const listed = Object.keys(i.state.subjects ?? {})
              .map((subject) => subject.slice(subjectPrefix.length))
              .filter((key) => key.startsWith(prefix));
            // a subject whose last entry is a delete marker is no key: each is read once to know
            const live = await Promise.all(listed.map(async (key) => ((await get(key)) ? key : null)));
            return live.filter((key): key is string => key !== null).sort();
          });
        } catch (error) {
          throw this.#fail('AGENT_ERROR', `could not list the keys of bucket ${bucket}`, bucket, error);
        }
      },
    };
  }

  async close(): Promise<void> {
    if (this.#nc.isClosed()) return;
    await Promise.all([...this.#consumers].map((c) => c.stop()));
    // Drain delivers what subscriptions hold and sends what is buffered; it cannot while the
    // server is away, and then closing is all there is to do (nothing buffered would be sent).
    try {
      if (this.#up) await this.#nc.drain();
    } catch {
      // closed below
    }
    if (!this.#nc.isClosed()) await this.#nc.close();
  }
}
