/**
 * Every use of XState's private API, in one place, so that an XState upgrade touches this file
 * only; test/actors/xstateInternals.test.ts fails loudly, naming the member, when the shape changes.
 *
 * What is used, and why:
 * - `system._relay(from, to, event)`: sends as `from`, so that the inspector shows who sent what
 *   (an actor's `send` from outside a transition has no source);
 * - `actorRef._parent`: custom actor logic (supervisor, inbox, human gate, remote stand-in)
 *   replies to its parent;
 * - `system._snapshot._scheduledEvents`, `system._clock`: the system's pending delayed events,
 *   persisted with a checkpoint (actors/durability/checkpoint.ts) and kept by the indexed scheduler
 *   (actors/scheduler.ts, which replaces `system.scheduler` on the shape `internalSystem` checks).
 */
import type { AnyActorRef, Snapshot } from 'xstate';

/**
 * The snapshot a custom actor logic returns for `xstate.stop`. XState marks a machine's snapshot
 * `stopped` itself, but keeps whatever a custom logic returns: without this, the last snapshot of
 * a stopped supervisor, inbox, gate or remote link says `active`, and the inspector shows it
 * running after the run has ended.
 */
export function stopped<S extends Snapshot<unknown>>(snapshot: S): S {
  return { ...snapshot, status: 'stopped' };
}

export interface ScheduledEvent {
  event: { type: string };
  source: AnyActorRef;
  target: AnyActorRef;
  id: string;
  startedAt: number;
  delay: number;
}

/** The system as XState 5 builds it, with the private members used here. */
export interface InternalSystem {
  scheduler: {
    schedule(source: AnyActorRef, target: AnyActorRef, event: { type: string }, delay: number, id?: string): void;
    cancel(source: AnyActorRef, id: string): void;
    cancelAll(actorRef: AnyActorRef): void;
  };
  _snapshot: { _scheduledEvents: Record<string, ScheduledEvent> };
  _clock: { setTimeout(fn: () => void, ms: number): unknown; clearTimeout(id: unknown): void; now?(): number };
  _relay(source: AnyActorRef, target: AnyActorRef, event: unknown): void;
}

/** Sends `event` to `to` as `from` (the inspector draws the arrow); a plain send without the private relay. */
export function relay(from: AnyActorRef, to: AnyActorRef, event: { type: string }): void {
  const system = from.system as Partial<InternalSystem>;
  if (typeof system._relay === 'function') system._relay(from, to, event);
  else to.send(event);
}

/** The actor's parent (custom logic replies to it). */
export function parentOf(ref: AnyActorRef): AnyActorRef | undefined {
  return (ref as { _parent?: AnyActorRef })._parent;
}

/** The system's private members, or what is missing from them (an XState that changed). */
export function internalSystem(system: unknown): { system: InternalSystem; missing: [] } | { system: null; missing: string[] } {
  const sys = system as Partial<InternalSystem> | null | undefined;
  const missing: string[] = [];
  if (!sys?.scheduler || typeof sys.scheduler.schedule !== 'function' || typeof sys.scheduler.cancel !== 'function' || typeof sys.scheduler.cancelAll !== 'function') missing.push('system.scheduler');
  if (!sys?._snapshot || typeof sys._snapshot._scheduledEvents !== 'object' || sys._snapshot._scheduledEvents === null) missing.push('system._snapshot._scheduledEvents');
  if (!sys?._clock || typeof sys._clock.setTimeout !== 'function' || typeof sys._clock.clearTimeout !== 'function') missing.push('system._clock');
  if (typeof sys?._relay !== 'function') missing.push('system._relay');
  return missing.length === 0 ? { system: sys as InternalSystem, missing: [] } : { system: null, missing };
}

/** The system's pending delayed events (empty when the shape is not as expected). */
export function scheduledEvents(system: unknown): Record<string, ScheduledEvent> {
  return internalSystem(system).system?._snapshot._scheduledEvents ?? {};
}
