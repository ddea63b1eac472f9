/**
 * Run events: every event carries the run id and the correlation ids of the session it is about
 * (plan, task, worker, sub-task, parent, depth), so that `--json` lines, the event log and the
 * monitors can rebuild the tree without asking anyone.
 */
import type { Clock, EventSink } from '../machines/ports.js';
import type { RunEvent, RunEventType, SessionSpec } from '../machines/protocol.js';

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

/** Stamps events with run id, sequence number and time, and hands them to listeners in order. */
export class RunEventBus implements EventSink {
  #seq = 0;
  readonly #listeners = new Set<RunEventListener>();

  constructor(
    readonly runId: string,
    private readonly clock: Clock,
  ) {}

  get listening(): boolean {
    return this.#listeners.size > 0;
  }

  subscribe(listener: RunEventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): void {
    if (this.#listeners.size === 0) {
      this.#seq++;
      return;
    }
    const stamped = { ...event, data: event.data ?? {}, runId: this.runId, seq: this.#seq++, ts: this.clock.now() } as RunEvent;
    for (const listener of this.#listeners) listener(stamped);
  }
}

/** A sink that drops everything (benchmarks, embedded use without observers). */
export const nullSink: EventSink = { emit: () => {}, listening: false };
