import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { SimulatedClock } from 'xstate';
import { afterEach, describe, expect, it } from 'vitest';
import { isA2AError } from '../../../actors/errors.js';
import { validateModelsConfig, type Profile } from '../../../actors/config/profiles.js';
import { parseAgentType } from '../../../actors/config/registry.js';
import { AnthropicModel } from '../../../adapters/model/anthropic.js';
import { createModelFor, ModelPool } from '../../../adapters/model/factory.js';
import { OpenAIModel } from '../../../adapters/model/openai.js';
import { ScriptedModel } from '../../../adapters/model/scripted.js';
import { tempDir } from '../../helpers.js';
import { conversation, KEY, rejection, signal } from './fixtures.js';
import { anthropicMessage, openAICompletion, startAnthropicStub, startOpenAIStub, type Stub } from './stubs.js';

const stubs: Stub[] = [];
afterEach(async () => {
  await Promise.all(stubs.splice(0).map((s) => s.close()));
});

const clock = new SimulatedClock();
const done = { text: 'done', toolCalls: [], usage: { inputTokens: 3, outputTokens: 1 } };

async function openai(answer: object = { body: openAICompletion(done) }) {
  const stub = await startOpenAIStub(() => answer);
  stubs.push(stub);
  return stub;
}
async function anthropic() {
  const stub = await startAnthropicStub(() => ({ body: anthropicMessage(done) }));
  stubs.push(stub);
  return stub;
}

const secretsFile = (content: object) => {
  const file = join(tempDir('a2a-secrets-'), 'secrets.json');
  writeFileSync(file, JSON.stringify(content));
  return file;
};

describe('createModelFor', () => {
  it("should build an OpenAI model that talks to the profile's baseURL with its model and settings", async () => {
    const stub = await openai();
    const profile: Profile = { provider: 'openai', model: 'gpt-profile', baseURL: stub.baseURL, maxTokens: 321, temperature: 0.3 };
    const model = createModelFor(profile, { clock, env: { OPENAI_API_KEY: KEY } });
    expect(model).toBeInstanceOf(OpenAIModel);
    expect(model.id).toBe('openai:gpt-profile');

    expect(await model.call(conversation, { signal: signal() })).toMatchObject({ text: 'done', usage: { inputTokens: 3, outputTokens: 1 } });
    expect(stub.requests).toHaveLength(1);
    expect(stub.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(stub.requests[0]!.body).toMatchObject({ model: 'gpt-profile', max_completion_tokens: 321, temperature: 0.3 });
  });

  it('should build an Anthropic model with the key from the secrets file', async () => {
    const stub = await anthropic();
    const profile: Profile = { provider: 'anthropic', model: 'claude-profile', baseURL: stub.baseURL, maxTokens: 999 };
    const model = createModelFor(profile, { clock, env: {}, secretsFile: secretsFile({ anthropic: KEY }) });
    expect(model).toBeInstanceOf(AnthropicModel);

    await model.call(conversation, { signal: signal() });
    expect(stub.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(stub.requests[0]!.body).toMatchObject({ model: 'claude-profile', max_tokens: 999 });
  });

  it("should pass the profile's maxRetries to the SDK", async () => {
    const stub = await openai({ status: 503, body: { error: { message: 'overloaded' } } });
    const model = createModelFor({ provider: 'openai', model: 'm', baseURL: stub.baseURL, maxRetries: 0 }, { clock, env: { OPENAI_API_KEY: KEY } });
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_ERROR');
    expect(stub.requests).toHaveLength(1);
  });

  it('should build the scripted model from the script, without a key', async () => {
    const script = { rules: [{ agent: '*', prompt: '', turns: [{ text: 'scripted hello', toolCalls: [] }], reactions: [] }] };
    const model = createModelFor({ provider: 'scripted', model: 'scripted' }, { clock, script, env: {} });
    expect(model).toBeInstanceOf(ScriptedModel);
    const task = { ...conversation, messages: conversation.messages.slice(0, 1) };
    expect((await model.call(task, { signal: signal() })).text).toBe('scripted hello');
  });

  it('should name the profile, the variable and the secrets file when the key is missing, and never the key', () => {
    const file = secretsFile({ anthropic: KEY });
    let caught: unknown;
    try {
      createModelFor({ provider: 'openai', model: 'gpt-4o' }, { clock, env: { ANTHROPIC_API_KEY: KEY }, secretsFile: file }, 'smart');
    } catch (error) {
      caught = error;
    }
    expect(isA2AError(caught, 'CONFIGURATION_INVALID')).toBe(true);
    expect((caught as Error).message).toBe(`profile "smart": no API key for openai: set OPENAI_API_KEY or add "openai" to ${file}`);
    expect(inspect(caught, { depth: 5 })).not.toContain(KEY);
  });
});

describe('ModelPool', () => {
  it('should build one model per profile name, on first use, and share one scripted model', async () => {
    const stub = await openai();
    const config = validateModelsConfig(
      {
        profiles: {
          fast: { provider: 'openai', model: 'gpt-fast', baseURL: stub.baseURL },
          fast2: { provider: 'openai', model: 'gpt-fast', baseURL: stub.baseURL },
          other: { provider: 'anthropic', model: 'never-built' },
          test: { provider: 'scripted', model: 'scripted' },
        },
        default: 'fast',
      },
      'test',
    );
    // no Anthropic key: the `other` profile must never be built
    const pool = new ModelPool(config, { clock, env: { OPENAI_API_KEY: KEY } });
    const fast = pool.get('fast');
    expect(pool.get('fast')).toBe(fast);
    expect(pool.get('fast2')).not.toBe(fast);
    expect(pool.get('test')).toBe(pool.get('scripted'));
    expect(pool.built().sort()).toEqual(['fast', 'fast2', 'scripted', 'test']);
    expect(() => pool.get('other')).toThrow('profile "other": no API key for anthropic: set ANTHROPIC_API_KEY (no secrets file configured)');
    expect(() => pool.get('nope')).toThrowErrorMatchingInlineSnapshot(`[A2AError: unknown model profile "nope" (known profiles: fast, fast2, other, test, scripted)]`);
  });

  it("should resolve a session's profile and give the model that runs it, with a bare model sent as the request's model", async () => {
    const stub = await openai();
    const config = validateModelsConfig(
      { profiles: { fast: { provider: 'openai', model: 'gpt-fast', baseURL: stub.baseURL } }, default: 'fast', assign: { agents: { coder: 'fast' } } },
      'test',
    );
    const pool = new ModelPool(config, { clock, env: { OPENAI_API_KEY: KEY } });
    const { resolved, model } = pool.resolve({ agent: parseAgentType('@coder'), override: 'gpt-bare' });
    expect(resolved).toMatchObject({ name: 'fast', via: 'override', profile: { model: 'gpt-bare' } });
    expect(model).toBe(pool.get('fast'));
    await model.call({ ...conversation, model: resolved.profile.model }, { signal: signal() });
    expect(stub.requests[0]!.body).toMatchObject({ model: 'gpt-bare' });
  });
});
