import { describe, expect, it } from 'vitest';
import { createActor, sendTo, setup, SimulatedClock, type AnyActorRef } from 'xstate';
import type { Family } from '../../actors/session/family.js';
import type { LoopCommand } from '../../machines/session.js';
import { idleInquiryMachine } from '../../machines/idleInquiry.machine.js';
import { subtaskMachine } from '../../machines/subtask.machine.js';
import { workerMachine } from '../../machines/worker.machine.js';
import { sessionStateName } from '../../machines/session.js';
import { complete, harness } from '../helpers.js';

const badTool = { toolCalls: [{ name: 'no_such_tool', arguments: {} }] };

function workerRef(run: { actor: AnyActorRef }, id: string): AnyActorRef {
  const workers = (run.actor.getSnapshot() as { children: { workers: AnyActorRef } }).children.workers;
  return (workers.getSnapshot() as { family: Family }).family.members.get(id)!.ref!;
}

describe('session: circuit breaker', () => {
  it('should pause a worker after N consecutive tool failures and continue after RESUME', async () => {
    const h = harness({
      config: { limits: { circuitBreakerThreshold: 3 } },
      script: { rules: [{ agent: 'agent', turns: [badTool, badTool, badTool, complete('recovered')] }] },
    });
    const run = h.run({ tasks: [{ id: 't', prompt: 'flaky' }] });
    await h.advance(200);
    expect(h.of('session.state', 'w-t').at(-1)!.data.state).toBe('paused');
    expect(h.of('circuit.open', 'w-t').map((e) => e.data.failures)).toEqual([3]);
    expect(run.summary()).toBeNull();
    workerRef(run, 'w-t').send({ type: 'RESUME', by: 'test' });
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.tasks[0]!.result).toMatchObject({ status: 'success', output: 'recovered' });
    const resumed = h.model.calls.at(-1)!.request.messages.at(-1)!.content;
    expect(resumed).toContain('You were paused (the circuit breaker opened after 3 consecutive tool failures) and have been resumed by');
  });

  it('should fail a sub-task whose circuit breaker opens, so that its parent decides', async () => {
    const h = harness({
      config: { limits: { circuitBreakerThreshold: 2 } },
      script: {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [{ toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@agent', prompt: 'flaky', expectedOutput: 'x' } }] }, complete('parent done')],
          },
          { agent: 'agent', depth: 1, turns: [badTool, badTool, complete('never')] },
        ],
      },
    });
    const run = h.standalone('parent');
    await h.until(() => run.result() !== null);
    expect(h.of('subtask.result', 'session.1').map((e) => e.data)).toEqual([
      expect.objectContaining({ status: 'failed', error: 'circuit breaker open: too many consecutive tool failures' }),
    ]);
  });
});

describe('session: limits and failures', () => {
  it('should fail a session that reaches its turn limit without completing', async () => {
    const h = harness({ config: { limits: { maxTurns: 3 } }, script: { rules: [{ agent: 'agent', turns: [badTool, badTool, badTool, badTool] }] } });
    const run = h.standalone('loops');
    await h.until(() => run.result() !== null);
    expect(run.result()).toMatchObject({ status: 'failed', error: 'turn limit reached without a2a_subtask_complete' });
    expect(h.model.calls).toHaveLength(3);
  });

  it('should return a tool error to the model, not crash, when a tool is called with bad arguments', async () => {
    const h = harness({
      script: { rules: [{ agent: 'agent', turns: [{ toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@coder' } }] }, complete('ok')] }] },
    });
    const run = h.standalone('bad args');
    await h.until(() => run.result() !== null);
    const tool = h.model.calls[1]!.request.messages.find((m) => m.role === 'tool')!;
    expect(tool).toMatchObject({ isError: true });
    expect(tool.content.split('\n').slice(0, 3)).toEqual([
      'VALIDATION_ERROR: Invalid arguments for a2a_spawn_subtask:',
      '  - prompt: Invalid input: expected string, received undefined',
      '  - expectedOutput: Invalid input: expected string, received undefined',
    ]);
    expect(run.result()).toMatchObject({ status: 'success' });
  });
});

/** A sub-task session whose agent loop only records what the chart asks of it. */
function withRecordedLoop(id: string) {
  const requests: LoopCommand[] = [];
  const machine = subtaskMachine.provide({ actions: { loop: (_, command: LoopCommand) => void requests.push(command) } });
  const h = harness({ script: { rules: [] } });
  const spec = { ...h.standalone('x').spec, id, role: 'subtask' as const, depth: 1 };
  const actor = createActor(machine, { input: { spec }, clock: new SimulatedClock() });
  actor.start();
  return { requests, actor };
}

describe('session: the agent loop protocol', () => {
  it('should ask for the current step again when a restored session gets RESTORED, numbering steps by conversation length', () => {
    const { requests, actor } = withRecordedLoop('st-x');
    expect(requests.map((r) => [r.type, 'step' in r ? r.step : null])).toEqual([['CALL_MODEL', 1]]);
    actor.send({ type: 'RESTORED' });
    expect(requests.map((r) => [r.type, 'step' in r ? r.step : null])).toEqual([
      ['CALL_MODEL', 1],
      ['CALL_MODEL', 1],
    ]);
    actor.send({
      type: 'MODEL_REPLIED',
      step: 1,
      output: {
        injected: [{ role: 'user', content: 'task' }],
        reply: { text: '', toolCalls: [{ id: 'c1', name: 'a2a_list_agents', arguments: {} }], usage: { inputTokens: 1, outputTokens: 1 } },
        consumedInbox: 0,
        consumedUpTo: null,
      },
    });
    expect(requests.at(-1)).toMatchObject({ type: 'RUN_TOOL', step: 3 });
    expect(sessionStateName(actor.getSnapshot().value)).toBe('usingTools');
  });

  it('should record the tool calls run in the model step in order, and run the rest one step at a time', () => {
    const { requests, actor } = withRecordedLoop('st-y');
    const calls = [
      { id: 'c1', name: 'a2a_list_agents', arguments: {} },
      { id: 'c2', name: 'a2a_list_agents', arguments: { filter: 'coder' } },
      { id: 'c3', name: 'read_file', arguments: { path: 'a.txt' } },
    ];
    actor.send({
      type: 'MODEL_REPLIED',
      step: 1,
      output: { injected: [{ role: 'user', content: 'task' }], reply: { text: '', toolCalls: calls, usage: { inputTokens: 1, outputTokens: 1 } }, consumedInbox: 0, consumedUpTo: null },
      ran: [
        { content: 'agents', isError: false },
        { content: 'bad arguments', isError: true },
      ],
    });
    const context = actor.getSnapshot().context;
    expect(context.messages.map((m) => [m.role, m.role === 'tool' ? m.toolCallId : null])).toEqual([
      ['user', null],
      ['assistant', null],
      ['tool', 'c1'],
      ['tool', 'c2'],
    ]);
    expect(context.pendingCalls.map((c) => c.id)).toEqual(['c3']);
    expect(context.health).toMatchObject({ failures: 1, sinceProgress: 1 });
    // the third call is not a coordination tool: a step of its own, numbered after the two recorded
    expect(requests.at(-1)).toMatchObject({ type: 'RUN_TOOL', step: 5, input: { call: { id: 'c3' } } });
    expect(sessionStateName(actor.getSnapshot().value)).toBe('usingTools');
  });

  it('should name every resting state for the tree', () => {
    expect(sessionStateName({ running: 'thinking' })).toBe('thinking');
    expect(sessionStateName({ running: { awaitingChildren: 'waiting' } })).toBe('awaitingChildren');
    expect(sessionStateName('completed')).toBe('completed');
  });

  it('should give workers a paused state and sub-tasks none', () => {
    const states = (m: typeof workerMachine) => Object.keys(m.root.states.running!.states);
    expect(states(workerMachine)).toContain('paused');
    expect(states(subtaskMachine)).not.toContain('paused');
  });
});

describe('idleInquiry', () => {
  /** A parent that records the inquiries its watchdog sends. */
  function watched(config = { idleThresholdMs: 1000, inquiryDelayMs: 200, inquiryTimeoutMs: 3000, maxInquiries: 2 }) {
    const clock = new SimulatedClock();
    const inquiries: number[] = [];
    const parent = setup({ actors: { idleInquiry: idleInquiryMachine } }).createMachine({
      invoke: { id: 'idleInquiry', src: 'idleInquiry', input: config },
      on: {
        IDLE_INQUIRY: { actions: ({ event }) => inquiries.push((event as unknown as { attempt: number }).attempt) },
        TELL: { actions: sendTo('idleInquiry', ({ event }) => (event as unknown as { inner: { type: string } }).inner) },
      },
    });
    const actor = createActor(parent, { clock });
    actor.start();
    const watchdog = () => actor.getSnapshot().children.idleInquiry as AnyActorRef;
    const tell = (type: string) => actor.send({ type: 'TELL', inner: { type } } as never);
    return { clock, inquiries, watchdog, tell };
  }

  it('should count idle time only while idle, and inquire after threshold plus grace', () => {
    const w = watched();
    w.clock.increment(10_000); // busy: nothing happens
    expect(w.inquiries).toEqual([]);
    w.tell('SESSION_IDLE');
    w.clock.increment(1100);
    w.tell('SESSION_BUSY'); // activity during the grace period resets it
    w.clock.increment(5000);
    expect(w.inquiries).toEqual([]);
    w.tell('SESSION_IDLE');
    w.clock.increment(1000);
    w.clock.increment(200);
    expect(w.inquiries).toEqual([1]);
    expect(w.watchdog().getSnapshot().value).toBe('inquiring');
  });

  it('should end as unresponsive when the inquiry is not answered in time', () => {
    const w = watched();
    w.tell('SESSION_IDLE');
    w.clock.increment(1000);
    w.clock.increment(200);
    w.tell('SESSION_BUSY'); // busy while answering does not count as an answer
    w.clock.increment(3000);
    expect(w.watchdog().getSnapshot()).toMatchObject({ status: 'done', output: { reason: 'unresponsive', inquiries: 1 } });
  });

  it('should end as exhausted after maxInquiries answered inquiries without progress', () => {
    const w = watched();
    for (let i = 0; i < 2; i++) {
      w.tell('SESSION_IDLE');
      w.clock.increment(1000);
      w.clock.increment(200);
      w.tell('INQUIRY_ANSWERED');
    }
    w.tell('SESSION_IDLE');
    w.clock.increment(1000);
    w.clock.increment(200);
    expect(w.inquiries).toEqual([1, 2]);
    expect(w.watchdog().getSnapshot()).toMatchObject({ status: 'done', output: { reason: 'exhausted', inquiries: 2 } });
  });
});
