/**
 * Between the actors of one system: a session and the supervisor of its children, and the events of the machines (their unions are these types).
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { ErrorInfo, ParsedAgentType } from './common.js';
import { NotificationKind, QueueMessage, SubTaskResult, TaskUpdate } from './subtasks.js';
import { ElicitationAsk, HumanAnswer, HumanItem, PermissionAction, PermissionDecision, PermissionRequest } from './permissions.js';
import { ChatMessage, ModelReply, ToolCall } from './model.js';
import { SessionSpec } from './limits.js';

// ---------------------------------------------------------------------------------------------
// Messages between a session and the supervisor of its children (its `subtasks` actor)

/** A queued update with its mailbox sequence number; acknowledged by sequence. */
export const UpdateBatch = z.object({
  upTo: z.number().int(),
  updates: z.array(TaskUpdate),
  /** Children not yet settled, so the owner knows whether more is coming. */
  live: z.number().int().min(0),
  /** Status and progress updates dropped since the last batch the owner acknowledged (the mailbox holds at most 100). */
  dropped: z.number().int().min(1).optional(),
});
export type UpdateBatch = z.infer<typeof UpdateBatch>;

export const SpawnOutcome = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    requestId: z.string(),
    /** Started at once. */
    started: z.array(z.string()),
    /** Waiting for a free slot (`maxParallelSubtasks`). */
    queued: z.array(z.string()),
    live: z.number().int().min(0),
  }),
  z.object({ ok: z.literal(false), requestId: z.string(), error: ErrorInfo, live: z.number().int().min(0) }),
]);
export type SpawnOutcome = z.infer<typeof SpawnOutcome>;

export const WatchOutcome = z.object({
  results: z.array(SubTaskResult),
  /** Ids still running when the wait ended (timeout). */
  pending: z.array(z.string()),
  /** Ids that this session never spawned. */
  unknown: z.array(z.string()),
  live: z.number().int().min(0),
});
export type WatchOutcome = z.infer<typeof WatchOutcome>;

// ---------------------------------------------------------------------------------------------
// Messages between the actors of one system. The machines' event unions are these types
// (z.infer); what crosses a process boundary is parsed with the same schemas first.

const Who = z.string().min(1).max(200);

/** Text waiting to be injected into a session before its next model call. */
export const InboxItem = z.object({
  kind: z.enum(['message', 'inquiry', 'resume']),
  from: z.string(),
  text: z.string(),
  /** For inquiries: which one of how many. */
  attempt: z.number().int().min(0).optional(),
  maxInquiries: z.number().int().min(1).optional(),
});
export type InboxItem = z.infer<typeof InboxItem>;

/**
 * What an owner (the orchestrator, a parent, a person through the CLI) may tell a running session.
 * One definition: the orchestrator's worker commands, the control files and the NATS down
 * messages are built from these.
 */
export const MessageCommand = z.strictObject({ type: z.literal('MESSAGE'), from: Who, text: z.string() });
/** Run on another model profile from the next call; the conversation is kept (summarized if it does not fit). */
export const SwitchModelCommand = z.strictObject({ type: z.literal('SWITCH_MODEL'), profile: z.string().min(1).max(200), by: Who });
export const ReassignCommand = z.strictObject({ type: z.literal('REASSIGN'), agent: ParsedAgentType, by: Who });
export const ReinitializeCommand = z.strictObject({ type: z.literal('REINITIALIZE'), instructions: z.string().min(1), by: Who });
export const ResumeCommand = z.strictObject({ type: z.literal('RESUME'), by: Who });

export const ManagementEvent = z.discriminatedUnion('type', [MessageCommand, SwitchModelCommand, ReassignCommand, ReinitializeCommand, ResumeCommand]);
export type ManagementEvent = z.infer<typeof ManagementEvent>;

/** Everything an owner sends a session: management, cancel, its deadline, a permission decision. */
export const SessionCommand = z.discriminatedUnion('type', [
  ...ManagementEvent.options,
  z.strictObject({ type: z.literal('CANCEL'), reason: z.string().max(10_000) }),
  /** Sent by the owner's supervisor when the session's deadline (`spec.timeoutMs`) passes. */
  z.strictObject({ type: z.literal('TIMEOUT') }),
  /** The decision on a request this session or a descendant made. */
  z.strictObject({ type: z.literal('PERMISSION_DECIDED'), decision: PermissionDecision }),
]);
export type SessionCommand = z.infer<typeof SessionCommand>;

/** The idle watchdog asks its session why it is idle. */
export const IdleInquiryRequest = z.object({ type: z.literal('IDLE_INQUIRY'), attempt: z.number().int().min(0), maxInquiries: z.number().int().min(1) });
export type IdleInquiryRequest = z.infer<typeof IdleInquiryRequest>;

// -- the agent loop (one per running session) -----------------------------------------------------

export const CallModelInput = z.object({
  spec: SessionSpec,
  messages: z.array(ChatMessage),
  inbox: z.array(InboxItem),
  updates: z.array(TaskUpdate),
  /** Sequence number of the update batch given, acknowledged once the reply is recorded. */
  upTo: z.number().int().nullable(),
  turn: z.number().int().min(0),
  /** Children not yet settled, so the model knows whether more results are coming. */
  live: z.number().int().min(0),
  /** Status updates dropped from the mailbox before these (see UpdateBatch.dropped). */
  dropped: z.number().int().min(1).optional(),
  /** The session's reinitialization count (part of permission request ids). */
  epoch: z.number().int().min(0).optional(),
  /**
   * Consecutive failed tool calls so far: the tool calls run in the model's step (see
   * `MODEL_REPLIED.ran`) stop where the circuit breaker would open.
   */
  failures: z.number().int().min(0).optional(),
});
export type CallModelInput = z.infer<typeof CallModelInput>;

export const CallModelOutput = z.object({
  /**
   * The conversation as it was sent, when it had to be summarized to fit the model's context
   * window: it replaces the session's history (the injected messages and the reply follow it).
   */
  compacted: z.array(ChatMessage).optional(),
  /** USD of this call (and of the summary calls before it), from the price table. */
  costUsd: z.number().min(0).optional(),
  /** Synthetic messages built from the inbox and updates, already seen by the model. */
  injected: z.array(ChatMessage),
  reply: ModelReply,
  /** Inbox items and update batch the model saw (echo of the input). */
  consumedInbox: z.number().int().min(0),
  consumedUpTo: z.number().int().nullable(),
  /** The call's id (see the assistant message's replyId). */
  replyId: z.string().optional(),
  /** The model that answered (its provider's name) and the profile it came from. */
  model: z.string().optional(),
  profile: z.string().optional(),
});
export type CallModelOutput = z.infer<typeof CallModelOutput>;

export const RunToolInput = z.object({
  spec: SessionSpec,
  call: ToolCall,
  /** The update batch the session holds (for `a2a_check_updates`). */
  updates: z.array(TaskUpdate),
  /** Status updates dropped before that batch (UpdateBatch.dropped). */
  dropped: z.number().int().min(1).optional(),
  /** The session's reinitialization count (part of permission request ids). */
  epoch: z.number().int().min(0).optional(),
});
export type RunToolInput = z.infer<typeof RunToolInput>;

/** What the session machine must do besides recording a tool's result. */
export const ToolEffect = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('spawn'), requestId: z.string(), specs: z.array(SessionSpec), blocking: z.boolean(), timeoutMs: z.number().int().positive() }),
  z.object({ kind: z.literal('await'), ids: z.array(z.string()), timeoutMs: z.number().int().positive() }),
  z.object({
    kind: z.literal('complete'),
    status: z.enum(['success', 'partial', 'failed']),
    output: z.string(),
    outputFile: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    error: z.string().optional(),
  }),
  z.object({ kind: z.literal('notify'), notification: NotificationKind, message: z.string() }),
  /** The updates shown are acknowledged: all of the batch, or only those of `subTaskIds` (the others stay). */
  z.object({ kind: z.literal('ackUpdates'), subTaskIds: z.array(z.string()).optional() }),
  z.object({ kind: z.literal('message'), to: z.string(), text: z.string() }),
  z.object({ kind: z.literal('cancel'), ids: z.array(z.string()), reason: z.string() }),
]);
export type ToolEffect = z.infer<typeof ToolEffect>;

export const ToolOutcome = z.object({
  /** What the model sees as the tool result. */
  content: z.string(),
  isError: z.boolean(),
  /** Files the tool changed, with lines added and removed (the session's diff stats). */
  changes: z.array(z.object({ file: z.string(), insertions: z.number().int().min(0), deletions: z.number().int().min(0) })).optional(),
  effect: ToolEffect.optional(),
});
export type ToolOutcome = z.infer<typeof ToolOutcome>;

/** What a tool asks before it acts (a file edit, a command, a push). */
export const PermissionAsk = z.object({
  action: PermissionAction,
  /** What exactly, for whoever decides: the path, the command line. */
  detail: z.string(),
  /** Only a person may approve it, whatever the levels and the matrix say (see PermissionRequest). */
  needsPerson: z.boolean().optional(),
  /** An MCP server's question (action `mcp_elicitation`), shown to whoever answers. */
  elicitation: ElicitationAsk.optional(),
});
export type PermissionAsk = z.infer<typeof PermissionAsk>;

export const PermissionAnswer = z.object({
  approved: z.boolean(),
  decidedBy: PermissionDecision.shape.decidedBy,
  reason: z.string().optional(),
  /** What a person wrote with the decision (the content of an `mcp_elicitation` answer). */
  text: z.string().optional(),
});
export type PermissionAnswer = z.infer<typeof PermissionAnswer>;

/**
 * What the session chart asks of its agent loop: one step at a time, numbered. The steps run in
 * the session's own actor (actors/session/agentLoop.ts), not in a child actor: each is a promise whose
 * result comes back to the session as an `AgentLoopReply`, and leaving `running` (an end, a
 * cancel, a reinitialization) or stopping the actor aborts the one in flight.
 */
export const AgentLoopRequest = z.discriminatedUnion('type', [
  z.object({ type: z.literal('CALL_MODEL'), step: z.number().int(), input: CallModelInput }),
  z.object({ type: z.literal('RUN_TOOL'), step: z.number().int(), input: RunToolInput }),
  /** The decision on a permission the running tool asked for (outside the session's level). */
  z.object({ type: z.literal('PERMISSION_ANSWER'), requestId: z.string(), answer: PermissionAnswer }),
]);
export type AgentLoopRequest = z.infer<typeof AgentLoopRequest>;

export const AgentLoopReply = z.discriminatedUnion('type', [
  /**
   * The model replied. `ran`: the outcomes of the reply's leading tool calls that were run in the
   * same step (coordination tools that never ask a permission: `a2a_*`), in order; it stops after
   * the first one whose effect the chart must act on (spawn, await, complete), before the first
   * other tool, and where the circuit breaker would open. The rest are run one `RUN_TOOL` at a time.
   */
  z.object({ type: z.literal('MODEL_REPLIED'), step: z.number().int(), output: CallModelOutput, ran: z.array(ToolOutcome).optional() }),
  z.object({ type: z.literal('MODEL_FAILED'), step: z.number().int(), error: z.string() }),
  z.object({ type: z.literal('TOOL_FINISHED'), step: z.number().int(), outcome: ToolOutcome }),
  z.object({ type: z.literal('TOOL_CRASHED'), step: z.number().int(), error: z.string() }),
  /** The running tool needs a permission the session's level does not include. */
  z.object({ type: z.literal('PERMISSION_REQUIRED'), requestId: z.string(), ask: PermissionAsk }),
  /** The tool call's intent is recorded in the effect journal (when it has effects): it runs now. */
  z.object({ type: z.literal('EFFECT_STARTED'), step: z.number().int() }),
  /**
   * A restored session's tool call had started before the process stopped and has no recorded
   * result: it is not run again (unless a person says so); the model is told its outcome is unknown.
   */
  z.object({ type: z.literal('EFFECT_IN_DOUBT'), step: z.number().int(), tool: z.string() }),
  /** The run's or the worker's cost budget is spent: no model call was made. */
  z.object({ type: z.literal('BUDGET_REACHED'), step: z.number().int(), scope: z.enum(['run', 'worker']), limitUsd: z.number(), spentUsd: z.number() }),
  /**
   * Sent to a session restored from a persisted snapshot by whatever restored it (its supervisor,
   * a host's parent link): the step in flight when the snapshot was taken is lost; the chart asks
   * for its current step again.
   */
  z.object({ type: z.literal('RESTORED') }),
]);
export type AgentLoopReply = z.infer<typeof AgentLoopReply>;

/**
 * The index of a run's rotated event log (`.a2a/runs/<run>/events.index.json`): `events.jsonl`
 * is closed into `events.<n>.jsonl` (then `.jsonl.gz`) once it passes a size, and this file holds
 * where a resumed bus starts after segments 1..`segments` (their last sequence number, the facts
 * they state, the newest ids of their other events, and each session's model spending), so that
 * `a2a run --resume` reads this and the segments after it, never the whole log.
 */
export const LogSpend = z.object({
  sessionId: z.string(),
  workerId: z.string(),
  usd: z.number(),
  inputTokens: z.number(),
  outputTokens: z.number(),
});
export type LogSpend = z.infer<typeof LogSpend>;
export const LogIndex = z.object({
  segments: z.number().int().nonnegative(),
  mark: z.object({
    seq: z.number().int().nonnegative(),
    facts: z.array(z.string()),
    recent: z.array(z.string()),
    spend: z.array(LogSpend),
  }),
});
export type LogIndex = z.infer<typeof LogIndex>;

/**
 * The effect journal (one JSON object per line, `.a2a/runs/<run>/effects.jsonl`): what a
 * session's steps did outside the actor tree, recorded before the session takes its next step, so
 * that a restored session is given what happened instead of doing it again. `s` is the session,
 * `k` the step (`m<epoch>.<step>` a model call, `t<epoch>.<step>` a tool call).
 */
export const EffectRecord = z.discriminatedUnion('t', [
  /** A model's reply (with what was injected before it): a restored session is given it, not asked again. */
  z.object({ t: z.literal('reply'), s: z.string(), k: z.string(), agent: z.string(), out: CallModelOutput, /** the digest of its input (inputDigest) */ in: z.string().optional() }),
  /** A tool call is about to start (its arguments' digest and idempotency key). */
  z.object({
    t: z.literal('intent'),
    s: z.string(),
    k: z.string(),
    call: z.object({ id: z.string(), name: z.string() }),
    digest: z.string(),
    key: z.string(),
  }),
  /** The call waits for a permission from the tree: it has not acted yet (run again after a restore, it asks again). */
  z.object({ t: z.literal('asking'), s: z.string(), k: z.string() }),
  /** The permission was granted: the call acts from here. */
  z.object({ t: z.literal('go'), s: z.string(), k: z.string() }),
  /** The call's result (`crashed`: the tool failed inside the runtime; `inDoubt`: reported as unknown after a restore). */
  z.object({ t: z.literal('outcome'), s: z.string(), k: z.string(), outcome: ToolOutcome, crashed: z.string().optional(), inDoubt: z.literal(true).optional() }),
]);
export type EffectRecord = z.infer<typeof EffectRecord>;

// -- the supervisor of a family (a session's children, the orchestrator's workers) ----------------

export const SupervisorEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('SPAWN'), requestId: z.string(), specs: z.array(SessionSpec) }),
  z.object({ type: z.literal('WATCH'), ids: z.array(z.string()) }),
  z.object({ type: z.literal('UNWATCH') }),
  /** The owner has the updates up to `upTo`: all of them, or only those of `subTaskIds` (the others are offered again). */
  z.object({ type: z.literal('ACK_UPDATES'), upTo: z.number().int(), subTaskIds: z.array(z.string()).optional() }),
  z.object({ type: z.literal('CANCEL_CHILDREN'), ids: z.array(z.string()), reason: z.string() }),
  /** Cancels every child still running or waiting; later spawns are accepted again. */
  z.object({ type: z.literal('CANCEL_LIVE'), reason: z.string() }),
  /** Cancels every child and refuses new spawns (the owner is stopping). */
  z.object({ type: z.literal('CANCEL_ALL'), reason: z.string() }),
  z.object({ type: z.literal('SEND_TO_CHILD'), to: z.string(), from: z.string(), text: z.string() }),
  z.object({ type: z.literal('FORWARD'), to: z.string(), event: ManagementEvent }),
  z.object({ type: z.literal('SUBTASK_UPDATE'), update: TaskUpdate }),
  /** From a child: a permission it (or one of its descendants) needs. */
  z.object({ type: z.literal('PERMISSION_REQUEST'), request: PermissionRequest }),
  /** From the owner: the decision for a request that came up through child `to`. */
  z.object({ type: z.literal('PERMISSION_DECISION'), to: z.string(), decision: PermissionDecision }),
]);
export type SupervisorEvent = z.infer<typeof SupervisorEvent>;

/** What a supervisor sends its owner. */
export const SupervisorReply = z.discriminatedUnion('type', [
  z.object({ type: z.literal('SPAWN_RESULT'), ok: z.literal(true), requestId: z.string(), started: z.array(z.string()), queued: z.array(z.string()), live: z.number().int().min(0) }),
  z.object({ type: z.literal('SPAWN_RESULT'), ok: z.literal(false), requestId: z.string(), error: ErrorInfo, live: z.number().int().min(0) }),
  UpdateBatch.extend({ type: z.literal('UPDATES_AVAILABLE') }),
  WatchOutcome.extend({ type: z.literal('WATCH_SATISFIED') }),
  z.object({ type: z.literal('CHILDREN_SETTLED') }),
  z.object({ type: z.literal('CHILD_PERMISSION_REQUEST'), request: PermissionRequest }),
]);
export type SupervisorReply = z.infer<typeof SupervisorReply>;

// -- the orchestrator's inbox and human gate -------------------------------------------------------

export const InboxEvent = z.discriminatedUnion('type', [
  /** `replay`: arrivals read back from the journal on resume (already journaled). */
  z.object({ type: z.literal('ENQUEUE'), messages: z.array(QueueMessage), replay: z.boolean().optional() }),
  z.object({ type: z.literal('HANDLED'), id: z.string() }),
  z.object({ type: z.literal('xstate.stop') }),
]);
export type InboxEvent = z.infer<typeof InboxEvent>;

/**
 * What the inbox sends its owner: the next message, and, whenever nothing is queued or in flight,
 * how many `ENQUEUE` events it has received (so the owner knows whether what it sent is all in).
 */
export const InboxReply = z.discriminatedUnion('type', [
  z.object({ type: z.literal('INBOX_MESSAGE'), message: QueueMessage }),
  z.object({ type: z.literal('INBOX_DRAINED'), received: z.number().int().min(0) }),
]);
export type InboxReply = z.infer<typeof InboxReply>;

export const HumanGateEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('ASK'), item: HumanItem }),
  z.object({ type: z.literal('ANSWER'), id: z.string(), answer: HumanAnswer }),
  z.object({ type: z.literal('EXPIRE'), id: z.string() }),
  /** The worker ended: its open items are moot. */
  z.object({ type: z.literal('WITHDRAW'), workerId: z.string() }),
  z.object({ type: z.literal('xstate.stop') }),
]);
export type HumanGateEvent = z.infer<typeof HumanGateEvent>;

export const HumanDecision = z.object({
  approved: z.boolean(),
  text: z.string(),
  decidedBy: z.enum(['human', 'timeout']),
  by: z.string(),
  reason: z.string().optional(),
});
export type HumanDecision = z.infer<typeof HumanDecision>;

/** What the gate sends its owner. */
export const HumanGateReply = z.object({ type: z.literal('HUMAN_DECIDED'), item: HumanItem, decision: HumanDecision });
export type HumanGateReply = z.infer<typeof HumanGateReply>;

// -- the orchestrator ------------------------------------------------------------------------------

const TaskRef = z.string().min(1).max(64);

/** Management of a running worker, addressed by its task: the session commands with a task id. */
export const WorkerManagementEvent = z.discriminatedUnion('type', [
  ReassignCommand.extend({ type: z.literal('REASSIGN_WORKER'), taskId: TaskRef }),
  ReinitializeCommand.extend({ type: z.literal('REDIRECT_WORKER'), taskId: TaskRef }),
  ReinitializeCommand.extend({ type: z.literal('REINITIALIZE_WORKER'), taskId: TaskRef }),
  ResumeCommand.extend({ type: z.literal('RESUME_WORKER'), taskId: TaskRef }),
  /** `expensive`: a higher cost tier (model_switch_expensive). */
  SwitchModelCommand.extend({ type: z.literal('SWITCH_MODEL_WORKER'), taskId: TaskRef, expensive: z.boolean() }),
]);
export type WorkerManagementEvent = z.infer<typeof WorkerManagementEvent>;

/** What reaches the orchestrator from outside its tree: people, the CLI, a resumed journal. */
export const OrchestratorCommand = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('STOP'), reason: z.string() }),
  ...WorkerManagementEvent.options,
  /** A person's answer to a pending item (terminal prompt, `a2a inbox`). */
  z.strictObject({ type: z.literal('HUMAN_ANSWER'), id: z.string().min(1), answer: HumanAnswer }),
  /** Journaled arrivals a resumed run had not checkpointed: into the inbox again. */
  z.strictObject({ type: z.literal('REPLAY'), messages: z.array(QueueMessage) }),
]);
export type OrchestratorCommand = z.infer<typeof OrchestratorCommand>;

const ControlText = z.string().trim().min(1);

/**
 * A request another process leaves in a run's `control/` directory (`a2a inbox`, `a2a redirect`
 * …): the worker commands by name, with the agent type not yet resolved.
 */
export const ControlRequest = z.discriminatedUnion('command', [
  z.strictObject({
    command: z.literal('answer'),
    /** An item id, or its 1-based position in `a2a inbox list`. */
    id: ControlText,
    approved: z.boolean().optional(),
    text: z.string().optional(),
    reason: z.string().optional(),
    by: ControlText,
  }),
  z.strictObject({ command: z.literal('approve_all'), by: ControlText, reason: z.string().optional() }),
  z.strictObject({ command: z.literal('reassign'), taskId: ControlText, agent: ControlText, by: ControlText }),
  z.strictObject({ command: z.literal('redirect'), taskId: ControlText, instructions: ControlText, by: ControlText }),
  z.strictObject({ command: z.literal('reinitialize'), taskId: ControlText, instructions: ControlText, by: ControlText }),
  z.strictObject({ command: z.literal('resume'), taskId: ControlText, by: ControlText }),
  z.strictObject({ command: z.literal('switch_model'), taskId: ControlText, profile: ControlText, by: ControlText }),
  /** The whole run: its agents wait before their next model call; a workflow stops at its next step boundary. */
  z.strictObject({ command: z.literal('pause'), by: ControlText, reason: z.string().optional() }),
  /** A paused run (or a workflow in ERROR) goes on where it was. */
  z.strictObject({ command: z.literal('unpause'), by: ControlText }),
  /** A workflow in ERROR runs its failed step again. */
  z.strictObject({ command: z.literal('retry'), by: ControlText }),
]);
export type ControlRequest = z.infer<typeof ControlRequest>;
