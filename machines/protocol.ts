/**
 * The protocol: every message and event that crosses an actor boundary, as zod schemas.
 * TypeScript types come from `z.infer`; nothing here is hand-duplicated elsewhere.
 * Messages entering a process (files, CLI, later NATS/HTTP) are parsed with these schemas first.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// Errors

/** Closed set of error codes (seed 003 appendix J plus the runtime's own). */
export const ErrorCode = z.enum([
  'AGENT_SPAWN_FAILED',
  'AGENT_TIMEOUT',
  'AGENT_ERROR',
  'VALIDATION_ERROR',
  'RATE_LIMIT_EXCEEDED',
  'INVALID_STATE_TRANSITION',
  'CONFIGURATION_INVALID',
  'WORKFLOW_PAUSED',
  'WORKFLOW_STOPPED',
  'UNKNOWN_AGENT_TYPE',
  'DEPTH_LIMIT_EXCEEDED',
  'SUBTASK_LIMIT_EXCEEDED',
  'CYCLE_DETECTED',
  'TOOL_NOT_ALLOWED',
  'MODEL_MISBEHAVIOUR',
  'NOT_FOUND',
  'BUDGET_EXCEEDED',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorInfo = z.object({
  code: ErrorCode,
  message: z.string(),
});
export type ErrorInfo = z.infer<typeof ErrorInfo>;

// ---------------------------------------------------------------------------------------------
// Agents

/** Backends an agent type may name: `claude:reviewer`, `openai:architect`; `@coder` uses the default. */
export const AgentBackend = z.enum(['default', 'claude', 'openai', 'scripted']);
export type AgentBackend = z.infer<typeof AgentBackend>;

export const ParsedAgentType = z.object({
  /** What the caller wrote, e.g. `claude:reviewer`. */
  raw: z.string(),
  backend: AgentBackend,
  /** Registry key, e.g. `reviewer`. */
  agentName: z.string(),
});
export type ParsedAgentType = z.infer<typeof ParsedAgentType>;

export const PreferredModels = z.object({
  default: z.string(),
  byTaskType: z.record(z.string(), z.string()).optional(),
});

/** Seed 000 `IAgentCapability`: what an agent is good at, so that others know whom to ask. */
export const AgentCapability = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  strengths: z.array(z.string()),
  weaknesses: z.array(z.string()),
  preferredModels: PreferredModels.optional(),
  canSpawnSubTasks: z.boolean(),
  maxSubTaskDepth: z.number().int().min(0).optional(),
  tools: z.array(z.string()),
  source: z.enum(['builtin', 'workspace', 'user']),
});
export type AgentCapability = z.infer<typeof AgentCapability>;

// ---------------------------------------------------------------------------------------------
// Identity and correlation

/** Seed 001 `IOwnerContext`: who receives a session's results and updates. */
export const OwnerContext = z.object({
  ownerType: z.enum(['orchestrator', 'worker', 'agent']),
  ownerId: z.string(),
  sessionUri: z.string().optional(),
});
export type OwnerContext = z.infer<typeof OwnerContext>;

/** Correlation ids carried by every message and event. */
export const Correlation = z.object({
  runId: z.string(),
  planId: z.string(),
  taskId: z.string(),
  workerId: z.string(),
  worktreePath: z.string(),
  subTaskId: z.string().optional(),
  parentId: z.string().optional(),
  depth: z.number().int().min(0),
});
export type Correlation = z.infer<typeof Correlation>;

// ---------------------------------------------------------------------------------------------
// Sub-tasks

export const Usage = z.object({
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  modelCalls: z.number().int().min(0),
  /** USD, from the price table (absent: no priced call). */
  costUsd: z.number().min(0).optional(),
});
export type Usage = z.infer<typeof Usage>;

export const DiffStats = z.object({
  changedFiles: z.number().int().min(0),
  insertions: z.number().int().min(0),
  deletions: z.number().int().min(0),
  /** The changed files (paths relative to the worktree). */
  files: z.array(z.string()).optional(),
});
export type DiffStats = z.infer<typeof DiffStats>;

export const SubTaskStatus = z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']);

export const ResultStatus = z.enum(['success', 'partial', 'failed', 'timeout', 'cancelled']);
export type ResultStatus = z.infer<typeof ResultStatus>;

/** Seed 000/001 `ISubTaskResult`, plus `cancelled` and usage: exactly one per spawned child. */
export const SubTaskResult = z.object({
  taskId: z.string(),
  status: ResultStatus,
  output: z.string(),
  outputFile: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  error: z.string().optional(),
  usage: Usage.optional(),
  diffStats: DiffStats.optional(),
  /** True when the runtime synthesised the result because the child never reported one. */
  fallback: z.boolean().optional(),
});
export type SubTaskResult = z.infer<typeof SubTaskResult>;

/** Seed 000/001 `ISubTask`. */
export const SubTask = z.object({
  id: z.string(),
  parentWorkerId: z.string(),
  parentTaskId: z.string(),
  planId: z.string(),
  worktreePath: z.string(),
  agentType: z.string(),
  parsedAgentType: ParsedAgentType,
  prompt: z.string(),
  expectedOutput: z.string(),
  model: z.string().optional(),
  depth: z.number().int().min(0),
  targetFiles: z.array(z.string()).optional(),
  status: SubTaskStatus,
  result: SubTaskResult.optional(),
  createdAt: z.number(),
  completedAt: z.number().optional(),
  owner: OwnerContext,
});
export type SubTask = z.infer<typeof SubTask>;

// ---------------------------------------------------------------------------------------------
// Updates that reach a parent (seed 002 `ITaskUpdate`)

/** `stuck` is reported by the session itself when its health check trips. */
export const NotificationKind = z.enum(['status', 'question', 'error', 'stuck']);
export type NotificationKind = z.infer<typeof NotificationKind>;

export const TaskUpdate = z.object({
  id: z.string(),
  type: z.enum(['completed', 'failed', 'idle', 'idle_response', 'progress']),
  subTaskId: z.string(),
  /** The owner the update is for. */
  parentId: z.string(),
  agentType: z.string(),
  prompt: z.string().optional(),
  result: SubTaskResult.optional(),
  /** For `progress` updates that carry a notification (`a2a_notify_orchestrator`). */
  kind: NotificationKind.optional(),
  message: z.string().optional(),
  timestamp: z.number(),
});
export type TaskUpdate = z.infer<typeof TaskUpdate>;

// ---------------------------------------------------------------------------------------------
// Orchestrator queue (seed 000/001 `IOrchestratorQueueMessage`)

export const QueueMessageType = z.enum([
  'status_update',
  'permission_request',
  'question',
  'completion',
  'error',
  'answer',
  'idle_response',
]);
export type QueueMessageType = z.infer<typeof QueueMessageType>;

export const Priority = z.enum(['critical', 'high', 'normal', 'low']);

export const QueueMessage = z.object({
  id: z.string(),
  timestamp: z.number(),
  priority: Priority,
  runId: z.string(),
  planId: z.string(),
  taskId: z.string(),
  workerId: z.string(),
  worktreePath: z.string(),
  subTaskId: z.string().optional(),
  parentAgentId: z.string().optional(),
  depth: z.number().int().min(0).optional(),
  owner: OwnerContext.optional(),
  type: QueueMessageType,
  content: z.unknown(),
});
export type QueueMessage = z.infer<typeof QueueMessage>;

/** The inbox order of seed 000: permission_request > completion > question > status_update. */
export const QUEUE_PRIORITY: Record<QueueMessageType, z.infer<typeof Priority>> = {
  permission_request: 'critical',
  completion: 'high',
  error: 'high',
  question: 'normal',
  idle_response: 'normal',
  answer: 'normal',
  status_update: 'low',
};

// ---------------------------------------------------------------------------------------------
// Permissions

/** Actions that need a permission decision (seed 000 appendix, plus commands and pushes). */
export const PermissionAction = z.enum([
  'file_edits_in_worktree',
  'file_creation_in_worktree',
  'file_deletion_in_worktree',
  'edits_outside_worktree',
  'command_execution',
  'subtask_spawning',
  'agent_reassignment',
  'model_switch_same_tier',
  'model_switch_expensive',
  'branch_merge',
  'branch_push',
  'worktree_cleanup',
  'force_push',
  'delete_main_branch',
  'pr_creation',
]);
export type PermissionAction = z.infer<typeof PermissionAction>;

export const PermissionCategory = z.enum(['file_operations', 'spawning', 'model_changes', 'git_operations', 'pr_operations']);
export type PermissionCategory = z.infer<typeof PermissionCategory>;

export const PERMISSION_CATEGORY: Record<PermissionAction, PermissionCategory> = {
  file_edits_in_worktree: 'file_operations',
  file_creation_in_worktree: 'file_operations',
  file_deletion_in_worktree: 'file_operations',
  edits_outside_worktree: 'file_operations',
  command_execution: 'file_operations',
  subtask_spawning: 'spawning',
  agent_reassignment: 'model_changes',
  model_switch_same_tier: 'model_changes',
  model_switch_expensive: 'model_changes',
  branch_merge: 'git_operations',
  branch_push: 'git_operations',
  worktree_cleanup: 'git_operations',
  force_push: 'git_operations',
  delete_main_branch: 'git_operations',
  pr_creation: 'pr_operations',
};

export const PermissionRequest = z.object({
  id: z.string(),
  action: PermissionAction,
  category: PermissionCategory,
  /** The session whose tool needs it. */
  requesterId: z.string(),
  agentType: z.string(),
  /** What exactly: the path, the command line. */
  detail: z.string(),
  correlation: Correlation,
  /** Sessions it passed through on its way up (requester first). */
  via: z.array(z.string()),
  timestamp: z.number(),
});
export type PermissionRequest = z.infer<typeof PermissionRequest>;

export const PermissionDecision = z.object({
  requestId: z.string(),
  approved: z.boolean(),
  decidedBy: z.enum(['policy', 'parent', 'orchestrator', 'human', 'timeout']),
  /** Which session or person decided. */
  decider: z.string(),
  reason: z.string().optional(),
});
export type PermissionDecision = z.infer<typeof PermissionDecision>;

/** What the matrix says about an action. */
export const PermissionTier = z.enum(['auto_approve', 'ask_user', 'auto_deny']);
export type PermissionTier = z.infer<typeof PermissionTier>;

// ---------------------------------------------------------------------------------------------
// The orchestrator's policy and its human channel

/** How the orchestrator decides what reaches it: permissions, worker questions, stuck workers. */
export const OrchestratorPolicy = z.strictObject({
  permissions: z.strictObject({
    matrix: z.record(PermissionAction, PermissionTier),
    /** How long a human has to answer an `ask_user` request. */
    askUserTimeoutMs: z.number().int().positive(),
    /** What happens when nobody answers in time. */
    askUserDefault: z.enum(['deny', 'approve']),
  }),
  questions: z.strictObject({
    /** Who answers a worker's question: a fixed policy text, the orchestrator's model, or a human. */
    answerBy: z.enum(['policy', 'model', 'human']),
    /** The policy's answer (also the answer when the model fails or the human does not answer). */
    policyAnswer: z.string(),
    humanTimeoutMs: z.number().int().positive(),
  }),
  stuck: z.strictObject({
    /** What the health monitor's report leads to: redirect the worker, or only record it. */
    action: z.enum(['redirect', 'none']),
    /** The instructions injected when a stuck worker is redirected. */
    message: z.string(),
    /** After this many redirects of one worker, the next report reinitializes it with its task. */
    reinitializeAfter: z.number().int().min(1),
  }),
});
export type OrchestratorPolicy = z.infer<typeof OrchestratorPolicy>;

/** Something the orchestrator asks a human: a permission (`ask_user`) or a worker's question. */
export const HumanItem = z.object({
  id: z.string(),
  kind: z.enum(['permission', 'question']),
  taskId: z.string(),
  workerId: z.string(),
  /** The session that asked (a sub-task, for a bubbled permission). */
  requesterId: z.string(),
  /** One line for a prompt or a list: the action and its detail, or the question. */
  title: z.string(),
  request: PermissionRequest.optional(),
  question: z.string().optional(),
  askedAt: z.number(),
  timeoutMs: z.number().int().positive(),
  /** The answer when nobody answers in time. */
  onTimeout: z.object({ approved: z.boolean(), text: z.string() }),
});
export type HumanItem = z.infer<typeof HumanItem>;

/** A human's answer: `approved` for a permission, `text` for a question. */
export const HumanAnswer = z.object({
  approved: z.boolean().optional(),
  text: z.string().optional(),
  /** Who answered (a user name, `terminal`, `a2a inbox`). */
  by: z.string().min(1),
  reason: z.string().optional(),
});
export type HumanAnswer = z.infer<typeof HumanAnswer>;

// ---------------------------------------------------------------------------------------------
// Model port messages

export const ToolCall = z.object({
  id: z.string(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ChatMessage = z.discriminatedUnion('role', [
  z.object({
    role: z.literal('user'),
    content: z.string(),
    /** Injected by the runtime (child results, inquiries, answers), not typed by a human. */
    synthetic: z.boolean().optional(),
  }),
  z.object({
    role: z.literal('assistant'),
    content: z.string(),
    toolCalls: z.array(ToolCall).optional(),
  }),
  z.object({
    role: z.literal('tool'),
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
    isError: z.boolean().optional(),
  }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ToolSpec = z.object({
  name: z.string(),
  description: z.string(),
  /** JSON Schema of the arguments object. */
  parameters: z.record(z.string(), z.unknown()),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

export const ModelReply = z.object({
  text: z.string(),
  toolCalls: z.array(ToolCall),
  usage: z.object({ inputTokens: z.number().int().min(0), outputTokens: z.number().int().min(0) }),
  stopReason: z.enum(['end_turn', 'tool_use', 'max_tokens']).optional(),
});
export type ModelReply = z.infer<typeof ModelReply>;

// ---------------------------------------------------------------------------------------------
// Plans

const Id = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'letters, digits, ".", "_" and "-", starting with a letter or digit');

export const PlanTask = z.object({
  id: Id,
  /** Agent type for the worker, e.g. `@architect` or `claude:reviewer`. Defaults to the run's agent. */
  agent: z.string().min(1).optional(),
  prompt: z.string().min(1),
  expectedOutput: z.string().optional(),
  dependsOn: z.array(Id).default([]),
  /** A model profile (or a bare model name) for this task's worker. */
  model: z.string().optional(),
  /** The kind of work (`design`, `code`, `review` …): profiles can be assigned per task type. */
  taskType: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().optional(),
});
export type PlanTask = z.infer<typeof PlanTask>;

export const Plan = z.object({
  id: Id.default('plan'),
  name: z.string().optional(),
  description: z.string().optional(),
  tasks: z.array(PlanTask).min(1, 'a plan needs at least one task'),
  /** Path (relative to the plan file) of a scripted-model script, for the embedded default model. */
  script: z.string().optional(),
  /** Run configuration overrides (limits, idle timings), same shape as the config file. */
  config: z.record(z.string(), z.unknown()).optional(),
});
export type Plan = z.infer<typeof Plan>;

// ---------------------------------------------------------------------------------------------
// Run events: one JSON object per line for `a2a run --json` and the monitors

export const RunEventType = z.enum([
  'run.started',
  'run.finished',
  'worker.deployed',
  'task.skipped',
  'session.state',
  'subtask.spawned',
  'subtask.queued',
  'subtask.result',
  'update.queued',
  'inquiry.sent',
  'inquiry.answered',
  'model.called',
  'tool.called',
  'limit.hit',
  'circuit.open',
  'permission.requested',
  'permission.decided',
  'question.asked',
  'question.answered',
  'human.asked',
  'human.answered',
  'inbox.accepted',
  'task.completed',
  'worktree.created',
  'worktree.removed',
  'branch.committed',
  'branch.merged',
  'branch.conflict',
  'branch.pushed',
  'pr.created',
  'review.requested',
  'changes.requested',
  'branch.done',
  'budget.reached',
  'model.switched',
  'subtask.placed',
  'host.joined',
  'host.lost',
  'session.restored',
  'stuck.detected',
  'worker.reassigned',
  'worker.redirected',
  'worker.reinitialized',
  'worker.resumed',
  'run.stopped',
  'run.resumed',
  'inbox.handled',
  'warning',
]);
export type RunEventType = z.infer<typeof RunEventType>;

export const RunEvent = z.object({
  type: RunEventType,
  runId: z.string(),
  seq: z.number().int().min(0),
  ts: z.number(),
  planId: z.string().optional(),
  taskId: z.string().optional(),
  workerId: z.string().optional(),
  subTaskId: z.string().optional(),
  parentId: z.string().optional(),
  depth: z.number().int().optional(),
  agentType: z.string().optional(),
  data: z.record(z.string(), z.unknown()).default({}),
});
export type RunEvent = z.infer<typeof RunEvent>;

// ---------------------------------------------------------------------------------------------
// Limits and timings that travel with every session (so a remote host enforces the same ones)

export const Limits = z.strictObject({
  /** Deepest sub-task level under an orchestrator-deployed worker (worker = 0). */
  maxDepth: z.number().int().min(0).max(8).default(2),
  /** Deepest level for a standalone session (`a2a run --standalone`). */
  maxDepthStandalone: z.number().int().min(0).max(8).default(1),
  /** Children of one parent running at once; further spawns wait in `pending`. */
  maxParallelSubtasks: z.number().int().min(1).default(5),
  /** Sub-tasks a worker's whole subtree may spawn in total. */
  maxSubtasksPerWorker: z.number().int().min(0).default(10),
  /** Spawns per minute within one worker's subtree. */
  spawnRatePerMinute: z.number().int().min(1).default(20),
  /** Workers the orchestrator runs at once. */
  maxParallelWorkers: z.number().int().min(1).default(4),
  /** Model calls one session may make before it is failed. */
  maxTurns: z.number().int().min(1).default(40),
  /** Consecutive failed tool calls that open the circuit breaker (worker pauses, sub-task fails). */
  circuitBreakerThreshold: z.number().int().min(1).default(5),
  /** Deadline for a whole sub-task; none by default. */
  subtaskTimeoutMs: z.number().int().positive().optional(),
  /** Default wait of `a2a_await_subtasks` and blocking spawns when the agent gives none. */
  awaitTimeoutMs: z.number().int().positive().default(600_000),
  /** Health: the same tool call (name and arguments) this many times in a row is being stuck. */
  stuckRepeatLimit: z.number().int().min(2).default(3),
  /** Health: this many tool calls in a row without progress (each failed or repeated) is being stuck. */
  stuckStepLimit: z.number().int().min(2).default(8),
});
export type Limits = z.infer<typeof Limits>;

export const IdleConfig = z.strictObject({
  idleThresholdMs: z.number().int().min(0).default(30_000),
  inquiryDelayMs: z.number().int().min(0).default(5_000),
  inquiryTimeoutMs: z.number().int().min(1).default(60_000),
  /** Inquiries answered without progress before the session is ended with a partial result. */
  maxInquiries: z.number().int().min(1).default(3),
});
export type IdleConfig = z.infer<typeof IdleConfig>;

/** Everything a host needs to run one agent session (worker or sub-task). Serializable. */
export const SessionSpec = z.object({
  id: z.string(),
  role: z.enum(['worker', 'subtask']),
  agent: ParsedAgentType,
  prompt: z.string(),
  expectedOutput: z.string(),
  model: z.string().optional(),
  depth: z.number().int().min(0),
  /** Effective deepest level for this session's descendants. */
  maxDepth: z.number().int().min(0),
  spawnContext: z.enum(['orchestrator', 'agent']),
  owner: OwnerContext,
  correlation: Correlation,
  /** Ancestors from the root down (not including this session), for cycle detection. */
  lineage: z.array(z.object({ agentName: z.string(), prompt: z.string() })),
  targetFiles: z.array(z.string()).optional(),
  /** The kind of work, for model assignment; children inherit it unless they name their own. */
  taskType: z.string().optional(),
  timeoutMs: z.number().int().positive().optional(),
  limits: Limits,
  idle: IdleConfig,
  permissions: z.object({
    /** Actions this session may do without asking anyone. */
    level: z.array(PermissionAction),
    /** What its sub-tasks may do on their own (`true`: all of this session's level). */
    forSubtasks: z.union([z.literal(true), z.array(PermissionAction)]),
  }),
});
export type SessionSpec = z.infer<typeof SessionSpec>;

// ---------------------------------------------------------------------------------------------
// Messages between a session and the supervisor of its children (its `subtasks` actor)

/** A queued update with its mailbox sequence number; acknowledged by sequence. */
export const UpdateBatch = z.object({
  upTo: z.number().int(),
  updates: z.array(TaskUpdate),
  /** Children not yet settled, so the owner knows whether more is coming. */
  live: z.number().int().min(0),
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
// Between actor systems (NATS): a session runs on a host, its owner elsewhere

/** Where a remote session's messages go back to, and where it is asked to run. */
export const RemoteSpawn = z.object({
  /** The session to run (its agent type picks the queue: `a2a.<ns>.spawn.<agentName>`). */
  spec: SessionSpec,
  /** The process that owns it (its supervisor), for the record. */
  ownerProcess: z.string(),
  /** When the spawn was first requested (clock time of the owner). */
  requestedAt: z.number(),
});
export type RemoteSpawn = z.infer<typeof RemoteSpawn>;

/** From a remote session to its owner (`a2a.<ns>.up.<sessionId>`). */
export const UpMessage = z.discriminatedUnion('kind', [
  /** A host took the spawn (seed 004 acknowledgment) and runs the session. */
  z.object({ kind: z.literal('started'), host: z.string(), restored: z.boolean() }),
  /** What the session sent its parent: an update, or a permission request. */
  z.object({ kind: z.literal('event'), event: z.record(z.string(), z.unknown()).and(z.object({ type: z.enum(['SUBTASK_UPDATE', 'PERMISSION_REQUEST']) })) }),
  /** Its result (its final state's output). */
  z.object({ kind: z.literal('done'), output: SubTaskResult }),
  z.object({ kind: z.literal('error'), error: z.string() }),
]);
export type UpMessage = z.infer<typeof UpMessage>;

/** From the owner to a remote session (`a2a.<ns>.down.<sessionId>`): what a parent sends a child. */
export const DownMessage = z.object({
  event: z.record(z.string(), z.unknown()).and(
    z.object({
      type: z.enum(['CANCEL', 'TIMEOUT', 'MESSAGE', 'REASSIGN', 'REINITIALIZE', 'RESUME', 'SWITCH_MODEL', 'PERMISSION_DECIDED']),
    }),
  ),
});
export type DownMessage = z.infer<typeof DownMessage>;

/** A host's liveness and load (`a2a.<ns>.hosts.<hostId>.heartbeat`), also its registration. */
export const HostHeartbeat = z.object({
  hostId: z.string(),
  agents: z.array(z.string()),
  concurrency: z.number().int().min(1),
  running: z.number().int().min(0),
  sessions: z.array(z.string()),
  startedAt: z.number(),
  at: z.number(),
  /** How often it beats: a host silent for 3 intervals is taken as dead. */
  intervalMs: z.number().int().positive().optional(),
  status: z.enum(['ready', 'draining']),
});
export type HostHeartbeat = z.infer<typeof HostHeartbeat>;
