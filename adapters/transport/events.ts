/**
 * Run events over the transport, for `a2a monitor` and for the orchestrator of a run whose
 * sessions run on hosts:
 *
 * - a host stamps the events of the sessions it runs (each carries its run id and an id: the key
 *   of the fact it states, or one of its own) and enqueues them on the durable
 *   `a2a.<ns>.hostevents.<box>.<runId>.<type>`, `<box>` the run's box (its sessions' specs name
 *   it: actors/distribution/runBoxes.ts); its events outside any run (host.joined, its own
 *   warnings) are core messages on `a2a.<ns>.events.host.<type>`;
 * - an orchestrator publishes its own events on `a2a.<ns>.events.<runId>.<type>` (core: they are
 *   in its own log already), and consumes its hosts' ones from its box into its bus (through the
 *   box's consumer, which outlives the run: the box's next run reads on), acknowledging each once
 *   the run's log holds it: a restart of the server, of a host or of the run loses none, and a
 *   redelivered one is dropped by its id;
 * - a monitor subscribes to both (core subscribers also get what a stream stores).
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Clock, DurableConsumer, EventSink, Transport } from '../../machines/ports.js';
import { RunEvent } from '../../machines/protocol/index.js';
import { enqueueSurely, subjects } from '../../actors/distribution/remote.js';
import { runBox } from '../../actors/distribution/mailbox.js';
import { factKey, type RunEventBus } from '../../actors/observation/events.js';
import { inlineIssues } from '../../actors/errors.js';
import { secrets } from '../../actors/config/secrets.js';
import { headersFor } from '../../actors/observation/tracing.js';

/** A published event: a run event plus the process it came from. */
export type WireEvent = RunEvent & { origin: string };

/** An event waiting in a host's spill file, with the box it goes to. */
interface Parked {
  box: string;
  event: WireEvent;
}

/** Events of a host being sent at once (each retried until the queue has it); past it they wait in a file. */
export const EVENTS_IN_FLIGHT = 2_000;

export interface SinkSpill {
  /** Where events past `EVENTS_IN_FLIGHT` wait (one JSON line each), while the server is away. */
  file: string;
  /** Events sent at once before the next wait in the file (default EVENTS_IN_FLIGHT). */
  inFlight?: number;
}

/**
 * The sink of a host: every event is stamped (its run id comes with it) and sent on. While the
 * server is away every send is retried until stored, so a long outage would hold every event made
 * meanwhile in memory: past `inFlight` events they wait in `spill.file` instead, and are sent from
 * there as the sends in flight go through (none is dropped; `flush` waits for those too).
 */
export function transportSink(
  transport: Transport,
  ns: string,
  origin: string,
  clock: Clock,
  onLost: (event: WireEvent, error: unknown) => void = () => {},
  spill?: SinkSpill,
  /** The box of a run (where its process reads its hosts' events): a host knows it from its sessions' specs. */
  boxOf: (runId: string) => string = runBox,
): EventSink & { flush(): Promise<void>; readonly waiting: { inFlight: number; spilled: number } } {
  const s = subjects(ns);
  let seq = 0;
  const life = clock.now().toString(36);
  const sending = new Set<Promise<void>>();
  const max = spill?.inFlight ?? EVENTS_IN_FLIGHT;
  let spilled = 0;
  let draining: Promise<void> | null = null;
  const send = (stamped: WireEvent, box: string) => {
    // the queue's dedup window spans runs: the message id is the event's id within its run
    // with the trace context of the session it is about (when tracing is on): a consumer can hang it on its span
    const trace = stamped.subTaskId ? headersFor(stamped.runId, stamped.subTaskId) : undefined;
    const sent = enqueueSurely(transport, s.hostEvents(box, stamped.runId, stamped.type), stamped, `${stamped.runId}.${stamped.id}`, () => undefined, undefined, trace).catch((error: unknown) =>
      onLost(stamped, error),
    );
    sending.add(sent);
    void sent.finally(() => {
      sending.delete(sent);
      if (spilled > 0 && sending.size <= max / 2) void drain();
    });
    return sent;
  };
  if (spill) {
    // what an earlier life of this host left waiting (a file, or a batch being sent when it died)
    const dir = dirname(spill.file);
    const base = basename(spill.file);
    try {
      for (const name of readdirSync(dir)) {
        if (!name.startsWith(`${base}.`) || !name.endsWith('.sending')) continue;
        appendFileSync(spill.file, readFileSync(join(dir, name), 'utf8'));
        rmSync(join(dir, name), { force: true });
      }
      spilled = readFileSync(spill.file, 'utf8').split('\n').filter(Boolean).length;
    } catch {
      // no directory or file yet: nothing waits
    }
    if (spilled > 0) queueMicrotask(() => void drain());
  }
  /** Sends what waits in the file, as far as the sends in flight allow; the rest stays there. */
  const drain = (): Promise<void> => {
    if (draining) return draining;
    // cleared once settled (never from inside: a body that ends at once would clear it first)
    draining = drainNow().finally(() => {
      draining = null;
    });
    return draining;
  };
  let batches = 0;
  const drainNow = async (): Promise<void> => {
    if (!spill || spilled === 0) return;
    const taken = `${spill.file}.${process.pid}.${batches++}.sending`;
    let lines: string[];
    try {
      renameSync(spill.file, taken);
      lines = readFileSync(taken, 'utf8').split('\n').filter(Boolean);
    } catch {
      // nothing there (removed by someone else): nothing waits
      spilled = 0;
      return;
    }
    spilled = 0;
    const sent: Array<Promise<void>> = [];
    for (const line of lines) {
      let parked: Partial<Parked>;
      try {
        parked = JSON.parse(line) as Partial<Parked>;
      } catch {
        continue; // a line cut by a kill of this process: the events after it go on
      }
      // a line parked before events went to the run's box is the event itself
      const event = parked.event ?? (parked as unknown as WireEvent);
      const box = parked.box ?? boxOf(event.runId);
      if (sending.size < max) sent.push(send(event, box));
      else park(event, box);
    }
    // the batch's file goes once its events are stored (or back in the file): a host killed
    // before finds it when it starts again, and sends it again (the queue drops what it has)
    void Promise.all(sent).finally(() => rmSync(taken, { force: true }));
  };
  // with its box: a host started again has not learnt the run's box yet
  const park = (event: WireEvent, box: string) => {
    mkdirSync(dirname(spill!.file), { recursive: true });
    appendFileSync(spill!.file, `${JSON.stringify({ box, event } satisfies Parked)}\n`);
    spilled++;
  };
  return {
    listening: true,
    get waiting() {
      return { inFlight: sending.size, spilled };
    },
    emit(event) {
      const runId = (event as { runId?: string }).runId ?? 'host';
      const id = event.id ?? factKey(event) ?? `${origin}:${life}:${seq}`;
      // an event is a record people read (monitors): credential shapes are redacted too
      const stamped: WireEvent = secrets.deep({ ...event, id, data: event.data ?? {}, runId, seq: seq++, ts: clock.now(), origin } as WireEvent);
      if (runId === 'host') {
        transport.publish(s.events(runId, event.type), stamped).catch(() => undefined);
        return;
      }
      // retried (same id: the queue drops a duplicate) until stored, so that a server restart loses
      // none; past `max` in flight, it waits in the file (in order behind those already there)
      const box = boxOf(runId);
      if (spill && (sending.size >= max || spilled > 0)) park(stamped, box);
      else send(stamped, box);
    },
    /** Resolves once every event emitted so far is stored (or given up on), those in the file too. */
    async flush() {
      for (;;) {
        await Promise.all([...sending]);
        if (spilled === 0 && sending.size === 0) return;
        await drain();
      }
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
 * Consumes the events the run's hosts enqueue into the run's box, into the run's bus. Each is
 * acknowledged through `afterWrite` once the run's log holds it; an invalid one is reported (a
 * warning naming the field) and dropped; one seen before (its id) is dropped by the bus; one of
 * another run (the box's run before this one, ended: an event sent again late) is dropped unsaid.
 */
export async function relayHostEvents(
  bus: RunEventBus,
  transport: Transport,
  ns: string,
  runId: string,
  box: string,
  afterWrite: (ack: () => Promise<void>) => void,
): Promise<DurableConsumer> {
  const s = subjects(ns);
  return transport.consume(
    s.queues.hostEvents.name,
    // the box's consumer: made by its first run, read on by the next ones (no consumer made per
    // run: runBoxes.ts); removed by the server after an hour without a reader, and its events stay
    // queued until their max age. Acknowledged within a log flush (200 ms): a short ackWait brings
    // back soon what a server restart lost in flight (delivered, never received), well within the
    // drain at the run's end.
    { consumer: `events-${box}`, filter: s.hostEventsIn(box), ackWaitMs: RELAY_ACK_WAIT_MS, maxInFlight: 1024, inactiveMs: 3_600_000 },
    async (message) => {
      if (s.hostEventRun(message.subject) !== runId) return message.ack();
      const parsed = RunEvent.safeParse(message.data);
      const origin = (message.data as { origin?: unknown } | null)?.origin;
      if (!parsed.success || parsed.data.runId !== runId || typeof origin !== 'string') {
        const why = !parsed.success ? inlineIssues(parsed.error.issues) : parsed.data.runId !== runId ? `runId is "${parsed.data.runId}", not "${runId}"` : 'origin: expected the name of the process that sent it';
        bus.emit({ type: 'warning', data: { message: `dropped an invalid event from a host on ${message.subject}: ${why}` } });
        await message.ack();
        return;
      }
      const { runId: _r, seq: _s, ts: _t, ...event } = parsed.data;
      bus.emit({ ...event, id: event.id ?? `${origin}:${message.msgId || _s}`, data: { ...event.data, relayedFrom: origin, relayedAt: _t } });
      afterWrite(() => message.ack());
    },
  );
}
