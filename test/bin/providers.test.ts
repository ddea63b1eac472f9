/**
 * A full `a2a run` of the OAuth example on each real provider adapter (the official SDKs over
 * HTTP), pointed at a local server that speaks the provider's wire format and answers from the
 * example's script. Keys come from the environment and never reach the logs.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { loadScript } from '../../adapters/config.js';
import { realClock } from '../../adapters/clock.js';
import { ScriptedModel } from '../../adapters/model/scripted.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { scriptedAnthropic, scriptedOpenAI, startAnthropicStub, startGoogleStub, startOpenAIStub, type Stub } from '../adapters/providers/stubs.js';
import { capture, tempDir } from '../helpers.js';

const root = resolve(import.meta.dirname, '..', '..');
const KEYS = { OPENAI_API_KEY: 'sk-test-openai-0123456789abcdefghij', ANTHROPIC_API_KEY: 'sk-ant-test-0123456789abcdefghijkl', GEMINI_API_KEY: 'AIzaSyTest-0123456789abcdefghijklmnop' };


let stub: Stub | null = null;
afterEach(async () => {
  await stub?.close();
  stub = null;
  for (const k of Object.keys(KEYS)) delete process.env[k];
});

describe.each([
  ['openai', startOpenAIStub, scriptedOpenAI, 'gpt-4.1', 'OPENAI_API_KEY'],
  ['anthropic', startAnthropicStub, scriptedAnthropic, 'claude-sonnet-4-20250514', 'ANTHROPIC_API_KEY'],
  ['google', startGoogleStub, scriptedOpenAI, 'gemini-2.5-flash', 'GEMINI_API_KEY'],
] as const)('a2a run on %s', (provider, start, scripted, model, keyEnv) => {
  it('runs examples/oauth end to end through the SDK against the local server, priced per call', async () => {
    stub = await start(scripted(new ScriptedModel(loadScript(join(root, 'examples/oauth/script.json')), realClock)));
    process.env[keyEnv] = KEYS[keyEnv];
    const ws = tempDir();
    writeFileSync(
      join(ws, 'a2a.config.json'),
      JSON.stringify({ models: { profiles: { main: { provider, model, baseURL: stub.baseURL, maxRetries: 0 } }, default: 'main' } }),
    );
    const c = capture();
    const code = await main(['run', join(root, 'examples/oauth'), '--workspace', ws, '--run-id', `${provider}-1`], c.io);
    expect(code, c.err()).toBe(0);
    expect(stub.requests.length).toBeGreaterThanOrEqual(8);
    expect(stub.requests.every((r) => (r.body as { model?: string }).model === model)).toBe(true);
    const summary = new FileRunStore(ws).read(`${provider}-1`).summary as RunSummary;
    expect(summary.tasks[0]).toMatchObject({ state: 'succeeded', result: { status: 'partial' } });
    expect(summary.tasks[0]!.result!.output).toContain('# OAuth login: architecture plan');
    // priced from the built-in table for this model
    expect(summary.usage.costUsd).toBeGreaterThan(0);
    expect(c.out()).toMatch(/model calls: \d+ · tokens in \d+ · out \d+ · cost \$0\.\d{4}/);
    const logs = JSON.stringify(new FileRunStore(ws).events(`${provider}-1`)) + JSON.stringify(new FileRunStore(ws).readLines(`${provider}-1`, 'audit.jsonl'));
    expect(logs).not.toContain(KEYS[keyEnv]);
  }, 30_000);

  it('fails before anything runs when the key is missing, naming the variable', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { main: { provider, model, baseURL: 'http://127.0.0.1:9' } }, default: 'main' } }));
    const c = capture();
    expect(await main(['run', join(root, 'examples/oauth'), '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain(`profile "main": no API key for ${provider}: set ${keyEnv}`);
  });
});

describe('model profiles in the configuration', () => {
  it('names the profile and field at fault, and the allowed values', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { fast: { provider: 'openia', model: 'x' } } } }));
    const c = capture();
    expect(await main(['run', join(root, 'examples/oauth'), '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain('models.profiles.fast.provider');
    expect(c.err()).toContain('"openai"|"anthropic"|"google"|"scripted"');
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { fast: { provider: 'openai', model: 'gpt-4.1-mini' } }, default: 'quick' } }));
    const d = capture();
    expect(await main(['run', join(root, 'examples/oauth'), '--workspace', ws], d.io)).toBe(2);
    expect(d.err()).toMatch(/default.*"quick".*profiles: fast/s);
  });
});
