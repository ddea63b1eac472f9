/** NATS for a process of a2a (a run, a host, a monitor): credentials from the environment, and the one warning about a server without them. */
import type { NatsConnectedTransport } from '../transport/nats.js';
import { assertReplicas, describeServers } from '../transport/natsServers.js';
import { A2AError } from '../../actors/errors.js';

function insecureFlag(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === '0' || value === 'false') return false;
  if (value === '1' || value === 'true') return true;
  throw new A2AError('CONFIGURATION_INVALID', `A2A_NATS_INSECURE must be 1 or true (or 0, false, unset), got "${value}"`, { where: 'A2A_NATS_INSECURE' });
}

/**
 * Credentials come from the environment, never from flags (they would show in process lists); so
 * do the per-deployment settings beside them (inbox prefix, API prefix, replicas, TLS files).
 */
export function natsCredentials(env: NodeJS.ProcessEnv = process.env) {
  const replicas = env.A2A_NATS_REPLICAS?.trim();
  if (replicas !== undefined && replicas !== '') assertReplicas(/^\d+$/.test(replicas) ? Number(replicas) : replicas, 'A2A_NATS_REPLICAS');
  return {
    ...(replicas ? { replicas: Number(replicas) } : {}),
    ...(env.A2A_NATS_USER ? { user: env.A2A_NATS_USER } : {}),
    ...(env.A2A_NATS_PASSWORD ? { pass: env.A2A_NATS_PASSWORD } : {}),
    ...(env.A2A_NATS_TOKEN ? { token: env.A2A_NATS_TOKEN } : {}),
    ...(env.A2A_NATS_CREDS ? { credsFile: env.A2A_NATS_CREDS } : {}),
    // an nkey user's seed, in a file (`a2a nats users` writes <user>.nk)
    ...(env.A2A_NATS_NKEY ? { nkeyFile: env.A2A_NATS_NKEY } : {}),
    // TLS beyond the tls:// scheme: the CA that signed the server's certificate, and a client certificate (mutual TLS)
    ...(env.A2A_NATS_TLS_CA || env.A2A_NATS_TLS_CERT || env.A2A_NATS_TLS_KEY
      ? { tls: { ...(env.A2A_NATS_TLS_CA ? { caFile: env.A2A_NATS_TLS_CA } : {}), ...(env.A2A_NATS_TLS_CERT ? { certFile: env.A2A_NATS_TLS_CERT } : {}), ...(env.A2A_NATS_TLS_KEY ? { keyFile: env.A2A_NATS_TLS_KEY } : {}) } }
      : {}),
    // a server off loopback without credentials and TLS is refused unless this says otherwise (--insecure)
    ...(insecureFlag(env.A2A_NATS_INSECURE) ? { insecure: true } : {}),
    // not a secret, but per user like the others: where this user's replies come back (server.conf)
    ...(env.A2A_NATS_INBOX_PREFIX ? { inboxPrefix: env.A2A_NATS_INBOX_PREFIX } : {}),
    // the monitor's, in examples/nats/server.conf: its account reaches JetStream through an import
    ...(env.A2A_NATS_JS_API_PREFIX ? { jsApiPrefix: env.A2A_NATS_JS_API_PREFIX } : {}),
  };
}

/**
 * One warning when the server let this process in without credentials: then nothing on the
 * server tells one client from another, and any of them can forge what a2a trusts.
 */
export function warnIfUnauthenticated(transport: NatsConnectedTransport, servers: string, notify: (line: string) => void): void {
  if (transport.serverRequiresAuth) return;
  notify(
    `a2a: warning: the NATS server at ${describeServers(servers)} does not require authentication: any client that reaches it can forge ` +
      'session results, run and audit events, cancels and external agents\' messages. Give each role its own user ' +
      '(examples/nats/server.conf; README, "Security").',
  );
}
