/**
 * A run as it was at one of its events, for the studio's time slider. Every view of the page is a
 * fold of the run's event log (view.ts), so the run at event k is a `StudioRun` that applied the
 * first k + 1 events: stepping forward applies what follows, stepping back folds again from the
 * first event (10,000 events fold in a few milliseconds). What a view reads of the run's files
 * instead of its log (status.json holds only the present) is told from the log here: the people's
 * items still open and the orchestrator's queue at that event. Pure (no DOM).
 */
import type { RunEvent } from '../../../machines/protocol/index.js';
import type { NodeView } from '../../../actors/observation/runView.js';
import { StudioRun } from './view.js';

export class Timeline {
  #snap: StudioRun | null = null;
  /** How many of the live run's events the snapshot applied. */
  #applied = 0;

  constructor(readonly live: StudioRun) {}

  /** The run after its events 0..`at` (an index into the events received, not the log's index). */
  at(at: number): StudioRun {
    const count = Math.max(0, Math.min(at + 1, this.live.events.length));
    if (!this.#snap || count < this.#applied) {
      this.#snap = new StudioRun();
      this.#applied = 0;
    }
    for (; this.#applied < count; this.#applied++) this.#snap.apply(this.live.indices[this.#applied]!, this.live.events[this.#applied]!);
    return this.#snap;
  }
}

/** The states a session went through, in order, as its chart names them (its `session.state` events, then how it ended). */
export function trailOf(run: StudioRun, node: NodeView): string[] {
  const trail: string[] = [];
  for (const e of run.eventsOf(node.id)) {
    if (e.subTaskId !== node.id) continue;
    if (e.type === 'session.state') trail.push(String(e.data.state));
  }
  const now = run.chartState(node);
  if (trail[trail.length - 1] !== now) trail.push(now);
  return trail;
}

export interface QueuedAt {
  id: string;
  type: string;
  priority: string;
  taskId: string;
  subTaskId: string | null;
}

/** The orchestrator's inbox as the log tells it: messages accepted and not yet handled, oldest first. */
export function queueOf(events: readonly RunEvent[]): QueuedAt[] {
  const queued = new Map<string, QueuedAt>();
  for (const e of events) {
    if (e.type === 'inbox.accepted') {
      const d = e.data as { id?: unknown; type?: unknown; priority?: unknown };
      queued.set(String(d.id), { id: String(d.id), type: String(d.type ?? ''), priority: String(d.priority ?? ''), taskId: e.taskId ?? '', subTaskId: e.subTaskId ?? null });
    } else if (e.type === 'inbox.handled') queued.delete(String((e.data as { id?: unknown }).id));
  }
  return [...queued.values()];
}
