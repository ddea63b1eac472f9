/**
 * The connection under the NATS transport, shared by its parts (messaging in nats.ts, durable
 * queues in natsQueues.ts, key-value buckets in natsKv.ts): whether it is up, waiting for it to
 * come back, retrying idempotent operations across a server restart, and errors that name the
 * server and the subject, queue or bucket, never the credentials.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { A2AError } from '../../actors/errors.js';
import { isTimeout, isTransient, reason, redact } from './natsErrors.js';

/**
 * How long an operation waits for a lost connection to come back. The client drops what is
 * published while it is disconnected (its buffer is reset on each reconnect attempt), so nothing
 * is sent before the connection is up again: a request would wait for a reply that cannot come.
 */
export const RECONNECT_WAIT_MS = 10_000;
/**
 * How long a JetStream API request (creating a consumer, reading a stream's state, a KV read or
 * write) waits for its answer. Every one of them is idempotent and retried (see retrying): while
 * a cluster elects a leader a request goes unanswered, and each wait past the election's end
 * delays the run, so it is shorter than the client's 5 s.
 */
export const API_TIMEOUT_MS = 2_500;
export const RETRY_MIN_MS = 100;
export const RETRY_MAX_MS = 1_000;
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

/** The error codes a NATS operation fails with. */
export type NatsFailure = 'AGENT_ERROR' | 'AGENT_TIMEOUT' | 'NOT_FOUND' | 'VALIDATION_ERROR';

/** Waits `ms`, or less when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The backoff before retry number `attempt` (0-based). */
export const backoff = (attempt: number) => Math.min(RETRY_MIN_MS * 2 ** attempt, RETRY_MAX_MS);

/**
 * How long attempt number `attempt` (0-based) of a retried publish waits for the server's ack:
 * short at first, since a publish sent while a replicated stream elects its leader is dropped (it
 * waits the whole timeout for nothing, and the election ends in 4-9 s); a retry carries the same
 * msgId, so an ack that was merely slow costs a duplicate the server drops.
 */
export const attemptTimeout = (attempt: number) => Math.min(1_000 + 500 * attempt, 2_500);

export class NatsLink {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  /** Scopes stream and bucket names. */
  readonly namespace: string;
  readonly #servers: string;
  readonly #secrets: string[];
  /** Where replies come back (`<prefix>.…`), to explain a refused inbox subscription. */
  readonly #inboxPrefix: string;
  /** False between a disconnect and the reconnect (see RECONNECT_WAIT_MS). */
  #up = true;
  /** When the connection last came back (0: never lost). */
  #reconnectedAt = 0;
  readonly #onUp = new Set<() => void>();
  /** Called on each reconnect: pull requests made before it died with the old connection. */
  readonly onReconnect = new Set<() => void>();
  /** The replicas asked for (A2A_NATS_REPLICAS, `replicas`), or undefined: chosen by the cluster's size. */
  readonly #replicas: number | undefined;
  /** Told what the operator should know and nothing refuses: an existing stream with other replicas. */
  readonly warn: (message: string) => void;
  readonly #warned = new Set<string>();

  constructor(
    nc: NatsConnection,
    js: JetStreamClient,
    jsm: JetStreamManager,
    options: { namespace: string; servers: string; secrets: string[]; inboxPrefix: string; replicas?: number; onWarning?: (message: string) => void },
  ) {
    this.nc = nc;
    this.js = js;
    this.jsm = jsm;
    this.namespace = options.namespace;
    this.#servers = options.servers;
    this.#secrets = options.secrets;
    this.#inboxPrefix = options.inboxPrefix;
    this.#replicas = options.replicas;
    const onWarning = options.onWarning ?? (() => undefined);
    this.warn = (message) => {
      if (this.#warned.has(message)) return;
      this.#warned.add(message);
      onWarning(redact(message, this.#secrets));
    };
    void this.#watch();
  }

  /**
   * The servers of the cluster this connection is in, as the server says (its INFO's
   * `connect_urls`: every member's client address, itself included); 1 outside a cluster.
   */
  get clusterSize(): number {
    const info = this.nc.info;
    if (!info?.cluster) return 1;
    return Math.max(1, info.connect_urls?.length ?? 1);
  }

  /** Whether the replicas were asked for (else chosen by the cluster's size, which counts only the servers up now). */
  get replicasAsked(): boolean {
    return this.#replicas !== undefined;
  }

  /** The replicas of a stream of this namespace found existing: what the others get, when none were asked for. */
  #found: number | undefined;

  /**
   * An existing stream of this namespace has `replicas`: unless replicas were asked for, the
   * streams and buckets made after it get as many (a cluster with a node down counts fewer
   * servers than it has, and would otherwise give them fewer replicas than their siblings).
   */
  found(replicas: number): void {
    this.#found = Math.max(this.#found ?? 1, replicas);
  }

  /**
   * How many replicas the streams and buckets this connection creates get: the setting, checked
   * against the cluster's size; else 3 in a cluster of 3 or more, 1 otherwise.
   */
  replicas(where: string): number {
    const size = this.clusterSize;
    if (this.#replicas === undefined) return this.#found ?? (size >= 3 ? 3 : 1);
    if (this.#replicas > size) {
      throw this.fail(
        'VALIDATION_ERROR',
        `replicas ${this.#replicas} (A2A_NATS_REPLICAS) needs a JetStream cluster of at least ${this.#replicas} servers, and ${this.#servers} ${size === 1 ? 'is a single server' : `is a cluster of ${size}`}: set A2A_NATS_REPLICAS to at most ${size}, or leave it unset (${size >= 3 ? 3 : 1} here)`,
        where,
      );
    }
    return this.#replicas;
  }

  async #watch(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === 'disconnect') this.#up = false;
      else if (status.type === 'reconnect' || status.type === 'close') {
        this.#up = status.type === 'reconnect';
        if (this.#up) this.#reconnectedAt = Date.now();
        for (const wake of [...this.#onUp]) wake();
        if (status.type === 'reconnect') for (const refetch of [...this.onReconnect]) refetch();
      }
    }
  }

  get up(): boolean {
    return this.#up;
  }

  get closed(): boolean {
    return this.nc.isClosed();
  }

  /** Just back from a reconnect: JetStream may still be recovering its streams. */
  get recovering(): boolean {
    return Date.now() - this.#reconnectedAt < RECOVERY_GRACE_MS;
  }

  /** Resolves when the connection is up; fails after `timeoutMs`, or at once when it is closed. */
  async ready(what: string, where: string, timeoutMs = RECONNECT_WAIT_MS, signal?: AbortSignal): Promise<void> {
    if (this.nc.isClosed()) throw this.fail('AGENT_ERROR', `cannot ${what}: the connection is closed`, where);
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
    if (this.nc.isClosed()) throw this.fail('AGENT_ERROR', `cannot ${what}: the connection is closed`, where);
    if (!this.#up) throw this.fail('AGENT_TIMEOUT', `cannot ${what}: disconnected, and not reconnected within ${timeoutMs} ms`, where);
  }

  /** The server in use (host:port, no credentials), for messages. */
  get #server(): string {
    try {
      return this.nc.getServer() || this.#servers;
    } catch {
      return this.#servers;
    }
  }

  /** An error naming the operation, the server and `where`, with the server's reason; credentials redacted. */
  fail(code: NatsFailure, what: string, where: string, error?: unknown): A2AError {
    const detail = error === undefined ? '' : `: ${reason(error)}`;
    // The replies of a request come back on `<inbox prefix>.…`: a user whose permissions allow
    // another prefix (server.conf gives each its own) cannot make requests until it uses that one.
    const hint = detail.includes(`Permissions Violation for Subscription to "${this.#inboxPrefix}.`)
      ? ` (replies come back on "${this.#inboxPrefix}.…", which this user may not subscribe to: set A2A_NATS_INBOX_PREFIX to the inbox prefix its permissions allow, if any)`
      : /Permissions Violation for Publish to "[^"]*\b(h-[A-Za-z0-9_-]+|hosts\.[A-Za-z0-9_-]+)\b/.test(detail)
        ? ' (the server gives this NATS user no right to act as this host: with `a2a nats users` each host has its own user, allowed only its own --id; check that A2A_NATS_NKEY or A2A_NATS_USER is this host\'s)'
        : '';
    return new A2AError(code, redact(`${what} (NATS ${this.#server})${detail}${hint}`, this.#secrets), { cause: error, where });
  }

  /**
   * Runs an idempotent operation, again after transient failures (see isTransient), with
   * backoff, for up to TRANSIENT_RETRY_MS; then (or on any other failure) throws its last error.
   * `stillTransient` may look closer at a failure (is the stream really missing?).
   */
  async retrying<T>(what: string, where: string, op: (attempt: number) => Promise<T>, stillTransient?: (error: unknown) => Promise<boolean>): Promise<T> {
    const deadline = Date.now() + TRANSIENT_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      await this.ready(what, where, Math.max(1, Math.min(RECONNECT_WAIT_MS, deadline - Date.now())));
      try {
        return await op(attempt);
      } catch (error) {
        const retry = !this.nc.isClosed() && Date.now() < deadline && isTransient(error) && (stillTransient ? await stillTransient(error).catch(() => true) : true);
        if (!retry) throw error;
        // a timeout has waited already; a quick refusal (no responders, 503) is backed off
        await pause(isTimeout(error) ? RETRY_MIN_MS : backoff(attempt));
      }
    }
  }
}
