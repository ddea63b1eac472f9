/**
 * Model clients for a process (`a2a run`, `a2a host`): one per profile (the scripted model unless
 * profiles say otherwise), resolved per session by agent, task type and override, priced per call.
 */
import { join, resolve } from 'node:path';
import type { RunConfig } from '../../actors/config/config.js';
import type { ModelResolver, ResolvedModel } from '../../actors/session/agentLoop.js';
import { CostLedger } from '../../actors/observation/cost.js';
import { BUILTIN_PROFILE, isMoreExpensive, profileNamed } from '../../actors/config/profiles.js';
import type { AgentRegistry } from '../../actors/config/registry.js';
import type { ProfileCatalog } from '../../actors/runtime.js';
import type { Clock, Model } from '../../machines/ports.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { userConfigDir } from '../config.js';
import { ORGANISER_AGENT } from '../../actors/organiser/organiser.js';
import { ModelPool } from '../model/factory.js';
import { RemoteAgentDriver } from '../a2aProtocol/delegate.js';
import type { Script } from '../model/scripted.js';

/** Where a process reads keys and other secrets that are not in its environment. */
export function secretsFileOf(config: RunConfig, workspace: string): string {
  return config.model.secretsFile ? resolve(workspace, config.model.secretsFile) : join(userConfigDir(), 'secrets.json');
}

/**
 * `given`: one model for every session, the orchestrator and the organiser (a program's own
 * `Model`, from the library API); the profiles then only name it.
 */
export function modelsFor(config: RunConfig, registry: AgentRegistry, script: Script, clock: Clock, workspace: string, given?: Model) {
  const pool = new ModelPool(config.models, {
    clock,
    script,
    secretsFile: secretsFileOf(config, workspace),
  });
  const resolved = new WeakMap<SessionSpec, ResolvedModel>();
  const fixed: ResolvedModel | null = given ? { model: given, name: given.modelName ?? given.id, requestModel: given.modelName ?? given.id, profile: 'code' } : null;
  const remote: ResolvedModel = { model: new RemoteAgentDriver(), name: 'a2a-remote', requestModel: 'a2a-remote', profile: 'remote' };
  const resolveModel: ModelResolver = (spec) => {
    // a remote A2A agent's sessions are driven by its server's answers, whatever the profiles say
    if (registry.get(spec.agent.agentName).remote) return remote;
    if (fixed) return fixed;
    let found = resolved.get(spec);
    if (!found) {
      const { resolved: r, model } = pool.resolve({
        agent: spec.agent,
        preferredModels: registry.get(spec.agent.agentName).capability.preferredModels,
        ...(spec.taskType ? { taskType: spec.taskType } : {}),
        ...(spec.model ? { override: spec.model } : {}),
      });
      found = {
        model,
        name: r.profile.model,
        requestModel: r.profile.model,
        profile: r.name,
        ...(r.profile.contextWindow ? { contextWindow: r.profile.contextWindow } : {}),
        ...(r.profile.maxTokens ? { maxTokens: r.profile.maxTokens } : {}),
        ...(r.profile.maxOutputTokens ? { maxOutputTokens: r.profile.maxOutputTokens } : {}),
      };
      resolved.set(spec, found);
    }
    return found;
  };
  // one model given in code: there is nothing to switch to
  const profiles: ProfileCatalog = fixed ? { names: () => ['code'], current: () => 'code', moreExpensive: () => false } : {
    names: () => [...new Set([...Object.keys(config.models.profiles), BUILTIN_PROFILE])],
    current: (spec) => resolveModel(spec).profile,
    moreExpensive: (spec, to) => {
      const from = profileNamed(config.models, resolveModel(spec).profile);
      const target = profileNamed(config.models, to);
      return !!from && !!target && isMoreExpensive(from, target, config.models.prices);
    },
  };
  const ledger = new CostLedger(config.models.prices);
  const costs = { ledger, budgets: config.models.budgets ?? {} };
  const orchestratorModel: Model = given ?? pool.resolve({ agent: { raw: '@orchestrator', backend: 'default', agentName: 'orchestrator' } }).model;
  /**
   * The organiser of a workflow run (resolved only for one): its own profile, else `--model`,
   * else what the agent assignment says.
   */
  const organiser = (model?: string): { model: Model; name: string } => {
    if (given) return { model: given, name: given.modelName ?? given.id };
    const override = config.workflow.organiser.profile ?? model;
    const r = pool.resolve({ agent: ORGANISER_AGENT, ...(override ? { override } : {}) });
    return { model: r.model, name: r.resolved.profile.model };
  };
  return { pool, resolveModel, profiles, ledger, costs, orchestratorModel, organiser };
}
