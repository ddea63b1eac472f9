import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { connectInspector, startInspectorServer } from '../../adapters/inspector.js';
import { main } from '../../bin/cli.js';
import { tempDir } from '../helpers.js';

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

describe('Stately inspector', () => {
  it('should stream the run to a receiver: actors with parents that mirror the sub-task tree, events, snapshots', async () => {
    const server = await startInspectorServer({ port: 0 });
    const received: Received[] = [];
    const receiver = new WebSocket(server.wsUrl);
    receiver.on('message', (data) => received.push(JSON.parse(data.toString()) as Received));
    await new Promise((r) => receiver.once('open', r));

    let err = '';
    const io = { stdout: { write: () => true } as unknown as NodeJS.WritableStream, stderr: { write: (s: string) => ((err += s), true) } as unknown as NodeJS.WritableStream };
    const code = await main(['run', join(root, 'examples/oauth'), '--inspect', server.wsUrl, '--workspace', tempDir()], io);
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
  });

  it('should say so and go on when no inspector answers', async () => {
    expect(await connectInspector('ws://127.0.0.1:9', 300)).toBeNull();
  });
});
