/**
 * What `a2a serve --a2a` keeps of a task (records.ts), below the server: the event log written
 * burst by burst (on disk before anything a later microtask does, such as sending the events;
 * read and snapshot writes see every event appended), events folded into a task (artifacts found
 * by id, replaced or extended, never changed in place), and the copy of a held task the SDK gets
 * (its changes never reach the task the server holds).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { StreamResponse, Task, TaskState } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { applyEvent, applyPayload, FileServedTasks, RecordTaskStore } from '../../adapters/a2aProtocol/records.js';
import type { A2AServedEvent, A2AServedTask } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';

const TASK = 'task-1';

function emptyTask(): Task {
  return { id: TASK, contextId: 'ctx', status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: '2026-01-01T00:00:00.000Z' }, artifacts: [], history: [], metadata: {} };
}

function artifactEvent(seq: number, artifactId: string, text: string, append = false): A2AServedEvent {
  const payload = { $case: 'artifactUpdate', value: { taskId: TASK, contextId: 'ctx', artifact: { artifactId, name: artifactId, description: '', parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' }], metadata: undefined, extensions: [] }, append, lastChunk: true, metadata: { seq } } };
  return { seq, at: seq, event: StreamResponse.toJSON({ payload } as StreamResponse) as Record<string, unknown> };
}

function record(task: Task, seq = 0): A2AServedTask {
  return { version: 1, task: Task.toJSON(task) as Record<string, unknown>, runId: null, workspace: '/w', agent: 'coder', facts: [], waitingFor: null, seq, updatedAt: 0 };
}

const logLines = (store: FileServedTasks) => {
  const file = join(store.dir, `${TASK}.events.jsonl`);
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as A2AServedEvent).seq) : [];
};

const partsOf = (task: Task, id: string) => task.artifacts.find((a) => a.artifactId === id)?.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')) ?? [];

describe('served task records', () => {
  it('writes the events of one burst together, in order, before the next microtask', async () => {
    const store = new FileServedTasks(tempDir('a2a-records-'), () => undefined);
    const written = [1, 2, 3].map((seq) => store.append(TASK, artifactEvent(seq, `a${seq}`, 'x')));
    // the burst is not over: nothing written yet
    expect(logLines(store)).toEqual([]);
    await Promise.resolve();
    expect(logLines(store)).toEqual([1, 2, 3]);
    await Promise.all(written);
    // a later burst follows it
    void store.append(TASK, artifactEvent(4, 'a4', 'x'));
    await Promise.resolve();
    expect(logLines(store)).toEqual([1, 2, 3, 4]);
  });

  it('reads, and writes a snapshot, with every event appended so far (none waits for its burst to end)', async () => {
    const store = new FileServedTasks(tempDir('a2a-records-'), () => undefined);
    await store.write(record(emptyTask()));
    void store.append(TASK, artifactEvent(1, 'a1', 'one'));
    const read = await store.read(TASK);
    expect(read?.events.map((e) => e.seq)).toEqual([1]);
    expect(read?.record.seq).toBe(1);
    void store.append(TASK, artifactEvent(2, 'a2', 'two'));
    // the snapshot says seq 2: the log holds event 2 before the snapshot is written
    await store.write({ ...record(emptyTask()), seq: 2 });
    expect(logLines(store)).toEqual([1, 2]);
  });

  it('refuses a task id that could leave the directory, for append as before', async () => {
    const store = new FileServedTasks(tempDir('a2a-records-'), () => undefined);
    await expect(store.append('../x', artifactEvent(1, 'a1', 'x'))).rejects.toThrow(/not allowed/);
  });

  it('folds artifacts by id: a new one is added, the same id replaces it, append adds its parts', () => {
    let task = emptyTask();
    for (let i = 0; i < 100; i++) task = applyEvent(task, artifactEvent(i + 1, `a${i}`, `v${i}`).event);
    expect(task.artifacts).toHaveLength(100);
    const before = task.artifacts[50]!;
    task = applyEvent(task, artifactEvent(101, 'a50', 'again').event);
    expect(task.artifacts).toHaveLength(100);
    expect(partsOf(task, 'a50')).toEqual(['again']);
    // replaced, not changed in place: whoever holds the old one still has it as it was
    expect(before.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : ''))).toEqual(['v50']);
    task = applyEvent(task, artifactEvent(102, 'a50', 'more', true).event);
    expect(partsOf(task, 'a50')).toEqual(['again', 'more']);
    // a list changed elsewhere is indexed again: an artifact pushed onto it is found
    task.artifacts.push({ ...task.artifacts[0]!, artifactId: 'outside', parts: [] });
    task = applyEvent(task, artifactEvent(103, 'outside', 'found').event);
    expect(task.artifacts).toHaveLength(101);
    expect(partsOf(task, 'outside')).toEqual(['found']);
  });

  it('gives the SDK a copy of a held task: what the SDK changes in it never reaches the held task', async () => {
    let held = emptyTask();
    held = applyPayload(held, StreamResponse.fromJSON(artifactEvent(1, 'a1', 'one').event).payload);
    const files = new FileServedTasks(tempDir('a2a-records-'), () => undefined);
    const store = new RecordTaskStore(files, (id) => (id === TASK ? held : undefined), '/w');
    const context = { user: { isAuthenticated: false, userName: '' } } as unknown as ServerCallContext;
    const copy = (await store.load(TASK, context))!;
    // what the SDK's ResultManager does with what it loads
    copy.status = { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: 'later' };
    copy.history = [...copy.history, { messageId: 'm', contextId: 'ctx', taskId: TASK, role: 2, parts: [], metadata: undefined, extensions: [], referenceTaskIds: [] }];
    copy.artifacts.push({ ...copy.artifacts[0]!, artifactId: 'a2' });
    copy.artifacts[0] = { ...copy.artifacts[0]!, name: 'renamed' };
    copy.metadata = { ...copy.metadata, by: 'sdk' };
    expect(held.status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect(held.history).toEqual([]);
    expect(held.artifacts.map((a) => [a.artifactId, a.name])).toEqual([['a1', 'a1']]);
    expect(held.metadata).toEqual({});
    // and its saves leave a held task to the runtime
    await store.save(copy, context);
    expect(await files.read(TASK)).toBeNull();
  });
});
