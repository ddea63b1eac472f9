/**
 * A run of the NATS namespace that the studio has no files of (it runs on another machine, or in
 * another workspace), read from its process over the run's control subject
 * (adapters/transport/runControl.ts) so that its page is the page of a local run:
 *
 * - its log, page by page from its start (`events`): the same events with the same indices as its
 *   `events.jsonl`, so that a page opened late misses nothing, and a page that reconnects resumes
 *   after the last index it received, as with a local run;
 * - its record and live status (`status`: tasks, inbox, the items waiting for a person, workflow),
 *   read again whenever the log grew and every 2 s;
 * - its events heard on NATS say when to read again (the log also holds the hosts' events, relayed
 *   by the run's process, and says them in its order), with a poll every `pollMs` besides; the
 *   run's own events heard after the last read are kept until the log has them: when its process
 *   ends before the studio read its last events (`run.finished`, written as it closes), those
 *   that follow the log without a gap (seq) are taken as the log's next ones, and a `run.finished`
 *   heard says how the run ended even when a gap (its hosts' relayed events) keeps the rest out.
 *   A run followed by a page rarely needs either: its process waits (2 s at most) for a studio
 *   that follows it to read its log to the end before it closes.
 *
 * Each reply is parsed with its schema (machines/protocol/nats.ts), each event with `RunEvent`;
 * one that is not valid is counted, never passed on. Once the run's process has ended nothing
 * answers: what was read stays, the record says how the run ended as its log does, and a run
 * whose log says it finished is not asked again. (From the studios' account the server does not
 * say "no responders" for a subject another account serves: a request to a gone run waits for
 * its timeout, hence the short ones here.)
 */
import { ArtifactMeta, ControlReplyMessage, RunArtifactsReply, RunEvent, RunEventsReply, RunStatusReply, type RunControlMessage } from '../../machines/protocol/index.js';
import { A2AError, inlineIssues } from '../../actors/errors.js';
import { errorText } from '../../machines/errorText.js';
import { RunRecord } from '../store/file.js';
import type { FeedListener } from './feed.js';
import type { NatsWatch } from './nats.js';

/** How often the status is read again while nothing happens (durations, ages). */
const STATUS_EVERY_MS = 2_000;

/** The run's own events heard past its log kept at most (a page that follows the run reads them from the log within a poll). */
const HEARD_KEPT = 5_000;

/** How long a read waits for the run's process (a change waits longer: see `control`). */
const READ_TIMEOUT_MS = 3_000;


/** A reply that is an error (`{ ok: false, error }`) becomes an A2AError; one of another shape names what is wrong. */
function parseReply<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> } } }, value: unknown, what: string): T {
  const refused = value as { ok?: unknown; error?: unknown } | null;
  if (refused && refused.ok === false && typeof refused.error === 'string') throw new A2AError('VALIDATION_ERROR', refused.error);
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `the run's process sent an invalid reply to ${what}: ${inlineIssues(parsed.error.issues)}`);
  return parsed.data;
}

export class NatsRunFeed {
  readonly events: RunEvent[] = [];
  /** Events of the log that were not valid run events (counted, not passed on). */
  invalid = 0;
  /** The run's process answered the last request (false once it ended, or while the server is away). */
  reachable = true;
  lastError: string | null = null;
  /** When it was read to its end (0: not yet). */
  endedAt = 0;
  /** The log index of the next event to read (the run's own count: an invalid one still takes an index there). */
  #next = 0;
  #status: unknown = null;
  #statusKey = '';
  #record: RunRecord | null = null;
  #recordKey = '';
  #statusAt = 0;
  readonly #listeners = new Set<FeedListener>();
  #timer: NodeJS.Timeout | null = null;
  #stopHint: (() => void) | null = null;
  #syncing: Promise<void> | null = null;
  #again = false;
  #closed = false;
  /** Its log says it finished, and its record too or its process no longer answers: nothing more to read. */
  #ended = false;
  /** Its log holds `run.finished`. */
  #finished = false;
  /** The run process's own events heard on NATS and not read from its log yet, by seq. */
  readonly #heard = new Map<number, RunEvent>();
  /** Its `run.finished` as heard on NATS (the end of the run, even when the log's last events cannot be read). */
  #heardFinished: RunEvent | null = null;

  constructor(
    readonly watch: NatsWatch,
    readonly runId: string,
    readonly pollMs = 250,
  ) {}

  /**
   * Reads the run's status and its whole log; throws when its process does not answer (no such
   * live run). From then on, until it is closed or ended, it keeps the run's own events heard on
   * NATS past its log, and reads again on each while a page follows it.
   */
  async open(): Promise<void> {
    this.#stopHint ??= this.watch.onRun(this.runId, (event) => {
      const last = this.events.at(-1)?.seq ?? -1;
      if (event.origin === `run-${this.runId}` && event.seq > last) {
        const { origin: _o, ...own } = event;
        // none reads it (no page follows the run): what was heard cannot follow its log without a gap anyway
        if (this.#heard.size >= HEARD_KEPT) this.#heard.clear();
        this.#heard.set(event.seq, own);
        if (own.type === 'run.finished') this.#heardFinished = own;
      }
      if (this.#listeners.size > 0) void this.sync();
    });
    await this.#readStatus();
    await this.#readEvents();
  }

  /** Reads what the log gained (at once, or after the read in progress); returns nothing now (the server's stream learns of events through `subscribe`). */
  poll(): RunEvent[] {
    void this.sync();
    return [];
  }

  /** Reads the log again, then the status when the log grew or it is old; reads in progress are joined, never doubled. */
  sync(): Promise<void> {
    if (this.#ended) return Promise.resolve();
    if (this.#syncing) {
      this.#again = true;
      return this.#syncing;
    }
    this.#syncing = (async () => {
      do {
        this.#again = false;
        try {
          const grew = await this.#readEvents();
          if (grew || Date.now() - this.#statusAt >= STATUS_EVERY_MS) await this.#readStatus();
          this.reachable = true;
          this.lastError = null;
          if (this.#finished && this.#record && this.#record.status !== 'running') this.#end();
        } catch (error) {
          this.#unreachable(error);
        }
        // while it does not answer, the next poll asks again (not every hint heard meanwhile)
      } while (this.#again && this.reachable && !this.#closed);
    })().finally(() => {
      this.#syncing = null;
    });
    return this.#syncing;
  }

  status(): unknown {
    return this.#status;
  }

  record(): RunRecord | null {
    return this.#record;
  }

  subscribe(listener: FeedListener): () => void {
    this.#listeners.add(listener);
    if (!this.#timer) {
      this.#timer = setInterval(() => void this.sync(), this.pollMs);
      this.#timer.unref();
    }
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#quiet();
    };
  }

  /** A request on the run's control subject; its reply parsed: what was done, or why nothing was. */
  async control(message: RunControlMessage): Promise<ControlReplyMessage> {
    if (this.#ended) return { ok: false, error: 'the run has already ended' };
    const reply = await this.watch.request(this.runId, message, 10_000);
    const parsed = ControlReplyMessage.safeParse(reply);
    if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `the run's process sent an invalid reply: ${inlineIssues(parsed.error.issues)}`);
    // what it changed shows at once, not at the next poll
    void this.sync();
    return parsed.data;
  }

  /** The run's artifacts (its workflow), as its process reads them. */
  async artifacts(): Promise<ArtifactMeta[]> {
    const reply = parseReply(RunArtifactsReply, await this.watch.request(this.runId, { command: 'artifacts' }, READ_TIMEOUT_MS), 'artifacts');
    const out: ArtifactMeta[] = [];
    for (const a of reply.artifacts) {
      const parsed = ArtifactMeta.safeParse(a);
      if (parsed.success) out.push(parsed.data);
    }
    return out;
  }

  close(): void {
    this.#closed = true;
    this.#listeners.clear();
    this.#quiet();
    this.#deaf();
  }

  #end(): void {
    if (!this.#ended) this.endedAt = Date.now();
    this.#ended = true;
    this.#quiet();
    this.#deaf();
  }

  /** No page follows it: no poll. */
  #quiet(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  #deaf(): void {
    this.#stopHint?.();
    this.#stopHint = null;
    this.#heard.clear();
  }

  /** Reads the log from where this feed is, page after page; true when it grew. */
  async #readEvents(): Promise<boolean> {
    let grew = false;
    for (;;) {
      const reply = parseReply(RunEventsReply, await this.watch.request(this.runId, { command: 'events', after: this.#next - 1 }, READ_TIMEOUT_MS), 'events');
      if (reply.from !== this.#next) throw new A2AError('VALIDATION_ERROR', `the run's process sent its log from index ${reply.from}, not ${this.#next}`);
      const fresh: RunEvent[] = [];
      for (const e of reply.events) {
        const parsed = RunEvent.safeParse(e);
        if (parsed.success && parsed.data.runId === this.runId) fresh.push(parsed.data);
        else this.invalid++;
      }
      this.#next += reply.events.length;
      if (fresh.length > 0) {
        grew = true;
        const first = this.events.length;
        for (const e of fresh) this.events.push(e);
        for (const l of this.#listeners) l.events(fresh, first);
        const finished = fresh.findLast((e) => e.type === 'run.finished');
        if (finished) this.#finishedAt(finished);
        const last = fresh.at(-1)!.seq;
        for (const seq of this.#heard.keys()) if (seq <= last) this.#heard.delete(seq);
      }
      if (!reply.more || reply.events.length === 0) return grew;
    }
  }

  async #readStatus(): Promise<void> {
    const reply = parseReply(RunStatusReply, await this.watch.request(this.runId, { command: 'status' }, READ_TIMEOUT_MS), 'status');
    this.#statusAt = Date.now();
    const record = RunRecord.safeParse(reply.record);
    if (!record.success) throw new A2AError('VALIDATION_ERROR', `the run's process sent an invalid run record: ${inlineIssues(record.error.issues)}`);
    this.#apply(record.data, reply.status);
  }

  /** Tells the listeners what changed of the record and the status (the time it was taken aside). */
  #apply(record: RunRecord | null, status: unknown): void {
    const changed: { status?: unknown; record?: RunRecord } = {};
    if (status !== undefined) {
      const { savedAt: _at, ...rest } = (status ?? {}) as { savedAt?: number };
      const key = status === null ? '' : JSON.stringify(rest);
      if (key !== this.#statusKey) {
        this.#statusKey = key;
        this.#status = status;
        if (status !== null) changed.status = status;
      }
    }
    if (record) {
      const key = JSON.stringify(record);
      if (key !== this.#recordKey) {
        this.#recordKey = key;
        this.#record = record;
        changed.record = record;
      }
    }
    if (changed.status !== undefined || changed.record) for (const l of this.#listeners) l.files(changed);
  }

  /**
   * Nothing answered (the run's process ended, or the server is away). A run whose log says it
   * finished is shown so, whatever its last record said; a run still running in its last record,
   * whose log does not say it finished, stays as it was: it may answer again (a resumed run).
   */
  #unreachable(error: unknown): void {
    this.reachable = false;
    this.lastError = errorText(error);
    const fresh: RunEvent[] = [];
    for (let next = this.#heard.get((this.events.at(-1)?.seq ?? -1) + 1); next; next = this.#heard.get(next.seq + 1)) {
      this.#heard.delete(next.seq);
      fresh.push(next);
    }
    if (fresh.length > 0) {
      const first = this.events.length;
      for (const e of fresh) this.events.push(e);
      this.#next += fresh.length;
      for (const l of this.#listeners) l.events(fresh, first);
    }
    // the run ended (its log says so, or it was heard saying so): how, and that nothing more will be read
    const finished = this.events.findLast((e) => e.type === 'run.finished') ?? this.#heardFinished;
    if (finished) {
      this.#finishedAt(finished);
      this.#end();
    }
  }

  /**
   * The log says the run finished: its record says so too (the run's process writes it right
   * after, and may be gone before it is read), and nothing is left to ask but that last read.
   */
  #finishedAt(finished: RunEvent): void {
    this.#finished = true;
    if (this.#record?.status !== 'running') return;
    const status = String(finished.data.status ?? 'completed');
    const ended = (['completed', 'failed', 'cancelled'] as const).find((s) => s === status) ?? 'failed';
    this.#apply({ ...this.#record, status: ended, finishedAt: finished.ts }, undefined);
  }

  /** Nothing more will be read of it (its log says it finished). */
  get ended(): boolean {
    return this.#ended;
  }
}
