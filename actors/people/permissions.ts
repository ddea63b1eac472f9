/**
 * The permission matrix (seed 000, phase 5 and appendix): every action is `auto_approve`,
 * `ask_user` or `auto_deny`. Layers, later wins per action: built-in defaults →
 * `.github/agents/orchestrator/permissions.md` → the config file's `permissions` section.
 *
 * Levels (seed 000, phase 3): a session's level is the set of actions it may do without asking.
 * A worker's level is the matrix's `auto_approve` list; a sub-task inherits its parent's level,
 * narrowed by `auto_approve_for_subtasks`. An action outside a session's level is asked of its
 * parent, which approves it within its own level or passes it on, up to the orchestrator, which
 * applies the matrix and asks a human for `ask_user`.
 */
import { z } from 'zod';
import { PermissionAction, PermissionTier, type SessionSpec } from '../../machines/protocol/index.js';
import { A2AError, nearest } from '../errors.js';
import type { PermissionAnswer, PermissionAsk } from '../tools/types.js';

export const Tier = PermissionTier;
export type Tier = PermissionTier;

/** Never allowed, whatever the configuration says (seed 000: auto_deny; issue: always denied). */
export const ALWAYS_DENIED: ReadonlySet<PermissionAction> = new Set(['edits_outside_worktree', 'force_push', 'delete_main_branch']);

/**
 * Seed 000 appendix, plus pushes and network access. Commands and deletions ask a person, as the
 * seed's matrix has them: a workspace approves them in its own permissions when it wants.
 */
export const DEFAULT_MATRIX: Readonly<Record<PermissionAction, Tier>> = {
  file_edits_in_worktree: 'auto_approve',
  file_creation_in_worktree: 'auto_approve',
  file_deletion_in_worktree: 'ask_user',
  command_execution: 'ask_user',
  network_access: 'ask_user',
  subtask_spawning: 'auto_approve',
  agent_reassignment: 'auto_approve',
  model_switch_same_tier: 'auto_approve',
  pr_creation: 'ask_user',
  branch_merge: 'ask_user',
  branch_push: 'ask_user',
  model_switch_expensive: 'ask_user',
  worktree_cleanup: 'ask_user',
  edits_outside_worktree: 'auto_deny',
  delete_main_branch: 'auto_deny',
  force_push: 'auto_deny',
  // a program's own tools run as its code does; an MCP server's tools are somebody else's code
  custom_tool: 'auto_approve',
  mcp_tool: 'ask_user',
  // what a server says of its tools (annotations) and its questions: reading needs nobody, a
  // destructive tool or a question for the user asks a person
  mcp_tool_read_only: 'auto_approve',
  mcp_tool_destructive: 'ask_user',
  mcp_elicitation: 'ask_user',
  remote_agent_delegation: 'ask_user',
};

/** The `permissions` section of a config file (and what permissions.md parses into). */
export const PermissionsLayer = z.strictObject({
  auto_approve: z.array(PermissionAction).optional(),
  ask_user: z.array(PermissionAction).optional(),
  auto_deny: z.array(PermissionAction).optional(),
  /** What a sub-task may do on its own: `true` = all of its parent's level. */
  auto_approve_for_subtasks: z.union([z.literal(true), z.array(PermissionAction)]).optional(),
  /** How long a human has to answer an `ask_user` request. */
  ask_user_timeout_ms: z.number().int().positive().optional(),
  /** What happens when nobody answers in time. */
  ask_user_default: z.enum(['deny', 'approve']).optional(),
});
export type PermissionsLayer = z.infer<typeof PermissionsLayer>;

export interface PermissionPolicy {
  matrix: Record<PermissionAction, Tier>;
  subtaskGrant: true | PermissionAction[];
  askUserTimeoutMs: number;
  askUserDefault: 'deny' | 'approve';
}

export const DEFAULT_ASK_USER_TIMEOUT_MS = 300_000;

/** Folds the layers into one policy; an action named twice in one layer, or an always-denied action moved, is an error. */
export function buildPolicy(layers: Array<{ source: string; layer: PermissionsLayer }>): PermissionPolicy {
  const matrix: Record<PermissionAction, Tier> = { ...DEFAULT_MATRIX };
  let subtaskGrant: true | PermissionAction[] = true;
  let askUserTimeoutMs = DEFAULT_ASK_USER_TIMEOUT_MS;
  let askUserDefault: 'deny' | 'approve' = 'deny';
  for (const { source, layer } of layers) {
    const seen = new Map<PermissionAction, Tier>();
    for (const tier of Tier.options) {
      for (const action of layer[tier] ?? []) {
        const before = seen.get(action);
        if (before && before !== tier) {
          throw new A2AError('CONFIGURATION_INVALID', `${source}: ${action} is listed under both ${before} and ${tier}; list each action once`);
        }
        if (ALWAYS_DENIED.has(action) && tier !== 'auto_deny') {
          throw new A2AError('CONFIGURATION_INVALID', `${source}: ${action} is always denied and cannot be moved to ${tier}`);
        }
        seen.set(action, tier);
        matrix[action] = tier;
      }
    }
    if (layer.auto_approve_for_subtasks !== undefined) subtaskGrant = layer.auto_approve_for_subtasks;
    if (layer.ask_user_timeout_ms !== undefined) askUserTimeoutMs = layer.ask_user_timeout_ms;
    if (layer.ask_user_default !== undefined) askUserDefault = layer.ask_user_default;
  }
  return { matrix, subtaskGrant, askUserTimeoutMs, askUserDefault };
}

export function tierOf(policy: PermissionPolicy, action: PermissionAction): Tier {
  return ALWAYS_DENIED.has(action) ? 'auto_deny' : policy.matrix[action];
}

/** A worker's level: what the orchestrator approves without asking anyone. */
export function workerLevel(policy: PermissionPolicy): PermissionAction[] {
  return PermissionAction.options.filter((a) => tierOf(policy, a) === 'auto_approve');
}

/** A sub-task's level: its parent's, narrowed by `auto_approve_for_subtasks`. */
export function subtaskLevel(parentLevel: readonly PermissionAction[], grant: true | readonly PermissionAction[]): PermissionAction[] {
  return grant === true ? [...parentLevel] : parentLevel.filter((a) => grant.includes(a));
}

// ---------------------------------------------------------------------------------------------
// permissions.md

const HEADINGS: Array<[RegExp, Tier | 'subtasks' | 'limits']> = [
  [/^auto[- ]approve\s+for\s+sub[- ]?tasks\b/i, 'subtasks'],
  [/^auto[- ]approve\b/i, 'auto_approve'],
  [/^ask[- ]user\b/i, 'ask_user'],
  [/^auto[- ]deny\b/i, 'auto_deny'],
  [/^limits\b/i, 'limits'],
];

/** Limits of the appendix, mapped to the run configuration's names. */
const LIMIT_KEYS: Record<string, string> = {
  max_subtask_depth: 'maxDepth',
  max_subtasks_per_worker: 'maxSubtasksPerWorker',
  max_parallel_subtasks: 'maxParallelSubtasks',
  subtask_spawn_rate_limit: 'spawnRatePerMinute',
};
const POLICY_KEYS = ['ask_user_timeout_ms', 'ask_user_default'];

export interface ParsedPermissionsFile {
  layer: PermissionsLayer;
  /** Limits in the run configuration's names (`maxDepth`, …). */
  limits: Record<string, number>;
}

/**
 * Parses the appendix format: YAML frontmatter (`version: 1`), then `## Auto-Approve`,
 * `## Ask User`, `## Auto-Deny` (and `## Auto-Approve for Sub-Tasks`) with `- action  # comment`
 * items, and `## Limits` with `key: value  # comment` lines. Errors name the file and line.
 */
export function parsePermissionsMarkdown(text: string, file: string): ParsedPermissionsFile {
  const lines = text.split(/\r?\n/);
  const fail = (line: number, message: string): never => {
    throw new A2AError('CONFIGURATION_INVALID', `${file}:${line}: ${message}`, { where: `${file}:${line}` });
  };
  let i = 0;
  const limits: Record<string, number> = {};
  const policy: Record<string, unknown> = {};
  /** A `key: value` of the frontmatter or of `## Limits`: checked the same way in both places. */
  const setting = (line: number, key: string, value: string, where: string) => {
    if (key in LIMIT_KEYS) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0) fail(line, `${key} must be a whole number >= 0, got "${value}"`);
      limits[LIMIT_KEYS[key]!] = n;
    } else if (key === 'ask_user_timeout_ms') {
      const n = Number(value);
      if (!Number.isInteger(n) || n <= 0) fail(line, `ask_user_timeout_ms must be a whole number of milliseconds > 0, got "${value}"`);
      policy[key] = n;
    } else if (key === 'ask_user_default') {
      if (value !== 'deny' && value !== 'approve') fail(line, `ask_user_default must be deny or approve, got "${value}"`);
      policy[key] = value;
    } else {
      const allowed = where === 'frontmatter' ? ['version', ...Object.keys(LIMIT_KEYS), ...POLICY_KEYS] : [...Object.keys(LIMIT_KEYS), ...POLICY_KEYS];
      const near = nearest(key, allowed);
      fail(line, `unknown ${where === 'frontmatter' ? 'frontmatter key' : 'limit'} "${key}"${near ? ` (did you mean "${near}"?)` : ''}. Allowed: ${allowed.join(', ')}`);
    }
  };
  if (lines[0]?.trim() === '---') {
    const end = lines.findIndex((l, n) => n > 0 && l.trim() === '---');
    if (end < 0) fail(1, 'the frontmatter starting here has no closing "---"');
    for (let n = 1; n < end; n++) {
      if (!lines[n]!.trim() || lines[n]!.trim().startsWith('#')) continue;
      const m = /^\s*([A-Za-z_]+)\s*:\s*(.*?)\s*(#.*)?$/.exec(lines[n]!);
      if (!m) fail(n + 1, `expected "key: value" in the frontmatter`);
      const value = m![2]!.replace(/^(["'])(.*)\1$/, '$2');
      if (m![1] === 'version') {
        if (value !== '1') fail(n + 1, `unsupported version ${value}; supported: 1`);
      } else {
        setting(n + 1, m![1]!, value, 'frontmatter');
      }
    }
    i = end + 1;
  }
  const tiers: Record<Tier, PermissionAction[]> = { auto_approve: [], ask_user: [], auto_deny: [] };
  const firstSeen = new Map<string, number>();
  let subtasks: PermissionAction[] | null = null;
  let section: Tier | 'subtasks' | 'limits' | null = null;
  for (; i < lines.length; i++) {
    const raw = lines[i]!;
    const line = raw.replace(/\s+#.*$/, '').trim();
    if (!line || line.startsWith('<!--')) continue;
    if (/^#\s/.test(line)) continue; // the document title
    const heading = /^#{2,}\s+(.*)$/.exec(line);
    if (heading) {
      const found = HEADINGS.find(([re]) => re.test(heading[1]!.trim()));
      if (!found) fail(i + 1, `unknown section "${heading[1]}". Sections: Auto-Approve, Ask User, Auto-Deny, Auto-Approve for Sub-Tasks, Limits`);
      section = found![1];
      if (section === 'subtasks') subtasks ??= [];
      continue;
    }
    if (section === null) fail(i + 1, `"${line}" is outside any section; start a section with "## Auto-Approve", "## Ask User", "## Auto-Deny" or "## Limits"`);
    if (section === 'limits') {
      const m = /^([a-z_]+)\s*:\s*(\S+)$/.exec(line);
      if (!m) fail(i + 1, `expected "key: value" in Limits, got "${line}"`);
      const [, key, value] = m!;
      setting(i + 1, key!, value!, 'limits');
      continue;
    }
    const item = /^[-*]\s+`?([a-z_]+)`?$/.exec(line);
    if (!item) fail(i + 1, `expected a list item "- action" , got "${line}"`);
    const parsed = PermissionAction.safeParse(item![1]);
    if (!parsed.success) fail(i + 1, `unknown action "${item![1]}". Allowed actions: ${PermissionAction.options.join(', ')}`);
    const action = parsed.data!;
    if (section === 'subtasks') {
      subtasks!.push(action);
      continue;
    }
    if (firstSeen.has(action)) fail(i + 1, `${action} is already listed on line ${firstSeen.get(action)}; list each action once`);
    firstSeen.set(action, i + 1);
    tiers[section as Tier].push(action);
  }
  const layer = PermissionsLayer.safeParse({
    ...tiers,
    ...(subtasks ? { auto_approve_for_subtasks: subtasks } : {}),
    ...policy,
  });
  if (!layer.success) {
    throw new A2AError('CONFIGURATION_INVALID', `${file}: ${layer.error.issues.map((x) => `${x.path.join('.')}: ${x.message}`).join('; ')}`);
  }
  return { layer: layer.data, limits };
}

// ---------------------------------------------------------------------------------------------
// The gate tools call (a session's own level); what is outside it goes up the tree.

export type PermissionGate = (spec: SessionSpec, ask: PermissionAsk) => Promise<PermissionAnswer>;

/** The decision a session can take alone: within its level → approved; always-denied → denied. */
export function decideLocally(spec: Pick<SessionSpec, 'permissions'>, ask: PermissionAsk): PermissionAnswer | null {
  if (ALWAYS_DENIED.has(ask.action)) return { approved: false, decidedBy: 'policy', reason: `${ask.action} is never allowed` };
  if (!ask.needsPerson && spec.permissions.level.includes(ask.action)) return { approved: true, decidedBy: 'policy' };
  return null;
}

/** The permissions part of a worker's spec under a policy. */
export function workerPermissions(policy: PermissionPolicy): SessionSpec['permissions'] {
  return { level: workerLevel(policy), forSubtasks: policy.subtaskGrant };
}

/** The permissions part of a child's spec: its parent's level, narrowed; the grant passes down. */
export function childPermissions(parent: SessionSpec['permissions']): SessionSpec['permissions'] {
  return { level: subtaskLevel(parent.level, parent.forSubtasks), forSubtasks: parent.forSubtasks };
}

/** For sessions run without an orchestrator to ask: decide what is local, refuse the rest. */
export const defaultGate: PermissionGate = async (spec, ask) =>
  decideLocally(spec, ask) ?? { approved: false, decidedBy: 'policy', reason: `${ask.action} is outside this session's permission level and nobody can approve it here` };
