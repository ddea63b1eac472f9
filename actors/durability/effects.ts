/**
 * The effect journal: what a session's steps did outside the actor tree (a model call paid for,
 * a tool call that charged, pushed or wrote), recorded before the session takes its next step.
 * A checkpoint holds the tree as it was at some moment; a step that ran after it is in the
 * journal. A session restored from that checkpoint asks for its step again, and the agent loop
 * answers from the journal first:
 *
 * - a model reply on record is given back as it was: not asked, not paid again;
 * - a tool call with a recorded result is given that result: never run again;
 * - a tool call with an intent and no result is **in doubt**: it may have acted. An idempotent
 *   tool (read-only, `a2a_*` coordination, MCP tools annotated `readOnlyHint`/`idempotentHint`,
 *   custom tools declared `idempotent`) runs again; any other call is not run again: the model is
 *   told its outcome is unknown (`effects.inDoubt: report`), or a person decides (`ask`);
 * - a call that was waiting for a permission had not acted: it runs again (and asks again, with
 *   the same request id, so that a decision already made is not asked twice).
 *
 * Records are small JSON lines, grouped: every record written in one turn of the event loop goes
 * to disk in one write (a 1,000-sub-task fan-out writes its 1,000 replies in a few writes).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { CallModelOutput, EffectRecord, PermissionAction, ToolCall, ToolOutcome } from '../../machines/protocol/index.js';

/** What the journal holds for one step of one session (from records of an earlier process life). */
export interface EffectEntry {
  /** `input`: the digest of what the model was given (see inputDigest). */
  reply?: { agent: string; out: CallModelOutput; input?: string };
  intent?: { call: { id: string; name: string }; digest: string; key: string };
  /** It waited for a permission (and had not acted then). */
  asking?: boolean;
  /** Its permission was granted: it acted from there. */
  go?: boolean;
  outcome?: { outcome: ToolOutcome; crashed?: string; inDoubt?: true };
}

export interface EffectJournal {
  /**
   * What an earlier life of the run recorded for this step, handed out once (a step is asked
   * again once after a restore); undefined when nothing was recorded.
   */
  take(sessionId: string, key: string): EffectEntry | undefined;
  /**
   * Forgets what an earlier life recorded for a session: its steps went another way this time (a
   * step's input differs from the one recorded), so nothing later of that life fits either.
   */
  drop(sessionId: string): void;
  /** Records; resolves once the record is durable (grouped with the others of the same turn). */
  write(record: EffectRecord): Promise<void>;
  /** Records written by this life, and the writes they took (for the bench and the closing note). */
  readonly stats: { records: number; writes: number };
}

/** What to do with a call in doubt (the `effects.inDoubt` setting). */
export type InDoubtHandling = 'report' | 'ask';

export const modelStepKey = (epoch: number | undefined, step: number): string => `m${epoch ?? 0}.${step}`;
export const toolStepKey = (epoch: number | undefined, step: number): string => `t${epoch ?? 0}.${step}`;

/** The key a call's effect is known by outside the run (custom tools, MCP servers): the same across restores. */
export function idempotencyKey(runId: string, sessionId: string, callId: string, epoch: number | undefined): string {
  return `a2a:${runId}:${sessionId}:${callId}${epoch ? `:e${epoch}` : ''}`;
}

/**
 * What a model step was given, in short: the conversation's length, and the inbox items and
 * updates handed to it. A reply on record is given back only for the same: a session restored on
 * another host may get its messages in another order (one redelivered later than another that
 * came straight), and a reply to other input would answer the wrong thing.
 */
export function inputDigest(input: { messages: unknown[]; inbox: unknown[]; updates: Array<{ id: string }>; upTo: number | null }): string {
  return createHash('sha256')
    .update(JSON.stringify([input.messages.length, input.inbox, input.updates.map((u) => u.id), input.upTo]))
    .digest('hex')
    .slice(0, 16);
}

/** A short digest of a call's arguments (the journal shows what ran without holding it twice). */
export function argumentsDigest(call: ToolCall): string {
  return createHash('sha256').update(JSON.stringify(call.arguments ?? {})).digest('hex').slice(0, 16);
}

/** What the journal holds by session and step: records folded into entries, each handed out once. */
export class EffectEntries {
  readonly #entries = new Map<string, EffectEntry>();

  get size(): number {
    return this.#entries.size;
  }

  take(sessionId: string, key: string): EffectEntry | undefined {
    if (this.#entries.size === 0) return undefined;
    const id = `${sessionId}\u0000${key}`;
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    return entry;
  }

  apply(record: EffectRecord): void {
    applyRecord(this.#entries, record);
  }

  drop(sessionId: string): void {
    const prefix = `${sessionId}\u0000`;
    for (const id of [...this.#entries.keys()]) if (id.startsWith(prefix)) this.#entries.delete(id);
  }
}

/** Folds a record into its step's entry. */
function applyRecord(entries: Map<string, EffectEntry>, record: EffectRecord): void {
  const id = `${record.s}\u0000${record.k}`;
  let entry = entries.get(id);
  if (!entry) entries.set(id, (entry = {}));
  switch (record.t) {
    case 'reply':
      entry.reply = { agent: record.agent, out: record.out, ...(record.in !== undefined ? { input: record.in } : {}) };
      break;
    case 'intent':
      entry.intent = { call: record.call, digest: record.digest, key: record.key };
      break;
    case 'asking':
      entry.asking = true;
      break;
    case 'go':
      entry.go = true;
      break;
    case 'outcome':
      entry.outcome = { outcome: record.outcome, ...(record.crashed !== undefined ? { crashed: record.crashed } : {}), ...(record.inDoubt ? { inDoubt: true as const } : {}) };
      break;
  }
}

/** An entry's call had started and may have acted: an intent, no result, and not stopped at a permission. */
export function inDoubt(entry: EffectEntry | undefined): boolean {
  return entry?.intent !== undefined && entry.outcome === undefined && (entry.go === true || entry.asking !== true);
}

/**
 * A journal answering from what an earlier life recorded (`entries`, filled by the store that
 * reads them): the memory, file and KV journals differ only in where `write` puts a record.
 */
export abstract class RecordedEffects implements EffectJournal {
  protected readonly entries = new EffectEntries();
  readonly stats = { records: 0, writes: 0 };

  take(sessionId: string, key: string): EffectEntry | undefined {
    return this.entries.take(sessionId, key);
  }

  drop(sessionId: string): void {
    this.entries.drop(sessionId);
  }

  abstract write(record: EffectRecord): Promise<void>;
}

/** The journal kept in memory (tests, and a program's own runs that restore in-process). */
export class MemoryEffectJournal extends RecordedEffects {
  write(record: EffectRecord): Promise<void> {
    this.stats.records++;
    this.stats.writes++;
    this.entries.apply(record);
    return Promise.resolve();
  }
}

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

/** What the model reads for a call in doubt: it may have acted, and it is not run again. */
export function unknownOutcome(call: ToolCall, key: string, decidedBy?: string): ToolOutcome {
  const args = clip(JSON.stringify(call.arguments ?? {}), 300);
  return {
    isError: true,
    content:
      `EFFECT_IN_DOUBT: outcome unknown: ${call.name}(${args}) was in flight when the process stopped, and whether it completed is not recorded` +
      `${decidedBy ? ` (${decidedBy} chose not to run it again)` : ''}. It was not run again. ` +
      `Check its effect before repeating it (its idempotency key: ${key}).`,
  };
}

/** The permission a person is asked to run a call in doubt again (`effects.inDoubt: ask`). */
export function retryAction(name: string): PermissionAction {
  if (name.startsWith('mcp__')) return 'mcp_tool';
  switch (name) {
    case 'run_command':
      return 'command_execution';
    case 'write_file':
      return 'file_creation_in_worktree';
    case 'edit_file':
      return 'file_edits_in_worktree';
    default:
      return 'custom_tool';
  }
}

/** A process's own mark in reply ids: a reply made again by a later life is a new call, one given back is not. */
export const LIFE = randomBytes(4).toString('hex');
