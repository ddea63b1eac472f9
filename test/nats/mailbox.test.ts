/**
 * Mailboxes over a real nats-server: a process reads its own box of each queue through one
 * consumer made once, so remote sessions add no consumer, however many run; and a run that ends
 * and a host that stops take theirs off the server.
 */
import { createActor } from 'xstate';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfig } from '../../actors/config/config.js';
import { nullSink } from '../../actors/observation/events.js';
import { mailboxOf } from '../../actors/distribution/mailbox.js';
import { createRemoteSessionLogic, ensureQueues } from '../../actors/distribution/remote.js';
import { standaloneSpec } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { realClock } from '../../adapters/clock.js';
import { loadRegistry } from '../../adapters/config.js';
import { Host } from '../../adapters/host.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import { connectNats } from '../../adapters/transport/nats.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { startNatsServer, type NatsServer } from './server.js';

let server: NatsServer;
beforeAll(async () => {
  server = await startNatsServer();
});
afterAll(() => server?.stop());

const NS = 'mb';

async function consumers(): Promise<string[]> {
  const nc = await connect({ servers: server.url });
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for (const stream of [`a2a_${NS}_up`, `a2a_${NS}_down`]) for await (const c of jsm.consumers.list(stream)) names.push(`${stream.slice(`a2a_${NS}_`.length)}/${c.name}`);
    return names.sort();
  } finally {
    await nc.close();
  }
}

describe('mailboxes on a nats-server', () => {
  it('adds no consumer per remote session (one per process box), and the boxes leave with their processes', async () => {
    const workspace = tempDir();
    const catalog = new ToolCatalog();
    const registry = loadRegistry({ workspace, knownTools: catalog.names() });
    const script = parseScript({ rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] }] }] }, 'script');
    const runtime = createRuntime({ registry, clock: realClock, events: nullSink, model: new ScriptedModel(script, realClock), catalog });
    const hostTransport = await connectNats({ servers: server.url, namespace: NS, name: 'mb-host' });
    const ownerTransport = await connectNats({ servers: server.url, namespace: NS, name: 'mb-owner' });
    const host = new Host({ transport: hostTransport, ns: NS, hostId: 'mb-host', agents: ['coder'], concurrency: 16, sessionLogic: (role) => (role === 'worker' ? runtime.worker : runtime.subtask), clock: realClock, events: nullSink, heartbeatMs: 200 });
    try {
      await host.start();
      await ensureQueues(ownerTransport, NS);
      const logic = createRemoteSessionLogic({ transport: ownerTransport, ns: NS, process: 'run-mb', box: 'r-mb', clock: realClock, events: nullSink });
      const parent = standaloneSpec('parent', { registry } as never, { runId: 'mb', config: RunConfig.parse({}), workspace, agent: '@coder' });
      const spawnAll = (from: number, n: number) =>
        Promise.all(
          Array.from({ length: n }, (_, i) => {
            const spec: SessionSpec = { ...parent, id: `${parent.id}.${from + i}`, role: 'subtask', depth: 1, owner: { ownerType: 'agent', ownerId: parent.id } };
            const actor = createActor(logic, { input: { spec } });
            const done = new Promise<void>((resolve, reject) => actor.subscribe({ complete: () => resolve(), error: (e) => reject(e instanceof Error ? e : new Error(String(e))) }));
            actor.start();
            return done;
          }),
        );
      await spawnAll(1, 10);
      const after10 = await consumers();
      await spawnAll(11, 40);
      // the same consumers after 50 remote sessions as after 10: the process boxes only
      expect(await consumers()).toEqual(after10);
      expect(after10).toEqual(['down/down-h-mb-host', 'up/up-h-mb-host', 'up/up-r-mb']);
      // the run ended: its box leaves the server
      await mailboxOf(ownerTransport, NS, 'r-mb').stop({ remove: true });
      expect(await consumers()).toEqual(['down/down-h-mb-host', 'up/up-h-mb-host']);
      // the host stops: so do its boxes
      await host.stop();
      expect(await consumers()).toEqual([]);
    } finally {
      await host.stop();
      await hostTransport.close();
      await ownerTransport.close();
    }
  });
});
