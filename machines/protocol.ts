/**
 * The protocol: every message and event that crosses an actor boundary, as zod schemas.
 * TypeScript types come from `z.infer`; nothing here is hand-duplicated elsewhere.
 * Messages entering a process (files, CLI, later NATS/HTTP) are parsed with these schemas first.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// Data of any shape that comes from outside

/** How deep free-form data may nest: deeper would overflow JSON.stringify when a checkpoint is written. */
export const MAX_JSON_DEPTH = 64;

function withinDepth(value: unknown, limit: number): boolean {
  // iterative, so that a hostile nesting cannot overflow the stack here either
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= limit) return false;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push([child, depth + 1]);
  }
  return true;
}

/** Free-form JSON (tool arguments, result metadata, queue message content), nested at most MAX_JSON_DEPTH levels. */
export const JsonValue = z.unknown().refine((v) => withinDepth(v, MAX_JSON_DEPTH), `nested more than ${MAX_JSON_DEPTH} levels deep`);
export const JsonObject = z.record(z.string(), z.unknown()).refine((v) => withinDepth(v, MAX_JSON_DEPTH), `nested more than ${MAX_JSON_DEPTH} levels deep`);

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
  'ARTIFACT_NOT_FOUND',
  /** The provider refused the request: the conversation does not fit the model's context window. */
  'CONTEXT_OVERFLOW',
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

/** A registry key: it names NATS subjects (`a2a.<ns>.spawn.<agentName>`), so nothing else is allowed. */
export const AgentName = z.string().max(64).regex(/^[a-z][a-z0-9-]*$/, 'lowercase letters, digits and "-", starting with a letter');

export const ParsedAgentType = z.strictObject({
  /** What the caller wrote, e.g. `claude:reviewer`. */
  raw: z.string().min(1).max(200),
  backend: AgentBackend,
  /** Registry key, e.g. `reviewer`. */
  agentName: AgentName,
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

/**
 * Seed 001 `IOwnerContext`: who receives a session's results and updates. The seed's
 * `sessionUri` (a link to an editor's chat session, gap G3) is left out: a session here is named
 * by its id within its run, which every event and record carries, and nothing would read a URI.
 */
export const OwnerContext = z.object({
  ownerType: z.enum(['orchestrator', 'worker', 'agent']),
  ownerId: z.string(),
});
export type OwnerContext = z.infer<typeof OwnerContext>;

/**
 * A run id (`r-20261122-050634-1f2e3d4c`): no dots, so that `<runId>.<sessionId>` (a remote
 * session's key on the wire) is unambiguous.
 */
export const RunId = z.string().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'letters, digits, "_" and "-", starting with a letter or digit');

/**
 * A session id: a worker is `w-<taskId>` (task ids have no dots), a sub-task is its parent's id,
 * a dot and a number (`w-api.2`, `w-api.2.1`). Unique by construction within a run, whichever
 * process or host spawned it, and it names NATS subjects and keys: nothing else is allowed.
 */
export const SessionId = z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9_-]*(\.[0-9]+)*$/, 'a worker id (letters, digits, "_", "-") followed by ".<n>" per sub-task level');

/** Correlation ids carried by every message and event. */
export const Correlation = z.object({
  runId: RunId,
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
  /** Every input token billed, cache reads and writes included. */
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  /** The part of inputTokens read from the provider's prompt cache, and the part written to it. */
  cacheReadTokens: z.number().int().min(0).optional(),
  cacheWriteTokens: z.number().int().min(0).optional(),
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
  metadata: JsonObject.optional(),
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
  content: JsonValue,
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
  /** A command that may reach the network (run_command with `network: true`). */
  'network_access',
  /** A tool a program added in code (the library's `defineTool`), unless it names an action of its own. */
  'custom_tool',
  /** A tool of an MCP server an agent lists (`mcp__<server>__<tool>`); the server's and the tool's own tiers come first. */
  'mcp_tool',
  /** A sub-task sent to a remote A2A agent (an agent file with `remote:`): what leaves this machine, and to where. */
  'remote_agent_delegation',
]);
export type PermissionAction = z.infer<typeof PermissionAction>;

export const PermissionCategory = z.enum(['file_operations', 'spawning', 'model_changes', 'git_operations', 'pr_operations', 'external_tools', 'remote_agents']);
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
  network_access: 'file_operations',
  custom_tool: 'external_tools',
  mcp_tool: 'external_tools',
  remote_agent_delegation: 'remote_agents',
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
  /**
   * Only a person may approve it: no session's level and no `auto_approve` in the matrix counts
   * (a command that runs without a sandbox). `auto_deny` still denies it.
   */
  needsPerson: z.boolean().optional(),
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

/**
 * A value a2a reads from the environment or the secrets file where it runs, never written in a
 * file in clear: `{ env: "GITHUB_TOKEN" }`, `{ secret: "search" }` (a key of secrets.json), with
 * an optional `prefix` ("Bearer ").
 */
export const SecretRef = z.union([
  z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), prefix: z.string().optional() }),
  z.strictObject({ secret: z.string().min(1), prefix: z.string().optional() }),
]);
export type SecretRef = z.infer<typeof SecretRef>;

/** An MCP server's name, the middle of its tools' names (`mcp__<server>__<tool>`). */
export const McpServerName = z
  .string()
  .regex(/^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$/, 'letters, digits, "-" and single "_" (no "__": it separates the parts of a tool name)')
  .max(32);

/**
 * An MCP server an agent uses: a command it starts (stdio, in the session's worktree) or a URL
 * (Streamable HTTP). Its tools reach the model as `mcp__<server>__<tool>`; each call asks the
 * `mcp_tool` permission unless the server (`permission`) or the tool (`tools`) has a tier of its own.
 */
export const McpServerConfig = z
  .strictObject({
    command: z.string().min(1).optional(),
    args: z.array(z.string()).optional(),
    /** The server's environment beyond PATH, HOME and the like (the process's own is not passed on). */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.union([z.string(), SecretRef])).optional(),
    /** Relative to the session's worktree (default: the worktree). */
    cwd: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/, error: 'an http(s) URL' }).optional(),
    /** Only from the environment or the secrets file: `{ "Authorization": { "env": "TOKEN", "prefix": "Bearer " } }`. */
    headers: z.record(z.string().regex(/^[A-Za-z0-9-]+$/, 'a header name'), SecretRef).optional(),
    /** The tier of every tool of this server (over the matrix's mcp_tool). */
    permission: PermissionTier.optional(),
    /** Tiers of single tools (over the server's): `{ "delete_file": "auto_deny" }`; an auto_deny tool is not offered. */
    tools: z.record(z.string().min(1), PermissionTier).optional(),
    /** How long one call may take. */
    timeoutMs: z.number().int().min(100).max(3_600_000).default(60_000),
    /** How long starting (or reaching) the server and listing its tools may take. */
    startupTimeoutMs: z.number().int().min(100).max(300_000).default(15_000),
  })
  .superRefine((server, ctx) => {
    if ((server.command === undefined) === (server.url === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'give either command (a stdio server) or url (a Streamable HTTP server)', path: [server.command === undefined ? 'command' : 'url'] });
    }
    if (server.url !== undefined) {
      for (const key of ['args', 'env', 'cwd'] as const) if (server[key] !== undefined) ctx.addIssue({ code: 'custom', message: `${key} is for a command's server, not a URL's`, path: [key] });
    }
    if (server.command !== undefined && server.headers !== undefined) ctx.addIssue({ code: 'custom', message: "headers are for a URL's server; a command's server gets env", path: ['headers'] });
  });
export type McpServerConfig = z.output<typeof McpServerConfig>;


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
  /** The plan of the run it belongs to, and the asking session's agent type (for the audit; older snapshots have neither). */
  planId: z.string().optional(),
  agentType: z.string().optional(),
  /** One line for a prompt or a list: the action and its detail, or the question. */
  title: z.string(),
  request: PermissionRequest.optional(),
  question: z.string().optional(),
  /** When the person was asked (ms since the epoch, on the run's clock): the default applies at askedAt + timeoutMs. */
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
  arguments: JsonObject,
  /**
   * The model's arguments could not be read (not valid JSON, not an object): the call is not run,
   * and its result is this error, so that the model can send it again (see ToolCatalog.run).
   */
  argumentsError: z.string().optional(),
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
    /**
     * The model call that made it (session, step and the process that paid for it): a reply given
     * back from the effect journal after a restore keeps it, so that its `model.called` is told once.
     */
    replyId: z.string().optional(),
  }),
  z.object({
    role: z.literal('tool'),
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
    isError: z.boolean().optional(),
    /** Its content was cut to fit the context window (the call itself was told when it ran). */
    clipped: z.boolean().optional(),
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
  /** What the provider billed: inputTokens counts every input token, of which cacheRead/WriteTokens came from or went to its prompt cache. */
  usage: z.object({
    inputTokens: z.number().int().min(0),
    outputTokens: z.number().int().min(0),
    cacheReadTokens: z.number().int().min(0).optional(),
    cacheWriteTokens: z.number().int().min(0).optional(),
  }),
  stopReason: z.enum(['end_turn', 'tool_use', 'max_tokens']).optional(),
});
export type ModelReply = z.infer<typeof ModelReply>;

// ---------------------------------------------------------------------------------------------
// Plans

/** Plan and task ids. No dots: a task's worker is `w-<id>` and its sub-tasks `w-<id>.<n>`. */
const Id = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'letters, digits, "_" and "-", starting with a letter or digit');

export const PlanTask = z.strictObject({
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

export const Plan = z.strictObject({
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

/** A workflow to run instead of a plan (`workflow.json`, or `a2a run --workflow sdlc "<goal>"`). */
export const WorkflowRequest = z.strictObject({
  workflow: z.literal('sdlc'),
  id: Id.default('sdlc'),
  name: z.string().optional(),
  description: z.string().optional(),
  /** What the team is to build: the organiser's user task. */
  goal: z.string().trim().min(1, 'the goal is empty: say what the team is to build').max(20_000),
  /** Path (relative to the file) of a scripted-model script, for the embedded default model. */
  script: z.string().optional(),
  /**
   * A directory (relative to the file) the run works on a fresh copy of, as a new git repository
   * in a temp dir, unless --workspace names one: an example never writes into the checkout it
   * is run from.
   */
  workspace: z.string().min(1).optional(),
  /** Run configuration overrides, same shape as the config file (roles: `workflow.roles`). */
  config: z.record(z.string(), z.unknown()).optional(),
});
export type WorkflowRequest = z.infer<typeof WorkflowRequest>;

// ---------------------------------------------------------------------------------------------
// Run events: one JSON object per line for `a2a run --json` and the monitors

/** Run events about a task and its branch, not one session (audited with their plan and task). */
export const TASK_EVENT_TYPES = [
  'task.skipped',
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
] as const;

export const RunEventType = z.enum([
  'run.started',
  'run.finished',
  'worker.deployed',
  ...TASK_EVENT_TYPES,
  'session.state',
  'subtask.spawned',
  'subtask.queued',
  'subtask.result',
  'update.queued',
  'inquiry.sent',
  'inquiry.answered',
  'model.called',
  'model.truncated',
  'tool.called',
  /** What the runtime put into a session's conversation (child results, inquiries, answers, notes): its transcript's user turns. */
  'message.injected',
  'limit.hit',
  'circuit.open',
  'permission.requested',
  'permission.forwarded',
  'permission.decided',
  'question.asked',
  'question.answered',
  'human.asked',
  'human.answered',
  'inbox.accepted',
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
  'workflow.state',
  'workflow.decision',
  'workflow.refused',
  'workflow.completed',
  'artifact.created',
  'artifact.updated',
  'run.paused',
  'run.unpaused',
  /** An agent's MCP server: connected (its tools listed), failed (to start, died, timed out), a tool called. */
  'mcp.connected',
  'mcp.failed',
  'mcp.called',
  /** A restored session's tool call that had started and has no recorded result: not run again, its outcome unknown. */
  'effect.in_doubt',
  'warning',
]);
export type RunEventType = z.infer<typeof RunEventType>;

export const RunEvent = z.object({
  /**
   * Unique per event. Events that state a fact once (a result, a spawn, an update, a decision)
   * carry a key of that fact (`result:w-api.2`), so that a re-emission after a resume or a
   * failover is recognised and dropped; the others get a key of their emission.
   */
  id: z.string().min(1).optional(),
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
  data: JsonObject.default({}),
});
export type RunEvent = z.infer<typeof RunEvent>;

/** Audited operations about the run as a whole: they carry the plan. */
const RUN_SCOPED: ReadonlySet<string> = new Set(['run.started', 'run.finished', 'run.stopped', 'run.resumed']);
/** Audited operations about a task and its branch (not one session): they carry the plan and the task. */
const TASK_SCOPED: ReadonlySet<string> = new Set(TASK_EVENT_TYPES);

/** What each kind of audit record must carry, beyond the run id. */
export function auditFieldsOf(type: string): Array<keyof RunEvent> {
  if (RUN_SCOPED.has(type)) return ['planId'];
  if (TASK_SCOPED.has(type)) return ['planId', 'taskId'];
  return ['planId', 'taskId', 'workerId', 'subTaskId', 'parentId', 'depth', 'agentType'];
}

/**
 * A record of the audit trail (`audit.jsonl`): a run event with the full context of what it is
 * about, as the README promises: the run and plan always; a task's operation its task; a
 * session's operation (a spawn, a result, an update, a permission at any hop, a question, a
 * management act) its task, worker, sub-task, parent, depth and agent type.
 */
export const AuditRecord = RunEvent.superRefine((record, ctx) => {
  for (const field of auditFieldsOf(record.type)) {
    if (record[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a ${record.type} record must carry ${field}` });
  }
});

// ---------------------------------------------------------------------------------------------
// Limits and timings that travel with every session (so a remote host enforces the same ones)

export const Limits = z.strictObject({
  /** Deepest sub-task level under an orchestrator-deployed worker (worker = 0). */
  maxDepth: z.number().int().min(0).max(8).default(2),
  /** Deepest level for a standalone session (`a2a run --standalone`). */
  maxDepthStandalone: z.number().int().min(0).max(8).default(1),
  /** Children of one parent running at once; further spawns wait for a slot in their supervisor's queue. */
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
  id: SessionId,
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
  /** The SDLC workflow role this worker plays (architect, sceptic …): its artifacts' producer role. */
  workflowRole: z.string().max(64).optional(),
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
});
export type PermissionAsk = z.infer<typeof PermissionAsk>;

export const PermissionAnswer = z.object({
  approved: z.boolean(),
  decidedBy: PermissionDecision.shape.decidedBy,
  reason: z.string().optional(),
});
export type PermissionAnswer = z.infer<typeof PermissionAnswer>;

/**
 * What the session chart asks of its agent loop: one step at a time, numbered. The steps run in
 * the session's own actor (actors/agentLoop.ts), not in a child actor: each is a promise whose
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

// ---------------------------------------------------------------------------------------------
// The studio (adapters/studio): what its page sends over HTTP

/** Which events a page's stream starts after (`?after=`, or the `Last-Event-ID` header): an index in the run's log. */
export const StudioStreamQuery = z.strictObject({
  after: z.coerce.number().int().min(-1).optional(),
  token: z.string().optional(),
});

/** The audit trail's filters and format (`/api/runs/<id>/audit?…`). */
export const StudioAuditQuery = z.strictObject({
  format: z.enum(['json', 'md']).optional(),
  /** A session, worker, task or decider id, or who acted (`by`). */
  actor: z.string().max(200).optional(),
  /** An event type (`permission.decided`) or a permission action (`command_execution`). */
  action: z.string().max(200).optional(),
  decision: z.enum(['approved', 'denied']).optional(),
  token: z.string().optional(),
});

/** The page's emergency stop (`a2a stop`); its other changes are control requests, `by` set by the server. */
export const StudioStop = z.strictObject({ command: z.literal('stop') });

// ---------------------------------------------------------------------------------------------
// Between actor systems (NATS): a session runs on a host, its owner elsewhere

/** Where a remote session's messages go back to, and where it is asked to run. */
/**
 * W3C trace context headers (`traceparent`, `tracestate`) on a message between processes (spawn,
 * up, down, a host's events): the span of the session the message is about, so that a run across
 * hosts is one trace. Other headers are allowed (the schema looks at these two only).
 */
export const TraceHeaders = z.object({
  traceparent: z.string().regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'version-traceid-spanid-flags in lowercase hex (W3C Trace Context)'),
  tracestate: z.string().max(512).optional(),
});
export type TraceHeaders = z.infer<typeof TraceHeaders>;

export const RemoteSpawn = z.object({
  /** The session to run (its agent type picks the queue: `a2a.<ns>.spawn.<agentName>`). */
  spec: SessionSpec,
  /** The process that owns it (its supervisor), for the record. */
  ownerProcess: z.string(),
  /**
   * Where its reports go: the owner's box (`r-<runId>`, `h-<hostId>`; see actors/mailbox.ts), and,
   * when its owner runs on a host, the id of the tree the owner runs in there (its reports go to
   * whichever host holds that tree then).
   */
  owner: z.object({ box: z.string().regex(/^[A-Za-z0-9_-]+$/), root: z.string().optional() }),
  /** When the spawn was first requested (clock time of the owner). */
  requestedAt: z.number(),
});
export type RemoteSpawn = z.infer<typeof RemoteSpawn>;

/** A host id: it names NATS subjects and keys. */
export const HostId = z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, "_" and "-"');

/**
 * From a remote session to its owner, on `a2a.<ns>.up.<hostId>.<runId>.<sessionId>`: the subject
 * names the host that sent it (per-host credentials can bind it), and the owner takes reports only
 * from the host that holds the session.
 */
export const UpMessage = z.discriminatedUnion('kind', [
  /** A host took the spawn (seed 004 acknowledgment) and runs the session. */
  z.strictObject({ kind: z.literal('started'), host: HostId, restored: z.boolean() }),
  /** What the session sent its parent: an update, or a permission request. */
  z.strictObject({
    kind: z.literal('event'),
    event: z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('SUBTASK_UPDATE'), update: TaskUpdate }),
      z.strictObject({ type: z.literal('PERMISSION_REQUEST'), request: PermissionRequest }),
    ]),
  }),
  /** Its result (its final state's output). */
  z.strictObject({ kind: z.literal('done'), output: SubTaskResult }),
  z.strictObject({ kind: z.literal('error'), error: z.string().max(100_000) }),
]);
export type UpMessage = z.infer<typeof UpMessage>;

/**
 * From the owner to a remote session (`a2a.<ns>.down.<runId>.<sessionId>`): what a parent sends a
 * child, with an id so that a replay is recognised and dropped.
 */
export const DownMessage = z.strictObject({
  id: z.string().min(1).max(300),
  event: SessionCommand,
});
export type DownMessage = z.infer<typeof DownMessage>;

/** A timer of a checkpointed actor tree: its source and target actor paths and when it fires. */
export const SavedTimer = z.object({
  source: z.string(),
  target: z.string(),
  event: z.object({ type: z.string() }).loose(),
  id: z.string(),
  /** When it fires (clock time). */
  dueAt: z.number(),
});
export type SavedTimer = z.infer<typeof SavedTimer>;

/** An actor tree's persisted snapshot and its pending timers (`checkpoint.json`, the snapshots bucket). */
export const Checkpoint = z.object({
  version: z.literal(1),
  savedAt: z.number(),
  snapshot: z.object({ status: z.enum(['active', 'done', 'error', 'stopped']) }).loose(),
  timers: z.array(SavedTimer),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** A run paused or resumed (`a2a.<ns>.runs.<runId>.pause`, and the `pauses` bucket under its run id). */
export const RunPause = z.strictObject({
  runId: RunId,
  paused: z.boolean(),
  by: z.string().min(1).max(200),
  at: z.number(),
});
export type RunPause = z.infer<typeof RunPause>;

/** What the snapshots bucket holds for a session that runs (or ran) on a host, under its wire key. */
export const SessionRecord = z.object({
  spec: SessionSpec,
  host: HostId,
  /** `released`: its host drained and handed it back; `finished`: its result went to its owner. */
  state: z.enum(['running', 'released', 'finished']),
  checkpoint: Checkpoint.nullable(),
  at: z.number(),
  /** The trace headers of its spawn (its span, in its owner's process): a host that takes it over continues the trace. */
  trace: z.record(z.string(), z.string()).optional(),
  /** Where its reports go (its spawn's `owner`): for a host that forwards or reports for it. */
  owner: z.object({ box: z.string(), root: z.string().optional() }).optional(),
});
export type SessionRecord = z.infer<typeof SessionRecord>;

/** A host's liveness and load (`a2a.<ns>.hosts.<hostId>.heartbeat`), also its registration. */
export const HostHeartbeat = z.object({
  hostId: HostId,
  agents: z.array(z.string()),
  concurrency: z.number().int().min(1),
  running: z.number().int().min(0),
  /** The sessions it runs (wire ids), claims included as soon as they are made. */
  sessions: z.array(z.string()),
  /** Sessions it handed back while draining, for another host to take over. */
  released: z.array(z.string()).optional(),
  startedAt: z.number(),
  at: z.number(),
  /** How often it beats: a host silent for 3 intervals is taken as dead. */
  intervalMs: z.number().int().positive().optional(),
  status: z.enum(['ready', 'draining']),
  /** Records of the snapshots bucket this host found invalid and skipped (key and why), at most 20. */
  invalidRecords: z.array(z.object({ key: z.string(), problem: z.string() })).optional(),
  /** Its process's memory (bytes), for monitors. */
  memory: z.object({ rss: z.number(), heapUsed: z.number() }).optional(),
});
export type HostHeartbeat = z.infer<typeof HostHeartbeat>;

// ---------------------------------------------------------------------------------------------
// Seed 003: the organiser's workflow and its artifact store

/** The SDLC workflow's states, as the seed names them (the chart: machines/sdlcWorkflow.machine.ts). */
export const WorkflowState = z.enum([
  'IDLE',
  'PLANNING',
  'PLAN_REVIEW',
  'PLAN_REVISION',
  'STRUCTURE_CREATION',
  'CODE_IMPLEMENTATION',
  'CODE_REVIEW',
  'CODE_FIXING',
  'DOCUMENTATION',
  'TESTING',
  'COMPLETED',
  'PAUSED',
  'ERROR',
]);
export type WorkflowState = z.infer<typeof WorkflowState>;

/** The states in which agents work (steps); IDLE, COMPLETED, PAUSED and ERROR are not steps. */
export const WorkingState = WorkflowState.exclude(['IDLE', 'COMPLETED', 'PAUSED', 'ERROR']);
export type WorkingState = z.infer<typeof WorkingState>;

/** What the organiser decides after a step (seed 003 `WorkflowDecision`); checked against the chart. */
export const WorkflowDecision = z.strictObject({
  action: z.enum(['transition', 'approve', 'request_revision', 'wait']),
  /** Only with `transition`: the state to go to (one the current state allows). */
  nextState: WorkflowState.optional(),
  reasoning: z.string().trim().min(1).max(4_000),
});
export type WorkflowDecision = z.infer<typeof WorkflowDecision>;

/** How the organiser splits the files of the structure between the coders (seed 003 `WorkDistribution`). */
export const WorkDistribution = z.strictObject({
  /** Files the primary coder implements. */
  primary: z.array(z.string().min(1).max(500)).max(200),
  /** Files for the secondary coders, implemented in parallel (one group per coder). */
  secondary: z.array(z.string().min(1).max(500)).max(200),
  reasoning: z.string().max(4_000).optional(),
});
export type WorkDistribution = z.infer<typeof WorkDistribution>;

/** What a finished workflow reports (seed 003 `CompletionSummary`). */
export const CompletionSummary = z.strictObject({
  totalTimeMs: z.number().int().min(0),
  stepsCompleted: z.number().int().min(0),
  artifactsCreated: z.number().int().min(0),
  filesModified: z.array(z.string()),
  linesOfCode: z.number().int().min(0),
  issuesFound: z.number().int().min(0),
  issuesFixed: z.number().int().min(0),
});
export type CompletionSummary = z.infer<typeof CompletionSummary>;

/** The seed's artifact types. */
export const ArtifactType = z.enum(['user_task', 'implementation_plan', 'pseudocode', 'code', 'review_report', 'documentation', 'test_results', 'error_report']);
export type ArtifactType = z.infer<typeof ArtifactType>;

export const ArtifactStatus = z.enum(['in_progress', 'completed', 'needs_revision', 'approved', 'rejected']);
export type ArtifactStatus = z.infer<typeof ArtifactStatus>;

/** `<type>-<n>`, numbered per run: `implementation_plan-1`, `code-3`. */
export const ArtifactId = z
  .string()
  .max(64)
  .regex(/^(user_task|implementation_plan|pseudocode|code|review_report|documentation|test_results|error_report)-[1-9][0-9]*$/, 'an artifact id: "<type>-<n>", e.g. "code-3"');
export type ArtifactId = z.infer<typeof ArtifactId>;

/** What the organiser sees of an artifact instead of its content (seed 003 `ArtifactSummary`). */
export const ArtifactSummary = z.strictObject({
  /** One or two sentences. */
  brief: z.string().max(400),
  keyPoints: z.array(z.string().max(300)).max(5),
  filesAffected: z.array(z.string().max(500)).max(200),
  metrics: z
    .strictObject({
      linesOfCode: z.number().int().min(0).optional(),
      testsCount: z.number().int().min(0).optional(),
      testsFailed: z.number().int().min(0).optional(),
      issuesFound: z.number().int().min(0).optional(),
    })
    .optional(),
});
export type ArtifactSummary = z.infer<typeof ArtifactSummary>;

/** An artifact's record (its latest version); the content of every version is stored apart. */
export const ArtifactMeta = z.strictObject({
  id: ArtifactId,
  runId: RunId,
  type: ArtifactType,
  status: ArtifactStatus,
  /** 1, 2, …: a revision is a new version, older ones stay readable. */
  version: z.number().int().min(1),
  /** The session that wrote the latest version (or "organiser", "user"). */
  producer: z.string().min(1).max(200),
  /** The workflow role of the producer (architect, sceptic …, or a custom role). */
  producerRole: z.string().min(1).max(64),
  summary: ArtifactSummary,
  /** Artifacts this one builds on (the plan a pseudocode follows, the code a review judges). */
  related: z.array(ArtifactId).max(100),
  reviewedBy: z.array(z.string().max(200)).max(100),
  /** Characters of the latest version's content. */
  size: z.number().int().min(0),
  createdAt: z.number(),
  modifiedAt: z.number(),
  /** Archived artifacts leave the organiser's context; their content stays readable. */
  archived: z.boolean(),
});
export type ArtifactMeta = z.infer<typeof ArtifactMeta>;

/** One stored version's content (KV value or file), with the version it is. */
export const ArtifactContent = z.strictObject({
  id: ArtifactId,
  version: z.number().int().min(1),
  content: z.string(),
  producer: z.string().min(1).max(200),
  at: z.number(),
  /**
   * The artifact's record as this version makes it, written with the content in the same (atomic)
   * write: a writer stopped before the record's own write leaves no invisible id and no orphan
   * version, since the next reader completes the record from it.
   */
  record: ArtifactMeta.optional(),
});
export type ArtifactContent = z.infer<typeof ArtifactContent>;

// ---------------------------------------------------------------------------------------------
// The Agent2Agent protocol (adapters/a2aProtocol/): what `a2a serve --a2a` keeps of a task, and
// how an agent file names a remote A2A agent
// ---------------------------------------------------------------------------------------------

/** An A2A task id or context id as this server makes them and accepts them from clients. */
export const A2AProtocolId = z.string().regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/, 'letters, digits, ".", "_" and "-" (not first), at most 128');

/** One A2A event of a served task, numbered from 1 (its `seq` is the SSE event id a client resumes from). */
export const A2AServedEvent = z.strictObject({
  seq: z.number().int().min(1),
  at: z.number(),
  /** The protocol's StreamResponse in its v1.0 JSON form. */
  event: JsonObject,
});
export type A2AServedEvent = z.infer<typeof A2AServedEvent>;

/** What the server keeps of a task it serves (a file, or a KV entry with `--nats`). */
export const A2AServedTask = z.strictObject({
  version: z.literal(1),
  /** The protocol's Task in its v1.0 JSON form. */
  task: JsonObject,
  /** The run carrying the task (null: the task failed before one started). */
  runId: z.string().nullable(),
  workspace: z.string(),
  agent: z.string(),
  /** Run events already turned into A2A events (their ids), so that a resumed run does not repeat them. */
  facts: z.array(z.string()),
  /** The person's item the task waits for (INPUT_REQUIRED / AUTH_REQUIRED). */
  waitingFor: z.object({ id: z.string(), kind: z.enum(['permission', 'question']), title: z.string().optional() }).nullable(),
  /** The last event folded into `task`: the events after it (in the task's log) are folded in when it is read. */
  seq: z.number().int().min(0),
  updatedAt: z.number(),
});
export type A2AServedTask = z.infer<typeof A2AServedTask>;

/** Where a bearer token for a remote A2A agent comes from: an environment variable or the secrets file. */
export const RemoteAgentToken = z.union([
  z.strictObject({ env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name (A-Z, 0-9, _)') }),
  z.strictObject({ secret: z.string().min(1).max(128) }),
]);

/** An agent file's `remote:`: the agent is a remote A2A agent, reached at its card's URL. */
export const RemoteAgentConfig = z.strictObject({
  /** The agent card's URL, or the server's base URL (the card is then at /.well-known/agent-card.json). */
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
  token: RemoteAgentToken.optional(),
  /** How long one remote task may take before it is cancelled and reported failed (default 10 minutes). */
  timeoutMs: z.number().int().min(100).max(86_400_000).optional(),
  /** How long the server may stay silent while the task runs before the stream counts as broken (default 2 minutes). */
  silenceMs: z.number().int().min(100).max(3_600_000).optional(),
});
export type RemoteAgentConfig = z.infer<typeof RemoteAgentConfig>;
