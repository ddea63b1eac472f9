import { describe, expect, it } from 'vitest';
import { complete, harness } from '../helpers.js';


describe('orchestrator', () => {
  it('should deploy a task only after its dependencies succeeded, with their outputs in its prompt', async () => {
    const h = harness({
      script: {
        rules: [
          { agent: 'architect', turns: [complete('the design', 200)] },
          { agent: 'coder', turns: [complete('the code')] },
        ],
      },
    });
    const run = h.run({
      tasks: [
        { id: 'build', agent: '@coder', prompt: 'implement the design', dependsOn: ['design'] },
        { id: 'design', agent: '@architect', prompt: 'design it' },
      ],
    });
    await h.until(() => run.summary() !== null);
    const deployed = h.of('worker.deployed');
    expect(deployed.map((e) => e.taskId)).toEqual(['design', 'build']);
    expect(deployed[1]!.ts).toBeGreaterThanOrEqual(200);
    const coderTask = h.model.calls.find((c) => c.sessionId === 'w-build')!.request.messages[0]!.content;
    expect(coderTask).toContain('## Results of the tasks this one depends on');
    expect(coderTask).toContain('### design (success)\nthe design');
    expect(run.summary()).toMatchObject({ status: 'completed', tasks: [{ id: 'build', state: 'succeeded' }, { id: 'design', state: 'succeeded' }] });
  });

  it('should skip the dependents of a failed task and end the run failed', async () => {
    const h = harness({
      script: {
        rules: [
          { agent: 'architect', turns: [{ error: 'provider down' }] },
          { agent: 'coder', turns: [complete('code')] },
          { agent: 'reviewer', turns: [complete('ok')] },
        ],
      },
    });
    const run = h.run({
      tasks: [
        { id: 'design', agent: '@architect', prompt: 'design' },
        { id: 'build', agent: '@coder', prompt: 'build', dependsOn: ['design'] },
        { id: 'review', agent: '@reviewer', prompt: 'review', dependsOn: ['build'] },
        { id: 'docs', agent: '@reviewer', prompt: 'independent' },
      ],
    });
    await h.until(() => run.summary() !== null);
    const summary = run.summary()!;
    expect(summary.status).toBe('failed');
    expect(Object.fromEntries(summary.tasks.map((t) => [t.id, [t.state, t.note]]))).toEqual({
      design: ['failed', null],
      build: ['skipped', 'dependency design failed'],
      review: ['skipped', 'dependency build skipped'],
      docs: ['succeeded', null],
    });
  });

  it('should run independent tasks in parallel, at most maxParallelWorkers at once', async () => {
    const h = harness({
      config: { limits: { maxParallelWorkers: 2 } },
      script: { rules: [{ agent: 'agent', turns: [complete('done', 1000)] }] },
    });
    const run = h.run({ tasks: ['a', 'b', 'c'].map((id) => ({ id, prompt: `task ${id}` })) });
    await h.until(() => run.summary() !== null);
    const results = h.of('subtask.result');
    expect(results.map((e) => e.subTaskId)).toEqual(['w-a', 'w-b', 'w-c']);
    expect(results.map((e) => e.ts)).toEqual([1000, 1000, 2000].map((t) => expect.closeTo(t, -2)));
  });

  it('should cancel the whole tree on STOP, every worker and sub-task still reporting cancelled', async () => {
    const h = harness({
      script: {
        rules: [
          {
            agent: 'architect',
            depth: 0,
            turns: [
              {
                toolCalls: [
                  {
                    name: 'a2a_spawn_parallel_subtasks',
                    arguments: { subtasks: ['a', 'b'].map((p) => ({ agentType: '@coder', prompt: p, expectedOutput: 'x' })) },
                  },
                ],
              },
              { text: 'waiting' },
            ],
          },
          {
            agent: 'coder',
            depth: 1,
            turns: [{ toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@reviewer', prompt: 'grandchild', expectedOutput: 'x' } }] }],
          },
          { agent: 'reviewer', turns: [{ hang: true }] },
          { agent: 'agent', turns: [{ hang: true }] },
        ],
      },
    });
    const run = h.run({
      tasks: [
        { id: 'design', agent: '@architect', prompt: 'design' },
        { id: 'other', agent: '@agent', prompt: 'other' },
        { id: 'later', agent: '@agent', prompt: 'later', dependsOn: ['design'] },
      ],
    });
    await h.advance(500);
    expect(h.of('subtask.spawned').map((e) => e.subTaskId)).toEqual(['w-design.1', 'w-design.2', 'w-design.1.1', 'w-design.2.1']);
    run.stop('emergency stop');
    await h.until(() => run.summary() !== null);
    const summary = run.summary()!;
    expect(summary.status).toBe('cancelled');
    expect(summary.stopReason).toBe('emergency stop');
    const cancelled = h.of('subtask.result').map((e) => [e.subTaskId, e.data.status]);
    expect(new Map(cancelled as Array<[string, string]>)).toEqual(
      new Map([
        ['w-design.1.1', 'cancelled'],
        ['w-design.2.1', 'cancelled'],
        ['w-design.1', 'cancelled'],
        ['w-design.2', 'cancelled'],
        ['w-design', 'cancelled'],
        ['w-other', 'cancelled'],
      ]),
    );
    expect(cancelled).toHaveLength(6); // exactly one result each
    expect(summary.tasks.find((t) => t.id === 'later')).toMatchObject({ state: 'cancelled', note: 'run stopped before it was deployed' });
  });

  it('should answer a worker\'s question when nobody can, so that it proceeds', async () => {
    const h = harness({
      script: {
        rules: [
          {
            agent: 'agent',
            turns: [{ toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: 'Which database?' } }] }, { text: 'waiting for an answer' }],
            reactions: [{ when: 'Message from orchestrator', turn: complete('assumed PostgreSQL') }],
          },
        ],
      },
    });
    const run = h.run({ tasks: [{ id: 't', prompt: 'store things' }] });
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.notes.map((n) => [n.kind, n.message])).toEqual([['question', 'Which database?']]);
    expect(run.summary()!.tasks[0]!.result?.output).toBe('assumed PostgreSQL');
  });
});
