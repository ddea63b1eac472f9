/**
 * The session chart's implementations (machines/session.ts draws the chart): its context and
 * events, the guards and actions its states name (under those names), the supervisor's and the
 * agent loop's contracts, and the name shown for a state. What the chart does is read there; how
 * each named step does it, here.
 *
 * Over 600 lines, for a reason: its actions are written inside the one setup() call, because
 * XState types each action (its context, event and the actors it may spawn or send to) from the
 * setup() it is written in; an action written in another module needs those five type parameters
 * spelled out on every assign(), which is longer and drifts from the chart.
 */
import { assign, enqueueActions, sendTo, setup, type ActorLogic, type ActorSystem, type AnyActorRef, type Snapshot } from 'xstate';
import { errorText } from './errorText.js';
import { idleInquiryMachine, type IdleInquiryOutput } from './idleInquiry.machine.js';
import type {
  AgentLoopReply,
  AgentLoopRequest,
  CallModelOutput,
  FamilyView,
  InboxItem,
  PermissionAsk,
  SupervisorEvent,
  SupervisorInput,
  SupervisorReply,
  ToolEffect,
  ToolOutcome,
} from './ports.js';
import { PERMISSION_CATEGORY, type ChatMessage, type IdleInquiryRequest, type SessionCommand, type PermissionDecision, type PermissionRequest, type ResultStatus, type SessionSpec, type SubTaskResult, type TaskUpdate, type ToolCall, type UpdateBatch, type Usage } from './protocol/index.js';

/** What a session hears: its owner's commands and its children's replies (all from machines/protocol/), and XState's own. */
export type SessionEvent =
  | SessionCommand
  | IdleInquiryRequest
  | SupervisorReply
  | AgentLoopReply
  | { type: 'xstate.error.actor.subtasks'; actorId: string; error: unknown }
  | { type: 'xstate.done.actor.idleInquiry'; actorId: string; output: IdleInquiryOutput }
  | { type: 'xstate.error.actor.idleInquiry'; actorId: string; error: unknown };

/**
 * Domain events that neither the snapshots nor the conversation show. State changes, model calls
 * and tool calls are not emitted: the runtime reads them from XState's inspection stream (state
 * values, messages appended to the conversation), and only when someone listens.
 */
export type SessionEmitted =
  | { type: 'permission.requested'; request: PermissionRequest }
  | { type: 'permission.decided'; decision: PermissionDecision; action: string; detail: string; requesterId: string; via: string[] }
  | { type: 'stuck.detected'; reason: string }
  | { type: 'worker.reassigned'; from: string; to: string; by: string }
  | { type: 'worker.reinitialized'; by: string }
  | { type: 'inquiry.sent'; attempt: number }
  | { type: 'inquiry.answered'; text: string }
  | { type: 'circuit.open'; failures: number }
  | { type: 'budget.reached'; scope: 'run' | 'worker'; limitUsd: number; spentUsd: number }
  | { type: 'model.switched'; from: string | null; to: string; by: string };

export type SessionStateName =
  | 'pending'
  | 'running'
  | 'thinking'
  | 'usingTools'
  | 'spawning'
  | 'waitingForPermission'
  | 'awaitingChildren'
  | 'awaitingUpdates'
  | 'idle'
  | 'paused'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'timedOut';

/*
 * Contract with the agent loop: tool effects that name children (`await`, `message`, `cancel`)
 * come only from tools that checked the ids against this session's children, so the `subtasks`
 * supervisor exists when they arrive.
 */
export interface SessionContext {
  spec: SessionSpec;
  messages: ChatMessage[];
  /** Messages, inquiries and resumes waiting for the next model call. */
  inbox: InboxItem[];
  /** The update batch received from `subtasks` and not yet acknowledged. */
  batch: UpdateBatch | null;
  /** Tool calls of the current turn still to run, in order. */
  pendingCalls: ToolCall[];
  lastText: string;
  turns: number;
  usage: Usage;
  /** Children not yet settled, as last reported by `subtasks`. */
  live: number;
  /**
   * Health: the last tool call, how often in a row, calls in a row without progress, and failed
   * calls in a row (the circuit breaker's count).
   */
  health: { lastCall: string | null; repeats: number; sinceProgress: number; reported: boolean; failures: number };
  /** Files this session's tools changed, with lines added and removed (its result's diff stats). */
  changes: Record<string, { insertions: number; deletions: number }>;
  /** Permissions in flight. */
  perms: {
    /** The permission this session's running tool waits for. */
    own: PermissionRequest | null;
    /**
     * Decisions received during the current tool call, by request id: a tool run again (the
     * session was restored) asks again with the same id and gets the decision at once, instead of
     * asking an orchestrator that already decided (and de-duplicates the request).
     */
    decided: Record<string, PermissionDecision>;
    /** Requests passed up for a child: request id → the child it came from (where the decision goes). */
    routes: Record<string, string>;
  };
  /** What a blocking tool call waits for: the supervisor's answer to a spawn, the awaited children. */
  waits: {
    spawn: { requestId: string; call: ToolCall; blocking: boolean; timeoutMs: number } | null;
    awaiting: { call: ToolCall; ids: string[]; timeoutMs: number } | null;
  };
  meta: {
    /** How many times the session was reinitialized: ids made from turns and steps include it. */
    epoch: number;
    /** Messages summarized away (so that step numbers keep growing when the history shrinks). */
    stepBase: number;
    /** Why a paused worker is paused (the circuit breaker, a spent budget). */
    pausedFor: string | null;
    /** Why the session is about to fail (set by the transition into `failed`). */
    failure: string | null;
  };
  /** Helpers spawned on first need, and the watchdog's open inquiry. */
  has: {
    /** The `subtasks` supervisor (on the first spawn: leaf sessions never need one). */
    subtasks: boolean;
    /** The `idleInquiry` watchdog (the first time the session went idle). */
    watchdog: boolean;
    /** An idle inquiry was injected and its answer not yet seen. */
    inquiry: boolean;
  };
  result: SubTaskResult | null;
}

/*
 * Sixteen top-level keys, on purpose: XState builds each new context with
 * `Object.assign({}, context, update)`, and V8 turns an object built that way with more than
 * about 17 properties into a slow dictionary-mode object (measured: 10 % of a 10k fan-out's CPU
 * and 1.4 KB per idle session at 25 keys). Rarely changed fields are grouped.
 */
export const freshHealth: SessionContext['health'] = { lastCall: null, repeats: 0, sinceProgress: 0, reported: false, failures: 0 };
export const noPerms: SessionContext['perms'] = { own: null, decided: {}, routes: {} };
export const noWaits: SessionContext['waits'] = { spawn: null, awaiting: null };
export const freshMeta: SessionContext['meta'] = { epoch: 0, stepBase: 0, pausedFor: null, failure: null };
export const noHelpers: SessionContext['has'] = { subtasks: false, watchdog: false, inquiry: false };

/**
 * Tool effects the chart acts on with a transition of its own (the others are recorded in
 * passing): the agent loop's tool calls in a model step stop after one of these.
 */
export const CHART_EFFECTS: ReadonlySet<ToolEffect['kind']> = new Set(['spawn', 'await', 'complete']);

const isEmpty = (record: Record<string, unknown>) => {
  for (const _ in record) return false;
  return true;
};

/** Why the session looks stuck (the same call again and again, or no progress), once; null when it does not. */
function stuckReason(h: SessionContext['health'], spec: SessionSpec): string | null {
  if (h.reported) return null;
  if (h.repeats >= spec.limits.stuckRepeatLimit) return `the same tool call ${h.repeats} times in a row (${h.lastCall?.slice(0, 120)})`;
  if (h.sinceProgress >= spec.limits.stuckStepLimit) return `${h.sinceProgress} tool calls in a row without progress`;
  return null;
}

function answerOf(decision: PermissionDecision): LoopCommand {
  return {
    type: 'PERMISSION_ANSWER',
    requestId: decision.requestId,
    answer: { approved: decision.approved, decidedBy: decision.decidedBy, ...(decision.reason ? { reason: decision.reason } : {}), ...(decision.text !== undefined ? { text: decision.text } : {}) },
  };
}

/**
 * Health bookkeeping after a tool call: a call is progress when it succeeded and is not the same
 * call (name and arguments) as the one before; a failed call counts towards the breaker.
 */
function healthAfter(context: SessionContext, call: ToolCall, ok: boolean): SessionContext['health'] {
  const key = `${call.name}:${JSON.stringify(call.arguments)}`;
  const repeats = key === context.health.lastCall ? context.health.repeats + 1 : 1;
  const progress = ok && repeats === 1;
  return {
    ...context.health,
    lastCall: key,
    repeats,
    sinceProgress: progress ? 0 : context.health.sinceProgress + 1,
    failures: ok ? 0 : context.health.failures + 1,
  };
}

/** The supervisor logic type, as the session sees it (implemented in actors/session/supervisor.ts). */
export type SupervisorLogic = ActorLogic<Snapshot<unknown>, SupervisorEvent, SupervisorInput, ActorSystem<any>>;
/**
 * What the chart asks of its agent loop: a step to start (its reply comes back as an event), an
 * answer for the running tool, or to abort the step in flight. The runtime provides the `loop`
 * action that does it (actors/session/agentLoop.ts); steps run in this actor, not in a child actor.
 */
export type LoopCommand = AgentLoopRequest | { type: 'ABORT'; reason: string };

const notProvided = (what: string) => () => {
  throw new Error(`${what} is not provided: build the machines with createRuntime() from actors/runtime.ts`);
};

/** Placeholders; the runtime provides the real logic. */
const placeholder = (what: string) => ({
  transition: (s: Snapshot<unknown>) => s,
  getInitialSnapshot: notProvided(what) as never,
  getPersistedSnapshot: (s: Snapshot<unknown>) => s,
});

export const emptyUsage: Usage = { inputTokens: 0, outputTokens: 0, modelCalls: 0 };

/** No updates (a request made without a batch): one array for all of them, never changed. */
const NO_UPDATES: TaskUpdate[] = [];

function toolMessage(call: ToolCall, content: string, isError: boolean): ChatMessage {
  return isError
    ? { role: 'tool', toolCallId: call.id, name: call.name, content, isError: true }
    : { role: 'tool', toolCallId: call.id, name: call.name, content };
}

function diffStatsOf(changes: SessionContext['changes']): SubTaskResult['diffStats'] | undefined {
  if (isEmpty(changes)) return undefined;
  const files = Object.keys(changes);
  if (files.length === 0) return undefined;
  let insertions = 0;
  let deletions = 0;
  for (const c of Object.values(changes)) {
    insertions += c.insertions;
    deletions += c.deletions;
  }
  return { changedFiles: files.length, insertions, deletions, files };
}

export function result(context: SessionContext, status: ResultStatus, extra?: Partial<SubTaskResult>): SubTaskResult {
  // built in place, in the order the spreads gave it (a result is shown as JSON, key by key)
  const made: SubTaskResult = { taskId: context.spec.id, status, output: context.lastText, usage: context.usage };
  const diffStats = diffStatsOf(context.changes);
  if (diffStats) made.diffStats = diffStats;
  return extra ? Object.assign(made, extra) : made;
}

/** A session's children, as its `subtasks` supervisor shows them (null before its first spawn). */
export function familyOfSession(session: { getSnapshot(): unknown } | undefined): FamilyView | null {
  const supervisor = (session?.getSnapshot() as { children?: { subtasks?: { getSnapshot(): unknown } } } | undefined)?.children?.subtasks;
  return (supervisor?.getSnapshot() as { family?: FamilyView } | undefined)?.family ?? null;
}

/**
 * A failing session's output with its children's finished results appended: what they did is
 * not lost with it (a model call that failed after two sub-tasks had succeeded). Read from its
 * `subtasks` supervisor's view; nothing when it has no children or none finished well.
 */
function withChildResults(context: SessionContext, self: { getSnapshot(): unknown }): { output?: string } {
  const family = context.has.subtasks ? familyOfSession(self) : null;
  if (!family) return {};
  const done = family
    .ids()
    .map((id) => family.result(id))
    .filter((r): r is SubTaskResult => r !== undefined && (r.status === 'success' || r.status === 'partial'));
  if (done.length === 0) return {};
  // bounded: a result travels in snapshots and over NATS (a failing parent of a large fan-out)
  const clip = (text: string) => (text.length > 500 ? `${text.slice(0, 500)}… [${text.length - 500} more characters in its own result]` : text);
  const lines = done.slice(0, 20).map((r) => `- ${r.taskId} (${r.status}): ${clip(r.output)}`);
  if (done.length > 20) lines.push(`- … and ${done.length - 20} more: see their own results`);
  return { output: `${context.lastText ? `${context.lastText}\n\n` : ''}Results of its sub-tasks before it failed:\n${lines.join('\n')}` };
}

function withChanges(changes: SessionContext['changes'], outcome: ToolOutcome): SessionContext['changes'] {
  if (!outcome.changes?.length) return changes;
  const next = { ...changes };
  for (const c of outcome.changes) {
    const before = next[c.file] ?? { insertions: 0, deletions: 0 };
    next[c.file] = { insertions: before.insertions + c.insertions, deletions: before.deletions + c.deletions };
  }
  return next;
}

/**
 * The number of the next step: one more than every message the session has had, so it grows with
 * each step (every step appends to the conversation), stays the same when a request is re-sent,
 * and keeps growing when a summary replaces part of the history.
 */
function stepOf(context: SessionContext): number {
  return context.meta.stepBase + context.messages.length + 1;
}

function update(context: SessionContext, type: TaskUpdate['type'], fields: Partial<TaskUpdate>): TaskUpdate {
  return {
    id: `${context.spec.id}:${context.meta.epoch}.${context.turns}.${context.messages.length}:${type}${fields.kind ? `.${fields.kind}` : ''}`,
    type,
    subTaskId: context.spec.id,
    parentId: context.spec.owner.ownerId,
    agentType: context.spec.agent.raw,
    timestamp: 0,
    ...fields,
  };
}

/** The part of `enqueueActions`' enqueuer that recording an outcome uses. */
interface Enqueue {
  assign(update: Partial<SessionContext>): void;
  sendParent(event: { type: 'SUBTASK_UPDATE'; update: TaskUpdate }): void;
  sendTo(to: 'subtasks', event: SupervisorEvent): void;
  emit(event: SessionEmitted): void;
}

/**
 * Gives the agent loop a command now, from an action that does nothing else: the `loop`
 * implementation of this actor's machine (the runtime's, or the placeholder that says it is
 * missing), called directly. Through `enqueueActions` the same call cost nine closures, an
 * action list resolved on its own and a second action, about 1 KB allocated per call (a no-op
 * sub-task makes two: its model request, and the abort of its step as it ends).
 */
function commandLoop(args: { self: AnyActorRef }, command: LoopCommand): void {
  const logic = (args.self as unknown as { logic?: { implementations?: { actions?: Record<string, unknown> } } }).logic;
  const loop = logic?.implementations?.actions?.loop as ((args: { self: AnyActorRef }, command: LoopCommand) => void) | undefined;
  loop?.(args, command);
}

const ABORT_STEP: LoopCommand = { type: 'ABORT', reason: 'the session left the step it was running' };

/** Queues a command for the agent loop (the `loop` action the runtime provides). */
function toLoop(enqueue: (action: never) => void, command: LoopCommand): void {
  // an action named with params: XState resolves it against the provided implementations
  enqueue({ type: 'loop', params: command } as never);
}

/**
 * Records one tool call's outcome (its message, health, changes) and acts on its effect; returns
 * the context as it is afterwards, for a caller that records several in a row.
 */
function recordOutcome(context: SessionContext, enqueue: Enqueue, outcome: ToolOutcome): SessionContext {
  const [call, ...rest] = context.pendingCalls;
  if (!call) return context;
  const changed = {
    messages: [...context.messages, toolMessage(call, outcome.content, outcome.isError)],
    pendingCalls: rest,
    health: healthAfter(context, call, !outcome.isError),
    changes: withChanges(context.changes, outcome),
  };
  enqueue.assign(changed);
  let next: SessionContext = { ...context, ...changed };
  const effect = outcome.effect;
  if (!effect) return next;
  switch (effect.kind) {
    case 'notify':
      enqueue.sendParent({
        type: 'SUBTASK_UPDATE',
        update: update(next, 'progress', { kind: effect.notification, message: effect.message }),
      });
      break;
    case 'ackUpdates':
      // a filtered check takes those sub-tasks' updates; the supervisor offers the others again
      // at once, in a new batch (keeping the old one here could acknowledge that new one unseen)
      if (next.batch) enqueue.sendTo('subtasks', { type: 'ACK_UPDATES', upTo: next.batch.upTo, ...(effect.subTaskIds ? { subTaskIds: effect.subTaskIds } : {}) });
      enqueue.assign({ batch: null });
      next = { ...next, batch: null };
      break;
    case 'message':
      enqueue.sendTo('subtasks', { type: 'SEND_TO_CHILD', to: effect.to, from: next.spec.id, text: effect.text });
      break;
    case 'cancel':
      enqueue.sendTo('subtasks', { type: 'CANCEL_CHILDREN', ids: effect.ids, reason: effect.reason });
      break;
    default:
      break;
  }
  return next;
}

export const sessionSetup = setup({
  types: {
    /** `inbox`: messages that waited for the session to start (it was queued for a slot). */
    input: {} as { spec: SessionSpec; inbox?: InboxItem[] },
    context: {} as SessionContext,
    events: {} as SessionEvent,
    output: {} as SubTaskResult,
    emitted: {} as SessionEmitted,
    children: {} as { subtasks: 'subtasks'; idleInquiry: 'idleInquiry' },
  },
  actors: {
    subtasks: placeholder('the subtasks supervisor') as SupervisorLogic,
    idleInquiry: idleInquiryMachine,
  },
  delays: {
    awaitTimeout: ({ context }) => context.waits.awaiting?.timeoutMs ?? 0,
    /** The first idle inquiry is due: the threshold and the grace period (the watchdog starts then). */
    inquiryDue: ({ context }) => context.spec.idle.idleThresholdMs + context.spec.idle.inquiryDelayMs,
  },
  guards: {
    turnLimitReached: ({ context }) => context.turns >= context.spec.limits.maxTurns,
    replyHasToolCalls: (_, output: CallModelOutput) => output.reply.toolCalls.length > 0,
    inputArrivedDuringCall: ({ context }, output: CallModelOutput) =>
      context.inbox.length > output.consumedInbox || (context.batch !== null && output.consumedUpTo === null),
    hasLiveChildren: ({ context }) => context.live > 0,
    effectIs: (_, params: { outcome: ToolOutcome | undefined; kind: ToolEffect['kind'] }) => params.outcome?.effect?.kind === params.kind,
    spawnAcceptedAndBlocking: ({ context, event }) =>
      event.type === 'SPAWN_RESULT' && event.ok && context.waits.spawn?.blocking === true,
    circuitOpen: ({ context }) => context.health.failures >= context.spec.limits.circuitBreakerThreshold,
    hasMoreCalls: ({ context }) => context.pendingCalls.length > 0,
    noWatchdog: ({ context }) => !context.has.watchdog,
    inquiryExhausted: (_, output: IdleInquiryOutput) => output.reason === 'exhausted',
    /** A child's request this session may approve: within its own level. */
    withinOwnLevel: ({ context }, request: PermissionRequest) => !request.needsPerson && context.spec.permissions.level.includes(request.action),
    isOwnRequest: ({ context }, decision: PermissionDecision) => context.perms.own?.id === decision.requestId,
    decidedThisStep: ({ context }, requestId: string) => requestId in context.perms.decided,
    routedHere: ({ context }, decision: PermissionDecision) => decision.requestId in context.perms.routes,
    stuck: ({ context }) => stuckReason(context.health, context.spec) !== null,
  },
  actions: {
    // -- The agent loop: what the chart asks of it, and what its steps brought
    /** Placeholder; the runtime provides the agent loop (see LoopCommand). */
    loop: (_, _command: LoopCommand) => notProvided('the agent loop')(),
    /** The step in flight (a model call, a tool, a command) is aborted: its AbortSignal fires. */
    abortStep: (args) => commandLoop(args, ABORT_STEP),
    /**
     * Asks the agent loop for one model call with everything that waits to be injected. Steps are
     * numbered by the conversation's length (see stepOf): every step appends to it before the next request, so
     * the number is unique and growing, and a re-sent request keeps it.
     */
    sendModelRequest: (args) => {
      const { context } = args;
      // at the turn limit `thinking` is left at once (eventless): no call may start
      if (context.turns >= context.spec.limits.maxTurns) return;
      const batch = context.batch;
      commandLoop(args, {
        type: 'CALL_MODEL',
        step: stepOf(context),
        input: {
          spec: context.spec,
          messages: context.messages,
          inbox: context.inbox,
          updates: batch ? batch.updates : NO_UPDATES,
          upTo: batch ? batch.upTo : null,
          // one shape for every request (a spread here made each one a slow object of its own)
          dropped: batch?.dropped || undefined,
          turn: context.turns,
          live: context.live,
          epoch: context.meta.epoch,
          failures: context.health.failures,
        },
      });
    },
    /** Asks the agent loop to run the next tool call of this turn. */
    sendToolRequest: (args) => {
      const { context } = args;
      const batch = context.batch;
      commandLoop(args, {
        type: 'RUN_TOOL',
        step: stepOf(context),
        input: { spec: context.spec, call: context.pendingCalls[0]!, updates: batch ? batch.updates : NO_UPDATES, dropped: batch?.dropped || undefined, epoch: context.meta.epoch },
      });
    },
    recordReply: enqueueActions(({ context, enqueue }, output: CallModelOutput) => {
      const { reply } = output;
      const assistant: ChatMessage =
        reply.toolCalls.length > 0
          ? { role: 'assistant', content: reply.text, toolCalls: reply.toolCalls }
          : { role: 'assistant', content: reply.text };
      if (output.replyId) assistant.replyId = output.replyId;
      if (output.model) assistant.model = output.model;
      if (output.profile) assistant.profile = output.profile;
      const consumedBatch = output.consumedUpTo !== null && context.batch !== null && context.batch.upTo <= output.consumedUpTo;
      // the update and the usage are built in place, not with spreads of optional parts (each
      // spread after the first made an object of a shape of its own, slow to build and to copy)
      // (in the order the spreads gave it: the usage is shown as JSON)
      const usage = { inputTokens: context.usage.inputTokens + reply.usage.inputTokens, outputTokens: context.usage.outputTokens + reply.usage.outputTokens } as Usage;
      if (reply.usage.cacheReadTokens || context.usage.cacheReadTokens) usage.cacheReadTokens = (context.usage.cacheReadTokens ?? 0) + (reply.usage.cacheReadTokens ?? 0);
      if (reply.usage.cacheWriteTokens || context.usage.cacheWriteTokens) usage.cacheWriteTokens = (context.usage.cacheWriteTokens ?? 0) + (reply.usage.cacheWriteTokens ?? 0);
      usage.modelCalls = context.usage.modelCalls + 1;
      if (output.costUsd !== undefined || context.usage.costUsd !== undefined) usage.costUsd = (context.usage.costUsd ?? 0) + (output.costUsd ?? 0);
      const changed: Partial<SessionContext> = {
        // a conversation summarized to fit the model's window replaces the history it summarized
        messages: [...(output.compacted ?? context.messages), ...output.injected, assistant],
        // nothing consumed: the same (immutable) inbox
        inbox: output.consumedInbox === 0 ? context.inbox : context.inbox.slice(output.consumedInbox),
        batch: consumedBatch ? null : context.batch,
        pendingCalls: reply.toolCalls,
        lastText: reply.text.trim() ? reply.text : context.lastText,
        turns: context.turns + 1,
        usage,
      };
      if (output.compacted) changed.meta = { ...context.meta, stepBase: context.meta.stepBase + context.messages.length - output.compacted.length };
      if (context.has.inquiry) changed.has = { ...context.has, inquiry: false };
      enqueue.assign(changed);
      if (output.consumedUpTo !== null) enqueue.sendTo('subtasks', { type: 'ACK_UPDATES', upTo: output.consumedUpTo });
      if (context.has.inquiry) {
        const answer =
          reply.text.trim() ||
          (reply.toolCalls.length > 0 ? `(answered with tool calls: ${reply.toolCalls.map((c) => c.name).join(', ')})` : '(empty reply)');
        enqueue.sendTo('idleInquiry', { type: 'INQUIRY_ANSWERED' });
        enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'idle_response', { message: answer }) });
        enqueue.emit({ type: 'inquiry.answered', text: answer });
      }
    }),
    recordToolOutcome: enqueueActions(({ context, enqueue }, outcome: ToolOutcome) => {
      recordOutcome(context, enqueue as unknown as Enqueue, outcome);
    }),
    /**
     * The tool calls run in the model's step (`MODEL_REPLIED.ran`), recorded in order as if each
     * had been its own step; the last one, when its effect is one the chart acts on (spawn, await,
     * complete), is left to the transition's own action. A call that makes the session look
     * stuck is reported where it happens, as it would have been one step at a time.
     */
    recordRan: enqueueActions(({ context, enqueue }, ran: ToolOutcome[] | undefined) => {
      if (!ran?.length) return;
      const last = ran.at(-1)!;
      const upTo = last.effect && CHART_EFFECTS.has(last.effect.kind) ? ran.length - 1 : ran.length;
      let current = context;
      for (let i = 0; i < upTo; i++) {
        current = recordOutcome(current, enqueue as unknown as Enqueue, ran[i]!);
        const reason = stuckReason(current.health, current.spec);
        if (reason !== null) {
          current = { ...current, health: { ...current.health, reported: true } };
          enqueue.assign({ health: current.health });
          enqueue.emit({ type: 'stuck.detected', reason });
          enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(current, 'progress', { kind: 'stuck', message: `stuck: ${reason}` }) });
        }
      }
    }),
    recordToolCrash: enqueueActions(({ context, enqueue }, params: { error: unknown }) => {
      const [call, ...rest] = context.pendingCalls;
      if (!call) return;
      const content = `Tool ${call.name} failed inside the runtime: ${errorText(params.error)}`;
      enqueue.assign({
        messages: [...context.messages, toolMessage(call, content, true)],
        pendingCalls: rest,
        health: healthAfter(context, call, false),
      });
    }),
    // -- Permissions: this session's own, and its children's on their way up and down
    /** Asks this session's parent (through its supervisor) for a permission outside its level. */
    requestPermission: enqueueActions(({ context, enqueue }, params: { requestId: string; ask: PermissionAsk }) => {
      const request: PermissionRequest = {
        id: params.requestId,
        action: params.ask.action,
        category: PERMISSION_CATEGORY[params.ask.action],
        requesterId: context.spec.id,
        agentType: context.spec.agent.raw,
        detail: params.ask.detail,
        correlation: context.spec.correlation,
        via: [context.spec.id],
        timestamp: 0,
        ...(params.ask.needsPerson ? { needsPerson: true } : {}),
        ...(params.ask.elicitation ? { elicitation: params.ask.elicitation } : {}),
      };
      enqueue.assign({ perms: { ...context.perms, own: request } });
      enqueue.emit({ type: 'permission.requested', request });
      enqueue.sendParent({ type: 'PERMISSION_REQUEST', request });
    }),
    /** Gives the running tool its answer. */
    answerTool: enqueueActions(({ context, enqueue }, decision: PermissionDecision) => {
      toLoop(enqueue, answerOf(decision));
      // the decider (policy, a parent, the orchestrator) reported the decision; it is not repeated here
      enqueue.assign({ perms: { ...context.perms, own: null, decided: { ...context.perms.decided, [decision.requestId]: decision } } });
    }),
    /** The running tool asked again for what was decided during this call (its loop was restored). */
    answerFromStep: (args, requestId: string) => commandLoop(args, answerOf(args.context.perms.decided[requestId]!)),
    /** A decision that arrives while the tool is not waiting for it (it was restored and has not asked again yet). */
    keepDecision: assign(({ context }, decision: PermissionDecision) => ({
      perms: { ...context.perms, own: null, decided: { ...context.perms.decided, [decision.requestId]: decision } },
    })),
    /** A tool call ended: what it asked and was told no longer matters. */
    forgetStepDecisions: assign(({ context }) =>
      context.perms.own === null && isEmpty(context.perms.decided) ? {} : { perms: { ...context.perms, own: null, decided: {} } },
    ),
    /** A child's request within this session's level: approved here. */
    approveForChild: enqueueActions(({ context, enqueue }, request: PermissionRequest) => {
      const decision: PermissionDecision = { requestId: request.id, approved: true, decidedBy: 'parent', decider: context.spec.id };
      enqueue.sendTo('subtasks', { type: 'PERMISSION_DECISION', to: request.via.at(-1)!, decision });
      enqueue.emit({ type: 'permission.decided', decision, action: request.action, detail: request.detail, requesterId: request.requesterId, via: request.via });
    }),
    /** A child's request outside this session's level: passed up, remembering where it came from. */
    passUp: enqueueActions(({ context, enqueue }, request: PermissionRequest) => {
      enqueue.assign({ perms: { ...context.perms, routes: { ...context.perms.routes, [request.id]: request.via.at(-1)! } } });
      enqueue.sendParent({ type: 'PERMISSION_REQUEST', request: { ...request, via: [...request.via, context.spec.id] } });
    }),
    /** A decision for a request that came through this session: sent on to the child it came from. */
    passDown: enqueueActions(({ context, enqueue }, decision: PermissionDecision) => {
      const to = context.perms.routes[decision.requestId]!;
      const routes = { ...context.perms.routes };
      delete routes[decision.requestId];
      enqueue.assign({ perms: { ...context.perms, routes } });
      enqueue.sendTo('subtasks', { type: 'PERMISSION_DECISION', to, decision });
    }),
    // -- Children: spawning, awaiting, their updates
    requestSpawn: enqueueActions(({ context, enqueue }, outcome: ToolOutcome) => {
      const effect = outcome.effect;
      const call = context.pendingCalls[0];
      if (effect?.kind !== 'spawn' || !call) return;
      enqueue.assign({
        waits: { ...context.waits, spawn: { requestId: effect.requestId, call, blocking: effect.blocking, timeoutMs: effect.timeoutMs } },
      });
      if (!context.has.subtasks) {
        enqueue.spawnChild('subtasks', {
          id: 'subtasks',
          input: { owner: context.spec, ownerId: context.spec.id, maxParallel: context.spec.limits.maxParallelSubtasks },
        });
        enqueue.assign({ has: { ...context.has, subtasks: true } });
      }
      enqueue.sendTo('subtasks', { type: 'SPAWN', requestId: effect.requestId, specs: effect.specs });
    }),
    recordSpawnResult: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SPAWN_RESULT' || !context.waits.spawn) return;
      const { call, blocking, timeoutMs } = context.waits.spawn;
      const content = event.ok
        ? JSON.stringify({
            subTaskIds: [...event.started, ...event.queued],
            ...(event.queued.length ? { waitingForSlot: event.queued } : {}),
            note: blocking
              ? 'waiting for the result'
              : 'spawned; results arrive as updates before your next step, or call a2a_await_subtasks',
          })
        : `${event.error.code}: ${event.error.message}`;
      enqueue.assign({
        messages: [...context.messages, toolMessage(call, content, !event.ok)],
        pendingCalls: context.pendingCalls.slice(1),
        health: healthAfter(context, call, event.ok),
        live: event.live,
        waits: { spawn: null, awaiting: event.ok && blocking ? { call, ids: [...event.started, ...event.queued], timeoutMs } : null },
      });
    }),
    startAwait: assign(({ context }, outcome: ToolOutcome) => {
      const effect = outcome.effect;
      const call = context.pendingCalls[0];
      return effect?.kind === 'await' && call
        ? { waits: { ...context.waits, awaiting: { call, ids: effect.ids, timeoutMs: effect.timeoutMs } }, pendingCalls: context.pendingCalls.slice(1) }
        : {};
    }),
    watchAwaited: sendTo('subtasks', ({ context }) => ({ type: 'WATCH' as const, ids: context.waits.awaiting?.ids ?? [] })),
    unwatch: sendTo('subtasks', { type: 'UNWATCH' }),
    recordAwaitResult: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'WATCH_SATISFIED' || !context.waits.awaiting) return;
      const { call } = context.waits.awaiting;
      const delivered = new Set(event.results.map((r) => r.taskId));
      const content = JSON.stringify({
        results: event.results,
        ...(event.pending.length ? { stillRunning: event.pending, note: 'timed out waiting; these keep running and report as updates' } : {}),
      });
      enqueue.assign({
        messages: [...context.messages, toolMessage(call, content, false)],
        waits: { ...context.waits, awaiting: null },
        live: event.live,
        health: { ...context.health, failures: 0 },
        // results handed over by the tool must not be injected a second time
        batch: context.batch
          ? { ...context.batch, updates: context.batch.updates.filter((u) => !delivered.has(u.subTaskId) || u.type === 'progress') }
          : null,
      });
    }),
    holdBatch: assign(({ context, event }) =>
      event.type === 'UPDATES_AVAILABLE'
        ? { batch: { upTo: event.upTo, updates: event.updates, live: event.live, ...(event.dropped ? { dropped: event.dropped } : {}) }, live: event.live }
        : { batch: context.batch },
    ),
    // -- Input between steps, and the idle watchdog
    queueMessage: assign({
      inbox: ({ context, event }) =>
        event.type === 'MESSAGE' ? [...context.inbox, { kind: 'message', from: event.from, text: event.text }] : context.inbox,
    }),
    queueInquiry: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'IDLE_INQUIRY') return;
      enqueue.assign({
        inbox: [
          ...context.inbox,
          { kind: 'inquiry', from: 'idleInquiry', text: '', attempt: event.attempt, maxInquiries: event.maxInquiries },
        ],
        has: { ...context.has, inquiry: true },
      });
      enqueue.emit({ type: 'inquiry.sent', attempt: event.attempt });
    }),
    /** The watchdog only counts while the session is idle: leaving `idle` is the busy signal. */
    tellWatchdogBusy: enqueueActions(({ enqueue, self }) => {
      // an exhausted watchdog has ended (the session is being completed): nothing to tell
      const watchdog = self.getSnapshot().children.idleInquiry;
      if (watchdog?.getSnapshot().status === 'active') enqueue.sendTo('idleInquiry', { type: 'SESSION_BUSY' });
    }),
    /** Tells the watchdog, once there is one, that the session sits idle (see `startWatchdog`). */
    tellWatchdogIdle: enqueueActions(({ context, enqueue }) => {
      if (context.has.watchdog) enqueue.sendTo('idleInquiry', { type: 'SESSION_IDLE' });
    }),
    /**
     * The session has sat idle for the threshold and the grace period: its watchdog starts and
     * asks at once. Until then an idle session costs a timer, not an actor (most never need one).
     */
    startWatchdog: enqueueActions(({ context, enqueue }) => {
      if (context.has.watchdog) return;
      const { idle } = context.spec;
      const input = { idleThresholdMs: idle.idleThresholdMs, inquiryDelayMs: idle.inquiryDelayMs, inquiryTimeoutMs: idle.inquiryTimeoutMs, maxInquiries: idle.maxInquiries, inquiryDue: true };
      enqueue.spawnChild('idleInquiry', { id: 'idleInquiry', input });
      enqueue.assign({ has: { ...context.has, watchdog: true } });
    }),
    // -- Health, the breaker, the budget, and the management of a running worker
    reportStuck: enqueueActions(({ context, enqueue }) => {
      const reason = stuckReason(context.health, context.spec);
      if (reason === null) return;
      enqueue.assign({ health: { ...context.health, reported: true } });
      enqueue.emit({ type: 'stuck.detected', reason });
      enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'progress', { kind: 'stuck', message: `stuck: ${reason}` }) });
    }),
    /** New instructions, an answer or a redirect: the health check starts over. */
    resetHealth: assign(({ context }) => ({ health: { ...freshHealth, failures: context.health.failures } })),
    notifyCircuitOpen: enqueueActions(({ context, enqueue }) => {
      enqueue.assign({ meta: { ...context.meta, pausedFor: `the circuit breaker opened after ${context.health.failures} consecutive tool failures` } });
      enqueue.emit({ type: 'circuit.open', failures: context.health.failures });
      enqueue.sendParent({
        type: 'SUBTASK_UPDATE',
        update: update(context, 'progress', {
          kind: 'error',
          message: `paused: circuit breaker open after ${context.health.failures} consecutive failures`,
        }),
      });
    }),
    /** No model call is made once the run's or the worker's budget is spent. */
    notifyBudget: enqueueActions(({ context, enqueue }, params: { scope: 'run' | 'worker'; limitUsd: number; spentUsd: number }) => {
      const said = `the ${params.scope} budget is spent: $${params.spentUsd.toFixed(4)} of $${params.limitUsd.toFixed(4)}`;
      enqueue.assign({ meta: { ...context.meta, pausedFor: said } });
      enqueue.emit({ type: 'budget.reached', scope: params.scope, limitUsd: params.limitUsd, spentUsd: params.spentUsd });
      enqueue.sendParent({ type: 'SUBTASK_UPDATE', update: update(context, 'progress', { kind: 'error', message: `paused: ${said}` }) });
    }),
    resumeAfterPause: assign(({ context, event }) => ({
      health: freshHealth,
      meta: { ...context.meta, pausedFor: null },
      inbox: [
        ...context.inbox,
        { kind: 'resume' as const, from: event.type === 'RESUME' ? event.by : 'orchestrator', text: context.meta.pausedFor ?? 'paused' },
      ],
    })),
    reassign: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REASSIGN') return;
      enqueue.assign({
        spec: { ...context.spec, agent: event.agent },
        inbox: [
          ...context.inbox,
          {
            kind: 'message',
            from: event.by,
            text: `You have been reassigned from ${context.spec.agent.raw} to ${event.agent.raw}. Your instructions and tools are now those of ${event.agent.raw}; continue the task from where it stands.`,
          },
        ],
      });
      enqueue.emit({ type: 'worker.reassigned', from: context.spec.agent.raw, to: event.agent.raw, by: event.by });
    }),
    /** Another model profile from the next call on; the conversation is kept (summarized when it does not fit). */
    switchModel: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SWITCH_MODEL') return;
      enqueue.assign({
        spec: { ...context.spec, model: event.profile },
        inbox: [...context.inbox, { kind: 'message', from: event.by, text: `Your model was switched to ${event.profile}; carry on from where you are.` }],
      });
      enqueue.emit({ type: 'model.switched', from: context.spec.model ?? null, to: event.profile, by: event.by });
    }),
    /** A fresh start with new instructions: children cancelled, conversation cleared. */
    reinitialize: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REINITIALIZE') return;
      if (context.has.subtasks) enqueue.sendTo('subtasks', { type: 'CANCEL_LIVE', reason: `${context.spec.id} was reinitialized` });
      enqueue.assign({
        spec: { ...context.spec, prompt: event.instructions },
        messages: [],
        inbox: [],
        batch: null,
        pendingCalls: [],
        waits: noWaits,
        lastText: '',
        turns: 0,
        meta: { ...context.meta, stepBase: 0, epoch: context.meta.epoch + 1 },
        has: { ...context.has, inquiry: false },
        perms: noPerms,
        health: freshHealth,
      });
      enqueue.emit({ type: 'worker.reinitialized', by: event.by });
    }),
    // -- Endings: each final state carries exactly one result
    failWith: assign(({ context }, params: { reason: string }) => ({ meta: { ...context.meta, failure: params.reason } })),
    failWithModelError: assign(({ context }, params: { error: unknown }) => ({
      meta: { ...context.meta, failure: `model call failed: ${errorText(params.error)}` },
    })),
    failWithChildError: assign(({ context }, params: { child: string; error: unknown }) => ({
      meta: { ...context.meta, failure: `internal error in ${params.child}: ${errorText(params.error)}` },
    })),
    /** The completion tool's result goes into the conversation, and its effect becomes the session's result. */
    recordCompletion: assign(({ context }, outcome: ToolOutcome) => {
      const effect = outcome.effect;
      const call = context.pendingCalls[0];
      if (effect?.kind !== 'complete' || !call) return {};
      const made = result(context, effect.status);
      made.output = effect.output;
      if (effect.outputFile) made.outputFile = effect.outputFile;
      if (effect.metadata) made.metadata = effect.metadata;
      if (effect.error) made.error = effect.error;
      return {
        messages: [...context.messages, toolMessage(call, outcome.content, false)],
        pendingCalls: context.pendingCalls.slice(1),
        result: made,
      };
    }),
    /** Fallback completion: the watchdog gave up after repeated answered inquiries. */
    recordExhaustedCompletion: assign(({ context }, watchdog: IdleInquiryOutput) => ({
      result: result(context, 'partial', {
        fallback: true,
        error: `never called a2a_subtask_complete; still idle after ${watchdog.inquiries} answered inquiries, last output kept`,
      }),
    })),
    finishFailed: assign(({ context, self }) => ({
      result: result(context, 'failed', { error: context.meta.failure ?? 'failed', fallback: true, ...withChildResults(context, self) }),
    })),
    finishCancelled: assign(({ context, event }) => ({
      result: result(context, 'cancelled', {
        error: event.type === 'CANCEL' ? event.reason : 'cancelled',
        fallback: true,
      }),
    })),
    finishTimedOut: assign(({ context }) => ({
      result: result(context, 'timeout', {
        error: `no result within its deadline of ${context.spec.timeoutMs ?? '?'} ms`,
        fallback: true,
      }),
    })),
  },
});



/** The name shown for a session state value (`{ running: 'thinking' }` → `thinking`, `{ running: { usingTools: 'running' } }` → `usingTools`). */
export function sessionStateName(value: unknown): SessionStateName {
  if (typeof value === 'string') return value as SessionStateName;
  const running = (value as { running?: unknown }).running;
  if (typeof running === 'string') return running as SessionStateName;
  // a state with states of its own (`awaitingChildren`, `usingTools`) is named by itself
  if (running && typeof running === 'object') {
    const [name] = Object.keys(running);
    if (name) return name as SessionStateName;
  }
  return 'running';
}
