/**
 * Port and actor-contract *types* (no code). Machines use these to type what they invoke;
 * `actors/` implements the actors, `adapters/` implements the ports, `bin/` wires them.
 */
import type {
  ChatMessage,
  HumanAnswer,
  HumanItem,
  QueueMessage,
  ModelReply,
  ParsedAgentType,
  PermissionAction,
  PermissionDecision,
  PermissionRequest,
  ResultStatus,
  RunEvent,
  SessionSpec,
  SpawnOutcome,
  SubTaskResult,
  TaskUpdate,
  ToolCall,
  ToolSpec,
  UpdateBatch,
  WatchOutcome,
  NotificationKind,
} from './protocol.js';

// ---------------------------------------------------------------------------------------------
// Ports

/** Time for every timer and timestamp; `SimulatedClock` from xstate satisfies it in tests. */
export interface Clock {
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, timeout: number): unknown;
  clearTimeout(id: unknown): void;
}

export interface ModelRequest {
  system: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  agentType: ParsedAgentType;
  sessionId: string;
  depth: number;
  /** Explicit model override (`--model`, the spawn tool's `model`). */
  model?: string;
}

/** One model call with tools. Implementations: scripted (default), openai, anthropic. */
export interface Model {
  readonly id: string;
  /**
   * True when the adapter already validated the reply where it entered the process (it parsed the
   * provider's wire format, or built the reply itself); otherwise the agent loop validates it.
   */
  readonly validatesReplies?: boolean;
  call(request: ModelRequest, options: { signal: AbortSignal }): Promise<ModelReply>;
}

/** Where run events go: the CLI's live tree and `--json`, the event log, monitors. */
export interface EventSink {
  emit(event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): void;
  /** False when nobody listens, so that producers can skip building events. */
  readonly listening?: boolean;
}

/** What a branch changed: files, and lines added and removed. */
export interface DiffSummary {
  changedFiles: number;
  insertions: number;
  deletions: number;
  files: string[];
}

export type MergeOutcome = { merged: true; commit: string } | { merged: false; conflicts: string[] };

/** Git for worktrees and the completion workflow (adapters/git.ts implements it with simple-git). */
export interface Git {
  /** The top directory of the repository `dir` is in, or null when it is in none. */
  repositoryRoot(dir: string): Promise<string | null>;
  /** Throws a clear error (commit, stash or discard) when the repository has uncommitted changes. */
  assertClean(repo: string): Promise<void>;
  currentBranch(repo: string): Promise<string>;
  /** A new worktree at `path` on a new `branch` from `base`. */
  createWorktree(repo: string, options: { path: string; branch: string; base: string }): Promise<void>;
  removeWorktree(repo: string, path: string, options?: { deleteBranch?: string }): Promise<void>;
  /** Changes of the worktree (committed and not) against `base`. */
  diffSummary(worktree: string, base: string): Promise<DiffSummary>;
  /** Commits everything in the worktree; null when there was nothing to commit. */
  commitAll(worktree: string, message: string): Promise<string | null>;
  /** Merges `branch` into `into` in `repo`; on conflict the base is left exactly as it was. */
  merge(repo: string, options: { branch: string; into: string; message: string }): Promise<MergeOutcome>;
  push(repo: string, options: { remote: string; branch: string }): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Transport between actor systems (adapters/transport/memory.ts, adapters/transport/nats.ts)

/** A message on a subject. `data` is JSON-serializable; `headers` are string pairs. */
export interface TransportMessage {
  subject: string;
  data: unknown;
  headers: Record<string, string>;
}

/** A message taken from a durable queue: it is redelivered until acknowledged. */
export interface DurableMessage extends TransportMessage {
  /** The id it was enqueued with (duplicates of it within the dedup window were dropped). */
  msgId: string;
  /** How many times it has been delivered (1 the first time). */
  deliveries: number;
  /** Done with it: it is never delivered again. */
  ack(): Promise<void>;
  /** Not now: deliver it again (after `delayMs`), to this or another consumer. */
  nak(delayMs?: number): Promise<void>;
  /** Still working on it: restarts its ack timer. */
  working(): Promise<void>;
}

export interface TransportSubscription {
  unsubscribe(): Promise<void>;
}

export interface DurableConsumer {
  /** Stops taking messages; those in flight are left unacknowledged (redelivered elsewhere). */
  stop(): Promise<void>;
}

/** A key-value bucket (actor snapshots, registrations). */
export interface KeyValue {
  get(key: string): Promise<{ value: unknown; revision: number } | null>;
  /** Returns the new revision. */
  put(key: string, value: unknown): Promise<number>;
  /** Compare-and-set: writes only if the key is at `revision` (0: absent); returns the new revision, or null when it is not. */
  update(key: string, value: unknown, revision: number): Promise<number | null>;
  delete(key: string): Promise<void>;
  keys(prefix?: string): Promise<string[]>;
}

/**
 * Messages between actor systems. Core messaging (publish, subscribe with optional queue groups,
 * request/reply) is at most once; durable queues are at least once with explicit acks and
 * de-duplication by message id, and survive restarts of the server (NATS: JetStream streams and
 * consumers; memory: in-process).
 */
export interface Transport {
  readonly kind: 'memory' | 'nats';
  publish(subject: string, data: unknown, headers?: Record<string, string>): Promise<void>;
  /** `subject` may end in `>` or contain `*`. With `queue`, each message goes to one member of the group. */
  subscribe(subject: string, handler: (message: TransportMessage) => void, options?: { queue?: string }): Promise<TransportSubscription>;
  request(subject: string, data: unknown, options: { timeoutMs: number; headers?: Record<string, string> }): Promise<TransportMessage>;
  /** Answers a request received through `subscribe`. */
  respond(request: TransportMessage, data: unknown): Promise<void>;
  /**
   * Creates (or checks) a durable queue holding `subjects` (with wildcards). `workQueue`: a
   * message is removed once acknowledged by any consumer; otherwise it is kept for `maxAgeMs`.
   */
  ensureQueue(name: string, options: { subjects: string[]; workQueue: boolean; maxAgeMs?: number; duplicateWindowMs?: number }): Promise<void>;
  /** Appends to the durable queue that holds `subject`; a `msgId` seen within the window is dropped. Resolves once stored. */
  enqueue(subject: string, data: unknown, options: { msgId: string; headers?: Record<string, string> }): Promise<{ duplicate: boolean }>;
  /**
   * Consumes a durable queue with a named consumer (consumers with the same name share the
   * messages: each goes to one of them). `filter` narrows it to subjects; a message not acked
   * within `ackWaitMs` is delivered again; at most `maxInFlight` are unacknowledged at once.
   */
  consume(
    queue: string,
    options: {
      consumer: string;
      filter?: string;
      ackWaitMs: number;
      maxInFlight: number;
      /** Removes the consumer (not its messages) after this long without anyone consuming (per-session consumers). */
      inactiveMs?: number;
    },
    handler: (message: DurableMessage) => void | Promise<void>,
  ): Promise<DurableConsumer>;
  keyValue(bucket: string): Promise<KeyValue>;
  close(): Promise<void>;
}

/** Opens pull requests (adapters/github.ts, with the token bound). */
export interface PullRequests {
  open(options: { owner: string; repo: string; head: string; base: string; title: string; body: string; signal?: AbortSignal }): Promise<{ number: number; url: string }>;
}

// ---------------------------------------------------------------------------------------------
// Contracts of the actors a session invokes

/** Text waiting to be injected into a session before its next model call. */
export interface InboxItem {
  kind: 'message' | 'inquiry' | 'resume';
  from: string;
  text: string;
  /** For inquiries: which one of how many. */
  attempt?: number;
  maxInquiries?: number;
}

export interface CallModelInput {
  spec: SessionSpec;
  messages: ChatMessage[];
  inbox: InboxItem[];
  updates: TaskUpdate[];
  /** Sequence number of the update batch given, acknowledged once the reply is recorded. */
  upTo: number | null;
  turn: number;
  /** Children not yet settled, so the model knows whether more results are coming. */
  live: number;
}

export interface CallModelOutput {
  /**
   * The conversation as it was sent, when it had to be summarized to fit the model's context
   * window: it replaces the session's history (the injected messages and the reply follow it).
   */
  compacted?: ChatMessage[];
  /** USD of this call (and of the summary calls before it), from the price table. */
  costUsd?: number;
  /** Synthetic messages built from the inbox and updates, already seen by the model. */
  injected: ChatMessage[];
  reply: ModelReply;
  /** Inbox items and update batch the model saw (echo of the input). */
  consumedInbox: number;
  consumedUpTo: number | null;
}

export interface RunToolInput {
  spec: SessionSpec;
  call: ToolCall;
  /** The update batch the session holds (for `a2a_check_updates`). */
  updates: TaskUpdate[];
  /** The session's reinitialization count (part of permission request ids). */
  epoch?: number;
}

export type ToolEffect =
  | { kind: 'spawn'; requestId: string; specs: SessionSpec[]; blocking: boolean; timeoutMs: number }
  | { kind: 'await'; ids: string[]; timeoutMs: number }
  | {
      kind: 'complete';
      status: Extract<ResultStatus, 'success' | 'partial' | 'failed'>;
      output: string;
      outputFile?: string;
      metadata?: Record<string, unknown>;
      error?: string;
    }
  | { kind: 'notify'; notification: NotificationKind; message: string }
  | { kind: 'ackUpdates' }
  | { kind: 'message'; to: string; text: string }
  | { kind: 'cancel'; ids: string[]; reason: string };

export interface ToolOutcome {
  /** What the model sees as the tool result. */
  content: string;
  isError: boolean;
  /** Files the tool changed, with lines added and removed (the session's diff stats). */
  changes?: Array<{ file: string; insertions: number; deletions: number }>;
  /** What the session machine must do besides recording the result. */
  effect?: ToolEffect;
}

/**
 * The agent loop actor (`agentLoop`, one per running session) executes the steps the session
 * chart asks for. Steps are numbered; a repeated step number is ignored, so that the chart can
 * re-send its current request when a restored loop reports `LOOP_READY`.
 */
/** What a tool asks before it acts (a file edit, a command, a push). */
export interface PermissionAsk {
  action: PermissionAction;
  /** What exactly, for whoever decides: the path, the command line. */
  detail: string;
}

export interface PermissionAnswer {
  approved: boolean;
  decidedBy: PermissionDecision['decidedBy'];
  reason?: string;
}

export type AgentLoopRequest =
  | { type: 'CALL_MODEL'; step: number; input: CallModelInput }
  | { type: 'RUN_TOOL'; step: number; input: RunToolInput }
  /** The decision on a permission the running tool asked for (outside the session's level). */
  | { type: 'PERMISSION_ANSWER'; requestId: string; answer: PermissionAnswer };

export type AgentLoopReply =
  | { type: 'MODEL_REPLIED'; step: number; output: CallModelOutput }
  | { type: 'MODEL_FAILED'; step: number; error: string }
  | { type: 'TOOL_FINISHED'; step: number; outcome: ToolOutcome }
  | { type: 'TOOL_CRASHED'; step: number; error: string }
  /** The running tool needs a permission the session's level does not include. */
  | { type: 'PERMISSION_REQUIRED'; requestId: string; ask: PermissionAsk }
  /** The run's or the worker's cost budget is spent: no model call was made. */
  | { type: 'BUDGET_REACHED'; step: number; scope: 'run' | 'worker'; limitUsd: number; spentUsd: number }
  /** Sent by a loop restored from a persisted snapshot: its in-flight step was lost. */
  | { type: 'LOOP_READY' };

export interface AgentLoopInput {
  spec: SessionSpec;
}

// ---------------------------------------------------------------------------------------------
// The supervisor of a session's children (`subtasks`) and of the orchestrator's workers

/** Events an owner (the orchestrator, a parent) may forward to a child session. */
export type ManagementEvent =
  | { type: 'MESSAGE'; from: string; text: string }
  /** Run on another model profile from the next call; the conversation is kept (summarized if it does not fit). */
  | { type: 'SWITCH_MODEL'; profile: string; by: string }
  | { type: 'REASSIGN'; agent: ParsedAgentType; by: string }
  | { type: 'REINITIALIZE'; instructions: string; by: string }
  | { type: 'RESUME'; by: string };

export type SupervisorEvent =
  | { type: 'SPAWN'; requestId: string; specs: SessionSpec[] }
  | { type: 'WATCH'; ids: string[] }
  | { type: 'UNWATCH' }
  | { type: 'ACK_UPDATES'; upTo: number }
  | { type: 'CANCEL_CHILDREN'; ids: string[]; reason: string }
  /** Cancels every child still running or waiting; later spawns are accepted again. */
  | { type: 'CANCEL_LIVE'; reason: string }
  /** Cancels every child and refuses new spawns (the owner is stopping). */
  | { type: 'CANCEL_ALL'; reason: string }
  | { type: 'SEND_TO_CHILD'; to: string; from: string; text: string }
  | { type: 'FORWARD'; to: string; event: ManagementEvent }
  | { type: 'SUBTASK_UPDATE'; update: TaskUpdate }
  /** From a child: a permission it (or one of its descendants) needs. */
  | { type: 'PERMISSION_REQUEST'; request: PermissionRequest }
  /** From the owner: the decision for a request that came up through child `to`. */
  | { type: 'PERMISSION_DECISION'; to: string; decision: PermissionDecision };

/** What a supervisor sends to its owner. */
export type SupervisorReply =
  | ({ type: 'SPAWN_RESULT' } & SpawnOutcome)
  | ({ type: 'UPDATES_AVAILABLE' } & UpdateBatch)
  | ({ type: 'WATCH_SATISFIED' } & WatchOutcome)
  | { type: 'CHILDREN_SETTLED' }
  | { type: 'CHILD_PERMISSION_REQUEST'; request: PermissionRequest };

export interface SupervisorInput {
  /** The owning session, or null for the orchestrator's worker family / a standalone root. */
  owner: SessionSpec | null;
  ownerId: string;
  /** Children that may run at once. */
  maxParallel: number;
}

/** Read-only view of a supervisor's children, for tools that validate ids. */
export interface FamilyView {
  has(id: string): boolean;
  status(id: string): 'pending' | 'running' | 'settled' | undefined;
  result(id: string): SubTaskResult | undefined;
  ids(): string[];
  live(): number;
}

// ---------------------------------------------------------------------------------------------
// The orchestrator's inbox and human gate

export type InboxEvent =
  /** `replay`: arrivals read back from the journal on resume (already journaled). */
  | { type: 'ENQUEUE'; messages: QueueMessage[]; replay?: boolean }
  | { type: 'HANDLED'; id: string }
  | { type: 'xstate.stop' };

/**
 * What the inbox sends its owner: the next message, and, whenever nothing is queued or in flight,
 * how many `ENQUEUE` events it has received (so the owner knows whether what it sent is all in).
 */
export type InboxReply = { type: 'INBOX_MESSAGE'; message: QueueMessage } | { type: 'INBOX_DRAINED'; received: number };

export type HumanGateEvent =
  | { type: 'ASK'; item: HumanItem }
  | { type: 'ANSWER'; id: string; answer: HumanAnswer }
  | { type: 'EXPIRE'; id: string }
  /** The worker ended: its open items are moot. */
  | { type: 'WITHDRAW'; workerId: string }
  | { type: 'xstate.stop' };

export interface HumanDecision {
  approved: boolean;
  text: string;
  decidedBy: 'human' | 'timeout';
  by: string;
  reason?: string;
}

/** What the gate sends its owner. */
export type HumanGateReply = { type: 'HUMAN_DECIDED'; item: HumanItem; decision: HumanDecision };
