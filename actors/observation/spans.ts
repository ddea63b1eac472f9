/**
 * Traces (OpenTelemetry): a run is one trace whose spans mirror its actor tree. This module builds
 * the spans; it uses only `@opentelemetry/api`, and is loaded with it only when tracing is turned
 * on (tracing.ts's `enableTracing`, the switch the core path calls: `a2a run` without traces
 * loads neither, and no OpenTelemetry code at all). The SDK and the OTLP exporter are loaded on
 * demand by adapters/otel/.
 *
 *   invoke_agent orchestrator                      run.started … run.finished (the root actor)
 *   ├─ task <id>                                   the task's branch: worktree … task.completed
 *   │  ├─ invoke_agent <agent>   (the worker)      worker.deployed … its result
 *   │  │  ├─ chat <model>                          one model call (tokens, cost)
 *   │  │  ├─ execute_tool <tool>                   one tool call (its permission wait inside)
 *   │  │  ├─ invoke_agent <agent> (a sub-task)     subtask.spawned … subtask.result, any host
 *   │  │  ├─ inquiry <agent> · question · await_human <kind>
 *   │  └─ merge <branch> · git commit · git push …  the branch's git steps
 *
 * Two sources: the run's events (sessions, tasks, waits, git steps: each event carries the
 * correlation ids that place it in the tree, and its time), and two hooks in the agent loop for
 * what events do not time (a model call's start, a tool call's start). A session's span lives in
 * the process of its owner; a process that runs a session for another (a host) learns the span's
 * context from the trace headers of the spawn (`headersFor` / `adopt`), and its model and tool
 * calls become children of that span: a run across hosts is one trace.
 *
 * Ids: a run's trace id is derived from its run id and a session's first span id from its run and
 * session ids (when a2a exports the spans itself: a program's own tracer provider makes random
 * ones), so that a resumed run continues the same trace and links its new spans to the ones
 * before the restart, and a process that knows no better hangs a session's spans from the id its
 * first span had.
 *
 * Over 600 lines, for a reason: one module state (the spans open, by run and session, and whether
 * tracing is on) that every function here reads first. The core path sees none of it: it calls
 * tracing.ts, which holds this module only while tracing is on.
 */
import type { Attributes, Link, Span, SpanContext, SpanKind, Tracer } from '@opentelemetry/api';
import type { ChatMessage, ModelReply, RunEvent, ToolCall } from '../../machines/protocol/index.js';
import { TraceHeaders } from '../../machines/protocol/index.js';
import type { ToolOutcome } from '../../machines/ports.js';
import { secrets } from '../config/secrets.js';
import { spanIdOf } from './traceIds.js';
import { traceIdOf } from './tracing.js';

/**
 * How spans are made: adapters/otel's records when a2a exports them itself; without one, the
 * API's tracer (the program's own SDK, or nothing). `ids`: the trace id of a span without a
 * parent, and the span id it must have (a run's root, a session's first span); a factory that
 * cannot honour them (the API's) gives random ones.
 */
export interface SpanFactory {
  start(name: string, options: SpanStart, parent: SpanContext | null, ids: { traceId: string; spanId?: string } | undefined): Span;
}

interface SpanStart {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  startTime?: number;
}

/** The API, handed over by `enableTracing` (never loaded before tracing is asked for). */
type Api = typeof import('@opentelemetry/api');
let api: Api | null = null;

/** The API's constants used here (its enums: the same numbers, without importing it). */
const KIND_INTERNAL = 0 as SpanKind;
const KIND_CLIENT = 2 as SpanKind;
const STATUS_ERROR = 2;
const SAMPLED = 1;

interface Active {
  factory: SpanFactory;
  /** Prompts, outputs, tool arguments and results as attributes (off by default; redacted either way). */
  content: boolean;
}

let active: Active | null = null;

/** The API's tracer as a factory (the program's tracer provider, or the API's no-op). */
function apiFactory(a: Api, tracer: Tracer): SpanFactory {
  return { start: (name, options, parent) => tracer.startSpan(name, options, parent ? a.trace.setSpanContext(a.ROOT_CONTEXT, parent) : a.ROOT_CONTEXT) };
}

/** Turns tracing on for this process (tracing.ts's `enableTracing`): spans from `factory` (adapters/otel), else from the API's global tracer provider. */
export function enable(a: Api, options: { content?: boolean; factory?: SpanFactory }): void {
  api = a;
  active = { factory: options.factory ?? apiFactory(a, a.trace.getTracer('a2a', '0.1.0')), content: options.content === true };
}

/** Turns tracing off and forgets every span context. */
export function disable(): void {
  active = null;
  contexts.clear();
  runTraces.clear();
  tools.clear();
}

function startSpan(name: string, options: SpanStart, parent: SpanContext | null, ids?: { traceId: string; spanId?: string }): Span {
  return active!.factory.start(name, options, parent, ids);
}

// ---------------------------------------------------------------------------------------------
// Span contexts of sessions, by run and session id (what a child's span, a model call or a tool
// call of this process hangs from)

const contexts = new Map<string, SpanContext>();
const keyOf = (runId: string, id: string) => `${runId}\0${id}`;

/** The trace of each run this process has seen a span of (a run started in a caller's trace is not in the trace its id derives). */
const runTraces = new Map<string, string>();
const RUNS_KEPT = 1_024;

function remember(runId: string, id: string, ctx: SpanContext): void {
  contexts.set(keyOf(runId, id), ctx);
  if (runTraces.get(runId) === ctx.traceId) return;
  runTraces.delete(runId);
  runTraces.set(runId, ctx.traceId);
  if (runTraces.size > RUNS_KEPT) runTraces.delete(runTraces.keys().next().value as string);
}

/**
 * The context a session's span has; unknown here (not yet opened, ended, or in a process that
 * did not say), the one its first span was given: in the run's trace, with the span id derived
 * from the session's.
 */
export function sessionContext(runId: string, sessionId: string): SpanContext {
  return contexts.get(keyOf(runId, sessionId)) ?? { traceId: runTraces.get(runId) ?? traceIdOf(runId), spanId: spanIdOf(runId, sessionId), traceFlags: SAMPLED, isRemote: true };
}

/** The trace headers (W3C `traceparent`, `tracestate`) of a session's span, for a message about it; none when tracing is off. */
export function headersFor(runId: string, sessionId: string): Record<string, string> | undefined {
  if (!active || !api) return undefined;
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.trace.setSpanContext(api.ROOT_CONTEXT, sessionContext(runId, sessionId)), carrier);
  return Object.keys(carrier).length ? carrier : undefined;
}

/**
 * The span context in a message's trace headers, or null when they hold none or an invalid one
 * (W3C: an invalid `traceparent` is ignored, and the receiver goes on without it).
 */
export function contextOfHeaders(headers: Record<string, string> | undefined): SpanContext | null {
  if (!headers || !api) return null;
  const parsed = TraceHeaders.safeParse(headers);
  if (!parsed.success) return null;
  const ctx = api.trace.getSpanContext(api.propagation.extract(api.ROOT_CONTEXT, parsed.data));
  return ctx && api.trace.isSpanContextValid(ctx) ? ctx : null;
}

/**
 * The trace headers of what a session does now (its running tool call's span, else its own),
 * for a request it makes to another service (an A2A agent): the service's spans join the trace.
 */
export function callHeaders(runId: string, sessionId: string): Record<string, string> | undefined {
  if (!active || !api) return undefined;
  const tool = tools.get(keyOf(runId, sessionId));
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.trace.setSpanContext(api.ROOT_CONTEXT, tool ? tool.spanContext() : sessionContext(runId, sessionId)), carrier);
  return Object.keys(carrier).length ? carrier : undefined;
}

/**
 * A message about a session arrived with trace headers: a session whose span is not in this
 * process (it runs here for an owner elsewhere, or reports from a host) hangs what happens to it
 * here from that span. A span of this process is never replaced.
 */
export function adopt(runId: string, sessionId: string, headers: Record<string, string> | undefined): void {
  if (!active) return;
  const key = keyOf(runId, sessionId);
  if (owned.has(key)) return;
  const ctx = contextOfHeaders(headers);
  if (ctx) remember(runId, sessionId, ctx);
}

/** A session that ran here for an owner elsewhere has ended: its context is forgotten. */
export function forget(runId: string, sessionId: string): void {
  const key = keyOf(runId, sessionId);
  if (!owned.has(key)) contexts.delete(key);
}

/** Sessions whose span is in this process (never replaced by an adopted context). */
const owned = new Set<string>();

// ---------------------------------------------------------------------------------------------
// Hooks of the agent loop: model calls and tool calls

/** The tool call a session runs now, by run and session (its permission waits hang from it). */
const tools = new Map<string, Span>();

const clip = (text: string, max = 8_000) => (text.length > max ? `${text.slice(0, max)}…` : text);
const redacted = (text: string) => secrets.text(clip(text));

/** Message text in the GenAI conventions' shape (`gen_ai.input.messages`), redacted. */
function messagesJson(messages: ChatMessage[]): string {
  const out = messages.slice(-20).map((m) => {
    if (m.role === 'tool') return { role: 'tool', parts: [{ type: 'tool_call_response', id: m.toolCallId, response: redacted(m.content) }] };
    const parts: unknown[] = m.content ? [{ type: 'text', content: redacted(m.content) }] : [];
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) parts.push({ type: 'tool_call', id: c.id, name: c.name, arguments: secrets.deep(c.arguments) });
    return { role: m.role, parts };
  });
  return JSON.stringify(out);
}

/** The `error.type` of a failure: an A2AError's code, else the error's class. */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[A-Z_]+$/.test(code)) return code;
  const name = (error as { name?: unknown } | null)?.name;
  return typeof name === 'string' && name ? name : '_OTHER';
}

function fail(span: Span, type: string, message: string): void {
  span.setAttribute('error.type', type);
  span.setStatus({ code: STATUS_ERROR, message: secrets.text(clip(message, 500)) });
}

export interface ChatSpanInfo {
  runId: string;
  sessionId: string;
  /** The provider (`openai`, `anthropic`, …). */
  provider: string;
  /** The model's name (what the call is priced by). */
  model: string;
  profile: string;
  maxTokens?: number;
  system: string;
  messages: ChatMessage[];
}

/** Starts a model call's span (`chat <model>`); null when tracing is off. */
export function startChat(info: ChatSpanInfo): { end(reply: ModelReply, costUsd: number | undefined): void; fail(error: unknown): void } | null {
  if (!active) return null;
  const attributes: Attributes = {
    'gen_ai.operation.name': 'chat',
    'gen_ai.provider.name': info.provider,
    'gen_ai.request.model': info.model,
    'gen_ai.conversation.id': info.runId,
    'a2a.model.profile': info.profile,
  };
  if (info.maxTokens) attributes['gen_ai.request.max_tokens'] = info.maxTokens;
  if (active.content) {
    attributes['gen_ai.system_instructions'] = JSON.stringify([{ type: 'text', content: redacted(info.system) }]);
    attributes['gen_ai.input.messages'] = messagesJson(info.messages);
  }
  return new ChatSpan(startSpan(`chat ${info.model}`, { kind: KIND_CLIENT, attributes }, sessionContext(info.runId, info.sessionId)));
}

/** A model call's span, until the call ends (a class, not closures: one object per call of every session). */
class ChatSpan {
  constructor(private readonly span: Span) {}

  end(reply: ModelReply, costUsd: number | undefined): void {
    const { span } = this;
    const u = reply.usage;
    span.setAttribute('gen_ai.usage.input_tokens', u.inputTokens);
    span.setAttribute('gen_ai.usage.output_tokens', u.outputTokens);
    if (u.cacheReadTokens) span.setAttribute('gen_ai.usage.cache_read.input_tokens', u.cacheReadTokens);
    if (u.cacheWriteTokens) span.setAttribute('gen_ai.usage.cache_creation.input_tokens', u.cacheWriteTokens);
    if (costUsd) span.setAttribute('gen_ai.usage.cost', costUsd);
    span.setAttribute('gen_ai.response.finish_reasons', [reply.stopReason ?? (reply.toolCalls.length ? 'tool_calls' : 'stop')]);
    if (active?.content) {
      span.setAttribute('gen_ai.output.messages', messagesJson([{ role: 'assistant', content: reply.text, ...(reply.toolCalls.length ? { toolCalls: reply.toolCalls } : {}) }]));
    }
    if (reply.stopReason === 'max_tokens') fail(span, 'max_tokens', 'the reply was cut off at the output limit');
    span.end();
  }

  fail(error: unknown): void {
    fail(this.span, errorType(error), errorMessage(error));
    this.span.end();
  }
}

const errorMessage = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Starts a tool call's span (`execute_tool <tool>`); null when tracing is off. */
export function startTool(runId: string, sessionId: string, call: ToolCall, type: 'function' | 'extension'): { end(outcome: ToolOutcome): void; fail(error: unknown): void } | null {
  if (!active) return null;
  const attributes: Attributes = {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.id,
    'gen_ai.tool.type': type,
    'gen_ai.conversation.id': runId,
  };
  if (active.content) attributes['gen_ai.tool.call.arguments'] = redacted(JSON.stringify(call.arguments));
  const span = startSpan(`execute_tool ${call.name}`, { kind: KIND_INTERNAL, attributes }, sessionContext(runId, sessionId));
  const key = keyOf(runId, sessionId);
  tools.set(key, span);
  return new ToolSpan(span, key);
}

/** A tool call's span, until the call ends (the session's running tool call meanwhile: `tools`). */
class ToolSpan {
  constructor(
    private readonly span: Span,
    private readonly key: string,
  ) {}

  end(outcome: ToolOutcome): void {
    if (active?.content) this.span.setAttribute('gen_ai.tool.call.result', redacted(outcome.content));
    if (outcome.isError) fail(this.span, 'tool_error', outcome.content);
    this.#done();
  }

  fail(error: unknown): void {
    fail(this.span, errorType(error), errorMessage(error));
    this.#done();
  }

  #done(): void {
    if (tools.get(this.key) === this.span) tools.delete(this.key);
    this.span.end();
  }
}

// ---------------------------------------------------------------------------------------------
// Spans from the run's events

/** Session states that end a session. */
const FINAL = new Set(['completed', 'failed', 'cancelled', 'timedOut']);

/** How many ended sessions a builder remembers (so that a late event does not open a span again). */
const ENDED_KEPT = 8_192;

const agentName = (agentType: string | undefined) => (agentType === undefined ? 'agent' : agentType.startsWith('@') ? agentType.slice(1) : agentType);

type Data = Record<string, unknown>;
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

interface Open {
  span: Span;
  ctx: SpanContext;
  /** Opened for a session already running (restored here): it may end with its final state, its owner's result being elsewhere. */
  late?: boolean;
}

/**
 * Builds spans from one process's run events: a run's bus (the orchestrator: events relayed from
 * hosts are left to the hosts, which trace their own), or a host's sink. Each event is handled in
 * a few map lookups; nothing is kept for a session once it ended.
 */
export class TraceBuilder {
  readonly #roots = new Map<string, Open>();
  readonly #tasks = new Map<string, Open>();
  readonly #sessions = new Map<string, Open>();
  /** Waits (inquiries, questions, a person's answers, permission waits) by run and id. */
  readonly #waits = new Map<string, Span>();
  readonly #ended = new Set<string>();
  /** The external context a run's root hangs from (a program's active span, an A2A caller's traceparent). */
  readonly #parents = new Map<string, SpanContext>();

  /** A run's root span hangs from this context (the caller's trace) instead of starting a trace. */
  parentRun(runId: string, parent: SpanContext | null): void {
    if (parent) this.#parents.set(runId, parent);
  }

  /** The trace a run's spans go to: its caller's, or the one its id derives (the run's log says it, for links to the tracing backend). */
  traceOf(runId: string): string {
    return this.#parents.get(runId)?.traceId ?? traceIdOf(runId);
  }

  observe(event: RunEvent): void {
    if (!active) return;
    const data = (event.data ?? {}) as Data;
    if (data.relayedFrom) return;
    const { runId, ts } = event;
    switch (event.type) {
      case 'run.started':
        if (data.standalone !== true) this.#root(runId, ts, false, event.planId);
        return;
      case 'run.resumed':
        this.#root(runId, ts, true, event.planId);
        return;
      case 'run.finished':
      case 'run.stopped':
        this.#finishRun(runId, ts, event.type === 'run.stopped' ? `stopped: ${str(data.reason) ?? ''}` : str(data.status));
        return;
      case 'worker.deployed':
      case 'subtask.spawned':
        this.#openSession(event, ts, true);
        return;
      case 'subtask.result':
        this.#endSession(event, ts, data);
        return;
      case 'session.state':
        if (FINAL.has(str(data.state) ?? '')) {
          const key = keyOf(runId, event.subTaskId ?? '');
          // a session run here for an owner elsewhere: its owner ends its span
          if (!owned.has(key)) return this.#forgetRemote(runId, event.subTaskId);
          // a session of this process ends with its result (which says how), unless its span was
          // opened late (restored here: its owner may be another process)
          if (this.#sessions.get(key)?.late) this.#endSession(event, ts, { status: data.state === 'completed' ? 'success' : str(data.state) });
          return;
        }
        this.#ensureSession(event, ts);
        return;
      case 'subtask.placed':
      case 'session.restored': {
        const open = this.#ensureSession(event, ts);
        if (open && str(data.host)) open.span.setAttribute('a2a.host', str(data.host)!);
        open?.span.addEvent(event.type, { 'a2a.host': str(data.host) ?? '' }, ts);
        return;
      }
      case 'inquiry.sent':
        this.#closeWait(runId, `inquiry:${event.subTaskId}`, ts);
        this.#openWait(event, `inquiry:${event.subTaskId}`, `inquiry ${agentName(event.agentType)}`, ts, { 'a2a.inquiry.attempt': Number(data.attempt ?? 0) });
        return;
      case 'inquiry.answered':
        this.#closeWait(runId, `inquiry:${event.subTaskId}`, ts, active.content ? { 'a2a.answer': redacted(str(data.text) ?? '') } : {});
        return;
      case 'question.asked':
        this.#openWait(event, `question:${str(data.id)}`, `question ${agentName(event.agentType)}`, ts, { 'a2a.question.id': str(data.id) ?? '', ...(active.content ? { 'a2a.question': redacted(str(data.question) ?? '') } : {}) });
        return;
      case 'question.answered':
        this.#closeWait(runId, `question:${str(data.id)}`, ts, { 'a2a.answered_by': str(data.by) ?? '', ...(active.content ? { 'a2a.answer': redacted(str(data.answer) ?? '') } : {}) }, str(data.modelError));
        return;
      case 'human.asked':
        this.#openWait(event, `human:${str(data.id)}`, `await_human ${str(data.kind) ?? 'item'}`, ts, {
          'a2a.human.item': str(data.id) ?? '',
          'a2a.human.kind': str(data.kind) ?? '',
          'a2a.human.timeout_ms': Number(data.timeoutMs ?? 0),
          ...(active.content ? { 'a2a.human.title': redacted(str(data.title) ?? '') } : {}),
        });
        return;
      case 'human.answered':
        this.#closeWait(runId, `human:${str(data.id)}`, ts, { 'a2a.human.approved': data.approved === true, 'a2a.human.by': str(data.by) ?? '', ...(str(data.reason) ? { 'a2a.human.reason': redacted(str(data.reason)!) } : {}) });
        return;
      case 'permission.requested': {
        const key = keyOf(runId, event.subTaskId ?? '');
        const tool = tools.get(key);
        const parent = tool ? tool.spanContext() : this.#contextOf(event);
        const span = startSpan(`permission ${str(data.action) ?? ''}`.trim(), {
          attributes: { 'a2a.permission.action': str(data.action) ?? '', 'a2a.permission.request_id': str(data.requestId) ?? '', 'gen_ai.conversation.id': runId, 'gen_ai.agent.id': event.subTaskId ?? '', ...(active.content ? { 'a2a.permission.detail': redacted(str(data.detail) ?? '') } : {}) },
          startTime: ts,
        }, parent);
        this.#waits.set(keyOf(runId, `permission:${str(data.requestId)}`), span);
        return;
      }
      case 'permission.decided': {
        const key = keyOf(runId, `permission:${str(data.requestId)}`);
        const span = this.#waits.get(key);
        const attributes = { 'a2a.permission.approved': data.approved === true, 'a2a.permission.decided_by': str(data.decidedBy) ?? '', 'a2a.permission.decider': str(data.decider) ?? '' };
        if (span) {
          this.#waits.delete(key);
          span.setAttributes(attributes);
          span.end(ts);
        } else {
          // decided where it was asked (policy), or the decider's hop: a mark on the session
          this.#sessions.get(keyOf(runId, event.subTaskId ?? ''))?.span.addEvent('permission.decided', { ...attributes, 'a2a.permission.action': str(data.action) ?? '' }, ts);
        }
        return;
      }
      case 'permission.forwarded':
        this.#sessions.get(keyOf(runId, event.subTaskId ?? ''))?.span.addEvent('permission.forwarded', { 'a2a.permission.request_id': str(data.requestId) ?? '', 'a2a.permission.to': str(data.to) ?? '' }, ts);
        return;
      case 'worktree.created':
      case 'branch.committed':
      case 'branch.merged':
      case 'branch.conflict':
      case 'branch.pushed':
      case 'pr.created':
      case 'worktree.removed':
        this.#gitStep(event, data, ts);
        return;
      case 'task.completed':
      case 'task.skipped':
        this.#endTask(event, data, ts);
        return;
      case 'model.switched':
      case 'worker.redirected':
      case 'worker.reassigned':
      case 'worker.reinitialized':
      case 'worker.resumed':
      case 'stuck.detected':
      case 'budget.reached':
      case 'circuit.open':
      case 'limit.hit':
      case 'model.truncated':
        this.#mark(event, data, ts);
        return;
      default:
        return;
    }
  }

  /** Ends every span still open (a process stopping): each says it was cut short. */
  close(ts = Date.now()): void {
    for (const span of this.#waits.values()) span.end(ts);
    this.#waits.clear();
    for (const [key, open] of this.#sessions) {
      open.span.setAttribute('a2a.unfinished', true);
      open.span.end(ts);
      owned.delete(key);
      contexts.delete(key);
    }
    this.#sessions.clear();
    for (const open of this.#tasks.values()) open.span.end(ts);
    this.#tasks.clear();
    for (const [runId, open] of this.#roots) {
      open.span.setAttribute('a2a.unfinished', true);
      open.span.end(ts);
      contexts.delete(keyOf(runId, 'orchestrator'));
      owned.delete(keyOf(runId, 'orchestrator'));
    }
    this.#roots.clear();
  }

  #root(runId: string, ts: number, resumed: boolean, planId: string | undefined): void {
    if (this.#roots.has(runId)) return;
    const parent = this.#parents.get(runId) ?? null;
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'orchestrator',
      'gen_ai.conversation.id': runId,
      'a2a.run.id': runId,
      ...(planId ? { 'a2a.plan.id': planId } : {}),
      ...(resumed ? { 'a2a.resumed': true } : {}),
    };
    const first = { traceId: parent?.traceId ?? traceIdOf(runId), spanId: spanIdOf(runId, 'orchestrator') };
    const links: Link[] = resumed ? [{ context: { traceId: first.traceId, spanId: first.spanId, traceFlags: SAMPLED, isRemote: true }, attributes: { 'a2a.link': 'before the restart' } }] : [];
    const span = startSpan('invoke_agent orchestrator', { attributes, links, startTime: ts }, parent, resumed ? { traceId: first.traceId } : first);
    const open = { span, ctx: span.spanContext() };
    this.#roots.set(runId, open);
    const key = keyOf(runId, 'orchestrator');
    remember(runId, 'orchestrator', open.ctx);
    owned.add(key);
  }

  #finishRun(runId: string, ts: number, status: string | undefined): void {
    // what is still open ends with the run (sessions cut short by a stop)
    for (const [key, open] of this.#sessions) {
      if (!key.startsWith(`${runId}\0`)) continue;
      open.span.setAttribute('a2a.unfinished', true);
      open.span.end(ts);
      this.#sessions.delete(key);
      owned.delete(key);
      contexts.delete(key);
    }
    for (const [key, open] of this.#tasks) {
      if (!key.startsWith(`${runId}\0`)) continue;
      open.span.end(ts);
      this.#tasks.delete(key);
    }
    for (const [key, span] of this.#waits) {
      if (!key.startsWith(`${runId}\0`)) continue;
      span.end(ts);
      this.#waits.delete(key);
    }
    const root = this.#roots.get(runId);
    if (!root) return;
    this.#roots.delete(runId);
    root.span.setAttribute('a2a.run.status', status ?? '');
    if (status !== 'completed') fail(root.span, status?.startsWith('stopped') ? 'stopped' : (status ?? 'unknown'), `the run ended ${status ?? ''}`);
    root.span.end(ts);
    contexts.delete(keyOf(runId, 'orchestrator'));
    owned.delete(keyOf(runId, 'orchestrator'));
    this.#parents.delete(runId);
  }

  /** The context an event's span hangs from: its session's, its task's, its run's. */
  #contextOf(event: RunEvent): SpanContext {
    const { runId } = event;
    if (event.subTaskId) return sessionContext(runId, event.subTaskId);
    if (event.taskId) {
      const task = this.#tasks.get(keyOf(runId, event.taskId));
      if (task) return task.ctx;
    }
    return sessionContext(runId, 'orchestrator');
  }

  /** The task span of a worker's task (opened by the first event of the task). */
  #task(event: RunEvent, ts: number): Open | null {
    const { runId, taskId } = event;
    if (!taskId || !this.#roots.has(runId)) return null;
    const key = keyOf(runId, taskId);
    let open = this.#tasks.get(key);
    if (!open) {
      if (this.#ended.has(`task\0${key}`)) return null;
      const span = startSpan(`task ${taskId}`, { attributes: { 'a2a.task.id': taskId, 'gen_ai.conversation.id': runId }, startTime: ts }, this.#roots.get(runId)!.ctx);
      open = { span, ctx: span.spanContext() };
      this.#tasks.set(key, open);
    }
    return open;
  }

  #openSession(event: RunEvent, ts: number, first: boolean): Open | null {
    const { runId } = event;
    const id = event.subTaskId;
    if (!id) return null;
    const key = keyOf(runId, id);
    const existing = this.#sessions.get(key);
    if (existing) return existing;
    if (this.#ended.has(key)) return null;
    const data = (event.data ?? {}) as Data;
    const worker = event.type === 'worker.deployed' || (event.parentId === 'orchestrator' && !first);
    const parent = worker ? (this.#task(event, ts)?.ctx ?? this.#roots.get(runId)?.ctx ?? null) : event.parentId && event.parentId !== 'cli' ? sessionContext(runId, event.parentId) : null;
    const agent = agentName(event.agentType);
    const attributes: Attributes = {
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': agent,
      'gen_ai.agent.id': id,
      'gen_ai.conversation.id': runId,
      'a2a.role': worker ? 'worker' : 'subtask',
      ...(event.depth ? { 'a2a.depth': event.depth } : {}),
      ...(str(data.model) ? { 'gen_ai.request.model': str(data.model)! } : {}),
      ...(first ? {} : { 'a2a.restored': true }),
    };
    if (active!.content && str(data.prompt)) attributes['gen_ai.input.messages'] = JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: redacted(str(data.prompt)!) }] }]);
    // the run's trace (a caller's, when it was started in one), and the id its first span had
    const ids = { traceId: parent?.traceId ?? runTraces.get(runId) ?? traceIdOf(runId), spanId: spanIdOf(runId, id) };
    const links: Link[] = first ? [] : [{ context: { ...ids, traceFlags: SAMPLED, isRemote: true }, attributes: { 'a2a.link': 'the session before its restore' } }];
    const span = startSpan(`invoke_agent ${agent}`, { attributes, links, startTime: ts }, parent, first ? ids : { traceId: ids.traceId });
    const open: Open = { span, ctx: span.spanContext() };
    if (!first) open.late = true;
    this.#sessions.set(key, open);
    remember(runId, id, open.ctx);
    owned.add(key);
    return open;
  }

  /** The span of a session an event is about: opened now for a session restored here (a resumed run) that this process owns. */
  #ensureSession(event: RunEvent, ts: number): Open | null {
    const id = event.subTaskId;
    if (!id) return null;
    const key = keyOf(event.runId, id);
    const open = this.#sessions.get(key);
    if (open) return open;
    // a session run here for an owner elsewhere hangs from the owner's span (adopted from the spawn)
    if (contexts.has(key) || this.#ended.has(key)) return null;
    return this.#openSession(event, ts, false);
  }

  #endSession(event: RunEvent, ts: number, data: Data): void {
    const id = event.subTaskId;
    if (!id) return;
    const key = keyOf(event.runId, id);
    const open = this.#sessions.get(key) ?? (event.type === 'subtask.result' ? this.#ensureSession(event, ts) : null);
    if (!open) return;
    this.#sessions.delete(key);
    owned.delete(key);
    contexts.delete(key);
    this.#ended.add(key);
    if (this.#ended.size > ENDED_KEPT) this.#ended.delete(this.#ended.values().next().value as string);
    const status = str(data.status) ?? 'unknown';
    open.span.setAttribute('a2a.result.status', status);
    if (str(data.how)) open.span.setAttribute('a2a.result.how', str(data.how)!);
    if (active!.content && str(data.output)) open.span.setAttribute('gen_ai.output.messages', JSON.stringify([{ role: 'assistant', parts: [{ type: 'text', content: redacted(str(data.output)!) }] }]));
    if (status !== 'success' && status !== 'partial') fail(open.span, status, str(data.error) ?? `the session ended ${status}`);
    this.#closeWaitsOf(event.runId, id, ts);
    open.span.end(ts);
  }

  #forgetRemote(runId: string, sessionId: string | undefined): void {
    if (!sessionId) return;
    this.#closeWaitsOf(runId, sessionId, Date.now());
    forget(runId, sessionId);
  }

  /** A session ended: its inquiry and the permission waits of its tool calls end with it (a wait never decided: a cancel). */
  #closeWaitsOf(runId: string, sessionId: string, ts: number): void {
    this.#closeWait(runId, `inquiry:${sessionId}`, ts);
    // permission request ids are `<session>:perm:…`
    const prefix = keyOf(runId, `permission:${sessionId}:perm:`);
    for (const key of this.#waits.keys()) {
      if (!key.startsWith(prefix)) continue;
      const span = this.#waits.get(key)!;
      this.#waits.delete(key);
      span.setAttribute('a2a.permission.undecided', true);
      span.end(ts);
    }
  }

  #openWait(event: RunEvent, id: string, name: string, ts: number, attributes: Attributes): void {
    const key = keyOf(event.runId, id);
    if (this.#waits.has(key)) return;
    const span = startSpan(name, { attributes: { ...attributes, 'gen_ai.conversation.id': event.runId, ...(event.subTaskId ? { 'gen_ai.agent.id': event.subTaskId } : {}) }, startTime: ts }, this.#contextOf(event));
    this.#waits.set(key, span);
  }

  #closeWait(runId: string, id: string, ts: number, attributes: Attributes = {}, error?: string): void {
    const key = keyOf(runId, id);
    const span = this.#waits.get(key);
    if (!span) return;
    this.#waits.delete(key);
    span.setAttributes(attributes);
    if (error) fail(span, 'model_error', error);
    span.end(ts);
  }

  #gitStep(event: RunEvent, data: Data, ts: number): void {
    const task = this.#task(event, ts);
    const ms = typeof data.ms === 'number' ? data.ms : 0;
    const names: Record<string, string> = {
      'worktree.created': 'git worktree add',
      'branch.committed': 'git commit',
      'branch.merged': `merge ${str(data.branch) ?? ''}`,
      'branch.conflict': `merge ${str(data.branch) ?? ''}`,
      'branch.pushed': `git push ${str(data.branch) ?? ''}`,
      'pr.created': 'create_pull_request',
      'worktree.removed': 'git worktree remove',
    };
    const attributes: Attributes = { 'gen_ai.conversation.id': event.runId, ...(event.taskId ? { 'a2a.task.id': event.taskId } : {}) };
    for (const k of ['branch', 'into', 'commit', 'base', 'remote', 'url'] as const) if (str(data[k])) attributes[`a2a.git.${k}`] = str(data[k])!;
    if (typeof data.number === 'number') attributes['a2a.git.pull_request'] = data.number;
    const span = startSpan(names[event.type]!.trim(), { attributes, startTime: ts - ms }, task?.ctx ?? this.#contextOf(event));
    if (event.type === 'branch.conflict') fail(span, 'merge_conflict', `conflicts in ${Array.isArray(data.conflicts) ? data.conflicts.join(', ') : '?'}`);
    span.end(ts);
  }

  #endTask(event: RunEvent, data: Data, ts: number): void {
    if (!event.taskId) return;
    const key = keyOf(event.runId, event.taskId);
    const open = this.#tasks.get(key) ?? this.#task(event, ts);
    if (!open) return;
    this.#tasks.delete(key);
    this.#ended.add(`task\0${key}`);
    const state = event.type === 'task.skipped' ? 'skipped' : (str(data.state) ?? 'unknown');
    open.span.setAttribute('a2a.task.state', state);
    const git = data.git as { outcome?: unknown } | undefined;
    if (git && str(git.outcome)) open.span.setAttribute('a2a.git.outcome', str(git.outcome)!);
    if (state === 'failed' || state === 'cancelled') fail(open.span, state, `task ${event.taskId} ${state}`);
    open.span.end(ts);
  }

  #mark(event: RunEvent, data: Data, ts: number): void {
    const open = event.subTaskId ? this.#sessions.get(keyOf(event.runId, event.subTaskId)) : undefined;
    const target = open?.span ?? this.#roots.get(event.runId)?.span;
    if (!target) return;
    const attributes: Attributes = {};
    for (const [k, v] of Object.entries(data)) {
      if (typeof v === 'number' || typeof v === 'boolean') attributes[`a2a.${k}`] = v;
      else if (typeof v === 'string' && (active!.content || ['from', 'to', 'by', 'scope', 'code'].includes(k))) attributes[`a2a.${k}`] = redacted(v);
    }
    target.addEvent(event.type, attributes, ts);
  }
}
