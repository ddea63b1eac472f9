/**
 * `a2a studio [--port n] [--host h] [--nats url --namespace ns] [--workspace dir]`: the web page
 * that shows the workspace's runs live and steers them (adapters/studio). It prints the page's URL
 * with its access token and serves until SIGINT/SIGTERM.
 */
import { resolve } from 'node:path';
import { startStudio } from '../../adapters/studio/server.js';
import { watchNamespace, type NatsWatch } from '../../adapters/studio/nats.js';
import { connectNats, describeServers } from '../../adapters/transport/nats.js';
import { natsCredentials } from '../../adapters/assembly/nats.js';
import { isLoopback } from '../../adapters/hostGuard.js';

export interface StudioCommandOptions {
  workspace?: string;
  port?: number;
  host?: string;
  nats?: string;
  namespace?: string;
  inspector?: string;
  traceUrl?: string;
}

export async function studioCommand(
  options: StudioCommandOptions,
  io: {
    stdout: NodeJS.WritableStream;
    stderr: NodeJS.WritableStream;
    /**
     * Where the page's URL goes with its token in clear (the CLI's stdout without redaction,
     * which would blank the `token=` of the URL): the person who started the studio needs it.
     */
    url?: NodeJS.WritableStream;
  },
  untilStopped: () => Promise<void> = () => new Promise((r) => {
    process.once('SIGINT', () => r());
    process.once('SIGTERM', () => r());
  }),
): Promise<number> {
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host)) {
    io.stderr.write(`a2a studio: warning: serving on ${host}, not loopback: anyone who can reach it and learns the token can read every run and approve what they ask. The token is then the only protection; prefer an SSH tunnel to 127.0.0.1.\n`);
  }
  let nats: NatsWatch | undefined;
  let closeTransport: (() => Promise<void>) | undefined;
  if (options.nats) {
    const namespace = options.namespace ?? 'default';
    const transport = await connectNats({ servers: options.nats, namespace, name: 'a2a-studio', ...natsCredentials() });
    closeTransport = () => transport.close();
    // the NATS user it connects as names who asks on a run's control subject: A2A_NATS_NAME (its
    // .env from `a2a nats users --studio`), else the password user's name
    const controlUser = process.env.A2A_NATS_NAME ?? process.env.A2A_NATS_USER ?? 'studio';
    try {
      nats = await watchNamespace(transport, { servers: describeServers(options.nats), namespace, controlUser });
    } catch (error) {
      await transport.close();
      throw error;
    }
  }
  try {
    const studio = await startStudio({
      workspace: resolve(options.workspace ?? process.cwd()),
      host,
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(nats ? { nats } : {}),
      ...(options.inspector ? { inspectorUrl: options.inspector } : {}),
      ...((options.traceUrl ?? process.env.A2A_TRACE_URL) ? { traceUrl: (options.traceUrl ?? process.env.A2A_TRACE_URL)! } : {}),
      ...(process.env.A2A_STUDIO_TOKEN ? { token: process.env.A2A_STUDIO_TOKEN } : {}),
    });
    if (process.env.A2A_STUDIO_TOKEN) {
      // a token the user chose stays out of the output, like every secret of the environment
      io.stdout.write(`a2a studio: open ${studio.url.replace(/\?token=.*$/, '')}?token=<A2A_STUDIO_TOKEN>\n  (opening it logs this browser in: the page keeps a cookie, not the token; programs send Authorization: Bearer <token>; Ctrl-C to stop)\n`);
    } else {
      (io.url ?? io.stdout).write(`a2a studio: open ${studio.url}\n  (opening it logs this browser in: the page keeps a cookie, not the token; programs send Authorization: Bearer <token>; Ctrl-C to stop)\n`);
    }
    await untilStopped();
    await studio.close();
    return 0;
  } finally {
    await nats?.close();
    await closeTransport?.();
  }
}
