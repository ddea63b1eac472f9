/**
 * The workflow's roles resolved against the agent registry and the model profiles, and the checks
 * only the workflow needs (seed 003 `validateConfiguration`): every role's agent is in the
 * registry, every profile a role or the organiser names exists, every reviewer is a role.
 * `parseConfig` cannot do these: the registry is loaded after the configuration, from files.
 * Pure: the caller loads the configuration and the registry (bin/commands/config.ts).
 */
import { STANDARD_ROLES, type ConfigLayer, type RunConfig, type StandardRole } from '../config/config.js';
import { BUILTIN_PROFILE, profileNamed, profileNames, resolveProfile } from '../config/profiles.js';
import type { AgentRegistry } from '../config/registry.js';

/** The agent that plays a standard role when the configuration names none. */
export const STANDARD_ROLE_AGENTS: Readonly<Record<StandardRole, string>> = {
  architect: '@architect',
  primaryCoder: '@coder',
  secondaryCoder: '@coder',
  sceptic: '@code-sceptic',
  documentationWriter: '@documentation-writer',
  debugger: '@debugger',
};

/** Seed 003 `ValidationResult`; warnings are always there (empty when none), so that scripts need no check. */
export interface ValidationResult {
  isValid: boolean;
  errors: string[];
  warnings: string[];
}

/** A role's assignment once parsed (a bare profile name is `{ profile }`). */
type RoleAssignment = { agent?: string; profile?: string; description?: string };

/** A role as a run would play it: the agent and the profile it gets, whoever set them. */
export interface EffectiveRole {
  agent: string;
  profile: string;
  description?: string;
  standard: boolean;
}

export interface WorkflowCheck {
  /** Every role that resolved, standard ones first (a role with an error is left out). */
  roles: Record<string, EffectiveRole>;
  /** The organiser's profile: its own, else the default profile, else the built-in one. */
  organiserProfile: string;
  result: ValidationResult;
}

const isStandard = (role: string): role is StandardRole => (STANDARD_ROLES as readonly string[]).includes(role);

/** The layer that set `path` last (or the nearest field above it), for messages that name a file. */
export function layerSource(layers: ReadonlyArray<{ source: string; data: ConfigLayer }>, path: ReadonlyArray<string>): string {
  for (let length = path.length; length > 0; length--) {
    for (let i = layers.length - 1; i >= 0; i--) {
      let value: unknown = layers[i]!.data;
      for (const key of path.slice(0, length)) value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
      if (value !== undefined) return layers[i]!.source;
    }
  }
  return 'defaults';
}

const profileList = (config: RunConfig): string => profileNames(config.models);

/**
 * Resolves every role and checks the references. `sourceOf` names the file a field came from
 * (see `layerSource`).
 */
export function checkWorkflow(config: RunConfig, registry: AgentRegistry, sourceOf: (path: string[]) => string): WorkflowCheck {
  const errors: string[] = [];
  const warnings: string[] = [];
  const at = (path: string[], message: string, field = path.join('.')) => `${sourceOf(path)}: ${field}: ${message}`;
  const workflow = config.workflow;
  const roles: Record<string, EffectiveRole> = {};
  const used = new Set<string>();

  const names = [...STANDARD_ROLES, ...Object.keys(workflow.roles).filter((r) => !isStandard(r)).sort()];
  for (const role of names) {
    const assigned: RoleAssignment | undefined = workflow.roles[role];
    const standard = isStandard(role);
    const agent = assigned?.agent ?? (standard ? STANDARD_ROLE_AGENTS[role] : config.defaultAgent);
    const agentPath = ['workflow', 'roles', role, 'agent'];
    if (!standard && assigned?.agent === undefined) warnings.push(at(agentPath, `the custom role names no agent: it is played by defaultAgent ${agent}`));
    if (!standard && assigned?.description === undefined) {
      warnings.push(at(['workflow', 'roles', role, 'description'], 'the custom role has no description: the organiser knows it by its name only'));
    }
    let resolved: ReturnType<AgentRegistry['resolve']>;
    try {
      resolved = registry.resolve(agent);
    } catch (error) {
      errors.push(at(assigned?.agent === undefined && !standard ? ['defaultAgent'] : agentPath, (error as Error).message));
      continue;
    }
    let profile: string;
    const profilePath = ['workflow', 'roles', role, 'profile'];
    if (assigned?.profile !== undefined) {
      const named = profileNamed(config.models, assigned.profile);
      if (!named) {
        errors.push(at(profilePath, `unknown profile "${assigned.profile}" (${profileList(config)})`));
        continue;
      }
      profile = assigned.profile;
      const wanted = { claude: 'anthropic', openai: 'openai', scripted: 'scripted', default: undefined }[resolved.parsed.backend];
      if (wanted && named.provider !== wanted) {
        warnings.push(at(profilePath, `${agent} asks for the ${resolved.parsed.backend}: backend, but profile "${profile}" is ${named.provider}: the profile wins`));
      }
    } else {
      try {
        profile = resolveProfile(config.models, { agent: resolved.parsed, preferredModels: resolved.definition.capability.preferredModels }).name;
      } catch (error) {
        errors.push(at(agentPath, `role "${role}" (${agent}) has no profile: ${(error as Error).message}`));
        continue;
      }
    }
    used.add(profile);
    if (role === 'debugger' && !resolved.definition.capability.tools.includes('run_command')) {
      warnings.push(at(agentPath, `the debugger runs the tests, but ${agent} cannot use run_command (its tools: ${resolved.definition.capability.tools.join(', ') || 'none'})`));
    }
    roles[role] = { agent, profile, standard, ...(assigned?.description !== undefined ? { description: assigned.description } : {}) };
  }

  const organiser = workflow.organiser.profile;
  if (organiser !== undefined && !profileNamed(config.models, organiser)) {
    errors.push(at(['workflow', 'organiser', 'profile'], `unknown profile "${organiser}" (${profileList(config)})`));
  }
  const organiserProfile = organiser ?? config.models.default ?? BUILTIN_PROFILE;
  used.add(organiserProfile);

  const seen = new Set<string>();
  workflow.reviewers.forEach((reviewer, i) => {
    const path = ['workflow', 'reviewers'];
    if (seen.has(reviewer)) warnings.push(at(path, `"${reviewer}" is listed twice`, `workflow.reviewers[${i}]`));
    seen.add(reviewer);
    if (!isStandard(reviewer) && !Object.hasOwn(workflow.roles, reviewer)) {
      const custom = Object.keys(workflow.roles).filter((r) => !isStandard(r));
      errors.push(at(path, `"${reviewer}" is not a role (standard roles: ${STANDARD_ROLES.join(', ')}${custom.length ? `; configured: ${custom.join(', ')}` : ''})`, `workflow.reviewers[${i}]`));
    }
  });

  // a profile is used when something assigns it, or an agent definition prefers it
  const models = config.models;
  for (const name of [models.default, ...Object.values(models.assign?.agents ?? {}), ...Object.values(models.assign?.taskTypes ?? {})]) if (name) used.add(name);
  for (const name of [models.assign?.backends?.claude, models.assign?.backends?.openai]) if (name) used.add(name);
  for (const agent of registry.list()) {
    const preferred = agent.capability.preferredModels;
    if (preferred) for (const name of [preferred.default, ...Object.values(preferred.byTaskType ?? {})]) used.add(name);
  }
  for (const name of Object.keys(models.profiles)) {
    if (!used.has(name)) warnings.push(at(['models', 'profiles', name], 'no role, agent, task type or default uses this profile (a run may still pick it with --model)'));
  }

  return { roles, organiserProfile, result: { isValid: errors.length === 0, errors, warnings } };
}
