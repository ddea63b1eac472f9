/**
 * The three bugs of seed 002 that must never come back:
 * 1. a child spawned with its parent's agent type,
 * 2. a parent blocked until all its children finish,
 * 3. an idle child marked completed.
 */
import { describe, expect, it } from 'vitest';
import { complete, harness } from '../helpers.js';


describe('seed 002 bug 1: a child never inherits its parent\'s agent type', () => {
  it('should run @coder and claude:reviewer children as coder and reviewer, with their own tools and prompts', async () => {
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
                    arguments: {
                      subtasks: [
                        { agentType: '@coder', prompt: 'implement it', expectedOutput: 'code' },
                        { agentType: 'claude:reviewer', prompt: 'review it', expectedOutput: 'verdict' },
                      ],
                    },
                  },
                ],
              },
              { text: 'waiting' },
            ],
            reactions: [{ when: 'All your sub-tasks have finished', turn: complete('plan') }],
          },
          { agent: 'coder', turns: [complete('code')] },
          { agent: 'reviewer', turns: [complete('lgtm')] },
        ],
      },
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@architect', prompt: 'design' }] });
    await h.until(() => run.summary() !== null);

    const coder = h.model.calls.find((c) => c.sessionId === 'w-t.1')!;
    const reviewer = h.model.calls.find((c) => c.sessionId === 'w-t.2')!;
    expect(coder.request.agentType).toEqual({ raw: '@coder', backend: 'default', agentName: 'coder' });
    expect(reviewer.request.agentType).toEqual({ raw: 'claude:reviewer', backend: 'claude', agentName: 'reviewer' });
    expect(coder.request.system).toContain('You are the coder.');
    expect(reviewer.request.system).toContain('You are the reviewer.');
    // the reviewer cannot spawn: it has no spawning tools; the coder (depth 1 < 2) has them
    expect(reviewer.request.tools.map((t) => t.name)).not.toContain('a2a_spawn_subtask');
    expect(coder.request.tools.map((t) => t.name)).toContain('a2a_spawn_subtask');
    expect(h.of('subtask.spawned').map((e) => e.agentType)).toEqual(['@coder', 'claude:reviewer']);
  });

  it('should refuse an unknown agent type at spawn time, listing the available types', async () => {
    const h = harness({
      script: {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@wizard', prompt: 'magic', expectedOutput: 'x' } }] },
              complete('done'),
            ],
          },
        ],
      },
    });
    const run = h.standalone('try');
    await h.until(() => run.result() !== null);
    const toolResult = h.model.calls.at(-1)!.request.messages.find((m) => m.role === 'tool')!;
    expect(toolResult.content).toMatchInlineSnapshot(
      `"UNKNOWN_AGENT_TYPE: Unknown agent type "@wizard". Available types: @agent, @architect, @code-sceptic, @coder, @debugger, @documentation-writer, @researcher, @reviewer (optionally prefixed with a backend: claude:, openai:)"`,
    );
  });
});

describe('seed 002 bug 2: a parent is never blocked until all children finish', () => {
  it('should wake the parent with the first result while the others still run', async () => {
    const h = harness({
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
                    arguments: {
                      subtasks: [
                        { agentType: '@agent', prompt: 'fast', expectedOutput: 'x' },
                        { agentType: '@agent', prompt: 'slow', expectedOutput: 'x' },
                      ],
                    },
                  },
                ],
              },
              { text: 'doing my own part' },
            ],
            reactions: [
              { when: 'All your sub-tasks have finished', turn: complete('done') },
              { when: 'still running', turn: { text: 'using the fast result already' } },
            ],
          },
          { agent: 'agent', depth: 1, prompt: 'fast', turns: [complete('fast result', 100)] },
          { agent: 'agent', depth: 1, prompt: 'slow', turns: [complete('slow result', 5000)] },
        ],
      },
    });
    const run = h.standalone('split');
    await h.until(() => run.result() !== null);
    const parent = h.model.calls.filter((c) => c.sessionId === 'session');
    const woken = parent.find((c) => c.reply?.text === 'using the fast result already')!;
    expect(woken).toBeDefined();
    const injected = woken.request.messages.at(-1)!.content;
    expect(injected).toContain('Sub-task session.1 (@agent) completed (success):\nfast result');
    expect(injected).toContain('1 of your sub-tasks are still running');
    // the spawn tool returned at once, long before the slow child finished
    const spawnResult = parent[1]!.request.messages.find((m) => m.role === 'tool')!;
    expect(JSON.parse(spawnResult.content)).toMatchObject({ subTaskIds: ['session.1', 'session.2'] });
  });
});

describe('seed 002 bug 3: an idle child is asked, never marked completed', () => {
  it('should keep a child that replies without a tool call idle, then send it an inquiry', async () => {
    const h = harness({
      config: { idle: { idleThresholdMs: 30_000, inquiryDelayMs: 5_000, inquiryTimeoutMs: 60_000 } },
      script: {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: '@agent', prompt: 'idler', expectedOutput: 'x' }] } }] },
              { text: 'waiting' },
            ],
            reactions: [
              { when: 'All your sub-tasks have finished', turn: complete('done') },
              { when: 'answered the inquiry', turn: { text: 'ok, waiting for it to finish' } },
            ],
          },
          {
            agent: 'agent',
            depth: 1,
            turns: [{ text: 'I think I am done?' }],
            reactions: [{ when: 'appear to be idle', turn: { text: 'Sorry, here it is.', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'the result' } }] } }],
          },
        ],
      },
    });
    const run = h.standalone('parent');
    await h.advance(1_000);
    const state = () => h.of('session.state', 'session.1').at(-1)!.data.state;
    expect(state()).toBe('idle');
    expect(h.of('subtask.result', 'session.1')).toHaveLength(0);
    await h.advance(33_000);
    expect(h.of('inquiry.sent', 'session.1')).toHaveLength(0); // 34 s idle: 30 s threshold + 5 s grace not yet over
    await h.advance(1_100);
    expect(h.of('inquiry.sent', 'session.1')).toHaveLength(1);
    await h.until(() => run.result() !== null);
    expect(h.of('subtask.result', 'session.1').map((e) => e.data)).toEqual([expect.objectContaining({ status: 'success', output: 'the result' })]);
    // the answer reached the parent as an idle_response
    expect(h.of('update.queued').filter((e) => e.data.updateType === 'idle_response').map((e) => e.data.message)).toEqual(['Sorry, here it is.']);
  });
});
