/**
 * Long runs as MCP tasks (the Tasks extension of 2026-07-28, `io.modelcontextprotocol/tasks`): a
 * client that declares it gets start_run as a task, follows it with tasks/get, answers the run's
 * permission through tasks/update, gets the run's result in the task, and cancels a run with
 * tasks/cancel. The v2 client SDK (2.4) has no requester for the extension: its callTool refuses
 * `resultType: "task"` (typescript-sdk#2637), so that one tools/call goes through the client's own
 * transport and is read as it comes; tasks/get, tasks/update and tasks/cancel go through
 * `client.request` with explicit result schemas, as the SDK documents for this extension.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Client, JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { closeAll, connect, reach, TASKS_EXTENSION, textOf, waitFor, workspace, type AnyClient, type ToolResult } from './fixtures/serverKit.js';
import { a2aBundle } from '../nats/cluster.js';

// the CLI's bundle (stdio servers are the CLI started as a process) is built before the tests, not in the first
beforeAll(() => void a2aBundle());
afterEach(closeAll);

const Task = z.looseObject({
  taskId: z.string(),
  status: z.enum(['working', 'input_required', 'completed', 'cancelled', 'failed']),
  statusMessage: z.string().optional(),
  createdAt: z.string(),
  lastUpdatedAt: z.string(),
  ttlMs: z.number().nullable(),
  pollIntervalMs: z.number().optional(),
  inputRequests: z.record(z.string(), z.looseObject({ method: z.string(), params: z.record(z.string(), z.unknown()) })).optional(),
  result: z.looseObject({ content: z.array(z.looseObject({ type: z.string(), text: z.string().optional() })), isError: z.boolean().optional() }).optional(),
});
type Task = z.infer<typeof Task>;

let ids = 0;
/** tools/call through the client's transport (2026-07-28 envelope included), its answer as it comes. */
function rawToolCall(v2: { client: Client; transport: Transport }, name: string, args: Record<string, unknown>, capabilities: Record<string, unknown>): Promise<JSONRPCMessage> {
  const id = `raw-${++ids}`;
  const { transport } = v2;
  const previous = transport.onmessage;
  return new Promise((resolve, reject) => {
    transport.onmessage = (message, extra) => {
      if ('id' in message && message.id === id && !('method' in message)) {
        transport.onmessage = previous;
        resolve(message);
      } else previous?.(message, extra);
    };
    const _meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientInfo': { name: 'editor-tasks', version: '2' }, 'io.modelcontextprotocol/clientCapabilities': capabilities };
    transport.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta } }).catch(reject);
  });
}

/** A JSON-RPC answer's result (an error fails the test, saying what it was). */
function resultOf(message: JSONRPCMessage): Record<string, unknown> {
  if (!('result' in message)) throw new Error(`expected a result, got ${JSON.stringify(message)}`);
  return message.result as Record<string, unknown>;
}

const tasksGet = (client: AnyClient, taskId: string) => client.v2!.client.request({ method: 'tasks/get', params: { taskId } }, Task);
const untilStatus = (client: AnyClient, taskId: string, status: Task['status']) =>
  waitFor(async () => {
    const task = await tasksGet(client, taskId);
    return task.status === status ? task : null;
  }, `task ${taskId} to be ${status}`);

describe('a2a mcp runs as MCP tasks', () => {
  it.each(['stdio', 'http'] as const)('should give start_run as a task over %s, ask its permission as an input request, take the answer through tasks/update and end with the result', async (over) => {
    const dir = workspace();
    const client = await connect('v2-modern', await reach(over, dir), { tasks: true });
    const created = await rawToolCall(client.v2!, 'start_run', { task: 'write the notes file', agent: '@coder' }, { extensions: { [TASKS_EXTENSION]: {} } });
    const task = resultOf(created);
    expect(task).toMatchObject({ resultType: 'task', status: 'working', ttlMs: null, pollIntervalMs: 1000 });
    const taskId = String(task.taskId);
    expect(Date.parse(String(task.createdAt))).not.toBeNaN();

    // the run's permission, as the elicitation it needs
    const asking = await untilStatus(client, taskId, 'input_required');
    const [key, ask] = Object.entries(asking.inputRequests ?? {})[0]!;
    expect(ask).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', message: expect.stringMatching(new RegExp(`^a2a run ${taskId}, task task( \\(@coder\\))? asks permission: file_creation_in_worktree: NOTES\\.md$`)), requestedSchema: { required: ['approved'] } },
    });
    expect(asking.statusMessage).toMatch(/1 waiting for an answer$/);

    // a wrong answer: refused, naming the field; nothing answered
    const update = (responses: Record<string, unknown>) => client.v2!.client.request({ method: 'tasks/update', params: { taskId, inputResponses: responses } }, z.looseObject({}));
    await expect(update({ [key]: { action: 'accept', content: { approved: 'yes' } } })).rejects.toThrow(new RegExp(`inputResponses\\.${key}\\.content: approved: Invalid input: expected boolean, received string .*nothing was answered`));
    expect((await tasksGet(client, taskId)).status).toBe('input_required');
    // answers to keys not asked are ignored (the extension's rule); the right one is taken
    await update({ 'never-asked': { action: 'accept', content: { approved: true } } });
    expect((await tasksGet(client, taskId)).status).toBe('input_required');
    await update({ [key]: { action: 'accept', content: { approved: true } } });

    const done = await untilStatus(client, taskId, 'completed');
    expect(done.statusMessage).toBe(`run ${taskId} completed`);
    expect(done.result!.isError).toBeUndefined();
    expect(done.result!.content[0]!.text).toContain(`run ${taskId} completed`);
    expect(done.result!.content[0]!.text).toContain('NOTES.md written');
    expect(Date.parse(done.lastUpdatedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt));
    expect(readFileSync(join(dir, 'NOTES.md'), 'utf8')).toBe('written through MCP\n');
    // the same run through the tools
    expect(textOf(await client.call('get_result', { runId: taskId }))).toContain('NOTES.md written');
  });

  it('should ask a worker\'s question as an input request, keep it waiting when declined, and take the answer', async () => {
    const dir = workspace();
    const client = await connect('v2-modern', await reach('http', dir), { tasks: true });
    const created = await rawToolCall(client.v2!, 'start_run', { task: 'which database', agent: '@reviewer', questions: 'human' }, { extensions: { [TASKS_EXTENSION]: {} } });
    const taskId = String(resultOf(created).taskId);
    const asking = await untilStatus(client, taskId, 'input_required');
    const [key, ask] = Object.entries(asking.inputRequests ?? {})[0]!;
    expect(ask).toMatchObject({ method: 'elicitation/create', params: { mode: 'form', message: expect.stringMatching(/asks: Which database should I use\?$/), requestedSchema: { required: ['text'] } } });
    const update = (responses: Record<string, unknown>) => client.v2!.client.request({ method: 'tasks/update', params: { taskId, inputResponses: responses } }, z.looseObject({}));
    await expect(update({ [key]: { action: 'accept', content: { approved: true } } })).rejects.toThrow(new RegExp(`inputResponses\\.${key}\\.content: text: Invalid input: expected string, received undefined \\(a question takes \\{ "text": "…" \\}\\); nothing was answered`));
    // declined or dismissed: a question has no answer yet, it keeps waiting
    await update({ [key]: { action: 'decline' } });
    await update({ [key]: { action: 'cancel' } });
    expect(Object.keys((await tasksGet(client, taskId)).inputRequests ?? {})).toEqual([key]);
    await update({ [key]: { action: 'accept', content: { text: 'postgres' } } });
    const done = await untilStatus(client, taskId, 'completed');
    expect(done.result!.content[0]!.text).toContain('schema for postgres');
  });

  it.each(['stdio', 'http'] as const)('should cancel the run when the task is cancelled (%s), and refuse an unknown task', async (over) => {
    const dir = workspace();
    const client = await connect('v2-modern', await reach(over, dir), { tasks: true });
    const created = await rawToolCall(client.v2!, 'start_run', { plan: { id: 'long', tasks: [{ id: 'think', agent: '@researcher', prompt: 'think forever' }] } }, { extensions: { [TASKS_EXTENSION]: {} } });
    const taskId = String(resultOf(created).taskId);
    await waitFor(async () => ((await tasksGet(client, taskId)).statusMessage?.includes('0/1 tasks ended') ? true : null), 'the worker to start');
    await client.v2!.client.request({ method: 'tasks/cancel', params: { taskId } }, z.looseObject({}));
    const cancelled = await untilStatus(client, taskId, 'cancelled');
    expect(cancelled.statusMessage).toBe(`run ${taskId} cancelled`);
    const record = JSON.parse(readFileSync(join(dir, '.a2a', 'runs', taskId, 'run.json'), 'utf8')) as { status: string };
    expect(record.status).toBe('cancelled');
    // cancelling again changes nothing
    await client.v2!.client.request({ method: 'tasks/cancel', params: { taskId } }, z.looseObject({}));
    expect((await tasksGet(client, taskId)).status).toBe('cancelled');
    await expect(tasksGet(client, 'no-such-task')).rejects.toThrow(/Failed to retrieve task: no task "no-such-task" on this server/);
  });

  it('should give a client without the extension the run as before, and refuse it the task methods', async () => {
    const dir = workspace();
    const { http } = (await reach('http', dir)) as { http: string };
    // a 2026-07-28 client that does not declare the extension
    const plain = await connect('v2-modern', { http });
    // the extension is offered on 2026-07-28 only
    expect(plain.v2!.client.getServerCapabilities()?.extensions).toEqual({ [TASKS_EXTENSION]: {} });
    const started = await plain.call('start_run', { task: 'write the notes file', agent: '@coder' });
    expect(started.structuredContent).toMatchObject({ runId: expect.any(String) });
    const runId = String(started.structuredContent!.runId);
    await expect(tasksGet(plain, runId)).rejects.toThrow(/tasks\/get needs the Tasks extension: declare "io\.modelcontextprotocol\/tasks"/);
    // a declaring client: the run was not started as a task
    const declaring = await connect('v2-modern', { http }, { tasks: true });
    await expect(tasksGet(declaring, runId)).rejects.toThrow(/no task/);
    // a client of an earlier revision: there are no task methods
    const legacy = await connect('v2-legacy', { http });
    expect(legacy.v2!.client.getServerCapabilities()?.extensions).toBeUndefined();
    await expect(legacy.v2!.client.request({ method: 'tasks/get', params: { taskId: runId } }, Task)).rejects.toThrow(/Method not found/);
    await plain.call('stop_run', { runId });
    expect(((await plain.call('list_runs')) as ToolResult).structuredContent!.runs).toHaveLength(1);
  });
});
