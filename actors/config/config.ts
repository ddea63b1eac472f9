/**
 * The run configuration, validated in one place with its defaults. Layers, later wins field by
 * field: defaults → workspace file → user file → the plan's `config` → command-line flags.
 */
import { z } from 'zod';
import { IdleConfig, Limits, type OrchestratorPolicy } from '../../machines/protocol/index.js';
import { A2AError, describeIssues } from '../errors.js';
import { buildPolicy, PermissionsLayer, type PermissionPolicy } from '../people/permissions.js';
import { ModelsConfig, ProfileName, validateModelsConfig } from './profiles.js';

export const DEFAULT_POLICY_ANSWER =
  'No one is available to answer questions in this run. Proceed with your best judgement and state the assumptions you make in your result.';
export const DEFAULT_STUCK_MESSAGE =
  'You appear to be stuck: you repeated the same step, or many steps made no progress. Stop repeating it. Re-read the task, try a different approach, and if you are blocked, say what blocks you and finish with a partial result.';

/**
 * Environment variables that hold credentials: never passed to commands, whatever the
 * configuration says (API keys, NATS credentials, tokens, passwords).
 */
const SECRET_ENV = [/_API_KEY$/i, /^A2A_NATS_/i, /(^|_)TOKEN$/i, /SECRET/i, /PASSW(OR)?D/i, /^AWS_ACCESS_KEY_ID$/i, /_PRIVATE_KEY$/i, /CREDENTIALS?$/i];

/** Why `name` may not be passed to commands, or null when it may. */
export function secretEnvName(name: string): string | null {
  return SECRET_ENV.some((re) => re.test(name)) ? `${name} holds a credential (API keys, NATS credentials, tokens and passwords are never passed to commands)` : null;
}

const EnvName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name (letters, digits, "_")')
  .superRefine((name, ctx) => {
    const secret = secretEnvName(name);
    if (secret) ctx.addIssue({ code: 'custom', message: secret });
  });

/** The standard roles of the SDLC workflow (seed 003); a configuration may add custom ones. */
export const STANDARD_ROLES = ['architect', 'primaryCoder', 'secondaryCoder', 'sceptic', 'documentationWriter', 'debugger'] as const;
export type StandardRole = (typeof STANDARD_ROLES)[number];

export const RoleName = z.string().regex(/^[a-z][A-Za-z0-9-]{0,63}$/, 'a role name: a lowercase letter, then letters, digits or "-" (e.g. "sceptic", "securityReviewer")');

/** A role: the agent type that plays it and, optionally, the model profile it runs on. A bare string is the profile. */
export const RoleAssignment = z.union([
  ProfileName.transform((profile) => ({ profile })),
  z.strictObject({
    /** Agent type (`@code-sceptic`, `claude:@reviewer` …); the role's built-in agent when absent. */
    agent: z.string().min(1).optional(),
    /** Model profile (models.profiles); the agent's assignment when absent. */
    profile: ProfileName.optional(),
    /** What the role does, for the organiser's context (custom roles). */
    description: z.string().min(1).max(500).optional(),
  }),
]);
export type RoleAssignment = z.infer<typeof RoleAssignment>;

/** The organiser's SDLC workflow (`a2a run --workflow sdlc`). */
export const WorkflowConfig = z.strictObject({
  /** Role → agent and profile (`{ "sceptic": "claude-reviewer" }`); unlisted standard roles use their built-in agent. */
  roles: z.record(RoleName, RoleAssignment).default({}),
  /** The organiser's own model profile; the default profile when absent. */
  organiser: z.strictObject({ profile: ProfileName.optional() }).prefault({}),
  /** Roles that review the plan and the code (each in parallel); a custom role listed here reviews too. */
  reviewers: z.array(RoleName).min(1).default(['sceptic']),
  /** Plan revisions allowed before the workflow stops in ERROR (rounds exhausted). */
  maxPlanRevisions: z.number().int().min(0).max(20).default(2),
  /** Code fixing rounds (after a review or failed tests) allowed before the workflow stops in ERROR. */
  maxFixRounds: z.number().int().min(0).max(20).default(3),
  /** Secondary coders implementing files in parallel, at most. */
  secondaryCoders: z.number().int().min(1).max(16).default(2),
  /** Times the organiser may answer `wait` in a row before the step counts as failed (ERROR). */
  maxWaits: z.number().int().min(0).max(50).default(3),
  /** The command the debugger runs the tests with (a hint in its brief). */
  testCommand: z.string().min(1).max(500).optional(),
  /** A workflow in ERROR: `stop` ends the run (failed); `wait` keeps it for `a2a retry`, `a2a resume` or `a2a stop`. */
  onError: z.enum(['stop', 'wait']).default('stop'),
  /** How long the organiser's `wait` lasts before it is asked again (ms). */
  waitMs: z.number().int().min(0).max(3_600_000).default(5_000),
  /** Artifacts untouched this many hours are archived: out of the organiser's context, still readable. */
  archiveAfterHours: z.number().positive().max(8_760).default(24),
});
export type WorkflowConfig = z.infer<typeof WorkflowConfig>;

/** How run_command's commands are confined. */
export const SandboxConfig = z.strictObject({
  /** `bubblewrap`: each command in a bwrap sandbox (default). `none`: unconfined; every command then asks a person. */
  mode: z.enum(['bubblewrap', 'none']).default('bubblewrap'),
  /** Environment variables passed to commands besides PATH, LANG, LC_*, TERM, TZ (never credentials). */
  env: z.array(EnvName).default([]),
  /** Host paths commands may read besides the system (a toolchain outside /usr, e.g. ~/.nvm). */
  readOnlyPaths: z.array(z.string().refine((p) => p.startsWith('/'), 'expected an absolute path')).default([]),
  /**
   * A checkout's `.git` directory (agents working in the checkout itself, worktrees off) writable
   * by commands, but for its config and hooks; absent or false: all of it read-only (git status,
   * diff and log work; commits do not). Linked worktrees are not concerned.
   */
  gitWritable: z.boolean().optional(),
  /**
   * Files of the worktree that share their inode with a file outside it (hard links): `mask`
   * (the default when absent: they read as empty in the sandbox) or `allow` (no scan: commands
   * read and write them, e.g. a pnpm node_modules linked to its store).
   */
  outsideHardLinks: z.enum(['mask', 'allow']).optional(),
  /**
   * What each command may use (adapters/sandbox/limits.ts): memory per process, processes and
   * threads at once, the largest file written, the size of /tmp, and how much the disk holding
   * the worktree may fill while it runs (MB; diskMB is 10240 when absent).
   */
  limits: z
    .strictObject({
      memoryMB: z.number().int().min(16).max(1_048_576).default(4096),
      processes: z.number().int().min(4).max(1_000_000).default(512),
      fileMB: z.number().int().min(1).max(1_048_576).default(1024),
      tmpMB: z.number().int().min(1).max(1_048_576).default(512),
      diskMB: z.number().int().min(1).max(1_073_741_824).optional(),
    })
    .prefault({}),
});
export type SandboxConfig = z.infer<typeof SandboxConfig>;

export const RunConfig = z.strictObject({
  limits: Limits.prefault({}),
  idle: IdleConfig.prefault({}),
  /** Agent type for tasks and prompts that name none. */
  defaultAgent: z.string().min(1).default('@agent'),
  model: z
    .strictObject({
      /** Scripted-model script (JSON), relative to the file that names it. */
      script: z.string().optional(),
      /** Where API keys are read when their environment variable is unset (JSON: {"openai": "...", "anthropic": "..."}). */
      secretsFile: z.string().optional(),
    })
    .prefault({}),
  /** Model profiles (provider, model, base URL …), their assignment to agents and task types, prices and budgets. */
  models: ModelsConfig.prefault({}),
  /** Agent overrides by name (the user config's layer of the registry). */
  agents: z.record(z.string(), z.unknown()).optional(),
  /** Permission matrix overrides (after .github/agents/orchestrator/permissions.md). */
  permissions: PermissionsLayer.optional(),
  /** Worktrees and what happens to a finished worker's branch. */
  git: z
    .strictObject({
      /** `auto`: a worktree per worker when the workspace is a git repository. */
      worktrees: z.enum(['auto', 'on', 'off']).default('auto'),
      /** The branch worktrees start from and merge into (default: the checked-out branch). */
      base: z.string().min(1).optional(),
      /** When a worker finishes: merge its branch, push it and open a PR, have it reviewed, or keep it. */
      onComplete: z.enum(['merge', 'pr', 'review', 'keep']).default('merge'),
      /** The agent that reviews a branch (`onComplete: review`). */
      reviewer: z.string().min(1).default('@reviewer'),
      /** Change requests (conflicts, reviews) a task may go through before it is given up. */
      maxRounds: z.number().int().min(0).default(2),
      remote: z.string().min(1).default('origin'),
      /** Where `pr` opens pull requests; the token is read from the environment variable named. */
      github: z
        .strictObject({
          repo: z.string().regex(/^[\w.-]+\/[\w.-]+$/, 'expected "owner/name"'),
          tokenEnv: z.string().min(1).default('GITHUB_TOKEN'),
          apiUrl: z.url().optional(),
        })
        .optional(),
    })
    .prefault({}),
  /** The sandbox of run_command: mode, the environment commands see, extra read-only paths. */
  sandbox: SandboxConfig.prefault({}),
  /** Tool calls with effects outside the run (see docs/guide/durability.md, "Durable effects"). */
  effects: z
    .strictObject({
      /**
       * A call that had started when the process stopped, with no recorded result: `report` (the
       * model is told its outcome is unknown), or `ask` (a person decides whether it runs again,
       * through the inbox like a permission).
       */
      inDoubt: z.enum(['report', 'ask']).default('report'),
      /** `false`: no effect journal (a restored step runs again: a model call is paid again, a tool call repeated). */
      journal: z.boolean().default(true),
    })
    .prefault({}),
  /** The organiser's SDLC workflow: roles, reviewers, revision and fixing bounds. */
  workflow: WorkflowConfig.prefault({}),
  /** How the orchestrator answers questions and treats stuck workers. */
  orchestrator: z
    .strictObject({
      /** Who answers a worker's question: `policy` (the fixed answer below), `model` (the orchestrator's model), `human`. */
      questions: z.enum(['policy', 'model', 'human']).default('policy'),
      policyAnswer: z.string().min(1).default(DEFAULT_POLICY_ANSWER),
      /** How long a human has to answer a question before the policy answer is sent. */
      questionTimeoutMs: z.number().int().positive().default(300_000),
      /** What a stuck report leads to. */
      onStuck: z.enum(['redirect', 'none']).default('redirect'),
      stuckMessage: z.string().min(1).default(DEFAULT_STUCK_MESSAGE),
      /** Redirects of one worker before the next stuck report restarts it (reinitialize). */
      reinitializeAfter: z.number().int().min(1).default(2),
    })
    .prefault({}),
});
export type RunConfig = z.infer<typeof RunConfig>;
/** Settings as written (a2a.config.json, or `settings` in code): every field with a default may be left out. */
export type Settings = z.input<typeof RunConfig>;

export type ConfigLayer = Record<string, unknown>;

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deep merge of plain objects; arrays and scalars of later layers replace earlier ones. */
export function mergeLayers(layers: ConfigLayer[]): ConfigLayer {
  const out: ConfigLayer = {};
  for (const layer of layers) {
    for (const [key, value] of Object.entries(layer)) {
      if (value === undefined) continue;
      const prev = out[key];
      out[key] = isPlainObject(prev) && isPlainObject(value) ? mergeLayers([prev, value]) : value;
    }
  }
  return out;
}

/** Validates merged layers; the error names the field, the allowed values and where layers came from. */
export function parseConfig(layers: Array<{ source: string; data: ConfigLayer }>): RunConfig {
  for (const { source, data } of layers) {
    // a layer's models section, with messages that name the profile and the allowed keys
    if (data.models !== undefined) validateModelsConfig(data.models, source, { references: false });
  }
  for (const { source, data } of layers) {
    // validate each layer alone first, so that the error names the file at fault
    const alone = RunConfig.safeParse(data);
    if (!alone.success) {
      throw new A2AError('CONFIGURATION_INVALID', `${source}: invalid configuration:\n${describeIssues(alone.error.issues)}`, { where: source });
    }
  }
  const merged = RunConfig.safeParse(mergeLayers(layers.map((l) => l.data)));
  if (!merged.success) {
    throw new A2AError('CONFIGURATION_INVALID', `invalid configuration:\n${describeIssues(merged.error.issues)}`);
  }
  // one layer may assign a profile another defines: the references are checked once merged
  validateModelsConfig(merged.data.models, layers.map((l) => l.source).join(' + ') || 'configuration');
  const tokenEnv = merged.data.git.github?.tokenEnv;
  if (tokenEnv && merged.data.sandbox.env.includes(tokenEnv)) {
    const source = layers.find((l) => ((l.data.sandbox as { env?: unknown } | undefined)?.env as unknown[] | undefined)?.includes(tokenEnv))?.source ?? 'configuration';
    throw new A2AError('CONFIGURATION_INVALID', `${source}: invalid configuration:\n  - sandbox.env: ${tokenEnv} is git.github.tokenEnv, a credential: it is never passed to commands`, { where: source });
  }
  return merged.data;
}

/** The orchestrator's policy: the permission matrix and the `orchestrator` section. */
export function orchestratorPolicy(config: RunConfig, permissions: PermissionPolicy = buildPolicy([])): OrchestratorPolicy {
  const o = config.orchestrator;
  return {
    permissions: { matrix: permissions.matrix, askUserTimeoutMs: permissions.askUserTimeoutMs, askUserDefault: permissions.askUserDefault },
    questions: { answerBy: o.questions, policyAnswer: o.policyAnswer, humanTimeoutMs: o.questionTimeoutMs },
    stuck: { action: o.onStuck, message: o.stuckMessage, reinitializeAfter: o.reinitializeAfter },
  };
}
