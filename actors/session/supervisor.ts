/**
 * The supervisor of one family: a session's sub-tasks (its `subtasks` child) or the orchestrator's
 * workers (its `workers` child). In the actor tree it sits between a parent and its children:
 *
 *   worker task-1 ── subtasks ─┬─ st-1 ── subtasks ── st-3
 *                              └─ st-2
 *
 * Why not `spawnChild` in the session machine: XState keeps a machine's children in an immutable
 * `snapshot.children` object that is copied on every spawn and every stop, so a parent with N
 * children pays O(N) per child, O(N²) in all (measured: 1.5 s at 1k, 22.7 s at 10k). This actor
 * is custom actor logic whose state is mutable and indexed (Maps, a FIFO queue, a sequence-numbered
 * mailbox), so every spawn, result and acknowledgement is O(1), and it is still an ordinary
 * XState actor: its children are created with `parent: self` (the inspector draws the tree),
 * it persists them recursively (`getPersistedSnapshot`/`restoreSnapshot`), and its owner talks to
 * it with events.
 *
 * Delivery rule: every child it creates produces exactly one terminal result for the owner. The
 * child's `xstate.done.actor` output is the normal path; an `xstate.error.actor` becomes `failed`;
 * a child stopped with its parent, or cancelled before it ran, becomes `cancelled`. A second
 * result for the same child is ignored with a warning. Once the owner has a result (it acknowledged
 * the update, or a watch gave it), the family keeps a slim record of it (status, clipped output)
 * for re-queries, not the child's spec and full result: a long run's heap holds live sessions.
 *
 * Where the parts are: the family's state (members, the queue of those waiting for a slot, the
 * mailbox of updates for the owner, the persisted form) is a `Family` (actors/session/family.ts); the
 * limits a spawn must pass are `spawnRefusal` (actors/session/limits.ts). Here: admitting and starting
 * children (in slices, see START_SLICE), settling their results, and routing to them (`route`).
 */
import { createActor, type ActorLogic, type ActorScope, type AnyActorLogic, type AnyActorRef, type Snapshot } from 'xstate';
import type { Clock, EventSink, SupervisorEvent, SupervisorInput, SupervisorReply } from '../../machines/ports.js';
import type { ErrorInfo, SessionSpec, SubTaskResult, TaskUpdate } from '../../machines/protocol/index.js';
import { SubTaskResult as SubTaskResultSchema } from '../../machines/protocol/index.js';
import { spawnRefusal, type SpawnBudget } from './limits.js';
import type { FileLockTable } from './fileLocks.js';
import type { CostControl } from './agentLoop.js';
import { correlationOf, correlationOfRequest, forwardSessionEvent } from '../observation/events.js';
import { parentOf, relay, stopped } from '../xstateInternals.js';
import { errorText } from '../../machines/errorText.js';
import { Family, MAILBOX_LIMIT, type Member, type PersistedFamily } from './family.js';

export type SupervisorSnapshot = Snapshot<undefined> & { family: Family };

export interface SupervisorDeps {
  /** The session logic for a role (resolved lazily: the session logic embeds this supervisor). */
  sessionLogic(role: SessionSpec['role']): AnyActorLogic;
  clock: Clock;
  events: EventSink;
  budget: SpawnBudget;
  /** Told the id of every restored child, so that new ids never collide with them. */
  observeId?: (spec: Pick<SessionSpec, 'id' | 'correlation'>) => void;
  /** The files children declared (`targetFiles`), held while they run. */
  locks?: FileLockTable;
  /** A spent budget refuses new spawns. */
  costs?: CostControl;
  /**
   * Where a child runs: true places it on a host (through `remoteLogic`, see actors/distribution/remote.ts),
   * false in this process. Decided when it starts, and kept across restores.
   */
  placeRemotely?: (spec: SessionSpec) => boolean;
  remoteLogic?: AnyActorLogic;
}

/**
 * Children whose actors are made in one turn of the event loop. A larger spawn (a 10k fan-out)
 * makes the rest in slices, one turn each (`NEXT_SLICE`): the event loop stays free for timers,
 * NATS and signals, and children of early slices often end before later ones are made, so memory
 * holds a slice of half-started sessions instead of all of them (measured at 10k: peak RSS growth
 * 171 -> 109 MB, GC 28 -> 22 % of the run). They all have their slots at once: `started` in the
 * spawn's result, messages to them held until they run, a cancel settles them as never started.
 */
export const START_SLICE = 64;

type IncomingEvent =
  | SupervisorEvent
  | { type: 'DEADLINE'; id: string }
  | { type: 'NEXT_SLICE' }
  | { type: 'xstate.stop' }
  | { type: `xstate.done.actor.${string}`; actorId: string; output: unknown }
  | { type: `xstate.error.actor.${string}`; actorId: string; error: unknown };

type Scope = ActorScope<SupervisorSnapshot, IncomingEvent>;


export function createSupervisorLogic(deps: SupervisorDeps): ActorLogic<SupervisorSnapshot, IncomingEvent, SupervisorInput> {
  const { clock, events } = deps;
  /** Builds an event only when someone listens (a 10k fan-out emits 40k of them). */
  const emit = (build: () => Parameters<EventSink['emit']>[0]) => {
    if (events.listening !== false) events.emit(build());
  };

  function reply(family: Family, scope: Scope, event: SupervisorReply): void {
    if (family.stopping) return;
    const owner = parentOf(scope.self);
    if (owner) relay(scope.self, owner, event);
  }

  /** `held`: messages sent to it while it waited, in its inbox from the start (its first model call sees them). */
  function createChild(family: Family, spec: SessionSpec, scope: Scope, snapshot?: Snapshot<unknown>, remote = false, held?: Member['held']): AnyActorRef {
    const logic = remote && deps.remoteLogic ? deps.remoteLogic : deps.sessionLogic(spec.role);
    const ref = createActor(logic, {
      id: spec.id,
      parent: scope.self,
      src: spec.role,
      input: held?.length ? { spec, inbox: held.map((m) => ({ kind: 'message' as const, from: m.from, text: m.text })) } : { spec },
      ...(snapshot ? { snapshot } : {}),
    });
    if (events.listening !== false) ref.on('*', (emitted: { type: string }) => forwardSessionEvent(events, spec, emitted));
    return ref;
  }

  /** Queues an effect on a child to run right after this transition (see `Family.effects`). */
  function later(family: Family, scope: Scope, effect: () => void): void {
    if (family.effects.length === 0) {
      scope.defer(() => {
        const effects = family.effects;
        family.effects = [];
        for (const run of effects) run();
      });
    }
    family.effects.push(effect);
  }

  /** Gives the child its slot, and creates and starts its session actor now or with the next slice. */
  function startMember(family: Family, id: string, scope: Scope): void {
    const member = family.members.get(id)!;
    member.state = 'running';
    family.running++;
    if (family.madeNow >= START_SLICE) {
      member.deferred = true;
      family.slices.push(id);
      if (family.slices.length - family.slicesHead === 1) nextSliceLater(scope);
      return;
    }
    makeMember(family, id, scope);
  }

  function nextSliceLater(scope: Scope): void {
    setImmediate(() => {
      if ((scope.self.getSnapshot() as Snapshot<unknown>).status === 'active') scope.self.send({ type: 'NEXT_SLICE' });
    });
  }

  /** The next slice of children that have slots and no actor yet. */
  function makeSlice(family: Family, scope: Scope): void {
    while (family.madeNow < START_SLICE && family.slicesHead < family.slices.length) {
      const id = family.slices[family.slicesHead++]!;
      const member = family.members.get(id);
      if (member?.deferred && member.state === 'running') makeMember(family, id, scope);
    }
    if (family.slicesHead >= family.slices.length) {
      family.slices = [];
      family.slicesHead = 0;
    } else {
      nextSliceLater(scope);
    }
  }

  /** Creates and starts the child's session actor: it runs from its first microstep. */
  function makeMember(family: Family, id: string, scope: Scope): void {
    const member = family.members.get(id)!;
    delete member.deferred;
    if (family.madeNow++ === 0) scope.defer(() => (family.madeNow = 0));
    member.remote = deps.placeRemotely?.(member.spec) === true && deps.remoteLogic !== undefined;
    // a session starts with the messages that waited for it; a remote stand-in passes them on
    const held = member.held;
    delete member.held;
    const ref = createChild(family, member.spec, scope, undefined, member.remote, member.remote ? undefined : held);
    member.ref = ref;
    later(family, scope, () => {
      ref.start();
      if (member.remote) for (const m of held ?? []) ref.send({ type: 'MESSAGE', from: m.from, text: m.text });
    });
    // The owner enforces the deadline, so it holds even when the child is stuck.
    if (member.spec.timeoutMs) armDeadline(scope, id, member.spec.timeoutMs);
  }

  function armDeadline(scope: Scope, id: string, ms: number): void {
    scope.system.scheduler.schedule(scope.self, scope.self, { type: 'DEADLINE', id } as { type: string }, ms, `deadline:${id}`);
  }

  /**
   * Starts a pending child unless a sibling holds one of the files it declared: then it waits
   * (in `blocked`) until they are released, and nothing is overwritten.
   */
  function tryStart(family: Family, id: string, scope: Scope): boolean {
    const member = family.members.get(id)!;
    const files = member.spec.targetFiles ?? [];
    if (deps.locks && files.length > 0) {
      const taken = deps.locks.acquire(member.spec.correlation.worktreePath, files, id);
      if (!taken.ok) {
        family.blocked.push(id);
        emit(() => ({
          type: 'subtask.queued',
          ...correlationOf(member.spec),
          data: { reason: `waiting for files held by ${taken.conflicts.map((c) => `${c.holder} (${c.file})`).join(', ')}` },
        }));
        return false;
      }
    }
    startMember(family, id, scope);
    return true;
  }

  /** Children waiting for files, in spawn order, once a sibling released some. */
  function retryBlocked(family: Family, scope: Scope): void {
    if (family.blocked.length === 0) return;
    const waiting = family.blocked;
    family.blocked = [];
    for (const id of waiting) {
      if (family.members.get(id)?.state !== 'pending') continue;
      if (family.cancelling !== null || family.running >= family.maxParallel) family.blocked.push(id);
      else tryStart(family, id, scope);
    }
  }

  function startQueued(family: Family, scope: Scope): void {
    for (let id = family.nextQueued(); id !== null; id = family.nextQueued()) tryStart(family, id, scope);
  }

  /** Queues an update for the owner; `update` must be a fresh object (it is stamped in place). */
  function pushUpdate(family: Family, scope: Scope, update: TaskUpdate): void {
    const dropped = family.post(update, clock.now());
    // said once per batch the owner has not read: it learns the count with the batch
    if (dropped > 0 && family.dropped === dropped) {
      emit(() => ({
        type: 'warning',
        ...(family.owner ? correlationOf(family.owner) : {}),
        data: { message: `${family.ownerId}'s mailbox is full (${MAILBOX_LIMIT} updates): its oldest status updates are dropped until it reads them (results, questions and errors never are)` },
      }));
    }
    // the events of every child's spawn, result and update are built only when someone listens,
    // and without a closure to build them (three a child, on the path of every sub-task)
    if (events.listening !== false) {
      events.emit({
        type: 'update.queued',
        // the owner's correlation; for the orchestrator's workers, the sending worker's
        ...(family.owner ? correlationOf(family.owner) : family.members.get(update.subTaskId) ? { ...correlationOf(family.members.get(update.subTaskId)!.spec), parentId: family.ownerId } : {}),
        data: { updateId: update.id, updateType: update.type, from: update.subTaskId, ...(update.kind ? { kind: update.kind } : {}), ...(update.message ? { message: update.message } : {}) },
      });
    }
    notify(family, scope);
  }

  function notify(family: Family, scope: Scope): void {
    const batch = family.batch();
    if (batch) reply(family, scope, { type: 'UPDATES_AVAILABLE', ...batch });
  }

  function answerWatch(family: Family, scope: Scope, unknown: string[] = []): void {
    const answer = family.closeWatch();
    if (answer) reply(family, scope, { type: 'WATCH_SATISFIED', ...answer, unknown, live: family.unsettled });
  }

  function settle(family: Family, scope: Scope, id: string, raw: SubTaskResult, how: string): void {
    const member = family.members.get(id);
    if (!member) {
      if (family.finished.has(id)) emit(() => ({ type: 'warning', ...(family.owner ? correlationOf(family.owner) : {}), data: { message: `second result for ${id} ignored (${how})` } }));
      return;
    }
    if (member.state === 'settled') {
      emit(() => ({ type: 'warning', ...correlationOf(member.spec), data: { message: `second result for ${id} ignored (${how})` } }));
      return;
    }
    if (member.state === 'running') {
      family.running--;
      if (member.spec.timeoutMs) scope.system.scheduler.cancel(scope.self, `deadline:${id}`);
    }
    family.unsettled--;
    member.state = 'settled';
    member.ref = null;
    deps.locks?.release(id);
    const result = raw.taskId === id ? raw : { ...raw, taskId: id };
    member.result = result;
    if (events.listening !== false) {
      events.emit({
        type: 'subtask.result',
        ...correlationOf(member.spec),
        data: { status: result.status, how, ...(result.error ? { error: result.error } : {}), output: result.output, ...(result.fallback ? { fallback: true } : {}) },
      });
    }
    const ok = result.status === 'success' || result.status === 'partial';
    pushUpdate(family, scope, {
      id: `${id}:result`,
      type: ok ? 'completed' : 'failed',
      subTaskId: id,
      parentId: family.ownerId,
      agentType: member.spec.agent.raw,
      prompt: member.spec.prompt,
      result,
      timestamp: 0,
    });
    if (family.watch?.remaining.delete(id) && family.watch.remaining.size === 0) answerWatch(family, scope);
    retryBlocked(family, scope);
    startQueued(family, scope);
    if (family.cancelling !== null && family.unsettled === 0) reply(family, scope, { type: 'CHILDREN_SETTLED' });
  }

  function synthesized(id: string, status: 'failed' | 'cancelled', error: string): SubTaskResult {
    return { taskId: id, status, output: '', error, fallback: true };
  }

  function spawn(family: Family, scope: Scope, requestId: string, specs: SessionSpec[]): void {
    const reject = (error: ErrorInfo) => {
      emit(() => ({ type: 'limit.hit', ...(family.owner ? correlationOf(family.owner) : {}), data: { ...error, requested: specs.length } }));
      reply(family, scope, { type: 'SPAWN_RESULT', ok: false, requestId, error, live: family.unsettled });
    };
    if (family.cancelling !== null) {
      return reject({ code: 'WORKFLOW_STOPPED', message: `cannot spawn: ${family.ownerId} is cancelling its children (${family.cancelling})` });
    }
    const duplicate = specs.find((s) => family.has(s.id));
    if (duplicate) return reject({ code: 'VALIDATION_ERROR', message: `a child with id ${duplicate.id} already exists` });
    const refused = family.owner && spawnRefusal(family.owner, specs, deps);
    if (refused) return reject(refused);
    const started: string[] = [];
    const queued: string[] = [];
    // free slots go to the new children at once, unless earlier spawns are still waiting
    let free = family.freeSlots();
    for (const spec of specs) {
      family.members.set(spec.id, { spec, ref: null, state: 'pending', result: null });
      family.unsettled++;
      if (events.listening !== false) {
        events.emit({
          type: spec.role === 'worker' ? 'worker.deployed' : 'subtask.spawned',
          ...correlationOf(spec),
          data: { prompt: spec.prompt, expectedOutput: spec.expectedOutput, ...(spec.model ? { model: spec.model } : {}), ...(spec.workflowRole ? { role: spec.workflowRole } : {}) },
        });
      }
      if (free > 0) {
        free--;
        if (tryStart(family, spec.id, scope)) started.push(spec.id);
        else queued.push(spec.id);
      } else {
        family.queue.push(spec.id);
        queued.push(spec.id);
        emit(() => ({ type: 'subtask.queued', ...correlationOf(spec), data: { reason: `${family.running} of ${family.maxParallel} slots busy` } }));
      }
    }
    reply(family, scope, { type: 'SPAWN_RESULT', ok: true, requestId, started, queued, live: family.unsettled });
  }

  function cancel(family: Family, scope: Scope, ids: Iterable<string>, reason: string): void {
    for (const id of ids) {
      const member = family.members.get(id);
      if (!member || member.state === 'settled') continue;
      if (member.state === 'pending' || member.deferred) {
        // never started: it settles here
        delete member.deferred;
        settle(family, scope, id, synthesized(id, 'cancelled', `cancelled before it started: ${reason}`), 'cancelled while waiting');
      } else {
        const ref = member.ref!;
        later(family, scope, () => ref.send({ type: 'CANCEL', reason }));
      }
    }
  }

  /** The supervisor is stopping (its owner ended): every unsettled child still gets its result. */
  function stopAll(family: Family, scope: Scope): void {
    if (family.detached) {
      family.stopping = true;
      for (const member of family.members.values()) {
        const ref = member.ref;
        if (ref && (ref.getSnapshot() as Snapshot<unknown>).status === 'active') scope.stopChild(ref);
      }
      return;
    }
    family.cancelling ??= 'owner stopped';
    if (family.unsettled > 0) {
      emit(() => ({
        type: 'warning',
        ...(family.owner ? correlationOf(family.owner) : {}),
        data: { message: `${family.ownerId} ended with ${family.unsettled} sub-task(s) still running; they are cancelled` },
      }));
    }
    for (const [id, member] of family.members) {
      if (member.state === 'settled') continue;
      const ref = member.ref;
      let result: SubTaskResult | null = null;
      if (ref && member.state === 'running') {
        // a graceful cancel is processed synchronously when the child is at rest: its own
        // result (with usage so far) then stands; otherwise the result is synthesised
        ref.send({ type: 'CANCEL', reason: `parent ${family.ownerId} stopped` });
        const snap = ref.getSnapshot() as Snapshot<unknown>;
        if (snap.status === 'done') {
          const parsed = SubTaskResultSchema.safeParse(snap.output);
          if (parsed.success) result = parsed.data;
        }
      }
      if (ref && (ref.getSnapshot() as Snapshot<unknown>).status === 'active') scope.stopChild(ref);
      settle(family, scope, id, result ?? synthesized(id, 'cancelled', `parent ${family.ownerId} stopped`), 'parent stopped');
    }
    family.stopping = true;
  }

  /**
   * What the owner sends on to a child (a message, a forwarded event, a permission decision), a
   * child's permission request on its way up, and a child's deadline: to a running child after
   * this transition; a message to a child not started yet waits in its inbox; anything else is a
   * warning naming why it was not delivered.
   */
  function route(family: Family, scope: Scope, event: Extract<IncomingEvent, { type: 'FORWARD' | 'SEND_TO_CHILD' | 'PERMISSION_REQUEST' | 'PERMISSION_DECISION' | 'DEADLINE' }>): void {
    switch (event.type) {
      case 'FORWARD': {
        const member = family.members.get(event.to);
        const forwarded = event.event;
        if (member?.state === 'running' && member.ref) {
          const ref = member.ref;
          later(family, scope, () => ref.send(forwarded));
        } else if ((member?.state === 'pending' || member?.deferred) && forwarded.type === 'MESSAGE') {
          (member.held ??= []).push({ from: forwarded.from, text: forwarded.text });
        } else {
          emit(() => ({
            type: 'warning',
            ...(family.owner ? correlationOf(family.owner) : {}),
            data: { message: `${forwarded.type} for ${event.to} not delivered: ${member ? `it is ${member.state}` : family.finished.has(event.to) ? 'it is settled' : 'no such child'}` },
          }));
        }
        break;
      }
      case 'PERMISSION_REQUEST': {
        // the charts keep no clock: a request is stamped at its first hop, from its requester
        const request = event.request.via.length === 1 ? { ...event.request, timestamp: clock.now() } : event.request;
        const owner = parentOf(scope.self);
        if (owner) {
          // each hop on the way up is an event: the tree, the audit and the monitors show where it waits
          emit(() => ({
            type: 'permission.forwarded',
            ...correlationOfRequest(request),
            data: { requestId: request.id, action: request.action, detail: request.detail, from: request.via.at(-1), to: family.ownerId, hop: request.via.length, via: request.via },
          }));
          reply(family, scope, { type: 'CHILD_PERMISSION_REQUEST', request });
        } else {
          // a root family (a standalone session) has nobody above it to ask
          const child = family.members.get(request.via.at(-1)!)?.ref;
          const decision = {
            requestId: request.id,
            approved: false,
            decidedBy: 'policy' as const,
            decider: family.ownerId,
            reason: `${request.action} is outside the session's permission level and no orchestrator runs to decide it`,
          };
          if (child) later(family, scope, () => child.send({ type: 'PERMISSION_DECIDED', decision }));
        }
        break;
      }
      case 'PERMISSION_DECISION': {
        const ref = family.members.get(event.to)?.ref;
        const decision = event.decision;
        if (ref) later(family, scope, () => ref.send({ type: 'PERMISSION_DECIDED', decision }));
        break;
      }
      case 'SEND_TO_CHILD': {
        const member = family.members.get(event.to);
        if (member?.state === 'pending' || member?.deferred) {
          (member.held ??= []).push({ from: event.from, text: event.text });
        } else if (member?.ref && member.state === 'running') {
          const ref = member.ref;
          later(family, scope, () => ref.send({ type: 'MESSAGE', from: event.from, text: event.text }));
        } else {
          emit(() => ({
            type: 'warning',
            ...(family.owner ? correlationOf(family.owner) : {}),
            data: { message: `message from ${event.from} to ${event.to} not delivered: ${member || family.finished.has(event.to) ? 'it has already finished' : 'no such child'}` },
          }));
        }
        break;
      }
      case 'DEADLINE': {
        const member = family.members.get(event.id);
        if (member?.ref && member.state === 'running') {
          const ref = member.ref;
          emit(() => ({ type: 'warning', ...correlationOf(member.spec), data: { message: `${event.id} reached its deadline of ${member.spec.timeoutMs} ms` } }));
          later(family, scope, () => ref.send({ type: 'TIMEOUT' }));
        }
        break;
      }
    }
  }

  /** Children here are this process's own session machines, typed to output a result; check the shape only. */
  function resultOf(id: string, output: unknown): SubTaskResult {
    const r = output as Partial<SubTaskResult> | undefined;
    return r && typeof r.status === 'string' && typeof r.output === 'string'
      ? (r as SubTaskResult)
      : synthesized(id, 'failed', 'child ended without a valid result');
  }

  return {
    config: 'a2a.supervisor',
    getInitialSnapshot: (_scope, input) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      family: new Family(input.ownerId, input.owner, input.maxParallel),
    }),
    transition: (snapshot, event, scope) => {
      const family = snapshot.family;
      switch (event.type) {
        case 'SPAWN':
          spawn(family, scope, event.requestId, event.specs);
          break;
        case 'SUBTASK_UPDATE':
          pushUpdate(family, scope, { ...event.update });
          break;
        case 'ACK_UPDATES':
          family.acknowledge(event.upTo, event.subTaskIds ? new Set(event.subTaskIds) : undefined);
          notify(family, scope);
          break;
        case 'WATCH': {
          const unknown = event.ids.filter((id) => !family.has(id));
          const remaining = new Set(event.ids.filter((id) => family.members.has(id) && family.members.get(id)!.state !== 'settled'));
          family.watch = { ids: event.ids, remaining };
          if (remaining.size === 0) answerWatch(family, scope, unknown);
          break;
        }
        case 'UNWATCH':
          answerWatch(family, scope);
          break;
        case 'CANCEL_CHILDREN':
          cancel(family, scope, event.ids, event.reason);
          break;
        case 'CANCEL_ALL':
          family.cancelling = event.reason;
          cancel(family, scope, [...family.members.keys()], event.reason);
          if (family.unsettled === 0) reply(family, scope, { type: 'CHILDREN_SETTLED' });
          break;
        case 'CANCEL_LIVE':
          cancel(family, scope, [...family.members.keys()], event.reason);
          break;
        case 'FORWARD':
        case 'SEND_TO_CHILD':
        case 'PERMISSION_REQUEST':
        case 'PERMISSION_DECISION':
        case 'DEADLINE':
          route(family, scope, event);
          break;
        case 'NEXT_SLICE':
          makeSlice(family, scope);
          break;
        case 'xstate.stop':
          stopAll(family, scope);
          return stopped(snapshot);
        default:
          if (event.type.startsWith('xstate.done.actor.')) {
            const done = event as { actorId: string; output: unknown };
            settle(family, scope, done.actorId, resultOf(done.actorId, done.output), 'done');
          } else if (event.type.startsWith('xstate.error.actor.')) {
            const failed = event as { actorId: string; error: unknown };
            const message = errorText(failed.error);
            settle(family, scope, failed.actorId, synthesized(failed.actorId, 'failed', `crashed: ${message}`), 'crashed');
          }
      }
      return snapshot;
    },
    getPersistedSnapshot: (snapshot): PersistedFamily => snapshot.family.persisted(),
    restoreSnapshot: (persisted, scope) => {
      const p = persisted as unknown as PersistedFamily;
      for (const [, m] of p.members) deps.observeId?.(m.spec);
      // a finished child's id stays taken: its slim record keeps no spec, the run is its owner's
      if (p.owner) for (const [id] of p.finished ?? []) deps.observeId?.({ id, correlation: p.owner.correlation });
      const family = Family.restore(p, (family, id, member, m) => {
        member.ref = createChild(family, m.spec, scope as Scope, m.snapshot, member.remote);
        if (m.spec.targetFiles?.length) deps.locks?.acquire(m.spec.correlation.worktreePath, m.spec.targetFiles, id);
      });
      return { status: 'active', output: undefined, error: undefined, family };
    },
    start: (snapshot, scope) => {
      const family = snapshot.family;
      for (const member of family.members.values()) {
        const ref = member.ref;
        if (!ref || (ref.getSnapshot() as Snapshot<unknown>).status !== 'active') continue;
        ref.start();
        // a restored session lost the step it was in with the old process: it asks again
        if (!member.remote) ref.send({ type: 'RESTORED' });
      }
      startQueued(family, scope as Scope);
      // a batch sent before the restart may never have been seen: offer the mailbox again
      notify(family, scope as Scope);
    },
  };
}
