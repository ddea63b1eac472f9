import { describe, expect, it } from 'vitest';
import { createActor } from 'xstate';
import { Family, MAILBOX_LIMIT } from '../../actors/session/family.js';
import { injectionText } from '../../actors/session/prompts.js';
import type { TaskUpdate } from '../../machines/protocol/index.js';
import { START_SLICE } from '../../actors/session/supervisor.js';
import { complete, harness, spawnParallel, type Harness } from '../helpers.js';


/** A parent (standalone @agent) that spawns `children` in parallel, then waits for updates. */
function parentSpawning(children: Array<{ agentType?: string; prompt: string }>, then: object[] = [{ text: 'waiting' }], reactions: object[] = []) {
  return {
    agent: 'agent',
    depth: 0,
    turns: [spawnParallel(children), ...then],
    reactions: [{ when: 'All your sub-tasks have finished', turn: complete('all done') }, ...reactions],
  };
}

const results = (h: Harness, id: string) => h.of('subtask.result', id);

function familyOf(h: Harness, handle: { root: { getSnapshot(): unknown } }, sessionId = 'session'): Family {
  const root = (handle.root.getSnapshot() as { family: Family }).family;
  const session = root.members.get(sessionId)?.ref;
  const sup = (session?.getSnapshot() as { children: { subtasks?: { getSnapshot(): { family: Family } } } }).children.subtasks;
  return sup!.getSnapshot().family;
}

describe('supervisor: every child produces exactly one result for its owner', () => {
  it('should deliver the result of a child that completes', async () => {
    const h = harness({
      script: { rules: [parentSpawning([{ prompt: 'part one' }]), { agent: 'agent', depth: 1, turns: [complete('one done', 100)] }] },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    expect(results(h, 'session.1')).toHaveLength(1);
    expect(results(h, 'session.1')[0]!.data).toMatchObject({ status: 'success', output: 'one done' });
    expect(run.result()).toMatchObject({ status: 'success', output: 'all done' });
  });

  it('should deliver `failed` when the child crashes (its model call throws)', async () => {
    const h = harness({
      script: { rules: [parentSpawning([{ prompt: 'will crash' }]), { agent: 'agent', depth: 1, turns: [{ error: 'boom' }] }] },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    expect(results(h, 'session.1').map((e) => e.data)).toEqual([expect.objectContaining({ status: 'failed', error: 'model call failed: boom' })]);
  });

  it('should end a child that never completes and keeps answering inquiries with a partial fallback result', async () => {
    const h = harness({
      config: { idle: { idleThresholdMs: 1000, inquiryDelayMs: 100, inquiryTimeoutMs: 5000, maxInquiries: 2 } },
      script: {
        rules: [
          parentSpawning([{ prompt: 'chatty' }]),
          {
            agent: 'agent',
            depth: 1,
            turns: [{ text: 'I am thinking about it' }],
            reactions: [{ when: 'appear to be idle', turn: { text: 'still thinking' } }],
          },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    expect(h.of('inquiry.sent', 'session.1')).toHaveLength(2);
    expect(results(h, 'session.1').map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'partial', output: 'still thinking', fallback: true }),
    ]);
  });

  it('should fail a child that does not answer its idle inquiry: "unresponsive after idle inquiry"', async () => {
    const h = harness({
      config: { idle: { idleThresholdMs: 1000, inquiryDelayMs: 100, inquiryTimeoutMs: 2000 } },
      script: {
        rules: [
          parentSpawning([{ prompt: 'goes silent' }]),
          { agent: 'agent', depth: 1, turns: [{ text: 'hmm' }], reactions: [{ when: 'appear to be idle', turn: { hang: true } }] },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    expect(results(h, 'session.1').map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'failed', error: 'unresponsive after idle inquiry' }),
    ]);
    // the parent learnt it as a `failed` update
    const injected = h.model.calls.filter((c) => c.sessionId === 'session').flatMap((c) => c.request.messages.map((m) => m.content));
    expect(injected.some((t) => t.includes('Sub-task session.1 (@agent) FAILED: unresponsive after idle inquiry'))).toBe(true);
  });

  it('should time a child out at its deadline with a `timeout` result, enforced by the owner', async () => {
    const h = harness({
      config: { limits: { subtaskTimeoutMs: 3000 } },
      script: { rules: [parentSpawning([{ prompt: 'slow' }]), { agent: 'agent', depth: 1, turns: [{ hang: true }] }] },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    expect(results(h, 'session.1').map((e) => e.data)).toEqual([expect.objectContaining({ status: 'timeout' })]);
    expect(h.clock.now()).toBeGreaterThanOrEqual(3000);
  });

  it('should deliver `cancelled` for a child its parent cancels, and for children of a stopped parent', async () => {
    const h = harness({
      config: { limits: { maxDepthStandalone: 2 } },
      script: {
        rules: [
          parentSpawning(
            [{ prompt: 'cancel me' }, { prompt: 'has a child' }],
            [
              { delayMs: 100, toolCalls: [{ name: 'a2a_cancel_subtask', arguments: { ids: ['$children[0]', '$children[1]'], reason: 'not needed' } }] },
              { text: 'ok' },
            ],
          ),
          { agent: 'agent', depth: 1, prompt: 'cancel me', turns: [{ hang: true }] },
          {
            agent: 'agent',
            depth: 1,
            prompt: 'has a child',
            turns: [{ toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@reviewer', prompt: 'grandchild', expectedOutput: 'x', blocking: true } }] }],
          },
          { agent: 'reviewer', turns: [{ hang: true }] },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    expect(h.of('subtask.spawned', 'session.2.1')).toHaveLength(1);
    for (const id of ['session.1', 'session.2', 'session.2.1']) {
      expect(results(h, id).map((e) => e.data.status), id).toEqual(['cancelled']);
    }
  });

  it('should let extra spawns wait for a slot instead of failing (maxParallelSubtasks)', async () => {
    const h = harness({
      config: { limits: { maxParallelSubtasks: 2 } },
      script: {
        rules: [
          parentSpawning([1, 2, 3, 4, 5].map((i) => ({ prompt: `part ${i}` }))),
          { agent: 'agent', depth: 1, turns: [complete('done', 100)] },
        ],
      },
    });
    const run = h.standalone('fan out');
    let maxRunning = 0;
    await h.until(() => {
      const family = run.result() === null ? familyOf(h, run) : null;
      if (family) maxRunning = Math.max(maxRunning, family.running);
      return run.result() !== null;
    });
    expect(h.of('subtask.queued').map((e) => e.subTaskId)).toEqual(['session.3', 'session.4', 'session.5']);
    expect(maxRunning).toBe(2);
    expect(h.of('subtask.result').filter((e) => e.subTaskId?.startsWith('session.') && e.data.status === 'success')).toHaveLength(5);
  });

  it('should make the actors of a large spawn in slices, all with their slots: messages wait, a cancel settles, every child reports once', async () => {
    const n = START_SLICE * 2 + 22;
    const h = harness({
      config: { limits: { maxParallelSubtasks: n, maxSubtasksPerWorker: n, spawnRatePerMinute: n } },
      script: {
        rules: [
          parentSpawning(
            Array.from({ length: n }, (_, i) => ({ prompt: `part ${i}` })),
            [
              {
                toolCalls: [
                  { name: 'a2a_send_subtask_message', arguments: { subTaskId: `$children[${n - 2}]`, message: 'use the fast path' } },
                  { name: 'a2a_cancel_subtask', arguments: { ids: [`$children[${n - 1}]`], reason: 'not needed' } },
                ],
              },
              { text: 'waiting' },
            ],
          ),
          { agent: 'agent', depth: 1, turns: [complete('done', 100)], reactions: [{ when: 'use the fast path', turn: complete('took the fast path') }] },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    // all had their slots at once; the parent's next step came before the last slice was made:
    // its cancel settled a child that had not started, its message waited for its child to start
    expect(h.of('subtask.queued')).toHaveLength(0);
    expect(results(h, `session.${n}`).map((e) => e.data.error)).toEqual(['cancelled before it started: not needed']);
    expect(h.of('session.state', `session.${n}`)).toHaveLength(0);
    expect(h.of('subtask.queued')).toHaveLength(0);
    const statuses = Array.from({ length: n }, (_, i) => results(h, `session.${i + 1}`).map((e) => e.data.status));
    expect(statuses.filter((s) => s.length !== 1)).toEqual([]);
    expect(statuses.at(-1)).toEqual(['cancelled']);
    expect(statuses.slice(0, -1).every((s) => s[0] === 'success')).toBe(true);
    expect(results(h, `session.${n - 1}`)[0]!.data.output).toBe('took the fast path');
  });

  it('should keep results cached so that a finished sub-task can be queried again', async () => {
    const h = harness({
      script: {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@agent', prompt: 'quick', expectedOutput: 'x', blocking: true } }] },
              { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: ['$children[0]'] } }] },
              { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: ['$children[0]'] } }] },
              complete('ok'),
            ],
          },
          { agent: 'agent', depth: 1, turns: [complete('cached result')] },
        ],
      },
    });
    const run = h.standalone('requery');
    await h.until(() => run.result() !== null);
    const toolResults = h.model.calls
      .filter((c) => c.sessionId === 'session')
      .at(-1)!
      .request.messages.filter((m) => m.role === 'tool' && m.name === 'a2a_await_subtasks');
    expect(toolResults).toHaveLength(2);
    for (const m of toolResults) expect(JSON.parse(m.content).results[0]).toMatchObject({ taskId: 'session.1', output: 'cached result' });
  });

  it('should hand results that finish out of order to the parent one by one while it keeps working', async () => {
    const h = harness({
      script: {
        rules: [
          parentSpawning(
            [{ prompt: 'slow 300' }, { prompt: 'fast 100' }, { prompt: 'mid 200' }],
            [{ text: 'working on my own part meanwhile' }],
            [{ when: 'completed \\(', turn: { text: 'noted' } }],
          ),
          { agent: 'agent', depth: 1, prompt: 'slow', turns: [complete('slow', 300)] },
          { agent: 'agent', depth: 1, prompt: 'fast', turns: [complete('fast', 100)] },
          { agent: 'agent', depth: 1, prompt: 'mid', turns: [complete('mid', 200)] },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    const parentCalls = h.model.calls.filter((c) => c.sessionId === 'session');
    const seen = parentCalls.map((c) => {
      const last = c.request.messages.at(-1)!;
      return last.role === 'user' && 'synthetic' in last && last.synthetic ? (/Sub-task (session\.\d)/.exec(last.content)?.[1] ?? '') : '';
    });
    // one wake-up per result, in completion order: session.2 (100 ms), session.3 (200 ms), session.1 (300 ms)
    expect(seen.filter(Boolean)).toEqual(['session.2', 'session.3', 'session.1']);
    expect(run.result()).toMatchObject({ status: 'success' });
  });
});

describe('supervisor: edge cases', () => {
  it('should ignore a second result for the same child and say so', async () => {
    const h = harness({ script: { rules: [] } });
    const family = createActor(h.runtime.supervisor, { input: { owner: null, ownerId: 'test', maxParallel: 4 }, clock: h.clock });
    family.start();
    const spec = h.standalone('x').spec;
    family.send({ type: 'SPAWN', requestId: 'r', specs: [{ ...spec, id: 'c1' }] });
    const result = { taskId: 'c1', status: 'success' as const, output: 'first' };
    family.send({ type: 'xstate.done.actor.c1', actorId: 'c1', output: result } as never);
    family.send({ type: 'xstate.done.actor.c1', actorId: 'c1', output: { ...result, output: 'second' } } as never);
    const f = (family.getSnapshot() as unknown as { family: Family }).family;
    expect(f.result('c1')).toMatchObject({ output: 'first' });
    expect(h.of('warning').map((e) => e.data.message)).toContain('second result for c1 ignored (done)');
  });

  it('should turn a child actor error into a `failed` result', async () => {
    const h = harness({ script: { rules: [] } });
    const family = createActor(h.runtime.supervisor, { input: { owner: null, ownerId: 'test', maxParallel: 4 }, clock: h.clock });
    family.start();
    const spec = h.standalone('x').spec;
    family.send({ type: 'SPAWN', requestId: 'r', specs: [{ ...spec, id: 'c2' }] });
    family.send({ type: 'xstate.error.actor.c2', actorId: 'c2', error: new Error('kaput') } as never);
    const f = (family.getSnapshot() as unknown as { family: Family }).family;
    expect(f.result('c2')).toMatchObject({ status: 'failed', error: 'crashed: kaput', fallback: true });
  });

  it('should refuse a spawn that breaks a limit with a clear error and start nothing', async () => {
    const h = harness({
      config: { limits: { maxSubtasksPerWorker: 2 } },
      script: {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              {
                toolCalls: [
                  {
                    name: 'a2a_spawn_parallel_subtasks',
                    arguments: { subtasks: [1, 2, 3].map((i) => ({ agentType: '@agent', prompt: `p${i}`, expectedOutput: 'x' })) },
                  },
                ],
              },
              complete('gave up'),
            ],
          },
        ],
      },
    });
    const run = h.standalone('too many');
    await h.until(() => run.result() !== null);
    const toolResult = h.model.calls.at(-1)!.request.messages.find((m) => m.role === 'tool')!;
    expect(toolResult).toMatchObject({ isError: true });
    expect(toolResult.content).toMatchInlineSnapshot(
      `"SUBTASK_LIMIT_EXCEEDED: Sub-task limit reached: worker session has spawned 0 of at most 2 sub-tasks and this call asks for 3 more. Work with the results you have, or do the rest yourself."`,
    );
    expect(h.of('subtask.spawned')).toHaveLength(0);
  });
});

describe('tools end to end', () => {
  it('should return partial results from a2a_await_subtasks at its timeout, the rest reporting later', async () => {
    const h = harness({
      script: {
        rules: [
          parentSpawning(
            [{ prompt: 'quick' }, { prompt: 'long' }],
            [{ toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children', timeoutMs: 1000 } }] }, { text: 'continuing with what I have' }],
          ),
          { agent: 'agent', depth: 1, prompt: 'quick', turns: [complete('quick result', 100)] },
          { agent: 'agent', depth: 1, prompt: 'long', turns: [complete('long result', 5000)] },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => run.result() !== null);
    const awaitResult = h.model.calls
      .flatMap((c) => c.request.messages)
      .find((m) => m.role === 'tool' && m.name === 'a2a_await_subtasks')!;
    expect(JSON.parse(awaitResult.content)).toMatchObject({
      results: [{ taskId: 'session.1', status: 'success', output: 'quick result' }],
      stillRunning: ['session.2'],
    });
    // the late result still arrived, as an update, and was not lost
    const injected = h.model.calls.at(-1)!.request.messages.filter((m) => m.role === 'user').map((m) => m.content).join('\n');
    expect(injected).toContain('Sub-task session.2 (@agent) completed (success):\nlong result');
    expect(injected).not.toContain('Sub-task session.1 (@agent) completed'); // delivered by the tool: not injected again
  });

  it('should refuse a cycle: the same agent type and prompt as an ancestor', async () => {
    const h = harness({
      config: { limits: { maxDepthStandalone: 2 } },
      script: {
        rules: [
          {
            agent: 'agent',
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@agent', prompt: 'do the thing', expectedOutput: 'x' } }] },
              complete('stopped looping'),
            ],
          },
        ],
      },
    });
    const run = h.standalone('do the thing');
    await h.until(() => run.result() !== null);
    const tool = h.model.calls.find((c) => c.sessionId === 'session' && c.request.messages.some((m) => m.role === 'tool'))!.request.messages.find((m) => m.role === 'tool')!;
    expect(tool.content).toMatch(/^CYCLE_DETECTED: Cycle detected: @agent with this same prompt is already an ancestor/);
  });

  it('should route a child\'s question to its parent and the parent\'s answer back to the child', async () => {
    const h = harness({
      script: {
        rules: [
          parentSpawning(
            [{ prompt: 'needs input' }],
            [{ text: 'waiting' }],
            [{ when: 'asks: "Which port', turn: { toolCalls: [{ name: 'a2a_send_subtask_message', arguments: { subTaskId: '$children[0]', message: 'Use 8443.' } }] } }],
          ),
          {
            agent: 'agent',
            depth: 1,
            turns: [{ toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: 'Which port should the server use?' } }] }, { text: 'waiting for the answer' }],
            reactions: [{ when: 'Message from session: Use 8443', turn: complete('configured port 8443') }],
          },
        ],
      },
    });
    const run = h.standalone('parent');
    await h.until(() => run.result() !== null);
    expect(h.of('subtask.result', 'session.1')[0]!.data).toMatchObject({ status: 'success', output: 'configured port 8443' });
  });

  it('should hand over pending updates through a2a_check_updates and not inject them again', async () => {
    const h = harness({
      script: {
        rules: [
          parentSpawning(
            [{ prompt: 'fast' }],
            [{ delayMs: 500, toolCalls: [{ name: 'a2a_check_updates', arguments: {} }] }, complete('done')],
          ),
          { agent: 'agent', depth: 1, turns: [complete('fast result', 100)] },
        ],
      },
    });
    const run = h.standalone('parent');
    await h.until(() => run.result() !== null);
    const last = h.model.calls.filter((c) => c.sessionId === 'session').at(-1)!.request.messages;
    const check = last.find((m) => m.role === 'tool' && m.name === 'a2a_check_updates')!;
    expect(JSON.parse(check.content)).toMatchObject({ updates: [{ type: 'completed', subTaskId: 'session.1' }], stillRunning: 0 });
    expect(last.filter((m) => m.role === 'user' && m.content.includes('completed (success)'))).toHaveLength(0);
  });

  it('should hand over only the named sub-tasks\' updates with a2a_check_updates subTaskIds, and keep the others for the next step', async () => {
    const h = harness({
      script: {
        rules: [
          parentSpawning(
            [{ prompt: 'fast' }, { prompt: 'second' }],
            [
              {
                delayMs: 500,
                toolCalls: [
                  { name: 'a2a_check_updates', arguments: { subTaskIds: ['session.9'] } },
                  { name: 'a2a_check_updates', arguments: { subTaskIds: ['session.1'] } },
                ],
              },
              { toolCalls: [{ name: 'a2a_list_agents', arguments: {} }] },
              complete('done'),
            ],
          ),
          { agent: 'agent', depth: 1, prompt: 'fast', turns: [complete('fast result', 100)] },
          { agent: 'agent', depth: 1, prompt: 'second', turns: [complete('second result', 200)] },
        ],
      },
    });
    const run = h.standalone('parent');
    await h.until(() => run.result() !== null);
    const calls = h.model.calls.filter((c) => c.sessionId === 'session');
    const toolResults = calls.at(-1)!.request.messages.filter((m) => m.role === 'tool' && m.name === 'a2a_check_updates');
    expect(toolResults[0]!.content).toBe('session.9 is not one of your sub-tasks; yours: session.1, session.2');
    const first = JSON.parse(toolResults[1]!.content) as { updates: Array<{ subTaskId: string }> };
    expect(first.updates.map((u) => u.subTaskId)).toEqual(['session.1']);
    // the other's result stays, and reaches the next step once (and session.1's not again)
    // the other's result stays, and reaches a later step once (and session.1's is never injected)
    const injected = calls.at(-1)!.request.messages.filter((m) => m.role === 'user' && /completed \(success\)/.test(m.content)).map((m) => m.content);
    expect(injected.filter((c) => c.includes('session.2'))).toHaveLength(1);
    expect(injected.filter((c) => c.includes('session.1'))).toHaveLength(0);
    expect(run.result()!.status).toBe('success');
  });
});

describe('a finished child once its owner has its result (issue 38: a long run holds only live sessions)', () => {
  const owner = { id: 'p', correlation: { runId: 'r1' } } as never;
  const settledChild = (family: Family, id: string, output: string) => {
    family.members.set(id, { spec: { id } as never, ref: null, state: 'settled', result: { taskId: id, status: 'success', output, usage: { inputTokens: 1, outputTokens: 2 }, diffStats: { filesChanged: 1, insertions: 3, deletions: 0 } } as never });
    family.post({ id: `${id}:result`, type: 'completed', subTaskId: id, parentId: 'p', agentType: '@coder', result: family.members.get(id)!.result!, timestamp: 0 }, 1);
  };

  it('keeps the full result until the owner acknowledges it, then a slim record: status and clipped output, no spec', () => {
    const family = new Family('p', owner, 5);
    settledChild(family, 'p.1', 'short');
    settledChild(family, 'p.2', 'x'.repeat(2000));
    expect(family.members.get('p.1')!.result).toHaveProperty('usage');
    const batch = family.batch()!;
    family.acknowledge(batch.upTo);
    expect(family.members.size).toBe(0);
    expect([...family.finished.keys()]).toEqual(['p.1', 'p.2']);
    expect(family.result('p.1')).toEqual({ taskId: 'p.1', status: 'success', output: 'short' });
    expect(family.result('p.2')!.output).toHaveLength(500 + '… [1500 more characters were delivered to the parent]'.length);
    expect(family.result('p.2')!.output.endsWith('… [1500 more characters were delivered to the parent]')).toBe(true);
    expect(family.has('p.1')).toBe(true);
    expect(family.status('p.1')).toBe('settled');
    expect(family.ids()).toEqual(['p.1', 'p.2']);
  });

  it('does the same for results a watch hands over, answers a later watch from the record, and keeps records through a checkpoint', () => {
    const family = new Family('p', owner, 5);
    settledChild(family, 'p.1', 'one');
    family.watch = { ids: ['p.1'], remaining: new Set() };
    expect(family.closeWatch()!.results[0]).toHaveProperty('usage');
    expect(family.mailbox.size).toBe(0);
    expect(family.finished.has('p.1')).toBe(true);
    family.watch = { ids: ['p.1'], remaining: new Set() };
    expect(family.closeWatch()).toEqual({ results: [{ taskId: 'p.1', status: 'success', output: 'one' }], pending: [] });
    const restored = Family.restore(JSON.parse(JSON.stringify(family.persisted())), () => undefined);
    expect(restored.result('p.1')).toEqual({ taskId: 'p.1', status: 'success', output: 'one' });
    expect(restored.unsettled).toBe(0);
  });

  it('keeps the result where nobody acknowledges (the root family, read by the run) and while a completion waits', () => {
    const root = new Family('cli', null, 1);
    settledChild(root, 'session', 'done');
    root.acknowledge(root.batch()!.upTo);
    expect(root.members.get('session')!.result).toHaveProperty('usage');
    const family = new Family('p', owner, 5);
    settledChild(family, 'p.1', 'one');
    const batch = family.batch()!;
    family.acknowledge(batch.upTo, new Set(['p.9'])); // another child's updates only
    expect(family.members.has('p.1')).toBe(true);
  });

  it('leaves only slim records behind a fan-out, and a new spawn after a restore does not reuse a finished id', async () => {
    const children = Array.from({ length: 30 }, (_, i) => ({ prompt: `part ${i}` }));
    const h = harness({
      config: { limits: { maxParallelSubtasks: 30, maxSubtasksPerWorker: 30, spawnRatePerMinute: 300 } },
      script: {
        rules: [
          { agent: 'agent', depth: 0, turns: [spawnParallel(children), { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children' } }] }, { text: 'resting' }] },
          { agent: 'agent', depth: 1, turns: [complete('part done')] },
        ],
      },
    });
    const run = h.standalone('fan out');
    await h.until(() => h.of('subtask.result').length === 30);
    await h.until(() => familyOf(h, run).members.size === 0);
    const family = familyOf(h, run);
    expect(family.finished.size).toBe(30);
    expect(family.result('session.7')).toEqual({ taskId: 'session.7', status: 'success', output: 'part done' });
    const persisted = JSON.parse(JSON.stringify(family.persisted()));
    expect(persisted.members).toEqual([]);
    expect(persisted.finished).toHaveLength(30);
    expect(JSON.stringify(persisted)).not.toContain('part 7'); // no prompt, no spec
    // restored in another process (a fresh runtime): the finished ids stay taken
    const later = harness({ script: { rules: [] } });
    expect(later.runtime.ids.child({ id: 'other', correlation: family.owner!.correlation })).toBe('other.1');
    createActor(later.runtime.supervisor, { snapshot: persisted, input: undefined as never, clock: later.clock } as never);
    expect(later.runtime.ids.child({ id: 'session', correlation: family.owner!.correlation })).toBe('session.31');
  });
});

describe('the update mailbox (seed 002: at most 100 wait)', () => {
  const update = (n: number, type: TaskUpdate['type'], subTaskId: string, kind?: TaskUpdate['kind']): TaskUpdate => ({
    id: `u${n}`,
    type,
    subTaskId,
    parentId: 'p',
    agentType: '@coder',
    ...(kind ? { kind, message: `${kind} ${n}` } : {}),
    ...(type === 'completed' || type === 'failed' ? { result: { taskId: subTaskId, status: type === 'completed' ? 'success' : 'failed', output: 'r' } } : {}),
    timestamp: 0,
  });

  it('drops the oldest status updates beyond the limit, counts them for the owner, and never drops results, questions or errors', () => {
    const family = new Family('p', null, 5);
    family.post(update(0, 'completed', 'p.1'), 1);
    family.post(update(1, 'progress', 'p.2', 'question'), 1);
    for (let i = 0; i < 150; i++) family.post(update(10 + i, 'progress', 'p.3', 'status'), 2);
    family.post(update(500, 'failed', 'p.4'), 3);
    family.post(update(501, 'progress', 'p.5', 'error'), 3);
    expect(family.mailbox.size).toBe(MAILBOX_LIMIT);
    const batch = family.batch()!;
    expect(batch.dropped).toBe(54); // 154 posted, 100 kept
    const ids = batch.updates.map((u) => u.id);
    expect(ids).toEqual(expect.arrayContaining(['u0', 'u1', 'u500', 'u501']));
    expect(ids).not.toContain('u10'); // the oldest status updates went first
    expect(ids).toContain('u159'); // the newest stayed
    // a status update the owner already holds (in the batch it was sent) is not lost to it: not counted
    family.post(update(600, 'progress', 'p.3', 'status'), 4);
    expect(family.dropped).toBe(54);
    // once the owner acknowledges the batch, the count starts again
    family.acknowledge(batch.upTo);
    expect(family.dropped).toBe(0);
    for (let i = 0; i < 101; i++) family.post(update(700 + i, 'progress', 'p.3', 'status'), 5);
    expect(family.batch()!.dropped).toBe(2); // u600 and u700 went: the owner never had them
  });

  it('keeps dropping the oldest status updates after a restore, and what was not yet told', () => {
    const family = new Family('p', null, 5);
    for (let i = 0; i < 110; i++) family.post(update(i, 'progress', 'p.3', 'status'), 1);
    const restored = Family.restore(JSON.parse(JSON.stringify(family.persisted())), () => undefined);
    expect(restored.dropped).toBe(10);
    restored.post(update(500, 'progress', 'p.3', 'status'), 2);
    const ids = restored.batch()!.updates.map((u) => u.id);
    expect(ids).toContain('u500'); // the newest stays: the oldest restored one went
    expect(ids).not.toContain('u10');
  });

  it('keeps every result even past the limit', () => {
    const family = new Family('p', null, 5);
    for (let i = 0; i < 130; i++) family.post(update(i, 'completed', `p.${i}`), 1);
    expect(family.mailbox.size).toBe(130);
    expect(family.batch()!.dropped).toBeUndefined();
  });

  it('tells the model how many were dropped', () => {
    const text = injectionText([], [update(1, 'completed', 'p.1')], 0, 54)!;
    expect(text).toContain(`- 54 older status update(s) from your sub-tasks were dropped: at most ${MAILBOX_LIMIT} wait for you (results, questions and errors are never dropped).`);
  });
});
