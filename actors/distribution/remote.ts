/**
 * Sessions in other actor systems. A supervisor places a child locally or remotely; a remote
 * child is, in the owner's system, a `remoteSession` actor that stands for it:
 *
 *   owner process (box r-<run> or h-<host>)          host process (box h-<host>)
 *   supervisor ── remoteSession(st-3) ──spawn──▶ a2a.<ns>.spawn.<agent> ──▶ host ── parentLink ── session st-3
 *                      ▲                                                                 │
 *                      └── a2a.<ns>.up.<owner box>.<host>.<run>.st-3 (updates, requests, result) ◀┘
 *                      └── a2a.<ns>.down.<host box>.<run>.st-3 (cancel, messages, decisions) ──▶
 *
 * To the supervisor a remote child is an ordinary child actor: what it sends its parent arrives as
 * if the session had sent it, its result completes the actor (so the supervisor's delivery rule
 * holds: exactly one result per child), and what the supervisor sends it goes down to the session.
 * Every channel is a durable queue (JetStream over NATS): a message survives a restart of either
 * side or of the server, and is acknowledged once handed over. Each process reads its own box of
 * each queue through one consumer (actors/distribution/mailbox.ts), and each message names the box of the
 * process that holds its addressee now: the host that holds a session (its record in the snapshots
 * bucket), the host that holds the owner's tree, or the run's process. Every message is validated
 * on arrival; an invalid one is reported and dropped without changing anything.
 */
import { createActor, type ActorLogic, type ActorScope, type AnyActorRef, type Snapshot } from 'xstate';
import type { Clock, DurableConsumer, DurableMessage, EventSink, Transport } from '../../machines/ports.js';
import { DownMessage, UpMessage, type RemoteSpawn, type SessionCommand, type SessionSpec, type SubTaskResult, type TaskUpdate, type PermissionRequest } from '../../machines/protocol/index.js';
import { correlationOf } from '../observation/events.js';
import { walkActors } from '../durability/checkpoint.js';
import { sessionStateName, type SessionContext } from '../../machines/session.js';
import { inlineIssues } from '../errors.js';
import { parentOf, relay, stopped } from '../xstateInternals.js';
import { errorText } from '../../machines/errorText.js';
import { adopt, headersFor } from '../observation/tracing.js';
import { hostBox, Mailbox, mailboxOf } from './mailbox.js';

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
const traceOf = (spec: Pick<SessionSpec, 'id' | 'correlation'>) => headersFor(spec.correlation.runId, spec.id);

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
async function persist(op: () => Promise<void>, stopped: () => boolean, onRetry: (error: unknown) => void): Promise<void> {
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
const downId = (sessionId: string) => `${sessionId}:down:${Date.now().toString(36)}:${process.pid}:${(downCounter++).toString(36)}`;

/** How often a result refused for its sender's claim is delivered again before it is dropped. */
const REFUSED_RESULT_DELIVERIES = 5;

/** How many report keys a stand-in (and down message ids a link) remembers, to drop replays. */
const SEEN_KEPT = 512;

/** A bounded memory of keys: the newest SEEN_KEPT, persisted with the actor. */
class Seen {
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

// ---------------------------------------------------------------------------------------------
// Owner side

type RemoteEvent =
  | { type: 'REMOTE_DONE'; output: SubTaskResult }
  | { type: 'REMOTE_ERROR'; error: string }
  | { type: 'xstate.stop' }
  | { type: string; [key: string]: unknown };

interface RemoteState {
  spec: SessionSpec;
  /** The host that holds the session (the only one whose reports are taken). */
  host: string | null;
  spawned: boolean;
  /** Takes it out of its process's box (see attach). */
  off: (() => void) | null;
  /** What its parent sent it before any host held it: sent once one does (kept in its snapshot). */
  unsent: DownMessage[];
  /** Commands go down one after the other, in the order they were sent. */
  sending: Promise<void>;
  stopped: boolean;
  /** The "no host has taken it" warning, cleared once placed or ended. */
  warning: unknown;
  /** Reports already handed over (updates, permission requests): a replay is dropped. */
  seen: Seen;
  /** Reports are handled one after the other, in the order they came. */
  chain: Promise<void>;
}

type RemoteSnapshot = Snapshot<SubTaskResult> & { remote: RemoteState; input: { spec: SessionSpec } };

interface PersistedRemote {
  status: 'active' | 'done' | 'error';
  output: SubTaskResult | undefined;
  error: unknown;
  spec: SessionSpec;
  host: string | null;
  spawned: boolean;
  seen?: string[];
  unsent?: DownMessage[];
}


/**
 * Why a report must not reach the owner although it parsed: it is about another session, another
 * run, or comes from below a session that did not pass it on. Null when it may.
 */
function misaddressed(spec: SessionSpec, event: { type: 'SUBTASK_UPDATE'; update: TaskUpdate } | { type: 'PERMISSION_REQUEST'; request: PermissionRequest }): string | null {
  if (event.type === 'SUBTASK_UPDATE') {
    const u = event.update;
    if (u.subTaskId !== spec.id) return `update.subTaskId is "${u.subTaskId}", not "${spec.id}"`;
    if (u.parentId !== spec.owner.ownerId) return `update.parentId is "${u.parentId}", not its owner "${spec.owner.ownerId}"`;
    return null;
  }
  const r = event.request;
  if (r.via.at(-1) !== spec.id) return `request.via must end with "${spec.id}" (got ${JSON.stringify(r.via.slice(-3))})`;
  if (r.requesterId !== spec.id && !r.requesterId.startsWith(`${spec.id}.`)) return `request.requesterId "${r.requesterId}" is neither ${spec.id} nor one of its sub-tasks`;
  if (r.correlation.runId !== spec.correlation.runId) return `request.correlation.runId is "${r.correlation.runId}", not "${spec.correlation.runId}"`;
  return null;
}

/** The actor standing, in the owner's system, for a session that runs on a host. */
export function createRemoteSessionLogic(deps: RemoteDeps): ActorLogic<RemoteSnapshot, RemoteEvent, { spec: SessionSpec }> {
  const s = subjects(deps.ns);
  const warn = (spec: SessionSpec, message: string) => deps.events.emit({ type: 'warning', ...correlationOf(spec), data: { message } });

  function clearWarning(state: RemoteState): void {
    if (state.warning === null) return;
    deps.clock.clearTimeout(state.warning);
    state.warning = null;
  }

  const box = deps.box ?? hostBox(deps.process);
  const mailbox = () => mailboxOf(deps.transport, deps.ns, box);

  /**
   * It takes nothing more. `over` (its result arrived): what still comes for it is dropped by the
   * box; stopped with its process (a run shutting down, a tree dropped here) it is only taken out,
   * so that what comes meanwhile stays for the copy that goes on (a resumed run, another host).
   */
  function end(state: RemoteState, over: boolean): void {
    state.stopped = true;
    clearWarning(state);
    state.off?.();
    state.off = null;
    if (over) mailbox().ended('up', wireId(state.spec));
  }

  /** Its reports come to this process's box (one consumer for every stand-in of the process). */
  async function attach(state: RemoteState, self: AnyActorRef): Promise<void> {
    const off = await mailbox().register('up', wireId(state.spec), (message) => {
      // one at a time, in order: checking a host's claim may wait for the snapshots bucket
      const handled = state.chain.then(() => handleUp(state, self, message));
      state.chain = handled.catch((error: unknown) => warn(state.spec, `could not handle a report from the host of ${state.spec.id}: ${String(error)}`));
      return handled;
    });
    if (state.stopped) off();
    else state.off = off;
  }

  /**
   * Sends a command to the session, in the box of the host that holds it now (its record, read at
   * send time: a session taken over by another host gets what is sent after, and the host it left
   * forwards what was sent before); kept until a host holds it.
   */
  function sendDown(state: RemoteState, message: DownMessage): void {
    const wire = wireId(state.spec);
    state.sending = state.sending.then(async () => {
      const holder = (deps.holderOf ? await deps.holderOf(wire).catch(() => null) : null) ?? state.host;
      if (!holder) {
        state.unsent.push(message);
        return;
      }
      await enqueueSurely(deps.transport, s.down(hostBox(holder), wire), message, message.id, (error) => warn(state.spec, `retrying ${message.event.type} to ${state.spec.id}: ${String(error)}`), () => state.stopped, traceOf(state.spec)).catch((error: unknown) => {
        warn(state.spec, `could not send ${message.event.type} to ${state.spec.id}: ${errorText(error)}`);
      });
    });
  }

  /**
   * Whether `sender` holds the session now (the snapshots bucket says so; without it, a started or
   * restored report). A bucket that cannot be read throws: the report is then left unacknowledged
   * and comes back, rather than being refused for a passing outage.
   */
  async function holds(state: RemoteState, sender: string, up: UpMessage): Promise<boolean> {
    if (deps.holderOf) {
      const holder = await deps.holderOf(wireId(state.spec));
      // no record at all: the session finished and its record was removed (hosts keep a finished
      // one for minutes, not for ever), so its last reports reach an owner that comes late to them
      // (resumed after a while); nothing says who held it, and they are taken
      if (holder === null) return true;
      return holder === sender;
    }
    return up.kind === 'started' && (state.host === null || up.restored);
  }

  async function handleUp(state: RemoteState, self: AnyActorRef, message: DurableMessage): Promise<void> {
    const done = async () => {
      if (deps.deferAck) deps.deferAck(wireId({ id: state.spec.owner.ownerId, correlation: state.spec.correlation }), () => message.ack());
      else await message.ack();
    };
    const refuse = async (why: string, retry = false) => {
      warn(state.spec, `refused a report for ${state.spec.id}: ${why}`);
      // a result refused because the bucket did not say its sender holds the session may be right
      // a moment later (a lagging replica, a claim not yet visible): it comes back a few times
      if (retry && message.deliveries < REFUSED_RESULT_DELIVERIES) await message.nak(1_000);
      else await message.ack();
    };
    const parsed = UpMessage.safeParse(message.data);
    if (!parsed.success) return refuse(`invalid message: ${inlineIssues(parsed.error.issues)}`);
    const up = parsed.data;
    const sender = s.hostOf(message.subject);
    if (!sender) return refuse(`it came on ${message.subject}, which names no host`);
    if (up.kind === 'started' && up.host !== sender) return refuse(`it says host "${up.host}" started it, but host "${sender}" sent it`);
    if (state.stopped) return done();
    if (state.host !== sender) {
      if (!(await holds(state, sender, up))) {
        return refuse(`host "${sender}" does not hold it${state.host ? ` (host "${state.host}" does)` : ''}`, up.kind === 'done' || up.kind === 'error');
      }
      state.host = sender;
      clearWarning(state);
      // what its parent sent before a host held it goes there now, in order
      for (const message of state.unsent.splice(0)) sendDown(state, message);
      deps.events.emit({ type: 'subtask.placed', ...correlationOf(state.spec), data: { host: sender, restored: up.kind === 'started' ? up.restored : true } });
    }
    const parent = parentOf(self);
    switch (up.kind) {
      case 'started':
        break; // a replay from the holder: nothing new
      case 'event': {
        const event = up.event;
        const wrong = misaddressed(state.spec, event);
        if (wrong) return refuse(wrong);
        const key = event.type === 'SUBTASK_UPDATE' ? `u:${event.update.id}` : `p:${event.request.id}:${event.request.via.length}`;
        if (!state.seen.add(key)) break; // a replay
        if (parent) relay(self, parent, event);
        break;
      }
      case 'done':
        if (up.output.taskId !== state.spec.id) return refuse(`output.taskId is "${up.output.taskId}", not "${state.spec.id}"`);
        self.send({ type: 'REMOTE_DONE', output: up.output });
        break;
      case 'error':
        self.send({ type: 'REMOTE_ERROR', error: up.error });
        break;
    }
    return done();
  }

  return {
    config: 'a2a.remoteSession',
    getInitialSnapshot: (_scope, input) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      input,
      remote: { spec: input.spec, host: null, spawned: false, off: null, unsent: [], sending: Promise.resolve(), stopped: false, warning: null, seen: new Seen(), chain: Promise.resolve() },
    }),
    transition: (snapshot, event) => {
      const state = snapshot.remote;
      if (snapshot.status !== 'active') return snapshot;
      switch (event.type) {
        case 'REMOTE_DONE':
          end(state, true);
          return { ...snapshot, status: 'done', output: (event as { output: SubTaskResult }).output };
        case 'REMOTE_ERROR':
          end(state, true);
          return { ...snapshot, status: 'error', error: new Error((event as { error: string }).error) };
        case 'xstate.stop':
          end(state, false);
          return stopped(snapshot);
        default: {
          // a stand-in of a copy being dropped (detachTree) sends nothing: the copy elsewhere owns the child
          if (state.stopped) return snapshot;
          // what a parent sends its child goes down to the session, wherever it runs
          const down = DownMessage.safeParse({ id: downId(wireId(state.spec)), event });
          if (!down.success) return snapshot;
          sendDown(state, down.data);
          return snapshot;
        }
      }
    },
    start: (snapshot, scope) => {
      const state = snapshot.remote;
      if (snapshot.status !== 'active') return;
      const self = scope.self;
      void persist(
        () => attach(state, self),
        () => state.stopped,
        (error) => warn(state.spec, `retrying to receive from ${state.spec.id}: ${String(error)}`),
      ).catch((error: unknown) => self.send({ type: 'REMOTE_ERROR', error: `cannot receive from ${state.spec.id}: ${String(error)}` }));
      if (!state.spawned) {
        state.spawned = true;
        const root = deps.ownerRoot?.(state.spec);
        const spec = deps.runBox && !state.spec.correlation.runBox ? { ...state.spec, correlation: { ...state.spec.correlation, runBox: deps.runBox } } : state.spec;
        const spawn: RemoteSpawn = { spec, ownerProcess: deps.process, owner: { box, ...(root !== undefined ? { root } : {}) }, requestedAt: deps.clock.now() };
        enqueueSurely(
          deps.transport,
          s.spawn(state.spec.agent.agentName),
          spawn,
          `${wireId(state.spec)}:spawn`,
          (error) => warn(state.spec, `retrying the spawn request of ${state.spec.id}: ${String(error)}`),
          () => state.stopped,
          traceOf(state.spec),
        )
          .catch((error: unknown) => self.send({ type: 'REMOTE_ERROR', error: `cannot request a host for ${state.spec.id}: ${String(error)}` }));
        const waitMs = deps.startWarningMs ?? 30_000;
        state.warning = deps.clock.setTimeout(() => {
          state.warning = null;
          if (!state.host && !state.stopped) {
            warn(state.spec, `no host has taken ${state.spec.id} (@${state.spec.agent.agentName}) for ${waitMs} ms: start a host serving ${state.spec.agent.agentName} (a2a host --agents ${state.spec.agent.agentName})`);
          }
        }, waitMs);
      }
    },
    getPersistedSnapshot: (snapshot): Snapshot<unknown> => {
      const r = snapshot.remote;
      const persisted: PersistedRemote = {
        status: snapshot.status as PersistedRemote['status'],
        output: snapshot.output,
        error: snapshot.error,
        spec: r.spec,
        host: r.host,
        spawned: r.spawned,
        seen: r.seen.list(),
        ...(r.unsent.length > 0 ? { unsent: r.unsent } : {}),
      };
      return persisted as unknown as Snapshot<unknown>;
    },
    restoreSnapshot: (persisted) => {
      const p = persisted as unknown as PersistedRemote;
      return {
        status: p.status,
        output: p.output,
        error: p.error,
        input: { spec: p.spec },
        remote: { spec: p.spec, host: p.host, spawned: p.spawned, off: null, unsent: p.unsent ?? [], sending: Promise.resolve(), stopped: false, warning: null, seen: new Seen(p.seen), chain: Promise.resolve() },
      } as RemoteSnapshot;
    },
  };
}

/** True when an actor is a remote session stand-in (its logic is this module's). */
export function isRemote(ref: AnyActorRef): boolean {
  return (ref as unknown as { logic?: { config?: unknown } }).logic?.config === 'a2a.remoteSession';
}

// ---------------------------------------------------------------------------------------------
// Host side

type LinkEvent =
  | { type: 'SUBTASK_UPDATE'; update: TaskUpdate }
  | { type: 'PERMISSION_REQUEST'; request: PermissionRequest }
  | { type: 'DOWN'; event: SessionCommand }
  | { type: 'xstate.stop' }
  | { type: `xstate.done.actor.${string}`; output: SubTaskResult }
  | { type: `xstate.error.actor.${string}`; error: unknown };

/** Where a remote session's reports go: its owner's box, or the host that holds the owner's tree now. */
export type OwnerAddress = RemoteSpawn['owner'];

/**
 * The box a session's reports go to now: the host that holds its owner's tree (read at send time:
 * after a failover, the host that took the tree over), else the owner's own box.
 */
export async function ownerBox(owner: OwnerAddress, runId: string, holderOf?: (wire: string) => Promise<string | null>): Promise<string> {
  if (owner.root !== undefined && holderOf) {
    const holder = await holderOf(`${runId}.${owner.root}`).catch(() => null);
    if (holder) return hostBox(holder);
  }
  return owner.box;
}

interface LinkState {
  spec: SessionSpec;
  owner: OwnerAddress;
  session: AnyActorRef;
  /** Takes it out of its host's box (see attach). */
  off: (() => void) | null;
  /** Publishing up is sequential: updates arrive before the result. */
  chain: Promise<unknown>;
  restored: boolean;
  finished: boolean;
  /** Stopped by its host (dropped, drained, shut down): it sends and takes nothing more. */
  stopped: boolean;
  /** Ids of the down messages handed to the session: a replay is dropped. */
  seen: Seen;
}

type LinkSnapshot = Snapshot<SubTaskResult> & { link: LinkState };

interface PersistedLink {
  status: 'active';
  output: undefined;
  error: undefined;
  spec: SessionSpec;
  owner?: OwnerAddress;
  session: Snapshot<unknown>;
  seen?: string[];
}

export interface LinkDeps extends RemoteDeps {
  hostId: string;
  sessionLogic(role: SessionSpec['role']): import('xstate').AnyActorLogic;
  /**
   * Why a command that parsed cannot be given to the session as it is now (an agent type this
   * host does not have, a decision on a request it never made, a session already finished);
   * null when it can. The command is then dropped with a warning: nothing changes.
   */
  refuse?: (session: AnyActorRef, command: SessionCommand) => string | null;
  /**
   * Acknowledgements of down messages wait for the next snapshot of the session (a restore from
   * it must see them again); default: at once.
   */
  ackAfterSnapshot?: (sessionId: string, ack: () => Promise<void>) => void;
  /** The session ended and its result is stored in its owner's queue. */
  onFinished?: (sessionId: string) => void;
  /** Resolves once the events emitted so far are stored (a host's event sink). */
  beforeResult?: () => Promise<void>;
}

/**
 * The root of a session's actor system on a host: it stands for the session's owner. What the
 * session sends its parent goes up; what the owner sends comes down to it; its result goes up and
 * ends the link.
 */
export function createParentLinkLogic(deps: LinkDeps): ActorLogic<LinkSnapshot, LinkEvent, { spec: SessionSpec; owner?: OwnerAddress }> {
  const s = subjects(deps.ns);
  const mailbox = () => mailboxOf(deps.transport, deps.ns, deps.box ?? hostBox(deps.hostId));
  const warn = (state: LinkState, message: string) => deps.events.emit({ type: 'warning', ...correlationOf(state.spec), data: { message } });
  const up = (state: LinkState, message: UpMessage, msgId: string) => {
    const send = async (m: UpMessage, id: string) =>
      enqueueSurely(
        deps.transport,
        s.up(await ownerBox(state.owner, state.spec.correlation.runId, deps.holderOf), deps.hostId, wireId(state.spec)),
        m,
        // per host: a host that takes a session over sends what the one before it sent (its result
        // too, which the owner refused from that one); the same id would be dropped as a duplicate
        `${state.spec.correlation.runId}.${id}@${deps.hostId}`,
        (error) => warn(state, `retrying a report to the owner of ${state.spec.id}: ${String(error)}`),
        () => state.stopped,
        traceOf(state.spec),
      );
    state.chain = state.chain
      // what the session's host said about it (its events) is stored before its result leaves:
      // an owner that has the result can then wait for those events and find them all
      .then(() => (message.kind === 'done' || message.kind === 'error' ? deps.beforeResult?.() : undefined))
      .then(() => send(message, msgId))
      .catch(async (error: unknown) => {
        warn(state, `could not report to the owner of ${state.spec.id}: ${String(error)}`);
        // a result that cannot be sent (too large, say) must not leave its owner waiting for ever
        if (message.kind === 'done' && !state.stopped) {
          await send({ kind: 'error', error: `the result of ${state.spec.id} could not be sent: ${errorText(error)}` }, `${state.spec.id}:error`).catch(() => undefined);
        }
      });
    return state.chain;
  };

  function createSession(spec: SessionSpec, scope: ActorScope<LinkSnapshot, LinkEvent>, snapshot?: Snapshot<unknown>): AnyActorRef {
    return createActorFor(deps.sessionLogic(spec.role), spec, scope.self, snapshot);
  }

  async function onDown(state: LinkState, self: AnyActorRef, message: DurableMessage): Promise<void> {
    const acked = async () => {
      if (deps.ackAfterSnapshot) deps.ackAfterSnapshot(wireId(state.spec), () => message.ack());
      else await message.ack();
    };
    // the span of the session, when this host does not know it yet (a session taken over)
    adopt(state.spec.correlation.runId, state.spec.id, message.headers);
    const parsed = DownMessage.safeParse(message.data);
    if (!parsed.success) {
      warn(state, `dropped an invalid message for ${state.spec.id}: ${inlineIssues(parsed.error.issues)}`);
      await message.ack();
      return;
    }
    const { id, event } = parsed.data;
    if (state.finished || state.stopped) return acked();
    if (!state.seen.add(id)) {
      // acknowledged like the first delivery, once a snapshot holds it: a redelivery of one whose
      // snapshot has not been written yet must not be acknowledged before it is safe
      warn(state, `dropped a replay of message ${id} (${event.type}) for ${state.spec.id}`);
      return acked();
    }
    const refused = (state.session.getSnapshot() as Snapshot<unknown>).status !== 'active' ? 'it has finished' : (deps.refuse?.(state.session, event) ?? null);
    if (refused) {
      warn(state, `dropped ${event.type} for ${state.spec.id}: ${refused}`);
      return acked();
    }
    self.send({ type: 'DOWN', event });
    return acked();
  }

  /**
   * Its commands come to its host's box (one consumer for every session of the host), acknowledged
   * after the next snapshot; a dead host's box is read by the hosts that take its sessions over.
   */
  async function attach(state: LinkState, self: AnyActorRef): Promise<void> {
    const off = await mailbox().register('down', wireId(state.spec), (message) => onDown(state, self, message));
    if (state.finished || state.stopped) off();
    else state.off = off;
  }

  /** It takes no more commands: what still comes is dropped (acknowledged) by its host's box. */
  function detach(state: LinkState): void {
    state.off?.();
    state.off = null;
    mailbox().ended('down', wireId(state.spec));
  }

  const fresh = (spec: SessionSpec, owner: OwnerAddress, session: AnyActorRef, restored: boolean, seen: string[] = []): LinkState => ({
    spec,
    owner,
    session,
    off: null,
    chain: Promise.resolve(),
    restored,
    finished: false,
    stopped: false,
    seen: new Seen(seen),
  });

  return {
    config: 'a2a.parentLink',
    getInitialSnapshot: (scope, input) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      link: fresh(input.spec, input.owner ?? { box: hostBox('unknown') }, createSession(input.spec, scope), false),
    }),
    transition: (snapshot, event, scope) => {
      const state = snapshot.link;
      if (snapshot.status !== 'active') return snapshot;
      if (event.type === 'SUBTASK_UPDATE') {
        void up(state, { kind: 'event', event: { type: 'SUBTASK_UPDATE', update: event.update } }, `${event.update.id}:up`);
      } else if (event.type === 'PERMISSION_REQUEST') {
        void up(state, { kind: 'event', event: { type: 'PERMISSION_REQUEST', request: event.request } }, `perm:${event.request.id}:${event.request.via.join('>')}`);
      } else if (event.type === 'DOWN') {
        relay(scope.self, state.session, event.event);
      } else if (event.type.startsWith('xstate.done.actor.')) {
        state.finished = true;
        const output = (event as { output: SubTaskResult }).output;
        void up(state, { kind: 'done', output }, `${state.spec.id}:done`).then(() => {
          detach(state);
          deps.onFinished?.(wireId(state.spec));
        });
        return { ...snapshot, status: 'done', output };
      } else if (event.type.startsWith('xstate.error.actor.')) {
        state.finished = true;
        const error = (event as { error: unknown }).error;
        void up(state, { kind: 'error', error: errorText(error) }, `${state.spec.id}:error`).then(() => {
          detach(state);
          deps.onFinished?.(wireId(state.spec));
        });
        return { ...snapshot, status: 'done', output: { taskId: state.spec.id, status: 'failed', output: '', error: String(error), fallback: true } };
      } else if (event.type === 'xstate.stop') {
        state.stopped = true;
        // not ended for its box: a copy dropped here may be taken over by another host, whose box
        // gets what is sent after; what comes here meanwhile is forwarded (the host's stray policy)
        state.off?.();
        state.off = null;
        // the session is this link's own actor (not one XState stops with it): a copy dropped
        // because another host holds the session now must not go on calling models and tools,
        // and must not cancel, settle or report anything on its way out (detachTree)
        if ((state.session.getSnapshot() as Snapshot<unknown>).status === 'active') {
          detachTree(state.session);
          scope.stopChild(state.session);
        }
        return stopped(snapshot);
      }
      return snapshot;
    },
    start: (snapshot, scope) => {
      const state = snapshot.link;
      state.session.start();
      // the step it was in when the snapshot was taken is lost with the old process: ask again
      if (state.restored && (state.session.getSnapshot() as Snapshot<unknown>).status === 'active') state.session.send({ type: 'RESTORED' });
      void up(state, { kind: 'started', host: deps.hostId, restored: state.restored }, `${state.spec.id}:started:${deps.hostId}:${deps.clock.now()}`);
      // restored from a snapshot taken after it had ended (its host finished it, then was taken for
      // dead): XState reports no end for an actor restored ended, so its result is sent from here
      const ended = state.session.getSnapshot() as Snapshot<unknown> & { output?: SubTaskResult; error?: unknown };
      if (ended.status === 'done') scope.self.send({ type: `xstate.done.actor.${state.spec.id}`, output: ended.output! });
      else if (ended.status === 'error') scope.self.send({ type: `xstate.error.actor.${state.spec.id}`, error: ended.error });
      void persist(
        () => attach(state, scope.self),
        () => state.finished || state.stopped,
        (error) => warn(state, `retrying to receive messages for ${state.spec.id}: ${String(error)}`),
      ).catch((error: unknown) => {
        warn(state, `cannot receive messages for ${state.spec.id}: ${String(error)}`);
      });
    },
    getPersistedSnapshot: (snapshot): Snapshot<unknown> => {
      const persisted: PersistedLink = {
        status: 'active',
        output: undefined,
        error: undefined,
        spec: snapshot.link.spec,
        owner: snapshot.link.owner,
        session: snapshot.link.session.getPersistedSnapshot() as Snapshot<unknown>,
        seen: snapshot.link.seen.list(),
      };
      return persisted as unknown as Snapshot<unknown>;
    },
    restoreSnapshot: (persisted, scope) => {
      const p = persisted as unknown as PersistedLink;
      return {
        status: 'active',
        output: undefined,
        error: undefined,
        link: fresh(p.spec, p.owner ?? { box: hostBox('unknown') }, createSession(p.spec, scope as ActorScope<LinkSnapshot, LinkEvent>, p.session), true, p.seen),
      };
    },
  };
}

/**
 * Marks a copy of a session tree as dropped before it is stopped (see Family.detached): its
 * supervisors stop their children without cancelling or settling them, and its remote stand-ins
 * send nothing more; the copy that goes on on another host owns all of them.
 */
export function detachTree(root: AnyActorRef): void {
  walkActors(root, (ref) => {
    const snapshot = ref.getSnapshot() as { family?: { detached: boolean }; remote?: RemoteState };
    if (snapshot.family) snapshot.family.detached = true;
    if (snapshot.remote) {
      // out of its process's box, not ended there: the copy elsewhere takes what comes for it
      snapshot.remote.stopped = true;
      snapshot.remote.off?.();
      snapshot.remote.off = null;
    }
  });
}

/**
 * Why a running session cannot take a command as it is now (see LinkDeps.refuse; the link refuses
 * anything for a session that has ended): what the session chart would otherwise drop without a
 * word, or act on and fail. `knowsAgent` checks an agent type against this process's registry.
 */
export function commandRefusal(knowsAgent: (agentName: string) => boolean) {
  return (session: AnyActorRef, command: SessionCommand): string | null => {
    const snapshot = session.getSnapshot() as { value?: unknown; context?: Pick<SessionContext, 'perms'> };
    switch (command.type) {
      case 'REASSIGN':
        return knowsAgent(command.agent.agentName) ? null : `agent type "${command.agent.agentName}" is not in this host's registry`;
      case 'PERMISSION_DECIDED': {
        const id = command.decision.requestId;
        const context = snapshot.context;
        return context?.perms.own?.id === id || (context && id in context.perms.routes) ? null : `no permission request "${id}" is open in it`;
      }
      case 'RESUME':
        return sessionStateName(snapshot.value) === 'paused' ? null : 'it is not paused';
      default:
        return null;
    }
  };
}

function createActorFor(logic: import('xstate').AnyActorLogic, spec: SessionSpec, parent: AnyActorRef, snapshot?: Snapshot<unknown>): AnyActorRef {
  return createActor(logic, { id: spec.id, parent, input: { spec }, ...(snapshot ? { snapshot } : {}) }) as AnyActorRef;
}
