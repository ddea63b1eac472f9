/**
 * The `Transport` port over NATS (client v3: @nats-io/transport-node, @nats-io/jetstream, @nats-io/kv),
 * in four parts:
 *   - here: connecting, and core publish/subscribe/request on the connection (JSON payloads,
 *     string headers);
 *   - natsLink.ts: the connection the parts share (up or not, retries across a server restart,
 *     errors that name the server and never the credentials);
 *   - natsQueues.ts: durable queues (JetStream streams, deduplicated enqueues, pull consumers);
 *   - natsKv.ts: key-value buckets (JetStream KV).
 * Stream and bucket names are account-wide, so they are scoped by the namespace: queue `inbox`
 * is stream `a2a_<ns>_inbox`, bucket `snapshots` is KV `a2a_<ns>_snapshots` (subjects are used as
 * given: callers put the namespace in them, `a2a.<ns>.…`). Names, subjects and keys follow the
 * same rules as the in-process transport (adapters/transport/memory.ts), which checks them.
 */
import {
  AuthorizationError,
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  PermissionViolationError,
  UserAuthenticationExpiredError,
  type Msg,
  type NatsConnection,
} from '@nats-io/transport-node';
import { readFileSync, statSync } from 'node:fs';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { DurableConsumer, DurableMessage, KeyValue, KeyValueReader, Transport, TransportMessage, TransportSubscription } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';
import { assertName, assertSubject } from './names.js';
import { assertReplicas, assertSafeOffLoopback, describeServers, serverList, type NatsSecurity } from './natsServers.js';
import { decode, encode, fromHeaders, toHeaders } from './natsCodec.js';
import { isNoResponders, isTimeout, reason, redact, secretsOf } from './natsErrors.js';
import { API_TIMEOUT_MS, NatsLink } from './natsLink.js';
import { consume, enqueue, ensureQueue, type ConsumerOptions, type QueueOptions } from './natsQueues.js';
import { openKeyValue, openKeyValueReader } from './natsKv.js';

export interface NatsTransportOptions extends NatsSecurity {
  /** `nats://host:port` (`tls://` for TLS), or several for a cluster. Credentials in URLs are never shown in errors. */
  servers: string | string[];
  /** Scopes stream and bucket names (`a2a_<ns>_…`) so that deployments can share a server. Default `default`. */
  namespace?: string;
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
  /**
   * Replicas of every stream and KV bucket this connection creates (work queues, the hosts'
   * events, the snapshots, hosts, pauses and artifacts buckets), 1 to 5, at most the cluster's
   * size. Default: 3 in a JetStream cluster of 3 or more servers, else 1. An existing stream
   * keeps its replicas; a difference is told through `onWarning`.
   */
  replicas?: number;
  /** What an operator should know and nothing refuses (an existing stream's other replicas). */
  onWarning?: (message: string) => void;
}

/** A NATS transport, and what the server said of itself when it accepted the connection. */
export interface NatsConnectedTransport extends Transport {
  /**
   * The server asked for credentials (`auth_required` in its INFO). When it did not, any client
   * that reaches it may publish anything: forge results, events, cancels.
   */
  readonly serverRequiresAuth: boolean;
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

export { assertReplicas, describeServers, serverList } from './natsServers.js';

/** A creds file's bytes, or an error naming the file and what was wrong. */
function readCreds(file: string): Uint8Array {
  try {
    const text = readFileSync(file, 'utf8');
    if (!/-----BEGIN NATS USER JWT-----/.test(text) || !/-----BEGIN USER NKEY SEED-----/.test(text)) throw new Error('it holds no user JWT and nkey seed (the format `nsc` writes)');
    return new TextEncoder().encode(text);
  } catch (error) {
    throw new A2AError('CONFIGURATION_INVALID', `the NATS creds file ${file} (A2A_NATS_CREDS) cannot be used: ${(error as Error).message}`, { where: 'credsFile' });
  }
}

/** An nkey seed file's seed, or an error naming the file and what was wrong (never the seed). */
function readNkeySeed(file: string): Uint8Array {
  try {
    const info = statSync(file);
    // a seed readable by others is a credential anyone on the machine can use
    if ((info.mode & 0o077) !== 0 && process.platform !== 'win32') throw new Error(`it is readable by other users (mode ${(info.mode & 0o777).toString(8)}): chmod 600 ${file}`);
    const seed = readFileSync(file, 'utf8').trim();
    if (!/^SU[A-Z2-7]{56}$/.test(seed)) throw new Error('it holds no nkey user seed (one line starting with "SU", as `a2a nats users` writes it)');
    return new TextEncoder().encode(seed);
  } catch (error) {
    throw new A2AError('CONFIGURATION_INVALID', `the NATS nkey seed file ${file} (A2A_NATS_NKEY) cannot be used: ${(error as Error).message}`, { where: 'nkeyFile' });
  }
}

/** Connects (failing fast if no server answers now), then reconnects by itself unless told not to. */
export async function connectNats(options: NatsTransportOptions): Promise<NatsConnectedTransport> {
  // a cluster as one string (`--nats nats://a:4222,nats://b:4222`) or as a list
  const list = serverList(options.servers);
  if (list.length === 0) throw new A2AError('CONFIGURATION_INVALID', 'no NATS server given: pass a URL such as nats://127.0.0.1:4222, or several separated by commas for a cluster', { where: 'servers' });
  if (options.replicas !== undefined) assertReplicas(options.replicas, 'replicas');
  options = { ...options, servers: list };
  const servers = describeServers(options.servers);
  const secrets = secretsOf(options);
  const namespace = options.namespace ?? 'default';
  assertName(namespace, 'namespace');
  if (options.inboxPrefix !== undefined) assertInboxPrefix(options.inboxPrefix);
  if (options.jsApiPrefix !== undefined) assertJsApiPrefix(options.jsApiPrefix);
  assertSafeOffLoopback(options.servers, options);
  if (options.credsFile !== undefined && options.nkeyFile !== undefined) throw new A2AError('CONFIGURATION_INVALID', 'give one of A2A_NATS_CREDS (a creds file) and A2A_NATS_NKEY (an nkey seed file), not both', { where: 'nkeyFile' });
  const authenticator = options.credsFile !== undefined ? credsAuthenticator(readCreds(options.credsFile)) : options.nkeyFile !== undefined ? nkeyAuthenticator(readNkeySeed(options.nkeyFile)) : undefined;
  const tls = options.tls ?? (list.some((s) => /^tls:\/\//i.test(s)) ? {} : undefined);
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: options.servers,
      name: options.name ?? 'a2a',
      user: options.user,
      pass: options.pass,
      token: options.token,
      ...(authenticator ? { authenticator } : {}),
      ...(tls ? { tls } : {}),
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
  const api = { timeout: API_TIMEOUT_MS, ...(options.jsApiPrefix !== undefined ? { apiPrefix: options.jsApiPrefix } : {}) };
  const jsm = await jetstreamManager(nc, { checkAPI: false, ...api });
  return new NatsTransport(
    new NatsLink(nc, jetstream(nc, api), jsm, {
      namespace,
      servers,
      secrets,
      inboxPrefix: options.inboxPrefix ?? '_INBOX',
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    }),
  );
}

class NatsTransport implements NatsConnectedTransport {
  readonly kind = 'nats' as const;
  readonly #link: NatsLink;
  readonly #nc: NatsConnection;
  readonly #requests = new WeakMap<TransportMessage, Msg>();
  readonly #consumers = new Set<DurableConsumer>();

  constructor(link: NatsLink) {
    this.#link = link;
    this.#nc = link.nc;
  }

  get serverRequiresAuth(): boolean {
    return this.#nc.info?.auth_required === true;
  }

  // -- core messaging ---------------------------------------------------------------------------

  async publish(subject: string, data: unknown, headers?: Record<string, string>): Promise<void> {
    assertSubject(subject, 'subject', false);
    const payload = encode(data, `subject "${subject}"`);
    const h = toHeaders(headers, subject);
    await this.#link.ready(`publish on subject "${subject}"`, subject);
    try {
      this.#nc.publish(subject, payload, h ? { headers: h } : undefined);
    } catch (error) {
      throw this.#link.fail('AGENT_ERROR', `could not publish on subject "${subject}"`, subject, error);
    }
  }

  async subscribe(subject: string, handler: (message: TransportMessage) => void, options: { queue?: string } = {}): Promise<TransportSubscription> {
    assertSubject(subject, 'subscription subject', true);
    if (options.queue !== undefined) assertSubject(options.queue, 'queue group', false);
    await this.#link.ready(`subscribe to subject "${subject}"`, subject);
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
      throw this.#link.fail('AGENT_ERROR', `could not subscribe to subject "${subject}"`, subject, error);
    }
    if (refusal.error) throw this.#link.fail('AGENT_ERROR', `could not subscribe to subject "${subject}": the server refused it`, subject, refusal.error);
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
    await this.#link.ready(`send a request on subject "${subject}"`, subject, options.timeoutMs);
    const timeout = Math.max(1, options.timeoutMs - (Date.now() - started));
    try {
      const reply = await this.#nc.request(subject, payload, { timeout, ...(h ? { headers: h } : {}) });
      return { subject: reply.subject, data: decode(reply.data), headers: fromHeaders(reply.headers) };
    } catch (error) {
      if (isNoResponders(error)) throw this.#link.fail('AGENT_ERROR', `no responders on subject "${subject}"`, subject);
      if (isTimeout(error)) throw this.#link.fail('AGENT_TIMEOUT', `no reply on subject "${subject}" within ${options.timeoutMs} ms`, subject);
      throw this.#link.fail('AGENT_ERROR', `request on subject "${subject}" failed`, subject, error);
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
    await this.#link.ready(`respond to a request on subject "${request.subject}"`, request.subject);
    try {
      msg.respond(payload);
    } catch (error) {
      throw this.#link.fail('AGENT_ERROR', `could not respond to a request on subject "${request.subject}"`, request.subject, error);
    }
  }

  // -- durable queues (natsQueues.ts) and key-value buckets (natsKv.ts) ---------------------------

  ensureQueue(name: string, options: QueueOptions): Promise<void> {
    return ensureQueue(this.#link, name, options);
  }

  enqueue(subject: string, data: unknown, options: { msgId: string; headers?: Record<string, string> }): Promise<{ duplicate: boolean }> {
    return enqueue(this.#link, subject, data, options);
  }

  async consume(queue: string, options: ConsumerOptions, handler: (message: DurableMessage) => void | Promise<void>): Promise<DurableConsumer> {
    const consumer = await consume(this.#link, queue, options, handler);
    const handle: DurableConsumer = {
      pending: () => consumer.pending(),
      stop: async () => {
        this.#consumers.delete(handle);
        await consumer.stop();
      },
      remove: async () => {
        this.#consumers.delete(handle);
        await consumer.remove();
      },
    };
    this.#consumers.add(handle);
    return handle;
  }

  keyValue(bucket: string): Promise<KeyValue> {
    return openKeyValue(this.#link, bucket);
  }

  async readKeyValue(bucket: string): Promise<KeyValueReader> {
    return openKeyValueReader(this.#link, bucket);
  }

  async close(): Promise<void> {
    if (this.#nc.isClosed()) return;
    await Promise.all([...this.#consumers].map((c) => c.stop()));
    // Drain delivers what subscriptions hold and sends what is buffered; it cannot while the
    // server is away, and then closing is all there is to do (nothing buffered would be sent).
    try {
      if (this.#link.up) await this.#nc.drain();
    } catch {
      // closed below
    }
    if (!this.#nc.isClosed()) await this.#nc.close();
  }
}
