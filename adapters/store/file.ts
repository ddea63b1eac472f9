/**
 * The file store: one directory per run under `<workspace>/.a2a/runs/<runId>/`:
 *   run.json         what the run is, who runs it (pid), how it was started, its status, its summary
 *   events.jsonl     every run event, one JSON object per line, appended as they happen (closed
 *                    into events.<n>.jsonl.gz segments past 64 MB, with events.index.json: runLog.ts)
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
import { Checkpoint as CheckpointSchema, QueueMessage, RunEvent } from '../../machines/protocol/index.js';
import { A2AError, inlineIssues } from '../../actors/errors.js';
import { stateJson, toJson } from '../../actors/config/secrets.js';
import type { BusStart } from '../../actors/observation/events.js';
import { logLines, resumePoint, RunLog, segmentBytesFromEnv, terminateLastLine, type LogBase, type ResumePoint, type RunLogOptions } from './runLog.js';

export { RunLog, terminateLastLine } from './runLog.js';
import type { Checkpoint } from '../../actors/durability/checkpoint.js';
import type { InboxJournal } from '../../actors/people/inbox.js';

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
  runLog(runId: string, options: Omit<RunLogOptions, 'serialize'> & { serialize?: (value: unknown) => string }): RunLog {
    return new RunLog(this.dir(runId), { serialize: (value) => toJson(value), segmentBytes: segmentBytesFromEnv(), ...options });
  }

  /** The events in the log (its closed segments, then the current file); a line that is not a run event (a torn last line, a foreign line) is left out. */
  events(runId: string): RunEvent[] {
    const out: RunEvent[] = [];
    for (const line of this.logLines(runId, 'events')) {
      const parsed = RunEvent.safeParse(line);
      if (parsed.success) out.push(parsed.data);
    }
    return out;
  }

  /** Every line of the event log or the audit trail, its closed segments first (see adapters/store/runLog.ts). */
  logLines(runId: string, base: LogBase, onInvalid?: (problem: string) => void): unknown[] {
    return logLines(this.dir(runId), base, onInvalid);
  }

  /** Where a resumed run's bus starts: the log's index and what follows it (never the whole log). */
  resumePoint(runId: string, onInvalid?: (problem: string) => void): ResumePoint {
    return resumePoint(this.dir(runId), onInvalid);
  }

  eventsStart(runId: string): BusStart {
    return this.resumePoint(runId).start;
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
