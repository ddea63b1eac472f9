/**
 * Checkpoints of a running actor tree: the root's persisted snapshot (which nests every child's:
 * workers, their sub-tasks, the inbox, the human gate) plus the system's pending timers, which
 * XState does not persist in a form that can be restored (its scheduler record holds actor
 * references). Timers are saved with the path of their source and target actor (ids from the
 * root: `orchestrator/workers/w-api/subtasks/st-3`) and their due time, and re-armed on restore.
 *
 * Take a checkpoint only between event-processing runs (from a timer callback, not inside a
 * transition): then no event is in flight between actors, and the snapshot is consistent.
 */
import type { AnyActorRef, Snapshot } from 'xstate';
import type { Checkpoint, SavedTimer } from '../../machines/protocol/index.js';
import { parentOf, scheduledEvents } from '../xstateInternals.js';

export type { Checkpoint, SavedTimer } from '../../machines/protocol/index.js';

/** The path of an actor from the root, by actor ids. */
export function actorPath(ref: AnyActorRef): string {
  const parts: string[] = [];
  for (let r: AnyActorRef | undefined = ref; r; r = parentOf(r)) parts.unshift(r.id);
  return parts.join('/');
}

/** The children of an actor: a machine's `children`, or a supervisor family's running members. */
function childrenOf(ref: AnyActorRef): Iterable<[string, AnyActorRef]> {
  const snapshot = ref.getSnapshot() as { children?: Record<string, AnyActorRef>; family?: { members: Map<string, { ref: AnyActorRef | null }> } };
  if (snapshot.children) return Object.entries(snapshot.children);
  if (snapshot.family) {
    const out: Array<[string, AnyActorRef]> = [];
    for (const [id, m] of snapshot.family.members) if (m.ref) out.push([id, m.ref]);
    return out;
  }
  return [];
}

/** Every actor under `root` (root included), depth first. */
export function walkActors(root: AnyActorRef, visit: (ref: AnyActorRef) => void): void {
  visit(root);
  for (const [, child] of childrenOf(root)) walkActors(child, visit);
}

/** The actor at `path` under `root`, or undefined when it no longer exists. */
export function actorAt(root: AnyActorRef, path: string): AnyActorRef | undefined {
  const [first, ...rest] = path.split('/');
  if (first !== root.id) return undefined;
  let current: AnyActorRef | undefined = root;
  for (const id of rest) {
    if (!current) return undefined;
    let next: AnyActorRef | undefined;
    for (const [childId, child] of childrenOf(current)) {
      if (childId === id) {
        next = child;
        break;
      }
    }
    current = next;
  }
  return current;
}

export function takeCheckpoint(root: AnyActorRef, now: number): Checkpoint {
  const timers: SavedTimer[] = Object.values(scheduledEvents(root.system)).map((t) => ({
    source: actorPath(t.source),
    target: actorPath(t.target),
    event: t.event,
    id: t.id,
    dueAt: t.startedAt + t.delay,
  }));
  return { version: 1, savedAt: now, snapshot: root.getPersistedSnapshot() as Checkpoint['snapshot'], timers };
}

/**
 * Re-arms saved timers on a restored (and started) root; a timer already due fires at once.
 * Returns the timers whose actors no longer exist (they had ended), for a warning.
 */
export function restoreTimers(root: AnyActorRef, timers: SavedTimer[], now: number): SavedTimer[] {
  const system = root.system;
  const lost: SavedTimer[] = [];
  for (const t of timers) {
    const source = actorAt(root, t.source);
    const target = actorAt(root, t.target);
    if (!source || !target) {
      lost.push(t);
      continue;
    }
    system.scheduler.schedule(source, target, t.event, Math.max(0, t.dueAt - now), t.id);
  }
  return lost;
}
