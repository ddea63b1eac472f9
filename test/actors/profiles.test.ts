import { describe, expect, it } from 'vitest';
import { isMoreExpensive, resolveProfile, validateModelsConfig, type ModelsConfig, type Profile } from '../../actors/config/profiles.js';
import { parseAgentType } from '../../actors/config/registry.js';

const config: ModelsConfig = validateModelsConfig(
  {
    profiles: {
      fast: { provider: 'openai', model: 'gpt-4o-mini', tier: 'small' },
      smart: { provider: 'openai', model: 'gpt-4.1', tier: 'standard', baseURL: 'http://127.0.0.1:9/v1' },
      sonnet: { provider: 'anthropic', model: 'claude-sonnet-4-20250514', tier: 'standard', contextWindow: 200_000 },
      haiku: { provider: 'anthropic', model: 'claude-3-5-haiku-latest', tier: 'small' },
      opus: { provider: 'anthropic', model: 'claude-opus-4', tier: 'large' },
    },
    default: 'fast',
    assign: { agents: { reviewer: 'smart' }, taskTypes: { review: 'opus' }, backends: { claude: 'haiku' } },
  },
  'a2a.config.yaml',
);

const agent = (raw: string) => parseAgentType(raw);
const pick = (query: Parameters<typeof resolveProfile>[1], c: ModelsConfig = config) => {
  const r = resolveProfile(c, query);
  return { name: r.name, via: r.via, why: r.why };
};

describe('resolveProfile', () => {
  it('should let an explicit override that names a profile win over every assignment', () => {
    const all = { agent: agent('claude:reviewer'), taskType: 'review', preferredModels: { default: 'sonnet' }, override: 'smart' };
    expect(pick(all)).toEqual({ name: 'smart', via: 'override', why: 'model override (profile smart)' });
  });

  it("should run a bare model name on the default profile's provider, without the default's tier and window", () => {
    const r = resolveProfile(config, { agent: agent('@coder'), override: 'gpt-4o' });
    expect(r.name).toBe('fast');
    expect(r.profile).toEqual({ provider: 'openai', model: 'gpt-4o' });
    expect(r.why).toBe('model override "gpt-4o" (on profile fast, openai)');
  });

  it('should run a bare model name on the profile configured for that model, and on the backend of a claude: agent', () => {
    expect(pick({ agent: agent('@coder'), override: 'claude-opus-4' })).toMatchObject({ name: 'opus', via: 'override' });
    const r = resolveProfile(config, { agent: agent('claude:coder'), override: 'claude-3-7-sonnet' });
    expect(r.name).toBe('haiku');
    expect(r.profile.provider).toBe('anthropic');
    expect(r.profile.model).toBe('claude-3-7-sonnet');
  });

  it('should refuse a bare model name when there is only the scripted model to run it on', () => {
    const bare = validateModelsConfig({ profiles: { fast: config.profiles.fast } }, 'test');
    expect(() => resolveProfile(bare, { agent: agent('@coder'), override: 'gpt-5' })).toThrowErrorMatchingInlineSnapshot(
      `[A2AError: model "gpt-5" is not a profile (profiles: fast, scripted (built in)), and it cannot run as a bare model name: it would run on the scripted profile, whose provider is scripted. Use a profile name, or set models.default to an openai or anthropic profile.]`,
    );
    expect(pick({ agent: agent('@coder'), override: 'scripted' }, bare)).toMatchObject({ name: 'scripted', via: 'override' });
    // with none configured, the list is the built-in profile (it said "configuredbuilt in" once)
    const none = validateModelsConfig({}, 'test');
    expect(() => resolveProfile(none, { agent: agent('@coder'), override: 'nonexistent' })).toThrowError(
      'model "nonexistent" is not a profile (profiles: scripted (built in); none is configured), and it cannot run as a bare model name',
    );
  });

  it('should put a claude: agent on the assigned backend profile before task type and agent assignments', () => {
    expect(pick({ agent: agent('claude:reviewer'), taskType: 'review', preferredModels: { default: 'smart' } })).toEqual({
      name: 'haiku',
      via: 'backend',
      why: 'assigned to the claude: backend',
    });
  });

  it('should fall back to the first profile of the provider when the backend is not assigned', () => {
    expect(pick({ agent: agent('openai:reviewer') })).toMatchObject({ name: 'fast', via: 'backend' });
    const unassigned = validateModelsConfig({ ...config, assign: {} }, 'test');
    expect(pick({ agent: agent('anthropic:coder') }, unassigned)).toEqual({ name: 'sonnet', via: 'backend', why: 'first anthropic profile, for claude:' });
  });

  it('should say what to configure when a backend has no profile of its provider', () => {
    const openaiOnly = validateModelsConfig({ profiles: { fast: config.profiles.fast }, default: 'fast' }, 'test');
    expect(() => resolveProfile(openaiOnly, { agent: agent('claude:reviewer') })).toThrowErrorMatchingInlineSnapshot(
      `[A2AError: agent type "claude:reviewer" runs on anthropic, but no anthropic profile is configured: add one under models.profiles (provider: anthropic) or set models.assign.backends.claude]`,
    );
  });

  it("should prefer the task type's assignment to the agent definition's preferences and the agent's assignment", () => {
    const preferredModels = { default: 'sonnet', byTaskType: { review: 'haiku' } };
    expect(pick({ agent: agent('@reviewer'), taskType: 'review', preferredModels })).toEqual({
      name: 'opus',
      via: 'taskType',
      why: 'assigned to task type "review"',
    });
  });

  it("should use the definition's preference for the task type, then its default, when they name profiles", () => {
    const preferredModels = { default: 'sonnet', byTaskType: { design: 'haiku', docs: 'not-configured' } };
    expect(pick({ agent: agent('@reviewer'), taskType: 'design', preferredModels })).toEqual({
      name: 'haiku',
      via: 'preferred',
      why: 'preferred by @reviewer for task type "design"',
    });
    expect(pick({ agent: agent('@reviewer'), taskType: 'docs', preferredModels })).toEqual({ name: 'sonnet', via: 'preferred', why: 'preferred by @reviewer' });
    // a preference for a model this workspace has no profile for is skipped
    expect(pick({ agent: agent('@reviewer'), preferredModels: { default: 'gpt-4o' } })).toEqual({ name: 'smart', via: 'agent', why: 'assigned to @reviewer' });
  });

  it('should use the default profile for an agent nothing assigns, and the built-in scripted model without one', () => {
    expect(pick({ agent: agent('@coder'), taskType: 'unassigned' })).toEqual({ name: 'fast', via: 'default', why: 'default profile' });
    const r = resolveProfile(validateModelsConfig(undefined, 'defaults'), { agent: agent('@coder') });
    expect(r).toEqual({ name: 'scripted', profile: { provider: 'scripted', model: 'scripted', tier: 'small' }, via: 'builtin', why: 'built-in scripted model (no default profile)' });
    expect(pick({ agent: agent('scripted:coder') })).toMatchObject({ name: 'scripted', via: 'backend' });
  });
});

describe('validateModelsConfig', () => {
  it('should name the source, the profile and field at fault, and the allowed values', () => {
    const bad = { profiles: { fast: { provider: 'gemini', model: 'x', temperature: 3, tier: 'huge' } } };
    expect(() => validateModelsConfig(bad, '/ws/a2a.config.yaml')).toThrowErrorMatchingInlineSnapshot(`
      [A2AError: /ws/a2a.config.yaml: invalid models configuration:
        - models.profiles.fast.provider: Invalid option: expected one of "openai"|"anthropic"|"google"|"scripted"
        - models.profiles.fast.temperature: Too big: expected number to be <=2
        - models.profiles.fast.tier: Invalid option: expected one of "small"|"standard"|"large"]
    `);
  });

  it('should list the allowed fields for an unknown one', () => {
    expect(() => validateModelsConfig({ profiles: { fast: { provider: 'openai', model: 'x', apiKey: 'k' } } }, 'user config')).toThrowErrorMatchingInlineSnapshot(`
      [A2AError: user config: invalid models configuration:
        - models.profiles.fast: Unrecognized key: "apiKey" (allowed: provider, model, baseURL, maxTokens, maxOutputTokens, temperature, contextWindow, tier, timeoutMs, maxRetries)]
    `);
    expect(() => validateModelsConfig({ assign: { roles: {} } }, 'f')).toThrow('models.assign: Unrecognized key: "roles" (allowed: agents, taskTypes, backends)');
  });

  it('should reject references to unknown profiles, listing the known ones, and backends on the wrong provider', () => {
    const data = {
      profiles: { fast: { provider: 'openai', model: 'gpt-4o-mini' }, smart: { provider: 'openai', model: 'gpt-4.1' } },
      default: 'fats',
      assign: { agents: { reviewer: 'big' }, taskTypes: { review: 'smart' }, backends: { claude: 'smart' } },
    };
    // a single layer may name profiles that another layer defines
    expect(validateModelsConfig(data, 'a2a.config.json', { references: false }).default).toBe('fats');
    expect(() => validateModelsConfig(data, 'a2a.config.json')).toThrowErrorMatchingInlineSnapshot(`
      [A2AError: a2a.config.json: invalid models configuration:
        - models.default: unknown profile "fats" (profiles: fast, smart, scripted (built in))
        - models.assign.agents.reviewer: unknown profile "big" (profiles: fast, smart, scripted (built in))
        - models.assign.backends.claude: profile "smart" has provider openai; this backend needs provider: anthropic]
    `);
  });

  it('should accept prices and budgets and reject negative ones', () => {
    const ok = validateModelsConfig({ prices: { 'my-model': { inputPerMTok: 1, outputPerMTok: 2 } }, budgets: { runUsd: 5, workerUsd: 1 } }, 'f');
    expect(ok.budgets).toEqual({ runUsd: 5, workerUsd: 1 });
    expect(ok.profiles).toEqual({});
    expect(() => validateModelsConfig({ budgets: { runUsd: 0 } }, 'f')).toThrow('models.budgets.runUsd: Too small: expected number to be >0');
    expect(() => validateModelsConfig({ prices: { m: { inputPerMTok: -1, outputPerMTok: 0 } } }, 'f')).toThrow('models.prices.m.inputPerMTok');
  });
});

describe('isMoreExpensive', () => {
  const p = (model: string, tier?: Profile['tier'], provider: Profile['provider'] = 'openai'): Profile => ({ provider, model, ...(tier ? { tier } : {}) });

  it('should rank by tier when both profiles have one', () => {
    expect(isMoreExpensive(p('a', 'small'), p('b', 'large'))).toBe(true);
    expect(isMoreExpensive(p('a', 'large'), p('b', 'standard'))).toBe(false);
    // the tier decides even against the price
    expect(isMoreExpensive(p('gpt-4.1', 'standard'), p('gpt-4o-mini', 'large'))).toBe(true);
  });

  it('should compare the output price when the tier is the same or unknown', () => {
    expect(isMoreExpensive(p('gpt-4o-mini', 'small'), p('gpt-4o', 'small'))).toBe(true);
    expect(isMoreExpensive(p('gpt-4o'), p('gpt-4o-mini'))).toBe(false);
    expect(isMoreExpensive(p('claude-3-5-haiku'), p('claude-sonnet-4-20250514'))).toBe(true);
    expect(isMoreExpensive(p('scripted', undefined, 'scripted'), p('gpt-4o-mini'))).toBe(true);
    // configured prices override the defaults
    expect(isMoreExpensive(p('gpt-4o-mini'), p('gpt-4o'), { 'gpt-4o': { inputPerMTok: 0, outputPerMTok: 0.1 } })).toBe(false);
  });

  it('should count a switch it cannot price as more expensive, unless both declare the same tier', () => {
    expect(isMoreExpensive(p('gpt-4o'), p('local-llama'))).toBe(true);
    expect(isMoreExpensive(p('local-a', 'standard'), p('local-b', 'standard'))).toBe(false);
    expect(isMoreExpensive(p('gpt-4o'), p('gpt-4o'))).toBe(false);
  });
});
