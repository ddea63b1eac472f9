/**
 * A host, assembled: the configuration, agents, tools and models of a process that serves agent
 * types for every run of a NATS namespace (`a2a host`, and `startHost` in the library). It takes
 * their spawns from the queues, runs them as local actors, and publishes their events.
 */
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { EventSink, Model, Transport } from '../../machines/ports.js';
import type { RunEvent, SessionSpec } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import { createRuntime } from '../../actors/runtime.js';
import { artifactEvent, artifactStores } from '../../actors/organiser/artifacts.js';
import { commandRefusal } from '../../actors/distribution/remote.js';
import { hostBox } from '../../actors/distribution/mailbox.js';
import { KnownRunBoxes } from '../../actors/distribution/runBoxes.js';
import { errorText } from '../../machines/errorText.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../store/artifactKv.js';
import { EFFECTS_BUCKET, KvEffectJournals } from '../store/effectsKv.js';
import { realClock } from '../clock.js';
import { loadScript } from '../config.js';
import { DeferredAcks, Host, snapshotHolders } from '../host.js';
import { transportSink, type SinkSpill } from '../transport/events.js';
import { followPauses } from '../transport/pause.js';
import type { Script } from '../model/scripted.js';
import { describeEvent } from '../terminal.js';
import { modelsFor } from './models.js';
import { configuration, externalTools, transportStage } from './stages.js';
import type { CodeInputs } from './tools.js';
import { exportSettings, tracingFor, type ProcessTracing } from './tracing.js';

export interface HostOptions extends CodeInputs {
  /** The NATS server(s); credentials come from A2A_NATS_USER/PASSWORD/TOKEN, never from here. */
  nats: string;
  namespace?: string;
  /** The agent types it serves (`coder`, `@reviewer`): `a2a host --agents`. */
  serve: string[];
  /** Sessions it runs at once (default 4). */
  concurrency?: number;
  id?: string;
  workspace?: string;
  config?: string;
  script?: string;
  /** One model for every session it runs. */
  model?: Model;
  heartbeat?: number;
  /** The host's own notable events (placements, restorations, results) as lines; default: none. */
  log?: (line: string) => void;
  /** Traces of the sessions it runs (see RunOptions.otel): their spans hang from their owners' spans, in one trace per run. */
  otel?: string | boolean;
  otelContent?: boolean;
}

export interface RunningHost {
  readonly hostId: string;
  readonly namespace: string;
  readonly agents: string[];
  readonly concurrency: number;
  readonly host: Host;
  /** Takes no new work, gives running sessions `drainMs` to finish, hands the rest back. */
  drain(drainMs: number): Promise<{ finished: number; released: string[] }>;
  /** Stops the host and closes its connection (drain first to finish work). */
  close(): Promise<void>;
}

export async function startHost(options: HostOptions): Promise<RunningHost> {
  const notify = options.notify ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const workspace = resolve(options.workspace ?? process.cwd());
  const ns = options.namespace ?? 'default';
  const loaded = configuration({ workspace, ...(options.config ? { configFile: options.config } : {}), ...(options.tools ? { tools: options.tools } : {}), ...(options.agents ? { agents: options.agents } : {}) });
  const { config, catalog, registry } = loaded;
  if (!Array.isArray(options.serve)) throw new A2AError('VALIDATION_ERROR', 'serve: give the agent types the host serves, as a list (["coder", "reviewer"])', { where: 'serve' });
  const agents = options.serve.map((a) => registry.resolve(a).parsed.agentName);
  if (agents.length === 0) throw new A2AError('VALIDATION_ERROR', `--agents names no agent type; available: ${registry.list().map((d) => d.capability.id).join(', ')}`, { where: 'serve' });
  const script: Script =
    options.scriptData ?? (options.script ? loadScript(resolve(options.script)) : config.model.script ? loadScript(resolve(loaded.scriptBase ?? workspace, config.model.script)) : { rules: [] });
  const hostId = options.id ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '-')}-${process.pid}`;
  const concurrency = options.concurrency ?? 4;

  // checked before anything connects
  const otelExport = exportSettings(options);
  const transport = await transportStage(options.nats, ns, `a2a-host-${hostId}`, notify);
  let tracing: ProcessTracing | null = null;
  try {
    tracing = await tracingFor(options, otelExport, 'a2a-host', notify, hostId);
    if (tracing) notify(`tracing: spans of the sessions of host ${hostId} go to ${tracing.target}`);
    const builder = tracing?.builder;
    // events are published under their own run (for its orchestrator and monitors) and logged here
    // events made while the server is away wait in a file past the first 2,000 (never in memory without bound)
    const spill = { file: join(workspace, '.a2a', 'hosts', hostId, 'events-waiting.jsonl') };
    // the runs' boxes, learnt from the sessions this host runs: their events go there
    const runBoxes = new KnownRunBoxes();
    const bus = publishingSink(transport, ns, hostId, { log: options.log ?? (() => {}), notify }, ['subtask.placed', 'session.restored', 'host.joined', 'host.lost', 'subtask.result', 'warning'], builder ? (e) => builder.observe(e) : undefined, spill, (runId) => runBoxes.of(runId));
    const { resolveModel, costs, orchestratorModel } = modelsFor(config, registry, script, realClock, workspace, options.model);
    const deferredAcks = new DeferredAcks();
    const { commands, mcp } = externalTools(config, workspace, bus);
    if (commands.warning) {
      notify(`a2a: warning: ${commands.warning}`);
      bus.emit({ type: 'warning', data: { message: `host ${hostId}: ${commands.warning}`, sandbox: 'none' } });
    }
    // the effect journal of the sessions run here, in the namespace's effects bucket: a host that
    // takes a session over answers its restored steps from it (adapters/store/effectsKv.ts)
    let host: Host | null = null;
    const journals = config.effects.journal
      ? new KvEffectJournals(await transport.keyValue(EFFECTS_BUCKET), {
          rootOf: (runId, sessionId) => host?.rootOf(runId, sessionId) ?? sessionId,
          beforeWrite: () => bus.flush(),
          onInvalid: (problem) => bus.emit({ type: 'warning', data: { message: `host ${hostId}: the effect journal: ${problem}` } }),
        })
      : null;
    const runtime = createRuntime({
      external: mcp,
      // the runs' artifacts, in the KV bucket the run's process and the other hosts use too
      artifacts: artifactStores(new KvArtifactBackend(() => transport.keyValue(ARTIFACT_BUCKET)), realClock, { onChange: (meta, change) => bus.emit(artifactEvent(meta, change)) }),
      registry,
      clock: realClock,
      events: bus,
      model: resolveModel,
      orchestratorModel,
      costs,
      catalog,
      commands: commands.runner,
      ...(journals ? { effects: { journal: (runId: string) => journals.journal(runId), inDoubt: config.effects.inDoubt } } : {}),
      remote: {
        deps: {
          transport,
          ns,
          process: hostId,
          box: hostBox(hostId),
          // a child's reports go to whichever host holds the tree its owner runs in
          ownerRoot: (spec: SessionSpec) => host?.rootOf(spec.correlation.runId, spec.owner.ownerId),
          clock: realClock,
          events: bus,
          deferAck: deferredAcks.defer,
          holderOf: await snapshotHolders(transport, ns),
        },
        // children of types this host serves run here; the others go to hosts that serve them
        placeRemotely: (spec) => !agents.includes(spec.agent.agentName),
      },
    });
    host = new Host({
      transport,
      ns,
      hostId,
      agents,
      concurrency,
      sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask),
      flushEvents: () => bus.flush(),
      runBoxes,
      ...(journals
        ? {
            restoring: async (spec: SessionSpec) => void (await journals.load(spec.correlation.runId, spec.id)),
            closed: (spec: SessionSpec) => void journals.remove(spec.correlation.runId, spec.id).catch(() => undefined),
          }
        : {}),
      onTreeEnded: (unused) => {
        // a run's journal goes when no tree of it runs here (its wire ids start with "<run>.")
        journals?.forget((runId) => unused(runId));
        runtime.ids.forget?.(unused);
        runtime.budget.forget(unused);
        runtime.costs?.ledger.forget(unused);
        // a host serves many runs over its life: the pause gates of runs not paused go too
        runtime.pauses.prune();
      },
      refuse: commandRefusal((name) => registry.has(name)),
      clock: realClock,
      events: bus,
      deferredAcks,
      ...(options.heartbeat ? { heartbeatMs: options.heartbeat } : {}),
    });
    // the pause of each run this host serves sessions of (a2a pause on the run's machine)
    const unfollow = await followPauses(transport, ns, runtime.pauses, (message) => bus.emit({ type: 'warning', data: { message: `host ${hostId}: ${message}` } }));
    await host.start();
    let closed = false;
    return {
      hostId,
      namespace: ns,
      agents,
      concurrency,
      host,
      drain: (drainMs) => host.drain(drainMs),
      async close() {
        if (closed) return;
        closed = true;
        await host.stop();
        await mcp.closeAll();
        await unfollow();
        await transport.close();
        await tracing?.close();
      },
    };
  } catch (error) {
    await transport.close();
    await tracing?.close();
    throw error;
  }
}

/**
 * The event sink of a host process: every event is published (stamped with its run, for the run's
 * orchestrator and monitors), and those of the `logged` types are also told as lines.
 */
export function publishingSink(
  transport: Transport,
  ns: string,
  hostId: string,
  lines: { log(line: string): void; notify(line: string): void },
  logged: RunEvent['type'][],
  observe?: (event: RunEvent) => void,
  spill?: SinkSpill,
  boxOf?: (runId: string) => string,
): EventSink & { flush(): Promise<void> } {
  // an event that cannot be stored is said where a person sees it, never dropped without a word
  const sink = transportSink(transport, ns, hostId, realClock, (event, error) => lines.notify(`a2a: could not send the ${event.type} event ${event.id} of run ${event.runId}: ${errorText(error)}`), spill, boxOf);
  const shown = new Set<string>(logged);
  let seq = 0;
  return {
    listening: true,
    flush: () => sink.flush(),
    emit(event) {
      sink.emit(event);
      // the span builder: events of a run it has sessions of (a host's own events are outside any run)
      const runId = (event as { runId?: string }).runId;
      if (observe && runId) observe({ ...event, data: event.data ?? {}, runId, seq: 0, ts: Date.now() } as RunEvent);
      if (!shown.has(event.type)) return;
      const line = describeEvent({ ...event, data: event.data ?? {}, runId: (event as { runId?: string }).runId ?? hostId, seq: seq++, ts: Date.now() } as RunEvent);
      if (line) lines.log(line);
    },
  };
}
