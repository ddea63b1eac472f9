import { inspect } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OpenAIModel } from '../../../adapters/model/openai.js';
import type { ProviderOptions } from '../../../adapters/model/wire.js';
import { conversation, KEY, readFileTool, rejection, signal } from './fixtures.js';
import { inOrder, openAICompletion, startGoogleStub, startOpenAIStub, type Stub, type StubAnswer, type StubHandler } from './stubs.js';

let stub: Stub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

async function setup(handler: StubHandler, options: Partial<ProviderOptions> = {}) {
  stub = await startOpenAIStub(handler);
  const model = new OpenAIModel({ apiKey: KEY, baseURL: stub.baseURL, model: 'gpt-test', ...options });
  return { stub, model };
}

const ok: StubAnswer = { body: openAICompletion({ text: 'done', toolCalls: [], usage: { inputTokens: 10, outputTokens: 2 } }) };
const completion = (message: object, finish_reason = 'stop', usage: object | null = { prompt_tokens: 3, completion_tokens: 4 }) => ({
  body: { id: 'x', object: 'chat.completion', created: 0, model: 'gpt-test', choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason }], usage },
});
const gaps = (s: Stub) => s.requests.slice(1).map((r, i) => r.receivedAt - s.requests[i]!.receivedAt);

describe('openai model', () => {
  it('should send the conversation and tools in the Chat Completions format and map a tool-calling reply', async () => {
    const { stub, model } = await setup(() =>
      completion(
        { content: null, tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'read_file', arguments: '{"path":"d.ts"}' } }] },
        'tool_calls',
        { prompt_tokens: 120, completion_tokens: 15, total_tokens: 135 },
      ),
    );
    const reply = await model.call(conversation, { signal: signal() });

    expect(reply).toEqual({
      text: '',
      toolCalls: [{ id: 'call_9', name: 'read_file', arguments: { path: 'd.ts' } }],
      usage: { inputTokens: 120, outputTokens: 15 },
      stopReason: 'tool_use',
    });
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request!.body).toEqual({
      model: 'gpt-test',
      messages: [
        { role: 'system', content: conversation.system },
        { role: 'user', content: 'Write the parser' },
        {
          role: 'assistant',
          content: 'Reading both files first.',
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
            { id: 'call_2', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.ts"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'export const a = 1;' },
        { role: 'tool', tool_call_id: 'call_2', content: 'ENOENT: b.ts' },
        { role: 'user', content: 'Message from parent: b.ts is optional' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'call_3', type: 'function', function: { name: 'read_file', arguments: '{"path":"c.ts"}' } }] },
        { role: 'tool', tool_call_id: 'call_3', content: 'export const c = 3;' },
      ],
      tools: [{ type: 'function', function: { name: 'read_file', description: readFileTool.description, parameters: readFileTool.parameters } }],
    });
  });

  it("should use the request's model override and send max tokens and temperature only when configured", async () => {
    const { stub, model } = await setup(() => ok, { maxTokens: 1000, temperature: 0.2 });
    expect(model.id).toBe('openai:gpt-test');
    expect(model.validatesReplies).toBe(true);
    await model.call({ ...conversation, model: 'gpt-override', tools: [] }, { signal: signal() });
    expect(stub.requests[0]!.body).toMatchObject({ model: 'gpt-override', max_completion_tokens: 1000, temperature: 0.2 });
    expect(stub.requests[0]!.body).not.toHaveProperty('tools');

    const plain = new OpenAIModel({ apiKey: KEY, baseURL: stub.baseURL, model: 'gpt-test', id: 'mine' });
    expect(plain.id).toBe('mine');
    await plain.call(conversation, { signal: signal() });
    expect(stub.requests[1]!.body).not.toHaveProperty('max_completion_tokens');
    expect(stub.requests[1]!.body).not.toHaveProperty('temperature');
  });

  it('should map text, null content, missing usage and finish reasons', async () => {
    const { model } = await setup(
      inOrder(completion({ content: 'all done' }, 'stop'), completion({ content: null }, 'length', null), completion({ content: null, refusal: 'I cannot help with that' }, 'content_filter')),
    );
    expect(await model.call(conversation, { signal: signal() })).toEqual({ text: 'all done', toolCalls: [], usage: { inputTokens: 3, outputTokens: 4 }, stopReason: 'end_turn' });
    expect(await model.call(conversation, { signal: signal() })).toEqual({ text: '', toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 }, stopReason: 'max_tokens' });
    expect(await model.call(conversation, { signal: signal() })).toEqual({ text: 'I cannot help with that', toolCalls: [], usage: { inputTokens: 3, outputTokens: 4 } });
  });

  it('should retry a 429 after exactly the delay that retry-after or retry-after-ms asks for', async () => {
    const rateLimited = (headers: Record<string, string>): StubAnswer => ({ status: 429, headers, body: { error: { message: 'Rate limit reached', type: 'requests' } } });
    const { stub, model } = await setup(inOrder(rateLimited({ 'retry-after': '0' }), rateLimited({ 'retry-after-ms': '150' }), ok));
    const reply = await model.call(conversation, { signal: signal() });
    expect(reply.text).toBe('done');
    expect(stub.requests).toHaveLength(3);
    const [first, second] = gaps(stub);
    // the SDK's own backoff would wait at least 375 ms, then 750 ms
    expect(first).toBeLessThan(300);
    expect(second).toBeGreaterThanOrEqual(140);
    expect(second).toBeLessThan(700);
  });

  it('should retry a 500 and return the reply of the next attempt', async () => {
    const { stub, model } = await setup(inOrder({ status: 500, headers: { 'retry-after-ms': '10' }, body: { error: { message: 'The server had an error' } } }, ok));
    expect((await model.call(conversation, { signal: signal() })).text).toBe('done');
    expect(stub.requests).toHaveLength(2);
  });

  it('should back off exponentially between 5xx retries when the server gives no retry-after', async () => {
    const { stub, model } = await setup(inOrder({ status: 503, body: { error: { message: 'overloaded' } } }, { status: 502, body: 'bad gateway' }, ok));
    expect((await model.call(conversation, { signal: signal() })).text).toBe('done');
    const [first, second] = gaps(stub);
    // 0.5 s then 1 s, minus up to 25 % jitter
    expect(first).toBeGreaterThanOrEqual(370);
    expect(second).toBeGreaterThanOrEqual(740);
    expect(second).toBeGreaterThan(first!);
  });

  it('should fail with RATE_LIMIT_EXCEEDED when every attempt is rate limited', async () => {
    const { stub, model } = await setup(() => ({ status: 429, headers: { 'retry-after-ms': '5' }, body: { error: { message: 'Rate limit reached for gpt-test' } } }));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(error.message).toBe('openai model gpt-test: rate limited (HTTP 429), retried 2 times: Rate limit reached for gpt-test');
    expect(error.cause).toBeInstanceOf(Error);
    expect(stub.requests).toHaveLength(3);
  });

  it.each([
    ['no choices', { body: { id: 'x', choices: [] } }, 'choices: no choices'],
    ['a body that is not a completion', { body: 'Service Unavailable', headers: { 'content-type': 'text/plain' } }, 'unusable completion'],
    ['a custom tool call', completion({ content: null, tool_calls: [{ id: 'c', type: 'custom', custom: { name: 'x', input: '' } }] }, 'tool_calls'), 'made a custom tool call'],
  ])('should fail with MODEL_MISBEHAVIOUR on %s', async (_, answer, message) => {
    const { stub, model } = await setup(() => answer as StubAnswer);
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('MODEL_MISBEHAVIOUR');
    expect(error.fault).toBe('model');
    expect(error.message).toContain(message);
    expect(stub.requests).toHaveLength(1);
  });

  it.each([
    ['cut mid-string', '{"path":"src/par', /^the arguments are not valid JSON \(.+; 16 characters, ending "\{\\"path\\":\\"src\/par"\)$/],
    ['not an object', '["a.ts"]', /^the arguments are not a JSON object \(got an array\)$/],
  ])('should hand over a tool call whose arguments are %s with argumentsError, for the model to read, not fail the call', async (_, args, why) => {
    const { model } = await setup(() => completion({ content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'read_file', arguments: args } }] }, 'tool_calls'));
    const reply = await model.call(conversation, { signal: signal() });
    expect(reply.toolCalls).toHaveLength(1);
    expect(reply.toolCalls[0]).toMatchObject({ id: 'c', name: 'read_file', arguments: {} });
    expect(reply.toolCalls[0]!.argumentsError).toMatch(why);
  });

  it('should fail with AGENT_TIMEOUT when no attempt answers within timeoutMs', async () => {
    const { stub, model } = await setup(() => ({ hang: true }), { timeoutMs: 100, maxRetries: 1 });
    const started = performance.now();
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_TIMEOUT');
    expect(error.message).toBe('openai model gpt-test: no reply within 100 ms per attempt, retried once');
    // the timed-out attempt is retried once after the SDK's backoff
    expect(stub.requests).toHaveLength(2);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('should abort the HTTP request and reject with the reason when the signal aborts', async () => {
    const { stub, model } = await setup(() => ({ hang: true }));
    const controller = new AbortController();
    const call = model.call(conversation, { signal: controller.signal });
    await vi.waitFor(() => expect(stub.requests).toHaveLength(1));
    const started = performance.now();
    controller.abort(new Error('session cancelled'));
    await expect(call).rejects.toThrow('session cancelled');
    expect(performance.now() - started).toBeLessThan(200);
    await vi.waitFor(() => expect(stub.requests[0]!.signal.aborted).toBe(true));
    await expect(model.call(conversation, { signal: controller.signal })).rejects.toThrow('session cancelled');
    expect(stub.requests).toHaveLength(1);
  });

  it('should reject at once when aborted while the SDK waits to retry', async () => {
    const { stub, model } = await setup(() => ({ status: 429, headers: { 'retry-after': '5' }, body: { error: { message: 'slow down' } } }));
    const controller = new AbortController();
    const call = model.call(conversation, { signal: controller.signal });
    await vi.waitFor(() => expect(stub.requests).toHaveLength(1));
    const started = performance.now();
    controller.abort(new Error('session cancelled'));
    await expect(call).rejects.toThrow('session cancelled');
    expect(performance.now() - started).toBeLessThan(200);
  });

  it('should fail with CONFIGURATION_INVALID on a refused key, naming the variable, without retrying', async () => {
    const { stub, model } = await setup((r) => ({ status: 401, body: { error: { message: `Incorrect API key provided: ${String(r.headers.authorization)}`, code: 'invalid_api_key' } } }));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('CONFIGURATION_INVALID');
    expect(error.message).toContain('OPENAI_API_KEY');
    expect(error.message).not.toContain(KEY);
    expect(inspect(error, { depth: 10 })).not.toContain(KEY);
    expect(stub.requests).toHaveLength(1);
  });

  it('should keep the key out of the error and its cause when the server echoes it back', async () => {
    const { model } = await setup((r) => ({
      status: 400,
      headers: { 'x-echo': String(r.headers.authorization) },
      body: { error: { message: `bad request from ${String(r.headers.authorization)}`, param: { key: KEY } } },
    }));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_ERROR');
    expect(error.message).toBe('openai model gpt-test: HTTP 400: bad request from Bearer ***');
    expect(error.cause).toBeInstanceOf(Error);
    const everything = inspect(error, { depth: 10, showHidden: true }) + JSON.stringify(error) + String((error.cause as Error).stack);
    expect(everything).not.toContain(KEY);
    expect(everything).toContain('Bearer ***');
  });

  it('should fail with AGENT_ERROR naming the server when it cannot be reached', async () => {
    const { stub, model } = await setup(() => ok, { maxRetries: 0 });
    await stub.close();
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_ERROR');
    expect(error.message).toMatch(/^openai model gpt-test: cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/);
  });

  it('should refuse invalid options with CONFIGURATION_INVALID without printing the key', () => {
    expect(() => new OpenAIModel({ apiKey: KEY, model: '', timeoutMs: -5 })).toThrowError(/invalid openai model options:\n {2}- model: .*\n {2}- timeoutMs: /);
    expect(() => new OpenAIModel({ apiKey: '', model: 'gpt-test' })).toThrowError(/apiKey/);
    try {
      new OpenAIModel({ apiKey: KEY, baseURL: 'not a url', model: 'gpt-test' });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toContain('baseURL');
      expect((error as Error).message).not.toContain(KEY);
    }
  });
});

describe('google model (Gemini through its OpenAI-compatible endpoint, the same SDK)', () => {
  it('should speak the Chat Completions format on Google\'s path, with max_tokens, and name itself google', async () => {
    stub = await startGoogleStub(() => completion({ content: 'hello from gemini' }));
    const model = new OpenAIModel({ apiKey: KEY, baseURL: stub.baseURL, model: 'gemini-2.5-flash', maxTokens: 500 }, 'google');
    expect(model.id).toBe('google:gemini-2.5-flash');
    const reply = await model.call(conversation, { signal: signal() });
    expect(reply.text).toBe('hello from gemini');
    const [request] = stub.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1beta/openai/chat/completions' });
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request!.body).toMatchObject({ model: 'gemini-2.5-flash', max_tokens: 500 });
    expect(request!.body).not.toHaveProperty('max_completion_tokens');
  });

  it('should give tool calls ids of its own when the server leaves them empty or repeats one', async () => {
    stub = await startGoogleStub(() =>
      completion(
        {
          content: null,
          tool_calls: [
            { id: '', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
            { id: '', type: 'function', function: { name: 'read_file', arguments: '{"path":"b.ts"}' } },
          ],
        },
        'tool_calls',
      ),
    );
    const model = new OpenAIModel({ apiKey: KEY, baseURL: stub.baseURL, model: 'gemini-2.5-flash' }, 'google');
    const reply = await model.call(conversation, { signal: signal() });
    const ids = reply.toolCalls.map((c) => c.id);
    expect(new Set(ids).size).toBe(2);
    expect(ids.every((id) => id.length > 0)).toBe(true);
  });

  it('should name the provider in errors and never the key', async () => {
    stub = await startGoogleStub(() => ({ status: 401, headers: { 'x-should-retry': 'false' }, body: { error: { message: `API key not valid: ${KEY}` } } }));
    const model = new OpenAIModel({ apiKey: KEY, baseURL: stub.baseURL, model: 'gemini-2.5-flash', maxRetries: 0 }, 'google');
    const error = (await model.call(conversation, { signal: signal() }).then(() => new Error('it answered'), (e: unknown) => e)) as Error;
    expect(error.message).toContain('google');
    expect(error.message).not.toContain(KEY);
    expect(inspect(error, { depth: 5 })).not.toContain(KEY);
  });
});
