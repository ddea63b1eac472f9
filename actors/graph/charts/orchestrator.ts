/**
 * The orchestrator: tasks, the inbox, permissions and questions, worker management and the workflow variant.
 */
import { orchestratorPolicy, RunConfig } from '../../config/config.js';
import { orchestratorMachine, type OrchestratorInput, type TaskRecord, type OrchestratorEvent } from '../../../machines/orchestrator.machine.js';
import { PERMISSION_CATEGORY, QUEUE_PRIORITY, SubTaskResult, type PermissionRequest, type QueueMessage, type SessionSpec, type TaskUpdate } from '../../../machines/protocol/index.js';
import type { MachineModel } from '../paths.js';
import { inert, fail, sessionSpec, type Sample } from './shared.js';

const orchestratorInput: OrchestratorInput = {
  runId: 'r',
  planId: 'p',
  maxParallelWorkers: 2,
  policy: orchestratorPolicy(RunConfig.parse({ orchestrator: { questions: 'model', reinitializeAfter: 1 } })),
  tasks: [
    { id: 'a', dependsOn: [], spec: { ...sessionSpec('worker'), id: 'w-a', correlation: { ...sessionSpec('worker').correlation, taskId: 'a', workerId: 'w-a' } } },
    {
      id: 'b',
      dependsOn: ['a'],
      spec: { ...sessionSpec('worker'), id: 'w-b', agent: { raw: '@coder', backend: 'default', agentName: 'coder' }, correlation: { ...sessionSpec('worker').correlation, taskId: 'b', workerId: 'w-b' } },
    },
  ],
};

function queued(task: TaskRecord, type: QueueMessage['type'], content: unknown, id: string): QueueMessage {
  return { id, timestamp: 0, priority: QUEUE_PRIORITY[type], runId: 'r', planId: 'p', taskId: task.id, workerId: task.spec.id, worktreePath: '.', type, content } as QueueMessage;
}

function inboxMessage(task: TaskRecord, type: QueueMessage['type'], content: unknown, id: string): OrchestratorEvent {
  return { type: 'INBOX_MESSAGE', message: queued(task, type, content, id) };
}

function completion(task: TaskRecord, status: SubTaskResult['status']): OrchestratorEvent {
  const ok = status === 'success' || status === 'partial';
  const update: TaskUpdate = { id: `${task.spec.id}:result`, type: ok ? 'completed' : 'failed', subTaskId: task.spec.id, parentId: 'orchestrator', agentType: '@x', timestamp: 0, result: { taskId: task.spec.id, status, output: `${task.spec.id} ${status}` } };
  return inboxMessage(task, 'completion', update, update.id);
}

function permissionRequest(task: TaskRecord, action: PermissionRequest['action']): PermissionRequest {
  return {
    id: `${task.spec.id}:perm:${action}`,
    action,
    category: PERMISSION_CATEGORY[action],
    requesterId: 'st-1',
    agentType: '@coder',
    detail: 'git push origin a2a/w-a',
    correlation: task.spec.correlation,
    via: ['st-1', task.spec.id],
    timestamp: 0,
  };
}

const progress = (task: TaskRecord, kind: TaskUpdate['kind'], message: string): TaskUpdate => ({
  id: `${task.spec.id}:${kind}`,
  type: 'progress',
  kind,
  message,
  subTaskId: task.spec.id,
  parentId: 'orchestrator',
  agentType: '@x',
  timestamp: 0,
});

type OrchestratorModelContext = {
  tasks: Record<string, TaskRecord>;
  stopReason: string | null;
  notes: unknown[];
  enqueued: number;
  drainedAt: number;
  answering: QueueMessage | null;
  redirects: Record<string, number>;
  workflow: { told: Record<string, true>; ended: unknown } | null;
};

export const orchestratorModel: MachineModel = {
  name: 'orchestrator',
  machine: orchestratorMachine.provide({ actors: { workers: inert, inbox: inert, humanGate: inert, answerQuestion: inert, taskBranch: inert, sdlcWorkflow: inert } as never }),
  input: orchestratorInput,
  simplePaths: true,
  variants: [
    {
      // a workflow run: no tasks until the workflow asks for a step's workers
      label: 'workflow',
      input: {
        ...orchestratorInput,
        tasks: [],
        workflow: {
          input: { runId: 'r', goal: 'g', startedAt: 0, settings: { maxPlanRevisions: 1, maxFixRounds: 1, maxWaits: 1, secondaryCoders: 1, reviewers: ['sceptic'], onError: 'stop', waitMs: 10 } },
          roles: { architect: { agent: { raw: '@architect', backend: 'default', agentName: 'architect' } } },
          template: orchestratorInput.tasks[0]!.spec,
        },
      } satisfies OrchestratorInput,
    },
    {
      label: 'git',
      input: {
        ...orchestratorInput,
        git: { repo: '/repo', base: 'main', worktrees: '/repo/.a2a/worktrees/r', action: 'review', maxRounds: 1, remote: 'origin', github: null, reviewer: { raw: '@reviewer', backend: 'default', agentName: 'reviewer' } },
      },
    },
  ],
  events: (state) => {
    const c = state.context as OrchestratorModelContext;
    const events: Array<Sample<OrchestratorEvent>> = [
      { type: 'STOP', reason: 'user' },
      { type: 'xstate.error.actor.workers', actorId: 'workers', error: new Error('supervisor crashed') },
      { type: 'xstate.error.actor.inbox', actorId: 'inbox', error: new Error('inbox crashed') },
      { type: 'xstate.error.actor.humanGate', actorId: 'humanGate', error: new Error('gate crashed') },
      { type: 'HUMAN_ANSWER', id: 'w-a:perm:branch_push', answer: { approved: true, by: 'ann' } },
    ];
    // the inbox reports drained only when it holds nothing (here: whenever it is not in the middle of a message)
    if (c.drainedAt !== c.enqueued && c.answering === null) events.push({ type: 'INBOX_DRAINED', received: c.enqueued });
    if (c.answering) {
      // after a restore the inbox offers the message being answered again
      events.push({ type: 'INBOX_MESSAGE', message: c.answering });
      events.push(
        { type: 'xstate.done.actor.answerQuestion', actorId: 'answerQuestion', output: 'use postgres' },
        { type: 'xstate.error.actor.answerQuestion', actorId: 'answerQuestion', error: new Error('model down') },
      );
    }
    for (const t of Object.values(c.tasks)) {
      if (t.state === 'preparing') {
        events.push({ type: 'WORKTREE_READY', taskId: t.id, worktree: `/repo/.a2a/worktrees/r/${t.id}`, branch: `a2a/r/${t.id}` });
        events.push({ type: 'BRANCH_DONE', taskId: t.id, outcome: 'failed', reason: 'creating the worktree failed', branch: `a2a/r/${t.id}`, diff: null, commit: null, pullRequest: null });
      }
      if (t.state === 'completing') {
        const diff = { changedFiles: 1, insertions: 2, deletions: 0, files: ['a.ts'] };
        events.push({ type: 'BRANCH_DONE', taskId: t.id, outcome: 'merged', reason: 'merged into main', branch: `a2a/r/${t.id}`, diff, commit: 'm1', pullRequest: null });
        events.push({ type: 'BRANCH_DONE', taskId: t.id, outcome: 'rejected', reason: 'changes still requested', branch: `a2a/r/${t.id}`, diff, commit: 'c1', pullRequest: null });
        events.push({ type: 'CHANGES_REQUESTED', taskId: t.id, round: 1, feedback: 'conflict in a.ts', by: 'merge' });
        events.push({ type: 'REVIEW_REQUESTED', taskId: t.id, round: 0, diff, output: 'done', branch: `a2a/r/${t.id}`, base: 'main' });
        events.push({ type: 'WORKFLOW_PERMISSION', taskId: t.id, action: 'branch_merge', detail: 'merge', requestId: `branch-${t.id}:branch_merge:0` });
      }
      if (t.state === 'deploying') {
        events.push({ type: 'SPAWN_RESULT', ok: true, requestId: t.id, started: [t.spec.id], queued: [], live: 1 });
        events.push({ type: 'SPAWN_RESULT', ok: false, requestId: t.id, error: { code: 'AGENT_SPAWN_FAILED', message: 'no host' }, live: 0 });
      }
      if (t.state === 'running') {
        events.push({ type: 'UPDATES_AVAILABLE', upTo: 1, live: 1, updates: [progress(t, 'status', 'half way')] });
        events.push({ type: 'CHILD_PERMISSION_REQUEST', request: permissionRequest(t, 'branch_push') });
        events.push({ type: 'REDIRECT_WORKER', taskId: t.id, instructions: 'focus on the API', by: 'user' });
        if (c.answering === null) {
          events.push(completion(t, 'success'), completion(t, 'failed'), completion(t, 'cancelled'));
          events.push(inboxMessage(t, 'question', progress(t, 'question', 'which db?'), `${t.spec.id}:q`));
          events.push(inboxMessage(t, 'error', progress(t, 'stuck', 'the same tool call 3 times'), `${t.spec.id}:stuck`));
          for (const action of ['file_edits_in_worktree', 'branch_push', 'force_push'] as const) {
            events.push(inboxMessage(t, 'permission_request', permissionRequest(t, action), `perm:${action}`));
          }
          events.push(inboxMessage(t, 'status_update', progress(t, 'status', 'half way'), `${t.spec.id}:status`));
          // from a session the task has moved on from (an earlier round): nobody waits for its answer
          const old = `${t.spec.id}-r0`;
          events.push({ type: 'INBOX_MESSAGE', message: { ...queued(t, 'question', progress(t, 'question', 'still there?'), `${old}:q`), workerId: old } });
          const late = permissionRequest(t, 'branch_push');
          events.push(inboxMessage(t, 'permission_request', { ...late, id: `${old}:perm`, correlation: { ...late.correlation, workerId: old } }, `${old}:perm`));
        }
        const ask = permissionRequest(t, 'branch_push');
        events.push({
          type: 'HUMAN_DECIDED',
          item: { id: ask.id, kind: 'permission', taskId: t.id, workerId: t.spec.id, requesterId: 'st-1', title: 'branch_push', request: ask, askedAt: 0, timeoutMs: 1000, onTimeout: { approved: false, text: 'denied' } },
          decision: { approved: true, text: 'approved', decidedBy: 'human', by: 'ann' },
        });
      }
    }
    // management of task a (running or not: refused when it is not), and of an unknown task
    events.push(
      { type: 'REASSIGN_WORKER', taskId: 'a', agent: { raw: '@coder', backend: 'default', agentName: 'coder' }, by: 'user' },
      { type: 'REINITIALIZE_WORKER', taskId: 'a', instructions: 'start over', by: 'user' },
      { type: 'RESUME_WORKER', taskId: 'a', by: 'user' },
      { type: 'REDIRECT_WORKER', taskId: 'nope', instructions: 'x', by: 'user' },
      { type: 'SWITCH_MODEL_WORKER', taskId: 'a', profile: 'small', expensive: false, by: 'user' },
      { type: 'SWITCH_MODEL_WORKER', taskId: 'a', profile: 'large', expensive: true, by: 'user' },
    );
    if (c.workflow) {
      if (Object.keys(c.tasks).length === 0) events.push({ type: 'WORKFLOW_TASKS', state: 'PLANNING', tasks: [{ taskId: 'plan-1', role: 'architect', prompt: 'plan it' }] });
      events.push({ type: 'WORKFLOW_EVENT', event: { type: 'workflow.state', data: { state: 'PLANNING' } } }, { type: 'WORKFLOW_COMMAND', command: { type: 'PAUSE', by: 'u' } });
      if (!c.workflow.ended) events.push({ type: 'WORKFLOW_ENDED', status: 'completed', state: 'COMPLETED', reason: null, completion: null });
    }
    if (c.drainedAt === c.enqueued && c.tasks['a']) {
      const a = c.tasks['a'];
      events.push({ type: 'REPLAY', messages: [queued(a, 'status_update', progress(a, 'status', 'replayed'), 'replayed')] });
    }
    return events;
  },
  // the inbox's count is the one of the path being run, not of the path that found the vertex
  concretize: (event, state) =>
    event.type === 'INBOX_DRAINED' ? { ...event, received: (state.context as OrchestratorModelContext).enqueued } : event,
  serialize: (s) => {
    const c = s.context as OrchestratorModelContext;
    return JSON.stringify({
      v: s.value,
      tasks: Object.values(c.tasks).map((t) => t.state),
      stop: c.stopReason !== null,
      drained: c.drainedAt === c.enqueued,
      answering: c.answering !== null,
      ...(c.workflow ? { told: Object.keys(c.workflow.told).length, ended: c.workflow.ended !== null } : {}),
    });
  },
  invariants: (step) => {
    const c = step.after.context as OrchestratorModelContext;
    const tasks = c.tasks;
    const sentTo = (type: string) => step.sent.filter((x) => x.event.type === type);
    for (const s of step.sent.filter((x) => x.to === 'workers' && x.event.type === 'SPAWN')) {
      const spawn = s.event as unknown as { requestId: string; specs: SessionSpec[] };
      if (spawn.requestId.startsWith('review:')) {
        // a reviewer for a finished task's branch: the configured reviewer, at depth 0
        const task = tasks[spawn.requestId.slice('review:'.length)]!;
        if (task.state !== 'completing') fail(step, `a reviewer was deployed for task ${task.id}, which is ${task.state}`);
        if (spawn.specs.some((spec) => spec.agent.agentName !== 'reviewer' || spec.depth !== 0)) fail(step, 'the reviewer is not the configured agent at depth 0');
        continue;
      }
      for (const spec of spawn.specs) {
        const task = Object.values(tasks).find((t) => t.spec.id === spec.id)!;
        if (!task) fail(step, `deployed ${spec.id}, which is no task's worker`);
        if (spec.depth !== 0 || spec.depth > spec.maxDepth) fail(step, `worker ${spec.id} deployed at depth ${spec.depth}`);
        if (spec.agent.raw !== task.spec.agent.raw) fail(step, `worker ${spec.id} deployed as ${spec.agent.raw}, the task asks for ${task.spec.agent.raw}`);
        if (task.dependsOn.some((d) => tasks[d]!.state !== 'succeeded')) fail(step, `task ${task.id} deployed before its dependencies succeeded`);
      }
    }
    // nothing a worker sends is dropped: every batch goes to the inbox before it is acknowledged
    if (step.event.type === 'UPDATES_AVAILABLE') {
      const enqueue = step.sent.find((x) => x.to === 'inbox' && x.event.type === 'ENQUEUE');
      const ack = step.sent.find((x) => x.to === 'workers' && x.event.type === 'ACK_UPDATES');
      if (!enqueue || !ack) fail(step, 'an update batch was acknowledged without being queued, or not acknowledged');
    }
    if (step.event.type === 'CHILD_PERMISSION_REQUEST' && !step.sent.some((x) => x.to === 'inbox' && x.event.type === 'ENQUEUE')) {
      fail(step, 'a permission request did not reach the inbox');
    }
    // every inbox message is answered with HANDLED, except a question the model is now answering
    if (step.event.type === 'INBOX_MESSAGE') {
      const message = (step.event as unknown as { message: QueueMessage }).message;
      const handled = sentTo('HANDLED').some((x) => (x.event as unknown as { id: string }).id === message.id);
      const answering = c.answering?.id === message.id;
      const before = (step.before.context as OrchestratorModelContext).answering;
      if (before === null && handled === answering) fail(step, `message ${message.id} was ${handled ? 'handled and is also being answered' : 'neither handled nor being answered'}`);
      // a permission request is decided or put to a human, never left alone (unless its worker ended)
      const asker = message.type === 'permission_request' ? (message.content as PermissionRequest).correlation.workerId : null;
      if (message.type === 'permission_request' && before === null && tasks[message.taskId]!.state === 'running' && asker === tasks[message.taskId]!.spec.id) {
        const decided = sentTo('PERMISSION_DECISION').length + sentTo('ASK').length;
        if (decided !== 1) fail(step, `permission request ${message.id} got ${decided} decisions or questions`);
        const decision = sentTo('PERMISSION_DECISION')[0]?.event as unknown as { decision: { approved: boolean } } | undefined;
        const request = message.content as PermissionRequest;
        if (request.action === 'force_push' && decision?.decision.approved !== false) fail(step, 'force_push was not denied');
      }
    }
    if (step.event.type === 'xstate.done.actor.answerQuestion' || step.event.type === 'xstate.error.actor.answerQuestion') {
      if (sentTo('HANDLED').length !== 1) fail(step, 'an answered question was not marked handled');
    }
    if (step.after.status === 'done') {
      if (step.doneEvents.length !== 1) fail(step, 'the run must end with exactly one summary');
      const unsettled = Object.values(tasks).filter((t) => ['waiting', 'deploying', 'running'].includes(t.state));
      if (unsettled.length > 0) fail(step, `the run ended with tasks ${unsettled.map((t) => t.id).join(', ')} unsettled`);
      if (c.drainedAt !== c.enqueued && !step.event.type.startsWith('xstate.error')) fail(step, 'the run ended with messages still in the inbox');
      if (c.workflow && !c.workflow.ended && !step.event.type.startsWith('xstate.error')) fail(step, 'the run ended before its workflow');
    }
    // the workflow hears of each of its settled tasks exactly once
    if (c.workflow && step.after.status !== 'done') {
      const told = step.sent.filter((x) => x.to === 'workflow' && x.event.type === 'TASK_SETTLED').map((x) => (x.event as unknown as { outcome: { taskId: string } }).outcome.taskId);
      const before = (step.before.context as OrchestratorModelContext).workflow!;
      for (const id of told) if (before.told[id]) fail(step, `the workflow was told twice that ${id} settled`);
      const untold = Object.values(tasks).filter((t) => ['succeeded', 'failed', 'skipped', 'cancelled'].includes(t.state) && !c.workflow!.told[t.id] && !c.workflow!.ended);
      if (untold.length > 0) fail(step, `settled tasks the workflow was not told of: ${untold.map((t) => t.id).join(', ')}`);
    }
  },
};
