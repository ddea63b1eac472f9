/**
 * One NATS user per host (`a2a nats users`, nkeys): on a real nats-server configured with what the
 * command writes, a plan runs across two hosts and a run with the server refusing nothing, a host
 * killed -9 is taken over by the other (which reads its boxes without the right to make them);
 * and each attempt of one host to act as another, or of any process to make a consumer on another's
 * queue, is refused by the server's subject permissions, not by a2a's own checks. A run's control
 * subject: a studio user asks the run's process (an invalid request refused naming the field, a
 * stop carried out); a host, the monitor, or a studio under another's name is refused by the server.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { connectNats } from '../../adapters/transport/nats.js';
import { natsUsers, type NatsUser } from '../../adapters/transport/natsUsers.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { tempDir } from '../helpers.js';
import { startNatsServer, type NatsServer } from './server.js';
import { a2aHost, capture, killAll, splitWorkspace, waitFor } from './cluster.js';

const dir = tempDir('a2a-nats-users-');
const { conf, users } = natsUsers({
  namespace: 'default',
  hosts: [{ id: 'alpha', agents: ['architect'] }, { id: 'beta', agents: ['coder'] }, { id: 'gamma', agents: ['architect'] }, { id: 'delta', agents: ['coder'] }],
  gateways: [],
  agents: [],
  studios: ['ops'],
  runs: 4,
  auth: 'nkey',
  listen: '127.0.0.1:4222',
  storeDir: '/unused',
});
const byName = new Map(users.map((u) => [u.name, u]));
const seedFile = (u: NatsUser) => {
  const file = join(dir, `${u.name}.nk`);
  writeFileSync(file, `${u.seed}\n`, { mode: 0o600 });
  return file;
};
/** The environment of an a2a process run as user `name`, as its `<user>.env` says. */
const envOf = (name: string): NodeJS.ProcessEnv => {
  const u = byName.get(name)!;
  const { A2A_NATS_USER: _u, A2A_NATS_PASSWORD: _p, A2A_NATS_TOKEN: _t, A2A_NATS_INBOX_PREFIX: _i, A2A_NATS_NKEY: _k, ...inherited } = process.env;
  return { ...inherited, A2A_NATS_NKEY: seedFile(u), ...u.env };
};

let server: NatsServer;
const raw: NatsConnection[] = [];

beforeAll(async () => {
  mkdirSync(dir, { recursive: true });
  server = await startNatsServer({ base: conf });
});
afterEach(async () => {
  killAll();
  for (const nc of raw.splice(0)) await nc.close().catch(() => undefined);
});
afterAll(() => server?.stop());

/** A raw client connected as user `name` (to try what a2a never does). */
async function as(name: string): Promise<NatsConnection> {
  const u = byName.get(name)!;
  const nc = await connect({ servers: server.url, name: `test-${name}`, authenticator: nkeyAuthenticator(new TextEncoder().encode(u.seed!)), inboxPrefix: u.env.A2A_NATS_INBOX_PREFIX! });
  raw.push(nc);
  return nc;
}

/** The server's permission refusals of user `name` (the log names nkey users by public key). */
const violations = (name: string, connection?: string) =>
  server
    .log()
    .split('\n')
    .filter((l) => /(Publish|Subscription) Violation/.test(l) && l.includes(byName.get(name)!.publicKey!) && (connection === undefined || l.includes(connection)));

/** Runs `fn` with the environment of user `name` in this process (an in-process `a2a run`). */
async function asUser<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const env = envOf(name);
  const keys = ['A2A_NATS_USER', 'A2A_NATS_PASSWORD', 'A2A_NATS_TOKEN', 'A2A_NATS_INBOX_PREFIX', 'A2A_NATS_NKEY', 'A2A_NATS_JS_API_PREFIX'];
  const saved = Object.fromEntries(keys.map((k) => [k, process.env[k]]));
  for (const k of keys) {
    if (env[k] === undefined) delete process.env[k];
    else process.env[k] = env[k];
  }
  try {
    return await fn();
  } finally {
    for (const k of keys) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
}

/** Waits until the run's three parts have said they started (their updates are in its log). */
function partsStarted(ws: string, runId: string): Promise<void> {
  return waitFor('the parts to start on beta', () => {
    try {
      return new FileRunStore(ws).events(runId).filter((e) => e.type === 'update.queued' && e.data.message === 'started').length >= 3;
    } catch {
      return false; // the run's files are not there yet
    }
  });
}

describe('one user per host', () => {
  it('is a valid configuration (nats-server -t) whose seeds are never written into it', () => {
    for (const u of users) expect(conf).not.toContain(u.seed!);
    expect(conf).toContain(byName.get('host-alpha')!.publicKey!);
  });

  it('runs a plan across two hosts and a run, each with its own user: the server refuses nothing', async () => {
    const ws = splitWorkspace({ partMs: 0, parts: 2, planId: 'perhost', prefix: 'a2a-nats-perhost-' });
    const hosts = [a2aHost(server.url, ws, 'alpha', 'architect', { env: envOf('host-alpha') }), a2aHost(server.url, ws, 'beta', 'coder', { env: envOf('host-beta') })];
    await waitFor('the hosts to serve', () => hosts.every((h) => h.out().includes(' serves ') || h.child.exitCode !== null), 60_000, () => hosts.map((h) => h.out()).join('\n'));
    const c = capture();
    const code = await asUser('orchestrator', () => main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--no-tree', '--run-id', 'ph-1'], c.io));
    expect(code, c.out() + c.err()).toBe(0);
    const store = new FileRunStore(ws);
    expect((store.read('ph-1').summary as RunSummary).tasks[0]!.result!.output).toBe('all parts built');
    const placed = store.events('ph-1').filter((e) => e.type === 'subtask.placed').map((e) => `${e.subTaskId}@${String(e.data.host)}`).sort();
    expect(placed).toEqual(['w-design.1@beta', 'w-design.2@beta', 'w-design@alpha']);
    for (const h of hosts) h.child.kill('SIGTERM');
    for (const h of hosts) expect(await h.exited, h.out()).toBe(0);
    for (const name of ['orchestrator', 'host-alpha', 'host-beta']) expect(violations(name).filter((l) => !l.includes(':test-')), name).toEqual([]);
  }, 60_000);

  it('lets a host killed -9 be taken over by another, which reads its boxes without the right to make them', async () => {
    const ws = splitWorkspace({ partMs: 1_500, parts: 3, planId: 'perhost2', prefix: 'a2a-nats-perhost-' });
    const alpha = a2aHost(server.url, ws, 'alpha', 'architect', { env: envOf('host-alpha') });
    const beta = a2aHost(server.url, ws, 'beta', 'coder', { env: envOf('host-beta') });
    await waitFor('the hosts to serve', () => [alpha, beta].every((h) => h.out().includes(' serves ') || h.child.exitCode !== null), 60_000);
    const c = capture();
    const running = asUser('orchestrator', () => main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--no-tree', '--run-id', 'ph-2'], c.io));
    await partsStarted(ws, 'ph-2');
    // killed once alpha saved the worker (a host killed before would leave nothing to restore)
    const reader = await connectNats({ servers: server.url, name: 'test-reader', nkeyFile: seedFile(byName.get('host-gamma')!), inboxPrefix: '_INBOX_host-gamma' });
    try {
      const bucket = await reader.readKeyValue('snapshots');
      const deadline = Date.now() + 20_000;
      while (!((await bucket.get('ph-2.w-design'))?.value as { checkpoint?: unknown } | undefined)?.checkpoint) {
        if (Date.now() > deadline) throw new Error('no checkpoint of ph-2.w-design');
        await new Promise((r) => setTimeout(r, 25));
      }
    } finally {
      await reader.close();
    }
    alpha.child.kill('SIGKILL');
    const gamma = a2aHost(server.url, ws, 'gamma', 'architect', { env: envOf('host-gamma') });
    expect(await running, c.out() + c.err() + gamma.out()).toBe(0);
    const events = new FileRunStore(ws).events('ph-2');
    expect(events.some((e) => e.type === 'session.restored' && e.subTaskId === 'w-design' && e.data.host === 'gamma')).toBe(true);
    expect((new FileRunStore(ws).read('ph-2').summary as RunSummary).tasks[0]!.result!.output).toBe('all parts built');
    for (const id of ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']) expect(events.filter((e) => e.type === 'subtask.result' && e.subTaskId === id), id).toHaveLength(1);
    for (const h of [beta, gamma]) h.child.kill('SIGTERM');
    for (const h of [beta, gamma]) await h.exited;
    // gamma read alpha's boxes by joining them: it made none of alpha's, removed none (left to the
    // server's idle threshold), and was refused nothing
    for (const name of ['orchestrator', 'host-beta', 'host-gamma']) expect(violations(name).filter((l) => !l.includes(':test-')), name).toEqual([]);
  }, 90_000);
});

describe('one user per host, handing back', () => {
  it('lets a draining host hand its sessions back to another, which reads what its boxes still hold without making them', async () => {
    const ws = splitWorkspace({ partMs: 2_000, parts: 3, planId: 'perhost3', prefix: 'a2a-nats-perhost-' });
    const alpha = a2aHost(server.url, ws, 'alpha', 'architect', { env: envOf('host-alpha') });
    const beta = a2aHost(server.url, ws, 'beta', 'coder', { env: envOf('host-beta'), drainMs: 100 });
    await waitFor('the hosts to serve', () => [alpha, beta].every((h) => h.out().includes(' serves ') || h.child.exitCode !== null), 60_000);
    const c = capture();
    const running = asUser('orchestrator', () => main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--no-tree', '--run-id', 'ph-3'], c.io));
    await partsStarted(ws, 'ph-3');
    beta.child.kill('SIGTERM');
    expect(await beta.exited, beta.out()).toBe(0);
    expect(beta.out()).toMatch(/host beta drained: 0 finished, 3 handed back/);
    const delta = a2aHost(server.url, ws, 'delta', 'coder', { env: envOf('host-delta') });
    expect(await running, c.out() + c.err() + delta.out()).toBe(0);
    const events = new FileRunStore(ws).events('ph-3');
    const restored = events.filter((e) => e.type === 'session.restored' && e.data.host === 'delta').map((e) => e.subTaskId).sort();
    expect(restored).toEqual(['w-design.1', 'w-design.2', 'w-design.3']);
    for (const id of ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']) expect(events.filter((e) => e.type === 'subtask.result' && e.subTaskId === id), id).toHaveLength(1);
    for (const h of [alpha, delta]) h.child.kill('SIGTERM');
    for (const h of [alpha, delta]) await h.exited;
    for (const name of ['orchestrator', 'host-alpha', 'host-beta']) expect(violations(name).filter((l) => !l.includes(':test-')), name).toEqual([]);
    expect(violations('host-delta').filter((l) => !l.includes(':test-')), 'host-delta').toEqual([]);
  }, 90_000);
});

describe('what one process may not do in another\'s name', () => {
  /** A publish the server refuses: the promise of a JetStream publish or request rejects, and the log says why. */
  async function refused(name: string, what: () => Promise<unknown>, subject: string): Promise<string> {
    const before = violations(name).length;
    const error = await what().then(
      () => null,
      (e: unknown) => e as Error,
    );
    await waitFor(`the server to log the refusal of ${subject}`, () => violations(name).slice(before).some((l) => l.includes(subject)), 5_000, () => String(error));
    return String(error);
  }

  it('refuses a host\'s heartbeat, registration, hosts-bucket key and reports in another host\'s name', async () => {
    const beta = await as('host-beta');
    const listener = await as('orchestrator');
    const heard: string[] = [];
    const sub = listener.subscribe('a2a.default.hosts.*.heartbeat', { callback: (_e, m) => void heard.push(m.subject) });
    await listener.flush();
    beta.publish('a2a.default.hosts.alpha.heartbeat', JSON.stringify({ hostId: 'alpha' }));
    beta.publish('a2a.default.hosts.alpha.registration', '{}');
    await beta.flush();
    await waitFor('the refusals', () => violations('host-beta').some((l) => l.includes('hosts.alpha.registration')), 5_000);
    expect(violations('host-beta').some((l) => l.includes('a2a.default.hosts.alpha.heartbeat'))).toBe(true);
    const js = jetstream(beta);
    await refused('host-beta', () => js.publish('$KV.a2a_default_hosts.alpha', JSON.stringify({ hostId: 'alpha' }), { timeout: 2_000 }), '$KV.a2a_default_hosts.alpha');
    const jsm = await jetstreamManager(await as('host-alpha'));
    const upBefore = (await jsm.streams.info('a2a_default_up')).state.messages;
    await refused('host-beta', () => js.publish('a2a.default.up.rs0.alpha.r1.w-x', JSON.stringify({ kind: 'done' }), { timeout: 2_000 }), 'a2a.default.up.rs0.alpha.r1.w-x');
    expect((await jsm.streams.info('a2a_default_up')).state.messages).toBe(upBefore);
    await listener.flush();
    sub.unsubscribe();
    expect(heard).not.toContain('a2a.default.hosts.alpha.heartbeat');
  });

  it('refuses a consumer on another process\'s box, under its name or under one\'s own name with its filter', async () => {
    const beta = await jetstreamManager(await as('host-beta'), { checkAPI: false });
    const orchestrator = await jetstreamManager(await as('orchestrator'), { checkAPI: false });
    const pull = (name: string, filter: string) => ({ durable_name: name, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, filter_subject: filter });
    const attempts: Array<[string, typeof beta, string, ReturnType<typeof pull>]> = [
      ['host-beta', beta, 'a2a_default_up', pull('up-h-alpha', 'a2a.default.up.h-alpha.>')],
      ['host-beta', beta, 'a2a_default_down', pull('down-h-alpha', 'a2a.default.down.h-alpha.>')],
      ['host-beta', beta, 'a2a_default_down', pull('down-h-beta', 'a2a.default.down.h-alpha.>')],
      ['host-beta', beta, 'a2a_default_up', pull('spy', 'a2a.default.up.>')],
      ['host-beta', beta, 'a2a_default_up', pull('up-rs0', 'a2a.default.up.rs0.>')],
      ['host-beta', beta, 'a2a_default_hostevents', pull('events-rs0', 'a2a.default.hostevents.rs0.>')],
      // beta serves coder: the architect's spawns are not its to take
      ['host-beta', beta, 'a2a_default_spawn', pull('spawn-architect', 'a2a.default.spawn.architect')],
      ['orchestrator', orchestrator, 'a2a_default_up', pull('up-h-alpha', 'a2a.default.up.h-alpha.>')],
      ['orchestrator', orchestrator, 'a2a_default_down', pull('down-h-alpha', 'a2a.default.down.h-alpha.>')],
      ['orchestrator', orchestrator, 'a2a_default_spawn', pull('spawn-coder', 'a2a.default.spawn.coder')],
      ['orchestrator', orchestrator, 'a2a_default_up', pull('up-rs9', 'a2a.default.up.rs9.>')],
    ];
    for (const [user, jsm, stream, config] of attempts) {
      const error = await refused(user, () => jsm.consumers.add(stream, config), `CONSUMER.CREATE.${stream}.${config.durable_name}`);
      expect(error, `${user}: ${config.durable_name} on ${stream}`).toMatch(/[Pp]ermissions [Vv]iolation|timeout/i);
    }
    // nor does it remove another's (alpha's box, made by alpha's first run above)
    await refused('host-beta', () => beta.consumers.delete('a2a_default_up', 'up-h-alpha'), 'CONSUMER.DELETE.a2a_default_up.up-h-alpha');
  });

  it('refuses `a2a host --id alpha` started with beta\'s credentials, saying what the server refused', async () => {
    const ws = tempDir('a2a-nats-perhost-id-');
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [] }));
    const impostor = a2aHost(server.url, ws, 'alpha', 'coder', { env: envOf('host-beta') });
    const code = await impostor.exited;
    expect(code, impostor.out()).not.toBe(0);
    expect(impostor.out()).toMatch(/[Pp]ermissions [Vv]iolation/);
    expect(impostor.out()).toContain('no right to act as this host');
    expect(impostor.out()).not.toContain(byName.get('host-beta')!.seed!);
  }, 30_000);
});

describe("a run's control subject", () => {
  /**
   * A live run as the orchestrator user, in this process: its @coder task runs on host beta (its
   * own user) and waits for a person's approval of its command.
   */
  async function waitingRun(runId: string) {
    const ws = tempDir('a2a-nats-control-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'waits', tasks: [{ id: 'build', agent: '@coder', prompt: 'build it' }] }));
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({ rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'run_command', arguments: { command: 'echo built' } }] }, { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'built' } }] }] }] }),
    );
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ permissions: { ask_user: ['command_execution'] } }));
    const host = a2aHost(server.url, ws, 'beta', 'coder', { env: envOf('host-beta') });
    const studio = await as('studio-ops');
    // the item waiting for a person, heard as the run says it
    const asked = new Promise<void>((resolve) => {
      const sub = studio.subscribe(`a2a.default.events.${runId}.human.asked`, { callback: () => (sub.unsubscribe(), resolve()) });
    });
    await studio.flush();
    await waitFor('the host to serve', () => host.out().includes(' serves ') || host.child.exitCode !== null, 8_000, host.out);
    const c = capture();
    const done = asUser('orchestrator', () => main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--no-tree', '--run-id', runId], c.io));
    await Promise.race([asked, done.then((code) => Promise.reject(new Error(`the run ended (${code}) before it asked:\n${c.out()}${c.err()}`)))]);
    const ask = async (message: unknown) => JSON.parse(new TextDecoder().decode((await studio.request(`a2a.default.control.${runId}.studio-ops`, JSON.stringify(message), { timeout: 3_000 })).data)) as Record<string, unknown>;
    return { ws, done, ask, output: () => c.out() + c.err() };
  }

  it("answers a studio user's requests as the run's control directory does: an invalid one refused naming the field, changing nothing; stop ends the run", async () => {
    // the file's other tests make these users refused on purpose: this one's are counted from here
    const before = { orchestrator: violations('orchestrator').length, studio: violations('studio-ops').length };
    const run = await waitingRun('ctl-1');
    const pending = () => run.ask({ command: 'status' }).then((r) => (r.status as { pending: Array<{ title: string }> }).pending.map((i) => i.title));
    expect(await run.ask({ command: 'status' })).toMatchObject({ ok: true, record: { runId: 'ctl-1', status: 'running' } });
    expect(await pending()).toEqual(['command_execution: echo built']);
    // each invalid request is refused with the field it is about, and nothing happens
    expect(await run.ask({ command: 'answer', id: '1', approved: 'yes', by: 'ann' })).toEqual({ ok: false, error: expect.stringMatching(/^invalid request: approved: /) });
    expect(await run.ask({ command: 'redirect', taskId: 'build', by: 'ann' })).toEqual({ ok: false, error: expect.stringMatching(/^invalid request: instructions: /) });
    expect(await run.ask({ command: 'delete_everything', by: 'ann' })).toEqual({ ok: false, error: expect.stringMatching(/^invalid request: command: /) });
    expect(await run.ask({ command: 'events', after: -2 })).toEqual({ ok: false, error: expect.stringMatching(/^invalid request: after: /) });
    expect(await pending()).toEqual(['command_execution: echo built']);
    // a valid change is checked against the live run, as from the control directory
    expect(await run.ask({ command: 'answer', id: '7', approved: true, by: 'ann' })).toEqual({ ok: false, error: expect.stringMatching(/^nothing pending with id "7"; pending: 1\. /) });
    expect(await run.ask({ command: 'pause', by: 'ann' })).toMatchObject({ ok: true });
    const log = await run.ask({ command: 'events', after: -1 });
    expect(log).toMatchObject({ ok: true, from: 0, more: false });
    const events = log.events as Array<{ type: string; data: Record<string, unknown> }>;
    // who paused: the person the payload names, through the studio user the subject names (the server binds it)
    expect(events.filter((e) => e.type === 'run.paused').map((e) => e.data.by)).toEqual(['ann via studio-ops']);
    expect(events.map((e) => e.type)).toEqual(new FileRunStore(run.ws).events('ctl-1').map((e) => e.type).slice(0, events.length));
    expect(await run.ask({ command: 'stop', by: 'ann' })).toMatchObject({ ok: true, message: expect.stringContaining('every worker and sub-task is being cancelled') });
    expect(await run.done, run.output()).toBe(130);
    expect(new FileRunStore(run.ws).read('ctl-1').status).toBe('cancelled');
    expect(violations('orchestrator').slice(before.orchestrator)).toEqual([]);
    expect(violations('studio-ops').slice(before.studio)).toEqual([]);
  });

  it('refuses a request of a host or the monitor, and a studio user\'s under another name: the server, not a2a', async () => {
    const subject = (user: string) => `a2a.default.control.any-run.${user}`;
    for (const [name, user] of [['host-alpha', 'host-alpha'], ['host-alpha', 'studio-ops'], ['monitor', 'monitor'], ['studio-ops', 'studio-ann']] as const) {
      const nc = await as(name);
      const error = await nc.request(subject(user), JSON.stringify({ command: 'stop', by: 'mallory' }), { timeout: 2_000 }).then(
        () => 'answered',
        (e: unknown) => String(e),
      );
      expect(error, `${name} on ${subject(user)}`).toMatch(/[Pp]ermissions [Vv]iolation/);
      await waitFor(`the server to log the refusal of ${name}`, () => violations(name).some((l) => l.includes(subject(user))), 5_000);
    }
    // nor may a host listen to a run's control subject (to answer in the run's place)
    const host = await as('host-alpha');
    host.subscribe('a2a.default.control.>', { callback: () => undefined });
    await host.flush().catch(() => undefined);
    await waitFor('the refusal of the subscription', () => violations('host-alpha').some((l) => l.includes('Subscription Violation') && l.includes('a2a.default.control.>')), 5_000);
  });
});

describe('a2a nats users', () => {
  it('wrote examples/nats/server.conf: the example is the command\'s output, so the two cannot drift', () => {
    const example = readFileSync(join(import.meta.dirname, '../../examples/nats/server.conf'), 'utf8');
    const command = /^#\s+(a2a nats users .*)$/m.exec(example)?.[1];
    expect(command).toBe('a2a nats users --host alpha --host beta --gateway gw --agent alpha --agent beta --studio ops --runs 16 --passwords');
    const made = natsUsers({ namespace: 'default', hosts: [{ id: 'alpha' }, { id: 'beta' }], gateways: [{ id: 'gw' }], agents: ['alpha', 'beta'], studios: ['ops'], runs: 16, auth: 'password', listen: '127.0.0.1:4222', storeDir: '/var/lib/nats/a2a' });
    expect(made.conf).toBe(example);
  });

  it('writes the configuration, a seed and an environment per user (mode 0600), and replaces nothing without --force', async () => {
    const out = join(tempDir('a2a-nats-users-cli-'), 'nats');
    const first = capture();
    expect(await main(['nats', 'users', '--out', out, '--host', 'alpha=coder,reviewer', '--host', 'beta', '--agent', 'ext1'], first.io), first.err()).toBe(0);
    expect(first.out()).toContain('5 users (orchestrator, host-alpha, host-beta, agent-ext1, monitor)');
    for (const name of ['orchestrator', 'host-alpha', 'host-beta', 'agent-ext1', 'monitor']) {
      for (const ext of ['nk', 'env']) expect((statSync(join(out, `${name}.${ext}`)).mode & 0o777).toString(8), `${name}.${ext}`).toBe('600');
    }
    const env = readFileSync(join(out, 'host-alpha.env'), 'utf8');
    expect(env).toContain(`A2A_NATS_NKEY=${join(out, 'host-alpha.nk')}`);
    expect(env).toContain('A2A_NATS_INBOX_PREFIX=_INBOX_host-alpha');
    const conf = readFileSync(join(out, 'server.conf'), 'utf8');
    // alpha may take the spawns of its two agent types only; beta those of any
    expect(conf).toContain('"$JS.API.CONSUMER.CREATE.a2a_default_spawn.spawn-reviewer.a2a.default.spawn.reviewer"');
    expect(conf).toContain('"$JS.API.CONSUMER.CREATE.a2a_default_spawn.*.a2a.default.spawn.*"');
    for (const name of ['host-alpha', 'host-beta']) expect(conf).not.toContain(readFileSync(join(out, `${name}.nk`), 'utf8').trim());
    const again = capture();
    expect(await main(['nats', 'users', '--out', out, '--host', 'alpha'], again.io)).not.toBe(0);
    expect(again.err()).toMatch(/exist.*pass --force to replace them/);
    expect(await main(['nats', 'users', '--out', out, '--host', 'alpha', '--force'], capture().io)).toBe(0);
  });

  it('refuses what is not a plan, naming the flag and what is allowed', async () => {
    const out = tempDir('a2a-nats-users-bad-');
    for (const [args, message] of [
      [['--host', 'al.pha'], /--host: "al\.pha" is not an id: use letters, digits, "_" and "-"/],
      [['--host', 'alpha', '--host', 'alpha'], /--host: "alpha" is given twice/],
      [['--host', 'alpha', '--gateway', 'alpha'], /"alpha" is also a host's id/],
      [['--host', 'alpha='], /--host alpha=: name its agent types after "="/],
      [[], /give at least one host/],
      [['--host', 'alpha', '--runs', '0'], /--runs: must be an integer from 1 to 1024/],
    ] as const) {
      const c = capture();
      expect(await main(['nats', 'users', '--out', out, ...args], c.io), args.join(' ')).not.toBe(0);
      expect(c.err(), args.join(' ')).toMatch(message);
    }
  });

  it('refuses a seed file that others can read, that holds no seed, or given with a creds file, without showing it', async () => {
    const seedDir = tempDir('a2a-nats-seed-');
    const u = byName.get('host-alpha')!;
    const file = join(seedDir, 'open.nk');
    writeFileSync(file, `${u.seed}\n`, { mode: 0o644 });
    chmodSync(file, 0o644);
    const error = (options: object) => connectNats({ servers: server.url, reconnect: false, ...options }).then(() => '', (e: unknown) => String(e));
    const open = await error({ nkeyFile: file });
    expect(open).toMatch(/A2A_NATS_NKEY.*readable by other users \(mode 644\): chmod 600/);
    expect(open).not.toContain(u.seed!);
    const junk = join(seedDir, 'junk.nk');
    writeFileSync(junk, 'not a seed\n', { mode: 0o600 });
    expect(await error({ nkeyFile: junk })).toMatch(/holds no nkey user seed/);
    expect(await error({ nkeyFile: junk, credsFile: junk })).toMatch(/give one of A2A_NATS_CREDS .* and A2A_NATS_NKEY/);
    // another user's seed in the right shape: the server refuses it (no such user)
    const other = join(seedDir, 'other.nk');
    const { createUser } = await import('@nats-io/nkeys');
    writeFileSync(other, `${new TextDecoder().decode(createUser().getSeed())}\n`, { mode: 0o600 });
    expect(await error({ nkeyFile: other })).toMatch(/refused|[Aa]uthoriz/);
  });
});
