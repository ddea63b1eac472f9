/**
 * A run's pause across hosts: the run's process publishes it (core, for the hosts that are up)
 * and keeps it in the `pauses` bucket (for a host that starts, or reconnects, later); every host
 * follows both into its per-run gates, so that the run's agents on hosts also finish their
 * current model call and wait. Messages are parsed with `RunPause`; an invalid one is reported
 * and changes nothing.
 */
import type { Transport } from '../../machines/ports.js';
import { RunPause } from '../../machines/protocol/index.js';
import { subjects } from '../../actors/distribution/remote.js';
import { inlineIssues } from '../../actors/errors.js';
import type { PauseGates } from '../../actors/people/pause.js';

/**
 * The run's process: tells its hosts now (core), then keeps the state for those that come later.
 * Both are attempted whatever the other did; a resume is kept as `paused: false` (not a delete),
 * so that a host reading the bucket sees the newest state of the run either way.
 */
export async function publishPause(transport: Transport, ns: string, pause: RunPause): Promise<void> {
  const s = subjects(ns);
  const live = transport.publish(s.runPause(pause.runId), pause);
  const kept = transport.keyValue(s.buckets.pauses).then((bucket) => bucket.put(pause.runId, pause));
  const [a, b] = await Promise.allSettled([live, kept]);
  const failed = [a, b].find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
}

/** Applies a pause unless a newer one of the same run was applied (the bucket scan races live messages). */
function apply(gates: PauseGates, pause: RunPause, newest: Map<string, number>): void {
  if ((newest.get(pause.runId) ?? -Infinity) > pause.at) return;
  newest.set(pause.runId, pause.at);
  const gate = gates.gate(pause.runId);
  if (pause.paused) gate.close(pause.by, pause.at);
  else gate.open();
}

/** A host: the pauses in the bucket now, then each change as it is published. */
export async function followPauses(transport: Transport, ns: string, gates: PauseGates, warn: (message: string) => void): Promise<() => Promise<void>> {
  const s = subjects(ns);
  const parse = (data: unknown, where: string): RunPause | null => {
    const parsed = RunPause.safeParse(data);
    if (parsed.success) return parsed.data;
    warn(`ignored an invalid pause on ${where}: ${inlineIssues(parsed.error.issues)}`);
    return null;
  };
  const newest = new Map<string, number>();
  const subscription = await transport.subscribe(s.runPauses, (message) => {
    const pause = parse(message.data, message.subject);
    if (pause && message.subject === s.runPause(pause.runId)) apply(gates, pause, newest);
    else if (pause) warn(`ignored a pause of run ${pause.runId} published on ${message.subject}`);
  });
  const bucket = await transport.readKeyValue(s.buckets.pauses);
  for (const key of await bucket.keys()) {
    const entry = await bucket.get(key);
    const pause = entry ? parse(entry.value, `${s.buckets.pauses}/${key}`) : null;
    if (pause && pause.runId === key) apply(gates, pause, newest);
  }
  return () => subscription.unsubscribe();
}
