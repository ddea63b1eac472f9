/**
 * The documented server configuration (examples/nats/server.conf) on a real nats-server: clients
 * without valid credentials are refused with clear errors that hold no secret; the monitor and an
 * external agent cannot write into the queues, nor consume them; an orchestrator and a host, with
 * their own users, run a plan end to end (a real `a2a host` process and `a2a run --nats`); each
 * user hears only the replies on its own inbox prefix (`_INBOX_<user>.>`). Plus token authentication. Passwords are random per run and reach the server through its environment,
 * as the example documents.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { hostCommand } from '../../bin/commands/host.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { connectNats } from '../../adapters/transport/nats.js';
import { ensureQueues, subjects } from '../../actors/distribution/remote.js';
import { isA2AError } from '../../actors/errors.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { Transport, TransportMessage } from '../../machines/ports.js';
import { examplePasswords, natsServerBinary, secret, startNatsServer, type NatsServer } from './server.js';
import { a2aHost, capture, killAll, splitWorkspace, waitFor } from './cluster.js';
import { ownerOf, registered, SeedAgent, specFor, startGateway, waitUntil, type Track, type Wire } from './seed004Kit.js';

const root = resolve(import.meta.dirname, '../..');
const exampleConfig = readFileSync(join(root, 'examples/nats/server.conf'), 'utf8');
const s = subjects('default');

const passwords = examplePasswords();
const allSecrets = Object.values(passwords);
/** Each user's inbox prefix, as the example's permissions allow (A2A_NATS_INBOX_PREFIX). */
const inboxPrefix = {
  orchestrator: '_INBOX_orchestrator',
  host: '_INBOX_host-alpha',
  gateway: '_INBOX_gateway-gw',
  monitor: '_INBOX_monitor',
} as const;
/** The monitor's account imports the hosts bucket's reads from A2A under this prefix (A2A_NATS_JS_API_PREFIX). */
const monitorApi = 'JS.A2A.API';
/** The environment of an a2a process run as `user` (credentials as the example documents them). */
const envOf = (user: 'orchestrator' | 'host' | 'gateway' | 'monitor') => ({
  A2A_NATS_USER: natsUser(user),
  A2A_NATS_PASSWORD: passwordOf(user),
  A2A_NATS_INBOX_PREFIX: inboxPrefix[user],
  ...(user === 'monitor' ? { A2A_NATS_JS_API_PREFIX: monitorApi } : {}),
});
const UNAUTHENTICATED = 'does not require authentication';

let server: NatsServer;
const open: Transport[] = [];
const raw: NatsConnection[] = [];

beforeAll(async () => {
  server = await startNatsServer({ base: exampleConfig, env: passwords });
});
afterEach(async () => {
  killAll();
  for (const t of open.splice(0)) await t.close().catch(() => undefined);
  for (const nc of raw.splice(0)) await nc.close().catch(() => undefined);
});
afterAll(() => server?.stop());

type User = 'orchestrator' | 'host' | 'gateway' | 'monitor' | 'agent-alpha' | 'agent-beta';
/** The example's users: one per host (`host` here is host alpha's), one per gateway (`gateway`: gw's). */
const natsUser = (user: User) => (user === 'host' ? 'host-alpha' : user === 'gateway' ? 'gateway-gw' : user);
function passwordOf(user: User): string {
  return ({
    orchestrator: passwords.A2A_ORCHESTRATOR_PASSWORD,
    host: passwords.A2A_HOST_ALPHA_PASSWORD,
    gateway: passwords.A2A_GATEWAY_GW_PASSWORD,
    monitor: passwords.A2A_MONITOR_PASSWORD,
    'agent-alpha': passwords.A2A_AGENT_ALPHA_PASSWORD,
    'agent-beta': passwords.A2A_AGENT_BETA_PASSWORD,
  })[user];
}

async function as(user: User): Promise<Transport> {
  // an external agent makes no requests: it has no inbox
  const prefix = user === 'agent-alpha' || user === 'agent-beta' ? {} : { inboxPrefix: inboxPrefix[user] };
  const api = user === 'monitor' ? { jsApiPrefix: monitorApi } : {};
  const t = await connectNats({ servers: server.url, user: natsUser(user), pass: passwordOf(user), name: `test-${user}`, ...prefix, ...api });
  open.push(t);
  return t;
}

/** Message counts of the three queues' streams, read by the host user (it may look at them). */
async function counts(): Promise<Record<'spawn' | 'up' | 'down', number>> {
  const nc = await connect({ servers: server.url, user: 'host-alpha', pass: passwords.A2A_HOST_ALPHA_PASSWORD, inboxPrefix: inboxPrefix.host });
  raw.push(nc);
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const of = async (q: string) => (await jsm.streams.info(`a2a_default_${q}`)).state.messages;
  return { spawn: await of('spawn'), up: await of('up'), down: await of('down') };
}

const violations = (user: string) => server.log().split('\n').filter((l) => /(Publish|Subscription) Violation/.test(l) && l.includes(`User "${natsUser(user as User)}"`));


/** Runs `fn` with `env` in this process's environment (what an a2a command reads its credentials from). */
async function withEnv<T>(env: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(env);
  try {
    return await fn();
  } finally {
    set(saved);
  }
}

/** No credentials at all in the environment. */
const NO_CREDENTIALS = { A2A_NATS_USER: undefined, A2A_NATS_PASSWORD: undefined, A2A_NATS_TOKEN: undefined, A2A_NATS_INBOX_PREFIX: undefined, A2A_NATS_JS_API_PREFIX: undefined };

function expectNoSecret(text: string): void {
  for (const secretValue of allSecrets) expect(text).not.toContain(secretValue);
}

describe('examples/nats/server.conf', () => {
  it('is a valid nats-server configuration as it stands (nats-server -t), with its passwords in the environment', () => {
    const file = join(root, 'examples/nats/server.conf');
    const check = (env: Record<string, string>) =>
      spawnSync(natsServerBinary(), ['-t', '-c', file], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
    const ok = check(passwords);
    expect(ok.status, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout + ok.stderr).toContain('is valid');
    // without them the server refuses to start, naming the variable (not a value)
    const { A2A_MONITOR_PASSWORD: _m, ...missing } = passwords;
    const refused = check(missing);
    expect(refused.status).not.toBe(0);
    expect(refused.stdout + refused.stderr).toContain('A2A_MONITOR_PASSWORD');
    // the roles it documents are all there, and nobody gets in without credentials
    for (const user of ['orchestrator', 'host-alpha', 'host-beta', 'gateway-gw', 'monitor', 'agent-alpha', 'agent-beta']) expect(exampleConfig).toMatch(new RegExp(`user: ${user}\\b`));
    // no anonymous access: no `no_auth_user` outside comments
    expect(exampleConfig.split('\n').filter((l) => !l.trim().startsWith('#') && l.includes('no_auth_user'))).toEqual([]);
  });

  it('refuses a client without credentials, with a wrong password or an unknown user: a clear error, no secret', async () => {
    const none = await connectNats({ servers: server.url, reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(none, 'CONFIGURATION_INVALID')).toBe(true);
    expect((none as Error).message).toContain(`127.0.0.1:${server.port}`);
    expect((none as Error).message).toMatch(/requires credentials and none were given/);

    const wrong = await connectNats({ servers: server.url, user: 'host-alpha', pass: passwords.A2A_MONITOR_PASSWORD, reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(wrong, 'CONFIGURATION_INVALID')).toBe(true);
    expect((wrong as Error).message).toMatch(/refused the credentials \(user "host-alpha" with a password\)/);
    expectNoSecret((wrong as Error).message);

    const unknown = await connectNats({ servers: server.url, user: 'admin', pass: 'admin-guess', reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(unknown, 'CONFIGURATION_INVALID')).toBe(true);
    expect((unknown as Error).message).not.toContain('admin-guess');

    // in a URL too: the user info is neither shown nor accepted
    const inUrl = await connectNats({ servers: `nats://host:not-it-pw@127.0.0.1:${server.port}`, reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(inUrl, 'CONFIGURATION_INVALID')).toBe(true);
    expect((inUrl as Error).message).not.toContain('not-it-pw');
    expect((inUrl as Error).message).toContain('credentials in the server URL');
  });

  it('keeps the monitor and an external agent from writing into spawn, up and down: nothing is stored', async () => {
    const orchestrator = await as('orchestrator');
    await ensureQueues(orchestrator, 'default');
    const before = await counts();
    const monitor = await as('monitor');
    const agent = await as('agent-alpha');
    for (const [who, t] of [['monitor', monitor], ['agent-alpha', agent]] as const) {
      for (const subject of [s.spawn('coder'), s.up('r-x', 'h', 'x'), s.down('h-h', 'x')]) {
        // a durable enqueue is refused outright, naming the permission (the agent may not even
        // subscribe to the inbox the confirmation would come back on)
        const error = await t.enqueue(subject, { spec: 'forged' }, { msgId: `${who}-${subject}` }).catch((e: unknown) => e);
        expect(isA2AError(error), `${who} enqueue on ${subject}`).toBe(true);
        expect((error as Error).message).toMatch(who === 'monitor' ? `Permissions Violation for Publish to "${subject}"` : /Permissions Violation for (Publish to "a2a\.default\.|Subscription to "_INBOX\.)/);
        // a core publish is fire-and-forget: the server drops it (and logs the violation)
        await t.publish(subject, { spec: 'forged' });
      }
    }
    // a round trip on each connection: what they published has reached the server by now
    await (await monitor.readKeyValue('hosts')).keys();
    await agent.publish(s.spawn('coder'), 'last').catch(() => undefined);
    await waitFor('the violations to be logged', () => violations('agent-alpha').filter((l) => l.includes('a2a.default.spawn.coder')).length >= 3);
    expect(await counts()).toEqual(before);
    for (const who of ['monitor', 'agent-alpha']) {
      for (const subject of [s.spawn('coder'), s.up('r-x', 'h', 'x'), s.down('h-h', 'x')]) {
        expect(violations(who).some((l) => l.includes(`Publish Violation`) && l.includes(`Subject "${subject}"`)), `${who} on ${subject}`).toBe(true);
      }
    }
  });

  it('lets the monitor watch events and heartbeats and read the hosts bucket, and nothing more', async () => {
    const orchestrator = await as('orchestrator');
    const host = await as('host');
    await ensureQueues(host, 'default');
    const hostsBucket = await host.keyValue('hosts');
    await hostsBucket.put('alpha', { hostId: 'alpha' });
    await (await host.keyValue('snapshots')).put('st-secret', { prompt: 'the secret prompt' });
    await orchestrator.enqueue(s.spawn('nobody'), { spec: 'for a host' }, { msgId: 'monitor-test-spawn' });
    const before = await counts();

    const monitor = await as('monitor');
    const heard: TransportMessage[] = [];
    await monitor.subscribe(s.allEvents, (m) => heard.push(m));
    await monitor.subscribe(s.heartbeats, (m) => heard.push(m));
    await orchestrator.publish(s.events('run-1', 'run.started'), { type: 'run.started' });
    await host.publish(s.heartbeat('alpha'), { hostId: 'alpha' });
    await waitFor('the event and the heartbeat', () => heard.length >= 2);
    expect(heard.map((m) => m.subject).sort()).toEqual([s.events('run-1', 'run.started'), s.heartbeat('alpha')].sort());

    // it reads the hosts bucket, read-only: no handle it could write with
    const hosts = await monitor.readKeyValue('hosts');
    expect((await hosts.get('alpha'))?.value).toEqual({ hostId: 'alpha' });
    expect(await hosts.keys()).toContain('alpha');
    await expect(monitor.keyValue('hosts')).rejects.toThrow(/Permissions Violation/);
    await expect(monitor.publish('$KV.a2a_default_hosts.alpha', { hostId: 'forged' })).resolves.toBeUndefined(); // dropped by the server
    await (await monitor.readKeyValue('hosts')).keys(); // a round trip: the forged write has reached the server
    expect((await hostsBucket.get('alpha'))?.value).toEqual({ hostId: 'alpha' });

    // not the snapshots (prompts, results), not the queues: neither consume nor listen in
    await expect(monitor.keyValue('snapshots')).rejects.toThrow(/Permissions Violation/);
    await expect((await monitor.readKeyValue('snapshots')).keys()).rejects.toThrow(/Permissions Violation/);
    const consumed: unknown[] = [];
    await expect(
      monitor.consume('spawn', { consumer: 'spawn-coder', filter: s.spawn('coder'), ackWaitMs: 30_000, maxInFlight: 4 }, (m) => void consumed.push(m.data)),
    ).rejects.toThrow(/Permissions Violation for Publish to "JS\.A2A\.API\.CONSUMER\.CREATE\.a2a_default_spawn\./);
    await expect(monitor.subscribe(`a2a.default.spawn.>`, (m) => consumed.push(m.data))).rejects.toThrow(/the server refused it.*Permissions Violation for Subscription/);
    await expect(monitor.subscribe(`a2a.default.>`, (m) => consumed.push(m.data))).rejects.toThrow(/Permissions Violation for Subscription/);
    await expect(monitor.publish(s.events('run-1', 'forged'), {})).resolves.toBeUndefined(); // dropped by the server
    expect(consumed).toEqual([]);
    expect(await counts()).toEqual(before);
  });

  it('gives each user its own inbox: the monitor cannot listen to the shared or the orchestrator\'s replies, its own requests work', async () => {
    const host = await as('host');
    await (await host.keyValue('hosts')).put('alpha', { hostId: 'alpha' });
    const monitor = await as('monitor');
    const overheard: unknown[] = [];
    for (const subject of ['_INBOX.>', `${inboxPrefix.orchestrator}.>`, `${inboxPrefix.host}.>`, '>']) {
      const error = await monitor.subscribe(subject, (m) => overheard.push(m.data)).catch((e: unknown) => e);
      expect(isA2AError(error), subject).toBe(true);
      expect((error as Error).message).toMatch(/the server refused it/);
      expect((error as Error).message).toContain(`Permissions Violation for Subscription to "${subject}"`);
    }
    // its own requests still work: they come back on its own prefix (a direct get, a stream info)
    const hosts = await monitor.readKeyValue('hosts');
    expect((await hosts.get('alpha'))?.value).toEqual({ hostId: 'alpha' });
    expect(await hosts.keys()).toContain('alpha');
    expect(overheard).toEqual([]);
    expect(violations('monitor').filter((l) => l.includes('Subscription Violation') && l.includes(inboxPrefix.monitor))).toEqual([]);

    // without its prefix (the client's default `_INBOX`) its requests are refused, with a hint
    const unprefixed = await connectNats({ servers: server.url, user: 'monitor', pass: passwords.A2A_MONITOR_PASSWORD, name: 'test-monitor', jsApiPrefix: monitorApi });
    open.push(unprefixed);
    const refused = await (await unprefixed.readKeyValue('hosts')).keys().catch((e: unknown) => e);
    expect(isA2AError(refused), String(refused)).toBe(true);
    expect((refused as Error).message).toMatch(/Permissions Violation for Subscription to "_INBOX\./);
    expect((refused as Error).message).toContain('A2A_NATS_INBOX_PREFIX');
    // and an invalid prefix is refused before connecting
    for (const bad of ['', '_INBOX.>', '_INBOX_*', 'a..b', '_INBOX mon', '.x']) {
      const error = await connectNats({ servers: server.url, user: 'monitor', pass: passwords.A2A_MONITOR_PASSWORD, inboxPrefix: bad, reconnect: false }).catch((e: unknown) => e);
      expect(isA2AError(error, 'CONFIGURATION_INVALID'), bad).toBe(true);
      expect((error as Error).message).toContain(`invalid NATS inbox prefix "${bad}"`);
    }
  });

  it('lets an external agent hear its own subjects and all-agent messages, and speak only on its own subject to the gateway', async () => {
    const gateway = await as('gateway');
    const agent = await as('agent-alpha');
    const toAgent: unknown[] = [];
    const toGateway: string[] = [];
    await agent.subscribe('a2a.default.swarm.agent.alpha', (m) => toAgent.push(m.data));
    await agent.subscribe('a2a.default.swarm.agent.all', (m) => toAgent.push(m.data));
    await gateway.subscribe('a2a.default.swarm.orchestrator.messages.*', (m) => toGateway.push(`${m.subject}: ${String(m.data)}`));
    await gateway.subscribe('a2a.default.swarm.orchestrator.messages', (m) => toGateway.push(`${m.subject}: ${String(m.data)}`));
    await expect(agent.subscribe('a2a.default.swarm.agent.beta', (m) => toAgent.push(m.data))).rejects.toThrow(/Permissions Violation for Subscription/);
    await expect(agent.subscribe('a2a.default.swarm.agent.>', (m) => toAgent.push(m.data))).rejects.toThrow(/Permissions Violation for Subscription/);
    await expect(agent.subscribe('a2a.default.swarm.orchestrator.messages.*', (m) => toAgent.push(m.data))).rejects.toThrow(/Permissions Violation for Subscription/);
    await expect(agent.subscribe(s.allEvents, (m) => toAgent.push(m.data))).rejects.toThrow(/Permissions Violation for Subscription/);

    await gateway.publish('a2a.default.swarm.agent.alpha', 'to alpha');
    await gateway.publish('a2a.default.swarm.agent.beta', 'to beta');
    await gateway.publish('a2a.default.swarm.agent.all', 'to all');
    // not on the shared subject (it names no one), not on another agent's, not to another agent
    await agent.publish('a2a.default.swarm.orchestrator.messages', 'shared, from alpha');
    await agent.publish('a2a.default.swarm.orchestrator.messages.beta', 'alpha as beta');
    await agent.publish('a2a.default.swarm.agent.beta', 'impersonating the gateway');
    await agent.publish('a2a.default.swarm.orchestrator.messages.alpha', 'from alpha');
    await waitFor('the messages', () => toAgent.length >= 2 && toGateway.length >= 1);
    await waitFor('the violations to be logged', () => violations('agent-alpha').filter((l) => l.includes('a2a.default.swarm.')).length >= 3);
    expect(toAgent.sort()).toEqual(['to all', 'to alpha']);
    expect(toGateway).toEqual(['a2a.default.swarm.orchestrator.messages.alpha: from alpha']);
    for (const subject of ['a2a.default.swarm.orchestrator.messages', 'a2a.default.swarm.orchestrator.messages.beta', 'a2a.default.swarm.agent.beta']) {
      expect(violations('agent-alpha').some((l) => l.includes('Publish Violation') && l.includes(`Subject "${subject}"`)), subject).toBe(true);
    }
    // no JetStream at all: not even a request/reply inbox
    await expect(agent.keyValue('hosts')).rejects.toThrow(/Permissions Violation/);
    // the swarm is the gateway's: the orchestrator (`a2a run`) has no business there
    const orchestrator = await as('orchestrator');
    await expect(orchestrator.subscribe('a2a.default.swarm.orchestrator.messages.*', () => undefined)).rejects.toThrow(/Permissions Violation for Subscription/);
  });

  it('gives the gateway everything a host has (it is one), plus the swarm', async () => {
    const block = (user: string) => {
      const start = exampleConfig.indexOf(`user: ${user}\n`);
      return exampleConfig.slice(start, exampleConfig.indexOf('\n      }\n', start));
    };
    const subjectsIn = (text: string) => [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
    const gatewaySubjects = new Set(subjectsIn(block('gateway-gw')));
    expect(gatewaySubjects.size).toBeGreaterThan(40);
    // each its own inbox: the host's is the gateway's own
    // (the host's own id, alpha, is the gateway's own, gw: boxes, heartbeat, key)
    expect(subjectsIn(block('host-alpha')).map((x) => x.replace(`${inboxPrefix.host}.`, `${inboxPrefix.gateway}.`).replace(/\balpha\b/g, 'gw')).filter((x) => !gatewaySubjects.has(x))).toEqual([]);
    // and it works as one: queues, buckets, consumers, heartbeat
    const gateway = await as('gateway');
    const { Host } = await import('../../adapters/host.js');
    const { realClock } = await import('../../adapters/clock.js');
    const { nullSink } = await import('../../actors/observation/events.js');
    const host = new Host({
      transport: gateway,
      ns: 'default',
      hostId: 'gw',
      agents: ['coder'],
      concurrency: 1,
      sessionLogic: () => {
        throw new Error('no session expected');
      },
      clock: realClock,
      events: nullSink,
      heartbeatMs: 100,
    });
    await host.start();
    await new Promise((r) => setTimeout(r, 250));
    await host.stop();
    expect(violations('gateway')).toEqual([]);
  });

  it('lets a host and the run\'s process share the artifacts bucket, and not the monitor', async () => {
    const { ArtifactStore } = await import('../../actors/organiser/artifacts.js');
    const { ARTIFACT_BUCKET, KvArtifactBackend } = await import('../../adapters/store/artifactKv.js');
    const { realClock } = await import('../../adapters/clock.js');
    const storeAs = async (user: 'host' | 'orchestrator' | 'monitor') => {
      const t = await as(user);
      return new ArtifactStore(new KvArtifactBackend(() => t.keyValue(ARTIFACT_BUCKET)), 'sec-run', realClock);
    };
    // the server's log is shared with the tests before: only new violations count
    const seen = { host: violations('host').length, orchestrator: violations('orchestrator').length };
    const host = await storeAs('host');
    await host.create({ type: 'code', content: 'file: a.ts\nlet a = 1;', producer: 'w-code', producerRole: 'coder' });
    const orchestrator = await storeAs('orchestrator');
    expect((await orchestrator.list()).map((a) => a.id)).toEqual(['code-1']);
    expect((await orchestrator.setStatus('code-1', 'approved')).status).toBe('approved');
    expect((await host.get('code-1')).status).toBe('approved');
    expect(violations('host').slice(seen.host)).toEqual([]);
    expect(violations('orchestrator').slice(seen.orchestrator)).toEqual([]);
    await expect((await storeAs('monitor')).list()).rejects.toThrow(/could not open or create the KV bucket artifacts/);
  });

  it("lets the run's process pause its hosts (the subject and the pauses bucket), hosts follow, and the monitor cannot pause", async () => {
    const { publishPause, followPauses } = await import('../../adapters/transport/pause.js');
    const { PauseGates } = await import('../../actors/people/pause.js');
    const seen = { host: violations('host').length, orchestrator: violations('orchestrator').length };
    const orchestrator = await as('orchestrator');
    // kept for a host that starts later
    await publishPause(orchestrator, 'default', { runId: 'sec-pause', paused: true, by: 'ann', at: 1 });
    const gates = new PauseGates();
    const warnings: string[] = [];
    const stop = await followPauses(await as('host'), 'default', gates, (m) => warnings.push(m));
    expect(gates.gate('sec-pause').paused?.by).toBe('ann');
    // and live
    await publishPause(orchestrator, 'default', { runId: 'sec-pause', paused: false, by: 'ann', at: 2 });
    await waitFor('the host to see the resume', () => gates.gate('sec-pause').paused === null, 5_000);
    await stop();
    expect(warnings).toEqual([]);
    expect(violations('host').slice(seen.host)).toEqual([]);
    expect(violations('orchestrator').slice(seen.orchestrator)).toEqual([]);
    await expect(publishPause(await as('monitor'), 'default', { runId: 'sec-pause', paused: true, by: 'mallory', at: 3 })).rejects.toThrow();
  });

  it('keeps the monitor from having anything delivered anywhere: no consumer, no redirected reply; `a2a monitor` still reads the hosts bucket', async () => {
    const host = await as('host');
    await ensureQueues(host, 'default');
    const hostsBucket = await host.keyValue('hosts');
    const beat = { hostId: 'alpha', agents: ['coder'], concurrency: 2, running: 0, sessions: [], startedAt: Date.now(), at: Date.now(), intervalMs: 60_000, status: 'ready' };
    await hostsBucket.put('alpha', beat);
    const before = await counts();
    const beta = await as('agent-beta');
    const toBeta: unknown[] = [];
    await beta.subscribe('a2a.default.swarm.agent.beta', (m) => toBeta.push(m.data));
    // where an attacker would have the bucket's entries delivered: a host's spawn queue, an agent, a session's down queue
    const targets = ['a2a.default.spawn.architect', 'a2a.default.swarm.agent.beta', 'a2a.default.down.run-x.w-t1'];

    const nc = await connect({ servers: server.url, user: 'monitor', pass: passwords.A2A_MONITOR_PASSWORD, inboxPrefix: inboxPrefix.monitor, name: 'test-monitor-raw' });
    raw.push(nc);
    for (const apiPrefix of [monitorApi, '$JS.API']) {
      const jsm = await jetstreamManager(nc, { checkAPI: false, apiPrefix });
      for (const [i, deliver] of targets.entries()) {
        // a push consumer on the hosts bucket's stream, delivering to `deliver`, named and not
        for (const name of [`evil-${i}`, undefined]) {
          const config = { deliver_subject: deliver, ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All, ...(name ? { name } : {}) };
          const error = await jsm.consumers.add('KV_a2a_default_hosts', config).catch((e: unknown) => e);
          expect(String(error), `${apiPrefix} → ${deliver}`).toMatch(/Permissions Violation for Publish to "(JS\.A2A|\$JS)\.API\.CONSUMER\.CREATE\.KV_a2a_default_hosts/);
        }
        // the legacy durable form, fire and forget
        nc.publish(`${apiPrefix}.CONSUMER.DURABLE.CREATE.KV_a2a_default_hosts.evil`, JSON.stringify({ stream_name: 'KV_a2a_default_hosts', config: { durable_name: 'evil', deliver_subject: deliver, ack_policy: 'none' } }));
        // and the reads it may make, with their reply subject pointed at the target: the answer
        // goes back to the monitor's account, never into A2A
        nc.publish(`${monitorApi}.STREAM.INFO.KV_a2a_default_hosts`, '', { reply: deliver });
        nc.publish(`${monitorApi}.DIRECT.GET.KV_a2a_default_hosts.$KV.a2a_default_hosts.alpha`, '', { reply: deliver });
        nc.publish(`${monitorApi}.STREAM.MSG.GET.KV_a2a_default_hosts`, JSON.stringify({ last_by_subj: '$KV.a2a_default_hosts.alpha' }), { reply: deliver });
      }
    }
    // a round trip after them on the same connection: the server has handled them all
    await nc.flush();
    expect(await (await as('monitor')).readKeyValue('hosts').then((kv) => kv.keys())).toContain('alpha');
    await waitFor('the refused consumer requests to be logged', () => violations('monitor').filter((l) => l.includes('CONSUMER')).length >= 6 * targets.length);
    // the durable one was not made either, so nothing will be pushed from it later
    const hostNc = await connect({ servers: server.url, user: 'host-alpha', pass: passwords.A2A_HOST_ALPHA_PASSWORD, inboxPrefix: inboxPrefix.host });
    raw.push(hostNc);
    const hjsm = await jetstreamManager(hostNc, { checkAPI: false });
    // (a host may read the stream's state, not its consumers: none at all)
    expect((await hjsm.streams.info('KV_a2a_default_hosts')).state.consumer_count).toBe(0);
    // and nothing was delivered: the spawn and down queues hold what they held, beta heard nothing
    // (an answer delivered here would have arrived before the round trip's own)
    await beta.publish('a2a.default.swarm.agent.beta', 'marker').catch(() => undefined); // refused: agents do not write there
    const gateway = await as('gateway');
    await gateway.publish('a2a.default.swarm.agent.beta', 'marker');
    await waitFor('the marker', () => toBeta.includes('marker'));
    expect(toBeta).toEqual(['marker']);
    expect(await counts()).toEqual(before);

    // the monitor itself reads the bucket with none of that: a host that only wrote its entry shows
    const c = capture();
    const code = await withEnv({ ...NO_CREDENTIALS, ...envOf('monitor') }, () => main(['monitor', '--nats', server.url, '--json', '--for', '300'], c.io));
    expect(code, c.out() + c.err()).toBe(0);
    const first = c.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { kind: string; hosts?: Array<{ id: string; agents: string[]; alive: boolean }> }).find((l) => l.kind === 'snapshot');
    expect(first?.hosts).toEqual([expect.objectContaining({ id: 'alpha', agents: ['coder'], alive: true })]);
    expect(c.err()).toEqual('');
    expect(violations('monitor').filter((l) => l.includes(':nats.js:a2a-monitor'))).toEqual([]);
  });

  it('keeps external agents to their own identity: alpha cannot report beta\'s task, neither in beta\'s name nor on beta\'s subject', async () => {
    const cleanups: Array<() => Promise<unknown>> = [];
    const track: Track = (c) => void cleanups.push(c);
    try {
      const { gateway, out, err, prefix } = await startGateway({ url: server.url, ns: 'default', track, env: { ...NO_CREDENTIALS, ...envOf('gateway') }, options: { id: 'gw', ackTimeout: 5_000, heartbeat: 1_000 } });
      expect(prefix).toBe('a2a.default.swarm');
      let task: Wire | null = null;
      const beta = await new SeedAgent('beta', prefix, { max: 1, onMessage: (m, self) => m.message_type === 'task' && ((task = m), self.ack(m, 'accepted')) }, track).start(server.url, {
        user: 'agent-beta',
        pass: passwords.A2A_AGENT_BETA_PASSWORD,
      });
      beta.register();
      beta.startHeartbeats();
      await registered(gateway, 'beta');
      // the orchestrator reads its reports through a run box (a slot it may read), as a run does
      const owner = await ownerOf({ transport: await as('orchestrator'), ns: 'default', spec: specFor('default', 'st-sec'), track, box: 'rs15' });
      const taskId = (await waitUntil('beta to accept its task', () => task && gateway.agents().find((a) => a.id === 'beta')!.assigned.length === 1 && task)).payload.task_id as string;
      const alpha = await new SeedAgent('alpha', prefix, { max: 2 }, track).start(server.url, { user: 'agent-alpha', pass: passwords.A2A_AGENT_ALPHA_PASSWORD });
      alpha.register();
      await registered(gateway, 'alpha');

      // beta's result, in beta's name, on alpha's own subject: refused by the gateway, the error to alpha
      const forged = alpha.send(beta.result(taskId, { files_modified: ['backdoor.py'] })) as Wire;
      const refused = await alpha.waitFor('the refusal', 'error', (m) => m.correlation_id === forged.message_id);
      expect(refused.payload).toMatchObject({ error_type: 'system_error', error_code: 'E_IDENTITY_MISMATCH', error_message: expect.stringContaining('sender_id: must be "alpha"') });
      // the same on beta's subject: refused by the server (alpha's user may publish on its own only)
      alpha.sendOn(`${prefix}.orchestrator.messages.beta`, beta.result(taskId, { files_modified: ['backdoor.py'] }));
      await waitFor('the server to refuse it', () => violations('agent-alpha').some((l) => l.includes('Publish Violation') && l.includes(`"${prefix}.orchestrator.messages.beta"`)));

      // beta's task goes on as beta's: its own result is the task's result
      expect(owner.done()).toBe(false);
      expect(beta.received('error')).toEqual([]);
      beta.complete(taskId);
      const result = await owner.result();
      expect(result.status).toBe('success');
      expect(result.output).toContain('files modified: api/views.py');
      expect(result.output).not.toContain('backdoor.py');
      expect(result.metadata).toMatchObject({ agentId: 'beta', history: [{ agentId: 'beta', outcome: 'completed' }] });
      expect(out()).toContain('refused a message from alpha');
      // this server requires authentication: no warning; the gateway's user was refused nothing
      expect(err()).not.toContain(UNAUTHENTICATED);
      expect(violations('gateway')).toEqual([]);
    } finally {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    }
  });

  it('runs a plan with the orchestrator and host users (real `a2a host` processes, `a2a run --nats`): the server refuses nothing', async () => {
    // the worker on one host, its sub-tasks on another: a host is also an owner (spawn, down, consumes up)
    const ws = splitWorkspace({ partMs: 0, parts: 2, planId: 'secure', prefix: 'a2a-nats-sec-' });
    const plan = join(ws, 'plan.json');
    const script = join(ws, 'script.json');
    const { A2A_NATS_USER: _u, A2A_NATS_PASSWORD: _p, A2A_NATS_TOKEN: _t, A2A_NATS_INBOX_PREFIX: _i, ...inherited } = process.env;
    // each host with its own user
    const env = (id: 'alpha' | 'beta') => ({ ...inherited, A2A_NATS_USER: `host-${id}`, A2A_NATS_PASSWORD: id === 'alpha' ? passwords.A2A_HOST_ALPHA_PASSWORD : passwords.A2A_HOST_BETA_PASSWORD, A2A_NATS_INBOX_PREFIX: `_INBOX_host-${id}` });
    const startHost = (id: 'alpha' | 'beta', agents: string) => a2aHost(server.url, ws, id, agents, { env: env(id) });
    const hosts = [startHost('alpha', 'architect'), startHost('beta', 'coder')];
    await waitFor('the hosts to serve', () => hosts.every((h) => h.out().includes(' serves ') || h.child.exitCode !== null), 60_000);
    expect(hosts[0]!.out()).toContain('host alpha serves architect');
    expect(hosts[1]!.out()).toContain('host beta serves coder');

    const saved = { user: process.env.A2A_NATS_USER, pass: process.env.A2A_NATS_PASSWORD, token: process.env.A2A_NATS_TOKEN, inbox: process.env.A2A_NATS_INBOX_PREFIX };
    let out = '';
    let err = '';
    const io = { stdout: { write: (x: string) => ((out += x), true) }, stderr: { write: (x: string) => ((err += x), true) } } as never;
    const run = (args: string[]) => main(['run', plan, '--nats', server.url, '--script', script, '--workspace', ws, '--no-tree', ...args], io);
    try {
      delete process.env.A2A_NATS_TOKEN;
      process.env.A2A_NATS_INBOX_PREFIX = inboxPrefix.orchestrator;
      // a wrong password first: refused, clearly, and nothing printed of it
      process.env.A2A_NATS_USER = 'orchestrator';
      process.env.A2A_NATS_PASSWORD = passwords.A2A_HOST_ALPHA_PASSWORD;
      expect(await run(['--run-id', 'sec-0'])).not.toBe(0);
      expect(out + err).toMatch(/refused the credentials \(user "orchestrator" with a password\)/);
      expectNoSecret(out + err);
      out = '';
      err = '';
      process.env.A2A_NATS_PASSWORD = passwords.A2A_ORCHESTRATOR_PASSWORD;
      expect(await run(['--run-id', 'sec-1']), out + err).toBe(0);
    } finally {
      for (const [key, value] of [['A2A_NATS_USER', saved.user], ['A2A_NATS_PASSWORD', saved.pass], ['A2A_NATS_TOKEN', saved.token], ['A2A_NATS_INBOX_PREFIX', saved.inbox]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
    const store = new FileRunStore(ws);
    expect((store.read('sec-1').summary as RunSummary).tasks[0]!.result!.output).toBe('all parts built');
    const events = store.events('sec-1');
    const placed = events.filter((e) => e.type === 'subtask.placed').map((e) => `${e.subTaskId}@${String(e.data.host)}`).sort();
    expect(placed).toEqual(['w-design.1@beta', 'w-design.2@beta', 'w-design@alpha']);
    // the sub-tasks' updates crossed back (up queue, host to host), the hosts' events reached the run
    expect(events.filter((e) => e.type === 'update.queued' && e.data.message === 'started' && e.workerId === 'w-design')).toHaveLength(2);

    for (const h of hosts) h.child.kill('SIGTERM');
    for (const h of hosts) expect(await h.exited, h.out()).toBe(0);
    expect(hosts[0]!.out()).toContain('host alpha drained');
    expectNoSecret(out + err + hosts.map((h) => h.out()).join(''));
    // the server requires authentication: no warning that it does not
    expect(err).not.toContain(UNAUTHENTICATED);
    for (const h of hosts) expect(h.out()).not.toContain(UNAUTHENTICATED);
    // the roles' permissions were enough: the server refused nothing to these processes (the log
    // names a connection `"<client version>:nats.js:<name>"`; the other tests' connections are
    // `test-<user>`, and provoke violations on purpose)
    expect(server.log()).toContain('Server is ready');
    const notATestConnection = (l: string) => !l.includes(':nats.js:test-');
    expect(violations('orchestrator').filter(notATestConnection)).toEqual([]);
    expect(violations('host').filter(notATestConnection)).toEqual([]);
    expect(server.log().split('\n').filter((l) => /Violation/.test(l) && l.includes('User "host-beta"'))).toEqual([]);
  }, 120_000);
});

describe('token authentication', () => {
  let tokenServer: NatsServer;
  const token = secret('token');
  beforeAll(async () => {
    tokenServer = await startNatsServer({ config: 'authorization { token: $A2A_TEST_TOKEN }', env: { A2A_TEST_TOKEN: token } });
  });
  afterAll(() => tokenServer?.stop());

  it('connects with the token and is refused without it or with another one, without showing it', async () => {
    const t = await connectNats({ servers: tokenServer.url, token });
    open.push(t);
    await t.ensureQueue('inbox', { subjects: ['a2a.default.inbox.>'], workQueue: true });
    expect(await t.enqueue('a2a.default.inbox.1', 'hello', { msgId: 'one' })).toEqual({ duplicate: false });

    const none = await connectNats({ servers: tokenServer.url, reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(none, 'CONFIGURATION_INVALID')).toBe(true);
    expect((none as Error).message).toMatch(/requires credentials and none were given/);
    const other = await connectNats({ servers: tokenServer.url, token: `${token}x`, reconnect: false }).catch((e: unknown) => e);
    expect(isA2AError(other, 'CONFIGURATION_INVALID')).toBe(true);
    expect((other as Error).message).toMatch(/refused the credentials \(a token\)/);
    expect((other as Error).message).not.toContain(token);
  });
});

describe('a server without authentication', () => {
  let openServer: NatsServer;
  beforeAll(async () => {
    openServer = await startNatsServer();
  });
  afterAll(() => openServer?.stop());

  it('makes `a2a run --nats`, `a2a host` and `a2a gateway` say once, on stderr, that anyone there can forge results, events and cancels', async () => {
    const cleanups: Array<() => Promise<unknown>> = [];
    try {
      const ws = splitWorkspace({ partMs: 0, parts: 1, planId: 'open', prefix: 'a2a-nats-open-' });
      const host = capture();
      const hosting = withEnv(NO_CREDENTIALS, () =>
        hostCommand({ nats: openServer.url, agents: 'architect,coder', id: 'host-open', workspace: ws, script: join(ws, 'script.json'), heartbeat: 200, drain: 1_000 }, host.io),
      );
      cleanups.push(async () => (host.stop(), hosting));
      await waitFor('the host to serve', () => host.out().includes('host host-open serves'), 10_000, host.err);
      const run = capture();
      const code = await withEnv(NO_CREDENTIALS, () =>
        main(['run', join(ws, 'plan.json'), '--nats', openServer.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--no-tree', '--run-id', 'open-1'], run.io),
      );
      expect(code, run.out() + run.err()).toBe(0);
      const gateway = await startGateway({ url: openServer.url, ns: 'open', track: (c) => void cleanups.push(c), env: NO_CREDENTIALS });

      for (const [who, stderr, stdout] of [['run', run.err(), run.out()], ['host', host.err(), host.out()], ['gateway', gateway.err(), gateway.out()]] as const) {
        const warnings = stderr.split('\n').filter((l) => l.includes(UNAUTHENTICATED));
        expect(warnings, who).toEqual([
          `a2a: warning: the NATS server at ${openServer.url} does not require authentication: any client that reaches it can forge session results, run and audit events, cancels and external agents' messages. Give each role its own user (examples/nats/server.conf; README, "Security").`,
        ]);
        expect(stdout, who).not.toContain(UNAUTHENTICATED);
      }
    } finally {
      for (const c of cleanups.reverse()) await c().catch(() => undefined);
    }
  });
});
