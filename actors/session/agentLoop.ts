/**
 * The agent loop: the steps the session chart asks for, run in the session's own actor (the
 * `loop` action, see LoopCommand in machines/session.ts), each replying with an event. The loop's
 * control flow (think → tools → think, idle, awaiting children) is the chart; this does the I/O:
 *
 * - `CALL_MODEL`: injects what arrived since the last step (the task on the first turn, child
 *   results, idle answers, messages, inquiries) as one synthetic user message (parent wake-up),
 *   makes one model call with the session's own tools, and runs the reply's leading coordination
 *   tool calls in the same step (`ran`) → `MODEL_REPLIED` / `MODEL_FAILED`.
 * - `RUN_TOOL`: runs one tool call against the catalog, with the session's children in view →
 *   `TOOL_FINISHED` / `TOOL_CRASHED` (and `PERMISSION_REQUIRED` when it asks the tree).
 *
 * Why not a child actor per session (as before) or an invoked promise per step: each actor costs
 * its creation, its start and two events per step, and a 10k fan-out paid for 20k actors. A step
 * in flight is kept here, by session, until it ends: leaving `running` (`ABORT`: an end, a cancel,
 * a reinitialization) or stopping the session actor aborts it, its AbortSignal fires and the
 * model call or command it runs ends. The signal is made on first use: a step that nothing can
 * abort (a scripted reply, a coordination tool) never makes one. A session restored from a
 * snapshot has lost the step it was in; whatever restored it sends `RESTORED` and the chart asks
 * again.
 *
 * Over 600 lines, for a reason: the two steps share the bookkeeping of a step in flight (`Step`,
 * by session: its abort, its permit, its journal key) and the loop's dependencies; the model step
 * (callModel, callUncut) comes first, the tool step (runTool, runStep, execute) second.
 */
import type { AnyActorRef } from 'xstate';
import type {
  AgentLoopReply,
  CallModelInput,
  CallModelOutput,
  Clock,
  CommandRunner,
  EventSink,
  FamilyView,
  Model,
  ModelRequest,
  PermissionAnswer,
  PermissionAsk,
  RunToolInput,
  ToolOutcome,
} from '../../machines/ports.js';
import { ModelReply, type ChatMessage, type SessionSpec, type TaskUpdate, type ToolSpec } from '../../machines/protocol/index.js';
import { CHART_EFFECTS, familyOfSession, type LoopCommand } from '../../machines/session.js';
import { errorText } from '../../machines/errorText.js';
import { A2AError, describeIssues, isA2AError } from '../errors.js';
import { injectionText, taskMessage, type SystemPrompts } from './prompts.js';
import type { AgentDefinition, AgentRegistry } from '../config/registry.js';
import type { ExternalTools, IdGenerator, ToolCatalog, ToolContext } from '../tools/index.js';
import type { FileLockTable } from './fileLocks.js';
import { decideLocally } from '../people/permissions.js';
import { workerKey } from './limits.js';
import { correlationOf } from '../observation/events.js';
import type { Budgets, CostLedger } from '../observation/cost.js';
import type { PauseGates } from '../people/pause.js';
import type { ArtifactStore } from '../organiser/artifacts.js';
import { estimateTokens, fitConversation } from './summarize.js';
import { startChat, startTool, tracingEnabled } from '../observation/tracing.js';
import { argumentsDigest, idempotencyKey, inDoubt, inputDigest, LIFE, modelStepKey, retryAction, toolStepKey, unknownOutcome, type EffectJournal, type InDoubtHandling } from '../durability/effects.js';

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
  /** Tokens kept free for the reply: the profile's output limit. */
  maxTokens?: number;
  /** The most output tokens the model can give (see Profile.maxOutputTokens). */
  maxOutputTokens?: number;
}

/** Times a conversation the provider refused as too long is shortened and asked again before the call fails. */
export const OVERFLOW_RETRIES = 2;

/**
 * The conversation with every long tool output cut to `share` of its length (head kept, a note
 * saying how much went): when summarizing cannot shorten it (the bulk is in the latest turns).
 */
function clipToolOutputs(messages: ChatMessage[], share: number): ChatMessage[] {
  return messages.map((m) => {
    if (m.role !== 'tool' || m.content.length <= 2_000) return m;
    const keep = Math.max(1_000, Math.floor(m.content.length * share));
    return { ...m, clipped: true, content: `${m.content.slice(0, keep)}\n[… ${m.content.length - keep} characters dropped to fit the context window]` };
  });
}

/** Cut replies asked again before the session fails (each one priced, and told as `model.truncated`). */
export const CUT_REPLY_RETRIES = 2;

export type ModelResolver = (spec: SessionSpec) => ResolvedModel;

/** The effect journal of each run, and what is done with a call in doubt after a restore. */
export interface EffectJournals {
  journal(runId: string): EffectJournal | null;
  inDoubt: InDoubtHandling;
}

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
  /** Tools from the agents' MCP servers (absent: agents that list servers get none of their tools). */
  external?: ExternalTools;
  /** Records each step's effects (see actors/durability/effects.ts); absent: a restored step is run again. */
  effects?: EffectJournals;
}

/** The step a session has in flight. */
class Step {
  #controller: AbortController | null = null;
  #aborted: { reason: unknown } | null = null;
  /** Permissions the running tool waits for, by request id. */
  permits: Map<string, (answer: PermissionAnswer) => void> | null = null;
  unsubscribe: (() => void) | null = null;

  constructor(
    readonly step: number,
    readonly session: AnyActorRef,
  ) {}

  /**
   * Made when first asked for (a model client, a command, a permission wait): a step that never
   * asks cannot be aborted and needs none. From then on, the session actor stopped from outside
   * (its parent ended, its host let it go) aborts it.
   */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (!this.#aborted && (this.session.getSnapshot() as { status: string }).status !== 'active') {
        this.#aborted = { reason: new A2AError('WORKFLOW_STOPPED', 'the session ended while this step was running') };
      }
      if (this.#aborted) {
        this.#controller.abort(this.#aborted.reason);
      } else {
        const subscription = this.session.subscribe({
          complete: () => this.abort(new A2AError('WORKFLOW_STOPPED', 'the session ended while this step was running')),
          error: () => this.abort(new A2AError('WORKFLOW_STOPPED', 'the session failed while this step was running')),
        });
        this.unsubscribe = () => subscription.unsubscribe();
      }
    }
    return this.#controller.signal;
  }

  get aborted(): boolean {
    return this.#aborted !== null;
  }

  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = { reason };
    this.unsubscribe?.();
    this.#controller?.abort(reason);
  }
}

/**
 * A tool's permission ask: within the session's level (or always denied) it is decided here;
 * otherwise the session asks its parent, and so on up to the orchestrator and a human.
 */
function permitFor(
  deps: AgentLoopDeps,
  running: Step,
  spec: SessionSpec,
  step: string,
  ask: (requestId: string, question: PermissionAsk) => void,
  journal?: { asking(): void; granted(): Promise<void> },
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
    const signal = running.signal;
    // the journal says the call waits (it has not acted yet), then that it acts from here
    journal?.asking();
    const answered = new Promise<PermissionAnswer>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      (running.permits ??= new Map()).set(requestId, resolve);
      signal.addEventListener('abort', () => (running.permits?.delete(requestId), reject(signal.reason)), { once: true });
      ask(requestId, question);
    });
    return journal ? answered.then(async (answer) => (answer.approved ? (await journal.granted(), answer) : answer)) : answered;
  };
}

/**
 * What a session's model calls share (its system prompt and tool list): they depend on its agent,
 * role, depth, owner and (a worker's) plan task only, so siblings share one (a 10k fan-out computes it once). Kept while
 * the owner object (shared by the siblings of one spawn) is.
 */
interface Fixed {
  definition: AgentDefinition;
  system: string;
  tools: ToolSpec[];
}
/** What fixedFor's key is made of (kept for the last session asked for, not its whole spec). */
interface FixedKey {
  agentName: string;
  role: SessionSpec['role'];
  depth: number;
  maxDepth: number;
  taskId: string;
}
const keyOf = (spec: SessionSpec): FixedKey => ({
  agentName: spec.agent.agentName,
  role: spec.role,
  depth: spec.depth,
  maxDepth: spec.maxDepth,
  // a worker's prompt names its plan task
  taskId: spec.role === 'worker' ? spec.correlation.taskId : '',
});
const shared = new WeakMap<SessionSpec['owner'], { byKey: Map<string, Fixed>; last: { key: FixedKey; fixed: Fixed } | null }>();

function fixedFor(deps: AgentLoopDeps, spec: SessionSpec): Fixed {
  const definition = deps.registry.get(spec.agent.agentName);
  let byOwner = shared.get(spec.owner);
  if (!byOwner) shared.set(spec.owner, (byOwner = { byKey: new Map(), last: null }));
  // a sibling of the last session asked for (most are): nothing to build
  const last = byOwner.last;
  if (
    last &&
    last.fixed.definition === definition &&
    last.key.agentName === spec.agent.agentName &&
    last.key.role === spec.role &&
    last.key.depth === spec.depth &&
    last.key.maxDepth === spec.maxDepth &&
    last.key.taskId === (spec.role === 'worker' ? spec.correlation.taskId : '')
  ) {
    return last.fixed;
  }
  const key = keyOf(spec);
  const text = `${key.agentName}|${key.role}|${key.depth}|${key.maxDepth}|${key.taskId}`;
  let fixed = byOwner.byKey.get(text);
  if (!fixed || fixed.definition !== definition) {
    const tools = deps.catalog.toolsFor(definition, spec);
    fixed = { definition, system: deps.prompts.for(definition, spec, tools), tools: tools.map((t) => deps.catalog.spec(t)) };
    byOwner.byKey.set(text, fixed);
  }
  byOwner.last = { key, fixed };
  return fixed;
}

/** One model call: inject, call, check. */
export async function callModel(deps: AgentLoopDeps, input: CallModelInput, abort: { readonly signal: AbortSignal }, session?: AnyActorRef): Promise<CallModelOutput> {
  const { spec } = input;
  const fixed = fixedFor(deps, spec);
  const injected: ChatMessage[] = [];
  if (input.messages.length === 0) injected.push({ role: 'user', content: taskMessage(spec) });
  const text = injectionText(input.inbox, input.updates, input.live, input.dropped);
  // the agent's MCP servers: their tools (listed on first use), and what could not be reached
  const definition = fixed.definition;
  const external = definition.mcpServers && deps.external ? await deps.external.toolsFor(spec, definition, abort.signal, session) : null;
  const notes = external?.notes.length ? external.notes.join('\n') : '';
  if (text || notes) injected.push({ role: 'user', content: [text, notes].filter(Boolean).join('\n\n'), synthetic: true });
  const tools = external?.tools.length ? [...fixed.tools, ...external.tools] : fixed.tools;
  const resolved = deps.resolveModel(spec);
  const { model } = resolved;
  const base: { system: string; agentType: SessionSpec['agent']; sessionId: string; depth: number; model?: string } = {
    system: fixed.system,
    agentType: spec.agent,
    sessionId: spec.id,
    depth: spec.depth,
    ...(resolved.requestModel ? { model: resolved.requestModel } : {}),
  };
  let history = input.messages;
  let compacted: ChatMessage[] | undefined;
  // a closure for the price only where prices are kept: a plain step makes none (under tsx, whose
  // keepNames names every closure as it is made, each one cost about 2 µs a model call)
  const bill = deps.costs ? { usd: 0 } : null;
  const price = bill ? (usage: ModelReply['usage']) => priced(deps, spec, resolved, usage, bill) : noPrice;
  if (resolved.contextWindow && history.length > 0) {
    // what does not fit the model's window is summarized first (a switch to a smaller model, a long session)
    const reserve = (resolved.maxTokens ?? 4096) + estimateTokens([], JSON.stringify(fixed.tools)) + estimateTokens(injected, fixed.system);
    const fitted = await fitHistory(deps, spec, resolved, base, history, resolved.contextWindow, reserve, abort.signal);
    if (fitted.summarized) {
      history = fitted.messages;
      compacted = fitted.messages;
      warn(deps, spec, `conversation summarized to fit ${resolved.profile} (${fitted.before} → ${fitted.after} tokens of ${resolved.contextWindow})`, { summarized: true, before: fitted.before, after: fitted.after });
    }
  }
  // a paused run: the call in progress finished, the next one waits (a cancel still ends it)
  if (deps.pause) {
    const gate = deps.pause.gate(spec.correlation.runId);
    if (gate.paused) await gate.whenOpen(abort.signal);
  }
  // written out, not `{ ...base, messages, tools }`: V8 gives each object made by a spread followed
  // by new keys a hidden class of its own (slow to build, about 300 bytes of old space each)
  let request: ModelRequest = {
    system: base.system,
    agentType: base.agentType,
    sessionId: base.sessionId,
    depth: base.depth,
    ...(base.model ? { model: base.model } : {}),
    messages: injected.length ? [...history, ...injected] : history,
    tools,
  };
  let reply: ModelReply;
  // the limit starts at the profile's, else at what the adapter sends when none is configured
  const cuts: CutState = { limit: resolved.maxTokens ?? model.defaultMaxTokens, raised: false, count: 0 };
  for (let shortened = 0; ; shortened++) {
    try {
      reply = await callUncut(deps, spec, resolved, model, request, injected, abort, price, cuts);
      break;
    } catch (error) {
      if (!isA2AError(error, 'CONTEXT_OVERFLOW')) throw error;
      if (shortened >= OVERFLOW_RETRIES) {
        throw new A2AError('CONTEXT_OVERFLOW', `${error.message} — still, after shortening the conversation ${shortened} times (${estimateTokens(history, fixed.system)} tokens estimated now)`, { cause: error });
      }
      // the provider's window is smaller than the profile said (or none was configured): the
      // conversation (the system prompt stays as it is) is shortened to 60 % of its size, then
      // 36 %, and asked again
      const before = estimateTokens(history, fixed.system);
      const system = estimateTokens([], fixed.system);
      const fitted = await fitHistory(deps, spec, resolved, base, history, system + Math.max(256, Math.floor((before - system) * 0.6)), 0, abort.signal);
      const summarized = fitted.summarized && fitted.after < before;
      history = summarized ? fitted.messages : clipToolOutputs(history, 0.5);
      compacted = history;
      const after = estimateTokens(history, fixed.system);
      warn(deps, spec, `the provider said the conversation does not fit ${resolved.profile}'s context window: ${summarized ? 'summarized' : 'long tool outputs cut'} (${before} → ${after} tokens estimated), asking again`, { summarized, overflow: true, before, after });
      request = { ...request, messages: injected.length ? [...history, ...injected] : history };
    }
  }
  let checked = reply;
  if (!model.validatesReplies) {
    const parsed = ModelReply.safeParse(reply);
    if (!parsed.success) {
      throw new A2AError('MODEL_MISBEHAVIOUR', `model ${model.id} returned an unusable reply:\n${describeIssues(parsed.error.issues)}`);
    }
    checked = parsed.data;
  }
  // built in place (in the order the spreads gave it), not with spreads of optional parts
  const output: CallModelOutput = {
    injected,
    reply: checked,
    consumedInbox: input.inbox.length,
    consumedUpTo: input.upTo,
    model: resolved.requestModel ?? resolved.name,
    profile: resolved.profile,
  };
  if (compacted) output.compacted = compacted;
  if (bill) output.costUsd = bill.usd;
  return output;
}

/** Records a call's usage in the cost ledger: its price (added to `bill` when given), or undefined without prices. */
function priced(deps: AgentLoopDeps, spec: SessionSpec, resolved: ResolvedModel, usage: ModelReply['usage'], bill: { usd: number } | null): number | undefined {
  const usd = deps.costs?.ledger.record({
    sessionId: spec.id,
    workerId: workerKey(spec),
    ...(spec.role === 'subtask' ? { parentId: spec.owner.ownerId } : {}),
    model: resolved.name,
    usage,
  });
  if (usd !== undefined && bill) bill.usd += usd;
  return usd;
}

const noPrice = (): number | undefined => undefined;

/**
 * The history summarized (by the session's own model) to fit `budget` tokens, system prompt
 * included. Each summary call is priced with its cache tokens and told as a `model.called` of
 * its own (`summary: true`): it is not folded into the reply's call.
 */
function fitHistory(
  deps: AgentLoopDeps,
  spec: SessionSpec,
  resolved: ResolvedModel,
  request: Parameters<typeof fitConversation>[0]['request'],
  messages: ChatMessage[],
  budget: number,
  reserveTokens: number,
  signal: AbortSignal,
) {
  return fitConversation({
    model: resolved.model,
    request,
    messages,
    contextWindow: budget,
    reserveTokens,
    signal,
    onCall: (usage) => {
      const usd = priced(deps, spec, resolved, usage, null);
      if (deps.events.listening !== false) {
        deps.events.emit({ type: 'model.called', ...correlationOf(spec), data: { summary: true, toolCalls: [], ...usage, ...(usd !== undefined ? { costUsd: usd } : {}) } });
      }
    },
  });
}

function warn(deps: AgentLoopDeps, spec: SessionSpec, message: string, data: Record<string, unknown>): void {
  if (deps.events.listening !== false) deps.events.emit({ type: 'warning', ...correlationOf(spec), data: { message, ...data } });
}

/** The `model.called` data of billed replies that no recorded reply counts (thrown away, or cut before a failure). */
function discardedCall(error: unknown, usage: ModelReply['usage'], usd: number | undefined): Record<string, unknown> {
  return { discarded: true, reason: errorText(error).slice(0, 300), toolCalls: [], ...sumUsage(usage, { inputTokens: 0, outputTokens: 0 }), ...(usd !== undefined ? { costUsd: usd } : {}) };
}

/** Two replies' usage together (cache counts only when there are some). */
function sumUsage(a: ModelReply['usage'], b: ModelReply['usage']): ModelReply['usage'] {
  const read = (a.cacheReadTokens ?? 0) + (b.cacheReadTokens ?? 0);
  const write = (a.cacheWriteTokens ?? 0) + (b.cacheWriteTokens ?? 0);
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, ...(read ? { cacheReadTokens: read } : {}), ...(write ? { cacheWriteTokens: write } : {}) };
}

/**
 * The model's reply, asked again when the output limit cut it (`stopReason: max_tokens`): a cut
 * reply's text is incomplete and its tool calls may be cut mid-argument (a truncated result
 * would pass for a finished one), so none of it is used or run. The next request says so, with
 * twice the limit where the profile's `maxOutputTokens` allows it. After CUT_REPLY_RETRIES the
 * call fails: MODEL_MISBEHAVIOUR, naming the limit. Each cut is priced (it was billed) and
 * emitted as `model.truncated`; the notes join the conversation (`injected`), as the model saw them.
 */
async function callUncut(
  deps: AgentLoopDeps,
  spec: SessionSpec,
  resolved: ResolvedModel,
  model: Model,
  first: ModelRequest,
  injected: ChatMessage[],
  abort: { readonly signal: AbortSignal },
  price: (usage: ModelReply['usage']) => number | undefined,
  cuts: CutState,
): Promise<ModelReply> {
  // a limit raised by an earlier cut of this step still holds (after an overflow's retry too)
  let request = cuts.raised ? { ...first, maxTokens: cuts.limit! } : first;
  // the cut replies' tokens were billed too: the session's usage counts them
  const billed = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  let billedUsd: number | undefined;
  for (let cut = 0; ; cut++, cuts.count++) {
    const limit = cuts.limit;
    let reply: ModelReply;
    // nothing is built when tracing is off (every model call passes here)
    const span = tracingEnabled()
      ? startChat({
          runId: spec.correlation.runId,
          sessionId: spec.id,
          provider: model.provider ?? model.id,
          model: request.model ?? resolved.name,
          profile: resolved.profile,
          ...(request.maxTokens ?? limit ? { maxTokens: (request.maxTokens ?? limit)! } : {}),
          system: request.system,
          messages: request.messages,
        })
      : null;
    try {
      reply = await model.call(request, abort);
    } catch (error) {
      span?.fail(error);
      // a reply the adapter threw away (unusable) was billed: priced and told, then the call
      // fails; so were the cut replies before it, which no recorded reply will count now
      const thrown = isA2AError(error) && error.billed ? error.billed : null;
      const usd = thrown ? price(thrown) : undefined;
      const lost = thrown ? sumUsage(billed, thrown) : billed;
      const lostUsd = usd !== undefined || billedUsd !== undefined ? (usd ?? 0) + (billedUsd ?? 0) : undefined;
      if ((thrown || cut > 0) && deps.events.listening !== false) {
        deps.events.emit({ type: 'model.called', ...correlationOf(spec), data: discardedCall(error, lost, lostUsd) });
      }
      throw error;
    }
    const usd = price(reply.usage);
    span?.end(reply, usd);
    if (reply.stopReason !== 'max_tokens') return cut === 0 ? reply : { ...reply, usage: sumUsage(reply.usage, billed) };
    billed.inputTokens += reply.usage.inputTokens;
    billed.outputTokens += reply.usage.outputTokens;
    billed.cacheReadTokens += reply.usage.cacheReadTokens ?? 0;
    billed.cacheWriteTokens += reply.usage.cacheWriteTokens ?? 0;
    if (usd !== undefined) billedUsd = (billedUsd ?? 0) + usd;
    const calls = reply.toolCalls.map((c) => c.name);
    if (deps.events.listening !== false) {
      deps.events.emit({ type: 'model.truncated', ...correlationOf(spec), data: { attempt: cuts.count + 1, limit: limit ?? null, outputTokens: reply.usage.outputTokens, toolCalls: calls, profile: resolved.profile } });
    }
    const limitText = limit ? `${limit} tokens` : "the model's own output limit";
    if (cuts.count >= CUT_REPLY_RETRIES) {
      const error = new A2AError(
        'MODEL_MISBEHAVIOUR',
        `output limit reached: the reply was cut off at ${limitText} ${cuts.count + 1} times in a row${calls.length ? ` (cut tool calls not run: ${calls.join(', ')})` : ''}; raise maxTokens (and maxOutputTokens) of profile ${resolved.profile}, or ask for shorter outputs`,
      );
      // the cut replies were billed: priced already, and told here as the calls they were
      if (deps.events.listening !== false) deps.events.emit({ type: 'model.called', ...correlationOf(spec), data: discardedCall(error, billed, billedUsd) });
      throw error;
    }
    const raised = limit && resolved.maxOutputTokens && limit < resolved.maxOutputTokens ? Math.min(limit * 2, resolved.maxOutputTokens) : undefined;
    const note: ChatMessage = {
      role: 'user',
      synthetic: true,
      content: `[a2a] Your last reply was cut off at ${limitText} and was not used${calls.length ? `: its tool calls (${calls.join(', ')}) were not run` : ''}. ${raised ? `The limit is now ${raised} tokens. ` : ''}Reply again, shorter: put long content in files (write_file) or artifacts, and keep tool arguments and your result brief.`,
    };
    injected.push(note);
    request = { ...request, messages: [...request.messages, note], ...(raised ? { maxTokens: raised } : {}) };
    if (raised) {
      cuts.limit = raised;
      cuts.raised = true;
    }
  }
}

/** The cuts of one step, across its overflow retries: the output limit now, whether a cut raised it, how many cuts so far. */
interface CutState {
  limit: number | undefined;
  raised: boolean;
  count: number;
}

/**
 * What a tool may use while it runs (ToolContext), as a class: every call's context has the same
 * shape, and its key is made only for a tool that reads it. Written as an object literal (a
 * getter and three spreads) it allocated about 1.8 KB a call and was the costliest function of a
 * no-op sub-task's tool step (14 µs a call in the profile of a warm 10k fan-out); now some 100 bytes.
 */
class CallContext implements ToolContext {
  readonly spec: SessionSpec;
  readonly worktree: string;
  readonly permit: (ask: PermissionAsk) => Promise<PermissionAnswer>;
  readonly locks: FileLockTable;
  readonly registry: AgentRegistry;
  readonly family: FamilyView | null;
  readonly updates: TaskUpdate[];
  readonly dropped: number | undefined;
  readonly ids: IdGenerator;
  readonly clock: Clock;
  readonly commands: CommandRunner | null;
  readonly artifacts: ((runId: string) => ArtifactStore) | null;
  readonly external: ExternalTools | null;
  readonly session: AnyActorRef | undefined;
  readonly events: EventSink;
  readonly #abort: { readonly signal: AbortSignal };
  readonly #input: RunToolInput;
  #key: string | undefined;

  constructor(deps: AgentLoopDeps, input: RunToolInput, session: AnyActorRef | undefined, abort: { readonly signal: AbortSignal }, permit: (ask: PermissionAsk) => Promise<PermissionAnswer>, key: string | undefined) {
    this.spec = input.spec;
    this.worktree = input.spec.correlation.worktreePath;
    this.permit = permit;
    this.locks = deps.locks;
    this.registry = deps.registry;
    this.family = familyOfSession(session);
    this.updates = input.updates;
    this.dropped = input.dropped || undefined;
    this.ids = deps.ids;
    this.clock = deps.clock;
    this.commands = deps.commands ?? null;
    this.artifacts = deps.artifacts ?? null;
    this.external = deps.external ?? null;
    this.session = session;
    this.events = deps.events;
    this.#abort = abort;
    this.#input = input;
    this.#key = key;
  }

  /** The step's signal, made when a tool first asks for it (see Step.signal). */
  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get idempotencyKey(): string {
    this.#key ??= idempotencyKey(this.#input.spec.correlation.runId, this.#input.spec.id, this.#input.call.id, this.#input.epoch);
    return this.#key;
  }
}

/** One tool call against the catalog; `permit` decides or asks the tree. */
export function runTool(
  deps: AgentLoopDeps,
  input: RunToolInput,
  session: AnyActorRef | undefined,
  abort: { readonly signal: AbortSignal },
  permit: (ask: PermissionAsk) => Promise<PermissionAnswer>,
  key?: string,
): Promise<ToolOutcome> {
  const definition = deps.registry.get(input.spec.agent.agentName);
  const span = tracingEnabled() ? startTool(input.spec.correlation.runId, input.spec.id, input.call, deps.external?.handles(input.call.name) ? 'extension' : 'function') : null;
  const running = deps.catalog.run(input.call, definition, new CallContext(deps, input, session, abort, permit, key));
  if (!span) return running;
  running.then(
    (outcome) => span.end(outcome),
    (error: unknown) => span.fail(error),
  );
  return running;
}

/** The updates a tool run in the model's step sees: none (they were injected into the call). */
const NO_UPDATES: TaskUpdate[] = [];

/** A coordination tool run in the model's step never asks: if one did, that is a bug here. */
const noPermit = (): Promise<PermissionAnswer> => Promise.reject(new Error('a tool run in the model step asked for a permission'));


/**
 * The reply's leading tool calls that may run in the model's step (see ToolDefinition.inline), in
 * order: it stops after a call the chart must act on, before any other tool, and where the
 * circuit breaker would open.
 */
async function runInline(deps: AgentLoopDeps, input: CallModelInput, output: CallModelOutput, session: AnyActorRef, running: Step): Promise<ToolOutcome[]> {
  const ran: ToolOutcome[] = [];
  let failures = input.failures ?? 0;
  for (const call of output.reply.toolCalls) {
    if (running.aborted || !deps.catalog.isInline(call.name)) break;
    let outcome: ToolOutcome;
    try {
      outcome = await runTool(deps, { spec: input.spec, call, updates: NO_UPDATES, epoch: input.epoch }, session, running, noPermit);
    } catch {
      break; // the chart runs it again as a step of its own, where a crash is reported as one
    }
    ran.push(outcome);
    if (outcome.effect && CHART_EFFECTS.has(outcome.effect.kind)) break;
    failures = outcome.isError ? failures + 1 : 0;
    if (failures >= input.spec.limits.circuitBreakerThreshold) break;
  }
  return ran;
}

/** How a tool step ended: its outcome, or the runtime's failure to run it. */
type StepEnd = { outcome: ToolOutcome; crashed?: undefined } | { crashed: string; outcome?: undefined };

/** Sends an event to the session for the step in flight (none once it was replaced or aborted). */
function tell(self: AnyActorRef, running: Step, event: AgentLoopReply): void {
  if (!running.aborted && (self.getSnapshot() as { status: string }).status === 'active') self.send(event);
}

/**
 * One tool call, with its effect journal: a result on record is given back; an intent without a
 * result (a restore) is in doubt, and only an idempotent tool runs again; otherwise the intent is
 * recorded, the call runs, and its result is recorded before the session hears it.
 */
async function runStep(deps: AgentLoopDeps, self: AnyActorRef, running: Step, step: number, input: RunToolInput): Promise<StepEnd> {
  const { spec, call } = input;
  const journal = deps.effects?.journal(spec.correlation.runId) ?? null;
  const key = toolStepKey(input.epoch, step);
  const idemKey = idempotencyKey(spec.correlation.runId, spec.id, call.id, input.epoch);
  const definition = deps.registry.get(spec.agent.agentName);
  const external = deps.external?.handles(call.name) ? deps.external : null;
  // a restored session has no connection to its MCP servers yet: made again before its tool runs
  if (external && definition.mcpServers) await external.toolsFor(spec, definition, running.signal, self);
  let entry = journal?.take(spec.id, key);
  if (entry?.intent && entry.intent.call.id !== call.id) {
    // recorded for another call: that life went another way from here (see CALL_MODEL)
    journal!.drop(spec.id);
    entry = undefined;
  }
  if (entry?.outcome) {
    // it ran (or was reported in doubt) in an earlier life: its result, as it was
    return entry.outcome.crashed !== undefined ? { crashed: entry.outcome.crashed } : { outcome: entry.outcome.outcome };
  }
  const effectful = journal !== null && !deps.catalog.idempotent(call.name, spec, external);
  const asks = (requestId: string, ask: PermissionAsk) => tell(self, running, { type: 'PERMISSION_REQUIRED', requestId, ask });
  const record = (outcome: StepEnd) =>
    journal!.write({ t: 'outcome', s: spec.id, k: key, outcome: outcome.outcome ?? { content: '', isError: true }, ...(outcome.crashed !== undefined ? { crashed: outcome.crashed } : {}) });
  if (effectful && inDoubt(entry)) {
    tell(self, running, { type: 'EFFECT_IN_DOUBT', step, tool: call.name });
    const handling = deps.effects!.inDoubt;
    if (deps.events.listening !== false) {
      deps.events.emit({
        type: 'effect.in_doubt',
        ...correlationOf(spec),
        data: { tool: call.name, callId: call.id, idempotencyKey: idemKey, arguments: JSON.stringify(call.arguments ?? {}).slice(0, 2_000), handling: handling === 'ask' ? 'asked' : 'reported' },
      });
    }
    let decidedBy: string | undefined;
    if (handling === 'ask') {
      // a person decides whether it runs again (the inbox, like any permission that needs one)
      const permit = permitFor(deps, running, spec, `${input.epoch ?? 0}.${step}.retry`, asks);
      const answer = await permit({
        action: retryAction(call.name),
        detail: `run again? ${call.name} ${JSON.stringify(call.arguments ?? {}).slice(0, 400)} was in flight when the process stopped; its outcome is unknown (idempotency key ${idemKey})`,
        needsPerson: true,
      });
      if (answer.approved) {
        await journal!.write({ t: 'go', s: spec.id, k: key });
        tell(self, running, { type: 'EFFECT_STARTED', step });
        const ended = await execute(deps, input, self, running, idemKey, permitFor(deps, running, spec, `${input.epoch ?? 0}.${step}`, asks));
        await record(ended);
        return ended;
      }
      decidedBy = answer.decidedBy;
    }
    const outcome = unknownOutcome(call, idemKey, decidedBy);
    await journal!.write({ t: 'outcome', s: spec.id, k: key, outcome, inDoubt: true });
    return { outcome };
  }
  if (effectful) await journal!.write({ t: 'intent', s: spec.id, k: key, call: { id: call.id, name: call.name }, digest: argumentsDigest(call), key: idemKey });
  tell(self, running, { type: 'EFFECT_STARTED', step });
  const hooks = effectful
    ? {
        asking: () => void journal!.write({ t: 'asking', s: spec.id, k: key }).catch(() => undefined),
        granted: () => journal!.write({ t: 'go', s: spec.id, k: key }),
      }
    : undefined;
  const ended = await execute(deps, input, self, running, idemKey, permitFor(deps, running, spec, `${input.epoch ?? 0}.${step}`, asks, hooks));
  if (effectful) {
    try {
      await record(ended);
    } catch (error) {
      // it ran: the session gets its result; only a restore would not know it
      if (deps.events.listening !== false) deps.events.emit({ type: 'warning', ...correlationOf(spec), data: { message: `the result of ${call.name} (${call.id}) could not be recorded in the effect journal: ${errorText(error)}` } });
    }
  }
  return ended;
}

/** Runs the call; a throw is the runtime's failure to run it (TOOL_CRASHED), recorded as such. */
async function execute(deps: AgentLoopDeps, input: RunToolInput, self: AnyActorRef, running: Step, idemKey: string, permit: (ask: PermissionAsk) => Promise<PermissionAnswer>): Promise<StepEnd> {
  try {
    return { outcome: await runTool(deps, input, self, running, permit, idemKey) };
  } catch (error) {
    return { crashed: errorText(error) };
  }
}

/**
 * The `loop` action of the session machines: starts a step (its reply comes back to the session
 * as an event), answers the running tool's permission, or aborts the step in flight.
 */
export function createLoop(deps: AgentLoopDeps): (args: { self: AnyActorRef }, command: LoopCommand) => void {
  const inFlight = new WeakMap<AnyActorRef, Step>();

  /** Ends a step: forgotten before its reply is sent, so that the reply may start the next. */
  function end(self: AnyActorRef, running: Step): boolean {
    if (inFlight.get(self) !== running) return false;
    inFlight.delete(self);
    running.unsubscribe?.();
    return !running.aborted;
  }

  function reply(self: AnyActorRef, running: Step, event: AgentLoopReply): void {
    if (end(self, running) && (self.getSnapshot() as { status: string }).status === 'active') self.send(event);
  }

  function begin(self: AnyActorRef, step: number): Step | null {
    const current = inFlight.get(self);
    // a request sent again for the step in flight (the chart re-asks after RESTORED) is a repeat
    if (current && current.step >= step) return null;
    current?.abort(new A2AError('WORKFLOW_STOPPED', 'a newer step replaced it'));
    const running = new Step(step, self);
    inFlight.set(self, running);
    return running;
  }

  return ({ self }, command) => {
    switch (command.type) {
      case 'ABORT': {
        const running = inFlight.get(self);
        if (running) {
          end(self, running);
          running.abort(new A2AError('WORKFLOW_STOPPED', command.reason));
        }
        return;
      }
      case 'PERMISSION_ANSWER': {
        const permits = inFlight.get(self)?.permits;
        const resolve = permits?.get(command.requestId);
        permits?.delete(command.requestId);
        resolve?.(command.answer);
        return;
      }
      case 'CALL_MODEL': {
        const { step, input } = command;
        const journal = deps.effects?.journal(input.spec.correlation.runId) ?? null;
        const key = journal ? modelStepKey(input.epoch, step) : '';
        // a reply an earlier life received (and recorded) for this step: given back, not asked or
        // paid again, if it answered the same input (else that life went another way from here)
        const digest = journal ? inputDigest(input) : '';
        let recorded = journal?.take(input.spec.id, key)?.reply;
        if (recorded?.input !== undefined && recorded.input !== digest) {
          journal!.drop(input.spec.id);
          recorded = undefined;
          if (deps.events.listening !== false) {
            deps.events.emit({ type: 'warning', ...correlationOf(input.spec), data: { message: `the recorded reply to ${input.spec.id}'s model step ${key} answered other input (its messages came in another order after the restore): asked again; what that life recorded after it is set aside` } });
          }
        }
        if (!recorded) {
          const spent = deps.costs?.ledger.checkBudget(workerKey(input.spec), deps.costs.budgets);
          if (spent) {
            // handled after this transition, as a step's reply always is (the actor's mailbox)
            self.send({ type: 'BUDGET_REACHED', step, scope: spent.scope, limitUsd: spent.limitUsd, spentUsd: spent.spentUsd });
            return;
          }
        }
        const running = begin(self, step);
        if (!running) return;
        const made: Promise<CallModelOutput> =
          recorded && recorded.agent === input.spec.agent.agentName
            ? Promise.resolve(recorded.out)
            : journal
              ? callModel(deps, input, running, self).then(async (output) => {
                  const out: CallModelOutput = { ...output, replyId: `${input.spec.id}:${key}:${LIFE}` };
                  // on record before the session acts on it: a restore gives it back instead of paying again
                  await journal.write({ t: 'reply', s: input.spec.id, k: key, agent: input.spec.agent.agentName, out, in: digest });
                  return out;
                })
              : callModel(deps, input, running, self);
        made
          .then(async (output) => ({ output, ran: output.reply.toolCalls.length > 0 ? await runInline(deps, input, output, self, running) : [] }))
          .then(
            ({ output, ran }) => reply(self, running, ran.length ? { type: 'MODEL_REPLIED', step, output, ran } : { type: 'MODEL_REPLIED', step, output }),
            (error: unknown) => reply(self, running, { type: 'MODEL_FAILED', step, error: errorText(error) }),
          );
        return;
      }
      case 'RUN_TOOL': {
        const { step, input } = command;
        const running = begin(self, step);
        if (!running) return;
        runStep(deps, self, running, step, input).then(
          (ended) => reply(self, running, ended.crashed !== undefined ? { type: 'TOOL_CRASHED', step, error: ended.crashed } : { type: 'TOOL_FINISHED', step, outcome: ended.outcome }),
          (error: unknown) => reply(self, running, { type: 'TOOL_CRASHED', step, error: errorText(error) }),
        );
        return;
      }
    }
  };
}
