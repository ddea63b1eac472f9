/**
 * An indexed scheduler for an XState actor system.
 *
 * XState 5.33's system scheduler keeps all delayed events of the system in one record and, every
 * time any actor stops (each finished promise actor, each finished session), `cancelAll(actor)`
 * scans the whole record. With N sessions each holding a timer (an `after` transition, the idle
 * watchdog), every stop costs O(N): a fan-out of 10k sub-tasks spent most of its 41 s there.
 * This scheduler has the same contract and keeps the same `_scheduledEvents` record (persistence
 * reads it), plus an index from source actor to its timers, so `cancelAll` is O(timers of that
 * actor). It is installed on the root actor's system before the root starts.
 */
import { createActor, type AnyActorLogic, type AnyActorRef, type ActorOptions } from 'xstate';
import { internalSystem, type InternalSystem } from './xstateInternals.js';

const INSTALLED = Symbol.for('a2a.indexedScheduler');

/** Replaces `system.scheduler`; returns false (and changes nothing) if the system is not as expected. */
export function installIndexedScheduler(system: unknown): boolean {
  if ((system as { [INSTALLED]?: true } | null)?.[INSTALLED]) return true;
  const sys = internalSystem(system).system as (InternalSystem & { [INSTALLED]?: true }) | null;
  if (!sys) return false;
  if (Object.keys(sys._snapshot._scheduledEvents).length > 0) return false;

  const timers = new Map<string, unknown>();
  const bySource = new Map<AnyActorRef, Set<string>>();
  const keyOf = (source: AnyActorRef, id: string) => `${source.sessionId}.${id}`;

  const forget = (source: AnyActorRef, key: string) => {
    timers.delete(key);
    delete sys._snapshot._scheduledEvents[key];
    const keys = bySource.get(source);
    if (keys) {
      keys.delete(key);
      if (keys.size === 0) bySource.delete(source);
    }
  };

  const scheduler: InternalSystem['scheduler'] = {
    schedule(source, target, event, delay, id = Math.random().toString(36).slice(2)) {
      const key = keyOf(source, id);
      const previous = timers.get(key);
      if (previous !== undefined) sys._clock.clearTimeout(previous);
      sys._snapshot._scheduledEvents[key] = { source, target, event, delay, id, startedAt: sys._clock.now?.() ?? Date.now() };
      let keys = bySource.get(source);
      if (!keys) {
        keys = new Set();
        bySource.set(source, keys);
      }
      keys.add(key);
      timers.set(
        key,
        sys._clock.setTimeout(() => {
          forget(source, key);
          sys._relay(source, target, event);
        }, delay),
      );
    },
    cancel(source, id) {
      const key = keyOf(source, id);
      const timer = timers.get(key);
      forget(source, key);
      if (timer !== undefined) sys._clock.clearTimeout(timer);
    },
    cancelAll(actorRef) {
      const keys = bySource.get(actorRef);
      if (!keys) return;
      for (const key of [...keys]) {
        const timer = timers.get(key);
        forget(actorRef, key);
        if (timer !== undefined) sys._clock.clearTimeout(timer);
      }
    },
  };
  sys.scheduler = scheduler;
  sys[INSTALLED] = true;
  return true;
}

/** `createActor` for a root actor, with the indexed scheduler installed before it starts. */
export function createRootActor<TLogic extends AnyActorLogic>(logic: TLogic, options: ActorOptions<TLogic>) {
  const actor = createActor(logic, options);
  installIndexedScheduler(actor.system);
  return actor;
}
