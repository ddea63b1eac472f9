/**
 * Models at run time: every call is priced; a spent budget refuses spawns and pauses the worker
 * with a clear event; switching a worker to a profile with a smaller context window summarizes
 * its conversation and it carries on.
 */
import { describe, expect, it } from 'vitest';
import { SUMMARY_HEADER, estimateTokens } from '../../actors/session/summarize.js';
import { workerState } from '../../actors/observation/runStatus.js';
import { complete, harness } from '../helpers.js';

const spawnOne = (prompt: string, blocking = true) => ({
  name: 'a2a_spawn_subtask',
  arguments: { agentType: '@coder', prompt, expectedOutput: 'x', blocking },
});

describe('cost and budgets', () => {
  it('prices every call, refuses spawns once the worker budget is spent, and pauses the worker with a budget.reached event', async () => {
    // the scripted model's input tokens at $1000 per million: a call of ~700 tokens costs ~$0.70
    const h = harness({
      script: {
        rules: [
          { agent: 'agent', turns: [{ toolCalls: [spawnOne('first part'), spawnOne('second part')] }, complete('never reached')] },
          { agent: 'coder', turns: [complete('part done')] },
        ],
      },
      costs: { prices: { scripted: { inputPerMTok: 1000, outputPerMTok: 0 } }, budgets: { workerUsd: 1 } },
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'two parts' }] });
    await h.until(() => h.of('budget.reached').length > 0);
    await h.advance(100);

    const called = h.of('model.called');
    expect(called.every((e) => Number(e.data.costUsd) > 0)).toBe(true);
    const spent = h.ledger.forWorker('test-run.w-t').usd;
    expect(spent).toBeCloseTo(called.reduce((sum, e) => sum + Number(e.data.costUsd), 0), 6);
    expect(spent).toBeGreaterThanOrEqual(1);

    // the second spawn came after the first child's call: refused, and the model is told why
    const refused = h.of('limit.hit', 'w-t');
    expect(refused.map((e) => e.data.code)).toEqual(['BUDGET_EXCEEDED']);
    const toolResult = h.of('tool.called', 'w-t').find((e) => String(e.data.content).includes('Budget reached'));
    expect(toolResult?.data.isError).toBe(true);
    expect(String(toolResult?.data.content)).toMatch(/BUDGET_EXCEEDED: Budget reached: the worker has spent \$1\.\d{4} of its \$1\.0000; no new sub-tasks/);

    // no further model call: the worker is paused and says why
    const budget = h.of('budget.reached', 'w-t')[0]!;
    expect(budget.data).toMatchObject({ scope: 'worker', limitUsd: 1 });
    expect(workerState(run.actor, 'w-t')).toBe('paused');
    const callsWhenPaused = h.model.calls.length;
    await h.advance(60_000, 5_000);
    expect(h.model.calls.length).toBe(callsWhenPaused);
    const notes = h.of('update.queued').filter((e) => String(e.data.message ?? '').startsWith('paused: the worker budget is spent'));
    expect(notes).toHaveLength(1);

    run.stop('budget reached');
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.status).toBe('cancelled');
  });

  it('the run budget stops every worker', async () => {
    const h = harness({
      script: { rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'a2a_list_agents', arguments: {} }] }, complete('done')] }] },
      costs: { prices: { scripted: { inputPerMTok: 1000, outputPerMTok: 0 } }, budgets: { runUsd: 1 } },
    });
    const run = h.run({
      tasks: [
        { id: 'a', agent: '@coder', prompt: 'a' },
        { id: 'b', agent: '@coder', prompt: 'b' },
      ],
    });
    await h.until(() => h.of('budget.reached').length === 2);
    expect(h.of('budget.reached').map((e) => e.data.scope)).toEqual(['run', 'run']);
    expect(h.ledger.totals().usd).toBeGreaterThanOrEqual(1);
    run.stop('done');
    await h.until(() => run.summary() !== null);
  });
});

describe('switching the model of a running worker', () => {
  it('summarizes a conversation that does not fit the smaller window, and the worker carries on', async () => {
    const long = (n: number) => `Step ${n}: ${'I looked at the parser and wrote down what I found. '.repeat(40)}`;
    const listAgents = { name: 'a2a_list_agents', arguments: {} };
    const h = harness({
      script: {
        rules: [
          {
            agent: 'agent',
            turns: [1, 2, 3, 4].map((n) => ({ text: long(n), toolCalls: [listAgents] })).concat([{ text: 'Waiting for instructions.', toolCalls: [] }]),
            reactions: [{ when: 'finish now', turn: complete('finished on the small model') }],
          },
        ],
      },
      resolve: (model) => (spec) =>
        spec.model === 'small'
          ? { model, name: 'scripted', profile: 'small', contextWindow: 5_000, maxTokens: 200 }
          : { model, name: 'scripted', profile: 'big' },
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'study the parser' }] });
    await h.until(() => h.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    const before = h.model.calls.filter((c) => c.sessionId === 'w-t').at(-1)!.request.messages;
    expect(estimateTokens(before)).toBeGreaterThan(3_000);

    run.actor.send({ type: 'SWITCH_MODEL_WORKER', taskId: 't', profile: 'small', expensive: false, by: 'ann' });
    run.actor.send({ type: 'REDIRECT_WORKER', taskId: 't', instructions: 'finish now', by: 'ann' });
    await h.until(() => run.summary() !== null);

    expect(h.of('model.switched', 'w-t')[0]!.data).toMatchObject({ to: 'small', by: 'ann' });
    const summarized = h.of('warning', 'w-t').find((e) => e.data.summarized === true)!;
    expect(Number(summarized.data.after)).toBeLessThan(Number(summarized.data.before));
    const last = h.model.calls.filter((c) => c.sessionId === 'w-t').at(-1)!.request;
    expect(last.messages[0]!.content).toBe(before[0]!.content); // the task is kept
    expect(last.messages.some((m) => m.role === 'user' && m.content.startsWith(SUMMARY_HEADER))).toBe(true);
    expect(estimateTokens(last.messages)).toBeLessThan(estimateTokens(before));
    // tool calls and their results stay together
    const ids = new Set(last.messages.flatMap((m) => (m.role === 'assistant' ? (m.toolCalls ?? []).map((c) => c.id) : [])));
    for (const m of last.messages) if (m.role === 'tool') expect(ids.has(m.toolCallId)).toBe(true);
    expect(run.summary()!.tasks[0]).toMatchObject({ state: 'succeeded', result: { output: 'finished on the small model' } });
    expect(run.summary()!.conversations['t']!.map((e) => e.kind).slice(-2)).toEqual(['model', 'redirect']);
    // the call after the summary is reported like any other
    expect(h.of('model.called', 'w-t').at(-1)!.data.toolCalls).toEqual(['a2a_subtask_complete']);
    // each summary call is a model call of its own: told (summary: true) with its tokens, not folded into the next
    const summaryCalls = h.model.calls.filter((c) => c.sessionId === 'w-t' && c.request.tools.length === 0);
    const told = h.of('model.called', 'w-t').filter((e) => e.data.summary === true);
    expect(summaryCalls.length).toBeGreaterThan(0);
    expect(told.length).toBe(summaryCalls.length);
    expect(told.every((e) => Number(e.data.inputTokens) > 0 && Number(e.data.outputTokens) > 0)).toBe(true);
  });

  it('asks a person before switching to a more expensive tier (ask_user by default)', async () => {
    const h = harness({ script: { rules: [{ agent: 'coder', turns: [{ text: 'thinking' }], reactions: [{ when: 'switched to large', turn: complete('done on large') }] }] } });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'x' }] });
    await h.until(() => h.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    run.actor.send({ type: 'SWITCH_MODEL_WORKER', taskId: 't', profile: 'large', expensive: true, by: 'ann' });
    await h.until(() => h.of('human.asked').length === 1);
    expect(h.of('human.asked')[0]!.data.title).toBe('model_switch_expensive: switch w-t (task t) to model profile large');
    expect(h.of('model.switched')).toHaveLength(0);
    const id = String(h.of('human.asked')[0]!.data.id);
    run.actor.send({ type: 'HUMAN_ANSWER', id, answer: { approved: true, by: 'bob' } });
    await h.until(() => h.of('model.switched').length === 1);
    run.actor.send({ type: 'REDIRECT_WORKER', taskId: 't', instructions: 'go on', by: 'ann' });
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.tasks[0]!.result!.output).toBe('done on large');
  });
});
