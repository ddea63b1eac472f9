/**
 * Permissions (seed 000), the orchestrator's policy and its human channel: the requests that bubble up and the decisions that come back.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { Correlation } from './common.js';

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
  /** An MCP tool its server annotates `readOnlyHint: true` (auto-approved by default), and the resources and prompts a server offers. */
  'mcp_tool_read_only',
  /** An MCP tool its server annotates `destructiveHint: true` (asks a person by default). */
  'mcp_tool_destructive',
  /** An MCP server asks for input during a call (elicitation): who answers it (ask_user: a person; auto_approve: the server's defaults; auto_deny: declined). */
  'mcp_elicitation',
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
  mcp_tool_read_only: 'external_tools',
  mcp_tool_destructive: 'external_tools',
  mcp_elicitation: 'external_tools',
  remote_agent_delegation: 'remote_agents',
};

/**
 * What an MCP server asks a person during a call (`mcp_elicitation`): its message and the flat
 * JSON Schema of the answer it wants (MCP's restricted elicitation schema).
 */
export const ElicitationAsk = z.object({
  server: z.string(),
  /** The tool (or `read_resource`, `get_prompt`) whose call asks. */
  tool: z.string(),
  message: z.string(),
  requestedSchema: z.record(z.string(), z.unknown()),
});
export type ElicitationAsk = z.infer<typeof ElicitationAsk>;

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
  /** An MCP server's question (action `mcp_elicitation`): approving answers it with the decision's `text` (JSON content). */
  elicitation: ElicitationAsk.optional(),
});
export type PermissionRequest = z.infer<typeof PermissionRequest>;

export const PermissionDecision = z.object({
  requestId: z.string(),
  approved: z.boolean(),
  decidedBy: z.enum(['policy', 'parent', 'orchestrator', 'human', 'timeout']),
  /** Which session or person decided. */
  decider: z.string(),
  reason: z.string().optional(),
  /** A person's answer in words (an `mcp_elicitation` answered: the content, as JSON or a single value). */
  text: z.string().optional(),
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
    /**
     * The protocol revision: `auto` (default) asks the server (`server/discover`, 2026-07-28) and
     * falls back to `initialize` (earlier revisions); `2026-07-28` or `legacy` skip the probe.
     */
    protocol: z.enum(['auto', '2026-07-28', 'legacy']).default('auto'),
    /** Who answers this server's questions (elicitation), over the matrix's mcp_elicitation. */
    elicitation: PermissionTier.optional(),
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
