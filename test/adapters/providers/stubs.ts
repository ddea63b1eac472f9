/**
 * Local stand-ins for the OpenAI and Anthropic HTTP APIs, so that the real SDK clients can be
 * tested without a network: `node:http` on 127.0.0.1, an ephemeral port, the endpoints the SDKs
 * call. Every request is recorded (headers, parsed JSON body, time) and answered with whatever
 * the handler returns: a status, headers and body, after a delay, or never (until the client
 * goes away).
 *
 * `scriptedOpenAI` / `scriptedAnthropic` are handlers that answer from a `ScriptedModel`, so that
 * whole runs can be pointed at a stub. The wire request is turned back into a `ModelRequest`:
 * - agent type, session and depth come from the headers `x-a2a-agent` (e.g. `@coder`),
 *   `x-a2a-session` and `x-a2a-depth` when a client sends them (the adapters do not);
 * - otherwise from the system prompt's `You are @name, a worker …` / `… a sub-task at depth N …`
 *   line (agent `@agent` and depth 0 when absent), and the session id is `stub-` plus a hash of
 *   agent and task message, stable over a session's calls;
 * - user messages after the first are marked `synthetic` (the runtime injects them); tool
 *   messages get their tool's name from the assistant call they answer.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EMPTY_TURN } from '../../../adapters/model/anthropic.js';
import type { ScriptedModel } from '../../../adapters/model/scripted.js';
import type { ModelRequest } from '../../../machines/ports.js';
import type { ChatMessage, ModelReply, ToolCall, ToolSpec } from '../../../machines/protocol/index.js';

export interface StubRequest {
  /** 0 for the first request this stub received. */
  index: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (the raw text when it is not JSON). */
  body: unknown;
  /** `performance.now()` when the request arrived, to measure retry delays. */
  receivedAt: number;
  /** Aborted when the client goes away before the answer was sent (timeout, abort). */
  signal: AbortSignal;
}

export interface StubAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** JSON-encoded unless a string. */
  body?: unknown;
  delayMs?: number;
  /** Never answer: hold the connection until the client closes it. */
  hang?: boolean;
}

export type StubHandler = (request: StubRequest) => StubAnswer | Promise<StubAnswer>;

export interface Stub {
  /** What to pass to the SDK as `baseURL`. */
  baseURL: string;
  requests: StubRequest[];
  close(): Promise<void>;
}

async function startStub(route: string, basePath: string, handler: StubHandler): Promise<Stub> {
  const requests: StubRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // recorded as text
      }
      const gone = new AbortController();
      res.on('close', () => {
        if (!res.writableFinished) gone.abort(new Error('client went away'));
      });
      const request: StubRequest = {
        index: requests.length,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        receivedAt: performance.now(),
        signal: gone.signal,
      };
      requests.push(request);
      void answer(request).then((a) => {
        if (gone.signal.aborted || res.writableEnded) return;
        const payload = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
        res.writeHead(a.status ?? 200, { 'content-type': 'application/json', ...a.headers });
        res.end(payload);
      });
    });
  });

  async function answer(request: StubRequest): Promise<StubAnswer> {
    if (request.method !== 'POST' || request.path !== route) {
      return { status: 404, body: { error: { type: 'not_found_error', message: `stub: no route ${request.method} ${request.path}` } } };
    }
    try {
      const a = await handler(request);
      if (a.hang) {
        await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }));
      } else if (a.delayMs) {
        await new Promise((resolve) => setTimeout(resolve, a.delayMs));
      }
      return a;
    } catch (error) {
      // a broken handler must fail the test, not be retried: `x-should-retry: false`
      return { status: 500, headers: { 'x-should-retry': 'false' }, body: { error: { type: 'api_error', message: `stub handler failed: ${String(error)}` } } };
    }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}${basePath}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `POST /v1/chat/completions`; give the SDK `baseURL: stub.baseURL` (ends in `/v1`). */
export const startOpenAIStub = (handler: StubHandler) => startStub('/v1/chat/completions', '/v1', handler);

/** Gemini's OpenAI-compatible endpoint: `POST /v1beta/openai/chat/completions`; `baseURL: stub.baseURL`. */
export const startGoogleStub = (handler: StubHandler) => startStub('/v1beta/openai/chat/completions', '/v1beta/openai', handler);

/** `POST /v1/messages`; give the SDK `baseURL: stub.baseURL` (the bare origin). */
export const startAnthropicStub = (handler: StubHandler) => startStub('/v1/messages', '', handler);

/** A handler that gives the answers in order, repeating the last. */
export function inOrder(...answers: StubAnswer[]): StubHandler {
  return (request) => answers[Math.min(request.index, answers.length - 1)]!;
}

// ---------------------------------------------------------------------------------------------
// Wire bodies

/** A Chat Completions response carrying `reply`. */
export function openAICompletion(reply: ModelReply, model = 'stub-model'): object {
  const finish = reply.stopReason === 'max_tokens' ? 'length' : reply.toolCalls.length ? 'tool_calls' : 'stop';
  return {
    id: 'chatcmpl-stub',
    object: 'chat.completion',
    created: 0,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text === '' && reply.toolCalls.length ? null : reply.text,
          refusal: null,
          ...(reply.toolCalls.length
            ? { tool_calls: reply.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) }
            : {}),
        },
        finish_reason: finish,
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: reply.usage.inputTokens, completion_tokens: reply.usage.outputTokens, total_tokens: reply.usage.inputTokens + reply.usage.outputTokens },
  };
}

/** A Messages API response carrying `reply` (an empty reply as one empty text block). */
export function anthropicMessage(reply: ModelReply, model = 'stub-model'): object {
  const content = [
    ...(reply.text || !reply.toolCalls.length ? [{ type: 'text', text: reply.text }] : []),
    ...reply.toolCalls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.arguments })),
  ];
  return {
    id: 'msg_stub',
    type: 'message',
    role: 'assistant',
    model,
    content,
    stop_reason: reply.stopReason ?? (reply.toolCalls.length ? 'tool_use' : 'end_turn'),
    stop_sequence: null,
    usage: { input_tokens: reply.usage.inputTokens, output_tokens: reply.usage.outputTokens },
  };
}

// ---------------------------------------------------------------------------------------------
// Wire request → ModelRequest, for the scripted handlers

type Identity = Pick<ModelRequest, 'agentType' | 'sessionId' | 'depth'>;

function identify(headers: IncomingHttpHeaders, system: string, messages: ChatMessage[]): Identity {
  const header = (name: string) => (typeof headers[name] === 'string' ? (headers[name] as string) : undefined);
  const fromPrompt = /You are @([\w.-]+), (?:a worker|a sub-task at depth (\d+))/.exec(system);
  const raw = header('x-a2a-agent') ?? `@${fromPrompt?.[1] ?? 'agent'}`;
  const agentName = raw.replace(/^@/, '').replace(/^[a-z]+:/, '');
  const depth = Number(header('x-a2a-depth') ?? fromPrompt?.[2] ?? 0);
  const task = messages.find((m) => m.role === 'user')?.content ?? '';
  const sessionId = header('x-a2a-session') ?? `stub-${createHash('sha256').update(`${agentName}\n${task}`).digest('hex').slice(0, 8)}`;
  return { agentType: { raw, backend: 'default', agentName }, sessionId, depth };
}

/** Text of an OpenAI content (string or parts) or Anthropic content (string or blocks). */
function plain(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((p: { type?: string; text?: string }) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
  return '';
}

/** Marks user messages after the first as synthetic, and names tool results after their call. */
function finish(messages: ChatMessage[]): ChatMessage[] {
  const names = new Map<string, string>();
  let seenUser = false;
  return messages.map((m) => {
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) names.set(c.id, c.name);
    if (m.role === 'tool') return { ...m, name: names.get(m.toolCallId) ?? m.name };
    if (m.role !== 'user') return m;
    const synthetic = seenUser;
    seenUser = true;
    return synthetic ? { ...m, synthetic: true } : m;
  });
}

interface OpenAIWire {
  messages: Array<{ role: string; content?: unknown; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }>; tool_call_id?: string }>;
  tools?: Array<{ function: { name: string; description?: string; parameters?: Record<string, unknown> } }>;
}

export function openAIToModelRequest(request: StubRequest): ModelRequest {
  const body = request.body as OpenAIWire;
  const system: string[] = [];
  const messages: ChatMessage[] = [];
  for (const m of body.messages) {
    if (m.role === 'system' || m.role === 'developer') system.push(plain(m.content));
    else if (m.role === 'user') messages.push({ role: 'user', content: plain(m.content) });
    else if (m.role === 'tool') messages.push({ role: 'tool', toolCallId: m.tool_call_id ?? '', name: '', content: plain(m.content) });
    else if (m.role === 'assistant') {
      const toolCalls: ToolCall[] = (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: JSON.parse(c.function.arguments) as Record<string, unknown> }));
      messages.push({ role: 'assistant', content: plain(m.content), ...(toolCalls.length ? { toolCalls } : {}) });
    }
  }
  const tools: ToolSpec[] = (body.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? {} }));
  const finished = finish(messages);
  return { system: system.join('\n\n'), messages: finished, tools, ...identify(request.headers, system.join('\n\n'), finished) };
}

interface AnthropicWire {
  system?: unknown;
  messages: Array<{ role: 'user' | 'assistant'; content: unknown }>;
  tools?: Array<{ name: string; description?: string; input_schema?: Record<string, unknown> }>;
}
type AnthropicBlock = { type: string; text?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };

export function anthropicToModelRequest(request: StubRequest): ModelRequest {
  const body = request.body as AnthropicWire;
  const system = plain(body.system);
  const messages: ChatMessage[] = [];
  for (const m of body.messages) {
    const blocks: AnthropicBlock[] = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : (m.content as AnthropicBlock[]);
    if (m.role === 'assistant') {
      const text = blocks.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('');
      const toolCalls: ToolCall[] = blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({ id: b.id ?? '', name: b.name ?? '', arguments: (b.input ?? {}) as Record<string, unknown> }));
      messages.push({ role: 'assistant', content: text === EMPTY_TURN ? '' : text, ...(toolCalls.length ? { toolCalls } : {}) });
      continue;
    }
    // one user turn may hold several messages: each block is one
    for (const b of blocks) {
      if (b.type === 'tool_result') {
        messages.push({ role: 'tool', toolCallId: b.tool_use_id ?? '', name: '', content: plain(b.content), ...(b.is_error ? { isError: true } : {}) });
      } else if (b.type === 'text' && b.text !== EMPTY_TURN) {
        messages.push({ role: 'user', content: b.text ?? '' });
      }
    }
  }
  const tools: ToolSpec[] = (body.tools ?? []).map((t) => ({ name: t.name, description: t.description ?? '', parameters: t.input_schema ?? {} }));
  const finished = finish(messages);
  return { system, messages: finished, tools, ...identify(request.headers, system, finished) };
}

/** A scripted turn that fails becomes a 500 the SDK does not retry (the script would fail again). */
function scripted(model: ScriptedModel, toRequest: (r: StubRequest) => ModelRequest, toWire: (reply: ModelReply, model: string) => object): StubHandler {
  return async (request) => {
    const modelName = (request.body as { model?: string }).model ?? 'stub-model';
    try {
      return { body: toWire(await model.call(toRequest(request), { signal: request.signal }), modelName) };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return { status: 500, headers: { 'x-should-retry': 'false' }, body: { type: 'error', error: { type: 'api_error', message } } };
    }
  };
}

export const scriptedOpenAI = (model: ScriptedModel): StubHandler => scripted(model, openAIToModelRequest, openAICompletion);
export const scriptedAnthropic = (model: ScriptedModel): StubHandler => scripted(model, anthropicToModelRequest, anthropicMessage);
