/**
 * The Anthropic model: one Messages API call with tools per model call, through the official SDK
 * (which also retries; see wire.ts). The API wants strictly alternating user/assistant turns with
 * tool results inside a user turn, so the conversation is folded into that shape here.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { ContentBlockParam, MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { z } from 'zod';
import { describeIssues } from '../../actors/errors.js';
import type { Model, ModelRequest } from '../../machines/ports.js';
import type { ChatMessage, ModelReply, ToolCall } from '../../machines/protocol/index.js';
import { abortable, billedIfThrown, checkReply, fail, failure, parseOptions, tokens, toolArguments, type CallContext, type ProviderOptions, type ResolvedOptions } from './wire.js';

const DEFAULT_BASE_URL = 'https://api.anthropic.com';
/** The API requires `max_tokens`. */
export const DEFAULT_MAX_TOKENS = 4096;
/** The API refuses empty text blocks and empty turns; an empty reply is sent back as this. */
export const EMPTY_TURN = '(empty)';

/** The part of a message we read; block types we never ask for (thinking, server tools) are skipped. */
const Reply = z.object({
  content: z.array(z.looseObject({ type: z.string() })).min(1, 'no content blocks'),
  stop_reason: z.string().nullish(),
  usage: z.object({ input_tokens: z.unknown(), output_tokens: z.unknown(), cache_creation_input_tokens: z.unknown(), cache_read_input_tokens: z.unknown() }).partial().nullish(),
});

/**
 * What a message billed, read from anything that looks like one (also a message this adapter
 * throws away): `input_tokens` counts only the uncached input, so every input token is it plus
 * the cache's reads and writes.
 */
export function anthropicUsage(raw: unknown): ModelReply['usage'] {
  const u = (raw as { usage?: Record<string, unknown> } | null)?.usage ?? {};
  const read = tokens(u.cache_read_input_tokens);
  const write = tokens(u.cache_creation_input_tokens);
  return {
    inputTokens: tokens(u.input_tokens) + read + write,
    outputTokens: tokens(u.output_tokens),
    ...(read ? { cacheReadTokens: read } : {}),
    ...(write ? { cacheWriteTokens: write } : {}),
  };
}
const TextBlock = z.object({ type: z.literal('text'), text: z.string() });
const ToolUseBlock = z.object({ type: z.literal('tool_use'), id: z.string(), name: z.string(), input: z.unknown() });

const STOP_REASONS: Record<string, ModelReply['stopReason']> = {
  end_turn: 'end_turn',
  stop_sequence: 'end_turn',
  refusal: 'end_turn',
  tool_use: 'tool_use',
  max_tokens: 'max_tokens',
};

const text = (s: string): ContentBlockParam[] => (s ? [{ type: 'text', text: s }] : []);

/**
 * User and assistant turns, alternating: consecutive messages of one side are merged into one turn
 * (tool results, the runtime's synthetic messages after them, several user messages), each
 * message staying its own block. Tool results go first in their turn, as the API requires.
 */
export function toAnthropicMessages(messages: ChatMessage[]): MessageParam[] {
  const turns: Array<{ role: 'user' | 'assistant'; content: ContentBlockParam[] }> = [];
  const add = (role: 'user' | 'assistant', blocks: ContentBlockParam[]) => {
    const last = turns.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else turns.push({ role, content: blocks });
  };
  for (const m of messages) {
    if (m.role === 'user') add('user', text(m.content));
    else if (m.role === 'tool') {
      add('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content, is_error: m.isError ?? false }]);
    } else {
      const calls = (m.toolCalls ?? []).map((c): ContentBlockParam => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments }));
      add('assistant', [...text(m.content), ...calls]);
    }
  }
  for (const turn of turns) {
    if (turn.role === 'user') {
      // a stable sort: tool results keep their order, texts keep theirs
      turn.content.sort((a, b) => Number(b.type === 'tool_result') - Number(a.type === 'tool_result'));
    }
    if (turn.content.length === 0) turn.content.push({ type: 'text', text: EMPTY_TURN });
  }
  return turns;
}

/**
 * Prompt caching: the tools and the system prompt are the same on every call of a session (and
 * of its siblings), so a breakpoint after each lets the API read them from its cache (a tenth of
 * the input price) instead of reading them again. The API caches only prefixes of at least
 * 1,024 tokens (2,048 on Haiku); shorter ones are simply not cached.
 */
const CACHED = { cache_control: { type: 'ephemeral' as const } };

export function toAnthropicRequest(request: ModelRequest, options: ResolvedOptions): MessageCreateParamsNonStreaming {
  const tools = request.tools.map((t, i) => ({
    name: t.name,
    description: t.description,
    input_schema: { type: 'object' as const, ...t.parameters },
    ...(i === request.tools.length - 1 ? CACHED : {}),
  }));
  return {
    model: request.model ?? options.model,
    max_tokens: request.maxTokens ?? options.maxTokens ?? DEFAULT_MAX_TOKENS,
    ...(request.system ? { system: [{ type: 'text' as const, text: request.system, ...CACHED }] } : {}),
    messages: toAnthropicMessages(request.messages),
    ...(tools.length ? { tools } : {}),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
  };
}

export function fromAnthropicReply(raw: unknown, context: CallContext): ModelReply {
  const parsed = Reply.safeParse(raw);
  const unusable = (why: string) => fail(context, 'MODEL_MISBEHAVIOUR', `anthropic model ${context.model} returned an unusable message:\n${why}`);
  if (!parsed.success) throw unusable(describeIssues(parsed.error.issues));
  const texts: string[] = [];
  const toolCalls: ToolCall[] = [];
  parsed.data.content.forEach((block, i) => {
    if (block.type === 'text') {
      const t = TextBlock.safeParse(block);
      if (!t.success) throw unusable(describeIssues(t.error.issues.map((issue) => ({ ...issue, path: ['content', i, ...issue.path] }))));
      texts.push(t.data.text);
    } else if (block.type === 'tool_use') {
      const t = ToolUseBlock.safeParse(block);
      if (!t.success) throw unusable(describeIssues(t.error.issues.map((issue) => ({ ...issue, path: ['content', i, ...issue.path] }))));
      toolCalls.push({ id: t.data.id, name: t.data.name, ...toolArguments(t.data.input) });
    }
  });
  const { stop_reason } = parsed.data;
  // the window filled up while it wrote: not a reply to use, and no output limit to raise — the
  // conversation is what must shrink (the agent loop shortens it on CONTEXT_OVERFLOW)
  if (stop_reason === 'model_context_window_exceeded') {
    throw fail(context, 'CONTEXT_OVERFLOW', `anthropic model ${context.model} stopped: the conversation filled its context window (model_context_window_exceeded)`);
  }
  const stopReason = stop_reason ? STOP_REASONS[stop_reason] : undefined;
  return {
    text: texts.join(''),
    toolCalls,
    usage: anthropicUsage(parsed.data),
    ...(stopReason ? { stopReason } : {}),
  };
}

export class AnthropicModel implements Model {
  readonly id: string;
  readonly modelName: string;
  readonly provider = 'anthropic';
  /** Replies are parsed from the wire and checked against the protocol here. */
  readonly validatesReplies = true;
  readonly defaultMaxTokens: number;
  readonly #options: ResolvedOptions;
  /** The SDK's client, made on the first call: a process that never calls Anthropic does not load its SDK (0.1-0.2 s). */
  #client: Promise<{ client: Anthropic; sdk: typeof Anthropic }> | null = null;

  constructor(options: ProviderOptions) {
    this.#options = parseOptions('anthropic', options);
    this.id = this.#options.id ?? `anthropic:${this.#options.model}`;
    this.modelName = this.#options.model;
    this.defaultMaxTokens = this.#options.maxTokens ?? DEFAULT_MAX_TOKENS;
  }

  #sdk(): Promise<{ client: Anthropic; sdk: typeof Anthropic }> {
    return (this.#client ??= import('@anthropic-ai/sdk').then(({ default: SDK }) => ({
      sdk: SDK,
      client: new SDK({
        apiKey: this.#options.apiKey,
        baseURL: this.#options.baseURL ?? DEFAULT_BASE_URL,
        // always explicit: without it the SDK refuses large max_tokens without streaming
        timeout: this.#options.timeoutMs,
        maxRetries: this.#options.maxRetries,
      }),
    })));
  }

  async call(request: ModelRequest, { signal }: { signal: AbortSignal }): Promise<ModelReply> {
    if (signal.aborted) throw signal.reason;
    const context: CallContext = {
      provider: 'anthropic',
      model: request.model ?? this.#options.model,
      baseURL: this.#options.baseURL ?? DEFAULT_BASE_URL,
      options: this.#options,
    };
    const { client, sdk } = await this.#sdk();
    let raw: unknown;
    try {
      raw = await abortable(client.messages.create(toAnthropicRequest(request, this.#options), { signal }), signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw failure(error, context, sdk);
    }
    // a message thrown away as unusable was billed all the same
    return billedIfThrown(() => checkReply(fromAnthropicReply(raw, context), context), () => anthropicUsage(raw));
  }
}
