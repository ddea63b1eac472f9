/**
 * Test fixture: a private `nats-server` on a free loopback port, with JetStream stored in a temp
 * dir, that a test can stop, kill and restart (same port, same store, so streams, consumers and
 * their messages survive, as they would in production).
 *
 * The binary comes from `NATS_SERVER_BIN`, `/usr/sbin/nats-server` (Debian package) or PATH. When
 * it is missing the fixture throws: a NATS test that silently skips would hide a broken adapter.
 * Every server started here is killed when the test process exits, and its store dir removed.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface NatsServer {
  /** `nats://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The JetStream store dir (and the config file); kept across restarts. */
  dir: string;
  /** Graceful stop (SIGTERM), waits until the process has exited. */
  stop(): Promise<void>;
  /** Abrupt stop (SIGKILL), as a crash would. */
  kill(): Promise<void>;
  /** Stops it if it runs, then starts it again on the same port and store dir. */
  restart(): Promise<void>;
  /** The last lines the server printed (since its last start): errors, permission violations. */
  log(): string;
  /** Its process id while it runs. */
  readonly pid: number | undefined;
}

export interface NatsServerOptions {
  /** Default true. */
  jetstream?: boolean;
  /** Extra configuration text appended to the config file (e.g. an `authorization { … }` block). */
  config?: string;
  /**
   * A whole configuration (e.g. examples/nats/server.conf) placed BEFORE the fixture's own lines:
   * its `listen` and `jetstream` settings are overridden by them (in a nats-server config the last
   * value of a key wins), everything else (authorization, accounts, limits) applies as written.
   */
  base?: string;
  /**
   * Environment variables for the server process only (on top of this process's environment): the
   * values a config reads with `$NAME` (passwords). They are never logged.
   */
  env?: Record<string, string>;
  /** Default: a free port chosen now. */
  port?: number;
}

const START_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 10_000;

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let exitHookInstalled = false;

/**
 * Kills the servers and removes their dirs when this process ends. vitest ends its workers with
 * SIGTERM, which skips 'exit' handlers: the signal is caught, the cleanup done, and the signal
 * raised again (unless someone else handles it) so that the process still ends as it would have.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const cleanup = () => {
    for (const child of live) child.kill('SIGKILL');
    live.clear();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    dirs.clear();
  };
  process.on('exit', cleanup);
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    const onSignal = () => {
      cleanup();
      process.removeListener(signal, onSignal);
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/** The nats-server binary, or an error that says how to get one (`env` and `system` for tests). */
export function natsServerBinary(env: NodeJS.ProcessEnv = process.env, system = '/usr/sbin/nats-server'): string {
  const fromEnv = env.NATS_SERVER_BIN;
  if (fromEnv) {
    if (isExecutable(fromEnv)) return fromEnv;
    throw new Error(
      `NATS_SERVER_BIN is set to "${fromEnv}", which is not an executable file: point it at a nats-server binary, or unset it to use ${system} (\`apt-get install nats-server\`).`,
    );
  }
  const candidates = [system, ...(env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'nats-server'))];
  const found = candidates.find(isExecutable);
  if (found) return found;
  throw new Error(
    `nats-server not found (looked at NATS_SERVER_BIN, ${system} and PATH). The NATS tests need a real server: ` +
      'install it with `apt-get install nats-server` (Debian/Ubuntu) or download it from https://github.com/nats-io/nats-server/releases ' +
      'and set NATS_SERVER_BIN=/path/to/nats-server.',
  );
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A port nobody listens on right now, on 127.0.0.1, below the kernel's ephemeral range (32768 and
 * up on Linux): a port the kernel handed out (`listen(0)`) comes from that range, and between its
 * release here and the server's bind, an outgoing connection of any process may be given it (a
 * nats-server failed to start on a busy machine: "listen tcp 127.0.0.1:38099: bind: address
 * already in use"). Ports below it are only taken by listeners, which the check here sees.
 */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20_000 + randomInt(12_000);
    if (taken.has(port)) continue;
    if (await canListen(port)) {
      taken.add(port);
      return port;
    }
  }
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not get a free port'))));
    });
  });
}

/** Ports this process handed out (two servers of one test never get the same). */
const taken = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** Resolves once the server answers a TCP connection with its INFO line (JetStream included). */
function waitForInfo(port: number, jetstream: boolean, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    let settled = false;
    const onExit = (code: number | null, signal: string | null) =>
      finish(new Error(`nats-server exited during start-up (code ${code}, signal ${signal}):\n${log()}`));
    child.once('exit', onExit);
    const finish = (error?: Error) => {
      if (settled) return;
      settled = true;
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve();
    };
    const attempt = () => {
      if (settled) return;
      if (Date.now() > deadline) {
        finish(new Error(`nats-server did not accept connections on 127.0.0.1:${port} within ${START_TIMEOUT_MS} ms:\n${log()}`));
        return;
      }
      const socket = createConnection({ host: '127.0.0.1', port });
      let buffer = '';
      const retry = () => {
        socket.destroy();
        setTimeout(attempt, 50);
      };
      socket.setTimeout(2_000, retry);
      socket.on('error', retry);
      socket.on('data', (chunk) => {
        buffer += chunk.toString('utf8');
        if (!buffer.includes('\r\n')) return;
        socket.destroy();
        if (buffer.startsWith('INFO ') && (!jetstream || buffer.includes('"jetstream":true'))) finish();
        else setTimeout(attempt, 50);
      });
    };
    attempt();
  });
}

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = natsServerBinary();
  installExitHook();
  const jetstream = options.jetstream ?? true;
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'a2a-nats-'));
  dirs.add(dir);
  const configFile = join(dir, 'nats.conf');
  const config = [
    options.base ?? '',
    `listen: "127.0.0.1:${port}"`,
    // No monitoring, gateway or leafnode ports: the client port on loopback (and, in a cluster, its routes: startNatsCluster).
    jetstream ? `jetstream { store_dir: ${JSON.stringify(join(dir, 'jetstream'))} }` : '',
    options.config ?? '',
  ].join('\n');
  writeFileSync(configFile, `${config}\n`);

  let child: ChildProcess | null = null;
  let output: string[] = [];
  const log = () => output.join('').split('\n').slice(-30).join('\n');

  const start = async () => {
    output = [];
    const proc = spawn(binary, ['-c', configFile], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
    });
    child = proc;
    live.add(proc);
    const keep = (chunk: Buffer) => {
      output.push(chunk.toString('utf8'));
      if (output.length > 2000) output = output.slice(-1000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    proc.once('exit', () => live.delete(proc));
    const spawned = new Promise<void>((resolve, reject) => {
      proc.once('spawn', resolve);
      proc.once('error', (error) => reject(new Error(`could not start ${binary}: ${error.message}`)));
    });
    await spawned;
    try {
      await waitForInfo(port, jetstream, proc, log);
    } catch (error) {
      proc.kill('SIGKILL');
      throw error;
    }
  };

  const halt = async (signal: NodeJS.Signals) => {
    const proc = child;
    child = null;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    stop: () => halt('SIGTERM'),
    kill: () => halt('SIGKILL'),
    restart: async () => {
      await halt('SIGTERM');
      await start();
    },
    log: () => output.join(''),
    get pid() {
      return child?.pid;
    },
  };
}

export interface NatsCluster {
  /** The nodes, `n1` … `nN` (their `server_name`), each a NatsServer that can be killed and restarted. */
  nodes: NatsServer[];
  /** Every node's URL, comma-separated (what `--nats` takes for a cluster). */
  urls: string;
  /** The node named `name` (as JetStream names stream leaders and replicas). */
  node(name: string): NatsServer;
  stop(): Promise<void>;
}

/**
 * A JetStream cluster of `size` nodes on loopback (routes between them, a store dir each), for
 * the cluster tests: resolves once its meta group has a leader and a stream of `size` replicas
 * can be placed, so that a test starts from a cluster that works.
 */
export async function startNatsCluster(size = 3, options: { extraConfig?: (i: number) => string; env?: Record<string, string> } = {}): Promise<NatsCluster> {
  const routePorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const routes = routePorts.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ');
  const nodes = await Promise.all(
    routePorts.map((port, i) => startNatsServer({ config: `server_name: n${i + 1}\ncluster { name: a2a_test, listen: "127.0.0.1:${port}", routes: [${routes}] }\n${options.extraConfig?.(i) ?? ''}`, ...(options.env ? { env: options.env } : {}) })),
  );
  const urls = nodes.map((n) => n.url).join(',');
  await placeable(urls, size);
  return {
    nodes,
    urls,
    node: (name) => {
      const found = nodes[Number(name.replace(/^n/, '')) - 1];
      if (!found) throw new Error(`no node "${name}" in this cluster (n1 … n${size})`);
      return found;
    },
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}

/** Waits until a stream of `replicas` replicas can be created (the meta leader elected, the peers known), then removes it. */
async function placeable(urls: string, replicas: number): Promise<void> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: urls.split(',') });
  try {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (let i = 0; ; i++) {
      try {
        await jsm.streams.add({ name: `probe_${i}`, subjects: [`probe.${i}`], num_replicas: replicas });
        await jsm.streams.delete(`probe_${i}`);
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`the cluster could not place a stream of ${replicas} replicas within ${START_TIMEOUT_MS} ms: ${String(error)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } finally {
    await nc.close();
  }
}

/** A random password per run, never all digits (see the note on passwords in examples/nats/server.conf). */
export const secret = (role: string) => `${role}-${randomBytes(18).toString('hex')}`;

/** The passwords examples/nats/server.conf reads from the server's environment, one per role, random per run. */
export function examplePasswords() {
  return {
    A2A_ORCHESTRATOR_PASSWORD: secret('orch'),
    A2A_HOST_ALPHA_PASSWORD: secret('host-alpha'),
    A2A_HOST_BETA_PASSWORD: secret('host-beta'),
    A2A_GATEWAY_GW_PASSWORD: secret('gateway'),
    A2A_MONITOR_PASSWORD: secret('mon'),
    A2A_STUDIO_OPS_PASSWORD: secret('studio-ops'),
    A2A_AGENT_ALPHA_PASSWORD: secret('alpha'),
    A2A_AGENT_BETA_PASSWORD: secret('beta'),
  };
}
