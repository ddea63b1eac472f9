/**
 * The orchestrator's inbox (seed 000, phase 4): one queue per priority (permission_request >
 * completion and error > question and idle_response > status_update), FIFO within a priority,
 * de-duplicated by message id. It offers the orchestrator one message at a time and waits for
 * `HANDLED`, so that a message whose handling takes time (a question answered by a model) holds
 * the ones behind it in order.
 *
 * Durability: every accepted message is journaled before it can be offered, and every handled
 * id after it was handled; the queues, the ids seen and the metrics are part of the actor's
 * persisted snapshot. On resume the journal's arrivals that the restored snapshot does not know
 * are enqueued again, so nothing is lost, and ids already seen are refused, so nothing is
 * handled twice.
 */
import type { ActorLogic, ActorScope, AnyActorRef, Snapshot } from 'xstate';
import type { Clock, EventSink, InboxEvent, InboxReply } from '../../machines/ports.js';

import type { PermissionRequest, QueueMessage, TaskUpdate } from '../../machines/protocol/index.js';
import { correlationOfRequest, type Correlated } from '../observation/events.js';
import { parentOf, relay, stopped } from '../xstateInternals.js';
export type { InboxEvent, InboxReply };

export interface InboxJournal {
  accepted(message: QueueMessage, at: number): void;
  handled(id: string, at: number): void;
}

export interface InboxMetrics {
  accepted: number;
  duplicates: number;
  handled: number;
  depth: number;
  maxDepth: number;
  /** From arrival to being offered. */
  waitTotalMs: number;
  waitMaxMs: number;
  /** From being offered to HANDLED. */
  processTotalMs: number;
  processMaxMs: number;
}


/**
 * A message the orchestrator made itself (a branch's permission request) has no time yet (the
 * charts keep no clock): it is stamped when it arrives, and so is the request it carries.
 */
function stamped(message: QueueMessage, now: number): QueueMessage {
  if (message.timestamp) return message;
  const content = message.content as { timestamp?: unknown } | null;
  const request = message.type === 'permission_request' && content && typeof content === 'object' && content.timestamp === 0 ? { ...content, timestamp: now } : message.content;
  return { ...message, timestamp: now, content: request as QueueMessage['content'] };
}

/** The correlation of the session a message comes from: its request's requester, or its update's sender. */
function senderOf(message: QueueMessage): Correlated {
  const content = message.content as Partial<PermissionRequest & TaskUpdate> | null;
  if (message.type === 'permission_request' && content?.correlation && typeof content.requesterId === 'string') return correlationOfRequest(content as PermissionRequest);
  const update = content && typeof content.subTaskId === 'string' ? content : null;
  return {
    planId: message.planId,
    taskId: message.taskId,
    workerId: message.workerId,
    subTaskId: update?.subTaskId ?? message.subTaskId ?? message.workerId,
    parentId: update?.parentId ?? 'orchestrator',
    depth: message.depth ?? 0,
    ...(typeof update?.agentType === 'string' ? { agentType: update.agentType } : {}),
  } as Correlated;
}

const RANK: Record<QueueMessage['priority'], number> = { critical: 0, high: 1, normal: 2, low: 3 };

export interface InboxState {
  queues: QueueMessage[][];
  heads: number[];
  /** Ids ever accepted (de-duplication survives restarts through the snapshot). */
  seen: Set<string>;
  arrivedAt: Map<string, number>;
  inFlight: { message: QueueMessage; offeredAt: number } | null;
  /** `ENQUEUE` events received. */
  received: number;
  metrics: InboxMetrics;
}

type InboxSnapshot = Snapshot<undefined> & { inbox: InboxState };

interface PersistedInbox {
  status: 'active';
  output: undefined;
  error: undefined;
  queued: QueueMessage[];
  seen: string[];
  arrivedAt: Array<[string, number]>;
  inFlight: QueueMessage | null;
  received: number;
  metrics: InboxMetrics;
}

const emptyMetrics = (): InboxMetrics => ({
  accepted: 0,
  duplicates: 0,
  handled: 0,
  depth: 0,
  maxDepth: 0,
  waitTotalMs: 0,
  waitMaxMs: 0,
  processTotalMs: 0,
  processMaxMs: 0,
});

function emptyState(): InboxState {
  return { queues: [[], [], [], []], heads: [0, 0, 0, 0], seen: new Set(), arrivedAt: new Map(), inFlight: null, received: 0, metrics: emptyMetrics() };
}

/** Queued messages in the order they will be offered. */
export function queuedInOrder(state: InboxState): QueueMessage[] {
  return state.queues.flatMap((q, i) => q.slice(state.heads[i]));
}

function send(scope: ActorScope<InboxSnapshot, InboxEvent>, reply: InboxReply): void {
  const owner = parentOf(scope.self);
  if (!owner) return;
  scope.defer(() => relay(scope.self, owner, reply));
}

export function createInboxLogic(deps: { clock: Clock; journal?: InboxJournal; events?: EventSink }): ActorLogic<InboxSnapshot, InboxEvent> {
  const { clock, journal } = deps;

  function offer(state: InboxState, scope: ActorScope<InboxSnapshot, InboxEvent>): void {
    if (state.inFlight) return;
    for (let p = 0; p < state.queues.length; p++) {
      const queue = state.queues[p]!;
      if (state.heads[p]! >= queue.length) continue;
      const message = queue[state.heads[p]!]!;
      state.heads[p]!++;
      if (state.heads[p]! > 1024 && state.heads[p]! * 2 > queue.length) {
        state.queues[p] = queue.slice(state.heads[p]);
        state.heads[p] = 0;
      }
      const now = clock.now();
      const wait = now - (state.arrivedAt.get(message.id) ?? now);
      state.metrics.waitTotalMs += wait;
      state.metrics.waitMaxMs = Math.max(state.metrics.waitMaxMs, wait);
      state.inFlight = { message, offeredAt: now };
      send(scope, { type: 'INBOX_MESSAGE', message });
      return;
    }
    send(scope, { type: 'INBOX_DRAINED', received: state.received });
  }

  const depth = (state: InboxState) => state.queues.reduce((n, q, i) => n + q.length - state.heads[i]!, 0) + (state.inFlight ? 1 : 0);

  return {
    config: 'a2a.inbox',
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined, inbox: emptyState() }),
    transition: (snapshot, event, scope) => {
      const state = snapshot.inbox;
      if ((event as { type: string }).type === 'xstate.stop') return stopped(snapshot);
      if (event.type === 'ENQUEUE') {
        const now = clock.now();
        state.received++;
        for (const arrived of event.messages) {
          const message = stamped(arrived, now);
          if (state.seen.has(message.id)) {
            state.metrics.duplicates++;
            continue;
          }
          state.seen.add(message.id);
          state.arrivedAt.set(message.id, now);
          if (!event.replay) journal?.accepted(message, now);
          if (deps.events?.listening !== false) {
            deps.events?.emit({
              type: 'inbox.accepted',
              ...senderOf(message),
              data: { id: message.id, type: message.type, priority: message.priority, ...(event.replay ? { replayed: true } : {}) },
            });
          }
          state.queues[RANK[message.priority]]!.push(message);
          state.metrics.accepted++;
        }
        state.metrics.depth = depth(state);
        state.metrics.maxDepth = Math.max(state.metrics.maxDepth, state.metrics.depth);
        if (state.inFlight) return snapshot;
        offer(state, scope);
      } else if (event.type === 'HANDLED') {
        if (state.inFlight?.message.id !== event.id) return snapshot;
        const now = clock.now();
        const took = now - state.inFlight.offeredAt;
        state.metrics.processTotalMs += took;
        state.metrics.processMaxMs = Math.max(state.metrics.processMaxMs, took);
        state.metrics.handled++;
        state.arrivedAt.delete(event.id);
        journal?.handled(event.id, now);
        const m = state.inFlight.message;
        deps.events?.emit({ type: 'inbox.handled', taskId: m.taskId, workerId: m.workerId, data: { id: event.id, type: m.type, tookMs: took } });
        state.inFlight = null;
        offer(state, scope);
        state.metrics.depth = depth(state);
      }
      return snapshot;
    },
    getPersistedSnapshot: (snapshot): Snapshot<unknown> => {
      const s = snapshot.inbox;
      const persisted: PersistedInbox = {
        status: 'active',
        output: undefined,
        error: undefined,
        queued: queuedInOrder(s),
        seen: [...s.seen],
        arrivedAt: [...s.arrivedAt],
        inFlight: s.inFlight?.message ?? null,
        received: s.received,
        metrics: s.metrics,
      };
      return persisted as unknown as Snapshot<unknown>;
    },
    restoreSnapshot: (persisted) => {
      const p = persisted as unknown as PersistedInbox;
      const state = emptyState();
      for (const id of p.seen) state.seen.add(id);
      for (const [id, at] of p.arrivedAt) state.arrivedAt.set(id, at);
      for (const m of p.queued) state.queues[RANK[m.priority]]!.push(m);
      state.received = p.received;
      // the message in flight is offered again on start: an owner that restored mid-way through
      // handling it ignores the offer, one that had not seen it handles it
      if (p.inFlight) state.inFlight = { message: p.inFlight, offeredAt: clock.now() };
      state.metrics = { ...p.metrics };
      return { status: 'active', output: undefined, error: undefined, inbox: state };
    },
    start: (snapshot, scope) => {
      const state = snapshot.inbox;
      if (state.inFlight) send(scope, { type: 'INBOX_MESSAGE', message: state.inFlight.message });
      else offer(state, scope);
    },
  };
}
