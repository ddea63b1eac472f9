/**
 * The human channel of `a2a run` on a terminal: each item the orchestrator asks a person (an
 * `ask_user` permission, a worker's question) is prompted for in turn; an item answered elsewhere
 * (`a2a inbox` in another shell) or expired is taken off the prompt. Without a terminal the run
 * prints where to answer instead, and `a2a inbox` is the channel. A program answers with a
 * handler of its own (the library's `human` option).
 */
import { createInterface, type Interface } from 'node:readline';
import { HumanAnswer as HumanAnswerShape, type HumanAnswer, type HumanItem } from '../machines/protocol/index.js';
import type { HumanChannel } from '../actors/people/humanGate.js';
import { describeIssues } from '../actors/errors.js';
import { errorText } from '../machines/errorText.js';

/** What answers a person's items from code: an answer, or undefined to leave the item pending. */
export type HumanHandler = (item: HumanItem, signal: AbortSignal) => HandlerAnswer | undefined | Promise<HandlerAnswer | undefined>;

/** A program's answer: `by` defaults to "code". */
export type HandlerAnswer = Omit<HumanAnswer, 'by'> & { by?: string };

export interface PromptIo {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
  /** Called around a prompt, so that a live display stops redrawing over it. */
  pause?(): void;
  resume?(): void;
}

/** Parses what a person typed for an item; null when it must be asked again. */
export function parseReply(item: HumanItem, line: string, by: string): HumanAnswer | null {
  const text = line.trim();
  if (item.kind === 'question') return text ? { text, by } : null;
  if (item.request?.elicitation) {
    // an MCP server's question: "decline [reason]", or the answer (JSON, or the one value it asks for: "no" may be one)
    const declined = /^(deny|decline)\b\s*(.*)$/i.exec(text);
    if (declined) return { approved: false, by, ...(declined[2] ? { reason: declined[2] } : {}) };
    return text ? { approved: true, text, by } : null;
  }
  const m = /^(y|yes|a|approve|n|no|d|deny)\b\s*(.*)$/i.exec(text);
  if (!m) return null;
  const approved = /^(y|yes|a|approve)$/i.test(m[1]!);
  return { approved, by, ...(m[2] ? { reason: m[2] } : {}) };
}

export class TerminalPrompt implements HumanChannel {
  readonly #queue: HumanItem[] = [];
  #current: { item: HumanItem; abort: AbortController } | null = null;
  #rl: Interface | null = null;
  #closed = false;

  constructor(
    private readonly io: PromptIo,
    private readonly answer: (id: string, answer: HumanAnswer) => void,
    private readonly by = process.env.USER ?? 'terminal',
  ) {}

  present(item: HumanItem): void {
    if (this.#closed || this.#queue.some((i) => i.id === item.id) || this.#current?.item.id === item.id) return;
    this.#queue.push(item);
    if (!this.#current) void this.#next();
  }

  withdraw(id: string, why: 'answered' | 'expired' | 'withdrawn'): void {
    const queued = this.#queue.findIndex((i) => i.id === id);
    if (queued >= 0) this.#queue.splice(queued, 1);
    if (this.#current?.item.id === id) {
      this.#current.abort.abort();
      this.io.output.write(`\n  (${why === 'answered' ? 'answered elsewhere' : why === 'expired' ? 'timed out: the default applies' : 'no longer needed'})\n`);
    }
  }

  close(): void {
    this.#closed = true;
    this.#current?.abort.abort();
    this.#rl?.close();
    this.#rl = null;
  }

  async #next(): Promise<void> {
    const item = this.#queue.shift();
    if (!item || this.#closed) {
      this.#current = null;
      this.io.resume?.();
      return;
    }
    this.io.pause?.();
    const abort = new AbortController();
    this.#current = { item, abort };
    this.#rl ??= createInterface({ input: this.io.input, output: this.io.output, terminal: true });
    const header = item.request?.elicitation
      ? `\n? ${item.requesterId} (task ${item.taskId}): the MCP server "${item.request.elicitation.server}" asks: ${item.request.elicitation.message}\n  ${item.request.detail}\n  your answer (JSON, or the value; "decline" to refuse): `
      : item.kind === 'permission'
        ? `\n? ${item.requesterId} (task ${item.taskId}) asks permission: ${item.title}\n  approve? [y/n, optionally followed by a reason] `
        : `\n? ${item.workerId} (task ${item.taskId}) asks: ${item.question ?? item.title}\n  your answer: `;
    for (;;) {
      const line = await new Promise<string | null>((resolve) => {
        if (abort.signal.aborted) return resolve(null);
        this.#rl!.question(header, { signal: abort.signal }, resolve);
        abort.signal.addEventListener('abort', () => resolve(null), { once: true });
      });
      if (line === null) break;
      const reply = parseReply(item, line, this.by);
      if (reply) {
        this.answer(item.id, reply);
        break;
      }
      this.io.output.write(item.kind === 'permission' && !item.request?.elicitation ? '  please type y or n\n' : '  please type an answer\n');
    }
    await this.#next();
  }
}

/** Without a terminal: say once per item where it can be answered. */
export class PrintedNotice implements HumanChannel {
  constructor(
    private readonly output: NodeJS.WritableStream,
    private readonly runId: string,
  ) {}

  present(item: HumanItem): void {
    const how = item.request?.elicitation
      ? `a2a inbox answer ${item.id} '<JSON or value>'   (or: a2a inbox deny ${item.id})`
      : item.kind === 'permission'
        ? `a2a inbox approve ${item.id}   (or: a2a inbox deny ${item.id})`
        : `a2a inbox answer ${item.id} "<answer>"`;
    this.output.write(`? waiting for a person (${Math.round(item.timeoutMs / 1000)} s, then ${item.onTimeout.text}): ${item.title}\n  answer with: ${how}   [run ${this.runId}]\n`);
  }

  withdraw(): void {}
}

/**
 * The human channel of a program: each item goes to its handler; an answer it returns is sent
 * like a person's, and an item answered elsewhere or expired aborts the handler's signal.
 */
export function codeChannel(handler: HumanHandler, answer: (id: string, answer: HumanAnswer) => void, warn: (message: string) => void): HumanChannel {
  const open = new Map<string, AbortController>();
  return {
    present(item) {
      if (open.has(item.id)) return;
      const abort = new AbortController();
      open.set(item.id, abort);
      void (async () => {
        try {
          const given = await handler(item, abort.signal);
          if (given === undefined || abort.signal.aborted) return;
          // `by` may be left out: the program answered
          const checked = HumanAnswerShape.safeParse(typeof given === 'object' && given !== null && !('by' in given) ? { ...(given as object), by: 'code' } : given);
          if (!checked.success) {
            warn(`the human handler's answer to ${item.id} is not an answer (left pending):\n${describeIssues(checked.error.issues)}`);
            return;
          }
          if (item.kind === 'permission' && checked.data.approved === undefined && !(item.request?.elicitation && checked.data.text !== undefined)) {
            warn(`the human handler answered ${item.id}, a permission request, without approved: true or false (left pending)`);
            return;
          }
          if (item.kind === 'question' && !checked.data.text?.trim()) {
            warn(`the human handler answered ${item.id}, a question, without text (left pending)`);
            return;
          }
          answer(item.id, checked.data);
        } catch (error) {
          warn(`the human handler threw on ${item.id} (left pending: answer it with run.answer or a2a inbox): ${errorText(error)}`);
        } finally {
          open.delete(item.id);
        }
      })();
    },
    withdraw(id) {
      open.get(id)?.abort();
      open.delete(id);
    },
  };
}


