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
import {
  anthropicMessage,
  anthropicToModelRequest,
  inOrder,
  openAICompletion,
  openAIToModelRequest,
  scriptedAnthropic,
  scriptedOpenAI,
  startAnthropicStub,
  startGoogleStub,
  startOpenAIStub,
  type Stub,
  type StubAnswer,
  type StubHandler,
  type StubRequest,
} from '../adapters/providers/stubs.js';
import type { ModelReply } from '../../machines/protocol/index.js';
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


/** A standalone run of one session on `provider`, against a stub that gives `answers` in order. */
const standaloneOn = (provider: 'openai' | 'anthropic', answers: StubAnswer[], runId: string, profile: object = {}) => standaloneWith(provider, inOrder(...answers), runId, undefined, profile);

describe('replies at the edges, on each provider', () => {
  const standalone = (provider: 'openai' | 'anthropic', answers: StubAnswer[]) => standaloneOn(provider, answers, `edge-${provider}`);
  const completeCall = (provider: 'openai' | 'anthropic', args: string) =>
    provider === 'openai'
      ? { body: { id: 'x', object: 'chat.completion', created: 0, model: 'gpt-4.1', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a2a_subtask_complete', arguments: args } }] }, finish_reason: 'tool_calls' }], usage: { prompt_tokens: 100, completion_tokens: 20 } } }
      : { body: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content: [{ type: 'tool_use', id: 't1', name: 'a2a_subtask_complete', input: JSON.parse(args) as object }], stop_reason: 'tool_use', usage: { input_tokens: 100, output_tokens: 20 } } };

  it('openai: tool arguments that are not valid JSON are answered as a tool error, and the model calls again', async () => {
    const { code, c, requests } = await standalone('openai', [completeCall('openai', '{"output":"The parser is fi'), completeCall('openai', '{"output":"The parser is fine."}')]);
    expect(code, c.err()).toBe(0);
    expect(requests).toHaveLength(2);
    const second = requests[1]!.body as { messages: Array<{ role: string; content: string | null }> };
    const toolResult = second.messages.find((m) => m.role === 'tool')!;
    expect(toolResult.content).toMatch(/^VALIDATION_ERROR: Invalid arguments for a2a_subtask_complete: the arguments are not valid JSON \(/);
    expect(c.out()).toContain('The parser is fine.');
  });

  it('anthropic: a tool_use whose input is not an object is answered as a tool error, and the model calls again', async () => {
    const bad = completeCall('anthropic', '{}') as { body: { content: Array<{ input: unknown }> } };
    bad.body.content[0]!.input = 'The parser is fine.';
    const { code, c, requests } = await standalone('anthropic', [bad as StubAnswer, completeCall('anthropic', '{"output":"The parser is fine."}')]);
    expect(code, c.err()).toBe(0);
    expect(requests).toHaveLength(2);
    expect(JSON.stringify(requests[1]!.body)).toContain('the arguments are not a JSON object (got string)');
    expect(c.out()).toContain('The parser is fine.');
  });
});

describe('a reply cut by the output limit, on each provider', () => {
  const run = (provider: 'openai' | 'anthropic', answers: StubAnswer[], profile: object = {}) => standaloneOn(provider, answers, `cut-${provider}`, profile);
  /** A2a_subtask_complete, whole or cut off by the output limit (the spec's shapes: `length` / `max_tokens`). */
  const reply = (provider: 'openai' | 'anthropic', output: string, cut: boolean) =>
    provider === 'openai'
      ? { body: { id: 'x', object: 'chat.completion', created: 0, model: 'gpt-4.1', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a2a_subtask_complete', arguments: cut ? `{"status":"success","output":"${output}` : JSON.stringify({ output }) } }] }, finish_reason: cut ? 'length' : 'tool_calls' }], usage: { prompt_tokens: 100, completion_tokens: cut ? 1000 : 20 } } }
      : { body: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content: [{ type: 'tool_use', id: 't1', name: 'a2a_subtask_complete', input: { status: 'success', output } }], stop_reason: cut ? 'max_tokens' : 'tool_use', usage: { input_tokens: 100, output_tokens: cut ? 1000 : 20 } } };

  it.each(['openai', 'anthropic'] as const)('%s: is never run; asked again with twice the limit up to maxOutputTokens, with a note; the whole reply completes', async (provider) => {
    const { code, c, events, requests } = await run(provider, [reply(provider, 'RESULT-2-...: p', true), reply(provider, 'The parser is fine.', false)], { maxTokens: 1000, maxOutputTokens: 4000 });
    expect(code, c.err()).toBe(0);
    expect(requests).toHaveLength(2);
    const limitOf = (r: (typeof requests)[number]) => (r.body as { max_tokens?: number; max_completion_tokens?: number }).max_tokens ?? (r.body as { max_completion_tokens?: number }).max_completion_tokens;
    expect(limitOf(requests[0]!)).toBe(1000);
    expect(limitOf(requests[1]!)).toBe(2000);
    expect(JSON.stringify(requests[1]!.body)).toContain('Your last reply was cut off at 1000 tokens and was not used: its tool calls (a2a_subtask_complete) were not run. The limit is now 2000 tokens.');
    const truncated = events.filter((e) => e.type === 'model.truncated');
    expect(truncated.map((e) => e.data)).toEqual([{ attempt: 1, limit: 1000, outputTokens: 1000, toolCalls: ['a2a_subtask_complete'], profile: 'main' }]);
    const result = events.find((e) => e.type === 'subtask.result')!;
    expect(result.data).toMatchObject({ status: 'success', output: 'The parser is fine.' });
    // the cut reply was billed, and is counted
    expect(events.filter((e) => e.type === 'model.called').reduce((n, e) => n + Number(e.data.outputTokens), 0)).toBe(1020);
  });

  it("anthropic: with no maxTokens, the adapter's 4096 is raised up to maxOutputTokens", async () => {
    const { code, c, requests } = await run('anthropic', [reply('anthropic', 'RESULT-2-...: p', true), reply('anthropic', 'The parser is fine.', false)], { maxOutputTokens: 8000 });
    expect(code, c.err()).toBe(0);
    expect(requests.map((r) => (r.body as { max_tokens: number }).max_tokens)).toEqual([4096, 8000]);
  });

  it('anthropic: a limit a cut raised still holds when the next call is retried after an overflow', async () => {
    const tooLong: StubAnswer = { status: 400, headers: { 'x-should-retry': 'false' }, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 210000 tokens > 200000 maximum' } } };
    const { code, c, requests } = await run('anthropic', [reply('anthropic', 'RESULT-2-...: p', true), tooLong, reply('anthropic', 'The parser is fine.', false)], { maxTokens: 1000, maxOutputTokens: 4000 });
    expect(code, c.err()).toBe(0);
    expect(requests.map((r) => (r.body as { max_tokens: number }).max_tokens)).toEqual([1000, 2000, 2000]);
  });

  it.each(['openai', 'anthropic'] as const)('%s: fails clearly when it keeps happening, and runs none of the cut calls', async (provider) => {
    const cut = reply(provider, 'RESULT-2-...: p', true);
    const { code, c, events, requests } = await run(provider, [cut, cut, cut, reply(provider, 'never asked for', false)]);
    expect(code).toBe(1);
    expect(requests).toHaveLength(3);
    expect(events.filter((e) => e.type === 'model.truncated')).toHaveLength(3);
    const result = events.find((e) => e.type === 'subtask.result')!;
    expect(result.data.status).toBe('failed');
    // Anthropic's adapter always sends a limit (4096 when the profile sets none); OpenAI's none
    const limit = provider === 'anthropic' ? '4096 tokens' : "the model's own output limit";
    expect(String(result.data.error)).toBe(`model call failed: output limit reached: the reply was cut off at ${limit} 3 times in a row (cut tool calls not run: a2a_subtask_complete); raise maxTokens (and maxOutputTokens) of profile main, or ask for shorter outputs`);
    expect(c.out() + c.err()).not.toContain('RESULT-2');
    // the three cut replies were billed: one discarded call event counts them
    const discarded = events.filter((e) => e.type === 'model.called' && e.data.discarded === true);
    expect(discarded.map((e) => [e.data.inputTokens, e.data.outputTokens])).toEqual([[300, 3000]]);
  });
});

describe('every billed token priced, on each provider', () => {
  const usageOf = (provider: 'openai' | 'anthropic', u: { input: number; output: number; read?: number; write?: number }) =>
    provider === 'openai'
      ? { prompt_tokens: u.input, completion_tokens: u.output, ...(u.read ? { prompt_tokens_details: { cached_tokens: u.read } } : {}) }
      : { input_tokens: u.input - (u.read ?? 0) - (u.write ?? 0), output_tokens: u.output, ...(u.read ? { cache_read_input_tokens: u.read } : {}), ...(u.write ? { cache_creation_input_tokens: u.write } : {}) };
  const complete = (provider: 'openai' | 'anthropic', usage: object) =>
    provider === 'openai'
      ? { body: { id: 'x', object: 'chat.completion', created: 0, model: 'gpt-4.1', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'a2a_subtask_complete', arguments: '{"output":"done"}' } }] }, finish_reason: 'tool_calls' }], usage } }
      : { body: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content: [{ type: 'tool_use', id: 't1', name: 'a2a_subtask_complete', input: { output: 'done' } }], stop_reason: 'tool_use', usage } };
  /** A reply the adapter cannot use (a custom tool call; a text block without text), billed all the same. */
  const unusable = (provider: 'openai' | 'anthropic', usage: object) =>
    provider === 'openai'
      ? { body: { id: 'x', object: 'chat.completion', created: 0, model: 'gpt-4.1', choices: [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'custom', custom: { name: 'x', input: '' } }] }, finish_reason: 'tool_calls' }], usage } }
      : { body: { id: 'm', type: 'message', role: 'assistant', model: 'claude-sonnet-4-20250514', content: [{ type: 'text' }], stop_reason: 'end_turn', usage } };

  it.each(['openai', 'anthropic'] as const)('%s: a reply thrown away as unusable is priced and counted', async (provider) => {
    const { code, c, events } = await standaloneOn(provider, [unusable(provider, usageOf(provider, { input: 1000, output: 32_768 }))], `discard-${provider}`);
    expect(code).toBe(1);
    const discarded = events.filter((e) => e.type === 'model.called' && e.data.discarded === true);
    expect(discarded).toHaveLength(1);
    expect(discarded[0]!.data).toMatchObject({ inputTokens: 1000, outputTokens: 32_768 });
    // gpt-4.1: $2 in, $8 out; claude-sonnet-4: $3 in, $15 out (per million)
    const expected = provider === 'openai' ? (1000 * 2 + 32_768 * 8) / 1e6 : (1000 * 3 + 32_768 * 15) / 1e6;
    expect(Number(discarded[0]!.data.costUsd)).toBeCloseTo(expected, 8);
    expect(c.out()).toContain(`tokens in 1000 · out 32768 · cost $${expected.toFixed(4)}`);
  });

  it.each(['openai', 'anthropic'] as const)('%s: cache reads and writes are priced at their own rates, and the summary gives the hit rate', async (provider) => {
    const u = provider === 'openai' ? { input: 2000, output: 100, read: 1500 } : { input: 15_100, output: 50, read: 10_000, write: 5000 };
    const { code, c, events, requests } = await standaloneOn(provider, [complete(provider, usageOf(provider, u))], `cache-${provider}`);
    expect(code, c.err()).toBe(0);
    const called = events.find((e) => e.type === 'model.called')!;
    expect(called.data).toMatchObject({ inputTokens: u.input, cacheReadTokens: u.read, ...(u.write ? { cacheWriteTokens: u.write } : {}) });
    // gpt-4.1: cached input $0.50 (of $2); claude-sonnet-4: read $0.30, write $3.75 (of $3)
    const expected = provider === 'openai' ? (500 * 2 + 1500 * 0.5 + 100 * 8) / 1e6 : (100 * 3 + 10_000 * 0.3 + 5000 * 3.75 + 50 * 15) / 1e6;
    expect(Number(called.data.costUsd)).toBeCloseTo(expected, 8);
    const rate = Math.round((100 * u.read) / u.input);
    expect(c.out()).toContain(`tokens in ${u.input} · out ${u.output} · cache hits ${rate}% (read ${u.read}, written ${u.write ?? 0}) · cost $${expected.toFixed(4)}`);
    if (provider === 'anthropic') {
      // the system prompt and the tools are marked for the prompt cache
      const body = requests[0]!.body as { system: Array<{ cache_control?: unknown }>; tools: Array<{ cache_control?: unknown }> };
      expect(body.system[0]!.cache_control).toEqual({ type: 'ephemeral' });
      expect(body.tools.at(-1)!.cache_control).toEqual({ type: 'ephemeral' });
      expect(body.tools.slice(0, -1).every((t) => t.cache_control === undefined)).toBe(true);
    }
  });
});

describe('a conversation the provider says is too long, on each provider', () => {
  const overflow = (provider: 'openai' | 'anthropic'): StubAnswer =>
    provider === 'openai'
      ? { status: 400, headers: { 'x-should-retry': 'false' }, body: { error: { message: "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.", type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } } }
      : { status: 400, headers: { 'x-should-retry': 'false' }, body: { type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 250000 tokens > 200000 maximum' } } };
  const toRequest = (provider: 'openai' | 'anthropic') => (provider === 'openai' ? openAIToModelRequest : anthropicToModelRequest);
  const wire = (provider: 'openai' | 'anthropic', reply: ModelReply): StubAnswer => ({ body: provider === 'openai' ? openAICompletion(reply, 'gpt-4.1') : anthropicMessage(reply, 'claude-sonnet-4-20250514') });
  const calls = (...toolCalls: Array<{ name: string; arguments: object }>): ModelReply => ({ text: '', toolCalls: toolCalls.map((c, i) => ({ id: `c${i}`, ...c })) as ModelReply['toolCalls'], usage: { inputTokens: 10, outputTokens: 5 }, stopReason: 'tool_use' });
  const text = (t: string): ModelReply => ({ text: t, toolCalls: [], usage: { inputTokens: 10, outputTokens: 5 }, stopReason: 'end_turn' });

  it.each(['openai', 'anthropic'] as const)('%s: is summarized and asked again; the long tool output is not sent again', async (provider) => {
    // 300 lines of 100 characters: about 7,500 tokens of tool output in the conversation
    const big = Array.from({ length: 300 }, (_, i) => `LINE-${String(i).padStart(4, '0')} ${'x'.repeat(89)}`).join('\n');
    const handler = (request: StubRequest): StubAnswer => {
      const r = toRequest(provider)(request);
      if (r.tools.length === 0) return wire(provider, text('SUMMARY: read notes.txt, 300 lines of x.'));
      if (r.messages.length === 1) return wire(provider, calls({ name: 'read_file', arguments: { path: 'notes.txt' } }));
      // the provider's window is smaller than the whole file
      if (r.messages.some((m) => m.content.includes('LINE-0250'))) return overflow(provider);
      return wire(provider, calls({ name: 'a2a_subtask_complete', arguments: { output: 'notes.txt is all x' } }));
    };
    const run = await standaloneWith(provider, handler, `overflow-${provider}`, (ws) => writeFileSync(join(ws, 'notes.txt'), big));
    expect(run.code, run.c.out()).toBe(0);
    const warning = run.events.find((e) => e.type === 'warning' && e.data.overflow === true)!;
    expect(String(warning.data.message)).toMatch(/the provider said the conversation does not fit main's context window: summarized \(\d+ → \d+ tokens estimated\), asking again/);
    const final = toRequest(provider)(run.requests.at(-1)!);
    expect(JSON.stringify(final.messages)).toContain('SUMMARY: read notes.txt');
    expect(JSON.stringify(final.messages)).not.toContain('LINE-0250');
    expect(run.events.find((e) => e.type === 'subtask.result')!.data).toMatchObject({ status: 'success', output: 'notes.txt is all x' });
  });

  it.each(['openai', 'anthropic'] as const)('%s: fails clearly when it never fits, keeping the results its sub-tasks already had', async (provider) => {
    const handler = (request: StubRequest): StubAnswer => {
      const r = toRequest(provider)(request);
      const task = r.messages.find((m) => m.role === 'user')?.content ?? '';
      if (/^part [AB]/.test(task)) return wire(provider, calls({ name: 'a2a_subtask_complete', arguments: { output: `${task.slice(0, 6)} done` } }));
      if (r.messages.length === 1) return wire(provider, calls({ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: '@agent', prompt: 'part A', expectedOutput: 'x' }, { agentType: '@agent', prompt: 'part B', expectedOutput: 'x' }] } }));
      return overflow(provider);
    };
    const run = await standaloneWith(provider, handler, `never-fits-${provider}`);
    expect(run.code).toBe(1);
    const result = run.events.find((e) => e.type === 'subtask.result' && e.subTaskId === 'session')!;
    expect(result.data.status).toBe('failed');
    expect(String(result.data.error)).toContain("does not fit the model's context window");
    expect(String(result.data.output)).toContain('Results of its sub-tasks before it failed:\n- session.1 (success): part A done\n- session.2 (success): part B done');
  });
});

/** A standalone run on `provider` against a stub answering with `handler`; `prepare` may write into the workspace. */
async function standaloneWith(provider: 'openai' | 'anthropic', handler: StubHandler, runId: string, prepare?: (ws: string) => void, profile: object = {}) {
  const keyEnv = provider === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY';
  stub = await (provider === 'openai' ? startOpenAIStub : startAnthropicStub)(handler);
  process.env[keyEnv] = KEYS[keyEnv];
  const ws = tempDir();
  prepare?.(ws);
  const model = provider === 'openai' ? 'gpt-4.1' : 'claude-sonnet-4-20250514';
  writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { main: { provider, model, baseURL: stub.baseURL, maxRetries: 0, ...profile } }, default: 'main' } }));
  const c = capture();
  const code = await main(['run', 'Do it in parts', '--standalone', '--workspace', ws, '--run-id', runId, '--no-tree'], c.io);
  return { code, c, ws, events: new FileRunStore(ws).events(runId), requests: stub.requests };
}
