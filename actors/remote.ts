/**
 * Sessions in other actor systems. A supervisor places a child locally or remotely; a remote
 * child is, in the owner's system, a `remoteSession` actor that stands for it:
 *
 *   owner process                                   host process
 *   supervisor ── remoteSession(st-3) ──spawn──▶ a2a.<ns>.spawn.<agent> ──▶ host ── parentLink ── session st-3
 *                      ▲                                                                 │
 *                      └──────────── a2a.<ns>.up.st-3 (updates, permission requests, result) ◀┘
 *                      └──────────── a2a.<ns>.down.st-3 (cancel, messages, decisions) ──────▶
 *
 * To the supervisor a remote child is an ordinary child actor: what it sends its parent arrives as
 * if the session had sent it, its result completes the actor (so the supervisor's delivery rule
 * holds: exactly one result per child), and what the supervisor sends it goes down to the session.
 * Every channel is a durable queue (JetStream over NATS): a message survives a restart of either
 * side or of the server, and is acknowledged once handed over. Every message is validated on
 * arrival; an invalid one is reported and dropped without changing anything.
 */
import { createActor, type ActorLogic, type ActorScope, type AnyActorRef, type Snapshot } from 'xstate';
import type { Clock, DurableConsumer, DurableMessage, EventSink, Transport } from '../machines/ports.js';
import { DownMessage, PermissionRequest, SubTaskResult, TaskUpdate, UpMessage, type RemoteSpawn, type SessionSpec } from '../machines/protocol.js';
import { correlationOf } from './events.js';

/**
 * A session's name on the wire: session ids (`w-api`, `st-1`) repeat from run to run, so every
 * subject, consumer, message id and key of a remote session is qualified by its run.
 */
export function wireId(spec: Pick<SessionSpec, 'id' | 'correlation'>): string {
  return `${spec.correlation.runId}.${spec.id}`;
}

/** The same as one token (consumer names allow no dots). */
export function wireToken(spec: Pick<SessionSpec, 'id' | 'correlation'>): string {
  return wireId(spec).replace(/[^A-Za-z0-9_-]/g, '_');
}

/** The subjects and queues of one namespace. */
export function subjects(ns: string) {
  const root = `a2a.${ns}`;
  return {
    spawn: (agentName: string) => `${root}.spawn.${agentName}`,
    /** `wire`: the session's wireId (`<runId>.<sessionId>`). */
    up: (wire: string) => `${root}.up.${wire}`,
    down: (wire: string) => `${root}.down.${wire}`,
    heartbeat: (hostId: string) => `${root}.hosts.${hostId}.heartbeat`,
    heartbeats: `${root}.hosts.*.heartbeat`,
    /** A host's seed 004 registration envelope, once at start. */
    registration: (hostId: string) => `${root}.hosts.${hostId}.registration`,
    events: (runId: string, type: string) => `${root}.events.${runId}.${type}`,
    allEvents: `${root}.events.>`,
    /** Durable queues (the NATS transport scopes their streams by namespace: `a2a_<ns>_spawn` …). */
    queues: {
      spawn: { name: 'spawn', subjects: [`${root}.spawn.>`] },
      up: { name: 'up', subjects: [`${root}.up.>`] },
      down: { name: 'down', subjects: [`${root}.down.>`] },
    },
    /** Key-value buckets (`a2a_<ns>_snapshots` …). */
    buckets: { snapshots: 'snapshots', hosts: 'hosts' },
  };
}

export type Subjects = ReturnType<typeof subjects>;

/** Creates the durable queues of a namespace (idempotent). */
export async function ensureQueues(transport: Transport, ns: string): Promise<void> {
  const s = subjects(ns);
  await transport.ensureQueue(s.queues.spawn.name, { subjects: s.queues.spawn.subjects, workQueue: true, duplicateWindowMs: 600_000 });
  // up and down: consumed per session, removed once acknowledged
  await transport.ensureQueue(s.queues.up.name, { subjects: s.queues.up.subjects, workQueue: true, duplicateWindowMs: 600_000 });
  await transport.ensureQueue(s.queues.down.name, { subjects: s.queues.down.subjects, workQueue: true, duplicateWindowMs: 600_000 });
}

export interface RemoteDeps {
  transport: Transport;
  ns: string;
  /** This process (an orchestrator run, or a host): recorded with the spawns it makes. */
  process: string;
  clock: Clock;
  events: EventSink;
  /** How long a spawn may wait for a host before a warning says none serves its agent type. */
  startWarningMs?: number;
  /**
   * Acknowledgements of what reached an owner wait for its next snapshot (a restore from it must
   * see them again): `owner` is the owning session's id (`orchestrator` for workers). Default: at once.
   */
  deferAck?: (owner: string, ack: () => Promise<void>) => void;
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
): Promise<void> {
  return persist(() => transport.enqueue(subject, data, { msgId }).then(() => undefined), stopped, onRetry);
}

/**
 * A failure that may go away (the server restarting, a lost confirmation): retried. Bad input,
 * a missing queue, an oversized payload or a closed transport will not: they are reported.
 */
function worthRetrying(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === 'VALIDATION_ERROR' || code === 'NOT_FOUND' || code === 'CONFIGURATION_INVALID') return false;
  return !/closed|max_payload|payload too large|not JSON-serializable/i.test(error instanceof Error ? error.message : String(error));
}

/**
 * Runs `op` again after failures worth retrying, with backoff (200 ms doubling to 5 s), until it
 * succeeds; throws what is not worth retrying, or what fails once `stopped()`.
 */
async function persist(op: () => Promise<void>, stopped: () => boolean, onRetry: (error: unknown) => void): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await op();
      return;
    } catch (error) {
      if (!worthRetrying(error) || stopped()) throw error;
      onRetry(error);
      await new Promise((r) => setTimeout(r, Math.min(200 * 2 ** attempt, 5_000)));
    }
  }
}

/**
 * Per-session consumers (one per remote session and direction) are removed by the server after
 * an hour without a reader: each run would otherwise leave two behind per session. Their
 * messages stay in the queue; a resumed owner attaches a new consumer and gets them.
 */
const CONSUMER_IDLE_MS = 3_600_000;

let downCounter = 0;
const downId = (sessionId: string) => `${sessionId}:down:${Date.now().toString(36)}:${process.pid}:${(downCounter++).toString(36)}`;

// ---------------------------------------------------------------------------------------------
// Owner side

type RemoteEvent =
  | { type: 'REMOTE_DONE'; output: SubTaskResult }
  | { type: 'REMOTE_ERROR'; error: string }
  | { type: 'xstate.stop' }
  | { type: string; [key: string]: unknown };

interface RemoteState {
  spec: SessionSpec;
  host: string | null;
  spawned: boolean;
  consumer: DurableConsumer | null;
  stopped: boolean;
  /** The "no host has taken it" warning, cleared once placed or ended. */
  warning: unknown;
}

type RemoteSnapshot = Snapshot<SubTaskResult> & { remote: RemoteState; input: { spec: SessionSpec } };

interface PersistedRemote {
  status: 'active' | 'done' | 'error';
  output: SubTaskResult | undefined;
  error: unknown;
  spec: SessionSpec;
  host: string | null;
  spawned: boolean;
}

function relay(from: AnyActorRef, to: AnyActorRef, event: { type: string }): void {
  const system = from.system as { _relay?: (s: AnyActorRef, t: AnyActorRef, e: unknown) => void };
  if (system._relay) system._relay(from, to, event);
  else to.send(event);
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

  function end(state: RemoteState): void {
    state.stopped = true;
    clearWarning(state);
    void state.consumer?.stop();
  }

  async function attach(state: RemoteState, self: AnyActorRef): Promise<void> {
    const { spec } = state;
    state.consumer = await deps.transport.consume(
      s.queues.up.name,
      // acked as soon as handed over: a short ack wait makes a dead owner's messages come back soon
      { consumer: `up-${wireToken(spec)}`, filter: s.up(wireId(spec)), ackWaitMs: 5_000, maxInFlight: 64, inactiveMs: CONSUMER_IDLE_MS },
      (message) => handleUp(state, self, message),
    );
    if (state.stopped) await state.consumer.stop();
  }

  async function handleUp(state: RemoteState, self: AnyActorRef, message: DurableMessage): Promise<void> {
    const parsed = UpMessage.safeParse(message.data);
    if (!parsed.success) {
      warn(state.spec, `dropped an invalid message from the host of ${state.spec.id}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
      await message.ack();
      return;
    }
    const up = parsed.data;
    const parent = self._parent as AnyActorRef | undefined;
    switch (up.kind) {
      case 'started':
        state.host = up.host;
        clearWarning(state);
        deps.events.emit({ type: 'subtask.placed', ...correlationOf(state.spec), data: { host: up.host, restored: up.restored } });
        break;
      case 'event': {
        const event = up.event as { type: string; update?: unknown; request?: unknown };
        const valid =
          event.type === 'SUBTASK_UPDATE' ? TaskUpdate.safeParse(event.update).success : PermissionRequest.safeParse(event.request).success;
        if (!valid) warn(state.spec, `dropped an invalid ${event.type} from ${state.spec.id}`);
        else if (parent && !state.stopped) relay(self, parent, event);
        break;
      }
      case 'done':
        if (!state.stopped) self.send({ type: 'REMOTE_DONE', output: up.output });
        break;
      case 'error':
        if (!state.stopped) self.send({ type: 'REMOTE_ERROR', error: up.error });
        break;
    }
    if (deps.deferAck) deps.deferAck(wireId({ id: state.spec.owner.ownerId, correlation: state.spec.correlation }), () => message.ack());
    else await message.ack();
  }

  return {
    config: 'a2a.remoteSession',
    getInitialSnapshot: (_scope, input) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      input,
      remote: { spec: input.spec, host: null, spawned: false, consumer: null, stopped: false, warning: null },
    }),
    transition: (snapshot, event, scope) => {
      const state = snapshot.remote;
      if (snapshot.status !== 'active') return snapshot;
      switch (event.type) {
        case 'REMOTE_DONE':
          end(state);
          return { ...snapshot, status: 'done', output: (event as { output: SubTaskResult }).output };
        case 'REMOTE_ERROR':
          end(state);
          return { ...snapshot, status: 'error', error: new Error((event as { error: string }).error) };
        case 'xstate.stop':
          end(state);
          return snapshot;
        default: {
          // what a parent sends its child goes down to the session, wherever it runs
          const down = DownMessage.safeParse({ event });
          if (!down.success) return snapshot;
          const id = downId(wireId(state.spec));
          enqueueSurely(deps.transport, s.down(wireId(state.spec)), down.data, id, (error) => warn(state.spec, `retrying ${event.type} to ${state.spec.id}: ${String(error)}`)).catch((error: unknown) => {
            warn(state.spec, `could not send ${event.type} to ${state.spec.id}: ${error instanceof Error ? error.message : String(error)}`);
          });
          void scope;
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
        const spawn: RemoteSpawn = { spec: state.spec, ownerProcess: deps.process, requestedAt: deps.clock.now() };
        enqueueSurely(
          deps.transport,
          s.spawn(state.spec.agent.agentName),
          spawn,
          `${wireId(state.spec)}:spawn`,
          (error) => warn(state.spec, `retrying the spawn request of ${state.spec.id}: ${String(error)}`),
          () => state.stopped,
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
      const persisted: PersistedRemote = { status: snapshot.status as PersistedRemote['status'], output: snapshot.output, error: snapshot.error, spec: r.spec, host: r.host, spawned: r.spawned };
      return persisted as unknown as Snapshot<unknown>;
    },
    restoreSnapshot: (persisted) => {
      const p = persisted as unknown as PersistedRemote;
      return {
        status: p.status,
        output: p.output,
        error: p.error,
        input: { spec: p.spec },
        remote: { spec: p.spec, host: p.host, spawned: p.spawned, consumer: null, stopped: false, warning: null },
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
  | { type: 'DOWN'; event: { type: string } }
  | { type: 'xstate.stop' }
  | { type: `xstate.done.actor.${string}`; output: SubTaskResult }
  | { type: `xstate.error.actor.${string}`; error: unknown };

interface LinkState {
  spec: SessionSpec;
  session: AnyActorRef;
  consumer: DurableConsumer | null;
  /** Publishing up is sequential: updates arrive before the result. */
  chain: Promise<unknown>;
  restored: boolean;
  finished: boolean;
  /** Stopped by its host (dropped, drained, shut down): it sends and takes nothing more. */
  stopped: boolean;
}

type LinkSnapshot = Snapshot<SubTaskResult> & { link: LinkState };

interface PersistedLink {
  status: 'active';
  output: undefined;
  error: undefined;
  spec: SessionSpec;
  session: Snapshot<unknown>;
}

export interface LinkDeps extends RemoteDeps {
  hostId: string;
  sessionLogic(role: SessionSpec['role']): import('xstate').AnyActorLogic;
  /**
   * Acknowledgements of down messages wait for the next snapshot of the session (a restore from
   * it must see them again); default: at once.
   */
  ackAfterSnapshot?: (sessionId: string, ack: () => Promise<void>) => void;
  /** The session ended and its result is stored in its owner's queue. */
  onFinished?: (sessionId: string) => void;
}

/**
 * The root of a session's actor system on a host: it stands for the session's owner. What the
 * session sends its parent goes up; what the owner sends comes down to it; its result goes up and
 * ends the link.
 */
export function createParentLinkLogic(deps: LinkDeps): ActorLogic<LinkSnapshot, LinkEvent, { spec: SessionSpec }> {
  const s = subjects(deps.ns);
  const up = (state: LinkState, message: UpMessage, msgId: string) => {
    const send = (m: UpMessage, id: string) =>
      enqueueSurely(
        deps.transport,
        s.up(wireId(state.spec)),
        m,
        `${state.spec.correlation.runId}.${id}`,
        (error) => deps.events.emit({ type: 'warning', ...correlationOf(state.spec), data: { message: `retrying a report to the owner of ${state.spec.id}: ${String(error)}` } }),
        () => state.stopped,
      );
    state.chain = state.chain
      .then(() => send(message, msgId))
      .catch(async (error: unknown) => {
        deps.events.emit({ type: 'warning', ...correlationOf(state.spec), data: { message: `could not report to the owner of ${state.spec.id}: ${String(error)}` } });
        // a result that cannot be sent (too large, say) must not leave its owner waiting for ever
        if (message.kind === 'done' && !state.stopped) {
          await send({ kind: 'error', error: `the result of ${state.spec.id} could not be sent: ${error instanceof Error ? error.message : String(error)}` }, `${state.spec.id}:error`).catch(() => undefined);
        }
      });
    return state.chain;
  };

  function createSession(spec: SessionSpec, scope: ActorScope<LinkSnapshot, LinkEvent>, snapshot?: Snapshot<unknown>): AnyActorRef {
    return createActorFor(deps.sessionLogic(spec.role), spec, scope.self, snapshot);
  }

  async function attach(state: LinkState, self: AnyActorRef): Promise<void> {
    state.consumer = await deps.transport.consume(
      s.queues.down.name,
      // acknowledged after the next snapshot (ms later); a dead host's messages come back to its successor
      { consumer: `down-${wireToken(state.spec)}`, filter: s.down(wireId(state.spec)), ackWaitMs: 10_000, maxInFlight: 64, inactiveMs: CONSUMER_IDLE_MS },
      async (message) => {
        const parsed = DownMessage.safeParse(message.data);
        if (!parsed.success) {
          deps.events.emit({ type: 'warning', ...correlationOf(state.spec), data: { message: `dropped an invalid message for ${state.spec.id}: ${parsed.error.issues.map((i) => i.message).join('; ')}` } });
          await message.ack();
          return;
        }
        if (!state.finished && !state.stopped) self.send({ type: 'DOWN', event: parsed.data.event as { type: string } });
        if (deps.ackAfterSnapshot) deps.ackAfterSnapshot(wireId(state.spec), () => message.ack());
        else await message.ack();
      },
    );
    if (state.finished || state.stopped) await state.consumer.stop();
  }

  return {
    config: 'a2a.parentLink',
    getInitialSnapshot: (scope, input) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      link: { spec: input.spec, session: createSession(input.spec, scope), consumer: null, chain: Promise.resolve(), restored: false, finished: false, stopped: false },
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
        void up(state, { kind: 'done', output }, `${state.spec.id}:done`).then(async () => {
          await state.consumer?.stop();
          deps.onFinished?.(wireId(state.spec));
        });
        return { ...snapshot, status: 'done', output };
      } else if (event.type.startsWith('xstate.error.actor.')) {
        state.finished = true;
        const error = (event as { error: unknown }).error;
        void up(state, { kind: 'error', error: error instanceof Error ? error.message : String(error) }, `${state.spec.id}:error`).then(async () => {
          await state.consumer?.stop();
          deps.onFinished?.(wireId(state.spec));
        });
        return { ...snapshot, status: 'done', output: { taskId: state.spec.id, status: 'failed', output: '', error: String(error), fallback: true } };
      } else if (event.type === 'xstate.stop') {
        state.stopped = true;
        void state.consumer?.stop();
      }
      return snapshot;
    },
    start: (snapshot, scope) => {
      const state = snapshot.link;
      state.session.start();
      void up(state, { kind: 'started', host: deps.hostId, restored: state.restored }, `${state.spec.id}:started:${deps.hostId}:${deps.clock.now()}`);
      void persist(
        () => attach(state, scope.self),
        () => state.finished || state.stopped,
        (error) => deps.events.emit({ type: 'warning', ...correlationOf(state.spec), data: { message: `retrying to receive messages for ${state.spec.id}: ${String(error)}` } }),
      ).catch((error: unknown) => {
        deps.events.emit({ type: 'warning', ...correlationOf(state.spec), data: { message: `cannot receive messages for ${state.spec.id}: ${String(error)}` } });
      });
    },
    getPersistedSnapshot: (snapshot): Snapshot<unknown> => {
      const persisted: PersistedLink = {
        status: 'active',
        output: undefined,
        error: undefined,
        spec: snapshot.link.spec,
        session: snapshot.link.session.getPersistedSnapshot() as Snapshot<unknown>,
      };
      return persisted as unknown as Snapshot<unknown>;
    },
    restoreSnapshot: (persisted, scope) => {
      const p = persisted as unknown as PersistedLink;
      return {
        status: 'active',
        output: undefined,
        error: undefined,
        link: { spec: p.spec, session: createSession(p.spec, scope as ActorScope<LinkSnapshot, LinkEvent>, p.session), consumer: null, chain: Promise.resolve(), restored: true, finished: false, stopped: false },
      };
    },
  };
}

function createActorFor(logic: import('xstate').AnyActorLogic, spec: SessionSpec, parent: AnyActorRef, snapshot?: Snapshot<unknown>): AnyActorRef {
  return createActor(logic, { id: spec.id, parent, input: { spec }, ...(snapshot ? { snapshot } : {}) }) as AnyActorRef;
}
