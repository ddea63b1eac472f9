/**
 * Hostile input to every subject a host, a gateway and a run listen on, and to their KV buckets
 * and control directory, while a run is in progress across them: more than 5,000 invalid messages
 * generated from the protocol's schemas (not JSON, wrong types, missing and unknown fields, 900 kB
 * strings, nesting thousands of levels deep, `__proto__` keys), messages of the right shape about
 * sessions, requests and hosts that do not exist or do not hold them, and replays. Asserted: no
 * process crashes (they run as real processes, with a small heap), nothing changes (the run then
 * finishes exactly as it would have, each session with one result and no extra model call), each
 * message gets a warning or an error reply, and the processes' memory does not stay grown.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileRunStore } from '../../adapters/store/file.js';
import { ControlRequest, DownMessage, HostHeartbeat, RemoteSpawn, RunEvent, SessionRecord, UpMessage, type RunEvent as RunEventT, type SessionSpec } from '../../machines/protocol/index.js';
import { envelopeOf, parseEnvelope } from '../../machines/seed004.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { a2aHost, a2aProcess, architectSplitting, killAll, served, waitFor, type Proc } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { tempDir } from '../helpers.js';
import { faultSeed, printTable, seeded, tally } from './harness.js';
import { invalidVariants, type Payload } from './invalid.js';

const SEED = faultSeed(5000);
const RUN = 'fz';
const NS = 'default';
/** A small heap (growth without bound would crash them), and collections before each heartbeat's memory figure. */
const SMALL_HEAP = { ...process.env, NODE_OPTIONS: '--max-old-space-size=96 --expose-gc' };
/**
 * The hosts' heartbeat: 1 s (a host is taken for dead after 3 s). Not the tests' 200 ms: a storm
 * beside the rest of the suite on 2 cores can hold a host's event loop longer than 600 ms, and a
 * host started then would take the idle parts over from one only slow (on CI, once).
 */
const HOSTS = { env: SMALL_HEAP, heartbeatMs: 1_000 };

let server: NatsServer;
let nc: NatsConnection;
let ws: string;
const procs: Record<string, Proc> = {};
/** Warnings and error replies heard, with what they are about. */
const heard: Array<{ subject: string; origin: string; about: string; message: string }> = [];
const memory = new Map<string, Array<{ at: number; heapUsed: number }>>();
const rows: Array<{ target: string; sent: number; answered: number; ms?: number }> = [];
let spec: SessionSpec;
/** The run's box (a slot of the boxes bucket), as its sessions' specs name it. */
const runBox = () => {
  const box = spec.correlation.runBox;
  if (!box || !/^rs\d+$/.test(box)) throw new Error(`the run's sessions name no run box slot (correlation.runBox: ${String(box)})`);
  return box;
};

const enc = new TextEncoder();
function send(subject: string, payload: Payload): void {
  nc.publish(subject, 'raw' in payload ? enc.encode(payload.raw) : enc.encode(JSON.stringify(payload.data)));
}

function count(filter: (h: (typeof heard)[number]) => boolean): number {
  return heard.filter(filter).length;
}

/**
 * How long a storm's answers may take to arrive. Not the test's measure (the answers are: one per
 * message, none lost): a host answers 200-400 refusals a second on a quiet 2-core machine, and
 * beside the rest of the suite and a CPU hog 80 a second, all of them arriving in the end.
 */
const ANSWERS_MS = 45_000;
/** A test's limit: its storm's answers, with room for the storm to be sent. */
const STORM_MS = 60_000;

async function answeredAll(target: string, sent: number, filter: (h: (typeof heard)[number]) => boolean, before: number): Promise<void> {
  const started = Date.now();
  await waitFor(`${sent} warnings or errors for ${target}`, () => count(filter) - before >= sent, ANSWERS_MS, () => `heard ${count(filter) - before} of ${sent}${diagnosis()}`);
  rows.push({ target, sent, answered: count(filter) - before, ms: Date.now() - started });
}

beforeAll(async () => {
  server = await startNatsServer();
  ws = tempDir('a2a-fuzz-');
  writeFileSync(
    join(ws, 'plan.json'),
    JSON.stringify({ id: 'fuzz', config: { idle: { idleThresholdMs: 600_000 } }, tasks: [{ id: 'design', agent: '@architect', prompt: 'design and build it' }] }),
  );
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        architectSplitting(2),
        // a part waits, idle, until it is told to go: the fuzz runs while it waits
        { agent: 'coder', turns: [{ text: 'ready' }], reactions: [{ when: 'go now', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'part built' } }] } }] },
      ],
    }),
  );
  nc = await connect({ servers: server.url });
  const listen = (subject: string, pick: (data: Record<string, unknown>, subject: string) => (typeof heard)[number] | null) => {
    const sub = nc.subscribe(subject);
    void (async () => {
      for await (const m of sub) {
        let data: Record<string, unknown>;
        try {
          data = JSON.parse(new TextDecoder().decode(m.data)) as Record<string, unknown>;
        } catch {
          continue;
        }
        if (!data || typeof data !== 'object') continue;
        const h = pick(data, m.subject);
        if (h) heard.push(h);
      }
    })();
  };
  const warning = (data: Record<string, unknown>, subject: string) =>
    data.type === 'warning' ? { subject, origin: String(data.origin), about: String(data.subTaskId ?? ''), message: String((data.data as { message?: unknown })?.message ?? '') } : null;
  listen(`a2a.${NS}.events.>`, warning);
  listen(`a2a.${NS}.hostevents.>`, warning);
  listen(`a2a.${NS}.swarm.agent.>`, (data, subject) => (data.message_type === 'error' ? { subject, origin: 'gateway', about: String(data.recipient_id), message: String((data.payload as { error_code?: unknown })?.error_code) } : null));
  listen(`a2a.${NS}.hosts.*.heartbeat`, (data) => {
    const beat = HostHeartbeat.safeParse(data);
    if (beat.success && beat.data.memory) memory.set(beat.data.hostId, [...(memory.get(beat.data.hostId) ?? []), { at: Date.now(), heapUsed: beat.data.memory.heapUsed }]);
    return null;
  });

  procs.arch = a2aHost(server.url, ws, 'arch', 'architect', HOSTS);
  procs.coder = a2aHost(server.url, ws, 'coder', 'coder', HOSTS);
  procs.gateway = a2aProcess(['gateway', '--nats', server.url, '--serve', 'reviewer=review_agent', '--id', 'gw'], ws, SMALL_HEAP);
  await Promise.all([served(procs.arch), served(procs.coder), waitFor('the gateway', () => procs.gateway!.out().includes(' serves '), 20_000, procs.gateway!.out)]);
  procs.run = a2aProcess(['run', 'plan.json', '--nats', server.url, '--script', 'script.json', '--run-id', RUN, '--no-tree'], ws, SMALL_HEAP);
  // both parts idle on the coder host: the run is in the middle, and stays there until told
  const idle = (id: string) => () => new FileRunStore(ws).events(RUN).some((e) => e.type === 'session.state' && e.subTaskId === id && e.data.state === 'idle');
  await waitFor('part 1 idle', idle('w-design.1'), 20_000, procs.run.out);
  await waitFor('part 2 idle', idle('w-design.2'), 20_000, procs.run.out);
  // a real session record, the base of the spawn and record variants
  const bucket = await new Kvm(jetstream(nc)).open(`a2a_${NS}_snapshots`);
  const record = await bucket.get(`${RUN}.w-design.1`);
  spec = SessionRecord.parse(JSON.parse(new TextDecoder().decode(record!.value))).spec;
}, 60_000);

afterAll(async () => {
  killAll();
  await nc?.close();
  await server?.stop();
  const sent = rows.reduce((n, r) => n + r.sent, 0);
  printTable([
    { fault: 'fuzz: invalid messages to every subject, bucket and control dir', trials: sent, passed: rows.reduce((n, r) => n + Math.min(r.sent, r.answered), 0), lost: 0, duplicated: 0, figure: rows.map((r) => `${r.target} ${r.answered}/${r.sent}${r.ms === undefined ? '' : ` in ${r.ms} ms`}`).join('; ') },
  ]);
});

/** What a storm that went unanswered finds: a process that exited, else the run's last output. */
const diagnosis = () => {
  const exited = alive();
  return exited.length ? `; exited: ${exited.join('\n')}` : `; the run's last output:\n${procs.run?.out().slice(-1_500) ?? '(none)'}`;
};
const alive = () => Object.entries(procs).filter(([, p]) => p.child.exitCode !== null).map(([name, p]) => `${name} exited ${p.child.exitCode}:\n${p.out().slice(-2000)}`);

describe('fault: hostile messages to a run in progress', () => {
  it('turns away 900 invalid spawn requests (the spawn queue of a host), each with a warning', async () => {
    const random = seeded(SEED);
    const valid: RemoteSpawn = { spec: { ...spec, id: 'w-design.99' }, ownerProcess: 'fuzz', owner: { box: 'r-fuzz' }, requestedAt: 1 };
    const variants = invalidVariants(valid, (v) => RemoteSpawn.safeParse(v).success, random, 880);
    // of the right shape, for an agent the queue's host does not serve
    for (let i = 0; i < 20; i++) variants.push({ data: { ...valid, spec: { ...valid.spec, id: `w-design.${100 + i}`, agent: { raw: '@architect', backend: 'default', agentName: 'architect' } } } });
    const before = count((h) => h.origin === 'coder' && /spawn request/.test(h.message));
    for (const v of variants) send(`a2a.${NS}.spawn.coder`, v);
    await answeredAll('spawn', variants.length, (h) => h.origin === 'coder' && /spawn request/.test(h.message), before);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('turns away 1,000 invalid, stale and replayed messages to a session on a host, each with a warning', async () => {
    const random = seeded(SEED + 1);
    const subject = `a2a.${NS}.down.h-coder.${RUN}.w-design.1`;
    const valid = { id: 'fuzz-down', event: { type: 'MESSAGE', from: 'fuzz', text: 'hello' } };
    const variants = invalidVariants(valid, (v) => DownMessage.safeParse(v).success, random, 850);
    // the right shape, about what does not exist: a decision on a request never made, an agent
    // type the host lacks, a resume of a session that is not paused; then each sent again
    for (let i = 0; i < 50; i++) {
      const stale = [
        { id: `stale-${i}-a`, event: { type: 'PERMISSION_DECIDED', decision: { requestId: `w-design.1:perm:${i}`, approved: true, decidedBy: 'human', decider: 'mallory' } } },
        { id: `stale-${i}-b`, event: { type: 'REASSIGN', agent: { raw: '@wizard', backend: 'default', agentName: 'wizard' }, by: 'mallory' } },
        { id: `stale-${i}-c`, event: { type: 'RESUME', by: 'mallory' } },
      ][i % 3]!;
      variants.push({ data: stale }, { data: stale }, { data: stale });
    }
    const about = (h: (typeof heard)[number]) => h.origin === 'coder' && h.about === 'w-design.1' && /^dropped /.test(h.message);
    const before = count(about);
    for (const v of variants) send(subject, v);
    await answeredAll('down', variants.length, about, before);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('turns away 800 invalid or forged reports to a sub-task\'s owner on a host, each with a warning', async () => {
    const random = seeded(SEED + 2);
    const variants: Array<{ subject: string; payload: Payload }> = [];
    const holder = `a2a.${NS}.up.h-arch.coder.${RUN}.w-design.1`;
    for (const p of invalidVariants({ kind: 'event', event: { type: 'SUBTASK_UPDATE', update: { id: 'u', type: 'progress', subTaskId: 'w-design.1', parentId: 'w-design', agentType: '@coder', timestamp: 1 } } }, (v) => UpMessage.safeParse(v).success, random, 600)) {
      variants.push({ subject: holder, payload: p });
    }
    for (let i = 0; i < 100; i++) {
      // a result from a host that does not hold the session, and one about another session
      variants.push({ subject: `a2a.${NS}.up.h-arch.mallory.${RUN}.w-design.1`, payload: { data: { kind: 'done', output: { taskId: 'w-design.1', status: 'success', output: 'forged' } } } });
      variants.push({ subject: holder, payload: { data: { kind: 'event', event: { type: 'SUBTASK_UPDATE', update: { id: `u${i}`, type: 'completed', subTaskId: 'w-design.2', parentId: 'w-design', agentType: '@coder', timestamp: 1 } } } } });
    }
    const about = (h: (typeof heard)[number]) => h.origin === 'arch' && h.about === 'w-design.1' && /^refused a report/.test(h.message);
    const before = count(about);
    for (const v of variants) send(v.subject, v.payload);
    await answeredAll('up (host)', variants.length, about, before);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('turns away 600 invalid or forged reports to the run about its worker, each with a warning', async () => {
    const random = seeded(SEED + 3);
    const variants: Array<{ subject: string; payload: Payload }> = [];
    for (const p of invalidVariants({ kind: 'done', output: { taskId: 'w-design', status: 'success', output: 'x' } }, (v) => UpMessage.safeParse(v).success, random, 500)) {
      variants.push({ subject: `a2a.${NS}.up.${runBox()}.arch.${RUN}.w-design`, payload: p });
    }
    for (let i = 0; i < 100; i++) variants.push({ subject: `a2a.${NS}.up.${runBox()}.mallory.${RUN}.w-design`, payload: { data: { kind: 'started', host: 'mallory', restored: true } } });
    const about = (h: (typeof heard)[number]) => h.origin === `run-${RUN}` && h.about === 'w-design' && /^refused a report/.test(h.message);
    const before = count(about);
    for (const v of variants) send(v.subject, v.payload);
    await answeredAll('up (run)', variants.length, about, before);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('turns away 600 invalid host events sent to the run, each with a warning', async () => {
    const random = seeded(SEED + 4);
    const valid: RunEventT & { origin: string } = { id: 'x', type: 'session.state', runId: RUN, seq: 1, ts: 1, subTaskId: 'w-design.1', data: { state: 'idle' }, origin: 'coder' };
    const variants = invalidVariants(valid, (v) => RunEvent.safeParse(v).success && (v as { runId?: unknown }).runId === RUN && typeof (v as { origin?: unknown }).origin === 'string', random, 550);
    for (let i = 0; i < 50; i++) variants.push({ data: { ...valid, id: `other-${i}`, runId: 'another-run' } });
    const about = (h: (typeof heard)[number]) => h.origin === `run-${RUN}` && /^dropped an invalid event from a host/.test(h.message);
    const before = count(about);
    for (const v of variants) send(`a2a.${NS}.hostevents.${runBox()}.${RUN}.session.state`, v);
    await answeredAll('host events', variants.length, about, before);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('answers 800 invalid or unverifiable seed 004 messages to the gateway with an error', async () => {
    const random = seeded(SEED + 5);
    const valid = envelopeOf('heartbeat', { messageId: 'm', senderId: 'eve', recipientId: 'orchestrator', at: Date.now() }, { agent_id: 'eve', status: 'idle', current_tasks: 0, available_capacity: 1 } as never);
    const variants = invalidVariants(valid, (v) => parseEnvelope(v).ok, random, 700);
    // well formed, but from an agent that never registered
    for (let i = 0; i < 100; i++) variants.push({ data: { ...valid, message_id: `m-${i}` } });
    const about = (h: (typeof heard)[number]) => h.origin === 'gateway' && h.about === 'eve';
    const before = count(about);
    for (const v of variants) send(`a2a.${NS}.swarm.orchestrator.messages.eve`, v);
    await answeredAll('gateway', variants.length, about, before);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('skips 200 invalid records in the snapshots and hosts buckets and 100 invalid heartbeats, each named in a warning, and adopts nothing', async () => {
    const random = seeded(SEED + 6);
    const records = invalidVariants({ spec, host: 'gone', state: 'released', checkpoint: null, at: 1 }, (v) => SessionRecord.safeParse(v).success, random, 100, { bigStrings: 0 });
    const beats = invalidVariants({ hostId: 'ghost', agents: ['coder'], concurrency: 1, running: 0, sessions: [], startedAt: 1, at: 1, status: 'ready' }, (v) => HostHeartbeat.safeParse(v).success, random, 100, { bigStrings: 0 });
    const named = (pattern: RegExp) => new Set(heard.map((h) => pattern.exec(h.message)?.[1]).filter((key): key is string => key !== undefined));
    const warned = (bucket: string) => () => named(new RegExp(`skipped the invalid record "(.*?)" of the ${bucket} bucket`));
    const beatsWarned = () => named(/skipped an invalid heartbeat on a2a\.\w+\.hosts\.(ghost-\d+)\.heartbeat/);
    // the running hosts hear every heartbeat: each invalid one is named
    beats.forEach((b, i) => send(`a2a.${NS}.hosts.ghost-${i}.heartbeat`, b));
    await waitFor('a warning for every invalid heartbeat', () => beatsWarned().size >= 100, ANSWERS_MS, () => `${beatsWarned().size} of 100`);
    // records are read by a host when it starts (running hosts read none on their heartbeats)
    records.forEach((r, i) => send(`$KV.a2a_${NS}_snapshots.${RUN}.w-junk.${i}`, r));
    beats.forEach((b, i) => send(`$KV.a2a_${NS}_hosts.ghost-${i}`, b));
    const late = a2aHost(server.url, ws, 'late', 'coder', HOSTS);
    try {
      await served(late);
      const both = () => warned('snapshots')().size + warned('hosts')().size;
      await waitFor('a warning for every invalid record', () => both() >= 200, ANSWERS_MS, () => `${both()} of 200`);
      rows.push({ target: 'KV records and heartbeats', sent: 300, answered: both() + beatsWarned().size });
      expect(heard.filter((h) => /takes over/.test(h.message))).toEqual([]);
    } finally {
      late.child.kill('SIGTERM');
      await waitFor('the late host to stop', () => late.child.exitCode !== null || late.child.signalCode !== null, 20_000, late.out);
    }
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('answers 300 invalid control requests with an error each, and does nothing they ask', async () => {
    const random = seeded(SEED + 7);
    const dir = new FileRunStore(ws).controlDir(RUN);
    const variants = invalidVariants({ command: 'redirect', taskId: 'design', instructions: 'do something else', by: 'mallory' }, (v) => ControlRequest.safeParse(v).success, random, 280);
    // well formed, about what does not exist
    for (let i = 0; i < 20; i++) variants.push({ data: { command: 'reassign', taskId: `ghost-${i}`, agent: '@coder', by: 'mallory' } });
    variants.forEach((v, i) => writeFileSync(join(dir, `req-fuzz-${String(i).padStart(4, '0')}.json`), 'raw' in v ? v.raw : JSON.stringify(v.data)));
    // a reply being written is `res-….json.tmp` until its rename: only finished replies count
    const replies = () => readdirSync(dir).filter((n) => n.startsWith('res-fuzz-') && n.endsWith('.json'));
    await waitFor('a reply to every request', () => replies().length >= variants.length, ANSWERS_MS, () => `${replies().length} of ${variants.length}${diagnosis()}`);
    const refused = replies().filter((n) => (JSON.parse(readFileSync(join(dir, n), 'utf8')) as { ok: boolean }).ok === false).length;
    rows.push({ target: 'control', sent: variants.length, answered: refused });
    expect(refused).toBe(variants.length);
    expect(alive()).toEqual([]);
  }, STORM_MS);

  it('keeps every process up and its memory where it was, then finishes the run as if nothing had happened', async () => {
    expect(rows.reduce((n, r) => n + r.sent, 0)).toBeGreaterThanOrEqual(5_000);
    // memory: what the hosts report in their heartbeats, a few beats after the storm, against before it
    const settle = Date.now();
    await waitFor('heartbeats after the storm', () => ['coder', 'arch', 'gw'].every((h) => (memory.get(h) ?? []).some((m) => m.at > settle + 1_000)), 30_000);
    for (const host of ['coder', 'arch', 'gw']) {
      const series = memory.get(host)!;
      const first = series[0]!.heapUsed;
      const last = series.at(-1)!.heapUsed;
      rows.push({ target: `heap ${host} MB ${(first / 2 ** 20).toFixed(1)}→${(last / 2 ** 20).toFixed(1)}`, sent: 0, answered: 0 });
      expect(last - first, `${host}: ${first} → ${last}`).toBeLessThan(8 * 2 ** 20);
    }
    expect(alive()).toEqual([]);
    // now tell the parts to go: the run ends as it would have without the storm
    for (const id of ['w-design.1', 'w-design.2']) {
      send(`a2a.${NS}.down.h-coder.${RUN}.${id}`, { data: { id: `go-${id}`, event: { type: 'MESSAGE', from: 'test', text: 'go now' } } });
    }
    expect(await procs.run!.exited, procs.run!.out().slice(-3000)).toBe(0);
    const store = new FileRunStore(ws);
    expect((store.read(RUN).summary as RunSummary).tasks.map((t) => t.result?.output)).toEqual(['all parts built']);
    expect(tally(ws, RUN, ['w-design', 'w-design.1', 'w-design.2'])).toEqual({ lost: [], duplicated: [] });
    const events = store.events(RUN);
    // nothing the storm carried reached a session: each part made its two model calls, no more
    for (const id of ['w-design.1', 'w-design.2']) expect(events.filter((e) => e.type === 'model.called' && e.subTaskId === id), id).toHaveLength(2);
    expect(events.filter((e) => e.type === 'subtask.placed').map((e) => e.subTaskId).sort()).toEqual(['w-design', 'w-design.1', 'w-design.2']);
    expect(events.some((e) => /forged|mallory|polluted/.test(JSON.stringify(e.data)) && e.type !== 'warning')).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  }, STORM_MS);
});
