/**
 * Managing running workers: reassign (new instructions and tools, conversation kept), redirect
 * (new instructions injected, nothing reset), reinitialize (fresh start), resume after the circuit
 * breaker, and the health monitor's stuck report redirecting (then restarting) a worker by policy.
 */
import { describe, expect, it } from 'vitest';
import { workerState } from '../../actors/observation/runStatus.js';
import { complete, harness } from '../helpers.js';

const REVIEWER = { raw: '@reviewer', backend: 'default', agentName: 'reviewer' } as const;

describe('managing a running worker', () => {
  it('reassign: the next model call has the new agent type, its prompt and tools, and the whole conversation', async () => {
    const h = harness({
      script: {
        rules: [
          { agent: 'coder', turns: [{ text: 'starting on the code' }] },
          // the conversation is kept, so the reviewer reacts to the reassignment rather than starting at turn 0
          { agent: 'reviewer', reactions: [{ when: 'reassigned from @coder', turn: complete('reviewed instead') }] },
        ],
      },
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'write the parser' }] });
    await h.until(() => h.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    run.actor.send({ type: 'REASSIGN_WORKER', taskId: 't', agent: REVIEWER, by: 'ann' });
    await h.until(() => run.summary() !== null);
    const calls = h.model.calls.filter((c) => c.sessionId === 'w-t');
    const last = calls.at(-1)!.request;
    expect(last.agentType.agentName).toBe('reviewer');
    expect(last.system).toContain('@reviewer');
    expect(last.tools.map((t) => t.name)).not.toContain('write_file');
    expect(last.messages[0]!.content).toBe(calls[0]!.request.messages[0]!.content); // the task, kept
    expect(last.messages.some((m) => m.role === 'assistant' && m.content === 'starting on the code')).toBe(true);
    expect(last.messages.at(-1)!.content).toContain('reassigned from @coder to @reviewer');
    expect(h.of('worker.reassigned')[0]!.data).toMatchObject({ from: '@coder', to: '@reviewer', by: 'ann' });
    expect(run.summary()!.tasks[0]).toMatchObject({ agentType: '@reviewer', state: 'succeeded' });
  });

  it('reassign under agent_reassignment: ask_user waits for a person (and does nothing when denied); auto_deny refuses it', async () => {
    const script = {
      rules: [
        { agent: 'coder', turns: [{ text: 'starting on the code' }], reactions: [{ when: 'go on', turn: complete('coded it') }] },
        { agent: 'reviewer', reactions: [{ when: 'reassigned from @coder', turn: complete('reviewed instead') }] },
      ],
    };
    // asked, approved: reassigned
    const asked = harness({ script, config: { permissions: { ask_user: ['agent_reassignment'] } } });
    const run = asked.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'write the parser' }] });
    await asked.until(() => asked.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    run.actor.send({ type: 'REASSIGN_WORKER', taskId: 't', agent: REVIEWER, by: 'ann' });
    await asked.until(() => asked.of('human.asked').length === 1);
    expect(asked.of('human.asked')[0]!.data.title).toBe('agent_reassignment: reassign w-t (task t) from @coder to @reviewer');
    expect(asked.of('worker.reassigned')).toHaveLength(0);
    run.actor.send({ type: 'HUMAN_ANSWER', id: String(asked.of('human.asked')[0]!.data.id), answer: { approved: true, by: 'bob' } });
    await asked.until(() => run.summary() !== null);
    expect(asked.of('worker.reassigned')[0]!.data).toMatchObject({ from: '@coder', to: '@reviewer', by: 'ann' });
    expect(run.summary()!.tasks[0]).toMatchObject({ agentType: '@reviewer', state: 'succeeded', result: { output: 'reviewed instead' } });
    expect(run.summary()!.conversations['t']!.at(-1)).toMatchObject({ from: 'human:bob', kind: 'reassign', text: 'reassign to @reviewer: approved' });

    // asked, denied: nothing changes
    const denied = harness({ script, config: { permissions: { ask_user: ['agent_reassignment'] } } });
    const second = denied.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'write the parser' }] });
    await denied.until(() => denied.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    second.actor.send({ type: 'REASSIGN_WORKER', taskId: 't', agent: REVIEWER, by: 'ann' });
    await denied.until(() => denied.of('human.asked').length === 1);
    second.actor.send({ type: 'HUMAN_ANSWER', id: String(denied.of('human.asked')[0]!.data.id), answer: { approved: false, by: 'bob' } });
    await denied.until(() => denied.of('permission.decided').length === 1);
    second.actor.send({ type: 'REDIRECT_WORKER', taskId: 't', instructions: 'go on', by: 'ann' });
    await denied.until(() => second.summary() !== null);
    expect(denied.of('worker.reassigned')).toHaveLength(0);
    expect(second.summary()!.tasks[0]).toMatchObject({ agentType: '@coder', result: { output: 'coded it' } });

    // auto_deny: refused with a warning, nobody asked
    const refused = harness({ script, config: { permissions: { auto_deny: ['agent_reassignment'] } } });
    const third = refused.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'write the parser' }] });
    await refused.until(() => refused.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    third.actor.send({ type: 'REASSIGN_WORKER', taskId: 't', agent: REVIEWER, by: 'ann' });
    third.actor.send({ type: 'REDIRECT_WORKER', taskId: 't', instructions: 'go on', by: 'ann' });
    await refused.until(() => third.summary() !== null);
    expect(refused.of('human.asked')).toHaveLength(0);
    expect(refused.of('worker.reassigned')).toHaveLength(0);
    expect(refused.of('warning').map((e) => e.data.message)).toContain('reassigning w-t to @reviewer refused: agent_reassignment is auto_deny in the permission matrix');
  });

  it('redirect: new instructions reach the model, nothing is reset; reinitialize: a fresh start', async () => {
    const h = harness({
      script: {
        rules: [
          { agent: 'coder', prompt: 'start over', turns: [complete('done from scratch')] },
          { agent: 'coder', turns: [{ text: 'on it' }, { text: 'still on it' }] },
        ],
      },
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'write the parser' }] });
    await h.until(() => h.of('session.state', 'w-t').some((e) => e.data.state === 'idle'));
    run.actor.send({ type: 'REDIRECT_WORKER', taskId: 't', instructions: 'Use a recursive-descent parser.', by: 'ann' });
    await h.until(() => h.model.calls.filter((c) => c.sessionId === 'w-t').length === 2);
    const redirected = h.model.calls.filter((c) => c.sessionId === 'w-t')[1]!.request.messages;
    expect(redirected.at(-1)!.content).toContain('Use a recursive-descent parser.');
    expect(redirected.some((m) => m.content === 'on it')).toBe(true);
    expect(h.of('worker.redirected')[0]!.data).toMatchObject({ by: 'ann' });

    await h.until(() => h.of('session.state', 'w-t').filter((e) => e.data.state === 'idle').length === 2);
    run.actor.send({ type: 'REINITIALIZE_WORKER', taskId: 't', instructions: 'start over: write the lexer first', by: 'ann' });
    await h.until(() => run.summary() !== null);
    const fresh = h.model.calls.filter((c) => c.sessionId === 'w-t').at(-1)!.request.messages;
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.content).toContain('start over: write the lexer first');
    expect(run.summary()!.tasks[0]!.result!.output).toBe('done from scratch');
    expect(run.summary()!.conversations['t']!.map((e) => e.kind)).toEqual(['redirect', 'reinitialize']);
  });

  it('refuses to manage a task that is not running, with a warning saying why', async () => {
    const h = harness({ script: { rules: [{ agent: 'coder', turns: [complete('done')] }] } });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'x' }] });
    run.actor.send({ type: 'REDIRECT_WORKER', taskId: 'nope', instructions: 'x', by: 'ann' });
    await h.until(() => run.summary() !== null);
    expect(h.of('warning').map((e) => e.data.message)).toContain('REDIRECT_WORKER ignored: task "nope" does not exist');
  });

  it('resume: a worker its circuit breaker paused continues when resumed', async () => {
    const bad = { toolCalls: [{ name: 'read_file', arguments: { path: 'missing-1' } }, { name: 'read_file', arguments: { path: 'missing-2' } }] };
    const h = harness({
      script: { rules: [{ agent: 'coder', turns: [bad], reactions: [{ when: 'resumed', turn: complete('recovered') }] }] },
      config: { limits: { circuitBreakerThreshold: 2 } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'read' }] });
    await h.until(() => h.of('circuit.open').length === 1 || workerState(run.actor, 'w-t') === 'paused');
    await h.until(() => workerState(run.actor, 'w-t') === 'paused');
    // paused: no progress however long it waits
    await h.advance(120_000, 10_000);
    expect(workerState(run.actor, 'w-t')).toBe('paused');
    run.actor.send({ type: 'RESUME_WORKER', taskId: 't', by: 'ann' });
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.tasks[0]).toMatchObject({ state: 'succeeded', result: { output: 'recovered' } });
    expect(h.of('worker.resumed')[0]!.data).toMatchObject({ by: 'ann' });
  });
});

describe('health monitor', () => {
  const readMissing = { toolCalls: [{ name: 'read_file', arguments: { path: 'config/settings.yaml' } }] };

  it('redirects a stuck worker by policy, then restarts it when redirects do not help', async () => {
    const h = harness({
      script: {
        rules: [
          { agent: 'coder', prompt: 'previous attempt', turns: [complete('found another way')] },
          { agent: 'coder', turns: [readMissing, readMissing, readMissing, readMissing, readMissing, readMissing, readMissing] },
        ],
      },
      config: { orchestrator: { reinitializeAfter: 1 }, limits: { circuitBreakerThreshold: 10 } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'find the port' }] });
    await h.until(() => run.summary() !== null);
    expect(h.of('stuck.detected').length).toBeGreaterThanOrEqual(2);
    expect(h.of('worker.redirected')[0]!.data).toMatchObject({ by: 'health monitor', redirect: 1 });
    expect(h.of('worker.reinitialized')[0]!.data).toMatchObject({ by: 'health monitor' });
    expect(run.summary()!.tasks[0]!.result!.output).toBe('found another way');
    // the redirect text reached the model
    const redirected = h.model.calls.filter((c) => c.sessionId === 'w-t').find((c) => c.request.messages.some((m) => m.content.includes('You appear to be stuck')));
    expect(redirected).toBeDefined();
  });

  it('with onStuck none, only records the report', async () => {
    const h = harness({
      script: { rules: [{ agent: 'coder', turns: [readMissing, readMissing, readMissing, complete('gave up')] }] },
      config: { orchestrator: { onStuck: 'none' } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'find the port' }] });
    await h.until(() => run.summary() !== null);
    expect(h.of('stuck.detected')).toHaveLength(1);
    expect(h.of('worker.redirected')).toHaveLength(0);
    expect(run.summary()!.conversations['t']!.map((e) => e.kind)).toEqual(['stuck']);
  });
});

