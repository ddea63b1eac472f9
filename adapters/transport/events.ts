/**
 * Run events over the transport, for `a2a monitor` and for the orchestrator of a run whose
 * sessions run on hosts:
 *
 * - a host stamps the events of the sessions it runs (each carries its run id and an id: the key
 *   of the fact it states, or one of its own) and enqueues them on the durable
 *   `a2a.<ns>.hostevents.<runId>.<type>`; its events outside any run (host.joined, its own
 *   warnings) are core messages on `a2a.<ns>.events.host.<type>`;
 * - an orchestrator publishes its own events on `a2a.<ns>.events.<runId>.<type>` (core: they are
 *   in its own log already), and consumes its hosts' ones into its bus, acknowledging each once
 *   the run's log holds it: a restart of the server, of a host or of the run loses none, and a
 *   redelivered one is dropped by its id;
 * - a monitor subscribes to both (core subscribers also get what a stream stores).
 */
import type { Clock, DurableConsumer, EventSink, Transport } from '../../machines/ports.js';
import { RunEvent } from '../../machines/protocol.js';
import { enqueueSurely, subjects } from '../../actors/remote.js';
import { factKey, type RunEventBus } from '../../actors/events.js';
import { inlineIssues } from '../../actors/errors.js';
import { secrets } from '../../actors/secrets.js';
import { headersFor } from '../../actors/tracing.js';

/** A published event: a run event plus the process it came from. */
export type WireEvent = RunEvent & { origin: string };

/** The sink of a host: every event is stamped (its run id comes with it) and sent on. */
export function transportSink(
  transport: Transport,
  ns: string,
  origin: string,
  clock: Clock,
  onLost: (event: WireEvent, error: unknown) => void = () => {},
): EventSink & { flush(): Promise<void> } {
  const s = subjects(ns);
  let seq = 0;
  const life = clock.now().toString(36);
  const sending = new Set<Promise<void>>();
  return {
    listening: true,
    emit(event) {
      const runId = (event as { runId?: string }).runId ?? 'host';
      const id = event.id ?? factKey(event) ?? `${origin}:${life}:${seq}`;
      // an event is a record people read (monitors): credential shapes are redacted too
      const stamped: WireEvent = secrets.deep({ ...event, id, data: event.data ?? {}, runId, seq: seq++, ts: clock.now(), origin } as WireEvent);
      if (runId === 'host') {
        transport.publish(s.events(runId, event.type), stamped).catch(() => undefined);
        return;
      }
      // retried (same id: the queue drops a duplicate) until stored, so that a server restart loses none
      // the queue's dedup window spans runs: the message id is the event's id within its run
      // with the trace context of the session it is about (when tracing is on): a consumer can hang it on its span
      const trace = event.subTaskId ? headersFor(runId, event.subTaskId) : undefined;
      const sent = enqueueSurely(transport, s.hostEvents(runId, event.type), stamped, `${runId}.${id}`, () => undefined, undefined, trace).catch((error: unknown) => onLost(stamped, error));
      sending.add(sent);
      void sent.finally(() => sending.delete(sent));
    },
    /** Resolves once every event emitted so far is stored (or given up on). */
    async flush() {
      await Promise.all([...sending]);
    },
  };
}

/** Publishes a run's own events (not those relayed from its hosts). */
export function publishRunEvents(bus: RunEventBus, transport: Transport, ns: string, origin: string): () => void {
  const s = subjects(ns);
  return bus.subscribe((event) => {
    if ((event.data as { relayedFrom?: string }).relayedFrom) return;
    const trace = event.subTaskId ? headersFor(event.runId, event.subTaskId) : undefined;
    transport.publish(s.events(event.runId, event.type), secrets.deep({ ...event, origin } satisfies WireEvent), trace).catch(() => undefined);
  });
}

/** How long a host event handed to the relay may stay unacknowledged before the queue sends it again. */
export const RELAY_ACK_WAIT_MS = 2_000;

/**
 * Consumes the events the run's hosts enqueue into the run's bus. Each is acknowledged through
 * `afterWrite` once the run's log holds it; an invalid one is reported (a warning naming the
 * field) and dropped; one seen before (its id) is dropped by the bus.
 */
export async function relayHostEvents(
  bus: RunEventBus,
  transport: Transport,
  ns: string,
  runId: string,
  afterWrite: (ack: () => Promise<void>) => void,
): Promise<DurableConsumer> {
  const s = subjects(ns);
  return transport.consume(
    s.queues.hostEvents.name,
    // removed by the server after a minute without a reader (a run stopped, or ended): a run
    // resumed later attaches a new one, and its events stay queued until their max age.
    // Acknowledged within a log flush (200 ms): a short ackWait brings back soon what a server
    // restart lost in flight (delivered, never received), well within the drain at the run's end.
    { consumer: `events-${runId}`, filter: s.hostEventsOf(runId), ackWaitMs: RELAY_ACK_WAIT_MS, maxInFlight: 1024, inactiveMs: 60_000 },
    async (message) => {
      const parsed = RunEvent.safeParse(message.data);
      const origin = (message.data as { origin?: unknown } | null)?.origin;
      if (!parsed.success || parsed.data.runId !== runId || typeof origin !== 'string') {
        const why = !parsed.success ? inlineIssues(parsed.error.issues) : parsed.data.runId !== runId ? `runId is "${parsed.data.runId}", not "${runId}"` : 'origin: expected the name of the process that sent it';
        bus.emit({ type: 'warning', data: { message: `dropped an invalid event from a host on ${message.subject}: ${why}` } });
        await message.ack();
        return;
      }
      const { runId: _r, seq: _s, ts: _t, ...event } = parsed.data;
      bus.emit({ ...event, id: event.id ?? `${origin}:${message.msgId || _s}`, data: { ...event.data, relayedFrom: origin } });
      afterWrite(() => message.ack());
    },
  );
}
