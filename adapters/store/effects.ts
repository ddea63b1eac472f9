/**
 * The effect journal in a file: `.a2a/runs/<run>/effects.jsonl`, one record per line (see
 * actors/durability/effects.ts). A resumed run reads what its earlier lives recorded; every record of one
 * turn of the event loop goes out in one write(2) on a descriptor kept open (a kill -9 loses
 * nothing written: the kernel has it). The run's event log is flushed first, so that what a step
 * told (an `mcp.called`, a warning) is on disk before the record that says the step is over.
 * A line that is not a valid record (a torn last line) is left out and reported.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { EffectRecord } from '../../machines/protocol/index.js';
import { RecordedEffects } from '../../actors/durability/effects.js';
import { stateJson } from '../../actors/config/secrets.js';
import { inlineIssues } from '../../actors/errors.js';
import { terminateLastLine, type FileRunStore } from './file.js';

const FILE = 'effects.jsonl';

export class FileEffectJournal extends RecordedEffects {
  readonly #file: string;
  #fd: number | null = null;
  #lines: string[] = [];
  #waiting: Array<{ resolve: () => void; reject: (error: unknown) => void }> = [];
  #scheduled = false;

  constructor(
    store: FileRunStore,
    runId: string,
    private readonly options: { beforeWrite?: () => void; onInvalid?: (problem: string) => void } = {},
  ) {
    super();
    this.#file = join(store.dir(runId), FILE);
    const onInvalid = options.onInvalid ?? (() => {});
    for (const value of store.readLines(runId, FILE, onInvalid)) {
      const parsed = EffectRecord.safeParse(value);
      if (parsed.success) this.entries.apply(parsed.data);
      else onInvalid(`${this.#file}: a line is not an effect record (${inlineIssues(parsed.error.issues)}); left out`);
    }
    // a process killed mid-write may have left a torn last line: ended, so that it stays one bad line
    terminateLastLine(this.#file);
  }

  /** Steps an earlier life recorded (a resumed run). */
  get held(): number {
    return this.entries.size;
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
      this.#fd ??= openSync(this.#file, 'a');
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
