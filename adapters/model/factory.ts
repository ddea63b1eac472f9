/**
 * Model clients built from provider profiles (actors/config/profiles.ts): `openai` → OpenAIModel,
 * `google` → OpenAIModel on Gemini's OpenAI-compatible endpoint, `anthropic` → AnthropicModel (key from the environment or the secrets file), `scripted` →
 * ScriptedModel. The pool keeps one client per profile name, so that every session on a profile
 * shares its HTTP connections, and builds none for profiles the run never uses.
 */
import { A2AError, isA2AError } from '../../actors/errors.js';
import { BUILTIN_PROFILE, profileNamed, resolveProfile, type ModelsConfig, type Profile, type ProfileQuery, type ResolvedProfile } from '../../actors/config/profiles.js';
import type { Clock, Model } from '../../machines/ports.js';
import { AnthropicModel } from './anthropic.js';
import { OpenAIModel } from './openai.js';
import { API_KEY_ENV, resolveApiKey } from './secrets.js';
import { secrets } from '../../actors/config/secrets.js';
import { ScriptedModel, type Script } from './scripted.js';
import type { ProviderOptions } from './wire.js';

export interface ModelFactoryOptions {
  /** For the scripted model's delays. */
  clock: Clock;
  /** The scripted model's script; none: every agent gets the scripted model's "no rule" reply. */
  script?: Script | undefined;
  /** Where API keys are read (default `process.env`). */
  env?: NodeJS.ProcessEnv | undefined;
  /** JSON `{ "openai": "...", "anthropic": "..." }`, read when the variable is unset. */
  secretsFile?: string | undefined;
}

/** The adapter options a profile maps to; settings it leaves out keep the adapter's defaults. */
function providerOptions(profile: Profile, apiKey: string): ProviderOptions {
  return {
    apiKey,
    model: profile.model,
    ...(profile.baseURL === undefined ? {} : { baseURL: profile.baseURL }),
    ...(profile.maxTokens === undefined ? {} : { maxTokens: profile.maxTokens }),
    ...(profile.temperature === undefined ? {} : { temperature: profile.temperature }),
    ...(profile.timeoutMs === undefined ? {} : { timeoutMs: profile.timeoutMs }),
    ...(profile.maxRetries === undefined ? {} : { maxRetries: profile.maxRetries }),
  };
}

/**
 * A model client for `profile`. A missing key fails here, before any session starts, with a
 * message naming the variable and the secrets file (never a key); `name` says which profile.
 */
export function createModelFor(profile: Profile, options: ModelFactoryOptions, name?: string): Model {
  if (profile.provider === 'scripted') return new ScriptedModel(options.script ?? { rules: [] }, options.clock);
  let apiKey: string;
  try {
    apiKey = resolveApiKey(profile.provider, { env: options.env, secretsFile: options.secretsFile });
    // known from here on: redacted wherever it would be written or printed
    secrets.add(API_KEY_ENV[profile.provider], apiKey);
  } catch (error) {
    if (!isA2AError(error) || name === undefined) throw error;
    throw new A2AError(error.code, `profile "${name}": ${error.message}`, { cause: error, where: error.where });
  }
  const settings = providerOptions(profile, apiKey);
  return profile.provider === 'anthropic' ? new AnthropicModel(settings) : new OpenAIModel(settings, profile.provider);
}

/**
 * One model client per profile name, built on first use. All scripted profiles share one
 * ScriptedModel: it ignores the profile's settings, and one instance keeps every call in one record.
 */
export class ModelPool {
  readonly #config: ModelsConfig;
  readonly #options: ModelFactoryOptions;
  readonly #models = new Map<string, Model>();
  #scripted: Model | undefined;

  /** `config`: the validated `models` section (validateModelsConfig). */
  constructor(config: ModelsConfig, options: ModelFactoryOptions) {
    this.#config = config;
    this.#options = options;
  }

  /** The client for profile `name` (a configured one, or the built-in `scripted`). */
  get(name: string): Model {
    const cached = this.#models.get(name);
    if (cached) return cached;
    const profile = profileNamed(this.#config, name);
    if (!profile) {
      const known = [...Object.keys(this.#config.profiles), ...(Object.hasOwn(this.#config.profiles, BUILTIN_PROFILE) ? [] : [BUILTIN_PROFILE])];
      throw new A2AError('CONFIGURATION_INVALID', `unknown model profile "${name}" (known profiles: ${known.join(', ')})`, { where: 'models.profiles' });
    }
    const model = profile.provider === 'scripted' ? (this.#scripted ??= createModelFor(profile, this.#options)) : createModelFor(profile, this.#options, name);
    this.#models.set(name, model);
    return model;
  }

  /**
   * The profile for a session (resolveProfile) and its client. Send `resolved.profile.model` as
   * the request's `model`: for a bare model override it differs from the profile's own.
   */
  resolve(query: ProfileQuery): { resolved: ResolvedProfile; model: Model } {
    const resolved = resolveProfile(this.#config, query);
    return { resolved, model: this.get(resolved.name) };
  }

  /** Profile names with a client built so far. */
  built(): string[] {
    return [...this.#models.keys()];
  }
}
