/**
 * The human gate: what the orchestrator asks a person (an `ask_user` permission, a worker's
 * question) waits here until someone answers or its time runs out, when the item's `onTimeout`
 * answer applies (deny, by default). Items are presented on the run's channels (the terminal
 * prompt, the control directory `a2a inbox` reads) and withdrawn when answered, expired, or moot
 * (the worker that asked has ended).
 *
 * Durability: the pending items are the actor's persisted snapshot and their deadlines are timers
 * of the actor system (persisted with the run's checkpoint), so a resumed run asks again and
 * keeps the original deadline.
 */
import type { ActorLogic, ActorScope, AnyActorRef, Snapshot } from 'xstate';
import type { Clock, EventSink, HumanDecision, HumanGateEvent, HumanGateReply } from '../../machines/ports.js';

import type { HumanAnswer, HumanItem } from '../../machines/protocol/index.js';
import { correlationOfRequest } from '../observation/events.js';
import { formatElapsed } from '../observation/runView.js';
import { parentOf, relay, stopped } from '../xstateInternals.js';
export type { HumanDecision, HumanGateEvent, HumanGateReply };

/** Where items are shown to people; both calls must be cheap and must not throw. */
export interface HumanChannel {
  present(item: HumanItem): void;
  withdraw(id: string, why: 'answered' | 'expired' | 'withdrawn'): void;
}


interface GateState {
  pending: Map<string, HumanItem>;
  answered: number;
  expired: number;
}

type GateSnapshot = Snapshot<undefined> & { gate: GateState };

interface PersistedGate {
  status: 'active';
  output: undefined;
  error: undefined;
  pending: HumanItem[];
  answered: number;
  expired: number;
}

const timerId = (id: string) => `human:${id}`;

export function createHumanGateLogic(deps: { clock: Clock; channel?: HumanChannel; events?: EventSink }): ActorLogic<GateSnapshot, HumanGateEvent> {
  const { channel, events } = deps;

  function decide(state: GateState, scope: ActorScope<GateSnapshot, HumanGateEvent>, item: HumanItem, decision: HumanDecision): void {
    state.pending.delete(item.id);
    const owner = parentOf(scope.self);
    if (!owner) return;
    const reply: HumanGateReply = { type: 'HUMAN_DECIDED', item, decision };
    scope.defer(() => relay(scope.self, owner, reply));
  }

  /** With the requester's whole correlation: a permission's from its request, a question's from the item. */
  const emit = (type: 'human.asked' | 'human.answered', item: HumanItem, data: Record<string, unknown>) =>
    events?.emit({
      type,
      // a question comes from a worker, under the orchestrator
      ...(item.request ? correlationOfRequest(item.request) : { subTaskId: item.requesterId, parentId: 'orchestrator', depth: 0, ...(item.agentType ? { agentType: item.agentType } : {}) }),
      ...(item.planId !== undefined ? { planId: item.planId } : {}),
      taskId: item.taskId,
      workerId: item.workerId,
      data: { id: item.id, kind: item.kind, title: item.title, ...data },
    });

  return {
    config: 'a2a.humanGate',
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined, gate: { pending: new Map(), answered: 0, expired: 0 } }),
    transition: (snapshot, event, scope) => {
      const state = snapshot.gate;
      switch (event.type) {
        case 'ASK': {
          if (state.pending.has(event.item.id)) return snapshot; // asked again after a restore: already waiting
          // the charts keep no clock: the person is asked now, and the default applies timeoutMs later
          const now = deps.clock.now();
          const request = event.item.request && !event.item.request.timestamp ? { ...event.item.request, timestamp: now } : event.item.request;
          const item: HumanItem = { ...event.item, askedAt: now, ...(request ? { request } : {}) };
          state.pending.set(item.id, item);
          scope.system.scheduler.schedule(scope.self, scope.self, { type: 'EXPIRE', id: item.id } as { type: string }, item.timeoutMs, timerId(item.id));
          emit('human.asked', item, { timeoutMs: item.timeoutMs, askedAt: now, expiresAt: now + item.timeoutMs, onTimeout: item.onTimeout, requesterId: item.requesterId });
          channel?.present(item);
          return snapshot;
        }
        case 'ANSWER': {
          const item = state.pending.get(event.id);
          if (!item) return snapshot; // answered already, expired, or withdrawn: the control channel reports it
          scope.system.scheduler.cancel(scope.self, timerId(item.id));
          const { answer } = event;
          // an MCP server's question (a permission that carries one) is answered by its text: accepted
          const elicitation = item.kind === 'permission' && item.request?.elicitation !== undefined;
          const approved = item.kind === 'permission' ? (answer.approved ?? (elicitation && answer.text !== undefined)) === true : true;
          const text = answer.text ?? (item.kind === 'permission' ? (elicitation ? '' : approved ? 'approved' : 'denied') : '');
          state.answered++;
          emit('human.answered', item, { approved, text, by: answer.by, ...(answer.reason ? { reason: answer.reason } : {}) });
          decide(state, scope, item, { approved, text, decidedBy: 'human', by: answer.by, ...(answer.reason ? { reason: answer.reason } : {}) });
          channel?.withdraw(item.id, 'answered');
          return snapshot;
        }
        case 'EXPIRE': {
          const item = state.pending.get(event.id);
          if (!item) return snapshot;
          state.expired++;
          const reason = `nobody answered within ${item.timeoutMs} ms`;
          emit('human.answered', item, { approved: item.onTimeout.approved, text: item.onTimeout.text, by: 'timeout', reason });
          decide(state, scope, item, { ...item.onTimeout, decidedBy: 'timeout', by: 'timeout', reason });
          channel?.withdraw(item.id, 'expired');
          return snapshot;
        }
        case 'WITHDRAW': {
          for (const item of [...state.pending.values()]) {
            if (item.workerId !== event.workerId) continue;
            state.pending.delete(item.id);
            scope.system.scheduler.cancel(scope.self, timerId(item.id));
            channel?.withdraw(item.id, 'withdrawn');
          }
          return snapshot;
        }
        case 'xstate.stop':
          for (const id of state.pending.keys()) channel?.withdraw(id, 'withdrawn');
          return stopped(snapshot);
      }
      return snapshot;
    },
    getPersistedSnapshot: (snapshot): Snapshot<unknown> => {
      const s = snapshot.gate;
      const persisted: PersistedGate = { status: 'active', output: undefined, error: undefined, pending: [...s.pending.values()], answered: s.answered, expired: s.expired };
      return persisted as unknown as Snapshot<unknown>;
    },
    restoreSnapshot: (persisted) => {
      const p = persisted as unknown as PersistedGate;
      return {
        status: 'active',
        output: undefined,
        error: undefined,
        gate: { pending: new Map(p.pending.map((i) => [i.id, i])), answered: p.answered, expired: p.expired },
      };
    },
    // a resumed run shows what is still waiting (the deadlines come back with the system's timers)
    start: (snapshot) => {
      for (const item of snapshot.gate.pending.values()) channel?.present(item);
    },
  };
}

/**
 * How long an item still waits at `now` before its default applies, and what that default is:
 * "4m12s left, then denied by default: nobody answered" (for `a2a inbox` and the terminal).
 */
export function describeWait(item: Pick<HumanItem, 'askedAt' | 'timeoutMs' | 'onTimeout'>, now: number): string {
  const left = Math.max(0, item.askedAt + item.timeoutMs - now);
  return `${formatElapsed(left)} left, then ${item.onTimeout.text}`;
}

/** The items waiting for a person, oldest first (for `a2a inbox` and the terminal). */
export function pendingItems(snapshot: unknown): HumanItem[] {
  const gate = (snapshot as { gate?: GateState } | undefined)?.gate;
  return gate ? [...gate.pending.values()].sort((a, b) => a.askedAt - b.askedAt) : [];
}
