/**
 * `a2a serve --a2a` against the SDK's own client on loopback: the card, a task sent, streamed and
 * read back, sub-tasks as status and artifacts, a question (INPUT_REQUIRED) and a permission
 * (AUTH_REQUIRED) answered by the client's next message, cancel, list, a reconnect that replays
 * what the client missed, bad input, the token.
 */
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { TaskState, type StreamResponse } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { serveA2A, type RunningA2AServer } from '../../adapters/a2aProtocol/server.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { waitFor } from '../nats/cluster.js';
import { artifacts, clientOf, drain, lastStatusText, message, send, SERVE_SCRIPT, seqOf, states, taskIdOf } from './fixtures.js';

let server: RunningA2AServer;
let client: Client;
let workspace: string;

beforeAll(async () => {
  workspace = tempDir('a2a-serve-');
  server = await serveA2A({
    workspace,
    version: '9.9.9',
    agent: 'coder',
    notify: () => undefined,
    run: { scriptData: SERVE_SCRIPT, settings: { permissions: { ask_user: ['file_creation_in_worktree'] } } },
  });
  client = await clientOf(server.url);
});

afterAll(async () => {
  await server?.close();
});

/** The terminal states a task's record holds, in order (one, for a task that ended once). */
const terminalStates = (read: { events: Array<{ event: Record<string, unknown> }> } | null) =>
  (read?.events ?? [])
    .map((e) => (e.event as { statusUpdate?: { status?: { state?: string } } }).statusUpdate?.status?.state)
    .filter((state): state is string => state !== undefined && ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED'].includes(state));

/** The a2a.served events of a task in its run's log (the run's file store in the served workspace), once the run has ended. */
async function servedEvents(on: RunningA2AServer, taskId: string): Promise<RunEvent[]> {
  const record = (await on.executor.records.read(taskId))?.record;
  if (!record?.runId) throw new Error(`task ${taskId} has no run`);
  const store = new FileRunStore(record.workspace);
  await waitFor(`run ${record.runId} to end`, () => store.read(record.runId!)?.status !== 'running', 8_000);
  return store.events(record.runId).filter((e) => e.type === 'a2a.served' && e.data.taskId === taskId);
}

const inputRequired = (e: StreamResponse) => e.payload?.$case === 'statusUpdate' && [TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED].includes(e.payload.value.status!.state);

describe('a2a serve --a2a', () => {
  it('serves an agent card: one skill per agent type, v1.0 and v0.3 interfaces', async () => {
    const v1 = (await (await fetch(`${server.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as Record<string, any>;
    expect(v1.name).toBe('a2a');
    expect(v1.version).toBe('9.9.9');
    expect(v1.skills.map((s: { id: string }) => s.id)).toEqual(expect.arrayContaining(['coder', 'architect', 'reviewer']));
    expect(v1.capabilities.streaming).toBe(true);
    expect(v1.supportedInterfaces).toEqual(expect.arrayContaining([expect.objectContaining({ protocolBinding: 'JSONRPC', protocolVersion: '1.0', url: `${server.url}/a2a/jsonrpc` })]));
    expect(v1.securitySchemes).toBeUndefined();
    // a v0.3 client sends no version header and gets the v0.3 card
    const v03 = (await (await fetch(`${server.url}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    expect(v03.protocolVersion).toBe('0.3');
    expect(v03.url).toBe(`${server.url}/a2a/jsonrpc`);
  });

  it('runs a task: SUBMITTED, WORKING, the result as an artifact, COMPLETED; GetTask reads it back', async () => {
    const events = await drain(send(client, message('Say hello in Python', { skill: 'coder' })));
    expect(states(events)).toEqual(['task:SUBMITTED', 'WORKING', 'COMPLETED']);
    const id = taskIdOf(events);
    const task = await client.getTask({ tenant: '', id });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifacts(task)).toEqual(['print("hello world")']);
    expect(task.metadata?.agent).toBe('@coder');
    // every status and artifact event is numbered, from 2 (1 is the task itself)
    expect(events.map(seqOf).filter((n) => n !== undefined)).toEqual([2, 3, 4]);
  });

  it('tells its run\'s log where the task stands (a2a.served): each state it reaches, the client\'s messages in and its own out', async () => {
    const first = await drain(send(client, message('Design the schema: which database?', { skill: 'coder', contextId: 'ctx-log' })));
    const id = taskIdOf(first);
    await drain(send(client, message('postgres', { taskId: id, contextId: 'ctx-log' })));
    const served = await servedEvents(server, id);
    // one line per change of state, in order, each naming the state it left
    const changes = served.filter((e) => e.data.from !== undefined || e.data.state === 'submitted').map((e) => `${String(e.data.from ?? '')}>${String(e.data.state)}`);
    expect(changes).toEqual(['>submitted', 'submitted>working', 'working>input-required', 'input-required>working', 'working>completed']);
    const said = (direction: string) => served.filter((e) => e.data.direction === direction).map((e) => String(e.data.text));
    expect(said('in')).toEqual(['Design the schema: which database?', 'postgres']);
    expect(said('out')).toEqual(expect.arrayContaining(['Which database should I use?', 'result: schema for postgres', 'done']));
    expect(served[0]).toMatchObject({ planId: 'a2a-task', data: { taskId: id, contextId: 'ctx-log', agent: 'coder' } });
    expect(served.some((e) => e.data.owner !== undefined)).toBe(false);
  });

  it('answers a blocking SendMessage with the finished task', async () => {
    const result = await client.sendMessage({ tenant: '', message: message('hello again', { skill: 'coder' }), configuration: undefined, metadata: undefined });
    expect('status' in result && result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('keeps one task for a message sent twice (the same message id): the copy gets the first task', async () => {
    const count = async () => (await client.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 100, pageToken: '', historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: false } as never)).tasks.length;
    const before = await count();
    const once = message('hello once more', { skill: 'coder' });
    const first = await client.sendMessage({ tenant: '', message: once, configuration: undefined, metadata: undefined });
    const again = await client.sendMessage({ tenant: '', message: once, configuration: undefined, metadata: undefined });
    expect('id' in again && again.id).toBe('id' in first && first.id);
    // streamed too: the task it started, not a new one
    const events = await drain(send(client, once));
    expect(taskIdOf(events)).toBe('id' in first && first.id);
    expect(await count()).toBe(before + 1);
  });

  it('streams sub-tasks as status messages and their results as artifacts', async () => {
    const events = await drain(send(client, message('fan out into two parts', { skill: 'coder' })));
    const texts = events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [lastStatusText([e])] : []));
    expect(texts).toEqual(expect.arrayContaining([expect.stringMatching(/^w-task\.1 \(@coder\) started: part A/), expect.stringMatching(/^w-task\.2 \(@coder\) started: part B/)]));
    const task = await client.getTask({ tenant: '', id: taskIdOf(events) });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts.map((a) => a.name)).toEqual(['w-task.1: success', 'w-task.2: success', 'result']);
    expect(artifacts(task)).toContain('A and B, combined');
  });

  it('asks the client what the worker asks (INPUT_REQUIRED); the next message in the task answers it', async () => {
    const first = await drain(send(client, message('Design the schema: which database?', { skill: 'coder' })));
    expect(states(first).at(-1)).toBe('INPUT_REQUIRED');
    expect(lastStatusText(first)).toBe('Which database should I use?');
    const id = taskIdOf(first);
    const task = await client.getTask({ tenant: '', id });
    const second = await drain(send(client, message('postgres', { taskId: id, contextId: task.contextId })));
    expect(second[0]!.payload?.$case).toBe('task');
    expect(states(second).at(-1)).toBe('COMPLETED');
    expect(second.some((e) => lastStatusText([e]).startsWith('answered by a2a-client: postgres'))).toBe(true);
    const done = await client.getTask({ tenant: '', id });
    expect(artifacts(done)).toContain('schema for postgres');
    // every turn of the task is in its history: the client's answer too, after the question
    const turns = done.history.map((m) => `${m.role === 1 ? 'client' : 'agent'}: ${m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('')}`);
    expect(turns[0]).toBe('client: Design the schema: which database?');
    expect(turns).toContain('client: postgres');
    expect(turns.indexOf('client: postgres')).toBeGreaterThan(turns.findIndex((t) => t.includes('Which database should I use?')));
  });

  it('asks for a permission (AUTH_REQUIRED); a reply that is no answer is refused and asked again; yes approves', async () => {
    const stream = send(client, message('write a file with notes', { skill: 'coder' }));
    const first = await drain(stream, inputRequired);
    expect(states(first).at(-1)).toBe('AUTH_REQUIRED');
    expect(lastStatusText(first)).toMatch(/file_creation_in_worktree[\s\S]*Answer yes or no/);
    const id = taskIdOf(first);
    const contextId = (await client.getTask({ tenant: '', id })).contextId;
    const unclear = await drain(send(client, message('ok, but only the notes', { taskId: id, contextId })), inputRequired);
    expect(lastStatusText(unclear)).toMatch(/"ok, but only the notes" is not an answer to .*: answer yes or no/);
    const approved = await drain(send(client, message('yes', { taskId: id, contextId })));
    expect(states(approved).at(-1)).toBe('COMPLETED');
    expect(approved.some((e) => /^approved by a2a-client/.test(lastStatusText([e])))).toBe(true);
    expect(readFileSync(join(workspace, 'notes.txt'), 'utf8')).toBe('notes');
  });

  it('shows two permissions asked at once one after the other, each answered by the next message', async () => {
    const first = await drain(send(client, message('write two files at once', { skill: 'coder' })), inputRequired);
    const id = taskIdOf(first);
    const contextId = (await client.getTask({ tenant: '', id })).contextId;
    expect(lastStatusText(first)).toMatch(/file_creation_in_worktree.*[ab]\.txt/);
    const second = await drain(send(client, message('yes', { taskId: id, contextId })), inputRequired);
    expect(lastStatusText(second)).toMatch(/^approved by a2a-client(: approved)?\. Next: .*file_creation_in_worktree.*[ab]\.txt/);
    const done = await drain(send(client, message('yes', { taskId: id, contextId })));
    expect(states(done).at(-1)).toBe('COMPLETED');
    expect(readFileSync(join(workspace, 'a.txt'), 'utf8') + readFileSync(join(workspace, 'b.txt'), 'utf8')).toBe('ab');
  });

  it('refuses a request whose Host is not this server\'s when it has no token (DNS rebinding)', async () => {
    const port = new URL(server.url).port;
    const status = await new Promise<number>((done, fail) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/a2a/jsonrpc', method: 'POST', headers: { Host: `attacker.example:${port}`, 'Content-Type': 'application/json' } }, (res) => {
        res.resume();
        done(res.statusCode ?? 0);
      });
      req.on('error', fail);
      req.end('{}');
    });
    expect(status).toBe(421);
  });

  it('cancels a task: the run is stopped and the task ends CANCELED, once', async () => {
    const stream = send(client, message('work forever', { skill: 'coder' }));
    const started = await drain(stream, (e) => states([e])[0] === 'WORKING');
    const id = taskIdOf(started);
    const cancelled = await client.cancelTask({ tenant: '', id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const task = await client.getTask({ tenant: '', id });
    expect(terminalStates(await server.executor.records.read(id))).toEqual(['TASK_STATE_CANCELED']);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('lists tasks by context, newest first, and pages them', async () => {
    const a = taskIdOf(await drain(send(client, message('hello one', { skill: 'coder', contextId: 'ctx-list' }))));
    const b = taskIdOf(await drain(send(client, message('hello two', { skill: 'coder', contextId: 'ctx-list' }))));
    const listed = await client.listTasks({ tenant: '', contextId: 'ctx-list', status: 0, pageSize: 1, pageToken: '', historyLength: 0, statusTimestampAfter: undefined });
    expect(listed.totalSize).toBe(2);
    expect(listed.tasks.map((t) => t.id)).toEqual([b]);
    expect(listed.tasks[0]!.history).toEqual([]);
    const next = await client.listTasks({ tenant: '', contextId: 'ctx-list', status: 0, pageSize: 1, pageToken: listed.nextPageToken, statusTimestampAfter: undefined });
    expect(next.tasks.map((t) => t.id)).toEqual([a]);
  });

  it('gives a new task of a conversation what the earlier tasks asked and answered', async () => {
    await drain(send(client, message('hello from the first task', { skill: 'coder', contextId: 'ctx-talk' })));
    const second = await drain(send(client, message('hello, and now the second', { skill: 'coder', contextId: 'ctx-talk' })));
    const runId = (await server.executor.records.read(taskIdOf(second)))!.record.runId!;
    const log = readFileSync(join(workspace, '.a2a', 'runs', runId, 'events.jsonl'), 'utf8');
    const deployed = log.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.type === 'worker.deployed');
    expect(deployed.data.prompt).toMatch(/Earlier in this conversation:\n- asked: hello from the first task\n  answered \(completed\): print\("hello world"\)[\s\S]*The new request:\nhello, and now the second/);
  });

  it('looks for earlier tasks only in a context the client named, reading only those of that context', async () => {
    // a first message makes the server read its records once (which messages started which task)
    await drain(send(client, message('Say hello in Python', { skill: 'coder' })));
    const all = vi.spyOn(server.executor.records, 'all');
    try {
      // no context named: the SDK makes a new one, which no earlier task can share
      await drain(send(client, message('Say hello in Python', { skill: 'coder' })));
      expect(all).not.toHaveBeenCalled();
      await drain(send(client, message('hello, a third time', { skill: 'coder', contextId: 'ctx-talk' })));
      const looked = all.mock.calls.filter(([match]) => typeof match === 'function');
      expect(looked).toHaveLength(1);
      const [match] = looked[0]! as [(r: { task: Record<string, unknown> }) => boolean];
      expect(match({ task: { id: 'another', contextId: 'ctx-talk' } })).toBe(true);
      expect(match({ task: { id: 'another', contextId: 'ctx-other' } })).toBe(false);
    } finally {
      all.mockRestore();
    }
  });

  it('replays a task to a client that reconnects: everything, or what follows Last-Event-ID', async () => {
    const stream = send(client, message('take it slow', { skill: 'coder' }));
    // the client drops after the first events (the task still runs)
    const seen = await drain(stream, (e) => states([e])[0] === 'WORKING');
    const id = taskIdOf(seen);
    const last = Math.max(...seen.map(seqOf).filter((n): n is number => n !== undefined));
    const rest = await drain(client.resubscribeTask({ tenant: '', id }, { serviceParameters: { 'Last-Event-ID': String(last) } }));
    expect(rest[0]!.payload?.$case).toBe('task');
    const seqs = rest.map(seqOf).filter((n): n is number => n !== undefined);
    expect(seqs[0]).toBe(last + 1);
    expect(seqs).toEqual(seqs.map((_, i) => last + 1 + i));
    expect(states(rest).at(-1)).toBe('COMPLETED');
    // finished now: it is read with GetTask, not followed (the protocol refuses SubscribeToTask)
    await expect(drain(client.resubscribeTask({ tenant: '', id }))).rejects.toThrow(/has ended \(TASK_STATE_COMPLETED\)/);
    expect((await client.getTask({ tenant: '', id })).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('replays a running task from its log to a client that reconnects without Last-Event-ID: each event once, in order, to its end', async () => {
    const stream = send(client, message('take it slow', { skill: 'coder' }));
    const seen = await drain(stream, (e) => states([e])[0] === 'WORKING');
    const id = taskIdOf(seen);
    const all = await drain(client.resubscribeTask({ tenant: '', id }));
    expect(all[0]!.payload?.$case).toBe('task');
    const seqs = all.map(seqOf).filter((n): n is number => n !== undefined);
    // the task event (seq 1) is left out of the replay: the snapshot before it says more
    expect(seqs).toEqual(seqs.map((_, i) => 2 + i));
    expect(states(all).at(-1)).toBe('COMPLETED');
  });

  it('serves the REST binding too: send, then read the task back', async () => {
    const sent = await fetch(`${server.url}/a2a/rest/message:send`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' },
      body: JSON.stringify({ message: { messageId: 'rest-1', role: 'ROLE_USER', parts: [{ text: 'hello over REST' }], metadata: { skill: 'coder' } } }),
    });
    expect(sent.status).toBe(200);
    const task = ((await sent.json()) as { task: { id: string; status: { state: string } } }).task;
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    const read = (await (await fetch(`${server.url}/a2a/rest/tasks/${task.id}`, { headers: { 'A2A-Version': '1.0' } })).json()) as { artifacts: Array<{ parts: Array<{ text: string }> }> };
    expect(read.artifacts[0]!.parts[0]!.text).toBe('print("hello world")');
  });

  it('answers a v0.3 client (no A2A-Version header: message/send, tasks/get)', async () => {
    const rpc = async (method: string, params: unknown) =>
      (await (await fetch(`${server.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: method, method, params }) })).json()) as { result?: any; error?: unknown };
    const sent = await rpc('message/send', { message: { kind: 'message', messageId: 'v03-1', role: 'user', parts: [{ kind: 'text', text: 'hello from v0.3' }], metadata: { skill: 'coder' } } });
    expect(sent.error).toBeUndefined();
    expect(sent.result.kind).toBe('task');
    expect(sent.result.status.state).toBe('completed');
    const got = await rpc('tasks/get', { id: sent.result.id });
    expect(got.result.artifacts[0].parts[0].text).toBe('print("hello world")');
  });

  it('posts the task\'s events to a push-notification webhook the client registered', async () => {
    const received: Array<{ auth: string | undefined; body: any }> = [];
    const hook = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        received.push({ auth: req.headers['x-a2a-notification-token'] as string | undefined, body: JSON.parse(body) });
        res.end();
      });
    });
    await new Promise<void>((done) => hook.listen(0, '127.0.0.1', () => done()));
    try {
      const url = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
      const stream = client.sendMessageStream({
        tenant: '',
        message: message('take it slow', { skill: 'coder' }),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: { tenant: '', id: 'hook-1', taskId: '', url, token: 'hook-token', authentication: undefined }, historyLength: undefined, returnImmediately: false } as never,
        metadata: undefined,
      });
      const events = await drain(stream);
      const id = taskIdOf(events);
      const configs = await client.listTaskPushNotificationConfig({ tenant: '', taskId: id, pageSize: 10, pageToken: '' });
      expect(configs.configs.map((c) => c.url)).toEqual([url]);
      await waitFor('the COMPLETED notification', () => received.some((r) => JSON.stringify(r.body).includes('TASK_STATE_COMPLETED')), 5_000);
      expect(received.every((r) => r.auth === 'hook-token')).toBe(true);
    } finally {
      hook.close();
    }
  });

  it('refuses bad input with a reason and loses nothing: no text, an unknown skill, an unknown task', async () => {
    const empty = await drain(send(client, { ...message(''), parts: [] }));
    expect(states(empty).at(-1)).toBe('REJECTED');
    expect(lastStatusText(empty)).toMatch(/no text/);
    const unknown = await drain(send(client, message('hello', { skill: 'wizard' })));
    expect(states(unknown).at(-1)).toBe('REJECTED');
    expect(lastStatusText(unknown)).toMatch(/unknown skill "wizard": this server's skills are .*"coder"/);
    await expect(client.getTask({ tenant: '', id: 'no-such-task' })).rejects.toThrow(/not found|no-such-task/i);
    const raw = await fetch(`${server.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body: '{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":42}}' });
    const body = (await raw.json()) as { error?: { code: number; message: string } };
    expect(body.error?.code).toBeLessThan(0);
  });
});

describe('a2a serve --a2a with a token', () => {
  it('requires the bearer token for everything but the card, and says so in the card', async () => {
    const token = 'tok-0123456789abcdef-xyz';
    const guarded = await serveA2A({ workspace: tempDir('a2a-serve-token-'), version: '1', agent: 'coder', token, notify: () => undefined, run: { scriptData: SERVE_SCRIPT } });
    try {
      const card = (await (await fetch(`${guarded.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as Record<string, any>;
      expect(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme).toBe('Bearer');
      const refused = await fetch(`${guarded.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer wrong' }, body: '{}' });
      expect(refused.status).toBe(401);
      expect(await refused.text()).toMatch(/bearer token/);
      const events = await drain(send(await clientOf(guarded.url, token), message('hello', { skill: 'coder' })));
      expect(states(events).at(-1)).toBe('COMPLETED');
    } finally {
      await guarded.close();
    }
  });

  it('scopes tasks to the named client that created them: another client sees, follows, answers and cancels nothing of them', async () => {
    const clients = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef' };
    const shared = await serveA2A({ workspace: tempDir('a2a-serve-clients-'), version: '1', agent: 'coder', clients, notify: () => undefined, run: { scriptData: SERVE_SCRIPT } });
    try {
      const alice = await clientOf(shared.url, clients.alice);
      const bob = await clientOf(shared.url, clients.bob);
      // alice's task waits for her answer (INPUT_REQUIRED), and one is still running
      const asking = await drain(send(alice, message('which database to use?', { skill: 'coder' })));
      const waiting = taskIdOf(asking);
      expect(states(asking).at(-1)).toBe('INPUT_REQUIRED');
      const running = taskIdOf(await drain(send(alice, message('work forever', { skill: 'coder' })), (e) => states([e])[0] === 'WORKING'));
      const bobs = taskIdOf(await drain(send(bob, message('hello', { skill: 'coder' }))));
      const list = async (c: Client) => (await c.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 100, pageToken: '', historyLength: 0, statusTimestampAfter: undefined } as never)).tasks.map((t) => t.id).sort();
      expect(await list(alice)).toEqual([waiting, running].sort());
      expect(await list(bob)).toEqual([bobs]);
      const notFound = /not found|no task/i;
      for (const id of [waiting, running]) {
        await expect(bob.getTask({ tenant: '', id })).rejects.toThrow(notFound);
        await expect(bob.cancelTask({ tenant: '', id, metadata: undefined })).rejects.toThrow(notFound);
        await expect(drain(bob.resubscribeTask({ tenant: '', id }))).rejects.toThrow(notFound);
      }
      // bob's answer into alice's task is refused, and changes nothing of it
      await expect(drain(send(bob, message('postgres', { taskId: waiting })))).rejects.toThrow(notFound);
      expect((await alice.getTask({ tenant: '', id: waiting })).status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      expect((await alice.getTask({ tenant: '', id: running })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
      // alice's own answer and cancel work
      expect(states(await drain(send(alice, message('postgres', { taskId: waiting })))).at(-1)).toBe('COMPLETED');
      expect((await alice.cancelTask({ tenant: '', id: running, metadata: undefined })).status?.state).toBe(TaskState.TASK_STATE_CANCELED);
      // the records say whose each task is, and so do the runs' logs (the studio and the monitors read them)
      expect((await shared.executor.records.read(waiting))?.record.owner).toBe('alice');
      expect((await shared.executor.records.read(bobs))?.record.owner).toBe('bob');
      const served = await servedEvents(shared, waiting);
      expect(served.length).toBeGreaterThan(0);
      expect(served.every((e) => e.data.owner === 'alice')).toBe(true);
      const cancelled = await servedEvents(shared, running);
      expect(cancelled.at(-1)?.data).toMatchObject({ state: 'canceled', from: 'working', owner: 'alice', text: 'cancelled by the A2A client' });
      const refused = await fetch(`${shared.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer someone-else-0123456789' }, body: '{}' });
      expect(refused.status).toBe(401);
    } finally {
      await shared.close();
    }
  });

  it('gives a client with a credential the extended card (GetExtendedAgentCard): tools, strengths, limits, whose tasks it sees; none without a credential', async () => {
    const clients = { carol: 'carol-token-0123456789abcdef' };
    const guarded = await serveA2A({ workspace: tempDir('a2a-serve-extended-'), version: '1', agent: 'coder', clients, maxTasks: 7, notify: () => undefined, run: { scriptData: SERVE_SCRIPT } });
    const open = await serveA2A({ workspace: tempDir('a2a-serve-extended-open-'), version: '1', agent: 'coder', notify: () => undefined, run: { scriptData: SERVE_SCRIPT } });
    try {
      const publicCard = (await (await fetch(`${guarded.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as { capabilities: { extendedAgentCard?: boolean }; skills: Array<{ id: string; description: string }> };
      expect(publicCard.capabilities.extendedAgentCard).toBe(true);
      // the SDK's client fetches the extended card when the card offers one
      const extended = await (await clientOf(guarded.url, clients.carol)).getAgentCard();
      expect(extended.description).toContain('at most 7 tasks at once');
      expect(extended.description).toContain('You are client "carol"');
      const coder = extended.skills.find((sk: { id: string }) => sk.id === 'coder')!;
      expect(coder.description).toMatch(/Tools: .*write_file/);
      // the public card says less
      expect(publicCard.skills.find((sk) => sk.id === 'coder')!.description).not.toMatch(/Tools:/);
      // and a v0.3 client gets it too: the card says supportsAuthenticatedExtendedCard, the method answers
      const legacyCard = (await (await fetch(`${guarded.url}/.well-known/agent-card.json`)).json()) as { supportsAuthenticatedExtendedCard?: boolean };
      expect(legacyCard.supportsAuthenticatedExtendedCard).toBe(true);
      const legacy = await fetch(`${guarded.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${clients.carol}` }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'agent/getAuthenticatedExtendedCard', params: {} }) });
      expect(((await legacy.json()) as { result: { description: string } }).result.description).toContain('You are client "carol"');
      // a server without credentials offers none: asked anyway, it says so
      const asked = await fetch(`${open.url}/a2a/jsonrpc`, { method: 'POST', headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }) });
      expect(JSON.stringify(await asked.json())).toMatch(/does not support authenticated extended card/);
      expect((await (await clientOf(open.url)).getAgentCard()).description).not.toContain('at most');
    } finally {
      await guarded.close();
      await open.close();
    }
  });

  it('will not listen beyond loopback without a token', async () => {
    await expect(serveA2A({ workspace: tempDir(), host: '0.0.0.0', notify: () => undefined })).rejects.toThrow(/^listening on 0\.0\.0\.0 needs a token \(set A2A_SERVE_TOKEN, or A2A_SERVE_TOKENS for named clients\)/);
  });

  it('gives an address others can use in the card when it listens on every interface', async () => {
    const lines: string[] = [];
    const open = await serveA2A({ workspace: tempDir(), host: '0.0.0.0', token: 'a-token-of-sixteen-chars', notify: (line) => lines.push(line), run: { scriptData: SERVE_SCRIPT } });
    try {
      expect(open.url).not.toContain('0.0.0.0');
      expect(open.url).toMatch(/^http:\/\/[^/]+:\d+$/);
      expect(lines.some((l) => l.includes(`the agent card gives ${open.url}`))).toBe(true);
    } finally {
      await open.close();
    }
  });
});
