/**
 * What `a2a monitor` and `a2a studio --nats` hear of a namespace: run events from every process
 * and host heartbeats, each parsed with its protocol schema (an invalid message is counted, never
 * applied), fed to a `MonitorState` (adapters/monitor.ts); and the hosts registered before the
 * listener started, read from the hosts bucket without creating anything (no consumer, nothing
 * published: the user needs no right that could deliver messages anywhere).
 */
import { subjects } from '../actors/distribution/remote.js';
import { RunEvent } from '../machines/protocol/index.js';
import type { Transport, TransportMessage, TransportSubscription } from '../machines/ports.js';
import { ReceivedHeartbeat, type HostChange, type MonitorEvent, type MonitorState } from './monitor.js';

export interface NamespaceListener {
  /** A valid event, applied to the state; `changes`: hosts it changed (a peer's host.lost). */
  event?(event: MonitorEvent, changes: HostChange[]): void;
  /** Hosts whose state changed with a heartbeat or a bucket record. */
  hosts?(changes: HostChange[]): void;
}

/** Listens to the namespace (one run's events with `run`, else all); `close` unsubscribes. */
export async function followNamespace(
  transport: Transport,
  options: { namespace: string; run?: string },
  state: MonitorState,
  on: NamespaceListener,
): Promise<{ close(): Promise<void> }> {
  const ns = options.namespace;
  const s = subjects(ns);
  const onEvent = (message: TransportMessage) => {
    const raw = message.data as { origin?: unknown } | null;
    const parsed = RunEvent.safeParse(raw);
    if (!parsed.success) {
      state.invalid++;
      return;
    }
    const event: MonitorEvent = { ...parsed.data, ...(typeof raw?.origin === 'string' ? { origin: raw.origin } : {}) };
    if (options.run && event.runId !== options.run && event.runId !== 'host') return;
    const changes = state.apply(event);
    on.event?.(event, changes);
  };
  const onHeartbeat = (message: TransportMessage) => {
    const beat = ReceivedHeartbeat.safeParse(message.data);
    if (!beat.success) {
      state.invalid++;
      return;
    }
    const change = state.applyHeartbeat(beat.data, Date.now());
    if (change) on.hosts?.([change]);
  };
  const subscriptions: TransportSubscription[] = [];
  const close = async () => {
    for (const sub of subscriptions.splice(0)) await sub.unsubscribe().catch(() => undefined);
  };
  try {
    subscriptions.push(await transport.subscribe(s.heartbeats, onHeartbeat));
    if (options.run) {
      subscriptions.push(await transport.subscribe(`a2a.${ns}.events.${options.run}.>`, onEvent));
      subscriptions.push(await transport.subscribe(s.hostEventsOf(options.run), onEvent));
      // host.joined / host.lost and host warnings are published outside any run
      subscriptions.push(await transport.subscribe(`a2a.${ns}.events.host.>`, onEvent));
    } else {
      subscriptions.push(await transport.subscribe(s.allEvents, onEvent));
      subscriptions.push(await transport.subscribe(s.allHostEvents, onEvent));
    }
    // the hosts registered before this listener started: read only
    const bucket = await transport.readKeyValue(s.buckets.hosts);
    for (const key of await bucket.keys()) {
      const beat = ReceivedHeartbeat.safeParse((await bucket.get(key))?.value);
      if (!beat.success) continue;
      const change = state.applyHeartbeat(beat.data);
      if (change) on.hosts?.([change]);
    }
  } catch (error) {
    await close();
    throw error;
  }
  return { close };
}
