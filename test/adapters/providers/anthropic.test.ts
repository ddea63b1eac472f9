import { inspect } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AnthropicModel, toAnthropicMessages } from '../../../adapters/model/anthropic.js';
import type { ProviderOptions } from '../../../adapters/model/wire.js';
import { conversation, KEY, readFileTool, rejection, signal } from './fixtures.js';
import { anthropicMessage, inOrder, startAnthropicStub, type Stub, type StubAnswer, type StubHandler, type StubRequest } from './stubs.js';

let stub: Stub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

async function setup(handler: StubHandler, options: Partial<ProviderOptions> = {}) {
  stub = await startAnthropicStub(handler);
  const model = new AnthropicModel({ apiKey: KEY, baseURL: stub.baseURL, model: 'claude-test', ...options });
  return { stub, model };
}

const ok: StubAnswer = { body: anthropicMessage({ text: 'done', toolCalls: [], usage: { inputTokens: 10, outputTokens: 2 } }) };
const message = (content: unknown, stop_reason: string | null = 'end_turn', usage: object | null = { input_tokens: 3, output_tokens: 4 }) => ({
  body: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-test', content, stop_reason, stop_sequence: null, usage },
});
const apiError = (status: number, type: string, text: string, headers: Record<string, string> = {}): StubAnswer => ({
  status,
  headers,
  body: { type: 'error', error: { type, message: text } },
});
/** The credential header the SDK sent, whichever it is, for stubs that echo it. */
const credential = (r: StubRequest) => String(r.headers['x-api-key'] ?? r.headers.authorization);
const gaps = (s: Stub) => s.requests.slice(1).map((r, i) => r.receivedAt - s.requests[i]!.receivedAt);

describe('anthropic model', () => {
  it('should send alternating turns with tool_use and tool_result blocks and map a tool-calling reply', async () => {
    const { stub, model } = await setup(() =>
      message(
        [
          { type: 'text', text: 'Now ' },
          { type: 'text', text: 'd.ts.' },
          { type: 'tool_use', id: 'toolu_9', name: 'read_file', input: { path: 'd.ts' } },
        ],
        'tool_use',
        { input_tokens: 120, output_tokens: 15, cache_read_input_tokens: 0 },
      ),
    );
    const reply = await model.call(conversation, { signal: signal() });

    expect(reply).toEqual({
      text: 'Now d.ts.',
      toolCalls: [{ id: 'toolu_9', name: 'read_file', arguments: { path: 'd.ts' } }],
      usage: { inputTokens: 120, outputTokens: 15 },
      stopReason: 'tool_use',
    });
    expect(stub.requests).toHaveLength(1);
    const [request] = stub.requests;
    expect(request).toMatchObject({ method: 'POST', path: '/v1/messages' });
    // SDK v1 sends the key as a bearer token (older SDKs used `x-api-key`)
    expect(request!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(request!.headers['anthropic-version']).toBeTypeOf('string');
    expect(request!.body).toEqual({
      model: 'claude-test',
      max_tokens: 4096,
      system: [{ type: 'text', text: conversation.system, cache_control: { type: 'ephemeral' } }],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Write the parser' }] },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Reading both files first.' },
            { type: 'tool_use', id: 'call_1', name: 'read_file', input: { path: 'a.ts' } },
            { type: 'tool_use', id: 'call_2', name: 'read_file', input: { path: 'b.ts' } },
          ],
        },
        {
          // both results and the synthetic message after them: one user turn, results first
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: 'export const a = 1;', is_error: false },
            { type: 'tool_result', tool_use_id: 'call_2', content: 'ENOENT: b.ts', is_error: true },
            { type: 'text', text: 'Message from parent: b.ts is optional' },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'call_3', name: 'read_file', input: { path: 'c.ts' } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_3', content: 'export const c = 3;', is_error: false }] },
      ],
      tools: [{ name: 'read_file', description: readFileTool.description, input_schema: readFileTool.parameters, cache_control: { type: 'ephemeral' } }],
    });
  });

  it('should merge consecutive user messages, put tool results first and never send an empty turn', () => {
    expect(
      toAnthropicMessages([
        { role: 'user', content: 'task' },
        { role: 'user', content: '[idle inquiry 1 of 3] ...', synthetic: true },
        { role: 'assistant', content: '' },
        { role: 'user', content: 'status?', synthetic: true },
        { role: 'assistant', content: 'ok', toolCalls: [{ id: 'c1', name: 'x', arguments: {} }] },
        { role: 'user', content: 'an injection before the result', synthetic: true },
        { role: 'tool', toolCallId: 'c1', name: 'x', content: '' },
      ]),
    ).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'task' }, { type: 'text', text: '[idle inquiry 1 of 3] ...' }] },
      { role: 'assistant', content: [{ type: 'text', text: '(empty)' }] },
      { role: 'user', content: [{ type: 'text', text: 'status?' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'ok' }, { type: 'tool_use', id: 'c1', name: 'x', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'c1', content: '', is_error: false },
          { type: 'text', text: 'an injection before the result' },
        ],
      },
    ]);
  });

  it("should use the request's model override, the configured max tokens and temperature, and omit empty tools and system", async () => {
    const { stub, model } = await setup(() => ok, { maxTokens: 1000, temperature: 0.2 });
    expect(model.id).toBe('anthropic:claude-test');
    expect(model.validatesReplies).toBe(true);
    await model.call({ ...conversation, system: '', model: 'claude-override', tools: [] }, { signal: signal() });
    expect(stub.requests[0]!.body).toMatchObject({ model: 'claude-override', max_tokens: 1000, temperature: 0.2 });
    expect(stub.requests[0]!.body).not.toHaveProperty('tools');
    expect(stub.requests[0]!.body).not.toHaveProperty('system');
  });

  it('should map stop reasons, skip block types it never asked for, and count missing usage as 0', async () => {
    const { model } = await setup(
      inOrder(
        message([{ type: 'text', text: 'halfway' }], 'max_tokens'),
        message([{ type: 'thinking', thinking: '...', signature: 's' }, { type: 'text', text: 'stopped' }], 'stop_sequence', null),
        message([{ type: 'text', text: '' }], 'pause_turn'),
      ),
    );
    expect(await model.call(conversation, { signal: signal() })).toEqual({ text: 'halfway', toolCalls: [], usage: { inputTokens: 3, outputTokens: 4 }, stopReason: 'max_tokens' });
    expect(await model.call(conversation, { signal: signal() })).toEqual({ text: 'stopped', toolCalls: [], usage: { inputTokens: 0, outputTokens: 0 }, stopReason: 'end_turn' });
    expect(await model.call(conversation, { signal: signal() })).toEqual({ text: '', toolCalls: [], usage: { inputTokens: 3, outputTokens: 4 } });
  });

  it('should retry a 429 after exactly the delay that retry-after-ms or retry-after asks for', async () => {
    const { stub, model } = await setup(
      inOrder(apiError(429, 'rate_limit_error', 'slow down', { 'retry-after-ms': '150' }), apiError(429, 'rate_limit_error', 'slow down', { 'retry-after': '0.1' }), ok),
    );
    expect((await model.call(conversation, { signal: signal() })).text).toBe('done');
    expect(stub.requests).toHaveLength(3);
    const [first, second] = gaps(stub);
    // the SDK's own backoff would wait at least 375 ms, then 750 ms
    expect(first).toBeGreaterThanOrEqual(140);
    expect(first).toBeLessThan(370);
    expect(second).toBeGreaterThanOrEqual(90);
    expect(second).toBeLessThan(700);
  });

  it('should retry a 500 and an overload (529) and return the reply of the next attempt', async () => {
    const { stub, model } = await setup(
      inOrder(apiError(500, 'api_error', 'Internal server error', { 'retry-after-ms': '10' }), apiError(529, 'overloaded_error', 'Overloaded', { 'retry-after-ms': '10' }), ok),
    );
    expect((await model.call(conversation, { signal: signal() })).text).toBe('done');
    expect(stub.requests).toHaveLength(3);
  });

  it('should back off exponentially between 5xx retries when the server gives no usable retry-after', async () => {
    // `retry-after: 0` is not a usable delay for this SDK: it falls back to its own backoff
    const { stub, model } = await setup(inOrder(apiError(503, 'api_error', 'unavailable', { 'retry-after': '0' }), apiError(502, 'api_error', 'bad gateway'), ok));
    expect((await model.call(conversation, { signal: signal() })).text).toBe('done');
    const [first, second] = gaps(stub);
    expect(first).toBeGreaterThanOrEqual(370);
    expect(second).toBeGreaterThanOrEqual(740);
    expect(second).toBeGreaterThan(first!);
  });

  it('should fail with RATE_LIMIT_EXCEEDED when every attempt is rate limited', async () => {
    const { stub, model } = await setup(() => apiError(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', { 'retry-after-ms': '5' }));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(error.message).toBe('anthropic model claude-test: rate limited (HTTP 429), retried 2 times: Number of request tokens has exceeded your per-minute rate limit');
    expect(error.cause).toBeInstanceOf(Error);
    expect(stub.requests).toHaveLength(3);
  });

  it.each([
    ['no content blocks', message([]), 'content: no content blocks'],
    ['a body that is not a message', { body: 'Bad Gateway', headers: { 'content-type': 'text/plain' } }, 'unusable message'],
    ['a text block without text', message([{ type: 'text' }]), 'content[0].text'],
    ['a tool_use block without an id', message([{ type: 'tool_use', name: 'read_file', input: {} }], 'tool_use'), 'content[0].id'],
  ])('should fail with MODEL_MISBEHAVIOUR on %s', async (_, answer, text) => {
    const { stub, model } = await setup(() => answer as StubAnswer);
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('MODEL_MISBEHAVIOUR');
    expect(error.message).toContain(text);
    expect(stub.requests).toHaveLength(1);
  });

  it('should fail with CONTEXT_OVERFLOW, billed, when the window filled up while it wrote (model_context_window_exceeded)', async () => {
    const { model } = await setup(() => ({ body: { ...(message([{ type: 'text', text: 'partial' }], 'model_context_window_exceeded') as { body: object }).body, usage: { input_tokens: 199_000, output_tokens: 1000 } } }));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('CONTEXT_OVERFLOW');
    expect(error.message).toContain('filled its context window');
    expect(error.billed).toEqual({ inputTokens: 199_000, outputTokens: 1000 });
  });

  it('should hand over a tool_use whose input is not an object with argumentsError, for the model to read', async () => {
    const { model } = await setup(() => message([{ type: 'tool_use', id: 't', name: 'read_file', input: 'a.ts' }], 'tool_use'));
    const reply = await model.call(conversation, { signal: signal() });
    expect(reply.toolCalls[0]).toEqual({ id: 't', name: 'read_file', arguments: {}, argumentsError: 'the arguments are not a JSON object (got string)' });
  });

  it('should fail with AGENT_TIMEOUT when no attempt answers within timeoutMs', async () => {
    const { stub, model } = await setup(() => ({ hang: true }), { timeoutMs: 100, maxRetries: 1 });
    const started = performance.now();
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_TIMEOUT');
    expect(error.message).toBe('anthropic model claude-test: no reply within 100 ms per attempt, retried once');
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
  });

  it('should reject at once when aborted while the SDK waits to retry', async () => {
    const { stub, model } = await setup(() => apiError(529, 'overloaded_error', 'Overloaded', { 'retry-after': '5' }));
    const controller = new AbortController();
    const call = model.call(conversation, { signal: controller.signal });
    await vi.waitFor(() => expect(stub.requests).toHaveLength(1));
    const started = performance.now();
    controller.abort(new Error('session cancelled'));
    await expect(call).rejects.toThrow('session cancelled');
    expect(performance.now() - started).toBeLessThan(200);
    expect(stub.requests).toHaveLength(1);
  });

  it('should fail with CONFIGURATION_INVALID on a refused key, naming the variable, without retrying', async () => {
    const { stub, model } = await setup((r) => apiError(401, 'authentication_error', `invalid credentials: ${credential(r)}`));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('CONFIGURATION_INVALID');
    expect(error.fault).toBe('user');
    expect(error.message).toContain('ANTHROPIC_API_KEY');
    expect(error.message).not.toContain(KEY);
    expect(inspect(error, { depth: 10 })).not.toContain(KEY);
    expect(stub.requests).toHaveLength(1);
  });

  it('should keep the key out of the error and its cause when the server echoes it back', async () => {
    const { model } = await setup((r) => ({
      ...apiError(400, 'invalid_request_error', `messages.0: bad input from ${credential(r)}`),
      headers: { 'x-echo': credential(r) },
    }));
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_ERROR');
    expect(error.message).toBe('anthropic model claude-test: HTTP 400: messages.0: bad input from Bearer ***');
    const everything = inspect(error, { depth: 10, showHidden: true }) + JSON.stringify(error) + String((error.cause as Error).stack);
    expect(everything).not.toContain(KEY);
    expect(everything).toContain('bad input from Bearer ***');
  });

  it('should fail with AGENT_ERROR naming the server when it cannot be reached', async () => {
    const { stub, model } = await setup(() => ok, { maxRetries: 0 });
    await stub.close();
    const error = await rejection(model.call(conversation, { signal: signal() }));
    expect(error.code).toBe('AGENT_ERROR');
    expect(error.message).toMatch(/^anthropic model claude-test: cannot reach http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\)$/);
  });
});
