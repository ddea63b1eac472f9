/**
 * `a2a host --nats <url> --agents coder,reviewer --concurrency N`: a headless actor host. It serves
 * the agent types named for every run of its namespace: takes their spawns from the queue, runs
 * them (and the sub-tasks they spawn of types it serves) as local actors, sends the rest on, and
 * drains on SIGTERM or Ctrl-C (finishes what it holds for `--drain` ms, then hands the rest back).
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type { EventSink, Transport } from '../../machines/ports.js';
import type { RunEvent } from '../../machines/protocol.js';
import { A2AError } from '../../actors/errors.js';
import { createRuntime } from '../../actors/runtime.js';
import { artifactEvent, artifactStores } from '../../actors/artifacts.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../../adapters/store/artifactKv.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { realClock } from '../../adapters/clock.js';
import { loadConfig, loadRegistry, loadScript } from '../../adapters/config.js';
import { DeferredAcks, Host, snapshotHolders } from '../../adapters/host.js';
import { commandRefusal } from '../../actors/remote.js';
import { connectNats, describeServers, type NatsConnectedTransport } from '../../adapters/transport/nats.js';
import { transportSink } from '../../adapters/transport/events.js';
import { followPauses } from '../../adapters/transport/pause.js';
import type { Script } from '../../adapters/model/scripted.js';
import { describeEvent } from '../../adapters/terminal.js';
import { modelsFor } from '../models.js';
import { commandRunnerFor } from '../sandbox.js';
import { errorText } from '../../machines/errorText.js';

export interface HostCommandOptions {
  nats: string;
  namespace?: string;
  agents: string;
  concurrency?: number;
  id?: string;
  workspace?: string;
  config?: string;
  script?: string;
  drain?: number;
  heartbeat?: number;
}

export interface HostIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Resolves when the host should drain (default: SIGTERM or SIGINT). */
  until?: Promise<void>;
}

/** Credentials come from the environment, never from flags (they would show in process lists). */
export function natsCredentials(env: NodeJS.ProcessEnv = process.env) {
  return {
    ...(env.A2A_NATS_USER ? { user: env.A2A_NATS_USER } : {}),
    ...(env.A2A_NATS_PASSWORD ? { pass: env.A2A_NATS_PASSWORD } : {}),
    ...(env.A2A_NATS_TOKEN ? { token: env.A2A_NATS_TOKEN } : {}),
    // not a secret, but per user like the others: where this user's replies come back (server.conf)
    ...(env.A2A_NATS_INBOX_PREFIX ? { inboxPrefix: env.A2A_NATS_INBOX_PREFIX } : {}),
    // the monitor's, in examples/nats/server.conf: its account reaches JetStream through an import
    ...(env.A2A_NATS_JS_API_PREFIX ? { jsApiPrefix: env.A2A_NATS_JS_API_PREFIX } : {}),
  };
}

/**
 * One warning on stderr when the server let this process in without credentials: then nothing
 * on the server tells one client from another, and any of them can forge what a2a trusts.
 */
export function warnIfUnauthenticated(transport: NatsConnectedTransport, servers: string, stderr: NodeJS.WritableStream): void {
  if (transport.serverRequiresAuth) return;
  stderr.write(
    `a2a: warning: the NATS server at ${describeServers(servers)} does not require authentication: any client that reaches it can forge ` +
      'session results, run and audit events, cancels and external agents\' messages. Give each role its own user ' +
      '(examples/nats/server.conf; README, "Security").\n',
  );
}

export async function hostCommand(options: HostCommandOptions, io: HostIo): Promise<number> {
  const workspace = resolve(options.workspace ?? process.cwd());
  const ns = options.namespace ?? 'default';
  const loaded = loadConfig({ workspace, ...(options.config ? { explicitFile: options.config } : {}) });
  const { config } = loaded;
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names(), userAgents: config.agents, userAgentsSource: 'config "agents"' });
  const agents = options.agents
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean)
    .map((a) => registry.resolve(a).parsed.agentName);
  if (agents.length === 0) throw new A2AError('VALIDATION_ERROR', `--agents names no agent type; available: ${registry.list().map((d) => d.capability.id).join(', ')}`);
  const script: Script = options.script ? loadScript(resolve(options.script)) : config.model.script ? loadScript(resolve(loaded.scriptBase ?? workspace, config.model.script)) : { rules: [] };
  const hostId = options.id ?? `${hostname().replace(/[^A-Za-z0-9_-]/g, '-')}-${process.pid}`;

  const transport = await connectNats({ servers: options.nats, namespace: ns, name: `a2a-host-${hostId}`, ...natsCredentials() });
  warnIfUnauthenticated(transport, options.nats, io.stderr);
  // events are published under their own run (for its orchestrator and monitors) and logged here
  const bus = publishingSink(transport, ns, hostId, io, ['subtask.placed', 'session.restored', 'host.joined', 'host.lost', 'subtask.result', 'warning']);
  const { resolveModel, costs, orchestratorModel } = modelsFor(config, registry, script, realClock, workspace);
  const deferredAcks = new DeferredAcks();
  const commands = commandRunnerFor(config.sandbox);
  if (commands.warning) {
    io.stderr.write(`a2a: warning: ${commands.warning}\n`);
    bus.emit({ type: 'warning', data: { message: `host ${hostId}: ${commands.warning}`, sandbox: 'none' } });
  }
  const runtime = createRuntime({
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
    remote: {
      deps: { transport, ns, process: hostId, clock: realClock, events: bus, deferAck: deferredAcks.defer, holderOf: await snapshotHolders(transport, ns) },
      // children of types this host serves run here; the others go to hosts that serve them
      placeRemotely: (spec) => !agents.includes(spec.agent.agentName),
    },
  });
  const host = new Host({
    transport,
    ns,
    hostId,
    agents,
    concurrency: options.concurrency ?? 4,
    sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask),
    flushEvents: () => bus.flush(),
    refuse: commandRefusal((name) => registry.has(name)),
    clock: realClock,
    events: bus,
    deferredAcks,
    ...(options.heartbeat ? { heartbeatMs: options.heartbeat } : {}),
  });
  // the pause of each run this host serves sessions of (a2a pause on the run's machine)
  const unfollow = await followPauses(transport, ns, runtime.pauses, (message) => bus.emit({ type: 'warning', data: { message: `host ${hostId}: ${message}` } }));
  await host.start();
  io.stdout.write(`host ${hostId} serves ${agents.join(', ')} (concurrency ${options.concurrency ?? 4}) in namespace ${ns}\n`);

  await drainOnSignal(host, io, { label: `host ${hostId}`, work: 'work', units: 'session(s)', drainMs: options.drain ?? 30_000 });
  await host.stop();
  await unfollow();
  await transport.close();
  return 0;
}

/**
 * Waits for SIGTERM or SIGINT (or `io.until`), then drains the host: no new work, running
 * sessions get `drainMs` to finish, the rest are handed back. Says so on stdout.
 */
export async function drainOnSignal(host: Host, io: HostIo, o: { label: string; work: string; units: string; drainMs: number }): Promise<void> {
  await (io.until ??
    new Promise<void>((done) => {
      const stop = () => done();
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
    }));
  io.stdout.write(`${o.label} draining: no new ${o.work}; ${host.running} ${o.units} running\n`);
  const { finished, released } = await host.drain(o.drainMs);
  io.stdout.write(`${o.label} drained: ${finished} finished, ${released.length} handed back${released.length ? ` (${released.join(', ')})` : ''}\n`);
}

/**
 * The event sink of a host process: every event is published (stamped with its run, for the run's
 * orchestrator and monitors), and those of the `logged` types are also written to stdout.
 */
export function publishingSink(transport: Transport, ns: string, hostId: string, io: Pick<HostIo, 'stdout' | 'stderr'>, logged: RunEvent['type'][]): EventSink & { flush(): Promise<void> } {
  // an event that cannot be stored is said where a person sees it, never dropped without a word
  const sink = transportSink(transport, ns, hostId, realClock, (event, error) => io.stderr.write(`a2a: could not send the ${event.type} event ${event.id} of run ${event.runId}: ${errorText(error)}\n`));
  const shown = new Set<string>(logged);
  let seq = 0;
  return {
    listening: true,
    flush: () => sink.flush(),
    emit(event) {
      sink.emit(event);
      if (!shown.has(event.type)) return;
      const line = describeEvent({ ...event, data: event.data ?? {}, runId: (event as { runId?: string }).runId ?? hostId, seq: seq++, ts: Date.now() } as RunEvent);
      if (line) io.stdout.write(`${line}\n`);
    },
  };
}
