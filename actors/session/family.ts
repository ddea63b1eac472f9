/**
 * The state of one family (a session's children, or the orchestrator's workers), as the supervisor
 * (actors/session/supervisor.ts) keeps it: mutable and indexed (Maps, a FIFO queue, a sequence-numbered
 * mailbox), so that every spawn, result and acknowledgement is O(1); and its persisted form.
 */
import type { AnyActorRef, Snapshot } from 'xstate';
import type { FamilyView } from '../../machines/ports.js';
import type { SessionSpec, SubTaskResult, TaskUpdate } from '../../machines/protocol/index.js';

export type MemberState = 'pending' | 'running' | 'settled';

/**
 * The most updates that wait in a family's mailbox (seed 002). Beyond it the oldest status and
 * progress updates are dropped, and counted for the owner; results, failures, questions, error
 * reports and idle answers are never dropped, so the mailbox can exceed it with those alone.
 */
export const MAILBOX_LIMIT = 100;

/** An update that may be dropped when the mailbox is full: a plain status or progress report. */
export function droppable(update: TaskUpdate): boolean {
  return update.type === 'idle' || (update.type === 'progress' && (update.kind === undefined || update.kind === 'status'));
}

export interface Member {
  spec: SessionSpec;
  /** The session actor, from the moment it starts running until it settles. */
  ref: AnyActorRef | null;
  state: MemberState;
  result: SubTaskResult | null;
  /** Messages sent to it while it waited for a slot, delivered when it starts. */
  held?: Array<{ from: string; text: string }>;
  /** It has a slot, and its actor is created with the next slice of a large spawn (see START_SLICE in supervisor.ts). */
  deferred?: boolean;
  /** It runs in another actor system (its `ref` stands for it). */
  remote?: boolean;
}

/** The most characters of a delivered child's output and error its slim record keeps. */
export const FINISHED_TEXT_LIMIT = 500;

const clip = (text: string) => (text.length > FINISHED_TEXT_LIMIT ? `${text.slice(0, FINISHED_TEXT_LIMIT)}… [${text.length - FINISHED_TEXT_LIMIT} more characters were delivered to the parent]` : text);

/**
 * What the family keeps of a child whose result its owner has: its status, and its output and
 * error clipped (a failing parent's summary, a repeated await and an error naming the child read
 * it). Its spec, usage, diff stats and metadata went with the result to the owner and are in the
 * owner's conversation and checkpoint: kept here too they made every finished child cost about
 * 930 bytes until the run ended (issue 38), and a long run's heap grow with every child ever run.
 */
export function slimResult(result: SubTaskResult): SubTaskResult {
  return {
    taskId: result.taskId,
    status: result.status,
    output: clip(result.output),
    ...(result.error !== undefined ? { error: clip(result.error) } : {}),
    ...(result.fallback ? { fallback: true } : {}),
  };
}

/** The mutable state of one family. */
export class Family implements FamilyView {
  /** Children pending, running, or settled with a result the owner does not have yet. */
  readonly members = new Map<string, Member>();
  /** Settled children whose result the owner has (acknowledged, or given with a watch): slim records, in the order they were delivered. */
  readonly finished = new Map<string, SubTaskResult>();
  /** Pending ids in spawn order; `queueHead` is the next to start. */
  queue: string[] = [];
  queueHead = 0;
  running = 0;
  unsettled = 0;
  /** Updates for the owner, by sequence number, until acknowledged. */
  readonly mailbox = new Map<number, TaskUpdate>();
  /** Sequence number of each child's completion update, so a delivered result can be withdrawn. */
  readonly completionSeq = new Map<string, number>();
  seq = 0;
  /** Sequence numbers of droppable updates, oldest first (`droppableHead` is the next to look at). */
  droppables: number[] = [];
  droppableHead = 0;
  /** Updates dropped and not yet told to the owner in a batch it acknowledged. */
  dropped = 0;
  /** How many of them the outstanding batch tells. */
  droppedTold = 0;
  /** The last sequence number of the outstanding batch (the owner has what is at or below it). */
  outstandingUpTo = 0;
  /** A batch was sent and not yet acknowledged (batches are coalesced). */
  outstanding = false;
  watch: { ids: string[]; remaining: Set<string> } | null = null;
  cancelling: string | null = null;
  /** Set while the supervisor itself stops: nothing more is sent to the owner. */
  stopping = false;
  /**
   * This copy of the family is being dropped, not ended (its host lost the session to another
   * host, drains, or stops): the copy that goes on elsewhere owns the children. Stopping then
   * cancels nothing, settles nothing and says nothing.
   */
  detached = false;
  /**
   * Effects on children decided during the current transition, run after it in one deferred
   * call: XState runs deferred calls with `Array.shift()`, so deferring one per child would make
   * a 10k spawn quadratic.
   */
  effects: Array<() => void> = [];
  /** Pending children whose `targetFiles` a sibling holds: started when the files are released. */
  blocked: string[] = [];
  /** Children with a slot whose actors are made in the next slices (see START_SLICE in supervisor.ts). */
  slices: string[] = [];
  slicesHead = 0;
  /** Actors made in the current transition. */
  madeNow = 0;

  constructor(
    readonly ownerId: string,
    readonly owner: SessionSpec | null,
    readonly maxParallel: number,
  ) {}

  // -- the mailbox: updates for the owner, sent in coalesced batches until acknowledged ----------

  /**
   * Queues an update for the owner, stamped in place with `at`. When the mailbox is over
   * MAILBOX_LIMIT, the oldest droppable updates leave it; returns how many did.
   */
  post(update: TaskUpdate, at: number): number {
    update.timestamp = at;
    const seq = ++this.seq;
    this.mailbox.set(seq, update);
    if (update.type === 'completed' || update.type === 'failed') this.completionSeq.set(update.subTaskId, seq);
    if (droppable(update)) this.droppables.push(seq);
    let dropped = 0;
    while (this.mailbox.size > MAILBOX_LIMIT && this.droppableHead < this.droppables.length) {
      const old = this.droppables[this.droppableHead++]!;
      // acknowledged ones are gone already; one in the batch the owner holds is not lost to it
      if (this.mailbox.delete(old) && !(this.outstanding && old <= this.outstandingUpTo)) dropped++;
    }
    this.#compactDroppables();
    this.dropped += dropped;
    return dropped;
  }

  /** Moves past droppable seqs no longer in the mailbox, and frees the list's consumed head. */
  #compactDroppables(): void {
    while (this.droppableHead < this.droppables.length && !this.mailbox.has(this.droppables[this.droppableHead]!)) this.droppableHead++;
    if (this.droppableHead > 1024 && this.droppableHead * 2 > this.droppables.length) {
      this.droppables = this.droppables.slice(this.droppableHead);
      this.droppableHead = 0;
    }
  }

  /** The batch to send the owner now: none while one is unacknowledged, the mailbox is empty or the family stops. */
  batch(): { upTo: number; updates: TaskUpdate[]; live: number; dropped?: number } | null {
    if (this.outstanding || this.mailbox.size === 0 || this.stopping) return null;
    this.outstanding = true;
    this.outstandingUpTo = this.seq;
    this.droppedTold = this.dropped;
    return { upTo: this.seq, updates: [...this.mailbox.values()], live: this.unsettled, ...(this.dropped > 0 ? { dropped: this.dropped } : {}) };
  }

  /**
   * The owner has the updates up to `upTo` (all of them, or only those of the children in
   * `only`): they leave the mailbox; the others are offered again with the next batch.
   */
  acknowledge(upTo: number, only?: ReadonlySet<string>): void {
    for (const seq of this.mailbox.keys()) {
      if (seq > upTo) break;
      const update = this.mailbox.get(seq)!;
      if (only && !only.has(update.subTaskId)) continue;
      this.mailbox.delete(seq);
      if (this.completionSeq.get(update.subTaskId) === seq) {
        this.completionSeq.delete(update.subTaskId);
        this.#finish(update.subTaskId);
      }
    }
    // the owner was told of what was dropped with the batch it acknowledges
    this.dropped -= this.droppedTold;
    this.droppedTold = 0;
    this.outstanding = false;
    this.#compactDroppables();
  }

  /** Results the owner got another way (a watch answered): their completion updates are not sent again. */
  withdraw(ids: Iterable<string>): void {
    for (const id of ids) {
      const seq = this.completionSeq.get(id);
      if (seq !== undefined) {
        this.mailbox.delete(seq);
        this.completionSeq.delete(id);
      }
      this.#finish(id);
    }
  }

  /**
   * The owner has the child's result: the member leaves `members` for a slim record in
   * `finished`. Not in a family without an owner (the root's: its result is read from there),
   * nor while a completion update of the child still waits in the mailbox.
   */
  #finish(id: string): void {
    if (this.owner === null || this.completionSeq.has(id)) return;
    const member = this.members.get(id);
    if (member?.state !== 'settled' || !member.result) return;
    this.members.delete(id);
    this.finished.set(id, slimResult(member.result));
  }

  /** Ends the watch: the results of its children so far (withdrawn from the mailbox) and those still pending. */
  closeWatch(): { results: SubTaskResult[]; pending: string[] } | null {
    const watch = this.watch;
    if (!watch) return null;
    this.watch = null;
    const results: SubTaskResult[] = [];
    const pending: string[] = [];
    for (const id of watch.ids) {
      const member = this.members.get(id);
      if (!member) {
        const finished = this.finished.get(id);
        if (finished) results.push(finished);
        continue;
      }
      if (member.result) results.push(member.result);
      else pending.push(id);
    }
    this.withdraw(results.map((r) => r.taskId));
    return { results, pending };
  }

  // -- the queue of children waiting for a slot ---------------------------------------------------

  /** The next queued child to start, while the family may start one and has a free slot. */
  nextQueued(): string | null {
    while (this.cancelling === null && this.running < this.maxParallel && this.queueHead < this.queue.length) {
      const id = this.queue[this.queueHead++]!;
      if (this.members.get(id)?.state === 'pending') return id;
    }
    if (this.queueHead > 1024 && this.queueHead * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.queueHead);
      this.queueHead = 0;
    }
    return null;
  }

  /** Slots new children may take at once: none while earlier spawns still wait for one. */
  freeSlots(): number {
    while (this.queueHead < this.queue.length && this.members.get(this.queue[this.queueHead]!)?.state !== 'pending') this.queueHead++;
    return this.queueHead < this.queue.length ? 0 : Math.max(0, this.maxParallel - this.running);
  }

  // -- persistence ----------------------------------------------------------------------------------

  /** The persisted form: members with their actors' persisted snapshots, the queue, the mailbox, the watch. */
  persisted(): PersistedFamily {
    return {
      status: 'active',
      output: undefined,
      error: undefined,
      ownerId: this.ownerId,
      owner: this.owner,
      maxParallel: this.maxParallel,
      seq: this.seq,
      queue: [...this.blocked, ...this.queue.slice(this.queueHead)],
      members: [...this.members].map(([id, m]) => [
        id,
        {
          spec: m.spec,
          state: m.state,
          result: m.result,
          ...(m.ref ? { snapshot: m.ref.getPersistedSnapshot() as Snapshot<unknown> } : {}),
          ...(m.held ? { held: m.held } : {}),
          ...(m.remote ? { remote: true } : {}),
        },
      ]),
      ...(this.finished.size > 0 ? { finished: [...this.finished] } : {}),
      mailbox: [...this.mailbox],
      completionSeq: [...this.completionSeq],
      watch: this.watch ? this.watch.ids : null,
      cancelling: this.cancelling,
      ...(this.dropped > 0 ? { dropped: this.dropped } : {}),
    };
  }

  /**
   * A family from its persisted form. `revive` recreates the actor of each member that was
   * running with a snapshot; one running without a snapshot starts afresh from the queue.
   */
  static restore(p: PersistedFamily, revive: (family: Family, id: string, member: Member, persisted: PersistedMember) => void): Family {
    const family = new Family(p.ownerId, p.owner, p.maxParallel);
    family.seq = p.seq;
    family.queue = p.queue;
    family.cancelling = p.cancelling;
    for (const [seq, u] of p.mailbox) {
      family.mailbox.set(seq, u);
      // in sequence order: the oldest status updates are the first to go when it is full again
      if (droppable(u)) family.droppables.push(seq);
    }
    family.dropped = p.dropped ?? 0;
    for (const [id, seq] of p.completionSeq) family.completionSeq.set(id, seq);
    for (const [id, result] of p.finished ?? []) family.finished.set(id, result);
    for (const [id, m] of p.members) {
      const member: Member = { spec: m.spec, state: m.state, result: m.result, ref: null, ...(m.held ? { held: m.held } : {}) };
      if (m.state === 'running' && m.snapshot) {
        member.remote = m.remote === true;
        revive(family, id, member, m);
        family.running++;
      } else if (m.state === 'running') {
        member.state = 'pending'; // it had not been persisted with a snapshot: start it afresh
        family.queue.unshift(id);
      }
      if (member.state !== 'settled') family.unsettled++;
      family.members.set(id, member);
    }
    if (p.watch) family.watch = { ids: p.watch, remaining: new Set(p.watch.filter((id) => family.members.get(id)?.state !== 'settled')) };
    return family;
  }

  // -- FamilyView -------------------------------------------------------------------------------------

  has(id: string): boolean {
    return this.members.has(id) || this.finished.has(id);
  }
  status(id: string): MemberState | undefined {
    return this.members.get(id)?.state ?? (this.finished.has(id) ? 'settled' : undefined);
  }
  result(id: string): SubTaskResult | undefined {
    return this.members.get(id)?.result ?? this.finished.get(id);
  }
  /** Finished children first (in the order their results were delivered), then the rest in spawn order. */
  ids(): string[] {
    return [...this.finished.keys(), ...this.members.keys()];
  }
  live(): number {
    return this.unsettled;
  }
}

export interface PersistedMember {
  spec: SessionSpec;
  state: MemberState;
  result: SubTaskResult | null;
  snapshot?: Snapshot<unknown>;
  held?: Array<{ from: string; text: string }>;
  remote?: boolean;
}

export interface PersistedFamily {
  status: 'active';
  output: undefined;
  error: undefined;
  ownerId: string;
  owner: SessionSpec | null;
  maxParallel: number;
  seq: number;
  queue: string[];
  members: Array<[string, PersistedMember]>;
  /** Slim records of the children whose results the owner has (absent in checkpoints made before them). */
  finished?: Array<[string, SubTaskResult]>;
  mailbox: Array<[number, TaskUpdate]>;
  completionSeq: Array<[string, number]>;
  watch: string[] | null;
  cancelling: string | null;
  /** Status updates dropped and not yet told to the owner (see MAILBOX_LIMIT). */
  dropped?: number;
}
