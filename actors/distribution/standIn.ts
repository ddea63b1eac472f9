/**
 * The owner's side of a remote session (remote.ts has the picture): the `remoteSession` actor that
 * stands for a session running on a host. It asks a host for it (spawn), takes its reports from the
 * process's box (only from the host that holds it, each once), sends what its supervisor sends it
 * down to the session, and completes with the session's result.
 */
import { type ActorLogic, type AnyActorRef, type Snapshot } from 'xstate';
import type { DurableMessage } from '../../machines/ports.js';
import { DownMessage, HostId, UpMessage, type RemoteSpawn, type SessionSpec, type SubTaskResult, type TaskUpdate, type PermissionRequest } from '../../machines/protocol/index.js';
import { correlationOf } from '../observation/events.js';
import { walkActors } from '../durability/checkpoint.js';
import { inlineIssues } from '../errors.js';
import { parentOf, relay, stopped } from '../xstateInternals.js';
import { errorText } from '../../machines/errorText.js';
import { FORWARDED_FROM, hostBox, mailboxOf } from './mailbox.js';
import { enqueueSurely, persist, Seen, subjects, traceOf, wireId, downId, REFUSED_RESULT_DELIVERIES, type RemoteDeps } from './wire.js';

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
    // a report forwarded by another host (its owner moved) names the host that sent it first
    const forwarded = message.headers[FORWARDED_FROM];
    if (forwarded !== undefined && !HostId.safeParse(forwarded).success) return refuse(`its ${FORWARDED_FROM} header "${forwarded.slice(0, 64)}" is not a host id`);
    const sender = forwarded ?? s.hostOf(message.subject);
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
