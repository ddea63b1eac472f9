/**
 * What `a2a serve --a2a` keeps bounded: tasks in flight (one past the limit is rejected, saying
 * why), finished tasks' records (removed once past their keeping), and push-notification configs
 * (kept with the task's record: a server started again still has them).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { serveA2A, type RunningA2AServer } from '../../adapters/a2aProtocol/server.js';
import { tempDir } from '../helpers.js';
import { clientOf, drain, lastStatusText, message, send, SERVE_SCRIPT, states, taskIdOf } from './fixtures.js';

const servers: RunningA2AServer[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close();
});

async function serve(workspace: string, extra: { maxTasks?: number; retainMs?: number } = {}): Promise<RunningA2AServer> {
  const server = await serveA2A({ workspace, version: '1.0.0', agent: 'coder', notify: () => undefined, run: { scriptData: SERVE_SCRIPT }, ...extra });
  servers.push(server);
  return server;
}

describe('a2a serve: bounded', () => {
  it('rejects a task past --max-tasks with a reason, and takes one again once a task has ended', async () => {
    const server = await serve(tempDir('a2a-limits-'), { maxTasks: 1 });
    const client = await clientOf(server.url);
    // the first waits for an answer (INPUT_REQUIRED): not finished
    const first = await drain(send(client, message('which database should I use?', { skill: 'coder' })));
    expect(states(first).at(-1)).toBe('INPUT_REQUIRED');
    const second = await drain(send(client, message('Say hello in Python', { skill: 'coder' })));
    expect(states(second).at(-1)).toBe('REJECTED');
    expect(lastStatusText(second)).toMatch(/this server runs at most 1 tasks at once \(a2a serve --max-tasks\) and 1 are not finished/);
    // answered, the first ends: a new task is taken
    const answered = await drain(send(client, message('postgres', { taskId: taskIdOf(first), contextId: String((first[0]!.payload as { value: { contextId: string } }).value.contextId) })));
    expect(states(answered).at(-1)).toBe('COMPLETED');
    const third = await drain(send(client, message('Say hello in Python', { skill: 'coder' })));
    expect(states(third).at(-1)).toBe('COMPLETED');
  });

  it('removes finished tasks past their keeping (snapshot, events, push configs) and keeps the others', async () => {
    const workspace = tempDir('a2a-limits-');
    const first = await serve(workspace);
    const client = await clientOf(first.url);
    const done = taskIdOf(await drain(send(client, message('Say hello in Python', { skill: 'coder' }))));
    const waiting = taskIdOf(await drain(send(client, message('which database should I use?', { skill: 'coder' }))));
    const dir = join(workspace, '.a2a', 'a2a-protocol', 'tasks');
    expect(existsSync(join(dir, `${done}.json`))).toBe(true);
    // a finished task is past a keeping of 0 ms; one waiting for an answer is not finished
    expect(await first.executor.sweep(0)).toBe(1);
    expect(readdirSync(dir).filter((n) => n.startsWith(done))).toEqual([]);
    expect(existsSync(join(dir, `${waiting}.json`))).toBe(true);
    await expect(client.getTask({ tenant: '', id: done })).rejects.toThrow(/not found/i);
  });

  it('keeps a push-notification config across a restart of the server', async () => {
    const workspace = tempDir('a2a-limits-');
    const first = await serve(workspace);
    let client = await clientOf(first.url);
    const id = taskIdOf(await drain(send(client, message('which database should I use?', { skill: 'coder' }))));
    await client.createTaskPushNotificationConfig({ tenant: '', taskId: id, id: 'hook-9', url: 'http://127.0.0.1:9/hook', token: 'tok', authentication: undefined } as never);
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: id, pageSize: 10, pageToken: '' })).configs.map((c) => c.id)).toEqual(['hook-9']);
    await first.close();
    servers.splice(servers.indexOf(first), 1);
    const second = await serve(workspace);
    client = await clientOf(second.url);
    const configs = await client.listTaskPushNotificationConfig({ tenant: '', taskId: id, pageSize: 10, pageToken: '' });
    expect(configs.configs.map((c) => [c.id, c.url])).toEqual([['hook-9', 'http://127.0.0.1:9/hook']]);
    await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: id, id: 'hook-9' } as never);
    expect((await client.listTaskPushNotificationConfig({ tenant: '', taskId: id, pageSize: 10, pageToken: '' })).configs).toEqual([]);
  });
});
