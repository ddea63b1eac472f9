/**
 * The state of one family (a session's children, or the orchestrator's workers), as the supervisor
 * (actors/supervisor.ts) keeps it: mutable and indexed (Maps, a FIFO queue, a sequence-numbered
 * mailbox), so that every spawn, result and acknowledgement is O(1); and its persisted form.
 */
import type { AnyActorRef, Snapshot } from 'xstate';
import type { FamilyView } from '../machines/ports.js';
import type { SessionSpec, SubTaskResult, TaskUpdate } from '../machines/protocol.js';

export type MemberState = 'pending' | 'running' | 'settled';

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

/** The mutable state of one family. */
export class Family implements FamilyView {
  readonly members = new Map<string, Member>();
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

  has(id: string): boolean {
    return this.members.has(id);
  }
  status(id: string): MemberState | undefined {
    return this.members.get(id)?.state;
  }
  result(id: string): SubTaskResult | undefined {
    return this.members.get(id)?.result ?? undefined;
  }
  ids(): string[] {
    return [...this.members.keys()];
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
  mailbox: Array<[number, TaskUpdate]>;
  completionSeq: Array<[string, number]>;
  watch: string[] | null;
  cancelling: string | null;
}
