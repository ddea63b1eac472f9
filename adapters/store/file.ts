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
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { QueueMessage, RunEvent } from '../../machines/protocol.js';
import { A2AError } from '../../actors/errors.js';
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
  invocation: z.object({ target: z.string(), options: z.record(z.string(), z.unknown()), workspace: z.string() }).optional(),
  /** Times the run was resumed. */
  resumes: z.array(z.object({ at: z.number(), pid: z.number().int() })).optional(),
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

  /** Writes atomically (temp file + rename), so that a reader never sees half a record. */
  #write(file: string, value: unknown, pretty = true): void {
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${pretty ? JSON.stringify(value, null, 2) : JSON.stringify(value)}\n`);
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

  /** The event log (buffered: flushed every `flushMs` and at close). */
  eventLog(runId: string, flushMs = 200): { append(event: RunEvent): void; close(): void } {
    return this.lineLog<RunEvent>(runId, 'events.jsonl', flushMs);
  }

  events(runId: string): RunEvent[] {
    return this.readLines(runId, 'events.jsonl').map((line) => RunEvent.parse(line));
  }

  /** An append-only JSON-lines file; lines are buffered and flushed at most every `flushMs` and at close. */
  lineLog<T>(runId: string, name: string, flushMs = 200): { append(value: T): void; close(): void } {
    const file = join(this.dir(runId), name);
    let buffer: string[] = [];
    const flush = () => {
      if (buffer.length === 0) return;
      appendFileSync(file, buffer.join(''));
      buffer = [];
    };
    const timer = setInterval(flush, flushMs);
    timer.unref();
    return {
      append: (value) => {
        buffer.push(`${JSON.stringify(value)}\n`);
      },
      close: () => {
        clearInterval(timer);
        flush();
      },
    };
  }

  readLines(runId: string, name: string): unknown[] {
    const file = join(this.dir(runId), name);
    if (!existsSync(file)) return [];
    const out: unknown[] = [];
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (!line) return;
      try {
        out.push(JSON.parse(line));
      } catch {
        // a process killed mid-write leaves at most a torn last line
        if (i !== lines.length - 1 && lines.slice(i + 1).some(Boolean)) throw new A2AError('VALIDATION_ERROR', `${file}:${i + 1} is not valid JSON`);
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
    let handled: string[] = [];
    return {
      accepted: (message, at) => appendFileSync(file, `${JSON.stringify({ t: 'accepted', at, message })}\n`),
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

  readJournal(runId: string): JournalRecord[] {
    return this.readLines(runId, 'inbox.jsonl').map((line, i) => {
      const parsed = JournalRecord.safeParse(line);
      if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `${join(this.dir(runId), 'inbox.jsonl')}: record ${i + 1} is not a journal record`);
      return parsed.data;
    });
  }

  /** Appends handled lines for ids a checkpoint shows handled but the journal lacks (killed between the two writes). */
  appendRecovered(runId: string, ids: string[], at: number): void {
    if (ids.length === 0) return;
    appendFileSync(join(this.dir(runId), 'inbox.jsonl'), ids.map((id) => `${JSON.stringify({ t: 'handled', at, id, recovered: true })}\n`).join(''));
  }

  writeCheckpoint(runId: string, checkpoint: Checkpoint): void {
    this.#write(join(this.dir(runId), 'checkpoint.json'), checkpoint, false);
  }

  readCheckpoint(runId: string): Checkpoint | null {
    const file = join(this.dir(runId), 'checkpoint.json');
    if (!existsSync(file)) return null;
    const value = JSON.parse(readFileSync(file, 'utf8')) as Checkpoint;
    if (value.version !== 1) throw new A2AError('VALIDATION_ERROR', `${file}: unknown checkpoint version ${String(value.version)}`);
    return value;
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
