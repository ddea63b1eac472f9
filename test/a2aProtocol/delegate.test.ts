/**
 * Delegation: an agent type that is a remote A2A agent. A worker spawns a sub-task of it; the
 * sub-task sends its task with the SDK's client to a server built with the SDK alone
 * (remoteServer.ts), or to another a2a (`serveA2A`), and reports exactly one result: success,
 * a question answered by the parent, failure, cancel, a server that dies mid-stream, a denied
 * permission, a token sent or refused. The other a2a's task is cancelled when the delegating run
 * stops, whether its sub-task follows the task (a tool call) or waits, idle, for its parent's
 * answer to the task's question.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { serveA2A } from '../../adapters/a2aProtocol/server.js';
import { startRun, type Run } from '../../adapters/assembly/library.js';
import { parseScript } from '../../adapters/model/scripted.js';
import { tempDir } from '../helpers.js';
import { waitFor } from '../nats/cluster.js';
import { TaskState } from '@a2a-js/sdk';
import { clientOf, SERVE_SCRIPT } from './fixtures.js';
import { remoteAgent, type RemoteAgent } from './remoteServer.js';

const spawn = (prompt: string) => ({ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: '@translator', prompt, expectedOutput: 'the word' }] } });
const finish = { when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'parent done' } }] } };
const rule = (word: string, prompt: string, reactions: unknown[] = []) => ({ agent: 'architect', depth: 0, prompt: `delegate: ${word}`, turns: [{ toolCalls: [spawn(prompt)] }, { text: 'Waiting.' }], reactions: [...reactions, finish] });
const answer = (text: string) => ({ when: 'remote agent .* asks', turn: { toolCalls: [{ name: 'a2a_send_subtask_message', arguments: { subTaskId: '$children[0]', message: text } }] } });

const PARENT = parseScript(
  {
    rules: [
      rule('translate', 'translate hello'),
      rule('ask', 'ask first', [answer('French')]),
      rule('fail', 'fail please'),
      rule('hang', 'hang around', [{ when: 'still working', turn: { toolCalls: [{ name: 'a2a_cancel_subtask', arguments: { ids: ['$children[0]'], reason: 'no longer needed' } }] } }]),
      rule('die', 'die now'),
      rule('greet', 'greet in German'),
      rule('hello', 'say hello in Python'),
      rule('which database', 'which database should the schema use', [answer('postgres')]),
      // the parent never answers: the sub-task waits, idle, until the run is stopped
      rule('unanswered', 'which database should the schema use'),
      rule('forever', 'work forever'),
    ],
  },
  'the parent\'s script',
);

interface Delegated {
  run: Run;
  result: { status: string; output: string; error?: string } | undefined;
  statuses: string[];
}

const remotes: RemoteAgent[] = [];
afterAll(async () => {
  await Promise.all(remotes.map((r) => r.close()));
});

async function remote(options: { token?: string; version?: '1.0' | '0.3' } = {}): Promise<RemoteAgent> {
  const r = await remoteAgent(options);
  remotes.push(r);
  return r;
}

async function delegate(word: string, remoteConfig: Record<string, unknown>, options: { approve?: boolean; workspace?: string; agents?: boolean; onHuman?: (run: Run) => void } = {}): Promise<Delegated> {
  const statuses: string[] = [];
  let result: Delegated['result'];
  const run = await startRun({
    workspace: options.workspace ?? tempDir('a2a-delegate-'),
    task: `delegate: ${word}`,
    agent: '@architect',
    store: 'memory',
    notify: () => undefined,
    scriptData: PARENT,
    ...(options.agents === false ? {} : { agents: [{ name: 'translator', description: 'a remote translator', remote: remoteConfig as never }] }),
    settings: { permissions: options.approve === false ? {} : { auto_approve: ['remote_agent_delegation'] } },
    onEvent: (e) => {
      if (e.type === 'subtask.result' && e.subTaskId === 'w-task.1') result = e.data as Delegated['result'];
      if (e.type === 'update.queued' && e.data.from === 'w-task.1' && e.data.message) statuses.push(e.data.message);
      if (e.type === 'human.asked') options.onHuman?.(run);
    },
  });
  await run.done;
  return { run, result, statuses };
}

describe('delegating to a remote A2A agent (a server built with the SDK)', () => {
  it('sends the sub-task, passes its status on, and returns its artifact as the result', async () => {
    const r = await remote();
    const { result, statuses } = await delegate('translate', { url: r.url });
    expect(result).toMatchObject({ status: 'success', output: 'translation:\nbonjour' });
    expect(r.received).toEqual([expect.stringMatching(/^translate hello\n\nExpected output: the word$/)]);
    expect(statuses.some((s) => /looking the word up/.test(s))).toBe(true);
  });

  it('speaks v0.3 to a v0.3 server (its card in the v0.3 shape): the sub-task, its question and the answer, its result', async () => {
    const r = await remote({ version: '0.3' });
    const sent = await delegate('translate', { url: r.url });
    expect(sent.result).toMatchObject({ status: 'success', output: 'translation:\nbonjour' });
    const asked = await delegate('ask', { url: r.url });
    expect(asked.result).toMatchObject({ status: 'success', output: 'translation:\nin French: bonjour' });
    expect(r.received[2]).toBe('French');
    // v0.3's method names, and none of v1.0's
    expect(r.methods.length).toBeGreaterThan(0);
    expect(r.methods.every((m) => m.includes('/')), r.methods.join(', ')).toBe(true);
  });

  it('asks the parent what the remote agent asks (INPUT_REQUIRED) and forwards the answer into the same task', async () => {
    const r = await remote();
    const { result, statuses } = await delegate('ask', { url: r.url });
    expect(statuses).toEqual(expect.arrayContaining([expect.stringMatching(/^The remote agent \(task .*\) asks: Which language\?$/)]));
    expect(r.received).toHaveLength(2);
    expect(r.received[1]).toBe('French');
    expect(result).toMatchObject({ status: 'success', output: 'translation:\nin French: bonjour' });
  });

  it('reports a remote FAILED as a failed result with the remote reason', async () => {
    const r = await remote();
    const { result } = await delegate('fail', { url: r.url });
    expect(result).toMatchObject({ status: 'failed', error: expect.stringMatching(/ended task .* as failed: no such language/) });
  });

  it('sends CancelTask when the parent cancels the sub-task; the sub-task reports cancelled, once', async () => {
    const r = await remote();
    const { result } = await delegate('hang', { url: r.url });
    expect(result?.status).toBe('cancelled');
    // the CancelTask goes out as the aborted tool ends, after the sub-task has reported
    await waitFor('the CancelTask', () => r.cancelled.length > 0, 5_000);
    expect(r.cancelled).toHaveLength(1);
  });

  it('ends as failed with a clear reason when the server dies mid-stream', async () => {
    const r = await remote();
    const { result } = await delegate('die', { url: r.url, silenceMs: 2000 });
    expect(result).toMatchObject({ status: 'failed', error: expect.stringMatching(/stream (broke|ended)/) });
  });

  it('takes a direct reply (a Message, no task) as the result', async () => {
    const r = await remote();
    const { result } = await delegate('greet', { url: r.url });
    expect(result).toMatchObject({ status: 'success', output: 'hallo' });
  });

  it('sends no token over plain http to another machine', async () => {
    process.env.A2A_TEST_REMOTE_TOKEN = 'remote-token-0123456789';
    const { result } = await delegate('translate', { url: 'http://agents.example.invalid/translator', token: { env: 'A2A_TEST_REMOTE_TOKEN' } });
    expect(result).toMatchObject({ status: 'failed', error: expect.stringMatching(/a token is sent over https only \(or to this machine\): http:\/\/agents\.example\.invalid is plain http\. Nothing was sent/) });
  });

  it('ends as failed when nothing answers at the URL', async () => {
    const { result } = await delegate('translate', { url: 'http://127.0.0.1:9' });
    expect(result).toMatchObject({ status: 'failed', error: expect.stringMatching(/could not be reached/) });
  });

  it('asks a person before anything leaves (remote_agent_delegation, ask_user by default); a denial sends nothing', async () => {
    const r = await remote();
    let detail = '';
    const { result } = await delegate('translate', { url: r.url }, {
      approve: false,
      onHuman: (run) =>
        setImmediate(() => {
          const item = run.pending()[0]!;
          detail = item.title;
          run.answer(item.id, { approved: false, reason: 'not to that server' });
        }),
    });
    expect(detail).toMatch(new RegExp(`remote_agent_delegation.*send to ${r.url.replace(/[.]/g, '\\.')}: translate hello`));
    expect(r.received).toEqual([]);
    expect(result).toMatchObject({ status: 'failed', error: expect.stringMatching(/denied by human: not to that server; nothing was sent/) });
  });

  it('sends a token from the environment for an agent declared in code, and refuses to for one from the repository', async () => {
    const token = 'remote-token-0123456789';
    process.env.A2A_TEST_REMOTE_TOKEN = token;
    const r = await remote({ token });
    const trusted = await delegate('translate', { url: r.url, token: { env: 'A2A_TEST_REMOTE_TOKEN' } });
    expect(trusted.result).toMatchObject({ status: 'success' });
    expect(r.authorizations).toContain(`Bearer ${token}`);
    const ws = tempDir('a2a-delegate-repo-');
    mkdirSync(join(ws, '.github', 'agents'), { recursive: true });
    writeFileSync(join(ws, '.github', 'agents', 'translator.agent.md'), `---\nname: translator\ndescription: a remote translator\nremote:\n  url: ${r.url}\n  token:\n    env: A2A_TEST_REMOTE_TOKEN\n---\n`);
    const before = r.received.length;
    const untrusted = await delegate('translate', {}, { workspace: ws, agents: false });
    expect(untrusted.result).toMatchObject({ status: 'failed', error: expect.stringMatching(/a repository's file: it may not send a token/) });
    expect(r.received.length).toBe(before);
  });
});

describe('a2a delegating to another a2a over A2A', () => {
  it('gets the served run\'s result, and answers the served worker\'s question through its own parent', async () => {
    const served = await serveA2A({ workspace: tempDir('a2a-served-'), version: '1', agent: 'coder', notify: () => undefined, run: { scriptData: SERVE_SCRIPT } });
    try {
      const hello = await delegate('hello', { url: served.url });
      expect(hello.result).toMatchObject({ status: 'success', output: 'result:\nprint("hello world")' });
      const asked = await delegate('which database', { url: served.url });
      expect(asked.statuses).toEqual(expect.arrayContaining([expect.stringMatching(/asks: Which database should I use\?/)]));
      expect(asked.result).toMatchObject({ status: 'success', output: expect.stringMatching(/schema for postgres/) });
    } finally {
      await served.close();
    }
  });

  it.each([
    { waits: 'idle, for the parent\'s answer to the served worker\'s question', word: 'unanswered', remote: 'input-required', session: 'idle', error: /session w-task\.1 ended while the remote task was input-required/ },
    { waits: 'in its tool, following the served task', word: 'forever', remote: 'working', session: 'usingTools', error: /cancelled with session w-task\.1/ },
  ])('cancels the served task when the delegating run stops while its sub-task waits $waits', async ({ word, remote, session, error }) => {
    const served = await serveA2A({ workspace: tempDir('a2a-served-'), version: '1', agent: 'coder', notify: () => undefined, run: { scriptData: SERVE_SCRIPT } });
    try {
      const delegated: Array<Record<string, unknown>> = [];
      const states: string[] = [];
      const run = await startRun({
        workspace: tempDir('a2a-delegate-'),
        task: `delegate: ${word}`,
        agent: '@architect',
        store: 'memory',
        notify: () => undefined,
        scriptData: PARENT,
        agents: [{ name: 'translator', description: 'another a2a', remote: { url: served.url } as never }],
        settings: { permissions: { auto_approve: ['remote_agent_delegation'] } },
        onEvent: (e) => {
          if (e.type === 'a2a.delegated') delegated.push(e.data);
          if (e.type === 'session.state' && e.subTaskId === 'w-task.1') states.push(String(e.data.state));
        },
      });
      await waitFor(`the sub-task to be ${session} with the remote task ${remote}`, () => delegated.some((d) => d.state === remote) && states.at(-1) === session, 8_000);
      const taskId = String(delegated.find((d) => d.state === remote)!.taskId);
      run.stop('no longer needed');
      expect((await run.done).status).toBe('cancelled');
      // the served run stopped, and its task ended CANCELED
      const client = await clientOf(served.url);
      await waitFor('the served task to be cancelled', () => served.executor.held(taskId) === undefined, 8_000);
      expect((await client.getTask({ tenant: '', id: taskId })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      // the run heard it: the remote task went from where it was to canceled
      expect(delegated.at(-1)).toMatchObject({ taskId, state: 'canceled', url: `${served.url}/`, error: expect.stringMatching(error) });
    } finally {
      await served.close();
    }
  });
});
