import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { connectInspector, startInspectorServer } from '../../adapters/inspector.js';
import { main } from '../../bin/cli.js';
import { writeFileSync } from 'node:fs';
import { capture, complete, tempDir } from '../helpers.js';

const root = resolve(import.meta.dirname, '..', '..');

interface Received {
  type: string;
  sessionId: string;
  parentId?: string;
  name?: string;
  snapshot?: { value?: unknown; status?: string };
  event?: { type: string };
  sourceId?: string;
}

/** Polls `done` every 20 ms for up to 8 s (the run's own events are what it waits on). */
async function waitUntil(done: () => boolean): Promise<void> {
  for (let waited = 0; !done(); waited += 20) {
    if (waited > 8_000) throw new Error('condition not reached within 8 s');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A relay on `port` and a browser-side receiver on it. */
async function relay(port: number) {
  const server = await startInspectorServer({ port });
  const received: Received[] = [];
  const receiver = new WebSocket(server.wsUrl);
  receiver.on('message', (data) => received.push(JSON.parse(data.toString()) as Received));
  await new Promise((r) => receiver.once('open', r));
  const actors = () => received.filter((e) => e.type === '@xstate.actor');
  return {
    names: () => actors().map((a) => a.name!),
    lastStatus: (name: string) => {
      const id = actors().find((a) => a.name === name)?.sessionId;
      return received.filter((e) => e.type === '@xstate.snapshot' && e.sessionId === id).at(-1)?.snapshot?.status;
    },
    close: async () => {
      receiver.close();
      await server.close();
    },
  };
}

describe('Stately inspector', () => {
  it('should stream the run to a receiver: actors with parents that mirror the sub-task tree, events, snapshots', async () => {
    const server = await startInspectorServer({ port: 0 });
    const received: Received[] = [];
    const receiver = new WebSocket(server.wsUrl);
    receiver.on('message', (data) => received.push(JSON.parse(data.toString()) as Received));
    await new Promise((r) => receiver.once('open', r));

    let err = '';
    const io = { stdout: { write: () => true } as unknown as NodeJS.WritableStream, stderr: { write: (s: string) => ((err += s), true) } as unknown as NodeJS.WritableStream };
    const code = await main(['run', join(root, 'examples/oauth'), '--inspect', server.wsUrl, '--workspace', tempDir(), '--run-id', 'insp-1'], io);
    expect(code).toBe(0);
    expect(err).toContain(`inspector: sending the run to ${server.wsUrl}`);
    let before = -1;
    while (received.length !== before) {
      before = received.length;
      await new Promise((r) => setTimeout(r, 150));
    }
    receiver.close();
    await server.close();

    const actors = received.filter((e) => e.type === '@xstate.actor');
    // ids are the run's own: XState numbers actors per process, and runs share a relay
    expect(received.every((e) => e.sessionId.startsWith('insp-1/') && (e.parentId === undefined || e.parentId.startsWith('insp-1/')))).toBe(true);
    const byName = (name: string) => actors.find((a) => a.name === name)!;
    const bySession = new Map(actors.map((a) => [a.sessionId, a]));
    const lineage = (name: string) => {
      const names: string[] = [];
      for (let a: Received | undefined = byName(name); a; a = a.parentId ? bySession.get(a.parentId) : undefined) names.push(a.name!);
      return names.reverse().join(' > ');
    };
    expect(lineage('w-design')).toBe('orchestrator > workers > w-design');
    for (const st of ['w-design.1', 'w-design.2', 'w-design.3']) expect(lineage(st)).toBe(`orchestrator > workers > w-design > subtasks > ${st}`);
    // the agent loop runs in each session's own actor: its steps' replies are events to the session
    expect(actors.filter((a) => a.name === 'agentLoop')).toEqual([]);
    expect(lineage('idleInquiry')).toMatch(/> w-design\.2 > idleInquiry$/); // only the idle frontend needed a watchdog

    // snapshots follow the run: the worker thinks, waits for its children, and ends completed
    const worker = byName('w-design').sessionId;
    const states = received.filter((e) => e.type === '@xstate.snapshot' && e.sessionId === worker).map((e) => JSON.stringify(e.snapshot!.value));
    expect(states[0]).toBe('{"running":"thinking"}');
    expect(states).toContain('{"running":"awaitingUpdates"}');
    expect(states.at(-1)).toBe('"completed"');
    const replies = received.filter((e) => e.type === '@xstate.event' && e.sessionId === worker && e.event!.type === 'MODEL_REPLIED');
    expect(replies.length).toBeGreaterThanOrEqual(2);
    // events between actors carry their source: a child's result reaches the subtasks supervisor
    const subtasks = byName('subtasks').sessionId;
    const done = received.filter((e) => e.type === '@xstate.event' && e.sessionId === subtasks && e.event!.type.startsWith('xstate.done.actor.'));
    expect(done.map((e) => bySession.get(e.sourceId!)?.name).sort()).toEqual(['w-design.1', 'w-design.2', 'w-design.3']);

    // when the run has ended, no actor is shown running: charts, supervisors, inbox and gate alike
    const last = new Map<string, string>();
    for (const e of received) if (e.type === '@xstate.snapshot') last.set(e.sessionId, String(e.snapshot?.status));
    const stillActive = [...last].filter(([, status]) => status === 'active').map(([id]) => bySession.get(id)?.name ?? id);
    expect(stillActive).toEqual([]);
    for (const name of ['workers', 'subtasks', 'inbox', 'humanGate']) expect(last.get(byName(name).sessionId), name).toBe('stopped');
  });

  it('should send the whole tree to a relay started after the run, and again to one restarted during it', async () => {
    const probe = await startInspectorServer({ port: 0 });
    const port = Number(new URL(probe.wsUrl).port);
    await probe.close(); // nothing listens there when the run starts
    const ws = tempDir();
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'late', tasks: [{ id: 't', agent: '@coder', prompt: 'take your time' }] }));
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [{ agent: 'coder', turns: [complete('done', 2_000)] }] }));
    const io = capture();
    const running = main(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--inspect', `ws://127.0.0.1:${port}`, '--workspace', ws, '--run-id', 'late-1', '--no-tree'], io.io);
    await waitUntil(() => io.err().includes('nothing answers'));
    expect(io.err()).toContain('the run goes on, and sends it the whole tree once it answers');

    // a relay started late gets the actors created before it existed
    const first = await relay(port);
    await waitUntil(() => first.names().includes('w-t'));
    await first.close();
    // a relay restarted during the run gets the tree again, and what follows
    const second = await relay(port);
    expect(await running).toBe(0);
    await waitUntil(() => second.names().includes('w-t') && second.lastStatus('w-t') === 'done');
    expect(second.names()).toEqual(expect.arrayContaining(['orchestrator', 'workers', 'inbox', 'humanGate', 'w-t']));
    await second.close();
  });

  it('should say so and go on when no inspector answers, and stop trying when closed', async () => {
    const connection = await connectInspector('ws://127.0.0.1:9', { runId: 'r', timeoutMs: 300 });
    expect(connection.connected).toBe(false);
    await connection.close();
  });
});
