/**
 * A run's pause across hosts: the run's process publishes it (core, for the hosts that are up)
 * and keeps it in the `pauses` bucket (for a host that starts, or reconnects, later); every host
 * follows both into its per-run gates, so that the run's agents on hosts also finish their
 * current model call and wait. Messages are parsed with `RunPause`; an invalid one is reported
 * and changes nothing.
 */
import type { Transport } from '../../machines/ports.js';
import { RunPause } from '../../machines/protocol.js';
import { subjects } from '../../actors/remote.js';
import { inlineIssues } from '../../actors/errors.js';
import type { PauseGates } from '../../actors/pause.js';

/** The run's process: tells its hosts (and keeps it for those that come later). */
export async function publishPause(transport: Transport, ns: string, pause: RunPause): Promise<void> {
  const s = subjects(ns);
  const bucket = await transport.keyValue(s.buckets.pauses);
  if (pause.paused) await bucket.put(pause.runId, pause);
  else await bucket.delete(pause.runId);
  await transport.publish(s.runPause(pause.runId), pause);
}

function apply(gates: PauseGates, pause: RunPause): void {
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
  const subscription = await transport.subscribe(s.runPauses, (message) => {
    const pause = parse(message.data, message.subject);
    if (pause && message.subject === s.runPause(pause.runId)) apply(gates, pause);
    else if (pause) warn(`ignored a pause of run ${pause.runId} published on ${message.subject}`);
  });
  const bucket = await transport.readKeyValue(s.buckets.pauses);
  for (const key of await bucket.keys()) {
    const entry = await bucket.get(key);
    const pause = entry ? parse(entry.value, `${s.buckets.pauses}/${key}`) : null;
    if (pause && pause.runId === key) apply(gates, pause);
  }
  return () => subscription.unsubscribe();
}
