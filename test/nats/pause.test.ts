/**
 * `a2a pause` of a run whose agents run on hosts: the hosts follow the run's pause (published,
 * and kept in the `pauses` bucket for a host that starts later), so that the agents there finish
 * their current model call and wait, until `a2a resume`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aHost, capture, killAll, served, waitFor } from './cluster.js';
import { startNatsServer, type NatsServer } from './server.js';
import { tempDir } from '../helpers.js';

let server: NatsServer | null = null;
afterEach(async () => {
  killAll();
  await server?.stop();
  server = null;
});

/** One architect task whose agent takes `turns` turns of 100 ms, then completes. */
function slowWorkspace(turns: number): string {
  const ws = tempDir('a2a-nats-pause-');
  writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'slow', tasks: [{ id: 't1', agent: '@architect', prompt: 'think slowly' }] }));
  const think = { delayMs: 100, toolCalls: [{ name: 'a2a_list_agents', arguments: {} }] };
  writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [{ agent: 'architect', turns: [...Array(turns).fill(think), { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'thought' } }] }] }] }));
  return ws;
}

const events = (ws: string, runId: string): RunEvent[] => {
  try {
    return new FileRunStore(ws).events(runId);
  } catch {
    return [];
  }
};
const calls = (list: RunEvent[]) => list.filter((e) => e.type === 'model.called' && e.subTaskId === 'w-t1').length;

describe('a2a pause over NATS', () => {
  it("should make the run's agents on a host wait after their current model call, until a2a resume", async () => {
    server = await startNatsServer();
    const ws = slowWorkspace(8);
    const host = a2aHost(server.url, ws, 'thinker', 'architect');
    await served(host);
    const c = capture();
    const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'np', '--no-tree'], c.io);
    await waitFor('the first model call on the host', () => calls(events(ws, 'np')) >= 1, 8_000, c.out);
    const ctl = capture();
    expect(await main(['pause', 'np', '--workspace', ws], ctl.io), ctl.err()).toBe(0);
    // a while paused: at most the call in flight finishes (the log says what happened meanwhile)
    await new Promise((r) => setTimeout(r, 700));
    expect(await main(['resume', 'np', '--workspace', ws], ctl.io), ctl.err()).toBe(0);
    expect(await running, c.out() + c.err()).toBe(0);
    const list = events(ws, 'np');
    const from = list.findIndex((e) => e.type === 'run.paused');
    const to = list.findIndex((e) => e.type === 'run.unpaused');
    expect(from).toBeGreaterThan(0);
    // the call in flight, and one whose event was still being relayed: without the hosts' gate,
    // the 700 ms would have held about 7 calls of 100 ms
    expect(calls(list.slice(from, to))).toBeLessThanOrEqual(2);
    expect(calls(list)).toBe(9);
  }, 15_000);

  it('should hold a host that starts while the run is paused (the pauses bucket), until a2a resume', async () => {
    server = await startNatsServer();
    const ws = slowWorkspace(1);
    const c = capture();
    // no host yet: the worker's spawn waits in the queue
    const running = main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'np2', '--no-tree'], c.io);
    await waitFor('the run', () => events(ws, 'np2').some((e) => e.type === 'run.started'), 8_000, c.out);
    const ctl = capture();
    await waitFor('the control channel', () => new FileRunStore(ws).read('np2').status === 'running', 8_000);
    let paused = 1;
    for (let i = 0; i < 40 && paused !== 0; i++) {
      paused = await main(['pause', 'np2', '--workspace', ws], ctl.io);
      if (paused !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(paused, ctl.err()).toBe(0);
    const host = a2aHost(server.url, ws, 'late', 'architect');
    await served(host);
    await waitFor('the worker placed on the late host', () => events(ws, 'np2').some((e) => e.type === 'subtask.placed'), 8_000, () => c.out() + host.out());
    await new Promise((r) => setTimeout(r, 500));
    expect(calls(events(ws, 'np2'))).toBe(0);
    expect(await main(['resume', 'np2', '--workspace', ws], ctl.io), ctl.err()).toBe(0);
    expect(await running, c.out() + c.err()).toBe(0);
    expect(calls(events(ws, 'np2'))).toBe(2);
  }, 15_000);
});
