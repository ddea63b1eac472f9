/**
 * The OpenAI model: one Chat Completions call with function tools per model call, through the
 * official SDK (which also retries; see wire.ts). Works with OpenAI-compatible servers via
 * `baseURL`, and is the `google` provider too: Gemini through Google's OpenAI-compatible
 * endpoint (the official Google SDK needs Node 22). Replies are parsed and checked here, so the
 * agent loop trusts them.
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { z } from 'zod';
import { describeIssues } from '../../actors/errors.js';
import type { Model, ModelRequest } from '../../machines/ports.js';
import type { ModelReply } from '../../machines/protocol/index.js';
import { abortable, billedIfThrown, checkReply, fail, failure, parseArguments, parseOptions, tokens, type CallContext, type ProviderOptions, type ResolvedOptions } from './wire.js';

/** The providers this adapter speaks to, and where each is when no `baseURL` is given. */
export type OpenAIFlavour = 'openai' | 'google';
const DEFAULT_BASE_URL: Record<OpenAIFlavour, string> = {
  openai: 'https://api.openai.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta/openai/',
};

/** The part of a chat completion we read; anything else the server sends is ignored. */
const Completion = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z
            .array(z.object({ id: z.string(), type: z.string(), function: z.object({ name: z.string(), arguments: z.string() }).optional() }))
            .nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1, 'no choices'),
  usage: z.object({ prompt_tokens: z.unknown(), completion_tokens: z.unknown() }).partial().nullish(),
});

/** What a completion billed (also one this adapter throws away): `prompt_tokens` includes the cached ones. */
export function openAIUsage(raw: unknown): ModelReply['usage'] {
  const u = (raw as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; prompt_tokens_details?: { cached_tokens?: unknown } | null } | null } | null)?.usage;
  const read = tokens(u?.prompt_tokens_details?.cached_tokens);
  return { inputTokens: tokens(u?.prompt_tokens), outputTokens: tokens(u?.completion_tokens), ...(read ? { cacheReadTokens: read } : {}) };
}

const STOP_REASONS: Record<string, ModelReply['stopReason']> = {
  stop: 'end_turn',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  length: 'max_tokens',
};

export function toOpenAIMessages(request: ModelRequest): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = request.system ? [{ role: 'system', content: request.system }] : [];
  for (const m of request.messages) {
    if (m.role === 'user') messages.push({ role: 'user', content: m.content });
    else if (m.role === 'tool') messages.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
    else if (m.toolCalls?.length) {
      messages.push({
        role: 'assistant',
        // OpenAI's own replies carry null, not '', next to tool calls
        content: m.content || null,
        tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })),
      });
    } else messages.push({ role: 'assistant', content: m.content });
  }
  return messages;
}

function maxTokensField(limit: number | undefined, flavour: OpenAIFlavour): { max_tokens?: number; max_completion_tokens?: number } {
  if (limit === undefined) return {};
  return flavour === 'google' ? { max_tokens: limit } : { max_completion_tokens: limit };
}

export function toOpenAIRequest(request: ModelRequest, options: ResolvedOptions, flavour: OpenAIFlavour = 'openai'): ChatCompletionCreateParamsNonStreaming {
  return {
    model: request.model ?? options.model,
    messages: toOpenAIMessages(request),
    // an empty `tools` array is rejected by the API
    ...(request.tools.length
      ? { tools: request.tools.map((t) => ({ type: 'function' as const, function: { name: t.name, description: t.description, parameters: t.parameters } })) }
      : {}),
    // `max_tokens` is deprecated and refused by OpenAI's reasoning models; Gemini's endpoint
    // documents `max_tokens`. Only sent when configured.
    ...maxTokensField(request.maxTokens ?? options.maxTokens, flavour),
    ...(options.temperature === undefined ? {} : { temperature: options.temperature }),
  };
}

export function fromOpenAIReply(raw: unknown, context: CallContext): ModelReply {
  const parsed = Completion.safeParse(raw);
  if (!parsed.success) {
    throw fail(context, 'MODEL_MISBEHAVIOUR', `${context.provider} model ${context.model} returned an unusable completion:\n${describeIssues(parsed.error.issues)}`);
  }
  const { choices } = parsed.data;
  const { message, finish_reason } = choices[0]!;
  const seen = new Set<string>();
  const toolCalls = (message.tool_calls ?? []).map((c, i) => {
    if (!c.function) throw fail(context, 'MODEL_MISBEHAVIOUR', `${context.provider} model ${context.model} made a ${c.type} tool call; only function tools are offered`);
    // a server that leaves ids empty or repeats one (some OpenAI-compatible ones do) gets ids of
    // ours: each tool result must answer exactly one call
    const id = c.id && !seen.has(c.id) ? c.id : `call_${i + 1}_${context.model.replace(/[^A-Za-z0-9]/g, '')}`;
    seen.add(id);
    return { id, name: c.function.name, ...parseArguments(c.function.arguments) };
  });
  const stopReason = finish_reason ? STOP_REASONS[finish_reason] : undefined;
  return {
    // a refusal is the model's answer too: the agent should see it rather than silence
    text: message.content ?? message.refusal ?? '',
    toolCalls,
    usage: openAIUsage(raw),
    ...(stopReason ? { stopReason } : {}),
  };
}

export class OpenAIModel implements Model {
  readonly id: string;
  readonly modelName: string;
  readonly provider = 'openai';
  /** Replies are parsed from the wire and checked against the protocol here. */
  readonly validatesReplies = true;
  readonly #options: ResolvedOptions;
  /** The SDK's client, made on the first call: a process that never calls OpenAI does not load its SDK (0.1-0.2 s). */
  #client: Promise<{ client: OpenAI; sdk: typeof OpenAI }> | null = null;
  readonly #flavour: OpenAIFlavour;

  constructor(options: ProviderOptions, flavour: OpenAIFlavour = 'openai') {
    this.#flavour = flavour;
    this.#options = parseOptions(flavour, options);
    this.id = this.#options.id ?? `${flavour}:${this.#options.model}`;
    this.modelName = this.#options.model;
  }

  #sdk(): Promise<{ client: OpenAI; sdk: typeof OpenAI }> {
    return (this.#client ??= import('openai').then(({ default: SDK }) => ({
      sdk: SDK,
      client: new SDK({
        apiKey: this.#options.apiKey,
        baseURL: this.#options.baseURL ?? DEFAULT_BASE_URL[this.#flavour],
        timeout: this.#options.timeoutMs,
        maxRetries: this.#options.maxRetries,
      }),
    })));
  }

  async call(request: ModelRequest, { signal }: { signal: AbortSignal }): Promise<ModelReply> {
    if (signal.aborted) throw signal.reason;
    const context: CallContext = {
      provider: this.#flavour,
      model: request.model ?? this.#options.model,
      baseURL: this.#options.baseURL ?? DEFAULT_BASE_URL[this.#flavour],
      options: this.#options,
    };
    const { client, sdk } = await this.#sdk();
    let raw: unknown;
    try {
      raw = await abortable(client.chat.completions.create(toOpenAIRequest(request, this.#options, this.#flavour), { signal }), signal);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw failure(error, context, sdk);
    }
    // a completion thrown away as unusable was billed all the same
    return billedIfThrown(() => checkReply(fromOpenAIReply(raw, context), context), () => openAIUsage(raw));
  }
}
