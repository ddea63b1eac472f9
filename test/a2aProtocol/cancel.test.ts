/**
 * CancelTask on a served task whose run has a sub-task on another host (`a2a serve --a2a --nats`,
 * the worker on host alpha, its sub-task on host beta): the sub-task ends on beta whatever it is
 * doing when the cancel comes, a model call, a tool (following a delegated A2A task), or nothing
 * (idle, waiting for its parent's answer); and a delegated A2A task is cancelled on its server in
 * both of its states (followed, or waiting for the parent's answer to its question).
 *
 * What is checked is beta's own word (its events, published on NATS): the owner settles a
 * cancelled child at once whatever the host does, so the A2A task's CANCELED alone proves nothing.
 * `a2a monitor` watches the namespace meanwhile: it prints each change of the A2A tasks' states.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectNats, type NatsConnectedTransport } from '../../adapters/transport/nats.js';
import { main } from '../../bin/cli.js';
import { capture, tempDir } from '../helpers.js';
import { a2aHost, a2aProcess, killAll, served, waitFor, type Proc } from '../nats/cluster.js';
import { freePort, startNatsServer, type NatsServer } from '../nats/server.js';
import { clientOf, message, send, states, taskIdOf, lastStatusText } from './fixtures.js';
import { remoteAgent, type RemoteAgent } from './remoteServer.js';

const spawn = (agentType: string, prompt: string) => ({ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType, prompt, expectedOutput: 'something' }] } }] });
const worker = (prompt: string, agentType: string, child: string) => ({ agent: 'coder', depth: 0, prompt, turns: [spawn(agentType, child), { text: 'Waiting for my sub-task.' }] });

const SCRIPT = {
  rules: [
    worker('remote: think', '@reviewer', 'think forever'),
    worker('remote: ask', '@reviewer', 'ask my parent'),
    worker('remote: delegate and follow', '@translator', 'hang around'),
    worker('remote: delegate a question', '@translator', 'ask first'),
    { agent: 'reviewer', depth: 1, prompt: 'think forever', turns: [{ hang: true }] },
    {
      agent: 'reviewer',
      depth: 1,
      prompt: 'ask my parent',
      turns: [{ toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: 'Which file?' } }] }, { text: 'Waiting for the answer.' }],
    },
  ],
};

interface Seen {
  subject: string;
  type: string;
  runId: string;
  subTaskId?: string;
  origin?: string;
  data: Record<string, unknown>;
}

let nats: NatsServer;
let remote: RemoteAgent;
let serve: Proc;
let alpha: Proc;
let beta: Proc;
let url = '';
let client: Client;
let watcher: NatsConnectedTransport;
const seen: Seen[] = [];
const monitor = capture();
let monitoring: Promise<number> | null = null;

function agentFile(ws: string, remoteUrl: string): void {
  mkdirSync(join(ws, '.github', 'agents'), { recursive: true });
  writeFileSync(join(ws, '.github', 'agents', 'translator.agent.md'), `---\nname: translator\ndescription: a remote translator\nremote:\n  url: ${remoteUrl}\n---\n`);
}

beforeAll(async () => {
  [nats, remote] = await Promise.all([startNatsServer(), remoteAgent()]);
  watcher = await connectNats({ servers: nats.url, namespace: 'default', name: 'test-cancel-watcher' });
  const keep = (m: { subject: string; data: unknown }) => {
    const e = m.data as Omit<Seen, 'subject'>;
    if (e && typeof e === 'object' && typeof e.type === 'string') seen.push({ ...e, subject: m.subject, data: e.data ?? {} });
  };
  await watcher.subscribe('a2a.default.hostevents.>', keep);
  await watcher.subscribe('a2a.default.events.>', keep);
  const hostWs = tempDir('a2a-cancel-hosts-');
  const serveWs = tempDir('a2a-cancel-serve-');
  for (const ws of [hostWs, serveWs]) {
    writeFileSync(join(ws, 'script.json'), JSON.stringify(SCRIPT));
    agentFile(ws, remote.url);
  }
  // the orchestrator (in a2a serve) lets sub-tasks delegate without asking the client
  writeFileSync(join(serveWs, 'a2a.config.json'), JSON.stringify({ permissions: { auto_approve: ['remote_agent_delegation'] } }));
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  alpha = a2aHost(nats.url, hostWs, 'alpha', 'coder', { heartbeatMs: 1_000 });
  beta = a2aHost(nats.url, hostWs, 'beta', 'reviewer,translator', { heartbeatMs: 1_000 });
  serve = a2aProcess(['serve', '--a2a', '--port', String(port), '--agent', 'coder', '--script', 'script.json', '--nats', nats.url], serveWs);
  await Promise.all([
    served(alpha),
    served(beta),
    waitFor('the A2A server to listen', () => serve.out().includes('a2a A2A server on ') || serve.child.exitCode !== null, 20_000, serve.out),
  ]);
  if (serve.child.exitCode !== null) throw new Error(`a2a serve exited: ${serve.out()}`);
  client = await clientOf(url);
  monitoring = main(['monitor', '--nats', nats.url], monitor.io);
  await waitFor('the monitor to watch', () => monitor.out().includes('watching'), 10_000, monitor.err);
}, 40_000);

afterAll(async () => {
  monitor.stop();
  await monitoring;
  killAll();
  await watcher?.close();
  await remote?.close();
  await nats?.stop();
});

const context = () => `serve:\n${serve.out().slice(-2_000)}\nalpha:\n${alpha.out().slice(-2_000)}\nbeta:\n${beta.out().slice(-2_000)}\nevents:\n${seen.slice(-30).map((e) => `${e.origin ?? '?'} ${e.type} ${e.subTaskId ?? ''} ${JSON.stringify(e.data).slice(0, 120)}`).join('\n')}`;

/** Starts a served task; its id and its run's, once the run has started (its WORKING status names it; the stream is then let go). */
async function start(text: string): Promise<{ taskId: string; runId: string }> {
  const stream = send(client, message(text, { skill: 'coder' }));
  const events: StreamResponse[] = [];
  for await (const e of stream) {
    events.push(e);
    const said = /^run (\S+) started/.exec(lastStatusText([e]));
    if (said) return { taskId: taskIdOf(events), runId: said[1]! };
    if (states([e]).some((s) => ['FAILED', 'REJECTED', 'CANCELED', 'COMPLETED'].includes(s))) break;
  }
  throw new Error(`the task did not start a run: ${states(events).join(', ')} ${lastStatusText(events)}`);
}

/** Whether host beta said that the run's sub-task reached `state` (its session.state events). */
const betaSays = (runId: string, state: string) => () => seen.some((e) => e.runId === runId && e.origin === 'beta' && e.subTaskId === 'w-task.1' && e.type === 'session.state' && e.data.state === state);

/** The remote task's id once beta told the run that the delegated task reached `state` (a2a.delegated). */
async function delegated(runId: string, state: string): Promise<string> {
  const told = () => seen.find((e) => e.runId === runId && e.origin === 'beta' && e.type === 'a2a.delegated' && e.data.state === state);
  await waitFor(`beta to tell the remote task ${state}`, () => told() !== undefined, 8_000, context);
  return String(told()!.data.taskId);
}

async function cancelAndCheck(taskId: string, runId: string): Promise<void> {
  const task = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
  expect(task.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  // beta's own session ended: its cancel reached it (not only the owner's synthesised result)
  await waitFor('host beta to end the sub-task as cancelled', betaSays(runId, 'cancelled'), 8_000, context);
  // the monitor printed the task's change of state
  await waitFor('the monitor\'s line', () => monitor.out().includes(`⇄ A2A task ${taskId} working → canceled: cancelled by the A2A client`), 8_000, () => monitor.out().slice(-3_000));
}

describe('CancelTask reaches a sub-task on another host', () => {
  it('should end a sub-task that is in a model call on another host', async () => {
    const { taskId, runId } = await start('remote: think hard');
    await waitFor('the sub-task to think on beta', betaSays(runId, 'thinking'), 8_000, context);
    await cancelAndCheck(taskId, runId);
  });

  it('should end a sub-task that waits, idle, for its parent\'s answer on another host', async () => {
    const { taskId, runId } = await start('remote: ask a question');
    await waitFor('the sub-task to wait for its parent on beta', betaSays(runId, 'idle'), 8_000, context);
    await cancelAndCheck(taskId, runId);
  });

  it('should end a delegated sub-task that follows its remote task (a tool call) on another host, and cancel the remote task', async () => {
    const { taskId, runId } = await start('remote: delegate and follow');
    const remoteTask = await delegated(runId, 'working');
    await waitFor('the sub-task to follow the remote task on beta', betaSays(runId, 'usingTools'), 8_000, context);
    await cancelAndCheck(taskId, runId);
    await waitFor('CancelTask at the remote agent', () => remote.cancelled.includes(remoteTask), 8_000, context);
    await delegated(runId, 'canceled');
  });

  it('should end a delegated sub-task that waits for its parent\'s answer to the remote agent\'s question, and cancel the remote task', async () => {
    const { taskId, runId } = await start('remote: delegate a question');
    const remoteTask = await delegated(runId, 'input-required');
    await waitFor('the delegated sub-task to wait for its parent on beta', betaSays(runId, 'idle'), 8_000, context);
    await cancelAndCheck(taskId, runId);
    await waitFor('CancelTask at the remote agent', () => remote.cancelled.includes(remoteTask), 8_000, context);
    await delegated(runId, 'canceled');
    await waitFor('the monitor\'s line', () => monitor.out().includes(`w-task.1 → ${remote.url}/: remote task ${remoteTask} input-required → canceled`), 8_000, () => monitor.out().slice(-3_000));
  });
});
