/**
 * A2A tasks in `a2a monitor` (adapters/monitor.ts and the lines of adapters/terminal.ts), fed by
 * hand: a line per change of a task's state, the run's A2A tasks in its snapshot and its view, and
 * a delegating session's node naming its remote task.
 */
import { describe, expect, it } from 'vitest';
import { MonitorState, renderMonitor } from '../../adapters/monitor.js';
import { describeEvent } from '../../adapters/terminal.js';
import { a2aRunEvents, REMOTE, RUN } from './runEvents.js';

function monitored(): MonitorState {
  const state = new MonitorState();
  for (const e of a2aRunEvents()) state.apply({ ...e, origin: e.type === 'a2a.delegated' ? 'beta' : `run-${RUN}` });
  return state;
}

describe('A2A tasks in a2a monitor', () => {
  it('should print a line per change of an A2A task\'s state, and the client\'s messages', () => {
    const lines = a2aRunEvents()
      .filter((e) => e.type.startsWith('a2a.'))
      .map((e) => describeEvent(e))
      .filter((l): l is string => l !== null);
    expect(lines).toEqual([
      '⇄ A2A task t-1 received (client alice) for @coder: Translate the page',
      '⇄ A2A task t-1 submitted → working (client alice): run r-a2a started: @coder works on it',
      `⇄ w-task.1 → ${REMOTE}: remote task r-1 working: looking the word up`,
      `⇄ w-task.1 → ${REMOTE}: remote task r-1 working → input-required: Which language?`,
      '⇄ A2A task t-1 working → input-required (client alice): Which language should the page be in?',
      '⇄ A2A task t-1: the client says: French',
      '⇄ A2A task t-1 input-required → working (client alice): received: French',
      `⇄ w-task.1 → ${REMOTE}: remote task r-1 input-required → canceled: cancelled: session w-task.1 ended while the remote task was input-required`,
      '⇄ A2A task t-1 working → canceled (client alice): cancelled by the A2A client',
    ]);
  });

  it('should keep the run\'s A2A tasks in its snapshot, and name the remote task on the delegating session\'s node', () => {
    const run = monitored().snapshot(2_000).runs.find((r) => r.runId === RUN)!;
    expect(run.a2a.served.map((t) => [t.taskId, t.state, t.owner, t.agent])).toEqual([['t-1', 'canceled', 'alice', 'coder']]);
    expect(run.a2a.delegated.map((t) => [t.sessionId, t.url, t.taskId, t.state])).toEqual([['w-task.1', REMOTE, 'r-1', 'canceled']]);
    const worker = run.tree[0]!;
    expect(worker.remoteTask).toBeUndefined();
    expect(worker.children[0]).toMatchObject({ id: 'w-task.1', remoteTask: { url: REMOTE, taskId: 'r-1', state: 'canceled' } });
  });

  it('should show the run\'s A2A tasks under its tree in the text view', () => {
    const text = renderMonitor(monitored(), 2_000).join('\n');
    expect(text).toContain('⇄ A2A task t-1 canceled · client alice · @coder · context ctx-1 · 7 message(s)');
    expect(text).toContain(`⇄ w-task.1 → ${REMOTE}: remote task r-1 canceled (cancelled: session w-task.1 ended while the remote task was…)`);
    // and beside the delegating session in the tree
    expect(text).toMatch(/w-task\.1\s+@translator\s+cancelled\s+@run-r-a2a ⇄ r-1 canceled/);
  });
});
