/**
 * The external task chart's implementations (machines/externalTask.machine.ts draws the chart): its
 * context, events and timings, and the guards and actions its states name, under those names.
 */
import { assign, enqueueActions, sendTo, setup, type ActorLogic, type ActorSystem, type AnyEventObject, type Snapshot } from 'xstate';
import type { SessionSpec, SubTaskResult, TaskUpdate } from './protocol/index.js';
import { resultFromTaskResult, type TaskResultPayload } from './seed004.js';

export interface ExternalTaskConfig {
  /** How long an offered task may wait for the agent's acknowledgment (spec: 30 s). */
  ackTimeoutMs: number;
  /** How long an accepted task may run on one agent before it is reassigned (spec: 1800 s). */
  taskTimeoutMs: number;
  /** How long to wait for a registered agent with free capacity before giving up. */
  agentWaitMs: number;
  /** Offers in total (acknowledgment timeouts, rejections, reassignments) before the task fails. */
  maxAttempts: number;
  /** Exponential backoff before a task is offered again: base · 2^(attempt−1), capped. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_EXTERNAL_TASK_CONFIG: ExternalTaskConfig = {
  ackTimeoutMs: 30_000,
  taskTimeoutMs: 1_800_000,
  agentWaitMs: 300_000,
  maxAttempts: 3,
  backoffBaseMs: 1_000,
  backoffMaxMs: 30_000,
};

export interface ExternalTaskInput {
  spec: SessionSpec;
  config?: Partial<ExternalTaskConfig>;
}

/** From the wire (the gateway): what the agents said, with the gateway's clock time. */
export type WireReply =
  | { type: 'WIRE_READY'; at: number }
  | { type: 'AGENT_FOUND'; agentId: string; at: number }
  | { type: 'AGENT_ACK'; agentId: string; accepted: boolean; reason?: string; at: number }
  | { type: 'AGENT_PROGRESS'; agentId: string; progress: number | null; message: string; at: number }
  | { type: 'AGENT_QUERY'; agentId: string; messageId: string; question: string; options: string[]; at: number }
  | { type: 'AGENT_RESULT'; agentId: string; payload: TaskResultPayload; at: number }
  | { type: 'AGENT_ERROR'; agentId: string; code: string; message: string; recoverable: boolean; at: number }
  /** The agent went silent (missed heartbeats): its work is given up. */
  | { type: 'AGENT_LOST'; agentId: string; at: number };

/** To the wire. */
export type WireCommand =
  /** Find the least loaded agent with capacity, not one of `exclude` (they rejected), `avoid` only if none other. */
  | { type: 'FIND_AGENT'; exclude: string[]; avoid: string[] }
  | { type: 'OFFER'; agentId: string; messageId: string; attempt: number; deadlineAt: number }
  | { type: 'ANSWER'; agentId: string; queryId: string | null; text: string; from: string }
  | { type: 'CANCEL_TASK'; agentId: string; reason: string }
  /** After a restore: the task is with this agent (so the gateway routes its messages here). */
  | { type: 'ASSIGNED'; agentId: string };

export type ExternalTaskEvent =
  | WireReply
  /** From the owner: an answer or instruction for the agent. */
  | { type: 'MESSAGE'; from: string; text: string }
  | { type: 'CANCEL'; reason: string }
  /** The session's own deadline (`spec.timeoutMs`) passed: sent by the owner's supervisor. */
  | { type: 'TIMEOUT' }
  | { type: 'xstate.error.actor.wire'; error: unknown };

export interface Attempt {
  agentId: string;
  outcome: 'offered' | 'accepted' | 'rejected' | 'no_ack' | 'lost' | 'error' | 'task_timeout' | 'completed';
  reason?: string;
}

export interface ExternalTaskContext {
  spec: SessionSpec;
  config: ExternalTaskConfig;
  /** The agent the task is offered to or worked on by, if any. */
  agentId: string | null;
  /** Offers made so far. */
  attempts: number;
  history: Attempt[];
  /** Agents that rejected the task: never offered it again. */
  excluded: string[];
  /** Agents that did not acknowledge or went silent: offered it again only when no other can. */
  avoid: string[];
  /** The id of the current `task` message (acknowledgments correlate to it). */
  offerId: string | null;
  /** The latest clock time an event brought. */
  now: number;
  /** When the current agent's time is up (clock time), while it works. */
  deadlineAt: number | null;
  /** Clarifications asked and not answered yet, oldest first. */
  queries: Array<{ messageId: string; question: string }>;
  /** What the owner said while no agent was working on the task: told to the next one that accepts it. */
  held: Array<{ from: string; text: string }>;
  /** Updates sent to the owner (their ids). */
  seq: number;
  /** Why the current agent is being replaced. */
  reassignReason: string;
  result: SubTaskResult | null;
}

// its system named (ActorSystem<any>): xstate does not export AnyActorSystem, which the machine's declaration would need
export type WireLogic = ActorLogic<Snapshot<unknown>, WireCommand, { spec: SessionSpec }, ActorSystem<any>>;

/** A placeholder the gateway replaces (`machine.provide({ actors: { agentWire } })`). */
const unwired: WireLogic = {
  transition: (s) => s,
  getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }) as Snapshot<unknown>,
  getPersistedSnapshot: (s) => s,
};

const at = (event: AnyEventObject): number | null => {
  const value = (event as { at?: unknown }).at;
  return typeof value === 'number' ? value : null;
};

function update(context: ExternalTaskContext, kind: 'status' | 'question', message: string, timestamp: number): TaskUpdate {
  return {
    // the time is part of it: after a restore from an older snapshot the counters repeat, and a new
    // report with an old id would be dropped as a duplicate on its way to the owner
    id: `${context.spec.id}:x${context.attempts}.${context.seq}@${timestamp}:progress.${kind}`,
    type: 'progress',
    subTaskId: context.spec.id,
    parentId: context.spec.owner.ownerId,
    agentType: context.spec.agent.raw,
    kind,
    message,
    timestamp,
  };
}

function describeHistory(history: Attempt[]): string {
  return history.map((h) => `${h.agentId}: ${h.outcome.replace('_', ' ')}${h.reason ? ` (${h.reason})` : ''}`).join('; ');
}

export function ended(context: ExternalTaskContext, status: SubTaskResult['status'], error: string): SubTaskResult {
  return {
    taskId: context.spec.id,
    status,
    output: '',
    error,
    metadata: { attempts: context.attempts, history: context.history },
  };
}

function withLast(history: Attempt[], outcome: Attempt['outcome'], reason?: string): Attempt[] {
  const last = history.at(-1);
  if (!last) return history;
  return [...history.slice(0, -1), { ...last, outcome, ...(reason ? { reason } : {}) }];
}

/** The implementations of the chart (its timings come with each task's context). */
export const externalTaskSetup = setup({
  types: {
    input: {} as ExternalTaskInput,
    context: {} as ExternalTaskContext,
    events: {} as ExternalTaskEvent,
    output: {} as SubTaskResult,
    children: {} as { wire: 'agentWire' },
  },
  actors: { agentWire: unwired },
  delays: {
    ackTimeout: ({ context }) => context.config.ackTimeoutMs,
    agentWait: ({ context }) => context.config.agentWaitMs,
    /** What is left of the current agent's time (the deadline is in context: it survives a restore). */
    taskTimeout: ({ context }) => Math.max(0, (context.deadlineAt ?? context.now) - context.now),
    backoff: ({ context }) => Math.min(context.config.backoffMaxMs, context.config.backoffBaseMs * 2 ** Math.max(0, context.attempts - 1)),
  },
  guards: {
    fromAgent: ({ context, event }) => (event as { agentId?: string }).agentId === context.agentId,
    acceptedByAgent: ({ context, event }) => event.type === 'AGENT_ACK' && event.agentId === context.agentId && event.accepted,
    rejectedByAgent: ({ context, event }) => event.type === 'AGENT_ACK' && event.agentId === context.agentId && !event.accepted,
    recoverableFromAgent: ({ context, event }) => event.type === 'AGENT_ERROR' && event.agentId === context.agentId && event.recoverable,
    attemptsLeft: ({ context }) => context.attempts < context.config.maxAttempts,
  },
  actions: {
    noteTime: assign({ now: ({ context, event }) => at(event) ?? context.now }),
    findAgent: sendTo('wire', ({ context }): WireCommand => ({ type: 'FIND_AGENT', exclude: context.excluded, avoid: context.avoid })),
    /** After a restore the gateway learns again whose messages are this task's. */
    reattach: enqueueActions(({ context, enqueue }) => {
      if (context.agentId) enqueue.sendTo('wire', { type: 'ASSIGNED', agentId: context.agentId } satisfies WireCommand);
    }),
    assignAgent: assign(({ context, event }) => {
      const agentId = (event as { agentId: string }).agentId;
      const attempts = context.attempts + 1;
      return {
        agentId,
        attempts,
        offerId: `${context.spec.id}:task:${attempts}`,
        history: [...context.history, { agentId, outcome: 'offered' as const }],
        now: at(event) ?? context.now,
        deadlineAt: null,
        queries: [],
      };
    }),
    offerTask: sendTo('wire', ({ context }): WireCommand => ({
      type: 'OFFER',
      agentId: context.agentId!,
      messageId: context.offerId!,
      attempt: context.attempts,
      deadlineAt: context.now + context.config.ackTimeoutMs + context.config.taskTimeoutMs,
    })),
    startWorking: enqueueActions(({ context, event, enqueue }) => {
      const now = at(event) ?? context.now;
      enqueue.assign({ now, deadlineAt: now + context.config.taskTimeoutMs, history: withLast(context.history, 'accepted'), seq: context.seq + 1, held: [] });
      enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'status', `accepted by ${context.agentId} (attempt ${context.attempts})`, now) });
      // what the owner said while nobody held the task is not lost: the agent that took it hears it now
      if (context.agentId) {
        for (const m of context.held) enqueue.sendTo('wire', { type: 'ANSWER', agentId: context.agentId, queryId: null, text: m.text, from: m.from } satisfies WireCommand);
      }
    }),
    holdMessage: assign(({ context, event }) => (event.type === 'MESSAGE' ? { held: [...context.held, { from: event.from, text: event.text }] } : {})),
    excludeAgent: assign(({ context, event }) => {
      const reason = event.type === 'AGENT_ACK' ? event.reason : undefined;
      return {
        excluded: context.agentId ? [...context.excluded, context.agentId] : context.excluded,
        history: withLast(context.history, 'rejected', reason ?? undefined),
        agentId: null,
        offerId: null,
        now: at(event) ?? context.now,
      };
    }),
    forwardProgress: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'AGENT_PROGRESS') return;
      const pct = event.progress === null ? '' : `${Math.round(event.progress * 100)}% `;
      enqueue.assign({ now: event.at, seq: context.seq + 1 });
      enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'status', `${event.agentId}: ${pct}${event.message}`.trim(), event.at) });
    }),
    askOwner: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'AGENT_QUERY') return;
      const options = event.options.length ? ` (options: ${event.options.join(', ')})` : '';
      enqueue.assign({ now: event.at, seq: context.seq + 1, queries: [...context.queries, { messageId: event.messageId, question: event.question }] });
      enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'question', `${event.question}${options}`, event.at) });
    }),
    /** The owner's answer goes to the agent, for its oldest open question. */
    answerAgent: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'MESSAGE' || !context.agentId) return;
      const [query, ...rest] = context.queries;
      enqueue.sendTo('wire', { type: 'ANSWER', agentId: context.agentId, queryId: query?.messageId ?? null, text: event.text, from: event.from } satisfies WireCommand);
      enqueue.assign({ queries: rest });
    }),
    recordResult: assign(({ context, event }) => {
      if (event.type !== 'AGENT_RESULT') return {};
      const result = resultFromTaskResult(context.spec.id, event.agentId, event.payload);
      return {
        now: event.at,
        history: withLast(context.history, 'completed'),
        result: { ...result, metadata: { ...result.metadata, attempts: context.attempts, history: withLast(context.history, 'completed') } },
      };
    }),
    recordAgentFailure: assign(({ context, event }) => {
      if (event.type !== 'AGENT_ERROR') return {};
      const history = withLast(context.history, 'error', `${event.code}: ${event.message}`);
      return { now: event.at, history, result: { ...ended({ ...context, history }, 'failed', `${event.agentId} reported ${event.code}: ${event.message}`) } };
    }),
    /** Why the current agent is replaced (read by `reassign`). */
    markNoAck: assign(({ context }) => ({ reassignReason: 'no acknowledgment', history: withLast(context.history, 'no_ack', `no acknowledgment within ${context.config.ackTimeoutMs} ms`) })),
    markLost: assign(({ context, event }) => ({ now: at(event) ?? context.now, reassignReason: 'unresponsive', history: withLast(context.history, 'lost', 'missed heartbeats') })),
    markRecoverable: assign(({ context, event }) => ({
      now: at(event) ?? context.now,
      reassignReason: 'reported a recoverable error',
      history: withLast(context.history, 'error', event.type === 'AGENT_ERROR' ? `${event.code}: ${event.message}` : undefined),
    })),
    markTaskTimeout: assign(({ context }) => ({
      now: context.deadlineAt ?? context.now,
      reassignReason: 'task timeout',
      history: withLast(context.history, 'task_timeout', `not done within ${context.config.taskTimeoutMs} ms`),
    })),
    /** The current agent stops working on it (seed 004 `cancel`); the owner hears why. */
    reassign: enqueueActions(({ context, enqueue }) => {
      if (!context.agentId) return;
      enqueue.sendTo('wire', { type: 'CANCEL_TASK', agentId: context.agentId, reason: `reassigned: ${context.reassignReason}` } satisfies WireCommand);
      enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'status', `${context.agentId}: ${context.reassignReason}; the task is offered again`, context.now) });
      enqueue.assign({ avoid: context.avoid.includes(context.agentId) ? context.avoid : [...context.avoid, context.agentId], agentId: null, offerId: null, deadlineAt: null, queries: [], seq: context.seq + 1 });
    }),
    cancelAgent: enqueueActions(({ context, event, enqueue }) => {
      if (!context.agentId) return;
      const reason = event.type === 'CANCEL' ? event.reason : event.type === 'TIMEOUT' ? 'the task timed out' : 'the task ended';
      enqueue.sendTo('wire', { type: 'CANCEL_TASK', agentId: context.agentId, reason } satisfies WireCommand);
    }),
    recordCancelled: assign(({ context, event }) => ({ result: ended(context, 'cancelled', event.type === 'CANCEL' ? event.reason : 'cancelled') })),
    recordTimedOut: assign(({ context }) => ({ result: ended(context, 'timeout', `the task's deadline passed${context.agentId ? ` while ${context.agentId} worked on it` : ''}`) })),
    recordNoAgent: assign(({ context }) => ({
      result: ended(
        context,
        'failed',
        `no registered agent for @${context.spec.agent.agentName} with free capacity within ${context.config.agentWaitMs} ms${context.history.length ? ` (${describeHistory(context.history)})` : ''}`,
      ),
    })),
    recordGaveUp: assign(({ context }) => ({ result: ended(context, 'failed', `gave up after ${context.attempts} attempt(s): ${describeHistory(context.history)}`) })),
    recordRejectedLast: assign(({ context, event }) => {
      const reason = event.type === 'AGENT_ACK' ? (event.reason ?? undefined) : undefined;
      const history = withLast(context.history, 'rejected', reason);
      return { history, result: ended({ ...context, history }, 'failed', `gave up after ${context.attempts} attempt(s): ${describeHistory(history)}`) };
    }),
    recordWireError: assign(({ context, event }) => ({
      result: ended(context, 'failed', `the gateway failed: ${event.type === 'xstate.error.actor.wire' ? String((event.error as Error)?.message ?? event.error) : 'unknown'}`),
    })),
  },
});

