/**
 * What a process checks and prints about its NATS servers before it connects (replicas, the list
 * of URLs, URLs without their credentials): apart from nats.ts, so that reading a setting does not
 * load the NATS client.
 */
import { A2AError } from '../../actors/errors.js';

/** Checks a replicas setting: JetStream holds 1 to 5 replicas of a stream. */
export function assertReplicas(value: unknown, where: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 5) {
    throw new A2AError('CONFIGURATION_INVALID', `${where} must be an integer from 1 to 5 (JetStream's limit), got ${JSON.stringify(value)}`, { where });
  }
}

/** The server URLs of a list, or of one string separated by commas (`--nats a,b,c`). */
export function serverList(servers: string | string[]): string[] {
  return (Array.isArray(servers) ? servers : [servers]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
}

/** Server URLs without user info, for messages (each URL of a comma-separated cluster too). */
export function describeServers(servers: string | string[]): string {
  return serverList(servers).map((s) => s.replace(/\/\/[^@/]*@/, '//')).join(', ');
}

/** What secures a connection besides the URL (see natsCredentials in adapters/assembly/nats.ts). */
export interface NatsSecurity {
  user?: string;
  pass?: string;
  token?: string;
  /** A creds file (a user JWT and its nkey seed, as `nsc` writes one). */
  credsFile?: string;
  /** A file holding an nkey user's seed (`a2a nats users` writes one per process). */
  nkeyFile?: string;
  /** TLS: the CA that signed the server's certificate, and this client's certificate and key (mutual TLS). */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /** Connect to a server off loopback without credentials or TLS anyway (`--insecure`, A2A_NATS_INSECURE=1). */
  insecure?: boolean;
}

/** Whether a URL's host is this machine's loopback, decided from the URL alone (no lookup, no traffic). */
export function isLoopbackUrl(server: string): boolean {
  let host: string;
  try {
    host = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(server) ? server : `nats://${server}`).hostname;
  } catch {
    return false;
  }
  host = host.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || /^::ffff:127\./.test(host);
}

/**
 * Safe by default off loopback: a server reached over a network needs credentials (so that no one
 * else can publish as this process) and TLS (so that no one on the way reads or changes what it
 * sends). What is missing is named; `insecure` connects anyway. Decided before connecting.
 */
export function assertSafeOffLoopback(servers: string | string[], security: NatsSecurity): void {
  if (security.insecure) return;
  const list = serverList(servers);
  const remote = list.filter((s) => !isLoopbackUrl(s));
  if (remote.length === 0) return;
  const inUrl = remote.every((s) => /\/\/[^@/]+@/.test(s));
  const credentials = inUrl || security.token !== undefined || (security.user !== undefined && security.pass !== undefined) || security.credsFile !== undefined || security.nkeyFile !== undefined;
  const tls = security.tls !== undefined || remote.every((s) => /^tls:\/\//i.test(s));
  const missing = [
    credentials ? '' : 'credentials (A2A_NATS_USER and A2A_NATS_PASSWORD, A2A_NATS_TOKEN, A2A_NATS_NKEY naming an nkey seed file, or A2A_NATS_CREDS naming a creds file)',
    tls ? '' : "TLS (a tls:// URL, and A2A_NATS_TLS_CA naming the CA file that signed the server's certificate unless the system trusts it)",
  ].filter(Boolean);
  if (missing.length === 0) return;
  throw new A2AError(
    'CONFIGURATION_INVALID',
    `refusing to connect to NATS at ${describeServers(remote)}, which is not loopback, without ${missing.join(' and ')}: anyone who reaches that server could forge session results, events and cancels${tls ? '' : ', and anyone on the network could read them'}. Add ${missing.length === 2 ? 'both' : 'it'}, or pass --insecure (A2A_NATS_INSECURE=1) to connect anyway`,
    { where: 'servers' },
  );
}
