/**
 * Run events over the transport (`a2a.<ns>.events.<runId>.<type>`), for `a2a monitor` and for the
 * orchestrator of a run whose sessions run on hosts:
 *
 * - a host stamps the events of the sessions it runs (each carries its run id) and publishes them;
 * - an orchestrator publishes its own events, and relays those of its run's hosts into its bus
 *   (so its live tree, log and audit show the whole tree), without publishing them again;
 * - a monitor subscribes to them all.
 *
 * Events are core messages: at most once, for watching. What must not be lost travels on the
 * durable queues (results, updates, permission requests).
 */
import type { Clock, EventSink, Transport, TransportSubscription } from '../../machines/ports.js';
import { RunEvent } from '../../machines/protocol.js';
import { subjects } from '../../actors/remote.js';
import type { RunEventBus } from '../../actors/events.js';

/** A published event: a run event plus the process it came from. */
export type WireEvent = RunEvent & { origin: string };

/** The sink of a host: every event is stamped (its run id comes with it) and published. */
export function transportSink(transport: Transport, ns: string, origin: string, clock: Clock): EventSink {
  const s = subjects(ns);
  let seq = 0;
  return {
    listening: true,
    emit(event) {
      const runId = (event as { runId?: string }).runId ?? 'host';
      const stamped: WireEvent = { ...event, data: event.data ?? {}, runId, seq: seq++, ts: clock.now(), origin } as WireEvent;
      transport.publish(s.events(runId, event.type), stamped).catch(() => undefined);
    },
  };
}

/** Publishes a run's own events (not those relayed from its hosts). */
export function publishRunEvents(bus: RunEventBus, transport: Transport, ns: string, origin: string): () => void {
  const s = subjects(ns);
  return bus.subscribe((event) => {
    if ((event.data as { relayedFrom?: string }).relayedFrom) return;
    transport.publish(s.events(event.runId, event.type), { ...event, origin } satisfies WireEvent).catch(() => undefined);
  });
}

/** Relays the events the run's hosts publish into the run's bus. */
export async function relayHostEvents(bus: RunEventBus, transport: Transport, ns: string, runId: string, origin: string): Promise<TransportSubscription> {
  const s = subjects(ns);
  return transport.subscribe(`a2a.${ns}.events.${runId}.>`, (message) => {
    const parsed = RunEvent.safeParse(message.data);
    const from = (message.data as { origin?: unknown } | null)?.origin;
    if (!parsed.success || from === origin) return;
    const { runId: _r, seq: _s, ts: _t, ...event } = parsed.data;
    bus.emit({ ...event, data: { ...event.data, relayedFrom: String(from ?? 'host') } });
  }).then((sub) => {
    void s;
    return sub;
  });
}
