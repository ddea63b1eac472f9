/**
 * What the studio reads of a run: its event log followed as it grows (`RunFeed`), its status and
 * record files, and a one-line summary per run for the list. Everything comes from the run's
 * files in the file store (adapters/store/file.ts), the same files `a2a status`, `a2a inbox` and
 * `a2a audit` read, so that the page and the CLI never disagree.
 *
 * A feed reads the log from the start once, then every `pollMs` reads what was appended (a torn
 * last line waits for its end). Each event is parsed with the protocol's `RunEvent` schema; a line
 * that is not one is counted, never passed on. Subscribers get each event with its index in the
 * log (the page's `Last-Event-ID`), so that a page that reconnects asks for what it has not seen.
 */
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { RunEvent } from '../../machines/protocol/index.js';
import type { FileRunStore, RunRecord } from '../store/file.js';
import { readSegmentBytes, segmentNumbers } from '../store/runLog.js';

export interface FeedListener {
  events(batch: RunEvent[], firstIndex: number): void;
  /** status.json or run.json changed (written by the run's process). */
  files(changed: { status?: unknown; record?: RunRecord }): void;
}

/** Bytes read per poll at most (a log that grew by more is read over several polls). */
const CHUNK = 4 * 1024 * 1024;

export class RunFeed {
  readonly events: RunEvent[] = [];
  /** Lines that were not run events (torn by a kill, or written by something else). */
  invalid = 0;
  #offset = 0;
  /** Closed segments read to their end, and the inode of the file followed (0: none yet). */
  #segment = 0;
  #ino = 0;
  #replaced = false;
  /** Keeps a character split between two reads whole. */
  #decoder = new StringDecoder('utf8');
  #rest = '';
  #statusStamp = '';
  #recordStamp = '';
  readonly #listeners = new Set<FeedListener>();
  #timer: NodeJS.Timeout | null = null;
  readonly #file: string;

  constructor(
    readonly store: FileRunStore,
    readonly runId: string,
    readonly pollMs = 150,
  ) {
    this.#file = join(store.dir(runId), 'events.jsonl');
    this.poll();
  }

  /**
   * Reads what was appended since the last read; returns the new events. The log's closed
   * segments come first (adapters/store/runLog.ts): the file being followed, once closed, is read
   * to its end from where the feed was, and the new file from its start.
   */
  poll(): RunEvent[] {
    const fresh: RunEvent[] = [];
    const dir = this.store.dir(this.runId);
    for (const n of segmentNumbers(dir, 'events')) {
      if (n <= this.#segment) continue;
      let bytes: Buffer;
      try {
        bytes = readSegmentBytes(dir, 'events', n);
      } catch {
        break; // being compressed (between the rename and the removal): the next poll reads it
      }
      // the file followed so far is the next segment: what was read of it is not read again
      const from = n === this.#segment + 1 ? this.#offset : 0;
      this.#take(from > 0 ? this.#decoder.write(bytes.subarray(from)) + this.#decoder.end() : bytes.toString('utf8'), fresh);
      this.#decoder = new StringDecoder('utf8');
      if (this.#rest.trim()) this.#take('\n', fresh);
      this.#segment = n;
      this.#offset = 0;
      this.#rest = '';
      this.#ino = 0;
      this.#replaced = false;
    }
    this.#tail(fresh);
    if (fresh.length > 0) {
      const first = this.events.length;
      for (const e of fresh) this.events.push(e);
      for (const l of this.#listeners) l.events(fresh, first);
    }
    return fresh;
  }

  /** Reads what the current file gained since the last read. */
  #tail(fresh: RunEvent[]): void {
    if (!existsSync(this.#file)) return;
    const stat = statSync(this.#file);
    // a new file since the last read: the one followed was closed into a segment the listing above
    // did not see yet; the next poll reads that segment's end first
    if (this.#ino !== 0 && stat.ino !== this.#ino) {
      // still no new segment on the next poll: the file was replaced (never done by a run), start over
      if (!this.#replaced) {
        this.#replaced = true;
        return;
      }
      this.#offset = 0;
      this.#rest = '';
      this.#decoder = new StringDecoder('utf8');
    }
    this.#replaced = false;
    this.#ino = stat.ino;
    const size = stat.size;
    if (size <= this.#offset) return;
    const fd = openSync(this.#file, 'r');
    try {
      while (this.#offset < size) {
        const length = Math.min(CHUNK, size - this.#offset);
        const buffer = Buffer.alloc(length);
        const read = readSync(fd, buffer, 0, length, this.#offset);
        if (read <= 0) break;
        this.#offset += read;
        this.#take(this.#decoder.write(buffer.subarray(0, read)), fresh);
      }
    } finally {
      closeSync(fd);
    }
  }

  /** Parses whole lines of `text` (after what was left of the last read) into `fresh`. */
  #take(text: string, fresh: RunEvent[]): void {
    const lines = (this.#rest + text).split('\n');
    this.#rest = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        this.invalid++;
        continue;
      }
      const parsed = RunEvent.safeParse(json);
      if (parsed.success) fresh.push(parsed.data);
      else this.invalid++;
    }
  }

  #checkFiles(): void {
    const changed: { status?: unknown; record?: RunRecord } = {};
    const statusStamp = stamp(join(this.store.dir(this.runId), 'status.json'));
    if (statusStamp !== this.#statusStamp) {
      this.#statusStamp = statusStamp;
      const status = this.status();
      if (status) changed.status = status;
    }
    const recordStamp = stamp(join(this.store.dir(this.runId), 'run.json'));
    if (recordStamp !== this.#recordStamp) {
      this.#recordStamp = recordStamp;
      const record = this.record();
      if (record) changed.record = record;
    }
    if (changed.status !== undefined || changed.record) for (const l of this.#listeners) l.files(changed);
  }

  status(): unknown {
    try {
      return this.store.readStatus(this.runId);
    } catch {
      return null; // being replaced: the next poll reads it
    }
  }

  record(): RunRecord | null {
    try {
      return this.store.read(this.runId);
    } catch {
      return null;
    }
  }

  subscribe(listener: FeedListener): () => void {
    this.#listeners.add(listener);
    if (!this.#timer) {
      // the current files count as seen: a subscriber is sent them when it joins
      this.#statusStamp = stamp(join(this.store.dir(this.runId), 'status.json'));
      this.#recordStamp = stamp(join(this.store.dir(this.runId), 'run.json'));
      this.#timer = setInterval(() => {
        try {
          this.poll();
          this.#checkFiles();
        } catch {
          // a file mid-replacement or removed: tried again at the next poll
        }
      }, this.pollMs);
      this.#timer.unref();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0 && this.#timer) {
        clearInterval(this.#timer);
        this.#timer = null;
      }
    };
  }

  close(): void {
    this.#listeners.clear();
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

function stamp(file: string): string {
  try {
    const s = statSync(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return '';
  }
}

/** One run in the list: what its record says, and counts read off its event log. */
export interface RunListEntry {
  runId: string;
  workspace: string;
  status: RunRecord['status'];
  planId: string;
  source: string;
  startedAt: number;
  finishedAt: number | null;
  paused: boolean;
  /** Workers and sub-tasks spawned, those that ended, those that failed. */
  sessions: number;
  ended: number;
  failed: number;
  costUsd: number;
  /** Items waiting for a person (status.json). */
  pending: number;
}

const FAILED = new Set(['failed', 'timeout', 'cancelled']);

/** Counts of a feed's events. */
export function summarize(record: RunRecord, workspace: string, events: readonly RunEvent[], status: unknown): RunListEntry {
  let sessions = 0;
  let ended = 0;
  let failed = 0;
  let costUsd = 0;
  for (const e of events) {
    if (e.type === 'worker.deployed' || e.type === 'subtask.spawned') sessions++;
    else if (e.type === 'subtask.result') {
      ended++;
      if (FAILED.has(String(e.data.status))) failed++;
    } else if (e.type === 'model.called' && typeof e.data.costUsd === 'number') costUsd += e.data.costUsd;
  }
  const pending = (status as { pending?: unknown[] } | null)?.pending;
  return {
    runId: record.runId,
    workspace,
    status: record.status,
    planId: record.planId,
    source: record.source,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt ?? null,
    paused: Boolean(record.paused),
    sessions,
    ended,
    failed,
    costUsd,
    pending: Array.isArray(pending) && record.status === 'running' ? pending.length : 0,
  };
}
