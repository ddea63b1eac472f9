/**
 * What a host reads and keeps, over the in-process transport: its heartbeats read no record
 * (liveness from the heartbeats it hears, orphans from what a silent host's last heartbeat listed),
 * a finished session's record is removed, a silent host's heartbeat leaves the bucket once its
 * sessions are taken, and a claim no heartbeat listed (its host died in between) is taken over
 * when its spawn comes back.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RunConfig } from '../../actors/config/config.js';
import { RunEventBus } from '../../actors/observation/events.js';
import { standaloneSpec } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { wireId, subjects, ensureQueues } from '../../actors/distribution/remote.js';
import { realClock } from '../../adapters/clock.js';
import { loadRegistry } from '../../adapters/config.js';
import { Host } from '../../adapters/host.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import { createMemoryTransport } from '../../adapters/transport/memory.js';
import type { KeyValue, Transport } from '../../machines/ports.js';
import type { HostHeartbeat, RunEvent, SessionRecord, SessionSpec } from '../../machines/protocol/index.js';
import { tempDir, transportWith } from '../helpers.js';

const NS = 'hr';
const s = subjects(NS);
const script = {
  rules: [
    // a part told "wait" idles until it is told to go
    { agent: 'coder', prompt: 'wait', turns: [{ text: 'ready' }], reactions: [{ when: 'go now', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'went' } }] } }] },
    { agent: 'coder', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'built' } }] }] },
  ],
};

/** The snapshots bucket of `transport`, counting the reads and listings made through it. */
function counting(transport: Transport): Transport & { reads: { get: number; keys: number } } {
  const reads = { get: 0, keys: 0 };
  return transportWith(transport, {
    reads,
    keyValue: async (bucket: string) => {
      const kv = await transport.keyValue(bucket);
      if (bucket !== s.buckets.snapshots) return kv;
      const counted: KeyValue = {
        ...kv,
        get: (k) => (reads.get++, kv.get(k)),
        keys: (p) => (reads.keys++, kv.keys(p)),
      };
      return counted;
    },
  });
}

const hosts: Host[] = [];
afterEach(async () => {
  for (const h of hosts.splice(0)) await h.stop();
});

function coderHost(transport: Transport, hostId: string, events: RunEvent[], extra: { finishedKeptMs?: number } = {}) {
  const workspace = tempDir();
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const bus = new RunEventBus(hostId, realClock);
  bus.subscribe((e) => events.push(e));
  const runtime = createRuntime({ registry, clock: realClock, events: bus, model: new ScriptedModel(parseScript(script, 'script'), realClock), catalog });
  const host = new Host({
    transport,
    ns: NS,
    hostId,
    agents: ['coder'],
    concurrency: 4,
    sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask),
    clock: realClock,
    events: bus,
    heartbeatMs: 20,
    ...extra,
  });
  hosts.push(host);
  return { host, registry };
}

function specOf(registry: ReturnType<typeof loadRegistry>, id: string): SessionSpec {
  const spec = standaloneSpec(`part ${id}`, { registry } as never, { runId: 'hr-run', config: RunConfig.parse({}), workspace: tempDir(), agent: '@coder' });
  return { ...spec, id, role: 'subtask', depth: 1, owner: { ownerType: 'agent', ownerId: 'w-x' } };
}

const beat = (hostId: string, sessions: string[], at = 1): HostHeartbeat => ({ hostId, agents: ['coder'], concurrency: 4, running: sessions.length, sessions, startedAt: 1, at, status: 'ready' });

async function waitFor(what: string, ok: () => boolean | Promise<boolean>, ms = 8_000) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a host reads no record on its heartbeats', () => {
  it('reads the snapshots bucket once at start, and never on a heartbeat, with 500 records of sessions past and elsewhere', async () => {
    const shared = createMemoryTransport();
    const events: RunEvent[] = [];
    const transport = counting(shared);
    const { host, registry } = coderHost(transport, 'reader', events);
    const kv = await shared.keyValue(s.buckets.snapshots);
    // records of a live host (its heartbeats keep coming) and finished ones, not yet past their keeping
    const live = coderHost(shared, 'busy', events).host;
    await live.start();
    for (let i = 0; i < 500; i++) {
      const spec = specOf(registry, `w-x.${i}`);
      const record: SessionRecord = { spec, host: 'busy', state: i % 2 ? 'finished' : 'running', checkpoint: null, at: Date.now() };
      await kv.put(wireId(spec), record);
    }
    await host.start();
    const atStart = { ...transport.reads };
    expect(atStart.keys).toBe(1);
    // 25 heartbeats of 20 ms
    await new Promise((r) => setTimeout(r, 500));
    expect(transport.reads).toEqual(atStart);
    expect(events.filter((e) => e.type === 'warning' && /takes over/.test(String(e.data.message)))).toEqual([]);
    await shared.close();
  });
});

describe('a silent host', () => {
  it('has what its last heartbeat listed taken over, then its heartbeat removed from the hosts bucket', async () => {
    const transport = createMemoryTransport();
    const events: RunEvent[] = [];
    const { host, registry } = coderHost(transport, 'heir', events);
    await ensureQueues(transport, NS);
    const spec = specOf(registry, 'w-x.1');
    const key = wireId(spec);
    const snapshots = await transport.keyValue(s.buckets.snapshots);
    const hostsKv = await transport.keyValue(s.buckets.hosts);
    await snapshots.put(key, { spec, host: 'ghost', state: 'running', checkpoint: null, at: Date.now() } satisfies SessionRecord);
    await hostsKv.put('ghost', beat('ghost', [key]));
    await host.start();
    // silent for 3 heartbeats (60 ms): taken over, run, and its heartbeat gone
    await waitFor('the session taken over', async () => ((await snapshots.get(key))?.value as SessionRecord | undefined)?.host === 'heir');
    await waitFor('the silent host removed', async () => (await hostsKv.get('ghost')) === null);
    expect(events.some((e) => e.type === 'host.lost' || (e.type === 'warning' && /takes over hr-run\.w-x\.1 from ghost/.test(String(e.data.message))))).toBe(true);
    await waitFor('its result', async () => ((await snapshots.get(key))?.value as SessionRecord | undefined)?.state === 'finished');
    await transport.close();
  });

  it('has a claim it never listed taken over when the spawn comes back (it died between the claim and its heartbeat)', async () => {
    const transport = createMemoryTransport();
    const events: RunEvent[] = [];
    const { host, registry } = coderHost(transport, 'heir', events);
    const spec = specOf(registry, 'w-x.2');
    const key = wireId(spec);
    const snapshots = await transport.keyValue(s.buckets.snapshots);
    await host.start();
    // claimed (after this host's start: its scan did not see it) by a host nobody ever heard of,
    // which died before listing it: its spawn, never acknowledged, comes back
    await snapshots.put(key, { spec, host: 'ghost', state: 'running', checkpoint: null, at: Date.now() } satisfies SessionRecord);
    await transport.enqueue(s.spawn('coder'), { spec, ownerProcess: 'owner', owner: { box: 'r-owner' }, requestedAt: Date.now() }, { msgId: `${key}:spawn` });
    await waitFor('the claim taken over', async () => ((await snapshots.get(key))?.value as SessionRecord | undefined)?.host === 'heir');
    await waitFor('its result', async () => ((await snapshots.get(key))?.value as SessionRecord | undefined)?.state === 'finished');
    await transport.close();
  });
});

describe('finished sessions', () => {
  it('leave no record behind once kept for finishedKeptMs, and a spawn delivered again meanwhile is not run twice', async () => {
    const transport = createMemoryTransport();
    const events: RunEvent[] = [];
    const { host, registry } = coderHost(transport, 'runner', events, { finishedKeptMs: 300 });
    await host.start();
    const spec = specOf(registry, 'w-x.3');
    const key = wireId(spec);
    const snapshots = await transport.keyValue(s.buckets.snapshots);
    const spawn = { spec, ownerProcess: 'owner', owner: { box: 'r-owner' }, requestedAt: Date.now() };
    await transport.enqueue(s.spawn('coder'), spawn, { msgId: `${key}:spawn` });
    await waitFor('its result', async () => ((await snapshots.get(key))?.value as SessionRecord | undefined)?.state === 'finished');
    // the same spawn again (a lost acknowledgement): the record says it finished
    await transport.enqueue(s.spawn('coder'), spawn, { msgId: `${key}:spawn-again` });
    await waitFor('the record removed', async () => (await snapshots.get(key)) === null, 3_000);
    expect(await snapshots.keys()).toEqual([]);
    const started = events.filter((e) => e.type === 'session.state' && e.subTaskId === 'w-x.3' && e.data.state === 'thinking');
    expect(started.length).toBeLessThanOrEqual(1);
    expect(events.filter((e) => e.type === 'model.called' && e.subTaskId === 'w-x.3')).toHaveLength(1);
    await transport.close();
  });
});

describe('mailboxes', () => {
  it('forwards a command sent to the box of a host that does not hold the session to the host that does', async () => {
    const transport = createMemoryTransport();
    const events: RunEvent[] = [];
    const a = coderHost(transport, 'box-a', events);
    const b = coderHost(transport, 'box-b', events);
    await a.host.start();
    const spec = { ...specOf(a.registry, 'w-x.7'), prompt: 'wait' };
    const key = wireId(spec);
    const snapshots = await transport.keyValue(s.buckets.snapshots);
    await transport.enqueue(s.spawn('coder'), { spec, ownerProcess: 'owner', owner: { box: 'r-owner' }, requestedAt: Date.now() }, { msgId: `${key}:spawn` });
    await waitFor('the part idle on box-a', () => events.some((e) => e.type === 'session.state' && e.subTaskId === 'w-x.7' && e.data.state === 'idle'));
    await b.host.start();
    // sent where it is not (the owner's knowledge was stale): box-b forwards it to box-a
    await transport.enqueue(s.down('h-box-b', key), { id: 'go-1', event: { type: 'MESSAGE', from: 'test', text: 'go now' } }, { msgId: 'go-1' });
    await waitFor('its result', async () => ((await snapshots.get(key))?.value as SessionRecord | undefined)?.state === 'finished');
    // and its result went to the owner's box
    const reports: string[] = [];
    await transport.consume('up', { consumer: 'up-r-owner', filter: 'a2a.hr.up.r-owner.>', ackWaitMs: 1_000, maxInFlight: 10 }, async (m) => {
      reports.push((m.data as { kind: string }).kind);
      await m.ack();
    });
    await waitFor('the reports', () => reports.includes('done'));
    expect(reports).toEqual(['started', 'done']);
    await transport.close();
  });
});
