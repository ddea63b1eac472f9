/**
 * A run's log with A2A tasks in it, as `a2a serve --a2a` and the delegation tool write it: the
 * served task t-1 (client alice) asks, is answered, and is cancelled; its worker's sub-task
 * w-task.1 delegated r-1 to a remote agent, which asked too and was cancelled with it. Each event's
 * data is checked against the protocol's schemas, so that the views are tested on real shapes.
 */
import { runEventDataProblem } from '../../machines/runEvents.js';
import type { RunEvent } from '../../machines/protocol/index.js';

export const RUN = 'r-a2a';
export const REMOTE = 'http://127.0.0.1:9999/';

const session = { planId: 'a2a-task', taskId: 'task', workerId: 'w-task' };
const worker = { ...session, subTaskId: 'w-task', parentId: 'orchestrator', depth: 0, agentType: '@coder' };
const child = { ...session, subTaskId: 'w-task.1', parentId: 'w-task', depth: 1, agentType: '@translator' };

type Draft = Omit<RunEvent, 'runId' | 'seq' | 'ts'>;

const served = (state: string, direction: 'in' | 'out', text: string, from?: string): Draft => ({
  type: 'a2a.served',
  planId: 'a2a-task',
  data: { taskId: 't-1', contextId: 'ctx-1', state, ...(from ? { from } : {}), agent: 'coder', owner: 'alice', direction, text },
});

const delegated = (state: string, extra: Record<string, unknown> = {}): Draft => ({
  type: 'a2a.delegated',
  ...child,
  data: { url: REMOTE, taskId: 'r-1', contextId: 'rc-1', state, ...extra },
});

export function a2aRunEvents(): RunEvent[] {
  const drafts: Draft[] = [
    { type: 'run.started', planId: 'a2a-task', data: { planId: 'a2a-task', tasks: 1, source: 'plan.json' } },
    { type: 'worker.deployed', ...worker, data: { prompt: 'Translate the page', expectedOutput: 'the page' } },
    served('submitted', 'in', 'Translate the page'),
    served('working', 'out', 'run r-a2a started: @coder works on it', 'submitted'),
    { type: 'subtask.spawned', ...child, data: { prompt: 'ask first', expectedOutput: 'the word' } },
    delegated('working', { message: 'looking the word up' }),
    delegated('input-required', { from: 'working', message: 'Which language?' }),
    served('working', 'out', 'w-task.1 (@translator) started: ask first'),
    served('input-required', 'out', 'Which language should the page be in?', 'working'),
    served('input-required', 'in', 'French'),
    served('working', 'out', 'received: French', 'input-required'),
    delegated('canceled', { from: 'input-required', message: 'Which language?', error: 'cancelled: session w-task.1 ended while the remote task was input-required' }),
    { type: 'subtask.result', ...child, data: { status: 'cancelled', how: 'parent stopped', output: '', error: 'parent w-task stopped', fallback: true } },
    served('canceled', 'out', 'cancelled by the A2A client', 'working'),
    { type: 'run.finished', planId: 'a2a-task', data: { status: 'cancelled' } },
  ];
  return drafts.map((d, seq) => {
    const problem = runEventDataProblem(d);
    if (problem) throw new Error(`${d.type}: ${problem}`);
    return { ...d, runId: RUN, seq, ts: 1_000 + seq * 10 } as RunEvent;
  });
}
