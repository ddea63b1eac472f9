/**
 * The wire of remote sessions (remote.ts has the picture): each session's key, the subjects and
 * durable queues of a namespace, and the sending that survives a server restart (enqueueSurely,
 * persist) with the bounded memory of what was seen (Seen) that both ends use to drop replays.
 */
import type { Clock, EventSink, Transport } from '../../machines/ports.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { errorText } from '../../machines/errorText.js';
import { headersFor } from '../observation/tracing.js';
import { Mailbox } from './mailbox.js';

/**
 * A session's key on the wire: session ids are unique within a run (`w-api.2` is w-api's second
 * child, whichever host spawned it), run ids have no dots, so `<runId>.<sessionId>` is unique
 * across runs, hosts and processes. Every subject, consumer, message id and key of a remote
 * session is made from it.
 */
export function wireId(spec: Pick<SessionSpec, 'id' | 'correlation'>): string {
  return `${spec.correlation.runId}.${spec.id}`;
}

/**
 * The same as one token (consumer names allow neither dots nor most other characters). The
 * escape is one-to-one ("_" → "__", "." → "_d"), so two sessions never share a consumer.
 */
export function wireToken(spec: Pick<SessionSpec, 'id' | 'correlation'>): string {
  return wireId(spec).replace(/_/g, '__').replace(/\./g, '_d');
}

/** The subjects and queues of one namespace. */
export function subjects(ns: string) {
  const root = `a2a.${ns}`;
  return {
    spawn: (agentName: string) => `${root}.spawn.${agentName}`,
    /** What a session reports to its owner in box `box`, published by the host that runs it (`wire`: its wireId). */
    up: (box: string, hostId: string, wire: string) => Mailbox.subject(ns, 'up', box, wire, hostId),
    /** The host that published a report (the token after the box), or null when the subject is not one. */
    hostOf: (subject: string): string | null => {
      const where = Mailbox.parse(ns, subject);
      return where?.kind === 'up' ? where.host || null : null;
    },
    /** What an owner sends its session, held by the process of box `box`. */
    down: (box: string, wire: string) => Mailbox.subject(ns, 'down', box, wire),
    heartbeat: (hostId: string) => `${root}.hosts.${hostId}.heartbeat`,
    heartbeats: `${root}.hosts.*.heartbeat`,
    /** A host's seed 004 registration envelope, once at start. */
    registration: (hostId: string) => `${root}.hosts.${hostId}.registration`,
    /** Run events for watchers (core: at most once); the orchestrator's own and hosts' events outside any run. */
    events: (runId: string, type: string) => `${root}.events.${runId}.${type}`,
    allEvents: `${root}.events.>`,
    /**
     * A host's events of a run, to the run's box (durable: the run writes them to its log, then
     * acknowledges them); `hostEventsOf` a run's wherever its box, `hostEventsIn` a box's, whichever run.
     */
    hostEvents: (box: string, runId: string, type: string) => `${root}.hostevents.${box}.${runId}.${type}`,
    hostEventsOf: (runId: string) => `${root}.hostevents.*.${runId}.>`,
    hostEventsIn: (box: string) => `${root}.hostevents.${box}.>`,
    /** The run a host event's subject names (null when it is not one). */
    hostEventRun: (subject: string): string | null => {
      const tokens = subject.split('.');
      return tokens.length >= 6 && `${tokens[0]}.${tokens[1]}` === root && tokens[2] === 'hostevents' ? tokens[4]! : null;
    },
    allHostEvents: `${root}.hostevents.>`,
    /** Durable queues (the NATS transport scopes their streams by namespace: `a2a_<ns>_spawn` …). */
    queues: {
      spawn: { name: 'spawn', subjects: [`${root}.spawn.>`] },
      up: { name: 'up', subjects: [`${root}.up.>`] },
      down: { name: 'down', subjects: [`${root}.down.>`] },
      hostEvents: { name: 'hostevents', subjects: [`${root}.hostevents.>`] },
    },
    /** A run's pause (`a2a pause`): its hosts' agents wait before their next model call. */
    runPause: (runId: string) => `${root}.runs.${runId}.pause`,
    runPauses: `${root}.runs.*.pause`,
    /**
     * A run's control subject (request/reply), answered by the run's process: `user` is who asks,
     * a NATS user's name the server lets only that user publish under (`a2a nats users --studio`).
     */
    control: (runId: string, user: string) => `${root}.control.${runId}.${user}`,
    controlOf: (runId: string) => `${root}.control.${runId}.*`,
    /** Who asked on a control subject (its last token), or null when the subject is not one of `runId`'s. */
    controlUser: (subject: string, runId: string): string | null => {
      const prefix = `${root}.control.${runId}.`;
      const user = subject.startsWith(prefix) ? subject.slice(prefix.length) : '';
      return user && !user.includes('.') ? user : null;
    },
    /** Key-value buckets (`a2a_<ns>_snapshots` …); `pauses`: each paused run's pause, for hosts that start later. */
    buckets: { snapshots: 'snapshots', hosts: 'hosts', pauses: 'pauses', boxes: 'boxes' },
  };
}

export type Subjects = ReturnType<typeof subjects>;

/** Creates the durable queues of a namespace (idempotent). */
export async function ensureQueues(transport: Transport, ns: string): Promise<void> {
  const s = subjects(ns);
  // together: on a cluster each replicated stream takes a round of its meta group
  // The dedup windows: a spawn sent again by a resumed owner is dropped by the queue for 10 minutes
  // (host.ts, FINISHED_KEPT_MS); the mail and the host events need only cover a send retried after
  // a lost confirmation (seconds; later copies are dropped by their readers, by message id), and a
  // server holds every id of its window on each node (with 10-minute windows, 15 of the 39 MB of a
  // node's live heap 6 minutes into the soak): JetStream's default, 2 minutes.
  await Promise.all([
    transport.ensureQueue(s.queues.spawn.name, { subjects: s.queues.spawn.subjects, workQueue: true, duplicateWindowMs: 600_000 }),
    // up and down: each process reads its own box (actors/distribution/mailbox.ts), removed once acknowledged;
    // kept a week at most (a run never resumed, a host gone for good)
    transport.ensureQueue(s.queues.up.name, { subjects: s.queues.up.subjects, workQueue: true, maxAgeMs: MAIL_KEPT_MS, duplicateWindowMs: MAIL_WINDOW_MS }),
    transport.ensureQueue(s.queues.down.name, { subjects: s.queues.down.subjects, workQueue: true, maxAgeMs: MAIL_KEPT_MS, duplicateWindowMs: MAIL_WINDOW_MS }),
    // hosts' run events: kept until the run has them in its log (a day at most: a run never resumed)
    transport.ensureQueue(s.queues.hostEvents.name, { subjects: s.queues.hostEvents.subjects, workQueue: true, maxAgeMs: 86_400_000, duplicateWindowMs: MAIL_WINDOW_MS }),
  ]);
}

/** The dedup window of the mail and host-event queues (see ensureQueues). */
const MAIL_WINDOW_MS = 120_000;

/** How long a report or a command waits in its queue for a reader (a week: a run never resumed). */
const MAIL_KEPT_MS = 7 * 86_400_000;

export interface RemoteDeps {
  transport: Transport;
  ns: string;
  /** This process (an orchestrator run, or a host): recorded with the spawns it makes. */
  process: string;
  /** This process's box (a run's `rs<n>`, `h-<hostId>`): where its stand-ins' reports come. Default `h-<process>`. */
  box?: string;
  /**
   * A run's process: its box, written into the correlation of each spawn it makes (hosts send the
   * run's events there, and sub-tasks inherit it). Hosts leave it out: their spawns' specs have it.
   */
  runBox?: string;
  /**
   * The session id of the tree running here that a new remote child's owner runs in (a host): the
   * child's reports go to whichever host holds that tree then. Absent: the owner stays in this
   * process (a run's).
   */
  ownerRoot?: (spec: SessionSpec) => string | undefined;
  clock: Clock;
  events: EventSink;
  /** How long a spawn may wait for a host before a warning says none serves its agent type. */
  startWarningMs?: number;
  /**
   * Acknowledgements of what reached an owner wait for its next snapshot (a restore from it must
   * see them again): `owner` is the owning session's id (`orchestrator` for workers). Default: at once.
   */
  deferAck?: (owner: string, ack: () => Promise<void>) => void;
  /**
   * Which host holds a session now (the `host` of its record in the snapshots bucket, claimed by
   * compare-and-set), so that a report from any other host is refused. Without it, a report is
   * taken from the host that said it started the session (or restored it, after a failover).
   */
  holderOf?: (wire: string) => Promise<string | null>;
}

/**
 * Enqueues until the queue confirms it: a retry with the same msgId is dropped as a duplicate, so
 * nothing is lost to a server restart and nothing arrives twice. Gives up on what retrying cannot
 * mend (see worthRetrying) or once its sender has `stopped()`. `onRetry` hears each failure.
 */
export function enqueueSurely(
  transport: Transport,
  subject: string,
  data: unknown,
  msgId: string,
  onRetry: (error: unknown) => void,
  stopped: () => boolean = () => false,
  headers?: Record<string, string>,
): Promise<void> {
  return persist(() => transport.enqueue(subject, data, headers ? { msgId, headers } : { msgId }).then(() => undefined), stopped, onRetry);
}

/** The trace headers of a message about a session (its span's context), when tracing is on. */
export const traceOf = (spec: Pick<SessionSpec, 'id' | 'correlation'>) => headersFor(spec.correlation.runId, spec.id);

/**
 * A failure that may go away (the server restarting, a lost confirmation): retried. Bad input,
 * a missing queue, an oversized payload or a closed transport will not: they are reported.
 */
function worthRetrying(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'VALIDATION_ERROR' || code === 'NOT_FOUND' || code === 'CONFIGURATION_INVALID') return false;
  return !/closed|max_payload|payload too large|not JSON-serializable/i.test(errorText(error));
}

/**
 * Runs `op` again after failures worth retrying, with backoff (200 ms doubling to 2 s: a cluster's
 * election ends at an unknown moment, and every wait past it delays the run), until it succeeds;
 * throws what is not worth retrying, or what fails once `stopped()`.
 */
export async function persist(op: () => Promise<void>, stopped: () => boolean, onRetry: (error: unknown) => void): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await op();
      return;
    } catch (error) {
      if (!worthRetrying(error) || stopped()) throw error;
      onRetry(error);
      await new Promise((r) => setTimeout(r, Math.min(200 * 2 ** attempt, 2_000)));
    }
  }
}

let downCounter = 0;
export const downId = (sessionId: string) => `${sessionId}:down:${Date.now().toString(36)}:${process.pid}:${(downCounter++).toString(36)}`;

/** How often a result refused for its sender's claim is delivered again before it is dropped. */
export const REFUSED_RESULT_DELIVERIES = 5;

/** How many report keys a stand-in (and down message ids a link) remembers, to drop replays. */
const SEEN_KEPT = 512;

/** A bounded memory of keys: the newest SEEN_KEPT, persisted with the actor. */
export class Seen {
  readonly #set: Set<string>;
  constructor(keys: string[] = []) {
    this.#set = new Set(keys.slice(-SEEN_KEPT));
  }
  /** True the first time a key is offered. */
  add(key: string): boolean {
    if (this.#set.has(key)) return false;
    this.#set.add(key);
    if (this.#set.size > SEEN_KEPT) this.#set.delete(this.#set.values().next().value as string);
    return true;
  }
  list(): string[] {
    return [...this.#set];
  }
}
