/**
 * A run's two logs, `events.jsonl` (every run event) and `audit.jsonl` (the A2A operations among
 * them), written together, and closed into numbered segments once they pass a size, so that no
 * file grows without limit and a resume reads a bounded tail:
 *
 *   events.jsonl         the events written since the last segment was closed
 *   events.<n>.jsonl.gz  segment n (1, 2, ...), compressed after it was closed (plain until then)
 *   events.index.json    where a bus starts after segments 1..n (LogIndex in machines/protocol/)
 *   audit.jsonl, audit.<n>.jsonl.gz   the same for the audit trail (no index: nothing resumes from it)
 *
 * A segment is closed right after a flush, so it ends on a line; the index is written after the
 * rename, so a process killed between the two leaves a segment the index does not cover, and a
 * resume reads it as part of the tail. Readers (`logLines`, the studio's feed) read the segments
 * in order, then the current file: nothing of the log is ever dropped, only moved and compressed.
 */
import { appendFileSync, closeSync, openSync, readSync, createReadStream, createWriteStream, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip, gunzipSync } from 'node:zlib';
import { BusStartFold, type BusStart } from '../../actors/observation/events.js';
import { LogIndex, RunEvent, type LogSpend } from '../../machines/protocol/index.js';
import { inlineIssues } from '../../actors/errors.js';

export type LogBase = 'events' | 'audit';

/** A segment is closed past this size (A2A_LOG_SEGMENT_MB sets it, in MB). */
export const SEGMENT_BYTES = 64 * 1024 * 1024;

export function segmentBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.A2A_LOG_SEGMENT_MB;
  if (given === undefined || given === '') return SEGMENT_BYTES;
  const mb = Number(given);
  if (!(mb > 0)) throw new Error(`A2A_LOG_SEGMENT_MB must be a positive number of megabytes (a fraction is allowed), got "${given}"`);
  return Math.max(1, Math.round(mb * 1024 * 1024));
}

/** The numbers of a log's closed segments, in order. */
export function segmentNumbers(dir: string, base: LogBase): number[] {
  if (!existsSync(dir)) return [];
  const pattern = new RegExp(`^${base}\\.(\\d+)\\.jsonl(\\.gz)?$`);
  const found = new Set<number>();
  for (const name of readdirSync(dir)) {
    const m = pattern.exec(name);
    if (m) found.add(Number(m[1]));
  }
  return [...found].sort((a, b) => a - b);
}

const plainName = (base: LogBase, n: number) => `${base}.${n}.jsonl`;

/** A closed segment's bytes (plain while it is being compressed, then from its .gz). */
export function readSegmentBytes(dir: string, base: LogBase, n: number): Buffer {
  const plain = join(dir, plainName(base, n));
  try {
    return readFileSync(plain);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return gunzipSync(readFileSync(`${plain}.gz`));
}

export function readSegment(dir: string, base: LogBase, n: number): string {
  return readSegmentBytes(dir, base, n).toString('utf8');
}

function parseLines(text: string, where: string, onInvalid: (problem: string) => void, into: unknown[]): void {
  text.split('\n').forEach((line, i) => {
    if (!line) return;
    try {
      into.push(JSON.parse(line));
    } catch {
      onInvalid(`${where}:${i + 1} is not valid JSON; left out`);
    }
  });
}

/** Every JSON line of a log: its closed segments in order, then the current file. */
export function logLines(dir: string, base: LogBase, onInvalid: (problem: string) => void = () => {}): unknown[] {
  const out: unknown[] = [];
  for (const n of segmentNumbers(dir, base)) parseLines(readSegment(dir, base, n), join(dir, plainName(base, n)), onInvalid, out);
  const current = join(dir, `${base}.jsonl`);
  if (existsSync(current)) parseLines(readFileSync(current, 'utf8'), current, onInvalid, out);
  return out;
}

/** A bus's start (BusStartFold), and each session's model spending (what a resumed run's budgets count). */
export class LogFold extends BusStartFold {
  readonly spend = new Map<string, LogSpend>();

  constructor(start?: LogIndex['mark']) {
    super(start);
    for (const s of start?.spend ?? []) this.spend.set(s.sessionId, { ...s });
  }

  override add(e: RunEvent): void {
    super.add(e);
    addSpend(this.spend, e);
  }
}

/** Adds a `model.called` event's cost and tokens to its session's spending. */
function addSpend(spend: Map<string, LogSpend>, e: RunEvent): void {
  if (e.type !== 'model.called' || !e.subTaskId || !e.workerId) return;
  const s = spend.get(e.subTaskId) ?? { sessionId: e.subTaskId, workerId: e.workerId, usd: 0, inputTokens: 0, outputTokens: 0 };
  s.usd += Number(e.data.costUsd ?? 0);
  s.inputTokens += Number(e.data.inputTokens ?? 0);
  s.outputTokens += Number(e.data.outputTokens ?? 0);
  spend.set(e.subTaskId, s);
}

export interface ResumePoint {
  start: BusStart;
  spend: LogSpend[];
  /** What was read to find it: the segments after the index's (and the current file), and their bytes. */
  read: { segments: number; bytes: number; indexed: number };
}

function foldText(fold: LogFold, text: string): void {
  for (const line of text.split('\n')) {
    if (!line) continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      continue;
    }
    const parsed = RunEvent.safeParse(json);
    if (parsed.success) fold.add(parsed.data);
  }
}

/**
 * Where a resumed run's bus starts: the index (the segments it covers are not read), then the
 * segments after it and the current file. An index that is not valid is reported and left out
 * (every segment is read then: slower, never wrong).
 */
export function resumePoint(dir: string, onInvalid: (problem: string) => void = () => {}): ResumePoint {
  const file = join(dir, 'events.index.json');
  let index: LogIndex | undefined;
  if (existsSync(file)) {
    let json: unknown;
    try {
      json = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      json = undefined;
    }
    const parsed = LogIndex.safeParse(json);
    if (parsed.success) index = parsed.data;
    else onInvalid(`${file} is not a log index${parsed.error ? `: ${inlineIssues(parsed.error.issues)}` : ''}; every segment of the log is read instead`);
  }
  const fold = new LogFold(index?.mark);
  let segments = 0;
  let bytes = 0;
  for (const n of segmentNumbers(dir, 'events')) {
    if (index && n <= index.segments) continue;
    const text = readSegment(dir, 'events', n);
    foldText(fold, text);
    segments++;
    bytes += Buffer.byteLength(text);
  }
  const current = join(dir, 'events.jsonl');
  if (existsSync(current)) {
    const text = readFileSync(current, 'utf8');
    foldText(fold, text);
    bytes += Buffer.byteLength(text);
  }
  return { start: fold.start(), spend: [...fold.spend.values()], read: { segments, bytes, indexed: index?.segments ?? 0 } };
}

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

/** The last line of a file that is whole JSON (a torn last line, from a kill mid-write, is skipped), or null. */
function lastCompleteLine(file: string): string | null {
  if (!existsSync(file)) return null;
  // the last 256 KB hold the last lines (an audit line is a few KB at most)
  return lastJsonLine(readTail(file, 256 * 1024).text);
}

/** The last `bytes` of a file (all of it when it is smaller), and whether that is the whole file. */
function readTail(file: string, bytes: number): { text: string; whole: boolean } {
  const size = statSync(file).size;
  const length = Math.min(size, bytes);
  const fd = openSync(file, 'r');
  const tail = Buffer.alloc(length);
  try {
    readSync(fd, tail, 0, length, size - length);
  } finally {
    closeSync(fd);
  }
  return { text: tail.toString('utf8'), whole: length === size };
}

/**
 * What follows line `last` in `text` (a file's tail, or all of it): null when the tail does not
 * reach back to it; the whole text when the whole file does not hold it (it all came after).
 */
function linesAfter(tail: { text: string; whole: boolean }, last: string | null): string | null {
  if (last !== null) {
    const at = tail.text.lastIndexOf(`\n${last}\n`);
    if (at !== -1) return tail.text.slice(at + last.length + 2);
    if (tail.whole && tail.text.startsWith(`${last}\n`)) return tail.text.slice(last.length + 1);
  }
  return tail.whole ? tail.text : null;
}

function lastJsonLine(text: string): string | null {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (!line) continue;
    try {
      JSON.parse(line);
      return line;
    } catch {
      // torn (or cut by the tail's start): the one before
    }
  }
  return null;
}

/** The last whole line of closed segment `n` of a log (n 0: none), or null. */
function lastSegmentLine(dir: string, base: LogBase, n: number): string | null {
  if (n === 0) return null;
  try {
    return lastJsonLine(readSegment(dir, base, n));
  } catch {
    return null;
  }
}

export interface RunLogOptions {
  audited: (event: RunEvent) => boolean;
  serialize: (value: unknown) => string;
  flushMs?: number;
  /** A file is closed into a segment past this many bytes (default SEGMENT_BYTES). */
  segmentBytes?: number;
  /** The bus's state when a segment is closed (its facts and newest ids: what the index holds). */
  busState?: () => BusStart;
  /** The spending in the log so far (a resumed run's: its resume point's). */
  spend?: LogSpend[];
  /** A segment could not be compressed (it stays plain: nothing is lost). */
  onError?: (problem: string) => void;
}

/**
 * The event log and the audit trail. Lines are buffered and written every `flushMs`, and always
 * before a checkpoint is written (the checkpointer calls `flush`), so that both logs hold
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
  readonly #size: Record<LogBase, number> = { events: 0, audit: 0 };
  readonly #last: Record<LogBase, number> = { events: 0, audit: 0 };
  readonly #spend = new Map<string, LogSpend>();
  readonly #compressing = new Set<Promise<void>>();
  readonly #segmentBytes: number;

  constructor(
    private readonly dir: string,
    private readonly options: RunLogOptions,
  ) {
    this.#segmentBytes = options.segmentBytes ?? SEGMENT_BYTES;
    this.#timer = setInterval(() => this.flush(), options.flushMs ?? 200);
    this.#timer.unref();
    for (const s of options.spend ?? []) this.#spend.set(s.sessionId, { ...s });
    for (const base of ['events', 'audit'] as const) {
      const file = this.#file(base);
      // a process killed mid-write may have left a torn last line: end it, so that it stays one bad line
      terminateLastLine(file);
      this.#size[base] = existsSync(file) ? statSync(file).size : 0;
      const numbers = segmentNumbers(dir, base);
      this.#last[base] = numbers.at(-1) ?? 0;
      // a segment left plain by a process that ended before compressing it
      for (const n of numbers) if (existsSync(join(dir, plainName(base, n)))) this.#compress(base, n);
    }
    this.#completeAudit();
  }

  /**
   * A flush writes the events, then their audit lines: a process killed between the two writes
   * (on a loaded machine, once in a few hundred kills) leaves events in `events.jsonl` whose audit
   * lines were never written, and a resumed run does not emit them again (they are in the log).
   * They are written here: every audited event after the audit trail's last line. Its last line is
   * found in the current event file (a flush rotates both files only after writing both); absent
   * from it, the whole current event file came after the audit's last line.
   */
  #completeAudit(): void {
    const events = this.#file('events');
    if (!existsSync(events) || this.#size.events === 0) return;
    const last = lastCompleteLine(this.#file('audit')) ?? lastSegmentLine(this.dir, 'audit', this.#last.audit);
    // the audit's last line is near the end of the events (one flush writes both): the file's
    // tail is read first, the whole file only when the line is not in it
    const after = linesAfter(readTail(events, 1024 * 1024), last) ?? linesAfter({ text: readFileSync(events, 'utf8'), whole: true }, last)!;
    const missing: string[] = [];
    for (const line of after.split('\n')) {
      if (!line) continue;
      let event: RunEvent;
      try {
        event = JSON.parse(line) as RunEvent;
      } catch {
        continue; // a torn line: its event was not written, nor its audit line
      }
      if (this.options.audited(event)) missing.push(`${line}\n`);
    }
    if (missing.length === 0) return;
    this.#write('audit', missing);
    this.options.onError?.(`audit.jsonl lacked the last ${missing.length} audited event(s) of events.jsonl (a process killed between the two writes): written now`);
  }


  #file(base: LogBase): string {
    return join(this.dir, `${base}.jsonl`);
  }

  append(event: RunEvent): void {
    const line = `${this.options.serialize(event)}\n`;
    this.#events.push(line);
    if (this.options.audited(event)) this.#audit.push(line);
    addSpend(this.#spend, event);
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

  #write(base: LogBase, lines: string[]): void {
    const text = lines.join('');
    appendFileSync(this.#file(base), text);
    this.#size[base] += Buffer.byteLength(text);
  }

  flush(): void {
    if (this.#events.length > 0) {
      this.#write('events', this.#events);
      this.#events = [];
    }
    if (this.#audit.length > 0) {
      this.#write('audit', this.#audit);
      this.#audit = [];
    }
    // everything appended is written: a segment closed now ends where the bus's state is
    for (const base of ['events', 'audit'] as const) {
      if (this.#size[base] < this.#segmentBytes) continue;
      try {
        this.#close(base);
      } catch (error) {
        // the log goes on in the current file (nothing is lost), and closing is tried again later
        this.#size[base] = 0;
        this.options.onError?.(`could not close ${this.#file(base)} into a segment (it grows on): ${(error as Error).message}`);
      }
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

  /** Closes the current file into the next segment (and, for the events, writes the index after it). */
  #close(base: LogBase): void {
    const n = this.#last[base] + 1;
    renameSync(this.#file(base), join(this.dir, plainName(base, n)));
    this.#last[base] = n;
    this.#size[base] = 0;
    if (base === 'events' && this.options.busState) {
      const state = this.options.busState();
      const index: LogIndex = { segments: n, mark: { seq: state.seq, facts: [...state.facts], recent: [...state.recent], spend: [...this.#spend.values()] } };
      const file = join(this.dir, 'events.index.json');
      writeFileSync(`${file}.${process.pid}.tmp`, JSON.stringify(index));
      renameSync(`${file}.${process.pid}.tmp`, file);
    }
    this.#compress(base, n);
  }

  /** Compresses a closed segment in the background: `.gz.tmp`, renamed, then the plain file removed. */
  #compress(base: LogBase, n: number): void {
    const plain = join(this.dir, plainName(base, n));
    const tmp = `${plain}.gz.${process.pid}.tmp`;
    const done = pipeline(createReadStream(plain), createGzip(), createWriteStream(tmp))
      .then(() => {
        renameSync(tmp, `${plain}.gz`);
        rmSync(plain, { force: true });
      })
      .catch((error: Error) => {
        rmSync(tmp, { force: true });
        this.options.onError?.(`could not compress ${plain} (it stays as it is): ${error.message}`);
      })
      .finally(() => this.#compressing.delete(done));
    this.#compressing.add(done);
  }

  /** Resolves once the segments being compressed are (a test, or a process about to exit). */
  async settled(): Promise<void> {
    while (this.#compressing.size > 0) await Promise.all([...this.#compressing]);
  }

  close(): void {
    clearInterval(this.#timer);
    this.flush();
  }
}
