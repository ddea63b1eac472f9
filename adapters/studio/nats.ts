/**
 * The studio's view of a NATS namespace (`a2a studio --nats <url>`): the live runs, their trees
 * with the host of every session, the hosts with their liveness and load, and the metrics, as
 * `a2a monitor` knows them (adapters/monitor.ts, fed by adapters/monitorFeed.ts). Pages get a
 * snapshot when they connect and then whenever something changed, at most every `intervalMs`;
 * liveness is checked every 100 ms, so a lost host shows without any message arriving.
 */
import type { Transport } from '../../machines/ports.js';
import { MonitorState, type MonitorSnapshot } from '../monitor.js';
import { followNamespace } from '../monitorFeed.js';

export interface NatsWatch {
  /** The servers, without credentials. */
  servers: string;
  namespace: string;
  subscribe(listener: (snapshot: MonitorSnapshot) => void): () => void;
  close(): Promise<void>;
}

export async function watchNamespace(transport: Transport, options: { servers: string; namespace: string; intervalMs?: number }): Promise<NatsWatch> {
  const state = new MonitorState();
  const listeners = new Set<(snapshot: MonitorSnapshot) => void>();
  const interval = options.intervalMs ?? 500;
  let dirty = true;
  let last = 0;
  const push = () => {
    const snapshot = state.snapshot(Date.now());
    last = Date.now();
    dirty = false;
    for (const l of listeners) l(snapshot);
  };
  const following = await followNamespace(transport, { namespace: options.namespace }, state, {
    event: () => (dirty = true),
    hosts: () => (dirty = true),
  });
  const timer = setInterval(() => {
    if (state.tick(Date.now()).length > 0) dirty = true;
    // ages (last heartbeat, elapsed times) are shown: a snapshot at least every 2 s
    if (listeners.size > 0 && Date.now() - last >= interval && (dirty || Date.now() - last >= 2_000)) push();
  }, 100);
  timer.unref();
  return {
    servers: options.servers,
    namespace: options.namespace,
    subscribe(listener) {
      listeners.add(listener);
      listener(state.snapshot(Date.now()));
      return () => listeners.delete(listener);
    },
    async close() {
      clearInterval(timer);
      listeners.clear();
      await following.close();
    },
  };
}
