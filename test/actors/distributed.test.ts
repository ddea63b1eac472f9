/**
 * One run across actor systems over the in-process transport: the orchestrator deploys workers to
 * hosts by agent type, a worker's sub-tasks run on another host, and updates, results and
 * permission requests cross exactly as in one process. A host that stops is replaced by another
 * that restores its sessions from their snapshots; no result is delivered twice.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RunConfig } from '../../actors/config/config.js';
import { RunEventBus } from '../../actors/observation/events.js';
import { orchestratorInput, startRun } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { realClock } from '../../adapters/clock.js';
import { loadRegistry } from '../../adapters/config.js';
import { parseEnvelope } from '../../machines/seed004.js';
import { Host } from '../../adapters/host.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import { createMemoryTransport } from '../../adapters/transport/memory.js';
import type { Transport } from '../../machines/ports.js';
import type { Plan, RunEvent } from '../../machines/protocol/index.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { tempDir } from '../helpers.js';

const script = {
  rules: [
    {
      agent: 'architect',
      depth: 0,
      turns: [
        {
          toolCalls: [
            {
              name: 'a2a_spawn_parallel_subtasks',
              arguments: { subtasks: [1, 2].map((i) => ({ agentType: '@coder', prompt: `build part ${i}`, expectedOutput: 'code' })) },
            },
          ],
        },
        { text: 'waiting for both parts' },
      ],
      reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'both parts built' } }] } }],
    },
    { agent: 'coder', turns: [{ delayMs: 50, toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'status', message: 'halfway' } }] }, { delayMs: 600, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'part built' } }] }] },
  ],
};

/**
 * A host's own connection to the shared in-process transport, which `sever()` cuts as a crash
 * would: nothing it sends arrives, nothing reaches it, and what it had not acknowledged is
 * redelivered to others after the ack wait.
 */
function connection(shared: Transport): Transport & { sever(): void } {
  let dead = false;
  const gone = () => Promise.reject(new Error('connection severed'));
  return {
    kind: shared.kind,
    sever: () => void (dead = true),
    publish: (...a) => (dead ? gone() : shared.publish(...a)),
    subscribe: (subject, handler, options) => shared.subscribe(subject, (m) => dead || handler(m), options),
    request: (...a) => (dead ? gone() : shared.request(...a)),
    respond: (...a) => (dead ? gone() : shared.respond(...a)),
    ensureQueue: (...a) => shared.ensureQueue(...a),
    enqueue: (...a) => (dead ? gone() : shared.enqueue(...a)),
    consume: (queue, options, handler) => shared.consume(queue, options, async (m) => (dead ? undefined : handler(m))),
    keyValue: async (bucket) => {
      const kv = await shared.keyValue(bucket);
      return {
        get: (k) => (dead ? gone() : kv.get(k)),
        put: (k, v) => (dead ? gone() : kv.put(k, v)),
        update: (k, v, r) => (dead ? gone() : kv.update(k, v, r)),
        delete: (k) => (dead ? gone() : kv.delete(k)),
        deleteUnder: (p) => (dead ? gone() : kv.deleteUnder(p)),
        keys: (p) => (dead ? gone() : kv.keys(p)),
      };
    },
    readKeyValue: async (bucket) => {
      const kv = await shared.readKeyValue(bucket);
      return { get: (k) => (dead ? gone() : kv.get(k)), keys: (p) => (dead ? gone() : kv.keys(p)) };
    },
    close: () => Promise.resolve(),
  };
}

const hosts: Host[] = [];
afterEach(async () => {
  for (const h of hosts.splice(0)) await h.stop();
});

function hostOn(transport: Transport, ns: string, hostId: string, agents: string[], events: RunEvent[]) {
  const workspace = tempDir();
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const bus = new RunEventBus(hostId, realClock);
  bus.subscribe((e) => events.push(e));
  const runtime = createRuntime({
    registry,
    clock: realClock,
    events: bus,
    model: new ScriptedModel(parseScript(script, 'script'), realClock),
    catalog,
    remote: { deps: { transport, ns, process: hostId, clock: realClock, events: bus }, placeRemotely: (spec) => !agents.includes(spec.agent.agentName) },
  });
  const host = new Host({
    transport,
    ns,
    hostId,
    agents,
    concurrency: 4,
    sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask),
    clock: realClock,
    events: bus,
    heartbeatMs: 100,
  });
  hosts.push(host);
  return host;
}

function orchestrator(transport: Transport, ns: string, events: RunEvent[]) {
  const workspace = tempDir();
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const bus = new RunEventBus('dist-run', realClock);
  bus.subscribe((e) => events.push(e));
  const runtime = createRuntime({
    registry,
    clock: realClock,
    events: bus,
    model: new ScriptedModel(parseScript(script, 'script'), realClock),
    catalog,
    remote: { deps: { transport, ns, process: 'orchestrator', clock: realClock, events: bus }, placeRemotely: () => true },
  });
  const plan = { id: 'p', tasks: [{ id: 'design', agent: '@architect', prompt: 'design and build it', dependsOn: [] }] } as unknown as Plan;
  const input = orchestratorInput(plan, runtime, { runId: 'dist-run', config: RunConfig.parse({}), workspace });
  return startRun(runtime, input, { clock: realClock });
}

async function waitFor(what: string, ok: () => boolean, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a run across actor systems (in-process transport)', () => {
  it('deploys the worker to the host serving its agent type, and its sub-tasks to another', async () => {
    const transport = createMemoryTransport();
    const hostEvents: RunEvent[] = [];
    const events: RunEvent[] = [];
    const registrations: unknown[] = [];
    await transport.subscribe('a2a.test.hosts.*.registration', (m) => registrations.push(m.data));
    await hostOn(transport, 'test', 'host-a', ['architect'], hostEvents).start();
    await hostOn(transport, 'test', 'host-b', ['coder'], hostEvents).start();
    // each host registered in seed 004's envelope: its agent types and capacity
    const parsed = registrations.map((r) => parseEnvelope(r));
    expect(parsed.map((p) => (p.ok && p.message.message_type === 'registration' ? [p.message.sender_id, p.message.payload.capabilities, p.message.payload.max_concurrent_tasks] : p))).toEqual([
      ['host-a', ['architect'], 4],
      ['host-b', ['coder'], 4],
    ]);
    const run = orchestrator(transport, 'test', events);
    const summary: RunSummary = await run.done;
    expect(summary.status).toBe('completed');
    expect(summary.tasks[0]!.result!.output).toBe('both parts built');
    expect(events.filter((e) => e.type === 'subtask.placed').map((e) => [e.subTaskId, e.data.host])).toEqual([['w-design', 'host-a']]);
    const placedOnB = hostEvents.filter((e) => e.type === 'subtask.placed' && e.data.host === 'host-b').map((e) => e.subTaskId).sort();
    expect(placedOnB).toEqual(['w-design.1', 'w-design.2']);
    // the status update of a sub-task reached the worker across both hops
    expect(hostEvents.some((e) => e.type === 'update.queued' && e.data.message === 'halfway')).toBe(true);
    await transport.close();
  });
});

describe('host ids', () => {
  it('should refuse a host id that cannot name subjects and keys, saying what is allowed', () => {
    expect(() => hostOn(createMemoryTransport(), 'test', 'bad.id', ['coder'], [])).toThrow(/host id "bad\.id" is not allowed: use 1 to 128 letters, digits, "_" and "-"/);
  });
});

describe('failover', () => {
  it('restores the sessions of a host that died on another host; the run completes with one result per session', async () => {
    const transport = createMemoryTransport();
    const hostEvents: RunEvent[] = [];
    const events: RunEvent[] = [];
    const linkA = connection(transport);
    const a = hostOn(linkA, 'fo', 'host-a', ['architect'], hostEvents);
    await a.start();
    await hostOn(transport, 'fo', 'host-b', ['coder'], hostEvents).start();
    const run = orchestrator(transport, 'fo', events);
    // the worker runs on host-a and has spawned its parts on host-b: host-a dies
    await waitFor('the parts placed on host-b', () => hostEvents.filter((e) => e.type === 'subtask.placed' && e.data.host === 'host-b').length === 2);
    await new Promise((r) => setTimeout(r, 150)); // its snapshot holds the spawns
    linkA.sever();
    await a.kill();
    const c = hostOn(transport, 'fo', 'host-c', ['architect'], hostEvents);
    await c.start();
    const summary: RunSummary = await run.done;
    expect(summary.status).toBe('completed');
    expect(summary.tasks[0]!.result!.output).toBe('both parts built');
    expect(hostEvents.some((e) => e.type === 'session.restored' && e.subTaskId === 'w-design' && e.data.host === 'host-c')).toBe(true);
    // one result per session, wherever it ran
    const results = [...events, ...hostEvents].filter((e) => e.type === 'subtask.result');
    for (const id of ['w-design', 'w-design.1', 'w-design.2']) expect(results.filter((e) => e.subTaskId === id && !String(e.data.how).includes('ignored'))).toHaveLength(1);
    expect([...events, ...hostEvents].filter((e) => e.type === 'warning' && String(e.data.message).startsWith('second result'))).toEqual([]);
    await transport.close();
  });
});
