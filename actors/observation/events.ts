/**
 * Run events: every event carries the run id and the correlation ids of the session it is about
 * (plan, task, worker, sub-task, parent, depth), so that `--json` lines, the event log and the
 * monitors can rebuild the tree without asking anyone.
 */
import type { Clock, EventSink } from '../../machines/ports.js';
import type { PermissionRequest, RunEvent, RunEventType, SessionSpec } from '../../machines/protocol/index.js';

export type Correlated = Pick<RunEvent, 'planId' | 'taskId' | 'workerId' | 'subTaskId' | 'parentId' | 'depth' | 'agentType'>;

/**
 * The correlation ids of a session, for its events. The run id rides along too (a host serves
 * several runs and publishes each session's events under its run); a run's own bus stamps its id.
 */
export function correlationOf(spec: SessionSpec): Correlated {
  const c = spec.correlation;
  return {
    runId: c.runId,
    planId: c.planId,
    taskId: c.taskId,
    workerId: c.workerId,
    subTaskId: spec.id,
    parentId: spec.owner.ownerId,
    depth: spec.depth,
    agentType: spec.agent.raw,
  } as Correlated;
}

/**
 * The correlation of a permission request's requester, for the events and audit records of the
 * request at every hop and of its decision (whoever emits them: a parent, the orchestrator, a
 * person's answer, a timeout).
 */
export function correlationOfRequest(request: PermissionRequest): Correlated {
  const c = request.correlation;
  return {
    runId: c.runId,
    planId: c.planId,
    taskId: c.taskId,
    workerId: c.workerId,
    subTaskId: request.requesterId,
    // a worker's parent is the orchestrator (its correlation names none)
    parentId: c.parentId ?? request.via[1] ?? 'orchestrator',
    depth: c.depth,
    agentType: request.agentType,
  } as Correlated;
}

const FORWARDED: ReadonlySet<string> = new Set<RunEventType>([
  'session.state',
  'model.called',
  'tool.called',
  'inquiry.sent',
  'inquiry.answered',
  'circuit.open',
  'permission.requested',
  'permission.decided',
  'stuck.detected',
  'worker.reassigned',
  'worker.reinitialized',
  'budget.reached',
  'model.switched',
]);

/** Turns an event emitted by a session machine into a run event (requests and decisions flattened). */
export function forwardSessionEvent(events: EventSink, spec: SessionSpec, emitted: { type: string }): void {
  if (events.listening === false || !FORWARDED.has(emitted.type)) return;
  const { type, ...rest } = emitted as { type: string; request?: Record<string, unknown>; decision?: Record<string, unknown> };
  const { request, decision, ...others } = rest;
  const data: Record<string, unknown> = request
    ? { requestId: request.id, action: request.action, detail: request.detail, requesterId: request.requesterId }
    : decision
      ? { requestId: decision.requestId, approved: decision.approved, decidedBy: decision.decidedBy, decider: decision.decider, ...(decision.reason ? { reason: decision.reason } : {}), ...others }
      : others;
  events.emit({ type: type as RunEventType, ...correlationOf(spec), data });
}

export type RunEventListener = (event: RunEvent) => void;

/**
 * The key of the fact an event states, for events that state one once (a spawn, a result, an
 * update handed to a parent, a decision, a person's answer): whoever emits it again (a resumed
 * run, a host that took a session over, a replayed message) emits the same key, and the run keeps
 * the first. Undefined for events that report an occurrence (a model call, a state change).
 */
export function factKey(event: Pick<RunEvent, 'type' | 'subTaskId' | 'parentId' | 'taskId' | 'data'>): string | undefined {
  const d = (event.data ?? {}) as Record<string, unknown>;
  const id = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? String(v) : undefined);
  const keyed = (...parts: Array<string | undefined>) => (parts.every((p) => p !== undefined) ? parts.join(':') : undefined);
  switch (event.type) {
    case 'subtask.result':
      return keyed('result', event.subTaskId);
    case 'worker.deployed':
    case 'subtask.spawned':
      return keyed('spawned', event.subTaskId);
    case 'update.queued':
      return keyed('update', event.parentId, id(d.updateId));
    case 'subtask.placed':
      return keyed('placed', event.subTaskId, id(d.host));
    case 'permission.requested':
    case 'permission.decided':
      return keyed(event.type, id(d.requestId));
    case 'permission.forwarded':
      return keyed(event.type, id(d.requestId), id(d.to));
    case 'human.asked':
    case 'human.answered':
    case 'question.asked':
    case 'question.answered':
    case 'inbox.accepted':
    case 'inbox.handled':
      return keyed(event.type, id(d.id));
    case 'task.skipped':
      return keyed('task.skipped', event.taskId);
    case 'artifact.created':
    case 'artifact.updated':
      // a version is written once; a recorder that finds it after a restore announces it again
      return keyed('artifact', id(d.artifactId), id(d.version));
    case 'run.finished':
      return 'run.finished';
    // a model reply or a tool result given back from the effect journal after a restore is the
    // same call: told once (a reply made again by a later life has a new replyId)
    case 'model.called':
      return d.replyId !== undefined ? keyed('model', event.subTaskId, id(d.replyId)) : undefined;
    case 'tool.called':
      return keyed('tool', event.subTaskId, id(d.epoch ?? 0), id(d.turn ?? 0), id(d.callId));
    default:
      return undefined;
  }
}

/** Where a bus starts: a resumed run continues its sequence and knows the facts its log holds. */
export interface BusStart {
  /** The next sequence number (one more than the log's last). */
  seq: number;
  /** The facts the log states (factKey of its events). */
  facts: Iterable<string>;
  /** Ids of the log's other events (the newest count). */
  recent: Iterable<string>;
}

/**
 * Folds a log's events, in order, into where a bus continues it: after its last sequence number,
 * with its facts and latest ids. A fold can start from a saved point (a log's index: the events
 * before it are not read again).
 */
export class BusStartFold {
  seq = 0;
  readonly facts: string[] = [];
  #recent: string[] = [];

  constructor(start?: { seq: number; facts: Iterable<string>; recent: Iterable<string> }) {
    if (!start) return;
    this.seq = start.seq;
    this.facts.push(...start.facts);
    this.#recent = [...start.recent];
  }

  add(e: RunEvent): void {
    this.seq = Math.max(this.seq, e.seq + 1);
    const fact = factKey(e);
    if (fact !== undefined) this.facts.push(fact);
    else if (e.id) {
      this.#recent.push(e.id);
      // trimmed now and then, not on every event
      if (this.#recent.length > 2 * RECENT_IDS) this.#recent = this.#recent.slice(-RECENT_IDS);
    }
  }

  start(): BusStart {
    return { seq: this.seq, facts: this.facts, recent: this.#recent.slice(-RECENT_IDS) };
  }
}

/** Where a bus continues a whole log. */
export function busStartOf(events: Iterable<RunEvent>): BusStart {
  const fold = new BusStartFold();
  for (const e of events) fold.add(e);
  return fold.start();
}

/** How many ids of relayed events (not facts) a bus remembers to drop a redelivery. */
const RECENT_IDS = 20_000;

/**
 * Stamps events with run id, id, sequence number and time, and hands them to listeners in order.
 * An event that states a fact is identified by the fact's key (computed here, whatever id it came
 * with: a host cannot claim a fact it does not state), and is dropped when that fact was emitted
 * before: the log and the audit hold each fact once, however often it is emitted again. Another
 * event relayed with an id (a host's) is dropped when that id came lately (a redelivery).
 */
export class RunEventBus implements EventSink {
  #seq: number;
  readonly #listeners = new Set<RunEventListener>();
  /** Fact keys: a handful per session, kept for the run. */
  readonly #facts = new Set<string>();
  /** Ids of relayed events that state no fact, the newest RECENT_IDS. */
  readonly #recent = new Set<string>();

  constructor(
    readonly runId: string,
    private readonly clock: Clock,
    start: BusStart = { seq: 0, facts: [], recent: [] },
  ) {
    this.#seq = start.seq;
    for (const fact of start.facts) this.#facts.add(fact);
    for (const id of start.recent) this.#remember(id);
  }

  #remember(id: string): void {
    this.#recent.add(id);
    if (this.#recent.size > RECENT_IDS) this.#recent.delete(this.#recent.values().next().value as string);
  }

  get listening(): boolean {
    return this.#listeners.size > 0;
  }

  /** The sequence number the next event gets. */
  get nextSeq(): number {
    return this.#seq;
  }

  /** Where a bus would start to continue this one (what a closed segment of the log is indexed with). */
  state(): BusStart {
    return { seq: this.#seq, facts: this.#facts, recent: this.#recent };
  }

  subscribe(listener: RunEventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Emits; returns false when the event was a repeat of one already emitted (and dropped). */
  emit(event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): boolean {
    if (this.#listeners.size === 0) {
      this.#seq++;
      return true;
    }
    const fact = factKey(event);
    const id = fact ?? event.id;
    if (fact !== undefined) {
      if (this.#facts.has(fact)) return false;
    } else if (id !== undefined && this.#recent.has(id)) {
      return false;
    }
    const seq = this.#seq++;
    const stamped = { ...event, id: id ?? `${this.runId}:${seq}`, data: event.data ?? {}, runId: this.runId, seq, ts: this.clock.now() } as RunEvent;
    for (const listener of this.#listeners) listener(stamped);
    // remembered once handed on: an event a listener failed to take is not taken for written
    if (fact !== undefined) this.#facts.add(fact);
    else if (id !== undefined) this.#remember(id);
    return true;
  }
}

/** A sink that drops everything (benchmarks, embedded use without observers). */
export const nullSink: EventSink = { emit: () => {}, listening: false };
