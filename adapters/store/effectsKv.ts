/**
 * The effect journal of a host (`a2a host`): the same records as a run's `effects.jsonl`
 * (actors/durability/effects.ts), in the namespace's `effects` KV bucket, so that a host that takes a session
 * over (its host died, or drained) answers the restored steps from what the dead host recorded
 * after the session's last snapshot: a model reply is not paid again, a completed tool call is not
 * run again, a call in flight is in doubt.
 *
 * One key per record: `<run>.<tree>.<session>.<step>.<kind>` (tokens escaped as wire tokens), so
 * that a tree's records are loaded with one listing when it is taken over and removed with one
 * purge when it finishes: the bucket holds the records of sessions alive, not of every session
 * ever run. A record is durable (the server has it) before the step goes on.
 */
import { EffectRecord } from '../../machines/protocol/index.js';
import type { KeyValue } from '../../machines/ports.js';
import { RecordedEffects, type EffectJournal } from '../../actors/durability/effects.js';
import { inlineIssues } from '../../actors/errors.js';

/** The bucket (`a2a_<ns>_effects`). */
export const EFFECTS_BUCKET = 'effects';

/** One key token from an id (one-to-one: "_" → "__", "." → "_d", any other character outside [A-Za-z0-9-] → "_x<hex>_"). */
const token = (id: string) => id.replace(/[^A-Za-z0-9-]/g, (c) => (c === '_' ? '__' : c === '.' ? '_d' : `_x${c.codePointAt(0)!.toString(16)}_`));

export interface KvEffectJournalOptions {
  /** The root of the tree a session runs in here (its id, or an ancestor's): its records are grouped under it. */
  rootOf(runId: string, sessionId: string): string;
  /** Resolves once what the session told before the record (its events) is stored. */
  beforeWrite?: () => Promise<void>;
  onInvalid?: (problem: string) => void;
}

export class KvEffectJournals {
  readonly #kv: KeyValue;
  readonly #options: KvEffectJournalOptions;
  readonly #runs = new Map<string, RunJournal>();

  constructor(kv: KeyValue, options: KvEffectJournalOptions) {
    this.#kv = kv;
    this.#options = options;
  }

  /** The journal of run `runId` on this host. */
  journal(runId: string): EffectJournal {
    let journal = this.#runs.get(runId);
    if (!journal) this.#runs.set(runId, (journal = new RunJournal(runId, this.#kv, this.#options)));
    return journal;
  }

  /** Loads what was recorded for tree `rootId` of run `runId` (before it is restored here); the number of records. */
  async load(runId: string, rootId: string): Promise<number> {
    const prefix = `${token(runId)}.${token(rootId)}.`;
    const journal = this.journal(runId) as RunJournal;
    let n = 0;
    for (const key of await this.#kv.keys(prefix)) {
      const entry = await this.#kv.get(key);
      if (!entry) continue;
      const parsed = EffectRecord.safeParse(entry.value);
      if (!parsed.success) {
        this.#options.onInvalid?.(`record "${key}" of the effects bucket is not an effect record (${inlineIssues(parsed.error.issues)}); left out`);
        continue;
      }
      journal.held(parsed.data);
      n++;
    }
    return n;
  }

  /** Removes the records of tree `rootId` of run `runId` (it finished: nothing will restore it). */
  remove(runId: string, rootId: string): Promise<void> {
    return this.#kv.deleteUnder(`${token(runId)}.${token(rootId)}.`);
  }

  /** Lets go of the runs `unused` names (no tree of them runs here any more). */
  forget(unused: (runId: string) => boolean): void {
    for (const runId of [...this.#runs.keys()]) if (unused(runId)) this.#runs.delete(runId);
  }

  /** Records written by this host, and the writes they took (one put each). */
  get stats(): { records: number; writes: number } {
    let records = 0;
    let writes = 0;
    for (const j of this.#runs.values()) {
      records += j.stats.records;
      writes += j.stats.writes;
    }
    return { records, writes };
  }
}

class RunJournal extends RecordedEffects {
  constructor(
    private readonly runId: string,
    private readonly kv: KeyValue,
    private readonly options: KvEffectJournalOptions,
  ) {
    super();
  }

  /** Folds in a record an earlier host wrote (see KvEffectJournals.load). */
  held(record: EffectRecord): void {
    this.entries.apply(record);
  }

  async write(record: EffectRecord): Promise<void> {
    this.stats.records++;
    const root = this.options.rootOf(this.runId, record.s);
    const key = `${token(this.runId)}.${token(root)}.${token(record.s)}.${token(record.k)}.${record.t}`;
    await this.options.beforeWrite?.();
    await this.kv.put(key, record);
    this.stats.writes++;
  }
}
