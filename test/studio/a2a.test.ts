/**
 * The studio's A2A view model (adapters/studio/page/view.ts over actors/observation/a2aView.ts),
 * fed a run's log by hand: the task the run serves with its states and its messages in and out,
 * the task a sub-task delegated with its remote state, the delegating session's transcript.
 */
import { describe, expect, it } from 'vitest';
import { A2AView, MESSAGES_KEPT } from '../../actors/observation/a2aView.js';
import { StudioRun, a2aStateClass } from '../../adapters/studio/page/view.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aRunEvents, REMOTE, RUN } from '../a2aProtocol/runEvents.js';

function studioRun(events: RunEvent[] = a2aRunEvents()): StudioRun {
  const run = new StudioRun();
  events.forEach((e, i) => run.apply(i, e));
  return run;
}

describe('the studio\'s A2A view', () => {
  it('should list the served task with its ids, client, agent, run and each state it went through', () => {
    const [task, ...more] = [...studioRun().a2a.served.values()];
    expect(more).toEqual([]);
    expect(task).toMatchObject({ taskId: 't-1', contextId: 'ctx-1', state: 'canceled', owner: 'alice', agent: 'coder', runId: RUN });
    expect(task!.states).toEqual(['submitted', 'working', 'input-required', 'working', 'canceled']);
  });

  it('should keep the served task\'s messages in (the client\'s) and out (its statuses), in order', () => {
    const task = studioRun().a2a.served.get('t-1')!;
    expect(task.messages.map((m) => `${m.direction} ${m.state}: ${m.text}`)).toEqual([
      'in submitted: Translate the page',
      'out working: run r-a2a started: @coder works on it',
      'out working: w-task.1 (@translator) started: ask first',
      'out input-required: Which language should the page be in?',
      'in input-required: French',
      'out working: received: French',
      'out canceled: cancelled by the A2A client',
    ]);
  });

  it('should give a delegating session its remote task: agent URL, ids, state, last word and why it was given up', () => {
    const run = studioRun();
    expect(run.a2a.delegatedBy('w-task')).toBeUndefined();
    expect(run.a2a.delegatedBy('w-task.1')).toMatchObject({
      url: REMOTE,
      taskId: 'r-1',
      contextId: 'rc-1',
      sessionId: 'w-task.1',
      agentType: '@translator',
      parentId: 'w-task',
      state: 'canceled',
      states: ['working', 'input-required', 'canceled'],
      message: 'Which language?',
      error: expect.stringContaining('ended while the remote task was input-required'),
    });
    expect(run.a2a.size).toBe(2);
  });

  it('should show each change of the remote task in the delegating session\'s transcript', () => {
    const a2a = studioRun()
      .transcript('w-task.1')
      .filter((t) => t.kind === 'a2a');
    expect(a2a.map((t) => t.title)).toEqual([`remote task r-1 at ${REMOTE}: working`, `remote task r-1 at ${REMOTE}: working → input-required`, `remote task r-1 at ${REMOTE}: input-required → canceled`]);
    expect(a2a.at(-1)).toMatchObject({ error: true, text: expect.stringContaining('cancelled: session w-task.1 ended') });
  });

  it('should tell a change of state once: a message in the same state changes nothing', () => {
    const view = new A2AView();
    const changes = a2aRunEvents().map((e) => view.apply(e));
    expect(changes.filter((c) => c !== null).map((c) => `${c!.kind} ${c!.taskId} ${c!.from ?? ''}>${c!.to}`)).toEqual([
      'served t-1 >submitted',
      'served t-1 submitted>working',
      'delegated r-1 >working',
      'delegated r-1 working>input-required',
      'served t-1 working>input-required',
      'served t-1 input-required>working',
      'delegated r-1 input-required>canceled',
      'served t-1 working>canceled',
    ]);
  });

  it(`should keep a served task's latest ${MESSAGES_KEPT} messages and count those left out`, () => {
    const view = new A2AView();
    for (let i = 0; i < MESSAGES_KEPT + 5; i++) {
      view.apply({ type: 'a2a.served', runId: RUN, seq: i, ts: i, data: { taskId: 't', contextId: 'c', state: 'working', agent: 'coder', direction: 'out', text: `step ${i}` } });
    }
    const task = view.served.get('t')!;
    expect(task.messages).toHaveLength(MESSAGES_KEPT);
    expect(task.dropped).toBe(5);
    expect(task.messages[0]!.text).toBe('step 5');
  });

  it('should draw the states with the status colours of sessions', () => {
    expect(['completed', 'failed', 'canceled', 'rejected', 'input-required', 'auth-required', 'working'].map(a2aStateClass)).toEqual(['s-success', 's-failed', 's-failed', 's-failed', 's-partial', 's-partial', 's-running']);
  });
});
