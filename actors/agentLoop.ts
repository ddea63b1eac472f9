/**
 * The agent loop actor (`agentLoop`): one per running session, it executes the steps the session
 * chart asks for and replies with an event. The loop's control flow (think → tools → think, idle,
 * awaiting children) is the chart; this actor does the I/O of each step:
 *
 * - `CALL_MODEL`: injects what arrived since the last step (the task on the first turn, child
 *   results, idle answers, messages, inquiries) as one synthetic user message (parent wake-up),
 *   then makes one model call with the session's own tools → `MODEL_REPLIED` / `MODEL_FAILED`.
 * - `RUN_TOOL`: runs one tool call against the catalog, with the session's children in view →
 *   `TOOL_FINISHED` / `TOOL_CRASHED`.
 *
 * Why one long-lived actor and not an invoked promise per step: an actor's lifecycle costs far
 * more than two events (measured: 10k sessions × 2 steps, 0.64–1.0 s as invoked promises against
 * 0.46–0.64 s as request/reply to one actor), and a session makes many steps. Stopping the loop
 * (the session ended) aborts the step in flight. A loop restored from a snapshot says
 * `LOOP_READY`, and the chart re-sends its current step (a repeated step number is ignored).
 */
import type { ActorLogic, ActorScope, AnyActorRef, Snapshot } from 'xstate';
import type {
  AgentLoopInput,
  AgentLoopReply,
  AgentLoopRequest,
  CallModelInput,
  CallModelOutput,
  Clock,
  CommandRunner,
  EventSink,
  FamilyView,
  Model,
  PermissionAnswer,
  PermissionAsk,
  RunToolInput,
  ToolOutcome,
} from '../machines/ports.js';
import { ModelReply, type ChatMessage, type SessionSpec, type ToolSpec } from '../machines/protocol.js';
import { errorText } from '../machines/session.js';
import { A2AError, describeIssues } from './errors.js';
import { injectionText, taskMessage, type SystemPrompts } from './prompts.js';
import type { AgentRegistry } from './registry.js';
import type { IdGenerator, ToolCatalog } from './tools/index.js';
import type { FileLockTable } from './fileLocks.js';
import { decideLocally } from './permissions.js';
import { workerKey } from './limits.js';
import { correlationOf } from './events.js';
import type { Budgets, CostLedger } from './cost.js';
import type { PauseGates } from './pause.js';
import type { ArtifactStore } from './artifacts.js';
import { estimateTokens, fitConversation } from './summarize.js';

/** The model a session runs on: the client, the model name (requests, prices), its window. */
export interface ResolvedModel {
  model: Model;
  /** The model's name for its price (the provider's model name, or the client's id). */
  name: string;
  /** Sent as the request's `model` when the client serves several (a bare-model override). */
  requestModel?: string;
  /** The profile it came from (the built-in `scripted` when none is configured). */
  profile: string;
  /** Tokens the model accepts: a longer conversation is summarized first. */
  contextWindow?: number;
  /** Tokens kept free for the reply. */
  maxTokens?: number;
}

export type ModelResolver = (spec: SessionSpec) => ResolvedModel;

/** Costs and budgets: every call is priced and recorded; spent budgets stop calls and spawns. */
export interface CostControl {
  ledger: CostLedger;
  budgets: Budgets;
}

export interface AgentLoopDeps {
  registry: AgentRegistry;
  catalog: ToolCatalog;
  prompts: SystemPrompts;
  resolveModel: ModelResolver;
  ids: IdGenerator;
  clock: Clock;
  locks: FileLockTable;
  events: EventSink;
  costs?: CostControl;
  /** Runs run_command's commands (absent: they are refused). */
  commands?: CommandRunner;
  /** The artifact store of a run (absent: the artifact tools say there is none). */
  artifacts?: (runId: string) => ArtifactStore;
  /** `a2a pause`: a paused run's agents wait at their run's gate before their next model call. */
  pause?: PauseGates;
}

type LoopSnapshot = Snapshot<undefined> & {
  spec: SessionSpec;
  /** Highest step started; requests with a step at or below it are repeats. */
  lastStep: number;
  inFlight: AbortController | null;
  /** Permissions the running tool waits for, by request id. */
  permits: Map<string, (answer: PermissionAnswer) => void>;
  stopped: boolean;
  restored: boolean;
};

type LoopEvent = AgentLoopRequest | { type: 'xstate.stop' };

/**
 * A tool's permission ask: within the session's level (or always denied) it is decided here;
 * otherwise the session asks its parent, and so on up to the orchestrator and a human.
 */
function permitFor(
  deps: AgentLoopDeps,
  state: LoopSnapshot,
  spec: SessionSpec,
  step: string,
  signal: AbortSignal,
  ask: (requestId: string, question: PermissionAsk) => void,
): (question: PermissionAsk) => Promise<PermissionAnswer> {
  let n = 0;
  return (question) => {
    // deterministic: a tool run again after a restore asks with the same id (de-duplicated above)
    const requestId = `${spec.id}:perm:${step}:${n++}`;
    const local = decideLocally(spec, question);
    if (local) {
      if (deps.events.listening !== false) {
        deps.events.emit({
          type: 'permission.decided',
          ...correlationOf(spec),
          data: { requestId, action: question.action, detail: question.detail, approved: local.approved, decidedBy: 'policy', decider: spec.id, ...(local.reason ? { reason: local.reason } : {}) },
        });
      }
      return Promise.resolve(local);
    }
    return new Promise<PermissionAnswer>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      state.permits.set(requestId, resolve);
      signal.addEventListener('abort', () => (state.permits.delete(requestId), reject(signal.reason)), { once: true });
      ask(requestId, question);
    });
  };
}

/** What a session's model calls share: computed on its first call, kept while its spec is. */
const perSession = new WeakMap<SessionSpec, { system: string; tools: ToolSpec[] }>();

/** One model call: inject, call, check. */
export async function callModel(deps: AgentLoopDeps, input: CallModelInput, signal: AbortSignal): Promise<CallModelOutput> {
  const { spec } = input;
  let fixed = perSession.get(spec);
  if (!fixed) {
    const definition = deps.registry.get(spec.agent.agentName);
    const tools = deps.catalog.toolsFor(definition, spec);
    fixed = { system: deps.prompts.for(definition, spec, tools), tools: tools.map((t) => deps.catalog.spec(t)) };
    perSession.set(spec, fixed);
  }
  const injected: ChatMessage[] = [];
  if (input.messages.length === 0) injected.push({ role: 'user', content: taskMessage(spec) });
  const text = injectionText(input.inbox, input.updates, input.live);
  if (text) injected.push({ role: 'user', content: text, synthetic: true });
  const resolved = deps.resolveModel(spec);
  const { model } = resolved;
  const base = { system: fixed.system, agentType: spec.agent, sessionId: spec.id, depth: spec.depth, ...(resolved.requestModel ? { model: resolved.requestModel } : {}) };
  let history = input.messages;
  let compacted: ChatMessage[] | undefined;
  let costUsd = 0;
  const price = (usage: { inputTokens: number; outputTokens: number }) => {
    if (!deps.costs) return;
    costUsd += deps.costs.ledger.record({
      sessionId: spec.id,
      workerId: workerKey(spec),
      ...(spec.role === 'subtask' ? { parentId: spec.owner.ownerId } : {}),
      model: resolved.name,
      usage,
    });
  };
  if (resolved.contextWindow && history.length > 0) {
    // what does not fit the model's window is summarized first (a switch to a smaller model, a long session)
    const reserve = (resolved.maxTokens ?? 4096) + estimateTokens([], JSON.stringify(fixed.tools)) + estimateTokens(injected, fixed.system);
    const fitted = await fitConversation({ model, request: base, messages: history, contextWindow: resolved.contextWindow, reserveTokens: reserve, signal });
    price(fitted.usage);
    if (fitted.summarized) {
      history = fitted.messages;
      compacted = fitted.messages;
      if (deps.events.listening !== false) {
        deps.events.emit({ type: 'warning', ...correlationOf(spec), data: { message: `conversation summarized to fit ${resolved.profile} (${fitted.before} → ${fitted.after} tokens of ${resolved.contextWindow})`, summarized: true, before: fitted.before, after: fitted.after } });
      }
    }
  }
  // a paused run: the call in progress finished, the next one waits (a cancel still ends it)
  if (deps.pause) await deps.pause.gate(spec.correlation.runId).whenOpen(signal);
  const reply = await model.call({ ...base, messages: injected.length ? [...history, ...injected] : history, tools: fixed.tools }, { signal });
  price(reply.usage);
  let checked = reply;
  if (!model.validatesReplies) {
    const parsed = ModelReply.safeParse(reply);
    if (!parsed.success) {
      throw new A2AError('MODEL_MISBEHAVIOUR', `model ${model.id} returned an unusable reply:\n${describeIssues(parsed.error.issues)}`);
    }
    checked = parsed.data;
  }
  return {
    injected,
    reply: checked,
    consumedInbox: input.inbox.length,
    consumedUpTo: input.upTo,
    ...(compacted ? { compacted } : {}),
    ...(deps.costs ? { costUsd } : {}),
  };
}

/** The children of a session, as a read-only view (null before its first spawn). */
function familyOf(session: AnyActorRef | undefined): FamilyView | null {
  const supervisor = (session?.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> } | undefined)?.children?.subtasks;
  return (supervisor?.getSnapshot() as { family?: FamilyView } | undefined)?.family ?? null;
}

/** One tool call against the catalog; `permit` decides or asks the tree. */
export function runTool(
  deps: AgentLoopDeps,
  input: RunToolInput,
  session: AnyActorRef | undefined,
  signal: AbortSignal,
  permit: (ask: PermissionAsk) => Promise<PermissionAnswer>,
): Promise<ToolOutcome> {
  const definition = deps.registry.get(input.spec.agent.agentName);
  return deps.catalog.run(input.call, definition, {
    spec: input.spec,
    worktree: input.spec.correlation.worktreePath,
    signal,
    permit,
    locks: deps.locks,
    registry: deps.registry,
    family: familyOf(session),
    updates: input.updates,
    ids: deps.ids,
    clock: deps.clock,
    commands: deps.commands ?? null,
    artifacts: deps.artifacts ?? null,
  });
}

function relay(from: AnyActorRef, to: AnyActorRef, event: AgentLoopReply): void {
  const system = from.system as { _relay?: (s: AnyActorRef, t: AnyActorRef, e: unknown) => void };
  if (system._relay) system._relay(from, to, event);
  else to.send(event);
}

export function createAgentLoop(deps: AgentLoopDeps): ActorLogic<LoopSnapshot, LoopEvent, AgentLoopInput> {
  const reply = (state: LoopSnapshot, scope: ActorScope<LoopSnapshot, LoopEvent>, event: AgentLoopReply) => {
    const session = scope.self._parent;
    if (!state.stopped && session) relay(scope.self, session, event);
  };

  return {
    config: 'a2a.agentLoop',
    getInitialSnapshot: (_scope, input) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      spec: input.spec,
      lastStep: 0,
      inFlight: null,
      permits: new Map(),
      stopped: false,
      restored: false,
    }),
    transition: (state, event, scope) => {
      if (event.type === 'xstate.stop') {
        state.stopped = true;
        state.inFlight?.abort(new A2AError('WORKFLOW_STOPPED', 'the session ended while this step was running'));
        state.inFlight = null;
        return state;
      }
      if (event.type === 'PERMISSION_ANSWER') {
        const resolve = state.permits.get(event.requestId);
        state.permits.delete(event.requestId);
        resolve?.(event.answer);
        return state;
      }
      if (event.step <= state.lastStep) return state;
      state.lastStep = event.step;
      const { step } = event;
      if (event.type === 'CALL_MODEL') {
        const spent = deps.costs?.ledger.checkBudget(workerKey(event.input.spec), deps.costs.budgets);
        if (spent) {
          reply(state, scope, { type: 'BUDGET_REACHED', step, scope: spent.scope, limitUsd: spent.limitUsd, spentUsd: spent.spentUsd });
          return state;
        }
        const controller = new AbortController();
        state.inFlight = controller;
        callModel(deps, event.input, controller.signal).then(
          (output) => {
            if (state.inFlight === controller) state.inFlight = null;
            reply(state, scope, { type: 'MODEL_REPLIED', step, output });
          },
          (error: unknown) => {
            if (state.inFlight === controller) state.inFlight = null;
            reply(state, scope, { type: 'MODEL_FAILED', step, error: errorText(error) });
          },
        );
      } else {
        const controller = new AbortController();
        state.inFlight = controller;
        const settled = () => {
          if (state.inFlight === controller) state.inFlight = null;
        };
        const permit = permitFor(deps, state, event.input.spec, `${event.input.epoch ?? 0}.${step}`, controller.signal, (requestId, ask) =>
          reply(state, scope, { type: 'PERMISSION_REQUIRED', requestId, ask }),
        );
        runTool(deps, event.input, scope.self._parent, controller.signal, permit).then(
          (outcome) => (settled(), reply(state, scope, { type: 'TOOL_FINISHED', step, outcome })),
          (error: unknown) => (settled(), reply(state, scope, { type: 'TOOL_CRASHED', step, error: errorText(error) })),
        );
      }
      return state;
    },
    getPersistedSnapshot: (state) => ({ status: 'active', output: undefined, error: undefined, spec: state.spec }) as Snapshot<unknown>,
    restoreSnapshot: (persisted) => ({
      status: 'active',
      output: undefined,
      error: undefined,
      spec: (persisted as unknown as { spec: SessionSpec }).spec,
      lastStep: 0,
      inFlight: null,
      permits: new Map(),
      stopped: false,
      restored: true,
    }),
    start: (state, scope) => {
      // the step that was in flight when the snapshot was taken is lost: ask for it again
      if (state.restored) reply(state, scope, { type: 'LOOP_READY' });
    },
  };
}
