/**
 * Fitting a conversation into a model's context window. A long-running worker's conversation
 * grows with every tool result; before it overflows the window of the profile it runs on (or of
 * a smaller model it is switched to), the middle is replaced by a summary the model writes.
 * The task and the latest turns stay verbatim, and an assistant's tool calls always stay together
 * with their results (the providers refuse a tool result whose call is missing, and vice versa).
 */
import type { Model, ModelRequest } from '../../machines/ports.js';
import type { ChatMessage, ModelReply } from '../../machines/protocol/index.js';
import { A2AError } from '../errors.js';

/** Characters per token: English prose and code average 3.5–4.5 with the common tokenizers. */
const CHARS_PER_TOKEN = 4;
/** Tokens each message costs besides its text (role and framing in the provider's format). */
const MESSAGE_OVERHEAD = 4;
/** Tokens each tool call costs besides its name and arguments (id, type, framing). */
const TOOL_CALL_OVERHEAD = 8;

/**
 * A rough token count: characters / 4 over the system prompt, every message's text, each tool
 * call's name and JSON arguments and each tool result's name and content, plus a few tokens of
 * framing per message and per call. No tokenizer: it only decides when to summarize, so that
 * being off by some percent costs an early or late summary, never a failure; keep a reserve.
 */
export function estimateTokens(messages: ChatMessage[], system?: string): number {
  let chars = system?.length ?? 0;
  let overhead = system ? MESSAGE_OVERHEAD : 0;
  for (const m of messages) {
    chars += m.content.length;
    overhead += MESSAGE_OVERHEAD;
    if (m.role === 'assistant') {
      for (const call of m.toolCalls ?? []) {
        chars += call.name.length + call.id.length + JSON.stringify(call.arguments).length;
        overhead += TOOL_CALL_OVERHEAD;
      }
    } else if (m.role === 'tool') {
      chars += m.name.length + m.toolCallId.length;
    }
  }
  return Math.ceil(chars / CHARS_PER_TOKEN) + overhead;
}

export interface FitOptions {
  /** The model that writes the summary (usually the session's own). Called without tools. */
  model: Model;
  /** The session's request without messages and tools: system prompt, agent type, session, depth. */
  request: Omit<ModelRequest, 'messages' | 'tools'>;
  messages: ChatMessage[];
  /** The window of the model the conversation is for. */
  contextWindow: number;
  /** Tokens kept free for the reply and the tool specifications sent with the request. */
  reserveTokens: number;
  signal: AbortSignal;
  /** Each summary call's usage as the provider reported it (cache tokens included), as it returns: a call priced and told of its own. */
  onCall?: (usage: ModelReply['usage']) => void;
}

export interface FitResult {
  /** The input array itself when nothing had to change. */
  messages: ChatMessage[];
  summarized: boolean;
  /** Estimated tokens (messages and system prompt) before and after. */
  before: number;
  /**
   * After fitting. Still above the budget only when the task and the latest turn alone are: the
   * task is never cut, so the caller should fail the call with a clear error then.
   */
  after: number;
  /** Tokens the summary calls used, for the cost ledger. */
  usage: { inputTokens: number; outputTokens: number; calls: number };
}

/** The first words of the synthetic message, so that people and models can tell what it is. */
export const SUMMARY_HEADER = '[Summary of the earlier conversation, written to fit the context window';

/** Budget for the turns kept verbatim: about half, leaving the other half to task and summary. */
const TAIL_SHARE = 0.5;
/** The longest summary asked for, in tokens: longer ones stop being summaries. */
const MAX_SUMMARY_TOKENS = 4000;

/**
 * Messages grouped so that no group may be split: an assistant message with tool calls together
 * with everything up to its last tool result (a message injected between results stays inside);
 * every other message alone. A tool result whose call is unknown joins the group before it.
 */
function groups(messages: ChatMessage[]): ChatMessage[][] {
  const out: ChatMessage[][] = [];
  /** Tool call id → index in `out` of the group of the assistant message that made it. */
  const callGroup = new Map<string, number>();
  for (const m of messages) {
    if (m.role === 'tool' && out.length > 0) {
      const at = callGroup.get(m.toolCallId) ?? out.length - 1;
      if (at < out.length - 1) {
        const merged = out.splice(at).flat();
        out.push(merged);
        for (const [id, index] of callGroup) if (index > at) callGroup.set(id, at);
      }
      out.at(-1)!.push(m);
      continue;
    }
    out.push([m]);
    if (m.role === 'assistant') for (const c of m.toolCalls ?? []) callGroup.set(c.id, out.length - 1);
  }
  return out;
}

function render(m: ChatMessage, maxChars: number): string {
  const clip = (s: string) => (s.length > maxChars ? `${s.slice(0, maxChars)}… [${s.length - maxChars} characters cut]` : s);
  if (m.role === 'user') return `${m.synthetic ? 'RUNTIME' : 'USER'}: ${clip(m.content)}`;
  if (m.role === 'tool') return `TOOL RESULT ${m.name}${m.isError ? ' (error)' : ''}: ${clip(m.content)}`;
  const calls = (m.toolCalls ?? []).map((c) => `\nASSISTANT CALLS ${c.name} ${clip(JSON.stringify(c.arguments))}`).join('');
  return `ASSISTANT: ${clip(m.content)}${calls}`;
}

const instructions = (targetTokens: number, previous: string | null) =>
  [
    'Summarize the part of your conversation below so that you can continue the task from the summary alone: it replaces these messages in your context.',
    'Keep: what was decided and why, what was done (files changed, commands run, sub-tasks spawned and their ids and results), facts learned, errors met and how they were handled, and what remains to do. Drop: chatter, repeated content, full file contents.',
    `Write plain text, at most about ${targetTokens} tokens. Do not call tools.`,
    ...(previous === null ? [] : ['', 'The summary of the conversation before this part, to fold into yours:', previous]),
    '',
    'The conversation:',
  ].join('\n');

/**
 * `messages` fitted into `contextWindow - reserveTokens`: unchanged when they fit; otherwise the
 * first user message (the task), a synthetic summary of the middle, and the latest turns that fit
 * in about half the budget. A middle too long for one summary request is summarized in parts,
 * each call folding the previous summary in. A summary that is still too long is cut.
 * Errors of the model (and aborts) propagate; an empty summary is a MODEL_MISBEHAVIOUR.
 */
export async function fitConversation(options: FitOptions): Promise<FitResult> {
  const { request, messages, contextWindow, reserveTokens } = options;
  const budget = contextWindow - reserveTokens;
  const usage = { inputTokens: 0, outputTokens: 0, calls: 0 };
  const before = estimateTokens(messages, request.system);
  if (before <= budget) return { messages, summarized: false, before, after: before, usage };
  if (budget <= 0) {
    throw new A2AError('CONFIGURATION_INVALID', `a context window of ${contextWindow} tokens leaves nothing after reserving ${reserveTokens} for the reply`, {
      where: 'contextWindow',
    });
  }

  const taskIndex = messages.findIndex((m) => m.role === 'user');
  const task = taskIndex >= 0 ? [messages[taskIndex]!] : [];
  const rest = groups(messages.filter((_, i) => i !== taskIndex));

  // the latest groups that fit in the tail's share, newest first, stopping at the first that does not
  const tailBudget = Math.floor(budget * TAIL_SHARE);
  let tailTokens = 0;
  let cut = rest.length;
  while (cut > 0) {
    const size = estimateTokens(rest[cut - 1]!);
    if (tailTokens + size > tailBudget) break;
    tailTokens += size;
    cut--;
  }
  const middle = rest.slice(0, cut).flat();
  const tail = rest.slice(cut).flat();
  if (middle.length === 0) return { messages, summarized: false, before, after: before, usage };

  const fixed = estimateTokens([...task, ...tail], request.system) + MESSAGE_OVERHEAD + 32;
  // a quarter of the budget at most, so that each summary request still has room for a part of the transcript
  const targetTokens = Math.max(64, Math.min(MAX_SUMMARY_TOKENS, Math.floor(budget / 4), Math.floor((budget - fixed) * 0.8)));
  const summary = await summarize(options, middle, budget, targetTokens, usage);

  const header = `${SUMMARY_HEADER}: ${middle.length} messages]\n`;
  const roomChars = Math.max(0, (budget - fixed) * CHARS_PER_TOKEN - header.length);
  const cutNote = '… [summary cut to fit the context window]';
  const body = summary.length <= roomChars ? summary : `${summary.slice(0, Math.max(0, roomChars - cutNote.length))}${cutNote}`;
  const fitted: ChatMessage[] = [...task, { role: 'user', content: header + body, synthetic: true }, ...tail];
  return { messages: fitted, summarized: true, before, after: estimateTokens(fitted, request.system), usage };
}

/** The summary of `middle`, in as many calls as it takes for each request to fit the budget. */
async function summarize(
  options: FitOptions,
  middle: ChatMessage[],
  budget: number,
  targetTokens: number,
  usage: FitResult['usage'],
): Promise<string> {
  const { model, request, signal } = options;
  // each request: system prompt, instructions, the previous summary and a part of the transcript;
  // the reply needs no room here, it comes out of `reserveTokens` like any other reply
  const fixed = estimateTokens([], request.system) + Math.ceil(instructions(targetTokens, '').length / CHARS_PER_TOKEN) + targetTokens + 2 * MESSAGE_OVERHEAD;
  const partChars = Math.max(1000, (budget - fixed) * CHARS_PER_TOKEN);
  // one huge tool result must not take a whole part: its head is enough to summarize
  const perMessage = Math.max(500, Math.floor(partChars / 4));

  const parts: string[] = [];
  let current = '';
  for (const m of middle) {
    const line = render(m, perMessage);
    if (current && current.length + line.length + 2 > partChars) {
      parts.push(current);
      current = '';
    }
    current += (current ? '\n\n' : '') + line;
  }
  if (current) parts.push(current);

  let summary: string | null = null;
  for (const part of parts) {
    const reply = await model.call(
      { ...request, tools: [], messages: [{ role: 'user', content: `${instructions(targetTokens, summary)}\n${part}`, synthetic: true }] },
      { signal },
    );
    usage.inputTokens += reply.usage.inputTokens;
    usage.outputTokens += reply.usage.outputTokens;
    usage.calls += 1;
    options.onCall?.(reply.usage);
    const text = typeof reply.text === 'string' ? reply.text.trim() : '';
    if (!text) {
      throw new A2AError('MODEL_MISBEHAVIOUR', `model ${model.id} returned an empty summary of ${middle.length} messages`, { where: model.id });
    }
    summary = text;
  }
  return summary!;
}
