/**
 * Provider profiles and role assignments (seed 003 "Dynamic Role Assignment": users configure
 * provider profiles and assign them to roles). A profile names a provider, a model and its
 * settings; the `models` config section assigns profiles to agents, task types and backends.
 * Pure: validating the section and deciding which profile a session runs on. Building the model
 * client from a profile is adapters/model/factory.ts.
 */
import { z } from 'zod';
import type { AgentCapability, ParsedAgentType } from '../../machines/protocol/index.js';
import { Price, priceOf } from '../observation/cost.js';
import { A2AError, describeIssues } from '../errors.js';

/** `google`: Gemini, through Google's OpenAI-compatible endpoint (the OpenAI SDK; key GEMINI_API_KEY). */
export const ProviderKind = z.enum(['openai', 'anthropic', 'google', 'scripted']);
export type ProviderKind = z.infer<typeof ProviderKind>;

/** Cost tiers, cheapest first: switching to a higher one needs `model_switch_expensive`. */
export const CostTier = z.enum(['small', 'standard', 'large']);
export type CostTier = z.infer<typeof CostTier>;

export const ProfileName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a profile name is letters, digits, ".", "_" and "-", starting with a letter or digit');

export const Profile = z.strictObject({
  provider: ProviderKind,
  /** The provider's model name, e.g. `gpt-4.1` or `claude-sonnet-4-20250514`. */
  model: z.string().min(1),
  /** An OpenAI-compatible server or a proxy; the provider's own API when absent. */
  baseURL: z.url().optional(),
  maxTokens: z.number().int().positive().optional(),
  /**
   * The most output tokens the model can give. A reply cut by `maxTokens` is asked again with
   * twice the limit, up to this; without it the limit stays and the model is asked to be shorter.
   */
  maxOutputTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** Tokens the model accepts, so that long conversations are summarized before they overflow. */
  contextWindow: z.number().int().positive().optional(),
  /** Cost tier, for the `model_switch_expensive` permission; the price decides when absent. */
  tier: CostTier.optional(),
  /** Per HTTP attempt. */
  timeoutMs: z.number().int().positive().optional(),
  /** Retries after the first attempt (done by the provider SDK). */
  maxRetries: z.number().int().min(0).max(10).optional(),
});
export type Profile = z.infer<typeof Profile>;

const Assign = z.strictObject({
  /** Agent name (registry key, without `@`) → profile. */
  agents: z.record(z.string().min(1), ProfileName).optional(),
  /** Task type → profile. */
  taskTypes: z.record(z.string().min(1), ProfileName).optional(),
  /** Which profile `claude:…` and `openai:…` agent types run on. */
  backends: z.strictObject({ claude: ProfileName.optional(), openai: ProfileName.optional() }).optional(),
});

const Budgets = z.strictObject({
  /** USD the whole run may spend. */
  runUsd: z.number().positive().optional(),
  /** USD one worker may spend, its sub-tasks included. */
  workerUsd: z.number().positive().optional(),
});

/** The `models` section of the run configuration. */
export const ModelsConfig = z.strictObject({
  profiles: z.record(ProfileName, Profile).default({}),
  /** The profile of agents nothing else assigns; the built-in `scripted` one when absent. */
  default: ProfileName.optional(),
  assign: Assign.optional(),
  /** USD per million tokens by model name; overrides the built-in table of actors/observation/cost.ts. */
  prices: z.record(z.string().min(1), Price).optional(),
  budgets: Budgets.optional(),
});
export type ModelsConfig = z.infer<typeof ModelsConfig>;

/** The name of the profile used when nothing is configured. */
export const BUILTIN_PROFILE = 'scripted';
const BUILTIN: Profile = Object.freeze({ provider: 'scripted', model: 'scripted', tier: 'small' });

/** Keys allowed where zod found an unknown one, so that a typo's message lists the right ones. */
function allowedKeys(path: ReadonlyArray<PropertyKey>): string[] | undefined {
  const p = path.map(String);
  if (p.length === 0) return Object.keys(ModelsConfig.shape);
  if (p.length === 2 && p[0] === 'profiles') return Object.keys(Profile.shape);
  if (p.length === 1 && p[0] === 'assign') return Object.keys(Assign.shape);
  if (p.length === 2 && p[0] === 'assign' && p[1] === 'backends') return ['claude', 'openai'];
  if (p.length === 2 && p[0] === 'prices') return Object.keys(Price.shape);
  if (p.length === 1 && p[0] === 'budgets') return Object.keys(Budgets.shape);
  return undefined;
}

/** The profiles a name may be: those configured, and the built-in one (unless a configured one replaces it). */
export function profileNames(config: ModelsConfig): string {
  const configured = Object.keys(config.profiles);
  const builtin = Object.hasOwn(config.profiles, BUILTIN_PROFILE) ? [] : [`${BUILTIN_PROFILE} (built in)`];
  return `profiles: ${[...configured, ...builtin].join(', ')}${configured.length ? '' : '; none is configured'}`;
}


/** The profile called `name`: configured, or the built-in `scripted`. */
export function profileNamed(config: ModelsConfig, name: string): Profile | undefined {
  if (Object.hasOwn(config.profiles, name)) return config.profiles[name];
  return name === BUILTIN_PROFILE ? BUILTIN : undefined;
}

/**
 * The `models` section validated (`undefined`: no section), with cross-checks zod cannot do:
 * every profile named by `default` and `assign` exists, and backends point at their provider.
 * One layer may assign a profile another layer defines: check a single layer with
 * `references: false`, and the merged section with the references.
 */
export function validateModelsConfig(data: unknown, source: string, options: { references?: boolean } = {}): ModelsConfig {
  const parsed = ModelsConfig.safeParse(data ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => {
      const allowed = issue.code === 'unrecognized_keys' ? allowedKeys(issue.path) : undefined;
      return { path: ['models', ...issue.path], message: allowed ? `${issue.message} (allowed: ${allowed.join(', ')})` : issue.message };
    });
    throw new A2AError('CONFIGURATION_INVALID', `${source}: invalid models configuration:\n${describeIssues(issues)}`, { where: source });
  }
  const config = parsed.data;
  if (options.references === false) return config;
  const problems: Array<{ path: PropertyKey[]; message: string }> = [];
  const check = (path: PropertyKey[], name: string | undefined, provider?: ProviderKind) => {
    if (name === undefined) return;
    const profile = profileNamed(config, name);
    if (!profile) problems.push({ path, message: `unknown profile "${name}" (${profileNames(config)})` });
    else if (provider && profile.provider !== provider) {
      problems.push({ path, message: `profile "${name}" has provider ${profile.provider}; this backend needs provider: ${provider}` });
    }
  };
  check(['models', 'default'], config.default);
  for (const [agent, name] of Object.entries(config.assign?.agents ?? {})) check(['models', 'assign', 'agents', agent], name);
  for (const [type, name] of Object.entries(config.assign?.taskTypes ?? {})) check(['models', 'assign', 'taskTypes', type], name);
  check(['models', 'assign', 'backends', 'claude'], config.assign?.backends?.claude, 'anthropic');
  check(['models', 'assign', 'backends', 'openai'], config.assign?.backends?.openai, 'openai');
  if (problems.length) {
    throw new A2AError('CONFIGURATION_INVALID', `${source}: invalid models configuration:\n${describeIssues(problems)}`, { where: source });
  }
  return config;
}

export interface ProfileQuery {
  agent: ParsedAgentType;
  /** The agent definition's `preferredModels`: used when they name a configured profile. */
  preferredModels?: AgentCapability['preferredModels'];
  taskType?: string | undefined;
  /** `--model`, the plan task's or the spawn tool's `model`: a profile name or a bare model name. */
  override?: string | undefined;
}

/** Which rule picked the profile, for code; `why` says the same for people. */
export type ProfileSource = 'override' | 'backend' | 'taskType' | 'preferred' | 'agent' | 'default' | 'builtin';

export interface ResolvedProfile {
  /** The profile's name (for a bare model override: the profile it is run on), the model pool's key. */
  name: string;
  /** The settings to run with; `model` is the override's for a bare model name. */
  profile: Profile;
  via: ProfileSource;
  /** One short line for the tree view and the event log, e.g. `assigned to @reviewer`. */
  why: string;
}

const BACKEND_PROVIDER = { claude: 'anthropic', openai: 'openai', scripted: 'scripted' } as const;

/** The profile a `claude:` / `openai:` / `scripted:` agent type runs on, or null for `@name`. */
function backendProfile(config: ModelsConfig, agent: ParsedAgentType): ResolvedProfile | null {
  if (agent.backend === 'default') return null;
  const provider = BACKEND_PROVIDER[agent.backend];
  const assigned = agent.backend === 'scripted' ? undefined : config.assign?.backends?.[agent.backend];
  if (assigned !== undefined) {
    const profile = profileNamed(config, assigned);
    if (!profile) throw new A2AError('CONFIGURATION_INVALID', `models.assign.backends.${agent.backend} names unknown profile "${assigned}" (${profileNames(config)})`);
    return { name: assigned, profile, via: 'backend', why: `assigned to the ${agent.backend}: backend` };
  }
  const first = Object.entries(config.profiles).find(([, p]) => p.provider === provider);
  if (first) return { name: first[0], profile: first[1], via: 'backend', why: `first ${provider} profile, for ${agent.backend}:` };
  if (provider === 'scripted') return { name: BUILTIN_PROFILE, profile: BUILTIN, via: 'backend', why: 'built-in scripted model, for scripted:' };
  throw new A2AError(
    'CONFIGURATION_INVALID',
    `agent type "${agent.raw}" runs on ${provider}, but no ${provider} profile is configured: add one under models.profiles (provider: ${provider}) or set models.assign.backends.${agent.backend}`,
    { where: 'models.profiles' },
  );
}

function defaultProfile(config: ModelsConfig): ResolvedProfile {
  if (config.default !== undefined) {
    const profile = profileNamed(config, config.default);
    if (!profile) throw new A2AError('CONFIGURATION_INVALID', `models.default names unknown profile "${config.default}" (${profileNames(config)})`);
    return { name: config.default, profile, via: 'default', why: 'default profile' };
  }
  return { name: BUILTIN_PROFILE, profile: BUILTIN, via: 'builtin', why: 'built-in scripted model (no default profile)' };
}

/**
 * A bare model name: run on the configured profile of that model when there is one, else on the
 * profile the agent would get from its backend (`claude:` → an anthropic profile) or the default,
 * with the model swapped. Tier and context window describe the profile's model, so they are dropped.
 */
function bareModel(config: ModelsConfig, agent: ParsedAgentType, model: string): ResolvedProfile {
  const base = backendProfile(config, agent) ?? defaultProfile(config);
  const sameModel =
    base.profile.model === model ? base.name : Object.entries(config.profiles).find(([, p]) => p.model === model && p.provider !== 'scripted')?.[0];
  if (sameModel !== undefined) {
    return { name: sameModel, profile: profileNamed(config, sameModel)!, via: 'override', why: `model override "${model}" (profile ${sameModel})` };
  }
  if (base.profile.provider === 'scripted') {
    throw new A2AError(
      'VALIDATION_ERROR',
      `model "${model}" is not a profile (${profileNames(config)}), and it cannot run as a bare model name: it would run on the ${base.name} profile, whose provider is scripted. Use a profile name, or set models.default to an openai or anthropic profile.`,
      { where: 'model' },
    );
  }
  const { tier: _tier, contextWindow: _window, ...settings } = base.profile;
  return {
    name: base.name,
    profile: { ...settings, model },
    via: 'override',
    why: `model override "${model}" (on profile ${base.name}, ${base.profile.provider})`,
  };
}

/**
 * The profile a session runs on. First match wins: an explicit override; the backend of a
 * `claude:` / `openai:` agent type; the task type's assignment; the agent definition's preferred
 * model for the task type, then its default preference (only when it names a profile); the
 * agent's assignment; the default profile; the built-in scripted model.
 */
export function resolveProfile(config: ModelsConfig, query: ProfileQuery): ResolvedProfile {
  const { agent, preferredModels, taskType } = query;
  const override = query.override?.trim();
  if (override) {
    const profile = profileNamed(config, override);
    if (profile) return { name: override, profile, via: 'override', why: `model override (profile ${override})` };
    return bareModel(config, agent, override);
  }

  const backend = backendProfile(config, agent);
  if (backend) return backend;

  const pick = (name: string | undefined, via: ProfileSource, why: string, required: boolean): ResolvedProfile | null => {
    if (name === undefined) return null;
    const profile = profileNamed(config, name);
    if (profile) return { name, profile, via, why };
    if (required) throw new A2AError('CONFIGURATION_INVALID', `${why} names unknown profile "${name}" (${profileNames(config)})`);
    return null;
  };
  const byType = taskType !== undefined ? config.assign?.taskTypes?.[taskType] : undefined;
  const preferredForType = taskType !== undefined ? preferredModels?.byTaskType?.[taskType] : undefined;
  return (
    pick(byType, 'taskType', `assigned to task type "${taskType}"`, true) ??
    // an agent definition travels between workspaces: a preference for a profile not configured here is skipped
    pick(preferredForType, 'preferred', `preferred by @${agent.agentName} for task type "${taskType}"`, false) ??
    pick(preferredModels?.default, 'preferred', `preferred by @${agent.agentName}`, false) ??
    pick(config.assign?.agents?.[agent.agentName], 'agent', `assigned to @${agent.agentName}`, true) ??
    defaultProfile(config)
  );
}

const TIER_RANK: Record<CostTier, number> = { small: 0, standard: 1, large: 2 };

/**
 * Whether switching from `from` to `to` is a switch to a more expensive model (the
 * `model_switch_expensive` permission rather than `model_switch_same_tier`): a higher tier when
 * both have one; else a higher price per output token. When that cannot be told (a tier and a
 * price missing) it counts as more expensive, so that the stricter permission applies.
 */
export function isMoreExpensive(from: Profile, to: Profile, prices?: Readonly<Record<string, Price>>): boolean {
  if (from.provider === to.provider && from.model === to.model) return false;
  if (from.tier && to.tier && from.tier !== to.tier) return TIER_RANK[to.tier] > TIER_RANK[from.tier];
  const priceFrom = from.provider === 'scripted' ? 0 : priceOf(prices, from.model)?.outputPerMTok;
  const priceTo = to.provider === 'scripted' ? 0 : priceOf(prices, to.model)?.outputPerMTok;
  if (priceFrom !== undefined && priceTo !== undefined) return priceTo > priceFrom;
  // the same declared tier and no prices to compare: the user said they cost alike
  if (from.tier && from.tier === to.tier) return false;
  return true;
}
