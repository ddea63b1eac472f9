/**
 * The scripted model: deterministic, no network, the embedded default. A script says, per agent
 * type and task pattern, which turns (text and tool calls) to produce, in order, plus reactions
 * to injected messages (an idle inquiry, a child's result). Which turn comes next is derived from
 * the conversation alone, so a restored session continues where it was. Every call is recorded
 * so that tests can assert on prompts.
 *
 * Script file:
 * {
 *   "rules": [{
 *     "agent": "architect",            // agent name, or "*"
 *     "prompt": "OAuth",               // case-insensitive regex on the task message ("" = any)
 *     "depth": 0,                      // optional
 *     "turns": [{ "text": "...", "toolCalls": [{ "name": "a2a_spawn_parallel_subtasks", "arguments": {...} }] }],
 *     "reactions": [{ "when": "appear to be idle", "turn": { "text": "Blocked on ..." } }]
 *   }]
 * }
 * A turn may also say "delayMs" (latency, on the injected clock), "error" (the call fails) or
 * "hang" (the call never returns until cancelled). Argument values "$children", "$children[i]"
 * and "$lastSpawn" stand for ids this session has spawned (all, the i-th, the last spawn call's).
 */
import { z } from 'zod';
import type { Clock, Model, ModelRequest } from '../../machines/ports.js';
import type { ChatMessage, ModelReply, ToolCall } from '../../machines/protocol/index.js';
import { A2AError, describeIssues } from '../../actors/errors.js';
import { errorText } from '../../machines/errorText.js';

const ScriptToolCall = z.strictObject({
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()).default({}),
});

export const ScriptTurn = z.strictObject({
  text: z.string().default(''),
  toolCalls: z.array(ScriptToolCall).default([]),
  delayMs: z.number().int().min(0).optional(),
  error: z.string().optional(),
  hang: z.boolean().optional(),
});
export type ScriptTurn = z.infer<typeof ScriptTurn>;

const Regex = z.string().refine(
  (s) => {
    try {
      new RegExp(s, 'i');
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not a valid regular expression' },
);

export const ScriptRule = z.strictObject({
  agent: z.string().default('*'),
  prompt: Regex.default(''),
  depth: z.number().int().min(0).optional(),
  turns: z.array(ScriptTurn).default([]),
  reactions: z.array(z.strictObject({ when: Regex, turn: ScriptTurn })).default([]),
});
export type ScriptRule = z.infer<typeof ScriptRule>;

export const Script = z.strictObject({
  rules: z.array(ScriptRule),
});
export type Script = z.infer<typeof Script>;
/** A script as written (in a file or in code): fields with defaults may be left out. */
export type ScriptInput = z.input<typeof Script>;

export interface RecordedCall {
  sessionId: string;
  agentType: string;
  backend: string;
  depth: number;
  request: ModelRequest;
  reply?: ModelReply;
  error?: string;
}

export function parseScript(data: unknown, source: string): Script {
  const parsed = Script.safeParse(data);
  if (!parsed.success) {
    throw new A2AError('CONFIGURATION_INVALID', `${source}: invalid script:\n${describeIssues(parsed.error.issues)}`, { where: source });
  }
  return parsed.data;
}

const estimateTokens = (chars: number) => Math.ceil(chars / 4);

function firstUserText(messages: ChatMessage[]): string {
  const first = messages.find((m) => m.role === 'user');
  return first?.content ?? '';
}

/** Ids from spawn tool results, oldest first: all, and those of the last spawn call. */
function spawnedIds(messages: ChatMessage[]): { all: string[]; last: string[] } {
  const all: string[] = [];
  let last: string[] = [];
  for (const m of messages) {
    if (m.role !== 'tool' || m.isError || !m.name.startsWith('a2a_spawn')) continue;
    try {
      const ids = (JSON.parse(m.content) as { subTaskIds?: unknown }).subTaskIds;
      if (Array.isArray(ids)) {
        last = ids.map(String);
        all.push(...last);
      }
    } catch {
      // a non-JSON result carries no ids
    }
  }
  return { all, last };
}

function substitute(value: unknown, ids: { all: string[]; last: string[] }): unknown {
  if (value === '$children') return ids.all;
  if (value === '$lastSpawn') return ids.last;
  if (typeof value === 'string') {
    const indexed = /^\$children\[(\d+)\]$/.exec(value);
    if (indexed) return ids.all[Number(indexed[1])] ?? value;
  }
  if (Array.isArray(value)) return value.map((v) => substitute(v, ids));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v, ids)]));
  }
  return value;
}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** True when a turn's arguments use a placeholder, so that others are not rebuilt on every call. */
const usesPlaceholders = (turn: ScriptTurn) =>
  turn.toolCalls.some((c) => /"\$(children|lastSpawn|children\[\d+\])"/.test(JSON.stringify(c.arguments)));
const placeholderTurns = new WeakSet<ScriptTurn>();

interface CompiledRule {
  rule: ScriptRule;
  prompt: RegExp | null;
  reactions: Array<{ when: RegExp; turn: ScriptTurn }>;
}

/** The characters of a turn's tool call arguments as JSON, measured once (its arguments are the script's, the same every call). */
const argumentChars = (turn: ScriptTurn): number => {
  let chars = measuredArguments.get(turn);
  if (chars === undefined) measuredArguments.set(turn, (chars = turn.toolCalls.reduce((n, c) => n + JSON.stringify(c.arguments).length, 0)));
  return chars;
};
const measuredArguments = new WeakMap<ScriptTurn, number>();

/** The reaction of a rule to what was just injected, if any. */
function reactionFor(reactions: CompiledRule['reactions'], text: string | null): CompiledRule['reactions'][number] | undefined {
  if (text === null) return undefined;
  for (const reaction of reactions) if (reaction.when.test(text)) return reaction;
  return undefined;
}

/** How many calls a scripted model keeps for inspection (ScriptedModel.calls). */
export const CALLS_KEPT = 1_000;

export class ScriptedModel implements Model {
  readonly id = 'scripted';
  readonly provider = 'a2a.scripted';
  /** Replies are built here from a validated script. */
  readonly validatesReplies = true;
  /**
   * The calls, in order: the newest CALLS_KEPT of them (a host that serves runs for days would
   * otherwise keep every request it was ever sent).
   */
  readonly calls: RecordedCall[] = [];
  /** Set to false to stop recording (benchmarks). */
  record = true;
  readonly #rules: CompiledRule[];

  constructor(
    script: Script,
    private readonly clock: Clock,
  ) {
    for (const rule of script.rules) {
      for (const turn of [...rule.turns, ...rule.reactions.map((r) => r.turn)]) if (usesPlaceholders(turn)) placeholderTurns.add(turn);
    }
    this.#rules = script.rules.map((rule) => ({
      rule,
      prompt: rule.prompt === '' ? null : new RegExp(rule.prompt, 'i'),
      reactions: rule.reactions.map((r) => ({ when: new RegExp(r.when, 'i'), turn: r.turn })),
    }));
  }

  #rule(request: ModelRequest): CompiledRule | undefined {
    const task = firstUserText(request.messages);
    return this.#rules.find(
      ({ rule, prompt }) =>
        (rule.agent === '*' || rule.agent === request.agentType.agentName) &&
        (rule.depth === undefined || rule.depth === request.depth) &&
        (prompt === null || prompt.test(task)),
    );
  }

  /** The newest user message after the last assistant message, if it was injected by the runtime. */
  static #pendingInjection(messages: ChatMessage[], end: number): string | null {
    for (let i = end - 1; i >= 0; i--) {
      const m = messages[i]!;
      if (m.role === 'assistant') return null;
      if (m.role === 'user' && m.synthetic) return m.content;
    }
    return null;
  }

  /** Which turn to play: a reaction to what was just injected, else the next sequential turn. */
  #select({ rule, reactions }: CompiledRule, messages: ChatMessage[]): ScriptTurn | null {
    // no closures: each call of a 10k fan-out's model passes here (under tsx, which names every
    // closure it makes, one named closure cost 7 µs a call)
    let sequential = 0;
    for (let i = 0; i < messages.length; i++) {
      if (messages[i]!.role === 'assistant' && !reactionFor(reactions, ScriptedModel.#pendingInjection(messages, i))) sequential++;
    }
    const reaction = reactionFor(reactions, ScriptedModel.#pendingInjection(messages, messages.length));
    if (reaction) return reaction.turn;
    return rule.turns[sequential] ?? null;
  }

  async call(request: ModelRequest, options: { signal: AbortSignal }): Promise<ModelReply> {
    const recorded: RecordedCall | null = this.record
      ? { sessionId: request.sessionId, agentType: request.agentType.raw, backend: request.agentType.backend, depth: request.depth, request }
      : null;
    if (recorded) {
      this.calls.push(recorded);
      if (this.calls.length > CALLS_KEPT) this.calls.splice(0, this.calls.length - CALLS_KEPT);
    }
    try {
      const reply = await this.#reply(request, options);
      if (recorded) recorded.reply = reply;
      return reply;
    } catch (error) {
      if (recorded) recorded.error = errorText(error);
      throw error;
    }
  }

  /** `options.signal` is read only by a turn that waits (a caller may make it on first use). */
  async #reply(request: ModelRequest, options: { signal: AbortSignal }): Promise<ModelReply> {
    const rule = this.#rule(request);
    let turnIndex = 0;
    for (const m of request.messages) if (m.role === 'assistant') turnIndex++;
    let turn: ScriptTurn;
    if (!rule) {
      const canComplete = request.tools.some((t) => t.name === 'a2a_subtask_complete');
      const note = `The scripted model has no rule for @${request.agentType.agentName} and this task. Add a rule to the script (see examples/) or configure a real model.`;
      turn = {
        text: note,
        toolCalls: canComplete ? [{ name: 'a2a_subtask_complete', arguments: { status: 'partial', output: note } }] : [],
      };
    } else {
      turn = this.#select(rule, request.messages) ?? { text: '', toolCalls: [] };
    }
    if (turn.delayMs) await sleep(this.clock, turn.delayMs, options.signal);
    if (turn.hang) {
      const signal = options.signal;
      await new Promise<never>((_, reject) => {
        if (signal.aborted) reject(signal.reason);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
    }
    if (turn.error) throw new Error(turn.error);
    const ids = placeholderTurns.has(turn) ? spawnedIds(request.messages) : null;
    const toolCalls: ToolCall[] = turn.toolCalls.map((c, i) => ({
      id: `${request.sessionId}-t${turnIndex}-c${i}`,
      name: c.name,
      arguments: ids ? (substitute(c.arguments, ids) as Record<string, unknown>) : c.arguments,
    }));
    const inputChars = request.system.length + request.messages.reduce((n, m) => n + m.content.length, 0);
    const outputChars = turn.text.length + (ids ? toolCalls.reduce((n, c) => n + JSON.stringify(c.arguments).length, 0) : argumentChars(turn));
    return {
      text: turn.text,
      toolCalls,
      usage: { inputTokens: estimateTokens(inputChars), outputTokens: estimateTokens(outputChars) },
      stopReason: toolCalls.length ? 'tool_use' : 'end_turn',
    };
  }
}
