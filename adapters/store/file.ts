/**
 * The file store: one directory per run under `<workspace>/.a2a/runs/<runId>/`:
 *   run.json         what the run is, who runs it (pid), how it was started, its status, its summary
 *   events.jsonl     every run event, one JSON object per line, appended as they happen
 *   audit.jsonl      the A2A operations among them (spawn, result, update, permission, management,
 *                    stop) with their full context, API keys redacted; `a2a audit` exports it
 *   inbox.jsonl      the inbox journal: every accepted message, and every handled id (written once
 *                    a checkpoint holds the effect of handling it)
 *   checkpoint.json  the actor tree and its timers (`a2a run --resume`)
 *   status.json      what `a2a status` and `a2a inbox` show: tasks, inbox metrics, pending items
 *   control/         requests to the running process (`a2a inbox approve`, `a2a redirect` ...) and replies
 * `a2a stop` finds a running run here.
 */
import { appendFileSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { Checkpoint as CheckpointSchema, QueueMessage, RunEvent } from '../../machines/protocol.js';
import { A2AError, inlineIssues } from '../../actors/errors.js';
import { stateJson, toJson } from '../../actors/secrets.js';
import { busStartOf, type BusStart } from '../../actors/events.js';
import type { Checkpoint } from '../../actors/checkpoint.js';
import type { InboxJournal } from '../../actors/inbox.js';

export const RunRecord = z.object({
  runId: z.string(),
  pid: z.number().int(),
  status: z.enum(['running', 'completed', 'failed', 'cancelled', 'crashed']),
  startedAt: z.number(),
  finishedAt: z.number().optional(),
  planId: z.string(),
  source: z.string(),
  /** How the run was started (target and options), so that `--resume` builds the same runtime. */
  /** `code`: started by a program with its own agents, tools, model or settings (only that program can resume it). */
  invocation: z.object({ target: z.string(), options: z.record(z.string(), z.unknown()), workspace: z.string(), code: z.literal(true).optional() }).optional(),
  /** Times the run was resumed. */
  resumes: z.array(z.object({ at: z.number(), pid: z.number().int() })).optional(),
  /** Paused with `a2a pause` (by whom, when); a run resumed after a kill comes back paused. */
  paused: z.object({ by: z.string(), at: z.number() }).nullable().optional(),
  summary: z.unknown().optional(),
});
export type RunRecord = z.infer<typeof RunRecord>;

export class FileRunStore {
  readonly root: string;

  constructor(workspace: string) {
    this.root = join(workspace, '.a2a', 'runs');
  }

  dir(runId: string): string {
    if (!/^[A-Za-z0-9._-]+$/.test(runId)) {
      throw new A2AError('VALIDATION_ERROR', `invalid run id "${runId}": use letters, digits, ".", "_" and "-"`);
    }
    return join(this.root, runId);
  }

  /**
   * Writes atomically (temp file + rename), so that a reader never sees half a record; secrets
   * redacted (`state`: what is read back, where only known secret values are replaced).
   */
  #write(file: string, value: unknown, pretty = true, state = false): void {
    const tmp = `${file}.${process.pid}.tmp`;
    const space = pretty ? 2 : undefined;
    writeFileSync(tmp, `${state ? stateJson(value, space) : toJson(value, space)}\n`);
    renameSync(tmp, file);
  }

  create(record: RunRecord): void {
    const dir = this.dir(record.runId);
    if (existsSync(join(dir, 'run.json'))) throw new A2AError('VALIDATION_ERROR', `run ${record.runId} already exists in ${dir}`);
    mkdirSync(dir, { recursive: true });
    this.#write(join(dir, 'run.json'), record);
  }

  update(runId: string, patch: Partial<RunRecord>): void {
    const current = this.read(runId);
    this.#write(join(this.dir(runId), 'run.json'), { ...current, ...patch });
  }

  read(runId: string): RunRecord {
    const file = join(this.dir(runId), 'run.json');
    if (!existsSync(file)) throw new A2AError('NOT_FOUND', `no run "${runId}" in ${this.root}`);
    const parsed = RunRecord.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `${file} is not a valid run record`);
    return parsed.data;
  }

  list(): RunRecord[] {
    if (!existsSync(this.root)) return [];
    return readdirSync(this.root)
      .filter((id) => existsSync(join(this.root, id, 'run.json')))
      .map((id) => this.read(id))
      .sort((a, b) => a.startedAt - b.startedAt);
  }

  /**
   * The run's event log and audit trail (see RunLog). `audited` picks the events the audit keeps;
   * `serialize` turns a record into its line (default: JSON with secrets redacted).
   */
  runLog(runId: string, options: { audited: (event: RunEvent) => boolean; serialize?: (value: unknown) => string; flushMs?: number }): RunLog {
    return new RunLog(join(this.dir(runId), 'events.jsonl'), join(this.dir(runId), 'audit.jsonl'), { serialize: (value) => toJson(value), ...options });
  }

  /** The events in the log; a line that is not a run event (a torn last line, a foreign line) is left out. */
  events(runId: string): RunEvent[] {
    const out: RunEvent[] = [];
    for (const line of this.readLines(runId, 'events.jsonl')) {
      const parsed = RunEvent.safeParse(line);
      if (parsed.success) out.push(parsed.data);
    }
    return out;
  }

  /** Where a resumed run's bus starts: after the log's last sequence number, knowing the facts it holds. */
  eventsStart(runId: string): BusStart {
    return busStartOf(this.events(runId));
  }

  /**
   * The JSON lines of a file. A line that is not JSON (a process killed mid-write leaves a torn
   * last line; a later run continues after it) is left out and reported through `onInvalid`.
   */
  readLines(runId: string, name: string, onInvalid: (problem: string) => void = () => {}): unknown[] {
    const file = join(this.dir(runId), name);
    if (!existsSync(file)) return [];
    const out: unknown[] = [];
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (!line) return;
      try {
        out.push(JSON.parse(line));
      } catch {
        onInvalid(`${file}:${i + 1} is not valid JSON; left out`);
      }
    });
    return out;
  }

  /**
   * The inbox journal. Arrivals are appended at once (before the message can be handled);
   * handled ids wait in memory until `commit()`, which the checkpointer calls right after it
   * wrote a checkpoint that holds their effects: a handled line never claims more than the
   * checkpoint can restore.
   */
  inboxJournal(runId: string): InboxJournal & { commit(): void; pendingHandled(): number } {
    const file = join(this.dir(runId), 'inbox.jsonl');
    terminateLastLine(file);
    let handled: string[] = [];
    return {
      accepted: (message, at) => appendFileSync(file, `${stateJson({ t: 'accepted', at, message })}\n`),
      handled: (id, at) => {
        handled.push(`${JSON.stringify({ t: 'handled', at, id })}\n`);
      },
      commit: () => {
        if (handled.length === 0) return;
        appendFileSync(file, handled.join(''));
        handled = [];
      },
      pendingHandled: () => handled.length,
    };
  }

  /**
   * The journal's records. A record that is not one (a torn last line of a process killed while
   * writing, a hand-edited or foreign line) is left out and reported through `onInvalid` (line and
   * field), so that one bad line neither stops a resume nor is replayed into the inbox.
   */
  readJournal(runId: string, onInvalid: (problem: string) => void = () => {}): JournalRecord[] {
    const out: JournalRecord[] = [];
    this.readLines(runId, 'inbox.jsonl', onInvalid).forEach((line, i) => {
      const parsed = JournalRecord.safeParse(line);
      if (parsed.success) out.push(parsed.data);
      else onInvalid(`${join(this.dir(runId), 'inbox.jsonl')}: record ${i + 1} is not a journal record (${inlineIssues(parsed.error.issues)}); left out`);
    });
    return out;
  }

  /** Appends handled lines for ids a checkpoint shows handled but the journal lacks (killed between the two writes). */
  appendRecovered(runId: string, ids: string[], at: number): void {
    if (ids.length === 0) return;
    appendFileSync(join(this.dir(runId), 'inbox.jsonl'), ids.map((id) => `${JSON.stringify({ t: 'handled', at, id, recovered: true })}\n`).join(''));
  }

  writeCheckpoint(runId: string, checkpoint: Checkpoint): void {
    this.#write(join(this.dir(runId), 'checkpoint.json'), checkpoint, false, true);
  }

  readCheckpoint(runId: string): Checkpoint | null {
    const file = join(this.dir(runId), 'checkpoint.json');
    if (!existsSync(file)) return null;
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new A2AError('VALIDATION_ERROR', `${file} is not JSON (${(error as Error).message}): the run cannot be resumed from it`);
    }
    const parsed = CheckpointSchema.safeParse(value);
    if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `${file} is not a checkpoint: ${inlineIssues(parsed.error.issues)}`);
    return parsed.data;
  }

  writeStatus(runId: string, status: unknown): void {
    this.#write(join(this.dir(runId), 'status.json'), status);
  }

  readStatus(runId: string): unknown {
    const file = join(this.dir(runId), 'status.json');
    return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : null;
  }

  controlDir(runId: string): string {
    const dir = join(this.dir(runId), 'control');
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /** Removes what only a live process uses (control requests left over from a crash). */
  clearControl(runId: string): void {
    rmSync(join(this.dir(runId), 'control'), { recursive: true, force: true });
  }
}

export const JournalRecord = z.discriminatedUnion('t', [
  z.object({ t: z.literal('accepted'), at: z.number(), message: QueueMessage }),
  z.object({ t: z.literal('handled'), at: z.number(), id: z.string(), recovered: z.boolean().optional() }),
]);
export type JournalRecord = z.infer<typeof JournalRecord>;

/** Appends a newline to a file whose last line is not terminated (torn by a kill). */
export function terminateLastLine(file: string): void {
  if (!existsSync(file)) return;
  const size = statSync(file).size;
  if (size === 0) return;
  const fd = openSync(file, 'r');
  const last = Buffer.alloc(1);
  try {
    readSync(fd, last, 0, 1, size - 1);
  } finally {
    closeSync(fd);
  }
  if (last[0] !== 0x0a) appendFileSync(file, '\n');
}

/**
 * The event log (`events.jsonl`, every run event) and the audit trail (`audit.jsonl`, the A2A
 * operations among them), written together. Lines are buffered and written every `flushMs`, and
 * always before a checkpoint is written (the checkpointer calls `flush`), so that both logs hold
 * everything the checkpoint holds: a run killed at any point and resumed misses nothing in them,
 * and what it emits again is dropped by id (see RunEventBus). `whenWritten` runs a callback once
 * what was appended so far is on disk (acknowledging a host's events, for instance).
 */
export class RunLog {
  #events: string[] = [];
  #audit: string[] = [];
  #waiting: Array<() => void> = [];
  readonly #timer: NodeJS.Timeout;
  /** Listeners of what is written (see onWritten), and the events waiting to be written for them. */
  readonly #written = new Set<(event: RunEvent) => void>();
  #unwritten: RunEvent[] = [];
  #soon = false;

  constructor(
    private readonly eventsFile: string,
    private readonly auditFile: string,
    private readonly options: { audited: (event: RunEvent) => boolean; serialize: (value: unknown) => string; flushMs?: number },
  ) {
    this.#timer = setInterval(() => this.flush(), options.flushMs ?? 200);
    this.#timer.unref();
    // a process killed mid-write may have left a torn last line: end it, so that it stays one bad line
    for (const file of [eventsFile, auditFile]) terminateLastLine(file);
  }

  append(event: RunEvent): void {
    const line = `${this.options.serialize(event)}\n`;
    this.#events.push(line);
    if (this.options.audited(event)) this.#audit.push(line);
    if (this.#written.size > 0) {
      this.#unwritten.push(event);
      // someone reads the stream: written at the end of this turn of the event loop, not in 200 ms
      if (!this.#soon) {
        this.#soon = true;
        setImmediate(() => {
          this.#soon = false;
          this.flush();
        });
      }
    }
  }

  /**
   * Hands each event to `listener` once it is in the log (`a2a run --json`, a program's
   * onEvent): what a reader saw is what a resumed run continues from, so that across a kill and a
   * resume every event reaches it once, and sequence numbers never go back.
   */
  onWritten(listener: (event: RunEvent) => void): () => void {
    this.#written.add(listener);
    return () => this.#written.delete(listener);
  }

  /** Runs `callback` once everything appended so far is written. */
  whenWritten(callback: () => void): void {
    if (this.#events.length === 0 && this.#audit.length === 0) callback();
    else this.#waiting.push(callback);
  }

  flush(): void {
    if (this.#events.length > 0) {
      appendFileSync(this.eventsFile, this.#events.join(''));
      this.#events = [];
    }
    if (this.#audit.length > 0) {
      appendFileSync(this.auditFile, this.#audit.join(''));
      this.#audit = [];
    }
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const callback of waiting) callback();
    if (this.#unwritten.length > 0) {
      const written = this.#unwritten;
      this.#unwritten = [];
      for (const event of written) for (const listener of this.#written) listener(event);
    }
  }

  close(): void {
    clearInterval(this.#timer);
    this.flush();
  }
}
