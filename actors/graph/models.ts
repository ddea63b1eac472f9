/**
 * One model per machine in machines/: the events that can reach it (with the payload variants
 * its guards distinguish), an abstraction of its context that keeps the graph finite, inert
 * doubles for its children (their events are path steps), and the invariants of every step.
 */
import type { AnyEventObject, AnyStateMachine, Snapshot } from 'xstate';
import { orchestratorPolicy, RunConfig } from '../config.js';
import { idleInquiryMachine } from '../../machines/idleInquiry.machine.js';
import { orchestratorMachine, type OrchestratorInput, type TaskRecord } from '../../machines/orchestrator.machine.js';
import type { ToolOutcome } from '../../machines/ports.js';
import { PERMISSION_CATEGORY, QUEUE_PRIORITY, SubTaskResult, type PermissionRequest, type QueueMessage, type SessionSpec, type TaskUpdate } from '../../machines/protocol.js';
import type { SessionContext } from '../../machines/session.js';
import { subtaskMachine } from '../../machines/subtask.machine.js';
import { workerMachine } from '../../machines/worker.machine.js';
import { taskBranchMachine, type TaskBranchInput } from '../../machines/taskBranch.machine.js';
import { externalTaskMachine, type ExternalTaskConfig, type ExternalTaskContext, type WireCommand } from '../../machines/externalTask.machine.js';
import { sdlcWorkflowMachine, type SdlcInput } from '../../machines/sdlcWorkflow.machine.js';
import { allowedTargets, type TaskOutcome, type WorkingState } from '../../machines/sdlcSteps.js';
import type { MachineModel, StepView } from './paths.js';

/** A child that does nothing: what it would send are path steps. */
const inert = {
  transition: (s: Snapshot<undefined>) => s,
  getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }) as Snapshot<undefined>,
  getPersistedSnapshot: (s: Snapshot<undefined>) => s,
};

function fail(step: StepView, message: string): never {
  throw new Error(`invariant broken after ${step.event.type} (${JSON.stringify(step.before.value)} → ${JSON.stringify(step.after.value)}): ${message}`);
}

// two model calls per session (enough to wait for children, and to reach the turn limit);
// two failed tool calls open the breaker
const { limits, idle } = RunConfig.parse({ limits: { maxTurns: 2, circuitBreakerThreshold: 2, stuckRepeatLimit: 2, stuckStepLimit: 3 } });

function sessionSpec(role: 'worker' | 'subtask'): SessionSpec {
  const depth = role === 'worker' ? 0 : 1;
  return {
    id: role === 'worker' ? 'w-model' : 'st-model',
    role,
    agent: { raw: '@architect', backend: 'default', agentName: 'architect' },
    prompt: 'design it',
    expectedOutput: 'a design',
    depth,
    maxDepth: 2,
    spawnContext: 'orchestrator',
    owner: role === 'worker' ? { ownerType: 'orchestrator', ownerId: 'orchestrator' } : { ownerType: 'worker', ownerId: 'w-parent' },
    correlation: { runId: 'r', planId: 'p', taskId: 't', workerId: 'w-model', worktreePath: '.', depth },
    lineage: [],
    limits,
    idle,
    permissions: { level: ['file_edits_in_worktree', 'subtask_spawning'], forSubtasks: true },
  };
}

// ---------------------------------------------------------------------------------------------
// Sessions (worker, sub-task)

const childSpecOf = (parent: SessionSpec): SessionSpec => ({
  ...parent,
  id: 'st-child',
  role: 'subtask',
  agent: { raw: '@coder', backend: 'default', agentName: 'coder' },
  prompt: 'build part',
  depth: parent.depth + 1,
  owner: { ownerType: 'worker', ownerId: parent.id },
  lineage: [{ agentName: parent.agent.agentName, prompt: parent.prompt }],
});

const call = (id: string) => ({ id, name: 'a2a_list_agents', arguments: {} });

function outcome(content: string, effect?: ToolOutcome['effect'], isError = false): AnyEventObject {
  return { type: 'TOOL_FINISHED', step: 1, outcome: { content, isError, ...(effect ? { effect } : {}) } };
}

function sessionEvents(spec: SessionSpec) {
  const child = childSpecOf(spec);
  const usage = { inputTokens: 1, outputTokens: 1 };
  return (state: { context: unknown; value: unknown }): AnyEventObject[] => {
    const c = state.context as SessionContext;
    const reply = (toolCalls: ReturnType<typeof call>[], consumedInbox = c.inbox.length, consumedUpTo = c.batch?.upTo ?? null): AnyEventObject => ({
      type: 'MODEL_REPLIED',
      step: c.messages.length + 1,
      output: { injected: [], reply: { text: 'reply', toolCalls, usage }, consumedInbox, consumedUpTo },
    });
    const events: AnyEventObject[] = [
      reply([call('c1')]),
      reply([call('c1'), call('c2')]),
      reply([]),
      { type: 'MODEL_FAILED', step: 1, error: 'provider down' },
      { type: 'LOOP_READY' },
      outcome('ok'),
      outcome('bad arguments', undefined, true),
      outcome('', { kind: 'spawn', requestId: 'r1', specs: [child], blocking: true, timeoutMs: 5000 }),
      outcome('', { kind: 'spawn', requestId: 'r1', specs: [child], blocking: false, timeoutMs: 5000 }),
      outcome('done', { kind: 'complete', status: 'success', output: 'the design' }),
      outcome('sent', { kind: 'notify', notification: 'question', message: 'which db?' }),
      outcome('{}', { kind: 'ackUpdates' }),
      { type: 'TOOL_CRASHED', step: 1, error: 'bug' },
      { type: 'CANCEL', reason: 'stopped' },
      { type: 'TIMEOUT' },
      { type: 'RESUME', by: 'orchestrator' },
      { type: `xstate.after.awaitTimeout.${spec.role}.running.awaitingChildren.waiting` },
      { type: 'xstate.error.actor.agentLoop', actorId: 'agentLoop', error: new Error('loop crashed') },
      { type: 'PERMISSION_REQUIRED', requestId: `${spec.id}:perm:1`, ask: { action: 'branch_push', detail: 'git push origin a2a/w' } },
      { type: 'REASSIGN', agent: { raw: '@coder', backend: 'default', agentName: 'coder' }, by: 'orchestrator' },
      { type: 'SWITCH_MODEL', profile: 'small', by: 'orchestrator' },
      { type: 'BUDGET_REACHED', step: 1, scope: 'worker', limitUsd: 1, spentUsd: 1.25 },
    ];
    // a restart leads back to the start with the children and the watchdog it had: offered from a
    // few states only, so that it adds their restarts to the graph and not a second copy of it
    if (c.turns === 1 && c.pendingCalls.length === 0) events.push({ type: 'REINITIALIZE', instructions: 'start over', by: 'orchestrator' });
    if (c.ownRequest) {
      events.push({ type: 'PERMISSION_DECIDED', decision: { requestId: c.ownRequest.id, approved: true, decidedBy: 'human', decider: 'ann' } });
      events.push({ type: 'PERMISSION_DECIDED', decision: { requestId: c.ownRequest.id, approved: false, decidedBy: 'timeout', decider: 'timeout' } });
    }
    // input that arrives while the model is called (a reply that did not see it)
    if (c.inbox.length > 0) events.push(reply([], c.inbox.length - 1));
    if (c.inbox.length === 0) events.push({ type: 'MESSAGE', from: 'parent', text: 'more context' });
    // the supervisor sends one batch at a time (the next after an acknowledgement)
    if (c.batch === null && c.hasSubtasks) {
      for (const live of [0, 1]) {
        events.push({
          type: 'UPDATES_AVAILABLE',
          upTo: 1,
          live,
          updates: [{ id: 'u', type: 'completed', subTaskId: 'st-child', parentId: spec.id, agentType: '@coder', timestamp: 0, result: { taskId: 'st-child', status: 'success', output: 'part' } }],
        });
      }
    }
    if (c.hasWatchdog) {
      if (!c.inquiryOpen) events.push({ type: 'IDLE_INQUIRY', attempt: 1, maxInquiries: 3 });
      events.push(
        { type: 'xstate.done.actor.idleInquiry', actorId: 'idleInquiry', output: { reason: 'unresponsive', inquiries: 1 } },
        { type: 'xstate.done.actor.idleInquiry', actorId: 'idleInquiry', output: { reason: 'exhausted', inquiries: 3 } },
        { type: 'xstate.error.actor.idleInquiry', actorId: 'idleInquiry', error: new Error('watchdog crashed') },
      );
    }
    if (c.hasSubtasks) {
      // what the supervisor sends, and the tool effects that name children (tools check the ids
      // against the session's children first, so these never come before the first spawn)
      events.push(
        outcome('', { kind: 'await', ids: ['st-child'], timeoutMs: 5000 }),
        outcome('sent', { kind: 'message', to: 'st-child', text: 'go on' }),
        outcome('cancelling', { kind: 'cancel', ids: ['st-child'], reason: 'not needed' }),
        { type: 'SPAWN_RESULT', ok: true, requestId: 'r1', started: ['st-child'], queued: [], live: 1 },
        { type: 'SPAWN_RESULT', ok: false, requestId: 'r1', error: { code: 'SUBTASK_LIMIT_EXCEEDED', message: 'too many' }, live: 0 },
        { type: 'WATCH_SATISFIED', results: [{ taskId: 'st-child', status: 'success', output: 'part' }], pending: [], unknown: [], live: 0 },
        { type: 'xstate.error.actor.subtasks', actorId: 'subtasks', error: new Error('supervisor crashed') },
      );
      // a child's permission: within this session's level, or not (passed up, its decision passed down)
      for (const action of ['file_edits_in_worktree', 'branch_push'] as const) {
        events.push({
          type: 'CHILD_PERMISSION_REQUEST',
          request: { id: `st-child:perm:${action}`, action, category: PERMISSION_CATEGORY[action], requesterId: 'st-child', agentType: '@coder', detail: 'x', correlation: child.correlation, via: ['st-child'], timestamp: 0 },
        });
      }
      for (const requestId of Object.keys(c.routes)) {
        events.push({ type: 'PERMISSION_DECIDED', decision: { requestId, approved: true, decidedBy: 'orchestrator', decider: 'orchestrator' } });
      }
    }
    return events;
  };
}

/** Only what the guards read, at the resolution they read it. */
function serializeSession(state: { value: unknown; context: unknown }): string {
  const c = state.context as SessionContext;
  return JSON.stringify([
    state.value,
    Math.min(c.turns, c.spec.limits.maxTurns),
    Math.min(c.consecutiveFailures, c.spec.limits.circuitBreakerThreshold),
    Math.min(c.pendingCalls.length, 2),
    c.inbox.length > 0,
    c.batch !== null,
    c.live > 0,
    c.inquiryOpen,
    c.hasWatchdog,
    c.hasSubtasks,
    c.spawnRequest?.blocking ?? null,
    c.result?.status ?? null,
    c.ownRequest !== null,
    Object.keys(c.routes).length > 0,
    Object.keys(c.stepDecisions).length > 0,
    // the health counters are left out: the stuck check only reports (it changes no state), so
    // merging states that differ in them never changes where a path goes
  ]);
}

function sessionInvariants(spec: SessionSpec) {
  return (step: StepView): void => {
    const before = step.before.context as SessionContext;
    const after = step.after.context as SessionContext;
    if (after.spec.depth > after.spec.maxDepth) fail(step, `depth ${after.spec.depth} above the limit ${after.spec.maxDepth}`);

    // exactly one result, delivered to the owner, when (and only when) the session ends
    if (step.after.status === 'done') {
      if (step.doneEvents.length !== 1) fail(step, `${step.doneEvents.length} results delivered to the owner, expected exactly 1`);
      const output = SubTaskResult.safeParse(step.doneEvents[0]!.output);
      if (!output.success || output.data.taskId !== spec.id) fail(step, `the result is not a valid result for ${spec.id}`);
    } else if (step.doneEvents.length !== 0) {
      fail(step, 'a result was delivered while the session still runs');
    }

    // an idle session is never completed: only a2a_subtask_complete, or the exhausted watchdog's
    // fallback (partial, marked fallback), lead to `completed`
    if (step.after.value === 'completed' && step.before.value !== 'completed') {
      const e = step.event as { type: string; outcome?: ToolOutcome; output?: { reason: string } };
      const viaTool = e.type === 'TOOL_FINISHED' && e.outcome?.effect?.kind === 'complete';
      const viaFallback = e.type === 'xstate.done.actor.idleInquiry' && e.output?.reason === 'exhausted';
      if (!viaTool && !viaFallback) fail(step, `completed by ${e.type}`);
      if (viaFallback && !(after.result?.status === 'partial' && after.result.fallback)) fail(step, 'the fallback result must be a partial marked fallback');
    }

    // a child gets the agent type that was requested, never the parent's
    const e = step.event as { type: string; outcome?: ToolOutcome };
    if (e.type === 'TOOL_FINISHED' && e.outcome?.effect?.kind === 'spawn') {
      const spawn = step.sent.find((s) => s.to === 'subtasks' && s.event.type === 'SPAWN');
      if (!spawn) fail(step, 'a spawn effect was not sent to the supervisor');
      const requested = e.outcome.effect.specs.map((s) => s.agent.raw);
      const sentTypes = (spawn.event as unknown as { specs: SessionSpec[] }).specs.map((s) => s.agent.raw);
      if (JSON.stringify(requested) !== JSON.stringify(sentTypes)) fail(step, `spawned ${sentTypes.join(',')} but ${requested.join(',')} was requested`);
      if (sentTypes.includes(spec.agent.raw)) fail(step, 'a child was given its parent\'s agent type');
    }

    // the watchdog counts only while the session is idle
    const wasIdle = JSON.stringify(step.before.value) === '{"running":"idle"}';
    const isIdle = JSON.stringify(step.after.value) === '{"running":"idle"}';
    if (isIdle && !wasIdle && !step.sent.some((s) => s.to === 'idleInquiry' && s.event.type === 'SESSION_IDLE')) fail(step, 'entered idle without telling the watchdog');
    if (wasIdle && !isIdle && step.after.status === 'active' && !step.sent.some((s) => s.to === 'idleInquiry' && s.event.type === 'SESSION_BUSY')) {
      fail(step, 'left idle without telling the watchdog');
    }

    // a permission outside the session's level goes up and the session waits; a child's request
    // is approved here within this level, or passed up; nothing is decided twice or dropped
    if (step.event.type === 'PERMISSION_REQUIRED' && step.after.status === 'active' && JSON.stringify(step.before.value) === '{"running":"usingTools"}') {
      const requestId = (step.event as unknown as { requestId: string }).requestId;
      const asked = step.sent.some((s) => s.event.type === 'PERMISSION_REQUEST');
      const answered = step.sent.some((s) => s.to === 'agentLoop' && s.event.type === 'PERMISSION_ANSWER');
      if (before.stepDecisions[requestId]) {
        if (asked || !answered) fail(step, 'a permission decided during this tool call was asked again instead of answered');
      } else {
        if (!asked) fail(step, 'a permission the tool needs was not asked of the parent');
        if (JSON.stringify(step.after.value) !== '{"running":"waitingForPermission"}') fail(step, 'the session does not show as waiting for permission');
      }
    }
    // a spent budget makes no model call: a worker pauses (and says why), a sub-task fails
    if (step.event.type === 'BUDGET_REACHED' && JSON.stringify(step.before.value) === '{"running":"thinking"}') {
      if (step.sent.some((s) => s.event.type === 'CALL_MODEL')) fail(step, 'a model call was made with the budget spent');
      const expected = spec.role === 'worker' ? '{"running":"paused"}' : '"failed"';
      if (JSON.stringify(step.after.value) !== expected) fail(step, `a spent budget led to ${JSON.stringify(step.after.value)}, expected ${expected}`);
      if (spec.role === 'worker' && !step.sent.some((s) => s.event.type === 'SUBTASK_UPDATE')) fail(step, 'a worker paused for its budget without telling its owner');
    }
    if (step.event.type === 'CHILD_PERMISSION_REQUEST') {
      const request = (step.event as unknown as { request: { action: string; via: string[]; needsPerson?: boolean } }).request;
      const approved = step.sent.filter((s) => s.to === 'subtasks' && s.event.type === 'PERMISSION_DECISION');
      const up = step.sent.filter((s) => s.event.type === 'PERMISSION_REQUEST');
      const within = !request.needsPerson && before.spec.permissions.level.includes(request.action as never);
      if (within ? approved.length !== 1 || up.length !== 0 : approved.length !== 0 || up.length !== 1) {
        fail(step, `a child's ${request.action} was ${approved.length} times approved here and ${up.length} times passed up`);
      }
      const via = (up[0]?.event as unknown as { request: { via: string[] } } | undefined)?.request.via;
      if (up.length === 1 && via?.at(-1) !== spec.id) fail(step, 'a request passed up does not record the session it went through');
    }
    if (step.event.type === 'PERMISSION_DECIDED') {
      const decision = (step.event as unknown as { decision: { requestId: string } }).decision;
      if (before.routes[decision.requestId] && !step.sent.some((s) => s.to === 'subtasks' && s.event.type === 'PERMISSION_DECISION')) {
        fail(step, 'a decision for a child was not passed down');
      }
      if (before.ownRequest?.id === decision.requestId && step.after.status === 'active') {
        const answered = step.sent.some((s) => s.to === 'agentLoop' && s.event.type === 'PERMISSION_ANSWER');
        // waiting: the tool gets it now; still running (restored, not asked again yet): it is kept for the ask
        if (!answered && !after.stepDecisions[decision.requestId]) fail(step, 'a decision for this session was dropped');
      }
    }
  };
}

function sessionModel(name: 'worker' | 'subtask', machine: AnyStateMachine): MachineModel {
  const spec = sessionSpec(name);
  return {
    name,
    machine: machine.provide({ actors: { agentLoop: inert, subtasks: inert, idleInquiry: inert } as never }),
    input: { spec },
    events: sessionEvents(spec) as MachineModel['events'],
    serialize: serializeSession,
    invariants: sessionInvariants(spec),
  };
}

// ---------------------------------------------------------------------------------------------
// idleInquiry

const watchdogConfig = { idleThresholdMs: 1000, inquiryDelayMs: 200, inquiryTimeoutMs: 3000, maxInquiries: 2 };

const idleInquiryModel: MachineModel = {
  name: 'idleInquiry',
  machine: idleInquiryMachine,
  input: watchdogConfig,
  simplePaths: true,
  events: () => [
    { type: 'SESSION_BUSY' },
    { type: 'SESSION_IDLE' },
    { type: 'INQUIRY_ANSWERED' },
    { type: 'xstate.after.idleThreshold.idleInquiry.idle' },
    { type: 'xstate.after.inquiryDelay.idleInquiry.suspectedIdle' },
    { type: 'xstate.after.inquiryTimeout.idleInquiry.inquiring' },
  ],
  serialize: (s) => JSON.stringify({ v: s.value, n: (s.context as { inquiries: number }).inquiries }),
  invariants: (step) => {
    const c = step.after.context as { inquiries: number; maxInquiries: number };
    if (c.inquiries > c.maxInquiries) fail(step, `${c.inquiries} inquiries, more than ${c.maxInquiries}`);
    const sentInquiry = step.sent.filter((s) => s.event.type === 'IDLE_INQUIRY');
    if (step.after.value === 'inquiring' && step.before.value !== 'inquiring') {
      if (sentInquiry.length !== 1 || (sentInquiry[0]!.event as unknown as { attempt: number }).attempt !== c.inquiries) fail(step, 'entered inquiring without sending exactly one inquiry');
    } else if (sentInquiry.length > 0) {
      fail(step, 'sent an inquiry without entering inquiring');
    }
    if (step.after.status === 'done') {
      const reason = (step.doneEvents[0]?.output as { reason?: string } | undefined)?.reason;
      if (step.doneEvents.length !== 1 || reason !== step.after.value) fail(step, `ended ${String(step.after.value)} but reported ${String(reason)}`);
    }
  },
};

// ---------------------------------------------------------------------------------------------
// orchestrator

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

function inboxMessage(task: TaskRecord, type: QueueMessage['type'], content: unknown, id: string): AnyEventObject {
  return {
    type: 'INBOX_MESSAGE',
    message: { id, timestamp: 0, priority: QUEUE_PRIORITY[type], runId: 'r', planId: 'p', taskId: task.id, workerId: task.spec.id, worktreePath: '.', type, content },
  };
}

function completion(task: TaskRecord, status: SubTaskResult['status']): AnyEventObject {
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

const orchestratorModel: MachineModel = {
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
    const events: AnyEventObject[] = [
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
      events.push({ type: 'REPLAY', messages: [inboxMessage(a, 'status_update', progress(a, 'status', 'replayed'), 'replayed').message] });
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
      if (message.type === 'permission_request' && before === null && tasks[message.taskId]!.state === 'running') {
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

// ---------------------------------------------------------------------------------------------
// taskBranch

const branchInput: TaskBranchInput = {
  runId: 'r',
  taskId: 't',
  repo: '/repo',
  worktree: '/repo/.a2a/worktrees/r/t',
  branch: 'a2a/r/t',
  base: 'main',
  action: 'merge',
  maxRounds: 1,
  remote: 'origin',
  github: null,
};

type BranchContext = { asking: string | null; round: number; diff: { changedFiles: number } | null; action: string };

const done = (id: string, output: unknown = undefined): AnyEventObject => ({ type: `xstate.done.actor.${id}`, actorId: id, output });
const failed = (id: string): AnyEventObject => ({ type: `xstate.error.actor.${id}`, actorId: id, error: new Error(`${id} failed`) });

const taskBranchModel: MachineModel = {
  name: 'taskBranch',
  machine: taskBranchMachine.provide({
    actors: { prepareWorktree: inert, commitAndMeasure: inert, mergeBranch: inert, removeWorktree: inert, pushBranch: inert, openPullRequest: inert } as never,
  }),
  input: branchInput,
  variants: [
    { label: 'pr, no GitHub', input: { ...branchInput, action: 'pr' } },
    { label: 'pr', input: { ...branchInput, action: 'pr', github: { owner: 'acme', repo: 'greet' } } },
    { label: 'review', input: { ...branchInput, action: 'review' } },
    { label: 'keep', input: { ...branchInput, action: 'keep' } },
  ],
  events: (state) => {
    const c = state.context as BranchContext;
    const result = { taskId: 'w-t', status: 'success', output: 'done' };
    const events: AnyEventObject[] = [
      done('prepareWorktree'),
      failed('prepareWorktree'),
      { type: 'WORKER_FINISHED', result },
      { type: 'ABANDON', reason: 'the worker failed' },
      done('commitAndMeasure', { commit: 'c1', diff: { changedFiles: 2, insertions: 3, deletions: 1, files: ['a', 'b'] } }),
      done('commitAndMeasure', { commit: null, diff: { changedFiles: 0, insertions: 0, deletions: 0, files: [] } }),
      failed('commitAndMeasure'),
      done('mergeBranch', { merged: true, commit: 'm1' }),
      done('mergeBranch', { merged: false, conflicts: ['src/a.ts'] }),
      failed('mergeBranch'),
      done('removeWorktree'),
      failed('removeWorktree'),
      done('pushBranch'),
      failed('pushBranch'),
      done('openPullRequest', { number: 7, url: 'https://example/pull/7' }),
      failed('openPullRequest'),
      { type: 'REVIEW_DONE', approved: true, feedback: 'fine', by: 'w-t-review1' },
      { type: 'REVIEW_DONE', approved: false, feedback: 'add tests', by: 'w-t-review1' },
      // a decision for another request is not this one's
      { type: 'PERMISSION_DECIDED', decision: { requestId: 'someone-else', approved: true, decidedBy: 'human', decider: 'ann' } },
    ];
    if (c.asking) {
      events.push(
        { type: 'PERMISSION_DECIDED', decision: { requestId: c.asking, approved: true, decidedBy: 'orchestrator', decider: 'orchestrator' } },
        { type: 'PERMISSION_DECIDED', decision: { requestId: c.asking, approved: false, decidedBy: 'timeout', decider: 'timeout' } },
      );
    }
    return events;
  },
  serialize: (s) => {
    const c = s.context as BranchContext;
    return JSON.stringify({ v: s.value, asking: c.asking !== null, round: c.round, diff: c.diff ? c.diff.changedFiles > 0 : null });
  },
  concretize: (event, state) => {
    // the request id names the round, so it is rebuilt from the snapshot the path reached
    const asking = (state.context as BranchContext).asking;
    if (event.type === 'PERMISSION_DECIDED' && asking && (event as unknown as { decision: { requestId: string } }).decision.requestId !== 'someone-else') {
      return { ...event, decision: { ...(event as unknown as { decision: object }).decision, requestId: asking } };
    }
    return event;
  },
  invariants: (step) => {
    const reports = step.sent.filter((x) => x.event.type === 'BRANCH_DONE');
    if (step.after.status === 'done' && step.before.status !== 'done' && reports.length !== 1) fail(step, `ended with ${reports.length} BRANCH_DONE reports, expected exactly 1`);
    if (step.after.status !== 'done' && reports.length > 0) fail(step, 'reported done while still running');
    const value = JSON.stringify(step.after.value);
    // nothing is merged, pushed or opened without an approved permission for exactly that step
    if (['"merging"', '"pushing"', '"openingPr"'].includes(value) && JSON.stringify(step.before.value) !== value) {
      const e = step.event as { type: string; decision?: { approved: boolean } };
      if (e.type !== 'PERMISSION_DECIDED' || !e.decision?.approved) fail(step, `entered ${value} without an approval`);
    }
    // a conflict never ends in "merged": it goes back to the worker, or the task is given up
    const e = step.event as { type: string; output?: { merged?: boolean } };
    if (e.type === 'xstate.done.actor.mergeBranch' && e.output?.merged === false && ['"cleaning"', '"merged"'].includes(value)) fail(step, 'a conflict was taken for a merge');
    if (step.after.value === 'merged' && step.before.value !== 'merged' && step.before.value !== 'cleaning') fail(step, 'merged without merging');
  },
};

// ---------------------------------------------------------------------------------------------
// externalTask (a task done by external seed 004 agents through the gateway)

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

const externalTaskModel: MachineModel = {
  name: 'externalTask',
  machine: externalTaskMachine.provide({ actors: { agentWire: inert } as never }),
  input: { spec: externalSpec, config: externalConfig },
  events: (state) => {
    const c = state.context as ExternalTaskContext;
    const at = c.now + 10;
    // agents are named by the attempt that finds them, so that the graph stays small
    const agent = c.agentId ?? `agent-${c.attempts + 1}`;
    const events: AnyEventObject[] = [
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

/** Every machine in machines/: a new machine file needs a model here (the test checks). */
// ---------------------------------------------------------------------------------------------
// sdlcWorkflow (seed 003): one revision and one fixing round, one `wait` allowed, so that every
// bound is reached on short paths

const sdlcInput: SdlcInput = {
  runId: 'r',
  goal: 'a greet function with its tests',
  startedAt: 0,
  settings: { maxPlanRevisions: 1, maxFixRounds: 1, maxWaits: 1, secondaryCoders: 2, reviewers: ['sceptic'], onError: 'wait', waitMs: 100 },
};

interface SdlcView {
  history: string[];
  step: { state: WorkingState | null; tasks: Record<string, TaskOutcome | null>; verdict: string | null };
  entries: Partial<Record<WorkingState, number>>;
  strikes: number;
  refusals: number;
  error: { state: WorkingState; cause: string } | null;
  settings: SdlcInput['settings'];
}

/** The working state a snapshot is in (`{ active: { PLAN_REVIEW: 'deciding' } }` → PLAN_REVIEW). */
const activeStep = (value: unknown): string | null => {
  const active = (value as { active?: unknown } | null)?.active;
  return active && typeof active === 'object' ? Object.keys(active)[0]! : null;
};

const sdlcModel: MachineModel = {
  name: 'sdlcWorkflow',
  machine: sdlcWorkflowMachine,
  input: sdlcInput,
  events: (state) => {
    const c = state.context as SdlcView;
    const events: AnyEventObject[] = [{ type: 'START' }, { type: 'PAUSE', by: 'u' }, { type: 'RESUME', by: 'u' }, { type: 'RETRY', by: 'u' }, { type: 'STOP', by: 'u' }];
    const pending = Object.entries(c.step.tasks).filter(([, t]) => t === null);
    if (pending.length > 0) {
      const [taskId] = pending[0]!;
      const outcome = (ok: boolean): TaskOutcome => ({ taskId, role: 'r', workerId: `w-${taskId}`, state: ok ? 'succeeded' : 'failed', result: { taskId: `w-${taskId}`, status: ok ? 'success' : 'failed', output: 'done' } as TaskOutcome['result'] });
      events.push({ type: 'TASK_SETTLED', outcome: outcome(true) }, { type: 'TASK_SETTLED', outcome: outcome(false) });
    }
    const recorded = (verdict: string | null) => ({ type: 'xstate.done.actor.recordStep', output: { artifacts: [], created: 1, verdict, files: ['a.js'], linesOfCode: 3, issuesFound: 1, at: 5 } });
    // what the step found: nothing to judge, or (reviews, tests) a verdict that holds the work back
    events.push(recorded(null));
    if (c.step.state === 'PLAN_REVIEW' || c.step.state === 'CODE_REVIEW') events.push(recorded('approved'), recorded('needs_revision'));
    if (c.step.state === 'TESTING') events.push(recorded('passed'), recorded('failed'));
    events.push(
      { type: 'xstate.error.actor.recordStep', error: new Error('store down') },
      { type: 'xstate.error.actor.decide', error: new Error('no decision') },
    );
    const step = c.step.state;
    if (step) {
      const decide = (decision: Record<string, unknown>) => ({ type: 'xstate.done.actor.decide', output: { decision: { reasoning: 'because', ...decision }, contextTokens: 10, at: 9 } });
      events.push(decide({ action: 'approve' }), decide({ action: 'request_revision' }), decide({ action: 'wait' }), decide({ action: 'transition', nextState: 'IDLE' }));
      for (const to of allowedTargets(step)) events.push(decide({ action: 'transition', nextState: to }));
      events.push({ type: `xstate.after.organiserWait.sdlc.active.${step}.waiting` });
    }
    return events;
  },
  serialize: (s) => {
    const c = s.context as SdlcView;
    const pending = Object.values(c.step.tasks).filter((t) => t === null).length;
    return JSON.stringify({ v: s.value, st: c.step.state, r: c.entries.PLAN_REVISION ?? 0, f: c.entries.CODE_FIXING ?? 0, s: c.strikes, p: pending, e: c.error?.state ?? null, ec: c.error?.cause ?? null, vd: c.step.verdict });
  },
  invariants: (step) => {
    const before = step.before.context as SdlcView;
    const after = step.after.context as SdlcView;
    const { maxPlanRevisions, maxFixRounds, maxWaits } = after.settings;
    if ((after.entries.PLAN_REVISION ?? 0) > maxPlanRevisions) fail(step, 'more plan revisions than allowed');
    if ((after.entries.CODE_FIXING ?? 0) > maxFixRounds) fail(step, 'more fixing rounds than allowed');
    if (after.strikes > maxWaits) fail(step, `${after.strikes} strikes, more than ${maxWaits}`);
    // a step that begins asks for its workers exactly once
    const asked = step.sent.filter((x) => x.event.type === 'WORKFLOW_TASKS');
    const began = Object.keys(after.step.tasks).some((id) => !(id in before.step.tasks));
    if (began !== (asked.length === 1) || asked.length > 1) fail(step, `began a step: ${began}, asked for workers ${asked.length} times`);
    // a command the state does not take is refused, and changes nothing else
    const command = ['START', 'PAUSE', 'RESUME', 'RETRY', 'STOP'].includes(step.event.type);
    // (applied, a command may land where it was: RESUME into a step whose worker failed fails again)
    const moved = JSON.stringify(step.before.value) !== JSON.stringify(step.after.value) || JSON.stringify(before.history) !== JSON.stringify(after.history);
    if (command && !moved && after.refusals !== before.refusals + 1) fail(step, `${step.event.type} neither applied nor refused`);
    if (command && after.refusals !== before.refusals && moved) fail(step, `${step.event.type} was refused but changed the state`);
    if (!command && after.refusals !== before.refusals && step.event.type !== 'xstate.done.actor.decide') fail(step, 'refused something that is not a command');
    // resuming lands in the step it left
    if (step.event.type === 'RESUME' && after.refusals === before.refusals && step.after.value !== 'ERROR' && activeStep(step.after.value) !== after.step.state) fail(step, 'resumed somewhere else');
    // a review that asked for changes, or failed tests, never move the work forward
    if (step.event.type === 'xstate.done.actor.decide' && (before.step.verdict === 'needs_revision' || before.step.verdict === 'failed')) {
      const to = activeStep(step.after.value) ?? String(step.after.value);
      const back = before.step.state === 'TESTING' ? 'CODE_FIXING' : before.step.state === 'PLAN_REVIEW' ? 'PLAN_REVISION' : 'CODE_FIXING';
      if (to !== before.step.state && to !== back && to !== 'ERROR') fail(step, `${before.step.state} went on to ${to} although its verdict was ${before.step.verdict}`);
    }
    const ended = step.sent.filter((x) => x.event.type === 'WORKFLOW_ENDED');
    if (step.after.value === 'COMPLETED' && step.before.value !== 'COMPLETED' && ended.length !== 1) fail(step, 'completed without telling the orchestrator');
    if (step.after.value === 'IDLE' && step.before.value !== 'IDLE' && ended.length !== 1) fail(step, 'stopped without telling the orchestrator');
  },
};

export const models: MachineModel[] = [
  sdlcModel,
  orchestratorModel,
  sessionModel('worker', workerMachine),
  sessionModel('subtask', subtaskMachine),
  idleInquiryModel,
  taskBranchModel,
  externalTaskModel,
];
