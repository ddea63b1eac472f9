/**
 * `a2a nats users`: writes a nats-server configuration with one user per process and the least
 * rights each needs (adapters/transport/natsUsers.ts), and each process's credentials: with nkeys
 * (the default) a seed file `<user>.nk` and a `<user>.env` per process, mode 0600; with
 * `--passwords`, the configuration reads each password from the server's environment and nothing
 * secret is written.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { A2AError } from '../../actors/errors.js';
import { DEFAULT_LISTEN, DEFAULT_STORE, envFile, natsUsers, type NatsUsersPlan, type ProcessSpec } from '../../adapters/transport/natsUsers.js';

export interface NatsUsersOptions {
  namespace: string;
  host?: string[];
  gateway?: string[];
  agent?: string[];
  studio?: string[];
  runs: number;
  passwords?: boolean;
  listen?: string;
  store?: string;
  out: string;
  force?: boolean;
}

/** `alpha` or `alpha=coder,reviewer`. */
function processSpec(text: string, flag: string): ProcessSpec {
  const [id, agents] = text.split('=', 2) as [string, string | undefined];
  if (agents === undefined) return { id };
  const list = agents.split(',').map((a) => a.trim()).filter(Boolean);
  if (list.length === 0) throw new A2AError('CONFIGURATION_INVALID', `${flag} ${text}: name its agent types after "=" (${flag} ${id}=coder,reviewer), or give the id alone to allow every agent type`, { where: flag });
  return { id, agents: list };
}

export function natsUsersCommand(options: NatsUsersOptions, out: NodeJS.WritableStream): number {
  const plan: NatsUsersPlan = {
    namespace: options.namespace,
    hosts: (options.host ?? []).map((h) => processSpec(h, '--host')),
    gateways: (options.gateway ?? []).map((g) => processSpec(g, '--gateway')),
    agents: options.agent ?? [],
    ...(options.studio?.length ? { studios: options.studio } : {}),
    runs: options.runs,
    auth: options.passwords ? 'password' : 'nkey',
    listen: options.listen ?? DEFAULT_LISTEN,
    storeDir: options.store ?? DEFAULT_STORE,
  };
  const { conf, users } = natsUsers(plan);
  const dir = resolve(options.out);
  const confFile = join(dir, 'server.conf');
  const written = [confFile, ...(plan.auth === 'nkey' ? users.flatMap((u) => [join(dir, `${u.name}.nk`), join(dir, `${u.name}.env`)]) : [])];
  const there = written.filter((f) => existsSync(f));
  if (there.length > 0 && !options.force) {
    throw new A2AError('CONFIGURATION_INVALID', `--out ${options.out}: ${there.length === 1 ? `${there[0]} exists` : `${there.length} of the files exist (${there[0]}, …)`}; pass --force to replace them (the users' old keys stop working)`, { where: '--out' });
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(confFile, conf, { mode: 0o644 });
  if (plan.auth === 'nkey') {
    for (const u of users) {
      const seedFile = join(dir, `${u.name}.nk`);
      writeFileSync(seedFile, `${u.seed}\n`, { mode: 0o600 });
      chmodSync(seedFile, 0o600);
      writeFileSync(join(dir, `${u.name}.env`), envFile(u, seedFile), { mode: 0o600 });
      chmodSync(join(dir, `${u.name}.env`), 0o600);
    }
  }
  out.write(`wrote ${confFile}: ${users.length} users (${users.map((u) => u.name).join(', ')})\n`);
  if (plan.auth === 'nkey') {
    out.write(`wrote a seed file <user>.nk and an environment file <user>.env per user in ${dir} (mode 0600): give each process only its own\n`);
    out.write(`  nats-server -c ${confFile}\n  set -a; . ${join(dir, `${users.find((u) => u.role === 'host' || u.role === 'gateway')!.name}.env`)}; set +a; a2a host --nats nats://${plan.listen} --id ${[...plan.hosts, ...plan.gateways][0]!.id} …\n`);
    const studio = users.find((u) => u.role === 'studio');
    if (studio) out.write(`  set -a; . ${join(dir, `${studio.name}.env`)}; set +a; a2a studio --nats nats://${plan.listen}\n`);
  } else {
    out.write(`the server reads each password from its environment: ${users.map((u) => `$${u.passwordVar}`).join(', ')}\n`);
  }
  return 0;
}
