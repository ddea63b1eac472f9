/**
 * What the OpenAI and Anthropic adapters share: their options, turning SDK failures into
 * A2AErrors with the key redacted, an abort that rejects at once, and the final check of a reply.
 * Retries are the SDKs' own (429, 408, 409, 5xx and connection errors, exponential backoff that
 * honours `retry-after-ms` / `retry-after`); nothing here retries.
 */
import { z } from 'zod';
import { A2AError, describeIssues, isA2AError } from '../../actors/errors.js';
import type { ErrorCode } from '../../machines/protocol/index.js';
import { ModelReply } from '../../machines/protocol/index.js';
import { API_KEY_ENV, redact, redactError, type Provider } from './secrets.js';
import { errorText } from '../../machines/errorText.js';

export const ProviderOptions = z.object({
  apiKey: z.string().min(1),
  baseURL: z.url().optional(),
  model: z.string().min(1),
  maxTokens: z.number().int().positive().optional(),
  temperature: z.number().min(0).max(2).optional(),
  /** Per HTTP attempt (the SDKs retry a timed-out attempt like a connection error). */
  timeoutMs: z.number().int().positive().default(600_000),
  /** Retries after the first attempt. */
  maxRetries: z.number().int().min(0).max(10).default(2),
  id: z.string().min(1).optional(),
});
export type ProviderOptions = z.input<typeof ProviderOptions>;
export type ResolvedOptions = z.output<typeof ProviderOptions>;

export function parseOptions(provider: Provider, options: ProviderOptions): ResolvedOptions {
  const parsed = ProviderOptions.safeParse(options);
  if (!parsed.success) {
    // zod's messages name fields and limits, never the value, so the key cannot leak here
    throw new A2AError('CONFIGURATION_INVALID', `invalid ${provider} model options:\n${describeIssues(parsed.error.issues)}`, { where: provider });
  }
  return parsed.data;
}

/** The SDK error classes a failure is sorted by (both SDKs have these, as statics of the client). */
export interface SdkErrors {
  APIError: abstract new (...args: never[]) => Error & { status: number | undefined };
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
}

/** One call's identity, for messages: which provider, model and server, and what to redact. */
export interface CallContext {
  provider: Provider;
  model: string;
  baseURL: string;
  options: ResolvedOptions;
}

export function fail(context: CallContext, code: ErrorCode, message: string, cause?: unknown): A2AError {
  const secrets = [context.options.apiKey];
  return new A2AError(code, redact(message, secrets), {
    where: `${context.provider}:${context.model}`,
    ...(cause === undefined ? {} : { cause: redactError(cause, secrets) }),
  });
}

/** The server's origin only: a base URL may carry credentials (`https://user:pass@host`). */
function origin(baseURL: string): string {
  try {
    return new URL(baseURL).origin;
  } catch {
    return '(invalid base URL)';
  }
}

/** The deepest `code` (ECONNREFUSED, ENOTFOUND…) or message in a cause chain. */
function rootCause(error: unknown): string {
  let current = error;
  let last = '';
  for (let i = 0; i < 5 && current instanceof Error; i++) {
    const code = (current as NodeJS.ErrnoException).code;
    last = typeof code === 'string' ? code : current.message;
    current = current.cause;
  }
  return last;
}

/**
 * How the providers say that a request is longer than the model's context window: OpenAI's
 * `context_length_exceeded` ("This model's maximum context length is …"), Anthropic's "prompt is
 * too long: … tokens > … maximum", Gemini's "input token count … exceeds the maximum".
 */
const OVERFLOW = /context_length_exceeded|maximum context length|prompt is too long|context window|input token count.*exceeds|too many (input )?tokens/i;

/** A thrown SDK error (after the SDK's retries) as an A2AError. Aborts are handled by the caller. */
export function failure(error: unknown, context: CallContext, sdk: SdkErrors): A2AError {
  if (isA2AError(error)) return error;
  const { provider, model, options } = context;
  const who = `${provider} model ${model}`;
  const retries = options.maxRetries === 0 ? '' : options.maxRetries === 1 ? ', retried once' : `, retried ${options.maxRetries} times`;
  if (error instanceof sdk.APIConnectionTimeoutError) {
    return fail(context, 'AGENT_TIMEOUT', `${who}: no reply within ${options.timeoutMs} ms per attempt${retries}`, error);
  }
  if (error instanceof sdk.APIConnectionError) {
    return fail(context, 'AGENT_ERROR', `${who}: cannot reach ${origin(context.baseURL)} (${rootCause(error)})${retries}`, error);
  }
  if (error instanceof sdk.APIError && typeof error.status === 'number') {
    const status = error.status;
    // the SDKs' rule: the server's `x-should-retry`, else 408, 409, 429 and 5xx
    const should = (error as { headers?: Headers }).headers?.get?.('x-should-retry');
    const retried = should === 'true' || (should !== 'false' && (status === 408 || status === 409 || status === 429 || status >= 500)) ? retries : '';
    // what the server said: Anthropic's SDK keeps it apart, OpenAI's prefixes it with the status
    const apiMessage = (error as { apiMessage?: unknown }).apiMessage;
    const detail = typeof apiMessage === 'string' ? apiMessage : error.message.replace(/^\d{3} /, '');
    if (status === 429) {
      return fail(context, 'RATE_LIMIT_EXCEEDED', `${who}: rate limited (HTTP 429)${retried}: ${detail}`, error);
    }
    if (status === 401 || status === 403) {
      const env = API_KEY_ENV[provider];
      return fail(
        context,
        'CONFIGURATION_INVALID',
        `${provider} refused the API key (HTTP ${status}): check ${env} or the "${provider}" entry of the secrets file, and that the key may use ${model}`,
        error,
      );
    }
    if (status === 408 || status === 504) {
      return fail(context, 'AGENT_TIMEOUT', `${who}: the server timed out (HTTP ${status})${retried}: ${detail}`, error);
    }
    // the conversation does not fit: the agent loop shortens it and asks again
    if ((status === 400 || status === 413) && (OVERFLOW.test(detail) || (error as { code?: unknown }).code === 'context_length_exceeded')) {
      return fail(context, 'CONTEXT_OVERFLOW', `${who}: the conversation does not fit the model's context window (HTTP ${status}): ${detail}`, error);
    }
    const hint = status === 404 ? ` (check the model name and the base URL ${origin(context.baseURL)})` : '';
    return fail(context, 'AGENT_ERROR', `${who}: HTTP ${status}${retried}${hint}: ${detail}`, error);
  }
  return fail(context, 'AGENT_ERROR', `${who}: ${errorText(error)}`, error);
}

/**
 * `promise`, but rejected with the signal's reason as soon as it aborts. The SDKs abort the HTTP
 * request themselves, but the OpenAI SDK sleeps between retries without watching the signal
 * (a `retry-after: 30` would hold a cancelled session for 30 s); its late rejection is swallowed.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * A tool call's arguments, which must be an object. Ones that are not are no reason to fail the
 * session: the call carries `argumentsError`, is not run, and the model reads why (ToolCall).
 */
export type ReadArguments = { arguments: Record<string, unknown>; argumentsError?: string };

export function toolArguments(value: unknown): ReadArguments {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const got = value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;
    return { arguments: {}, argumentsError: `the arguments are not a JSON object (got ${got})` };
  }
  return { arguments: value as Record<string, unknown> };
}

/** Tool arguments sent as a JSON string (OpenAI). */
export function parseArguments(raw: string): ReadArguments {
  // some compatible servers send "" for a call without arguments
  if (raw.trim() === '') return { arguments: {} };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (cause) {
    const tail = raw.length > 40 ? `…${raw.slice(-40)}` : raw;
    return { arguments: {}, argumentsError: `the arguments are not valid JSON (${(cause as Error).message}; ${raw.length} characters, ending ${JSON.stringify(tail)})` };
  }
  return toolArguments(value);
}

/**
 * `read()`, with what the provider billed for the reply attached to the A2AError it throws when
 * the reply is unusable (`billed`): the agent loop prices it, since it was paid for.
 */
export function billedIfThrown<T>(read: () => T, usage: () => ModelReply['usage']): T {
  try {
    return read();
  } catch (error) {
    if (isA2AError(error)) error.billed = usage();
    throw error;
  }
}

/** The reply checked against the protocol, so that the agent loop can skip its own check. */
export function checkReply(reply: unknown, context: CallContext): ModelReply {
  const parsed = ModelReply.safeParse(reply);
  if (!parsed.success) {
    throw fail(context, 'MODEL_MISBEHAVIOUR', `${context.provider} model ${context.model} returned an unusable reply:\n${describeIssues(parsed.error.issues)}`);
  }
  return parsed.data;
}

/** A token count from the wire: 0 when absent or not a count. */
export const tokens = (n: unknown): number => (typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : 0);
