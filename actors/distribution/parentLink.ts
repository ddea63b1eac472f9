/**
 * The host's side of a remote session (remote.ts has the picture): the `parentLink` actor a host
 * runs a session under. It stands for the session's owner: what the session sends its parent goes
 * up to the owner's box (or the box of the host that holds the owner's tree now), what the owner
 * sends comes down from the host's box to the session, and the session's result goes up once.
 */
import { createActor, type ActorLogic, type ActorScope, type AnyActorRef, type Snapshot } from 'xstate';
import type { DurableMessage } from '../../machines/ports.js';
import { DownMessage, UpMessage, type RemoteSpawn, type SessionCommand, type SessionSpec, type SubTaskResult, type TaskUpdate, type PermissionRequest } from '../../machines/protocol/index.js';
import { correlationOf } from '../observation/events.js';
import { sessionStateName, type SessionContext } from '../../machines/session.js';
import { inlineIssues } from '../errors.js';
import { relay, stopped } from '../xstateInternals.js';
import { errorText } from '../../machines/errorText.js';
import { adopt } from '../observation/tracing.js';
import { hostBox, mailboxOf } from './mailbox.js';
import { enqueueSurely, persist, Seen, subjects, traceOf, wireId, type RemoteDeps } from './wire.js';
import { detachTree } from './standIn.js';

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
