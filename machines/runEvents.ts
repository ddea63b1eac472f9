/**
 * What each run event says: the `data` of every event type, as a schema. The library types its
 * events from these (`TypedRunEvent`: `e.type === 'tool.called'` gives `e.data.name: string`), and
 * the test suite checks every event a run emits against them, so that the types cannot drift from
 * what the emitters send. Fields are required where every emitter sends them; extra fields are
 * allowed (a host's relayed events carry `relayedFrom` and `relayedAt`).
 */
import { z } from 'zod';
import type { RunSummary } from './orchestrator.machine.js';
import {
  A2ATaskState,
  ArtifactStatus,
  ArtifactType,
  DiffStats,
  ErrorCode,
  JsonObject,
  PermissionAction,
  PermissionCategory,
  ResultStatus,
  SubTaskResult,
  type RunEvent,
  type RunEventType,
} from './protocol/index.js';

/** A host's event relayed into the run's log: which process sent it, and when (its clock; `ts` is when the run took it). */
const data = <S extends z.ZodRawShape>(shape: S) => z.object({ ...shape, relayedFrom: z.string().optional(), relayedAt: z.number().optional() });
const by = data({ by: z.string() });
const RunStatus = z.enum(['completed', 'failed', 'cancelled']);
const PullRequest = z.object({ number: z.number(), url: z.string() });
/** How long a git step took (ms): a trace's span of it ends at the event and starts this long before. */
const took = { ms: z.number().optional() };
const Usage = { inputTokens: z.number(), outputTokens: z.number(), cacheReadTokens: z.number().optional(), cacheWriteTokens: z.number().optional(), costUsd: z.number().optional() };

/** The data of each event type; a type not listed here (the workflow's, whose shapes vary by step) carries a JSON object. */
export const RUN_EVENT_DATA = {
  'run.started': data({
    planId: z.string(),
    tasks: z.number(),
    source: z.string(),
    standalone: z.literal(true).optional(),
    /** The cost budgets the run was started with (models.budgets), for views that show spending against them. */
    budgets: z.object({ runUsd: z.number().optional(), workerUsd: z.number().optional() }).optional(),
    /** With tracing on: the trace its spans go to (32 hex digits), for links to the tracing backend. */
    traceId: z.string().regex(/^[0-9a-f]{32}$/).optional(),
  }),
  'run.finished': data({ status: RunStatus, summary: z.custom<RunSummary>((v) => typeof v === 'object' && v !== null).optional(), result: SubTaskResult.optional() }),
  'run.resumed': data({ planId: z.string(), replayed: z.array(z.string()).optional(), recovered: z.array(z.string()).optional(), checkpointAt: z.number().optional(), restarted: z.literal(true).optional(), reason: z.string().optional() }),
  'run.stopped': data({ reason: z.string() }),
  'run.paused': data({ by: z.string(), restored: z.literal(true).optional() }),
  'run.unpaused': by,
  'worker.deployed': data({ prompt: z.string(), expectedOutput: z.string(), model: z.string().optional(), role: z.string().optional() }),
  'subtask.spawned': data({ prompt: z.string(), expectedOutput: z.string(), model: z.string().optional(), role: z.string().optional() }),
  'subtask.queued': data({ reason: z.string() }),
  'subtask.result': data({ status: ResultStatus, how: z.string(), output: z.string(), error: z.string().optional(), fallback: z.literal(true).optional() }),
  'subtask.placed': data({ host: z.string(), restored: z.boolean() }),
  'session.restored': data({ host: z.string(), savedAt: z.number() }),
  'host.joined': data({ host: z.string(), agents: z.array(z.string()) }),
  'host.lost': data({ host: z.string(), sessions: z.array(z.string()) }),
  'session.state': data({ state: z.string() }),
  'update.queued': data({
    updateId: z.string(),
    updateType: z.enum(['completed', 'failed', 'idle', 'idle_response', 'progress']),
    from: z.string(),
    kind: z.enum(['status', 'question', 'error', 'stuck']).optional(),
    message: z.string().optional(),
  }),
  'limit.hit': data({ code: ErrorCode, message: z.string(), requested: z.number() }),
  'model.called': data({
    turn: z.number().optional(),
    text: z.string().optional(),
    /** The tool names called, in order. */
    toolCalls: z.array(z.string()),
    /** The same calls with their ids and arguments (JSON, up to 100,000 characters), for transcripts. */
    calls: z.array(z.object({ id: z.string(), name: z.string(), arguments: z.string() })).optional(),
    ...Usage,
    discarded: z.literal(true).optional(),
    reason: z.string().optional(),
    /** The call's id (a reply given back from the effect journal after a restore is told once). */
    replyId: z.string().optional(),
    /** The model that answered (its provider's name) and the profile it came from. */
    model: z.string().optional(),
    profile: z.string().optional(),
    /** A call that summarized the conversation to fit the model's window (priced and told on its own, before the call it made room for). */
    summary: z.literal(true).optional(),
  }),
  'model.truncated': data({ attempt: z.number(), limit: z.number().nullable(), outputTokens: z.number(), toolCalls: z.array(z.string()), profile: z.string() }),
  'tool.called': data({ name: z.string(), isError: z.boolean(), content: z.string(), callId: z.string().optional(), turn: z.number().optional(), epoch: z.number().optional() }),
  'message.injected': data({ text: z.string() }),
  'permission.requested': data({ requestId: z.string(), action: PermissionAction, detail: z.string(), requesterId: z.string() }),
  'permission.forwarded': data({ requestId: z.string(), action: PermissionAction, detail: z.string(), from: z.string(), to: z.string(), hop: z.number(), via: z.array(z.string()) }),
  'permission.decided': data({
    requestId: z.string(),
    approved: z.boolean(),
    decidedBy: z.enum(['policy', 'parent', 'orchestrator', 'human', 'timeout']),
    decider: z.string(),
    action: PermissionAction.optional(),
    detail: z.string().optional(),
    reason: z.string().optional(),
    requesterId: z.string().optional(),
    via: z.array(z.string()).optional(),
    category: PermissionCategory.optional(),
    tier: z.string().optional(),
  }),
  'human.asked': data({
    id: z.string(),
    kind: z.enum(['permission', 'question']),
    title: z.string(),
    timeoutMs: z.number(),
    askedAt: z.number(),
    expiresAt: z.number(),
    onTimeout: z.object({ approved: z.boolean(), text: z.string() }),
    requesterId: z.string(),
  }),
  'human.answered': data({ id: z.string(), kind: z.enum(['permission', 'question']), title: z.string(), approved: z.boolean(), text: z.string(), by: z.string(), reason: z.string().optional() }),
  'question.asked': data({ id: z.string(), question: z.string() }),
  'question.answered': data({ id: z.string(), by: z.string(), answer: z.string(), modelError: z.string().optional() }),
  'inquiry.sent': data({ attempt: z.number() }),
  'inquiry.answered': data({ text: z.string() }),
  'inbox.accepted': data({ id: z.string(), type: z.string(), priority: z.string(), replayed: z.literal(true).optional() }),
  'inbox.handled': data({ id: z.string(), type: z.string(), tookMs: z.number() }),
  'worker.reassigned': data({ from: z.string(), to: z.string(), by: z.string() }),
  'worker.reinitialized': by,
  'worker.resumed': by,
  'worker.redirected': data({ by: z.string(), instructions: z.string(), reason: z.string().optional(), redirect: z.number().optional() }),
  'budget.reached': data({ scope: z.enum(['run', 'worker']), limitUsd: z.number(), spentUsd: z.number() }),
  'model.switched': data({ from: z.string().nullable(), to: z.string(), by: z.string() }),
  'circuit.open': data({ failures: z.number() }),
  'stuck.detected': data({ reason: z.string() }),
  warning: data({ message: z.string(), sandbox: z.literal('none').optional(), summarized: z.boolean().optional(), overflow: z.literal(true).optional(), before: z.number().optional(), after: z.number().optional() }),
  'mcp.connected': data({
    server: z.string(),
    tools: z.number(),
    ms: z.number(),
    restart: z.number().optional(),
    /** The protocol revision agreed (`2026-07-28`, or an earlier one after `initialize`). */
    protocolVersion: z.string().optional(),
    /** What else the server offers as tools: its resources, its prompts. */
    resources: z.boolean().optional(),
    prompts: z.boolean().optional(),
  }),
  'mcp.failed': data({ server: z.string(), phase: z.enum(['start', 'died', 'timeout', 'refused']), error: z.string(), tool: z.string().optional() }),
  'effect.in_doubt': data({
    tool: z.string(),
    callId: z.string(),
    idempotencyKey: z.string(),
    /** The call's arguments (JSON, clipped), so that a person can check what it may have done. */
    arguments: z.string(),
    /** `reported`: the model was told the outcome is unknown; `asked`: a person decides whether it runs again. */
    handling: z.enum(['reported', 'asked']),
  }),
  'mcp.elicitation.asked': data({ server: z.string(), tool: z.string(), message: z.string(), requestedSchema: z.record(z.string(), z.unknown()), tier: z.enum(['auto_approve', 'ask_user', 'auto_deny']).optional(), attempt: z.number().optional() }),
  'mcp.elicitation.answered': data({
    server: z.string(),
    tool: z.string(),
    action: z.enum(['accept', 'decline', 'cancel']),
    /** Who answered: a person, a parent or the orchestrator by policy, the server's defaults, the timeout, or a2a itself (a question it could not ask). */
    by: z.string(),
    reason: z.string().optional(),
    /** The accepted content's field names (their values are not logged). */
    fields: z.array(z.string()).optional(),
  }),
  'mcp.progress': data({ server: z.string(), tool: z.string(), callId: z.string().optional(), progress: z.number(), total: z.number().optional(), message: z.string().optional(), skipped: z.number().optional() }),
  'mcp.called': data({ server: z.string(), tool: z.string(), isError: z.boolean(), ms: z.number(), cancelled: z.literal(true).optional(), error: z.string().optional(), callId: z.string().optional() }),
  'artifact.created': data({ artifactId: z.string(), artifactType: ArtifactType, version: z.number(), status: ArtifactStatus, producer: z.string(), producerRole: z.string(), brief: z.string(), files: z.number() }),
  'a2a.served': data({
    taskId: z.string(),
    contextId: z.string(),
    state: A2ATaskState,
    /** The state before, when this event changed it. */
    from: A2ATaskState.optional(),
    /** The agent type the task's skill named. */
    agent: z.string(),
    /** The named client that owns the task (a2a serve's A2A_SERVE_TOKENS). */
    owner: z.string().optional(),
    /** A message of the task: the client's (`in`) or the status the server sent (`out`), clipped and redacted. */
    direction: z.enum(['in', 'out']).optional(),
    text: z.string().optional(),
  }),
  'a2a.delegated': data({
    /** The remote agent's URL (its card, or the server's base URL), without credentials. */
    url: z.string(),
    taskId: z.string(),
    contextId: z.string(),
    state: A2ATaskState,
    /** The state the delegating session last knew, when this event changed it. */
    from: z.string().optional(),
    /** The remote agent's latest status text. */
    message: z.string().optional(),
    /** Why a2a gave the remote task up (cancelled it, or could not follow it). */
    error: z.string().optional(),
  }),
  'artifact.updated': data({ artifactId: z.string(), artifactType: ArtifactType, version: z.number(), status: ArtifactStatus, producer: z.string(), producerRole: z.string(), brief: z.string(), files: z.number() }),
  'task.completed': data({
    state: z.enum(['succeeded', 'failed', 'cancelled']),
    status: ResultStatus,
    output: z.string(),
    git: z.object({ outcome: z.string(), branch: z.string(), commit: z.string().nullable(), pullRequest: PullRequest.optional() }).optional(),
  }),
  'task.skipped': data({ reason: z.string() }),
  'worktree.created': data({ ...took, worktree: z.string(), branch: z.string(), base: z.string() }),
  'worktree.removed': data({ ...took, worktree: z.string(), branch: z.string() }),
  'branch.committed': data({ ...took, commit: z.string().nullable(), diff: DiffStats }),
  'branch.merged': data({ ...took, branch: z.string(), into: z.string(), commit: z.string() }),
  'branch.conflict': data({ ...took, branch: z.string(), into: z.string(), conflicts: z.array(z.string()) }),
  'branch.pushed': data({ ...took, remote: z.string(), branch: z.string() }),
  'pr.created': data({ ...took, number: z.number(), url: z.string(), branch: z.string(), base: z.string() }),
  'review.requested': data({ round: z.number(), reviewer: z.string(), branch: z.string(), diff: DiffStats }),
  'changes.requested': data({ round: z.number(), by: z.string(), feedback: z.string() }),
  'branch.done': data({
    outcome: z.enum(['merged', 'pr_opened', 'pushed', 'kept', 'no_changes', 'rejected', 'failed', 'abandoned']),
    reason: z.string(),
    branch: z.string(),
    diff: DiffStats.nullable(),
    commit: z.string().nullable(),
    pullRequest: PullRequest.nullable(),
  }),
} satisfies Partial<Record<RunEventType, z.ZodType>>;

type Described = keyof typeof RUN_EVENT_DATA;

/** The data of each event type. */
export type RunEventData = { [K in RunEventType]: K extends Described ? z.output<(typeof RUN_EVENT_DATA)[K]> : z.output<typeof JsonObject> };

/**
 * A run event whose `data` is typed by its `type`: narrowing on `type` gives the fields
 * (`if (e.type === 'tool.called') e.data.name`).
 */
export type TypedRunEvent = { [K in RunEventType]: Omit<RunEvent, 'type' | 'data'> & { type: K; data: RunEventData[K] } }[RunEventType];

/** Why an event's data does not match its type's schema, or null when it does (or its type has none). */
export function runEventDataProblem(event: Pick<RunEvent, 'type' | 'data'>): string | null {
  const schema = (RUN_EVENT_DATA as Partial<Record<string, z.ZodType>>)[event.type];
  if (!schema) return null;
  const checked = schema.safeParse(event.data ?? {});
  return checked.success ? null : checked.error.issues.map((i) => `${i.path.join('.') || '(data)'}: ${i.message}`).join('; ');
}
