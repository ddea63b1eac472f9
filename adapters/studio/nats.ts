/**
 * The studio's view of a NATS namespace (`a2a studio --nats <url>`): the live runs, their trees
 * with the host of every session, the hosts with their liveness and load, and the metrics, as
 * `a2a monitor` knows them (adapters/monitor.ts, fed by adapters/monitorFeed.ts). Pages get a
 * snapshot when they connect and then whenever something changed, at most every `intervalMs`;
 * liveness is checked every 100 ms, so a lost host shows without any message arriving.
 *
 * A live run of the namespace opens as a run page like a local one (adapters/studio/natsRun.ts):
 * the studio asks the run's process on its control subject (`request`, as NATS user
 * `controlUser`), and hears its events (`onRun`) as a sign that its log grew.
 */
import type { Transport } from '../../machines/ports.js';
import { subjects } from '../../actors/distribution/remote.js';
import { A2AError } from '../../actors/errors.js';
import { ControlUser, type RunControlMessage } from '../../machines/protocol/index.js';
import { MonitorState, type MonitorEvent, type MonitorSnapshot } from '../monitor.js';
import { followNamespace } from '../monitorFeed.js';

export interface NatsWatch {
  /** The servers, without credentials. */
  servers: string;
  namespace: string;
  subscribe(listener: (snapshot: MonitorSnapshot) => void): () => void;
  /** A request on run `runId`'s control subject, signed with this studio's NATS user name; its reply as it came (its reader parses it). */
  request(runId: string, message: RunControlMessage, timeoutMs?: number): Promise<unknown>;
  /** Calls `listener` with every event of run `runId` heard (its log grew, or is about to). */
  onRun(runId: string, listener: (event: MonitorEvent) => void): () => void;
  /** When an event of run `runId` was last heard (ms since the epoch; 0: never). */
  lastHeard(runId: string): number;
  close(): Promise<void>;
}

export async function watchNamespace(
  transport: Transport,
  options: {
    servers: string;
    namespace: string;
    intervalMs?: number;
    /**
     * The NATS user this studio connects as, the last token of the control subjects it asks on
     * (the server lets a studio user publish under its own name only); default "studio".
     */
    controlUser?: string;
  },
): Promise<NatsWatch> {
  const controlUser = options.controlUser ?? 'studio';
  const checked = ControlUser.safeParse(controlUser);
  if (!checked.success) throw new A2AError('CONFIGURATION_INVALID', `the studio's NATS user name "${controlUser}" cannot name a control subject: ${checked.error.issues[0]!.message} (A2A_NATS_NAME)`, { where: 'A2A_NATS_NAME' });
  const s = subjects(options.namespace);
  const state = new MonitorState();
  const listeners = new Set<(snapshot: MonitorSnapshot) => void>();
  const runListeners = new Map<string, Set<(event: MonitorEvent) => void>>();
  // a number per run heard, as MonitorState keeps a view per run
  const heard = new Map<string, number>();
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
    event: (event) => {
      dirty = true;
      heard.set(event.runId, Date.now());
      for (const l of runListeners.get(event.runId) ?? []) l(event);
    },
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
    async request(runId, message, timeoutMs = 5_000) {
      return (await transport.request(s.control(runId, controlUser), message, { timeoutMs })).data;
    },
    lastHeard(runId) {
      return heard.get(runId) ?? 0;
    },
    onRun(runId, listener) {
      let set = runListeners.get(runId);
      if (!set) runListeners.set(runId, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
        if (set.size === 0) runListeners.delete(runId);
      };
    },
    async close() {
      clearInterval(timer);
      listeners.clear();
      runListeners.clear();
      await following.close();
    },
  };
}
