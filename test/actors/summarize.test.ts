import { describe, expect, it } from 'vitest';
import { isA2AError } from '../../actors/errors.js';
import { parseAgentType } from '../../actors/config/registry.js';
import { estimateTokens, fitConversation, SUMMARY_HEADER } from '../../actors/session/summarize.js';
import type { Model, ModelRequest } from '../../machines/ports.js';
import type { ChatMessage, ModelReply } from '../../machines/protocol/index.js';

/** A model that records every request and answers with `answer(n)` (n: 1 for the first call). */
function fakeModel(answer: (n: number, request: ModelRequest) => string | Error = (n) => `SUMMARY-${n}`) {
  const calls: Array<{ request: ModelRequest; signal: AbortSignal }> = [];
  const model: Model = {
    id: 'fake',
    async call(request, { signal }): Promise<ModelReply> {
      calls.push({ request, signal });
      const text = answer(calls.length, request);
      if (text instanceof Error) throw text;
      return { text, toolCalls: [], usage: { inputTokens: 100, outputTokens: 7 } };
    },
  };
  return { model, calls };
}

const request = { system: 'You are @coder, a worker.', agentType: parseAgentType('@coder'), sessionId: 'w-1', depth: 0 };
const task: ChatMessage = { role: 'user', content: 'TASK: write the parser' };

/** A turn: an assistant message calling two tools, and both results. */
function turn(i: number, resultChars = 800): ChatMessage[] {
  return [
    {
      role: 'assistant',
      content: `step ${i}`,
      toolCalls: [
        { id: `c${i}a`, name: 'read_file', arguments: { path: `a${i}.ts` } },
        { id: `c${i}b`, name: 'read_file', arguments: { path: `b${i}.ts` } },
      ],
    },
    { role: 'tool', toolCallId: `c${i}a`, name: 'read_file', content: `RESULT-${i}a ${'x'.repeat(resultChars)}` },
    { role: 'tool', toolCallId: `c${i}b`, name: 'read_file', content: `RESULT-${i}b ${'y'.repeat(resultChars)}` },
  ];
}

const conversation = (turns: number, resultChars?: number): ChatMessage[] => [task, ...Array.from({ length: turns }, (_, i) => turn(i, resultChars)).flat()];

/** Every tool result follows the assistant message that made its call, and every call has its result. */
function expectPaired(messages: ChatMessage[]) {
  const made = new Set<string>();
  const answered = new Set<string>();
  for (const m of messages) {
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) made.add(c.id);
    if (m.role === 'tool') {
      expect(made.has(m.toolCallId), `result ${m.toolCallId} without its call`).toBe(true);
      answered.add(m.toolCallId);
    }
  }
  expect([...made].filter((id) => !answered.has(id))).toEqual([]);
}

const signal = new AbortController().signal;

describe('estimateTokens', () => {
  it('should count characters / 4 with framing, including tool calls, tool results and the system prompt', () => {
    expect(estimateTokens([{ role: 'user', content: 'x'.repeat(400) }])).toBe(104);
    expect(estimateTokens([{ role: 'user', content: 'x'.repeat(400) }], 'y'.repeat(40))).toBe(118);
    // id "c1" + name "read" + {"path":"a"} = 18 characters → 5, plus message and call framing
    expect(estimateTokens([{ role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'read', arguments: { path: 'a' } }] }])).toBe(17);
    // content "abcd" + name "read" + id "c1" = 10 characters → 3, plus framing
    expect(estimateTokens([{ role: 'tool', toolCallId: 'c1', name: 'read', content: 'abcd' }])).toBe(7);
  });
});

describe('fitConversation', () => {
  it('should return a conversation that fits unchanged, without calling the model', async () => {
    const { model, calls } = fakeModel();
    const messages = conversation(2);
    const result = await fitConversation({ model, request, messages, contextWindow: 10_000, reserveTokens: 1_000, signal });
    expect(result.messages).toBe(messages);
    expect(result).toMatchObject({ summarized: false, after: result.before, usage: { calls: 0 } });
    expect(calls).toHaveLength(0);
  });

  it('should keep the task and the latest turns, and replace the middle by a synthetic summary written without tools', async () => {
    const { model, calls } = fakeModel();
    const messages = conversation(10); // about 460 tokens a turn
    const budget = 4_500;
    const result = await fitConversation({ model, request, messages, contextWindow: budget + 500, reserveTokens: 500, signal });

    expect(result.summarized).toBe(true);
    expect(result.before).toBeGreaterThan(budget);
    expect(result.after).toBeLessThanOrEqual(budget);
    expect(result.after).toBe(estimateTokens(result.messages, request.system));
    expect(result.messages[0]).toBe(task);
    expect(result.messages[1]).toEqual({ role: 'user', synthetic: true, content: expect.stringContaining(SUMMARY_HEADER) });
    expect((result.messages[1] as { content: string }).content).toMatch(/SUMMARY-1$/);
    // the latest four turns fit in half the budget, verbatim and in order
    expect(result.messages.slice(2)).toEqual(messages.slice(-12));
    expectPaired(result.messages);

    expect(calls).toHaveLength(1);
    const asked = calls[0]!.request;
    expect(asked.tools).toEqual([]);
    expect(asked).toMatchObject({ system: request.system, sessionId: 'w-1', agentType: request.agentType });
    expect(calls[0]!.signal).toBe(signal);
    expect(asked.messages).toHaveLength(1);
    const transcript = asked.messages[0]!.content;
    // the dropped turns are in the request, the kept ones and the task are not
    expect(transcript).toContain('RESULT-0a');
    expect(transcript).toContain('RESULT-5b');
    expect(transcript).not.toContain('RESULT-6a');
    expect(transcript).not.toContain('TASK: write the parser');
    expect(result.usage).toEqual({ inputTokens: 100, outputTokens: 7, calls: 1 });
  });

  it('should never split a tool call from its results, even when the latest results alone would fit', async () => {
    const { model, calls } = fakeModel();
    // the last turn: a huge first result, a tiny second one, then a message injected by the runtime
    const last: ChatMessage[] = [
      { role: 'assistant', content: 'reading', toolCalls: [{ id: 'big', name: 'read_file', arguments: {} }, { id: 'small', name: 'read_file', arguments: {} }] },
      { role: 'tool', toolCallId: 'big', name: 'read_file', content: `BIG ${'z'.repeat(4_000)}` },
      { role: 'tool', toolCallId: 'small', name: 'read_file', content: 'SMALL ok' },
      { role: 'user', content: 'CHILD RESULT arrived', synthetic: true },
    ];
    const messages = [...conversation(3), ...last];
    const result = await fitConversation({ model, request, messages, contextWindow: 1_600, reserveTokens: 200, signal });

    expectPaired(result.messages);
    expect(result.messages.map((m) => m.content.slice(0, 12))).toEqual([task.content.slice(0, 12), SUMMARY_HEADER.slice(0, 12), 'CHILD RESULT']);
    expect(calls.some((c) => c.request.messages[0]!.content.includes('SMALL ok'))).toBe(true);
  });

  it('should keep a message injected between tool results inside its turn', async () => {
    const { model } = fakeModel();
    const injected: ChatMessage[] = [
      { role: 'assistant', content: 'two calls', toolCalls: [{ id: 'p', name: 'read_file', arguments: {} }, { id: 'q', name: 'read_file', arguments: {} }] },
      { role: 'tool', toolCallId: 'p', name: 'read_file', content: `P ${'p'.repeat(3_000)}` },
      { role: 'user', content: 'INJECTED between results', synthetic: true },
      { role: 'tool', toolCallId: 'q', name: 'read_file', content: 'Q done' },
    ];
    const result = await fitConversation({ model, request, messages: [...conversation(3), ...injected], contextWindow: 1_400, reserveTokens: 200, signal });
    expect(result.summarized).toBe(true);
    expectPaired(result.messages);
    expect(result.messages.some((m) => m.content === 'Q done')).toBe(false);
  });

  it('should summarize a middle too long for one request in parts, folding each summary into the next', async () => {
    const { model, calls } = fakeModel();
    const messages = conversation(40);
    const result = await fitConversation({ model, request, messages, contextWindow: 3_000, reserveTokens: 500, signal });
    expect(calls.length).toBeGreaterThan(1);
    for (const { request: asked } of calls) expect(estimateTokens(asked.messages, asked.system)).toBeLessThanOrEqual(2_500);
    expect(calls[1]!.request.messages[0]!.content).toContain('SUMMARY-1');
    expect((result.messages[1] as { content: string }).content).toMatch(new RegExp(`SUMMARY-${calls.length}$`));
    expect(result.usage.calls).toBe(calls.length);
    expect(result.after).toBeLessThanOrEqual(2_500);
  });

  it('should cut a summary that is too long to fit', async () => {
    const { model } = fakeModel(() => 'S'.repeat(50_000));
    const result = await fitConversation({ model, request, messages: conversation(10), contextWindow: 2_500, reserveTokens: 500, signal });
    expect(result.summarized).toBe(true);
    expect(result.after).toBeLessThanOrEqual(2_000);
    expect((result.messages[1] as { content: string }).content).toMatch(/summary cut to fit the context window\]$/);
  });

  it("should let the model's errors through, and refuse an empty summary", async () => {
    const boom = new Error('HTTP 500 from the provider');
    const failing = fakeModel(() => boom);
    await expect(fitConversation({ model: failing.model, request, messages: conversation(10), contextWindow: 2_500, reserveTokens: 500, signal })).rejects.toBe(boom);

    const empty = fakeModel(() => '  ');
    const error = await fitConversation({ model: empty.model, request, messages: conversation(10), contextWindow: 2_500, reserveTokens: 500, signal }).catch((e: unknown) => e);
    expect(isA2AError(error, 'MODEL_MISBEHAVIOUR')).toBe(true);
  });
});
