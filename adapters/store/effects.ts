/**
 * The effect journal in a file: `.a2a/runs/<run>/effects.jsonl`, one record per line (see
 * actors/effects.ts). A resumed run reads what its earlier lives recorded; every record of one
 * turn of the event loop goes out in one write(2) on a descriptor kept open (a kill -9 loses
 * nothing written: the kernel has it). The run's event log is flushed first, so that what a step
 * told (an `mcp.called`, a warning) is on disk before the record that says the step is over.
 * A line that is not a valid record (a torn last line) is left out and reported once.
 */
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { EffectRecord } from '../../machines/protocol.js';
import { applyRecord, type EffectEntry, type EffectJournal } from '../../actors/effects.js';
import { stateJson } from '../../actors/secrets.js';
import { describeIssues } from '../../actors/errors.js';
import { terminateLastLine } from './file.js';

export class FileEffectJournal implements EffectJournal {
  readonly #entries = new Map<string, EffectEntry>();
  #fd: number | null = null;
  #lines: string[] = [];
  #waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;
  readonly stats = { records: 0, writes: 0 };

  constructor(
    private readonly file: string,
    private readonly options: { beforeWrite?: () => void; onInvalid?: (problem: string) => void } = {},
  ) {
    if (existsSync(file)) {
      terminateLastLine(file);
      const lines = readFileSync(file, 'utf8').split('\n');
      let bad = 0;
      let first = '';
      lines.forEach((line, i) => {
        if (!line) return;
        let value: unknown;
        try {
          value = JSON.parse(line);
        } catch {
          bad++;
          first ||= `line ${i + 1} is not JSON`;
          return;
        }
        const parsed = EffectRecord.safeParse(value);
        if (!parsed.success) {
          bad++;
          first ||= `line ${i + 1}: ${describeIssues(parsed.error.issues).trim()}`;
          return;
        }
        applyRecord(this.#entries, parsed.data);
      });
      if (bad > 0) this.options.onInvalid?.(`${file}: ${bad} line(s) left out (${first})`);
    }
  }

  /** Steps an earlier life recorded (a resumed run). */
  get held(): number {
    return this.#entries.size;
  }

  take(sessionId: string, key: string): EffectEntry | undefined {
    if (this.#entries.size === 0) return undefined;
    const id = `${sessionId}\u0000${key}`;
    const entry = this.#entries.get(id);
    this.#entries.delete(id);
    return entry;
  }

  write(record: EffectRecord): Promise<void> {
    this.stats.records++;
    this.#lines.push(`${stateJson(record)}\n`);
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Writes what is waiting now (also at close). */
  flush(): void {
    this.#scheduled = false;
    if (this.#lines.length === 0) return;
    const text = this.#lines.join('');
    const waiting = this.#waiting;
    this.#lines = [];
    this.#waiting = [];
    try {
      this.options.beforeWrite?.();
      this.#fd ??= openSync(this.file, 'a');
      writeSync(this.#fd, text);
      this.stats.writes++;
    } catch (error) {
      for (const w of waiting) w.reject(error);
      return;
    }
    for (const w of waiting) w.resolve();
  }

  close(): void {
    this.flush();
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }
}
