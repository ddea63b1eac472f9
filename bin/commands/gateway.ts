/**
 * `a2a gateway --nats <url> --serve coder=coding_agent[,reviewer=review_agent]`: lets external
 * agents that speak seed 004 (the "Orchestrator Integration Specification for Coding Agent") do the
 * tasks of a2a runs. It is a host (like `a2a host`) serving the a2a agent names given, whose
 * sessions hand their task to a registered external agent of the mapped `agent_type` instead of
 * running a model: an a2a run whose plan spawns `@coder` gets that task done by a `coding_agent`.
 * Each agent registers and talks on its own `<prefix>.orchestrator.messages.<agent_id>` (prefix
 * `a2a.<ns>.swarm` by default), where the server's permissions can say who speaks; the spec's
 * shared `<prefix>.orchestrator.messages` is refused unless `--shared-subject` (identities then
 * unverified, said on stderr). Agents are sent to on `<prefix>.agent.<agent_id>`. Drains on SIGTERM
 * or Ctrl-C like a host.
 */
import { hostname } from 'node:os';
import { A2AError } from '../../actors/errors.js';
import { realClock } from '../../adapters/clock.js';
import { commandRefusal } from '../../actors/distribution/remote.js';
import { Host } from '../../adapters/host.js';
import { Seed004Gateway } from '../../adapters/seed004/gateway.js';
import { drainOnSignal, publishingSink, type HostIo } from './host.js';
import { transportStage } from '../../adapters/assembly/stages.js';

export interface GatewayCommandOptions {
  nats: string;
  /** `coder=coding_agent,reviewer=review_agent`: a2a agent name = seed 004 agent_type. */
  serve: string;
  namespace?: string;
  prefix?: string;
  id?: string;
  ackTimeout?: number;
  taskTimeout?: number;
  /** The agents' heartbeat interval (ms); silent for 3 is unresponsive. */
  heartbeat?: number;
  drain?: number;
  concurrency?: number;
  maxAttempts?: number;
  agentWait?: number;
  /** Accept the spec's shared subject too, sender ids unverified. */
  sharedSubject?: boolean;
}

export interface GatewayIo extends HostIo {
  /** Called once the gateway listens (tests use it to reach the gateway's methods). */
  onStarted?: (gateway: Seed004Gateway) => void;
}

const TOKEN = /^[A-Za-z0-9_-]+$/;

/** `coder=coding_agent,reviewer=review_agent` → { coder: 'coding_agent', reviewer: 'review_agent' }. */
export function parseServe(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const [name, type, ...rest] = part.split('=').map((s) => s.trim());
    if (!name || !type || rest.length > 0 || !TOKEN.test(name) || !TOKEN.test(type)) {
      throw new A2AError('VALIDATION_ERROR', `--serve: "${part}" is not <a2a agent>=<external agent_type> (letters, digits, "_" and "-"), e.g. coder=coding_agent`);
    }
    out[name.replace(/^@/, '')] = type;
  }
  if (Object.keys(out).length === 0) throw new A2AError('VALIDATION_ERROR', '--serve names no agent: give <a2a agent>=<external agent_type>, e.g. coder=coding_agent');
  return out;
}

export async function gatewayCommand(options: GatewayCommandOptions, io: GatewayIo): Promise<number> {
  const ns = options.namespace ?? 'default';
  const serve = parseServe(options.serve);
  if (options.prefix !== undefined && !options.prefix.split('.').every((t) => TOKEN.test(t))) {
    throw new A2AError('VALIDATION_ERROR', `--prefix "${options.prefix}" must be dot-separated tokens of letters, digits, "_" and "-" (e.g. a2a.default.swarm)`);
  }
  const hostId = options.id ?? `gateway-${hostname().replace(/[^A-Za-z0-9_-]/g, '-')}-${process.pid}`;
  const transport = await transportStage(options.nats, ns, `a2a-gateway-${hostId}`, (line) => io.stderr.write(`${line}\n`));
  const bus = publishingSink(transport, ns, hostId, { log: (line) => io.stdout.write(`${line}\n`), notify: (line) => io.stderr.write(`${line}\n`) }, ['subtask.placed', 'session.restored', 'host.joined', 'host.lost', 'warning']);
  const gateway = new Seed004Gateway({
    transport,
    ns,
    ...(options.prefix ? { prefix: options.prefix } : {}),
    serve,
    clock: realClock,
    events: bus,
    log: (line) => io.stdout.write(`gateway: ${line}\n`),
    warn: (line) => io.stderr.write(`a2a: warning: --shared-subject: ${line}\n`),
    ...(options.sharedSubject ? { sharedSubject: true } : {}),
    ...(options.heartbeat ? { heartbeatMs: options.heartbeat } : {}),
    task: {
      ...(options.ackTimeout ? { ackTimeoutMs: options.ackTimeout } : {}),
      ...(options.taskTimeout ? { taskTimeoutMs: options.taskTimeout } : {}),
      ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
      ...(options.agentWait ? { agentWaitMs: options.agentWait } : {}),
      // a short acknowledgment timeout (tests, local agents) backs off in proportion
      ...(options.ackTimeout ? { backoffBaseMs: Math.min(1_000, Math.max(10, Math.floor(options.ackTimeout / 10))) } : {}),
    },
  });
  await gateway.start();
  const concurrency = options.concurrency ?? 64;
  const host = new Host({
    transport,
    ns,
    hostId,
    agents: Object.keys(serve),
    concurrency,
    sessionLogic: () => gateway.logic,
    flushEvents: () => bus.flush(),
    refuse: commandRefusal((name) => name in serve),
    clock: realClock,
    events: bus,
  });
  await host.start();
  const mapping = Object.entries(serve).map(([name, type]) => `@${name}=${type}`).join(', ');
  io.stdout.write(`gateway ${hostId} serves ${mapping} (concurrency ${concurrency}) in namespace ${ns}; agents talk on ${gateway.subjects.fromAny}${options.sharedSubject ? ` and ${gateway.subjects.shared}` : ''}\n`);
  io.onStarted?.(gateway);

  await drainOnSignal(host, io, { label: `gateway ${hostId}`, work: 'tasks', units: 'task(s)', drainMs: options.drain ?? 30_000 });
  await host.stop();
  await gateway.stop();
  await transport.close();
  return 0;
}
