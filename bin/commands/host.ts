/**
 * `a2a host --nats <url> --agents coder,reviewer --concurrency N`: a headless actor host. It serves
 * the agent types named for every run of its namespace: takes their spawns from the queue, runs
 * them (and the sub-tasks they spawn of types it serves) as local actors, sends the rest on, and
 * drains on SIGTERM or Ctrl-C (finishes what it holds for `--drain` ms, then hands the rest back).
 */
import type { Host } from '../../adapters/host.js';
import { startHost } from '../../adapters/assembly/host.js';

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
  otel?: string;
  otelContent?: boolean;
}

export interface HostIo {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  /** Resolves when the host should drain (default: SIGTERM or SIGINT). */
  until?: Promise<void>;
}

export async function hostCommand(options: HostCommandOptions, io: HostIo): Promise<number> {
  const running = await startHost({
    nats: options.nats,
    serve: options.agents.split(',').map((a) => a.trim()).filter(Boolean),
    ...(options.namespace ? { namespace: options.namespace } : {}),
    ...(options.concurrency ? { concurrency: options.concurrency } : {}),
    ...(options.id ? { id: options.id } : {}),
    ...(options.workspace ? { workspace: options.workspace } : {}),
    ...(options.config ? { config: options.config } : {}),
    ...(options.script ? { script: options.script } : {}),
    ...(options.heartbeat ? { heartbeat: options.heartbeat } : {}),
    ...(options.otel ? { otel: options.otel } : {}),
    ...(options.otelContent ? { otelContent: true } : {}),
    notify: (line) => io.stderr.write(`${line}\n`),
    log: (line) => io.stdout.write(`${line}\n`),
  });
  io.stdout.write(`host ${running.hostId} serves ${running.agents.join(', ')} (concurrency ${running.concurrency}) in namespace ${running.namespace}\n`);
  await drainOnSignal(running.host, io, { label: `host ${running.hostId}`, work: 'work', units: 'session(s)', drainMs: options.drain ?? 30_000 });
  await running.close();
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

export { publishingSink } from '../../adapters/assembly/host.js';
