/**
 * `a2a nats users`: a nats-server configuration with one user per process and the least rights
 * each needs, generated from what the runtime does (one source for the example configuration and
 * for a deployment's), plus each process's credentials.
 *
 *   orchestrator        `a2a run --nats`: spawns, commands down, its run box's reports and host
 *                       events (the slots rs0..rs<runs-1> of the boxes bucket, and no other box);
 *                       it answers its runs' control subjects (asked by the studios only)
 *   host-<id>           `a2a host --id <id>`: heartbeats, registration, its key of the hosts bucket
 *                       and reports up in its own name only; consumers only on its own boxes and on
 *                       the spawn queues of its agents (all agents when none are named)
 *   gateway-<id>        `a2a gateway --id <id>`: a host, plus the swarm subjects (seed 004)
 *   monitor             `a2a monitor`: an account of its own; hears events, reads the hosts bucket
 *   studio-<name>       `a2a studio --nats` (--studio <name>): what the monitor may, plus requests on
 *                       the runs' control subjects under its own name only (approve, answer, pause,
 *                       stop …, and reading a run's log and status)
 *   agent-<id>          an external agent (seed 004): its own subjects only
 *
 * Why a studio is a user of its own rather than the monitor: the monitor only watches, and its
 * credentials can be handed to any dashboard; a studio changes runs, so only those who may approve
 * get its credentials, and each studio's name is who the runs' audit says asked ("ann (studio) via
 * studio-ops"): the server lets studio-<name> publish on `a2a.<ns>.control.<run>.studio-<name>` only.
 *
 * What no user may do: create a consumer on another process's box (a host's own boxes are
 * `up-h-<id>` / `down-h-<id>` with their filters pinned in the subject of the create request),
 * publish a heartbeat, a registration, a hosts-bucket key or a report in another host's name,
 * delete a stream or purge a queue; a host, the monitor or an agent may not ask anything of a run on
 * its control subject, and a studio may ask only in its own name. What hosts still share, because
 * taking a dead host's sessions over needs it: the snapshots and effects buckets (a session's record
 * says who holds it, claimed by compare-and-set), reading (not creating) the other hosts' box
 * consumers, and `down`.
 *
 * Credentials: nkeys by default (the configuration holds public keys only; each process gets a
 * seed file, A2A_NATS_NKEY), or passwords read from the server's environment (`--passwords`: the
 * configuration holds `$A2A_<USER>_PASSWORD`, as examples/nats/server.conf does).
 */
import { createUser } from '@nats-io/nkeys';
import { A2AError } from '../../actors/errors.js';

const ID = /^[A-Za-z0-9_-]+$/;

export interface ProcessSpec {
  id: string;
  /** The agent types whose spawn queues it reads; none: every agent type. */
  agents?: string[];
}

export interface NatsUsersPlan {
  namespace: string;
  hosts: ProcessSpec[];
  gateways: ProcessSpec[];
  /** External agents (seed 004) by id. */
  agents: string[];
  /** Studios (`a2a studio --nats`) by name: each may steer the namespace's runs as user studio-<name>. */
  studios?: string[];
  /** How many runs of the namespace may be going at once: the run box slots the orchestrator may read. */
  runs: number;
  auth: 'nkey' | 'password';
  listen: string;
  storeDir: string;
}

export interface NatsUser {
  name: string;
  role: 'orchestrator' | 'host' | 'gateway' | 'monitor' | 'studio' | 'agent';
  /** What the process needs in its environment, besides its secret. */
  env: Record<string, string>;
  /** nkey mode: the user's seed (the secret) and public key. */
  seed?: string;
  publicKey?: string;
  /** password mode: the server's environment variable holding its password (the process's A2A_NATS_PASSWORD). */
  passwordVar?: string;
}

/** The command line that makes `plan` (the header of the configuration says it). */
export function natsUsersCommand(plan: NatsUsersPlan): string {
  const spec = (p: ProcessSpec) => (p.agents?.length ? `${p.id}=${p.agents.join(',')}` : p.id);
  return [
    'a2a nats users',
    ...(plan.namespace !== 'default' ? [`--namespace ${plan.namespace}`] : []),
    ...plan.hosts.map((h) => `--host ${spec(h)}`),
    ...plan.gateways.map((g) => `--gateway ${spec(g)}`),
    ...plan.agents.map((a) => `--agent ${a}`),
    ...(plan.studios ?? []).map((n) => `--studio ${n}`),
    `--runs ${plan.runs}`,
    ...(plan.auth === 'password' ? ['--passwords'] : []),
    ...(plan.listen !== DEFAULT_LISTEN ? [`--listen ${plan.listen}`] : []),
    ...(plan.storeDir !== DEFAULT_STORE ? [`--store ${plan.storeDir}`] : []),
  ].join(' ');
}

export const DEFAULT_LISTEN = '127.0.0.1:4222';
export const DEFAULT_STORE = '/var/lib/nats/a2a';

/** Checks a plan: ids as subject tokens, no id twice, runs in range. */
export function assertPlan(plan: NatsUsersPlan): void {
  const bad = (where: string, why: string) => new A2AError('CONFIGURATION_INVALID', `${where}: ${why}`, { where });
  if (!ID.test(plan.namespace)) throw bad('--namespace', `"${plan.namespace}" is not a namespace: use letters, digits, "_" and "-"`);
  const idOf = (flag: string, id: string) => {
    if (!ID.test(id)) throw bad(flag, `"${id}" is not an id: use letters, digits, "_" and "-"`);
  };
  // a host's box is h-<id>, whatever its role: no id twice among hosts and gateways
  const boxes = new Map<string, string>();
  for (const [flag, list] of [['--host', plan.hosts], ['--gateway', plan.gateways]] as const) {
    for (const p of list) {
      idOf(flag, p.id);
      const before = boxes.get(p.id);
      if (before) throw bad(flag, before === flag ? `"${p.id}" is given twice` : `"${p.id}" is also a host's id: hosts and gateways share the namespace's boxes (h-<id>)`);
      boxes.set(p.id, flag);
      for (const agent of p.agents ?? []) if (!ID.test(agent)) throw bad(flag, `agent type "${agent}" of ${p.id}: use letters, digits, "_" and "-"`);
    }
  }
  const agents = new Set<string>();
  for (const a of plan.agents) {
    idOf('--agent', a);
    if (agents.has(a)) throw bad('--agent', `"${a}" is given twice`);
    agents.add(a);
  }
  const studios = new Set<string>();
  for (const n of plan.studios ?? []) {
    idOf('--studio', n);
    if (studios.has(n)) throw bad('--studio', `"${n}" is given twice`);
    studios.add(n);
  }
  if (plan.hosts.length + plan.gateways.length === 0) throw bad('--host', 'give at least one host (--host <id>, or --host <id>=<agent>,<agent> to pin its agent types)');
  if (!Number.isInteger(plan.runs) || plan.runs < 1 || plan.runs > 1024) throw bad('--runs', `must be an integer from 1 to 1024 (the runs of the namespace going at once), got ${plan.runs}`);
}

const envName = (user: string) => `A2A_${user.toUpperCase().replace(/-/g, '_')}_PASSWORD`;

/** The configuration and the users of `plan`. */
export function natsUsers(plan: NatsUsersPlan): { conf: string; users: NatsUser[] } {
  assertPlan(plan);
  const ns = plan.namespace;
  const q = (name: string) => `a2a_${ns}_${name}`;
  const kv = (name: string) => `KV_a2a_${ns}_${name}`;
  const root = `a2a.${ns}`;
  const users: NatsUser[] = [];
  const user = (name: string, role: NatsUser['role'], env: Record<string, string>): NatsUser => {
    const u: NatsUser = { name, role, env };
    if (plan.auth === 'nkey') {
      const pair = createUser();
      u.seed = new TextDecoder().decode(pair.getSeed());
      u.publicKey = pair.getPublicKey();
    } else u.passwordVar = envName(name);
    users.push(u);
    return u;
  };
  const credential = (u: NatsUser) => (u.publicKey ? [`nkey: ${u.publicKey}   # ${u.name}`] : [`user: ${u.name}`, `password: $${u.passwordVar}`]);

  const queueCheck = (names: string[]) => names.flatMap((n) => [`$JS.API.STREAM.INFO.${q(n)}`, `$JS.API.STREAM.CREATE.${q(n)}`, `$JS.API.STREAM.UPDATE.${q(n)}`]);
  const bucketRead = (name: string) => [`$JS.API.STREAM.INFO.${kv(name)}`, `$JS.API.DIRECT.GET.${kv(name)}.>`, `$JS.API.STREAM.MSG.GET.${kv(name)}`];
  const bucket = (name: string, options: { purge?: boolean; keys?: string } = {}) => [
    ...bucketRead(name),
    `$JS.API.STREAM.CREATE.${kv(name)}`,
    ...(options.purge ? [`$JS.API.STREAM.PURGE.${kv(name)}`] : []),
    `$KV.a2a_${ns}_${name}.${options.keys ?? '>'}`,
  ];
  /** Read through consumer `consumer` of queue `queue` (made by whoever may make it): info, pulls, acknowledgements. */
  const readConsumer = (queue: string, consumer: string) => [`$JS.API.CONSUMER.INFO.${q(queue)}.${consumer}`, `$JS.API.CONSUMER.MSG.NEXT.${q(queue)}.${consumer}`, `$JS.ACK.${q(queue)}.${consumer}.>`];
  /** Make consumer `consumer` on `queue` with exactly this filter (the create request's subject names both). */
  const makeConsumer = (queue: string, consumer: string, filter: string) => [`$JS.API.CONSUMER.CREATE.${q(queue)}.${consumer}.${filter}`];

  const orchestrator = user('orchestrator', 'orchestrator', { A2A_NATS_INBOX_PREFIX: '_INBOX_orchestrator' });
  const studioNames = plan.studios ?? [];
  /** A run's control subjects (`a2a.<ns>.control.<run>.<user>`): served by the orchestrator, asked by the studios (exported to their account). */
  const control = `${root}.control.*.*`;
  const slots = Array.from({ length: plan.runs }, (_, n) => `rs${n}`);
  const hostIds = [...plan.hosts, ...plan.gateways].map((p) => p.id);

  const blocks: string[] = [];
  blocks.push(
    userBlock(
      [
        '`a2a run --nats …`: places workers on hosts (spawn), talks to them (down), hears from them through',
        `its run box (one of ${plan.runs} slots, rs0..rs${plan.runs - 1}: --runs), relays its hosts' run events. Never writes up.`,
      ],
      credential(orchestrator),
      {
        publish: [
          `${root}.spawn.>`, `${root}.down.>`, `${root}.events.>`, `${root}.runs.*.pause`,
          ...queueCheck(['spawn', 'up', 'down', 'hostevents']),
          '$JS.API.INFO',
          // its box: up-rs<n> and events-rs<n>, made by the first run of the slot, read on by the next
          ...slots.flatMap((box) => [...makeConsumer('up', `up-${box}`, `${root}.up.${box}.>`), ...readConsumer('up', `up-${box}`)]),
          ...slots.flatMap((box) => [...makeConsumer('hostevents', `events-${box}`, `${root}.hostevents.${box}.>`), ...readConsumer('hostevents', `events-${box}`)]),
          // who holds a session (it takes reports from that host only): read, no write
          ...bucketRead('snapshots'),
          ...bucket('artifacts'), ...bucket('protocol_tasks'), ...bucket('pauses'), ...bucket('boxes'),
        ],
        publishDeny: [`${root}.up.>`, `${root}.hostevents.>`, '$JS.API.STREAM.DELETE.>', '$JS.API.STREAM.PURGE.>', '$JS.API.CONSUMER.DELETE.>'],
        // its runs' control subjects (asked by the studios, from their account: the reply goes to a
        // subject the server makes, `_R_.…`); with no studio nobody may ask, and a run answers nothing
        subscribe: ['_INBOX_orchestrator.>', `${root}.events.>`, `${root}.hosts.*.heartbeat`, `${root}.hosts.*.registration`, control],
        allowResponses: true,
      },
    ),
  );

  const hostRights = (p: ProcessSpec, inbox: string) => {
    const spawnConsumers = p.agents?.length
      ? p.agents.flatMap((a) => [...makeConsumer('spawn', `spawn-${a}`, `${root}.spawn.${a}`), ...readConsumer('spawn', `spawn-${a}`)])
      : [...makeConsumer('spawn', '*', `${root}.spawn.*`), `$JS.API.CONSUMER.INFO.${q('spawn')}.*`, `$JS.API.CONSUMER.MSG.NEXT.${q('spawn')}.*`, `$JS.ACK.${q('spawn')}.>`];
    const own = `h-${p.id}`;
    return {
      publish: [
        `${root}.spawn.>`, `${root}.up.*.${p.id}.>`, `${root}.down.>`, `${root}.events.>`, `${root}.hostevents.>`,
        `${root}.hosts.${p.id}.heartbeat`, `${root}.hosts.${p.id}.registration`,
        ...queueCheck(['spawn', 'up', 'down', 'hostevents']),
        '$JS.API.INFO',
        ...spawnConsumers,
        // its own boxes: made (filters pinned), read, removed when it stops for good
        ...makeConsumer('up', `up-${own}`, `${root}.up.${own}.>`), ...makeConsumer('down', `down-${own}`, `${root}.down.${own}.>`),
        `$JS.API.CONSUMER.DELETE.${q('up')}.up-${own}`, `$JS.API.CONSUMER.DELETE.${q('down')}.down-${own}`,
        // every host's boxes read (not made): a dead host's mail is read by those that take its sessions over
        ...hostIds.flatMap((id) => [...readConsumer('up', `up-h-${id}`), ...readConsumer('down', `down-h-${id}`)]),
        ...bucket('snapshots', { purge: true }), ...bucket('effects', { purge: true }),
        // its own heartbeat key; a dead host's is purged, never written
        ...bucket('hosts', { purge: true, keys: p.id }),
        ...bucket('artifacts'),
        ...bucketRead('pauses'),
      ],
      publishDeny: ['$JS.API.STREAM.DELETE.>', ...['spawn', 'up', 'down', 'hostevents'].map((n) => `$JS.API.STREAM.PURGE.${q(n)}`), `$JS.API.STREAM.PURGE.${kv('artifacts')}`, `$JS.API.STREAM.PURGE.${kv('pauses')}`],
      subscribe: [`${inbox}.>`, `${root}.runs.*.pause`, `${root}.hosts.*.heartbeat`],
    };
  };

  for (const p of plan.hosts) {
    const name = `host-${p.id}`;
    const u = user(name, 'host', { A2A_NATS_INBOX_PREFIX: `_INBOX_${name}` });
    blocks.push(userBlock([`\`a2a host --id ${p.id}\`${p.agents?.length ? ` serving ${p.agents.join(', ')}` : ''}.`], credential(u), hostRights(p, `_INBOX_${name}`)));
  }
  for (const p of plan.gateways) {
    const name = `gateway-${p.id}`;
    const u = user(name, 'gateway', { A2A_NATS_INBOX_PREFIX: `_INBOX_${name}` });
    const rights = hostRights(p, `_INBOX_${name}`);
    blocks.push(
      userBlock([`\`a2a gateway --id ${p.id}\` (seed 004): a host, plus the swarm: it hears each agent on its own subject and writes to any.`], credential(u), {
        ...rights,
        publish: [...rights.publish, `${root}.swarm.agent.>`],
        subscribe: [...rights.subscribe, `${root}.swarm.orchestrator.messages.*`, `${root}.swarm.orchestrator.messages`],
      }),
    );
  }
  for (const id of plan.agents) {
    const u = user(`agent-${id}`, 'agent', {});
    blocks.push(
      userBlock([`External agent ${id} (seed 004): hears its own subject and all-agent messages, speaks only on its own. No JetStream.`], credential(u), {
        publish: [`${root}.swarm.orchestrator.messages.${id}`],
        subscribe: [`${root}.swarm.agent.${id}`, `${root}.swarm.agent.all`],
      }),
    );
  }
  const monitor = user('monitor', 'monitor', { A2A_NATS_INBOX_PREFIX: '_INBOX_monitor', A2A_NATS_JS_API_PREFIX: 'JS.A2A.API' });
  const watchRights = (inbox: string) => ({
    publish: [`JS.A2A.API.STREAM.INFO.${kv('hosts')}`, `JS.A2A.API.DIRECT.GET.${kv('hosts')}.>`, `JS.A2A.API.STREAM.MSG.GET.${kv('hosts')}`],
    subscribe: [`${root}.events.>`, `${root}.hostevents.>`, `${root}.hosts.*.heartbeat`, `${root}.hosts.*.registration`, `${inbox}.>`],
  });
  const monitorBlocks = [userBlock(['`a2a monitor`: hears events and heartbeats, reads the hosts bucket (imported); publishes nothing into A2A.'], credential(monitor), watchRights('_INBOX_monitor'))];
  for (const n of studioNames) {
    const name = `studio-${n}`;
    const u = user(name, 'studio', { A2A_NATS_INBOX_PREFIX: `_INBOX_${name}`, A2A_NATS_JS_API_PREFIX: 'JS.A2A.API', A2A_NATS_NAME: name });
    const rights = watchRights(`_INBOX_${name}`);
    monitorBlocks.push(
      userBlock(
        [`\`a2a studio --nats …\` (${n}): what the monitor may, plus requests on the runs' control subjects in its own name only`, `(a2a.${ns}.control.<run>.${name}: approve, answer, pause, stop …, and reading a run's log and status).`],
        credential(u),
        { ...rights, publish: [...rights.publish, `${root}.control.*.${name}`] },
      ),
    );
  }

  const exported = [`${root}.events.>`, `${root}.hostevents.>`, `${root}.hosts.*.heartbeat`, `${root}.hosts.*.registration`];
  const services = [`$JS.API.STREAM.INFO.${kv('hosts')}`, `$JS.API.DIRECT.GET.${kv('hosts')}.>`, `$JS.API.STREAM.MSG.GET.${kv('hosts')}`];
  // a run's control subject, asked from MONITOR (the studios), answered in A2A: imported under its own name
  const controlServices = studioNames.length ? [control] : [];
  const conf = [
    `# nats-server configuration for a2a, namespace \`${ns}\`, made by:`,
    `#   ${natsUsersCommand(plan)}`,
    '# (adapters/transport/natsUsers.ts says what each user may do and why; README, "Security").',
    '# Works with nats-server 2.9 and later. Check it with `nats-server -t -c <this file>`.',
    '#',
    ...(plan.auth === 'password'
      ? [
          '# Passwords: `$A2A_<USER>_PASSWORD` below is read from the server\'s environment (the server refuses to',
          '# start when one is unset), so no secret lives in this file; each process gets its user, password and',
          '# inbox prefix from ITS environment, e.g. for host alpha:',
          '#   A2A_NATS_USER=host-alpha A2A_NATS_PASSWORD=<$A2A_HOST_ALPHA_PASSWORD> A2A_NATS_INBOX_PREFIX=_INBOX_host-alpha a2a host --id alpha …',
          '# The server parses an environment value as a config value: a password that looks like a number',
          '# ("123456", "12k", "1e5") is refused; use letters, e.g. `echo "a2a-$(openssl rand -hex 24)"`.',
        ]
      : [
          '# Users authenticate with nkeys: this file holds public keys only; each process reads its seed from',
          '# the file A2A_NATS_NKEY names (<user>.nk beside this file, mode 0600) and its other settings from',
          '# <user>.env (`set -a; . ./host-alpha.env; set +a; a2a host --id alpha …`).',
        ]),
    '#',
    '#   process                           user                 A2A_NATS_INBOX_PREFIX',
    ...users.map((u) => `#   ${processOf(u).padEnd(34)}${u.name.padEnd(21)}${u.env.A2A_NATS_INBOX_PREFIX ?? '(none: it makes no requests)'}${u.env.A2A_NATS_JS_API_PREFIX ? `  + A2A_NATS_JS_API_PREFIX=${u.env.A2A_NATS_JS_API_PREFIX}` : ''}`),
    '#',
    `# Subjects (actors/distribution/wire.ts); streams a2a_${ns}_spawn|up|down|hostevents, KV buckets a2a_${ns}_<name>:`,
    ...table([
      [`${root}.spawn.<agent>`, 'spawn requests (work queue; consumer spawn-<agent>, shared by its hosts)'],
      [`${root}.up.<box>.<host>.<run>.<session>`, "a session's report to its owner's box (rs<n>: a run's; h-<host>: a"],
      ['', "host's), published by the host that runs it, in its own name only"],
      [`${root}.down.<box>.<run>.<session>`, "an owner's command to the box of the host holding its session"],
      ['', '(a process reads its boxes through consumers up-<box>, down-<box>: its own)'],
      [`${root}.events.<run>.<type>`, 'run events (core, watch only)'],
      [`${root}.hostevents.<box>.<run>.<type>`, "hosts' run events, to the run's box (consumer events-<box>)"],
      [`${root}.hosts.<host>.heartbeat`, "a host's heartbeat (core), and .registration (seed 004)"],
      [`$KV.a2a_${ns}_snapshots.<run>.<session>`, 'session records (hosts write them; the orchestrator reads)'],
      [`$KV.a2a_${ns}_hosts.<host>`, 'host registry (each host its own key)'],
      [`$KV.a2a_${ns}_boxes.slot.<n>`, 'which run reads box rs<n> (orchestrator)'],
      [`$KV.a2a_${ns}_<bucket>.…`, 'effects (hosts), artifacts, pauses, protocol_tasks (served A2A tasks)'],
      [`${root}.runs.<run>.pause`, 'a run paused (core); and the external-agent protocol, swarm.…'],
      [`${root}.control.<run>.<user>`, "a run's control (request/reply, answered by its process): a studio asks"],
      ['', 'in its own name only (studio-<name>: --studio)'],
    ]),
    '# JetStream is driven through request/reply on `$JS.API.…`; a consumer is made with',
    '# `$JS.API.CONSUMER.CREATE.<stream>.<consumer>.<filter>`, which is how its name and filter are pinned below.',
    '#',
    '# Memory: give the server\'s Go runtime a soft limit, GOMEMLIMIT=256MiB (or what the host allows).',
    '# Each user may subscribe only to its own inbox prefix, never to the shared `_INBOX.>`: no user hears',
    '# the replies sent to another. Permission lists are allow-lists; a `deny` wins over any allow.',
    '',
    `# Local only; set \`listen: 0.0.0.0:4222\` plus \`tls { … }\` to serve other machines.`,
    `listen: "${plan.listen}"`,
    '# Give a real path: JetStream keeps the queues and buckets there across restarts.',
    'jetstream {',
    `  store_dir: "${plan.storeDir}"`,
    '}',
    '',
    '# Two accounts: A2A holds what a2a runs on; MONITOR holds only the monitor and the studios, which see',
    '# what A2A exports to them. Apart because whoever may send a JetStream API request names its reply subject,',
    '# and the server delivers the answer there unchecked; across accounts the answer comes back to the asker.',
    '# No `no_auth_user`: a client without credentials is refused.',
    'accounts {',
    '  A2A {',
    '    jetstream: enabled',
    '    users = [',
    ...blocks.map((b) => indent(b, 6)),
    '    ]',
    '    exports = [',
    ...exported.map((s) => `      { stream: "${s}", accounts: [ MONITOR ] }`),
    ...services.map((s) => `      { service: "${s}", accounts: [ MONITOR ] }`),
    ...controlServices.map((s) => `      { service: "${s}", accounts: [ MONITOR ] }`),
    '    ]',
    '  }',
    '  MONITOR {',
    '    imports = [',
    ...exported.map((s) => `      { stream: { account: A2A, subject: "${s}" } }`),
    ...services.map((s) => `      { service: { account: A2A, subject: "${s}" }, to: "${s.replace('$JS.API.', 'JS.A2A.API.')}" }`),
    ...controlServices.map((s) => `      { service: { account: A2A, subject: "${s}" } }`),
    '    ]',
    '    users = [',
    ...monitorBlocks.map((b) => indent(b, 6)),
    '    ]',
    '  }',
    '}',
    '',
  ].join('\n');
  return { conf, users };
}

function processOf(u: NatsUser): string {
  switch (u.role) {
    case 'orchestrator':
      return 'a2a run --nats …';
    case 'host':
      return `a2a host --id ${u.name.slice('host-'.length)}`;
    case 'gateway':
      return `a2a gateway --id ${u.name.slice('gateway-'.length)}`;
    case 'monitor':
      return 'a2a monitor';
    case 'studio':
      return `a2a studio --nats … (${u.name.slice('studio-'.length)})`;
    case 'agent':
      return `external agent ${u.name.slice('agent-'.length)}`;
  }
}

/** Comment lines of two columns, the first padded to the longest. */
function table(rows: Array<[string, string]>): string[] {
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return rows.map(([left, right]) => `#   ${left.padEnd(width)}${right}`);
}

const quoted = (items: string[]) => items.map((s) => `"${s}"`);

/** One user's block: a comment, its credential lines, its permissions. */
function userBlock(comment: string[], credential: string[], rights: { publish: string[]; publishDeny?: string[]; subscribe: string[]; allowResponses?: boolean }): string {
  const list = (items: string[]) => ['[', ...quoted(items).map((s) => `  ${s},`), ']'];
  const field = (name: string, items: string[]) => {
    const [first, ...rest] = list(items);
    return [`${name}: ${first}`, ...rest];
  };
  return [
    ...comment.map((c) => `# ${c}`),
    '{',
    ...credential.map((c) => `  ${c}`),
    '  permissions: {',
    '    publish: {',
    ...field('allow', rights.publish).map((l) => `      ${l}`),
    ...(rights.publishDeny ? field('deny', rights.publishDeny).map((l) => `      ${l}`) : []),
    '    }',
    '    subscribe: {',
    ...field('allow', rights.subscribe).map((l) => `      ${l}`),
    ...(rights.subscribe.some((s) => s.startsWith('_INBOX_')) ? ['      deny: [ "_INBOX.>" ]'] : []),
    '    }',
    // it may answer the requests it receives (one reply each), whatever their reply subject
    ...(rights.allowResponses ? ['    allow_responses: true'] : []),
    '  }',
    '}',
  ].join('\n');
}

const indent = (text: string, n: number) => text.split('\n').map((l) => (l ? ' '.repeat(n) + l : l)).join('\n');

/** What one process's `<user>.env` holds (nkey mode): its seed file and its settings. */
export function envFile(u: NatsUser, seedFile: string): string {
  return [`# ${processOf(u)}: \`set -a; . ./${u.name}.env; set +a\` before starting it`, `A2A_NATS_NKEY=${seedFile}`, ...Object.entries(u.env).map(([k, v]) => `${k}=${v}`), ''].join('\n');
}
