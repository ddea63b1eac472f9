/**
 * A task done by an external agent through the gateway (externalTask: the external-agent protocol).
 */
import { SubTaskResult, type SessionSpec, type TaskUpdate } from '../../../machines/protocol/index.js';
import { externalTaskMachine, type ExternalTaskConfig, type ExternalTaskContext, type WireCommand, type ExternalTaskEvent } from '../../../machines/externalTask.machine.js';
import type { MachineModel } from '../paths.js';
import { inert, fail, sessionSpec, type Sample } from './shared.js';

const externalConfig: ExternalTaskConfig = { ackTimeoutMs: 1000, taskTimeoutMs: 5000, agentWaitMs: 3000, maxAttempts: 2, backoffBaseMs: 100, backoffMaxMs: 400 };
const externalSpec: SessionSpec = { ...sessionSpec('subtask'), id: 'st-ext', agent: { raw: '@coder', backend: 'default', agentName: 'coder' } };

const taskResult = (status: 'completed' | 'failed' | 'blocked', resultType: 'success' | 'partial' | 'error') => ({
  task_id: externalSpec.id,
  status,
  result_type: resultType,
  files_modified: ['api/views.py'],
  files_created: [],
  files_deleted: [],
  tests_added: [],
  issues_created: [],
  warnings: [],
  execution_time: 1.5,
});

export const externalTaskModel: MachineModel = {
  name: 'externalTask',
  machine: externalTaskMachine.provide({ actors: { agentWire: inert } as never }),
  input: { spec: externalSpec, config: externalConfig },
  events: (state) => {
    const c = state.context as ExternalTaskContext;
    const at = c.now + 10;
    // agents are named by the attempt that finds them, so that the graph stays small
    const agent = c.agentId ?? `agent-${c.attempts + 1}`;
    const events: Array<Sample<ExternalTaskEvent>> = [
      { type: 'WIRE_READY', at },
      { type: 'AGENT_FOUND', agentId: `agent-${c.attempts + 1}`, at },
      { type: 'AGENT_ACK', agentId: agent, accepted: true, at },
      { type: 'AGENT_ACK', agentId: agent, accepted: false, reason: 'at capacity', at },
      // a late acknowledgment from an agent the task has moved on from changes nothing
      { type: 'AGENT_ACK', agentId: 'agent-stale', accepted: true, at },
      { type: 'AGENT_PROGRESS', agentId: agent, progress: 0.5, message: 'half way', at },
      { type: 'AGENT_RESULT', agentId: agent, payload: taskResult('completed', 'success'), at },
      { type: 'AGENT_RESULT', agentId: agent, payload: taskResult('blocked', 'partial'), at },
      { type: 'AGENT_ERROR', agentId: agent, code: 'E001', message: 'tests fail', recoverable: true, at },
      { type: 'AGENT_ERROR', agentId: agent, code: 'E002', message: 'repository gone', recoverable: false, at },
      { type: 'AGENT_LOST', agentId: agent, at },
      { type: 'MESSAGE', from: 'orchestrator', text: 'JSON' },
      { type: 'CANCEL', reason: 'priority change' },
      { type: 'TIMEOUT' },
      { type: 'xstate.error.actor.wire', error: new Error('gateway down') },
      { type: 'xstate.after.agentWait.externalTask.choosingAgent' },
      { type: 'xstate.after.ackTimeout.externalTask.offered' },
      { type: 'xstate.after.taskTimeout.externalTask.working' },
      { type: 'xstate.after.backoff.externalTask.backingOff' },
    ];
    // one open question at a time (the abstraction keeps only whether one is open)
    if (c.queries.length === 0) events.push({ type: 'AGENT_QUERY', agentId: agent, messageId: 'q-1', question: 'JSON or XML?', options: ['JSON', 'XML'], at });
    return events;
  },
  serialize: (s) => {
    const c = s.context as ExternalTaskContext;
    return JSON.stringify([s.value, c.attempts, c.agentId, c.excluded.length, c.avoid.length, c.queries.length, c.held.length > 0, c.result?.status ?? null]);
  },
  invariants: (step) => {
    const before = step.before.context as ExternalTaskContext;
    const after = step.after.context as ExternalTaskContext;
    const commands = step.sent.filter((s) => s.to === 'wire').map((s) => s.event as unknown as WireCommand);
    const up = step.sent.filter((s) => s.event.type === 'SUBTASK_UPDATE').map((s) => (s.event as unknown as { update: TaskUpdate }).update);
    if (after.attempts > after.config.maxAttempts) fail(step, `${after.attempts} offers, more than ${after.config.maxAttempts}`);
    // exactly one result, for this task, when (and only when) it ends
    if (step.after.status === 'done') {
      if (step.doneEvents.length !== 1) fail(step, `${step.doneEvents.length} results delivered, expected exactly 1`);
      const output = SubTaskResult.safeParse(step.doneEvents[0]!.output);
      if (!output.success || output.data.taskId !== externalSpec.id) fail(step, 'the result is not a valid result for the task');
      const expected: Record<string, string[]> = { completed: ['success', 'partial', 'failed'], failed: ['failed'], cancelled: ['cancelled'], timedOut: ['timeout'] };
      if (!expected[String(step.after.value)]?.includes(output.data.status)) fail(step, `ended ${String(step.after.value)} with a ${output.data.status} result`);
    } else if (step.doneEvents.length !== 0) {
      fail(step, 'a result was delivered while the task still runs');
    }
    // an offer goes to the agent just found, never to one that rejected the task
    for (const offer of commands.filter((c): c is Extract<WireCommand, { type: 'OFFER' }> => c.type === 'OFFER')) {
      if (offer.agentId !== after.agentId || offer.messageId !== after.offerId) fail(step, `offered to ${offer.agentId}, but the task is with ${after.agentId}`);
      if (before.excluded.includes(offer.agentId)) fail(step, `offered again to ${offer.agentId}, which rejected it`);
    }
    if (JSON.stringify(step.after.value) === '"offered"' && JSON.stringify(step.before.value) !== '"offered"' && !commands.some((c) => c.type === 'OFFER')) fail(step, 'entered offered without offering the task');
    // nothing the owner says is dropped: held while nobody works on it, told to the agent that accepts
    if (step.event.type === 'MESSAGE' && JSON.stringify(step.before.value) !== '"working"' && after.held.length !== before.held.length + 1) fail(step, 'a message from the owner was dropped');
    if (JSON.stringify(step.after.value) === '"working"' && JSON.stringify(step.before.value) !== '"working"') {
      const told = commands.filter((c) => c.type === 'ANSWER').length;
      if (told !== before.held.length || after.held.length !== 0) fail(step, `${before.held.length} held message(s), ${told} told to the agent that accepted`);
    }
    // the agent a task is taken from (or ended without it) is told to stop
    const hadAgent = before.agentId;
    const leftAgent = hadAgent !== null && after.agentId !== hadAgent;
    const finishedByAgent = step.event.type === 'AGENT_RESULT' || (step.event.type === 'AGENT_ACK' && !(step.event as unknown as { accepted: boolean }).accepted);
    // (a failed wire cannot carry a cancel: the agent learns it when its next report is refused as an unknown task)
    if ((leftAgent || (hadAgent && step.after.status === 'done')) && !finishedByAgent && step.event.type !== 'xstate.error.actor.wire') {
      if (!commands.some((c) => c.type === 'CANCEL_TASK' && c.agentId === hadAgent)) fail(step, `${hadAgent} was not told to stop (after ${step.event.type})`);
    }
    // the agent's question reaches the owner as a question; the owner's answer reaches the agent, correlated
    if (step.event.type === 'AGENT_QUERY' && JSON.stringify(step.before.value) === '"working"') {
      if (!up.some((u) => u.kind === 'question')) fail(step, 'a question from the agent did not reach the owner');
    }
    if (step.event.type === 'MESSAGE' && JSON.stringify(step.before.value) === '"working"') {
      const answer = commands.find((c) => c.type === 'ANSWER') as Extract<WireCommand, { type: 'ANSWER' }> | undefined;
      if (!answer || answer.agentId !== before.agentId) fail(step, 'the owner\'s answer did not reach the agent');
      if (answer.queryId !== (before.queries[0]?.messageId ?? null)) fail(step, 'the answer is not correlated to the open question');
    }
    for (const u of up) {
      if (u.subTaskId !== externalSpec.id || u.parentId !== externalSpec.owner.ownerId) fail(step, 'an update names the wrong task or owner');
    }
  },
};
