/**
 * The orchestrator chart's implementations (machines/orchestrator.machine.ts draws the chart): its
 * context and events, and the guards, actions and actors its states name, under those names.
 * What the chart does is read there; how each named step does it, here.
 *
 * Over 600 lines, for a reason: its actions are written inside the one setup() call, because
 * XState types each action (its context, event and the actors it may spawn or send to) from the
 * setup() it is written in; an action written in another module needs those five type parameters
 * spelled out on every assign(), which is longer and drifts from the chart.
 */
import { assign, enqueueActions, fromPromise, sendTo, setup } from 'xstate';
// ActorSystem named here so that the machine's declaration can name it (xstate does not export AnyActorSystem)
import type { ActorLogic, ActorSystem, Snapshot } from 'xstate';
import type { HumanGateEvent, HumanGateReply, InboxEvent, InboxReply, ManagementEvent, SupervisorReply } from './ports.js';
import type { OrchestratorCommand, WorkerManagementEvent } from './protocol/index.js';
import type { SupervisorLogic } from './session.js';
import { taskBranchMachine, type BranchAction, type TaskBranchEvent, type TaskBranchInput, type TaskBranchReply } from './taskBranch.machine.js';
import { sdlcWorkflowMachine, type SdlcCommand, type SdlcEmitted, type SdlcInput, type SdlcToParent } from './sdlcWorkflow.machine.js';
import type { TaskOutcome } from './sdlcSteps.js';
import {
  PERMISSION_CATEGORY,
  QUEUE_PRIORITY,
  type HumanAnswer,
  type HumanItem,
  type OrchestratorPolicy,
  type ParsedAgentType,
  type PermissionAction,
  type PermissionDecision,
  type PermissionRequest,
  type QueueMessage,
  type QueueMessageType,
  type ResultStatus,
  type SessionSpec,
  type SubTaskResult,
  type TaskUpdate,
  type Usage,
  type CompletionSummary,
  type WorkflowState,
} from './protocol/index.js';
import { errorText } from './errorText.js';
import { REVIEW_EXPECTED_OUTPUT, reviewPrompt, reworkPrompt } from './workPrompts.js';

/**
 * `preparing`: its worktree is being created; `completing`: its worker finished and its branch is
 * being committed, reviewed, merged or pushed (git repositories only).
 */
export type TaskState = 'waiting' | 'preparing' | 'deploying' | 'running' | 'completing' | 'succeeded' | 'failed' | 'skipped' | 'cancelled';

export interface TaskRecord {
  id: string;
  dependsOn: string[];
  /** The worker's session spec; the prompt gets the dependencies' outputs appended at deploy. */
  spec: SessionSpec;
  state: TaskState;
  result: SubTaskResult | null;
  note: string | null;
  /** The task as first given to its worker (dependencies' results included): later rounds build on it. */
  brief: string | null;
  /** Worker sessions this task has had (a change request deploys a new one on the same worktree). */
  rounds: number;
}

/** How tasks use git: a worktree and branch each, and what happens when the worker finishes. */
export interface GitPlan {
  repo: string;
  base: string;
  /** `<repo>/.a2a/worktrees`. */
  worktrees: string;
  action: BranchAction;
  maxRounds: number;
  remote: string;
  github: { owner: string; repo: string } | null;
  /** The agent that reviews a branch when the action is `review`. */
  reviewer: ParsedAgentType;
}

/** One line of the conversation between the orchestrator (or a human) and a worker. */
export interface ConversationEntry {
  from: string;
  kind: 'question' | 'answer' | 'status' | 'error' | 'idle' | 'permission' | 'redirect' | 'reassign' | 'reinitialize' | 'resume' | 'stuck' | 'review' | 'changes' | 'branch' | 'model';
  text: string;
}

export interface OrchestratorInput {
  runId: string;
  planId: string;
  tasks: Array<{ id: string; dependsOn: string[]; spec: SessionSpec }>;
  maxParallelWorkers: number;
  policy: OrchestratorPolicy;
  /** Null when the workspace is not a git repository (or git is switched off): workers share it. */
  git?: GitPlan | null;
  /** The organiser's SDLC workflow (`a2a run --workflow sdlc`): it adds the tasks, step by step. */
  workflow?: OrchestratorWorkflow | null;
}

/** A workflow run: the chart's input, who plays each role, and the spec every step's worker starts from. */
export interface OrchestratorWorkflow {
  input: SdlcInput;
  roles: Record<string, { agent: ParsedAgentType; model?: string }>;
  /** Limits, permissions, workspace and correlation of the run; id, agent and prompt are the step's. */
  template: SessionSpec;
}

/** How the workflow ended, for the summary. */
export interface WorkflowEnding {
  status: 'completed' | 'failed' | 'stopped';
  state: WorkflowState;
  reason: string | null;
  completion: CompletionSummary | null;
}

export interface RunSummary {
  runId: string;
  planId: string;
  status: 'completed' | 'failed' | 'cancelled';
  tasks: Array<{ id: string; agentType: string; state: TaskState; result: SubTaskResult | null; note: string | null }>;
  usage: Usage;
  /** Worker questions, idle answers and status notes, in the order they were handled. */
  notes: TaskUpdate[];
  /** Per task: the questions, answers, redirects and decisions exchanged with its worker. */
  conversations: Record<string, ConversationEntry[]>;
  stopReason: string | null;
  /** A workflow run: how its workflow ended (null while it runs, absent for a plan). */
  workflow?: WorkflowEnding | null;
}

/** What the orchestrator's own model is asked when it answers a worker's question. */
export interface AnswerQuestionInput {
  taskId: string;
  workerId: string;
  agentType: string;
  task: string;
  question: string;
  history: ConversationEntry[];
}

/** Management of a running worker (CLI, host, or the orchestrator's own policy); schema in machines/protocol/. */
export type { WorkerManagementEvent } from './protocol/index.js';

/** What the orchestrator hears: commands from outside (machines/protocol/), its children's replies, and XState's own. */
export type OrchestratorEvent =
  | OrchestratorCommand
  | SupervisorReply
  | InboxReply
  | HumanGateReply
  | TaskBranchReply
  | SdlcToParent
  | { type: 'WORKFLOW_COMMAND'; command: SdlcCommand }
  | { type: 'xstate.done.actor.answerQuestion'; actorId: string; output: string }
  | { type: 'xstate.error.actor.answerQuestion'; actorId: string; error: unknown };

/** Run events of the orchestrator's own decisions (the runtime stamps and forwards them). */
export type OrchestratorEmitted = {
  type:
    | 'task.skipped'
    | 'task.completed'
    | 'review.requested'
    | 'changes.requested'
    | 'branch.done'
    | 'permission.decided'
    | 'question.asked'
    | 'question.answered'
    | 'worker.redirected'
    | 'worker.reassigned'
    | 'worker.reinitialized'
    | 'worker.resumed'
    | 'stuck.detected'
    | 'run.stopped'
    | SdlcEmitted['type']
    | 'warning';
  taskId?: string;
  workerId?: string;
  subTaskId?: string;
  /** The permission request it is about: its requester's correlation goes on the run event. */
  request?: PermissionRequest;
  data: Record<string, unknown>;
};

export interface OrchestratorContext {
  runId: string;
  planId: string;
  order: string[];
  tasks: Record<string, TaskRecord>;
  /** Worker id → task id. */
  byWorker: Record<string, string>;
  maxParallelWorkers: number;
  policy: OrchestratorPolicy;
  notes: TaskUpdate[];
  conversations: Record<string, ConversationEntry[]>;
  /** Stuck redirects per task since its last reinitialization. */
  redirects: Record<string, number>;
  /** `ENQUEUE`s sent to the inbox, and how many it had received when it last reported drained. */
  enqueued: number;
  drainedAt: number;
  /** The question being answered by the model. */
  answering: QueueMessage | null;
  git: GitPlan | null;
  /** Reviewer sessions deployed for a branch: worker id → task id. */
  reviewers: Record<string, string>;
  /** Model switches and reassignments waiting for a person's approval, by request id. */
  switches: Record<string, { taskId: string; by: string } & ({ profile: string; agent?: undefined } | { agent: ParsedAgentType; profile?: undefined })>;
  stopReason: string | null;
  /** A workflow run: roles, the spec template, the tasks whose outcome it was told, how it ended. */
  workflow: { input: SdlcInput; roles: OrchestratorWorkflow['roles']; template: SessionSpec; told: Record<string, true>; ended: WorkflowEnding | null } | null;
}

const SETTLED: TaskState[] = ['succeeded', 'failed', 'skipped', 'cancelled'];
const succeededStatus: ResultStatus[] = ['success', 'partial'];
const clip = (text: string, max = 500) => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * Tasks that can be deployed now, and tasks that can never run because a dependency did not
 * succeed (skips propagate down the DAG until nothing changes).
 */
function readiness(order: string[], input: Record<string, TaskRecord>) {
  const tasks = { ...input };
  const ready: TaskRecord[] = [];
  const skipped: Array<{ id: string; reason: string }> = [];
  let changed = true;
  while (changed) {
    changed = false;
    for (const id of order) {
      const task = tasks[id]!;
      if (task.state !== 'waiting') continue;
      const deps = task.dependsOn.map((d) => tasks[d]!);
      const bad = deps.find((d) => d.state === 'failed' || d.state === 'skipped' || d.state === 'cancelled');
      if (bad) {
        const reason = `dependency ${bad.id} ${bad.state}`;
        tasks[id] = { ...task, state: 'skipped', note: reason };
        skipped.push({ id, reason });
        changed = true;
      }
    }
  }
  for (const id of order) {
    const task = tasks[id]!;
    if (task.state === 'waiting' && task.dependsOn.every((d) => tasks[d]!.state === 'succeeded')) {
      ready.push(task);
      tasks[id] = { ...task, state: 'deploying' };
    }
  }
  return { tasks, ready, skipped };
}

/**
 * Whether `readiness` would deploy or skip this task: it waits, and its dependencies all
 * succeeded or one of them will never succeed. Checked after every microstep of `running` (the
 * guard of its eventless deploy transition), so it copies nothing.
 */
function deployable(tasks: Record<string, TaskRecord>, task: TaskRecord): boolean {
  if (task.state !== 'waiting') return false;
  let allSucceeded = true;
  for (const d of task.dependsOn) {
    const state = tasks[d]!.state;
    if (state === 'failed' || state === 'skipped' || state === 'cancelled') return true;
    if (state !== 'succeeded') allSucceeded = false;
  }
  return allSucceeded;
}

function promptWithDependencies(context: OrchestratorContext, task: TaskRecord): string {
  if (task.dependsOn.length === 0) return task.spec.prompt;
  const parts = task.dependsOn.map((d) => {
    const r = context.tasks[d]!.result;
    return `### ${d} (${r?.status ?? 'unknown'})\n${r?.output ?? ''}${r?.outputFile ? `\n(output file: ${r.outputFile})` : ''}`;
  });
  return `${task.spec.prompt}\n\n## Results of the tasks this one depends on\n\n${parts.join('\n\n')}`;
}

/** The inbox type of a worker's update (seed 000: completion > question > status). */
function messageTypeOf(update: TaskUpdate): QueueMessageType {
  if (update.type === 'completed' || update.type === 'failed') return 'completion';
  if (update.type === 'idle_response') return 'idle_response';
  if (update.type === 'progress' && update.kind === 'question') return 'question';
  if (update.type === 'progress' && (update.kind === 'error' || update.kind === 'stuck')) return 'error';
  return 'status_update';
}

function baseMessage(context: OrchestratorContext, task: TaskRecord | undefined, workerId: string) {
  return {
    runId: context.runId,
    planId: context.planId,
    taskId: task?.id ?? 'unknown',
    workerId,
    worktreePath: task?.spec.correlation.worktreePath ?? '',
  };
}

export function taskOf(context: OrchestratorContext, message: QueueMessage): TaskRecord | undefined {
  return context.tasks[message.taskId];
}

const isLive = (task: TaskRecord | undefined) => task?.state === 'running';

/** A worker session that can still be answered: a task's current worker, or a reviewer. */
function liveWorker(context: OrchestratorContext, workerId: string): boolean {
  if (context.reviewers[workerId]) return true;
  const task = context.tasks[context.byWorker[workerId] ?? ''];
  return task?.state === 'running' && task.spec.id === workerId;
}

const branchId = (taskId: string): `branch-${string}` => `branch-${taskId}`;

/** Whoever waits for a decision: a session (through the workers) or a task's branch workflow. */
function waitsForDecision(context: OrchestratorContext, request: PermissionRequest): boolean {
  const to = request.via.at(-1)!;
  if (to.startsWith('branch-')) return context.tasks[request.correlation.taskId]?.state === 'completing';
  return liveWorker(context, request.correlation.workerId);
}

/** A decision goes back the way the request came: to a branch workflow, or down through the workers. */
function isMessage(event: OrchestratorEvent, type: QueueMessageType): boolean {
  return event.type === 'INBOX_MESSAGE' && event.message.type === type;
}

function permissionOf(event: OrchestratorEvent): PermissionRequest {
  return (event as Extract<OrchestratorEvent, { type: 'INBOX_MESSAGE' }>).message.content as PermissionRequest;
}

/** The tier a permission request falls under: the matrix's, except that what only a person may give is asked even where the matrix approves. */
function permissionTier(context: OrchestratorContext, request: PermissionRequest): 'auto_approve' | 'ask_user' | 'auto_deny' {
  const matrixTier = context.policy.permissions.matrix[request.action];
  return request.needsPerson && matrixTier === 'auto_approve' ? 'ask_user' : matrixTier;
}

function sendDecision(
  enqueue: { sendTo: (to: never, event: never) => void },
  request: PermissionRequest,
  decision: PermissionDecision,
): void {
  const to = request.via.at(-1)!;
  if (to.startsWith('branch-')) enqueue.sendTo(to as never, { type: 'PERMISSION_DECIDED', decision } as never);
  else enqueue.sendTo('workers' as never, { type: 'PERMISSION_DECISION', to, decision } as never);
}

/**
 * Asks a person (the humanGate) to approve a change to a running worker that the matrix puts under
 * `ask_user` (a model switch, a reassignment); the answer, or the timeout's default, comes back as
 * HUMAN_DECIDED for the pending request `id`.
 */
function askPerson(
  enqueue: { sendTo: (to: never, event: never) => void },
  context: OrchestratorContext,
  task: TaskRecord,
  id: string,
  action: PermissionAction,
  by: string,
  detail: string,
): void {
  const request: PermissionRequest = {
    id,
    action,
    category: PERMISSION_CATEGORY[action],
    requesterId: by,
    agentType: task.spec.agent.raw,
    detail,
    correlation: task.spec.correlation,
    via: ['orchestrator:switch'],
    timestamp: 0,
  };
  const approveOnTimeout = context.policy.permissions.askUserDefault === 'approve';
  enqueue.sendTo('humanGate' as never, {
    type: 'ASK',
    item: {
      id,
      kind: 'permission',
      planId: context.planId,
      taskId: task.id,
      workerId: task.spec.id,
      requesterId: by,
      title: `${action}: ${detail}`,
      request,
      askedAt: 0,
      timeoutMs: context.policy.permissions.askUserTimeoutMs,
      onTimeout: { approved: approveOnTimeout, text: approveOnTimeout ? 'approved by default: nobody answered' : 'denied by default: nobody answered' },
    },
  } as never);
}

/** What a reviewer's result says: approve, or the changes it asks for. */
export function reviewVerdict(result: SubTaskResult): { approved: boolean; feedback: string } {
  const said = (result.metadata as { verdict?: unknown } | undefined)?.verdict;
  const ok = result.status === 'success' || result.status === 'partial';
  if (!ok) return { approved: false, feedback: `the review did not finish (${result.status}${result.error ? `: ${result.error}` : ''})` };
  if (said === 'approve') return { approved: true, feedback: result.output };
  if (said === 'request_changes') return { approved: false, feedback: result.output };
  if (/^\s*(approve|approved|lgtm)\b/i.test(result.output)) return { approved: true, feedback: result.output };
  return { approved: false, feedback: result.output };
}

/** Statuses a worker's result may settle its task with. */
function settledState(result: SubTaskResult): TaskState {
  return result.status === 'cancelled' ? 'cancelled' : succeededStatus.includes(result.status) ? 'succeeded' : 'failed';
}

function appendConversation(context: OrchestratorContext, taskId: string, entry: ConversationEntry): Record<string, ConversationEntry[]> {
  return { ...context.conversations, [taskId]: [...(context.conversations[taskId] ?? []), entry] };
}

export const orchestratorSetup = setup({
  types: {
    input: {} as OrchestratorInput,
    context: {} as OrchestratorContext,
    events: {} as OrchestratorEvent,
    output: {} as RunSummary,
    emitted: {} as OrchestratorEmitted,
    children: {} as { workers: 'workers'; inbox: 'inbox'; humanGate: 'humanGate'; answerQuestion: 'answerQuestion'; workflow: 'sdlcWorkflow' } & Record<`branch-${string}`, 'taskBranch'>,
  },
  actors: {
    workers: {
      transition: (s) => s,
      getInitialSnapshot: () => {
        throw new Error('the workers supervisor is not provided: build the machines with createRuntime()');
      },
      getPersistedSnapshot: (s) => s,
    } as SupervisorLogic,
    inbox: {
      transition: (s) => s,
      getInitialSnapshot: () => {
        throw new Error('the inbox is not provided: build the machines with createRuntime()');
      },
      getPersistedSnapshot: (s) => s,
    } as ActorLogic<Snapshot<undefined>, InboxEvent, unknown, ActorSystem<any>>,
    humanGate: {
      transition: (s) => s,
      getInitialSnapshot: () => {
        throw new Error('the human gate is not provided: build the machines with createRuntime()');
      },
      getPersistedSnapshot: (s) => s,
    } as ActorLogic<Snapshot<undefined>, HumanGateEvent, unknown, ActorSystem<any>>,
    answerQuestion: fromPromise<string, AnswerQuestionInput>(async () => {
      throw new Error('no orchestrator model is provided: build the machines with createRuntime()');
    }),
    taskBranch: taskBranchMachine,
    sdlcWorkflow: sdlcWorkflowMachine,
  },
  guards: {
    allSettled: ({ context }) => context.order.every((id) => SETTLED.includes(context.tasks[id]!.state)),
    /** A plan: every task succeeded. A workflow run: its workflow completed. */
    allSucceeded: ({ context }) => (context.workflow ? context.workflow.ended?.status === 'completed' : context.order.every((id) => context.tasks[id]!.state === 'succeeded')),
    /** No workflow, or one that has ended (completed, failed, stopped). */
    workflowEnded: ({ context }) => context.workflow === null || context.workflow.ended !== null,
    /** A task of the workflow settled and the workflow has not been told. */
    workflowNeedsNews: ({ context }) => context.workflow !== null && context.workflow.ended === null && context.order.some((id) => isNews(context, id)),
    /** Everything sent to the inbox is in, and it holds nothing. */
    inboxDrained: ({ context }) => context.drainedAt === context.enqueued,
    answeredByModel: ({ context, event }) =>
      event.type === 'INBOX_MESSAGE' &&
      event.message.type === 'question' &&
      context.policy.questions.answerBy === 'model' &&
      liveWorker(context, event.message.workerId),
    /** A management event names a task whose worker is running. */
    workerRunning: ({ context, event }) => 'taskId' in event && isLive(context.tasks[event.taskId as string]),
    /** A waiting task can be deployed (its dependencies succeeded), or must be skipped (one did not). */
    tasksToDeploy: ({ context }) => context.order.some((id) => deployable(context.tasks, context.tasks[id]!)),
    /** The message offered by the inbox is a permission request, a result, a question, an error report. */
    isPermission: ({ event }) => isMessage(event, 'permission_request'),
    isCompletion: ({ event }) => isMessage(event, 'completion'),
    isQuestion: ({ event }) => isMessage(event, 'question'),
    isErrorReport: ({ event }) => isMessage(event, 'error'),
    /** A permission the session that asked no longer waits for (it has ended). */
    permissionUnawaited: ({ context, event }) => isMessage(event, 'permission_request') && !waitsForDecision(context, permissionOf(event)),
    /** A permission the matrix approves, or denies, without asking anyone. */
    permissionAutoApproved: ({ context, event }) => isMessage(event, 'permission_request') && permissionTier(context, permissionOf(event)) === 'auto_approve',
    permissionAutoDenied: ({ context, event }) => isMessage(event, 'permission_request') && permissionTier(context, permissionOf(event)) === 'auto_deny',
    /** The inbox re-offers, after a restore, the message this chart is already handling. */
    alreadyHandling: ({ context, event }) => event.type === 'INBOX_MESSAGE' && context.answering?.id === event.message.id,
  },
  actions: {
    deployReadyTasks: enqueueActions(({ context, enqueue }) => {
      const { tasks, ready, skipped } = readiness(context.order, context.tasks);
      if (ready.length === 0 && skipped.length === 0) return;
      for (const { id, reason } of skipped) enqueue.emit({ type: 'task.skipped', taskId: id, data: { reason } });
      const git = context.git;
      const briefed = Object.fromEntries(ready.map((t) => [t.id, { ...tasks[t.id]!, brief: promptWithDependencies(context, t), spec: { ...t.spec, prompt: promptWithDependencies(context, t) } }]));
      if (ready.length > 0 && git) {
        // each task gets its worktree first; its worker is deployed when the worktree is ready
        for (const t of ready) {
          briefed[t.id] = { ...briefed[t.id]!, state: 'preparing' };
          const input: TaskBranchInput = {
            runId: context.runId,
            taskId: t.id,
            repo: git.repo,
            worktree: `${git.worktrees}/${t.id}`,
            branch: `a2a/${context.runId}/${t.id}`,
            base: git.base,
            action: git.action,
            maxRounds: git.maxRounds,
            remote: git.remote,
            github: git.github,
          };
          enqueue.spawnChild('taskBranch', { id: branchId(t.id), input });
        }
      } else if (ready.length > 0) {
        enqueue.sendTo('workers', { type: 'SPAWN', requestId: ready.map((t) => t.id).join(','), specs: ready.map((t) => briefed[t.id]!.spec) });
      }
      enqueue.assign({ tasks: { ...tasks, ...briefed } });
    }),
    /** Its worktree exists: the task's worker is deployed into it. */
    deployIntoWorktree: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'WORKTREE_READY') return;
      const task = context.tasks[event.taskId];
      if (!task || task.state !== 'preparing') return;
      const spec: SessionSpec = { ...task.spec, correlation: { ...task.spec.correlation, worktreePath: event.worktree } };
      enqueue.assign({ tasks: { ...context.tasks, [task.id]: { ...task, spec, state: 'deploying' } } });
      enqueue.sendTo('workers', { type: 'SPAWN', requestId: task.id, specs: [spec] });
    }),
    /** The branch asked for changes (a conflict, or the reviewer): a new worker session on the same worktree. */
    redeployWithFeedback: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'CHANGES_REQUESTED') return;
      const task = context.tasks[event.taskId];
      if (!task || task.state !== 'completing') return;
      const base = context.tasks[event.taskId]!.spec.id.replace(/-r\d+$/, '');
      const id = `${base}-r${event.round}`;
      const prompt = reworkPrompt({ task: task.brief ?? task.spec.prompt, round: event.round, by: event.by, feedback: event.feedback, previous: task.result?.output ?? '' });
      const spec: SessionSpec = { ...task.spec, id, prompt, correlation: { ...task.spec.correlation, workerId: id } };
      enqueue.assign({
        tasks: { ...context.tasks, [task.id]: { ...task, spec, state: 'deploying', rounds: task.rounds + 1 } },
        byWorker: { ...context.byWorker, [id]: task.id },
        conversations: appendConversation(context, task.id, { from: event.by, kind: 'changes', text: event.feedback }),
      });
      enqueue.emit({ type: 'changes.requested', taskId: task.id, workerId: id, data: { round: event.round, by: event.by, feedback: clip(event.feedback) } });
      enqueue.sendTo('workers', { type: 'SPAWN', requestId: task.id, specs: [spec] });
    }),
    /** A reviewer session reads the branch's diff; its verdict goes back to the branch. */
    deployReviewer: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REVIEW_REQUESTED' || !context.git) return;
      const task = context.tasks[event.taskId];
      if (!task) return;
      const id = `${task.spec.id.replace(/-r\d+$/, '')}-review${event.round + 1}`;
      const prompt = reviewPrompt({ taskId: task.id, branch: event.branch, base: event.base, diff: event.diff, task: task.brief ?? task.spec.prompt, output: event.output });
      const spec: SessionSpec = {
        ...task.spec,
        id,
        agent: context.git.reviewer,
        prompt,
        expectedOutput: REVIEW_EXPECTED_OUTPUT,
        correlation: { ...task.spec.correlation, workerId: id },
      };
      enqueue.assign({ reviewers: { ...context.reviewers, [id]: task.id }, byWorker: { ...context.byWorker, [id]: task.id } });
      enqueue.emit({ type: 'review.requested', taskId: task.id, workerId: id, data: { round: event.round + 1, reviewer: context.git.reviewer.raw, branch: event.branch, diff: event.diff } });
      enqueue.sendTo('workers', { type: 'SPAWN', requestId: `review:${task.id}`, specs: [spec] });
    }),
    /** The branch is merged, pushed, kept, or given up: the task settles. */
    settleBranch: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'BRANCH_DONE') return;
      const task = context.tasks[event.taskId];
      if (!task) return;
      enqueue.emit({
        type: 'branch.done',
        taskId: task.id,
        data: { outcome: event.outcome, reason: event.reason, branch: event.branch, diff: event.diff, commit: event.commit, pullRequest: event.pullRequest },
      });
      const conversations = appendConversation(context, task.id, { from: 'branch', kind: 'branch', text: `${event.outcome}: ${event.reason}` });
      if (event.outcome === 'abandoned') {
        enqueue.assign({ conversations });
        return;
      }
      if (event.outcome === 'failed' && task.state === 'preparing') {
        enqueue.assign({
          conversations,
          tasks: { ...context.tasks, [task.id]: { ...task, state: 'failed', note: event.reason, result: { taskId: task.spec.id, status: 'failed', output: '', error: event.reason, fallback: true } } },
        });
        return;
      }
      if (task.state !== 'completing') return;
      const ok = event.outcome !== 'failed' && event.outcome !== 'rejected';
      const branch = { outcome: event.outcome, branch: event.branch, commit: event.commit, ...(event.pullRequest ? { pullRequest: event.pullRequest } : {}) };
      const result: SubTaskResult = {
        ...task.result!,
        ...(event.diff ? { diffStats: event.diff } : {}),
        metadata: { ...(task.result?.metadata ?? {}), git: branch },
        ...(ok ? {} : { error: event.reason }),
      };
      enqueue.assign({
        conversations,
        tasks: { ...context.tasks, [task.id]: { ...task, state: ok ? 'succeeded' : 'failed', result, note: event.reason } },
      });
      enqueue.emit({ type: 'task.completed', taskId: task.id, workerId: task.spec.id, data: { state: ok ? 'succeeded' : 'failed', status: result.status, output: clip(result.output), git: branch } });
    }),
    /** A branch asks for a merge, push or PR: a permission request like any other, through the inbox. */
    enqueueWorkflowPermission: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'WORKFLOW_PERMISSION') return;
      const task = context.tasks[event.taskId];
      if (!task) return;
      const request: PermissionRequest = {
        id: event.requestId,
        action: event.action,
        category: PERMISSION_CATEGORY[event.action],
        requesterId: branchId(task.id),
        agentType: '@orchestrator',
        detail: event.detail,
        correlation: task.spec.correlation,
        via: [branchId(task.id)],
        timestamp: 0,
      };
      const message: QueueMessage = {
        id: `perm:${request.id}`,
        timestamp: 0,
        priority: QUEUE_PRIORITY.permission_request,
        ...baseMessage(context, task, task.spec.id),
        subTaskId: request.requesterId,
        depth: 0,
        type: 'permission_request',
        content: request,
      };
      enqueue.sendTo('inbox', { type: 'ENQUEUE', messages: [message] });
      enqueue.assign({ enqueued: context.enqueued + 1 });
    }),
    recordDeployment: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'SPAWN_RESULT') return;
      if (event.requestId.startsWith('review:')) {
        // a reviewer that cannot be deployed cannot approve: the branch is kept for a person
        const taskId = event.requestId.slice('review:'.length);
        if (!event.ok) enqueue.sendTo(branchId(taskId), { type: 'REVIEW_DONE', approved: false, feedback: `the reviewer could not be deployed: ${event.error.message}`, by: 'orchestrator' } satisfies TaskBranchEvent);
        return;
      }
      const ids = event.requestId.split(',');
      const tasks = { ...context.tasks };
      for (const id of ids) {
        const task = tasks[id];
        if (!task) continue;
        tasks[id] = event.ok
          ? { ...task, state: 'running' }
          : {
              ...task,
              state: 'failed',
              note: `${event.error.code}: ${event.error.message}`,
              result: { taskId: task.spec.id, status: 'failed', output: '', error: event.error.message, fallback: true },
            };
      }
      enqueue.assign({ tasks });
    }),
    /** Worker updates go into the inbox (acknowledged at once: the inbox journals them). */
    enqueueUpdates: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'UPDATES_AVAILABLE') return;
      const messages: QueueMessage[] = event.updates.map((update) => {
        const type = messageTypeOf(update);
        const taskId = context.byWorker[update.subTaskId];
        return {
          id: update.id,
          timestamp: update.timestamp,
          priority: QUEUE_PRIORITY[type],
          ...baseMessage(context, taskId ? context.tasks[taskId] : undefined, update.subTaskId),
          subTaskId: update.subTaskId,
          depth: 0,
          type,
          content: update,
        };
      });
      enqueue.sendTo('inbox', { type: 'ENQUEUE', messages });
      enqueue.assign({ enqueued: context.enqueued + 1 });
      enqueue.sendTo('workers', { type: 'ACK_UPDATES', upTo: event.upTo });
    }),
    enqueuePermission: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'CHILD_PERMISSION_REQUEST') return;
      const { request } = event;
      const task = context.tasks[request.correlation.taskId];
      const message: QueueMessage = {
        id: `perm:${request.id}`,
        timestamp: request.timestamp,
        priority: QUEUE_PRIORITY.permission_request,
        ...baseMessage(context, task, request.correlation.workerId),
        subTaskId: request.requesterId,
        depth: request.correlation.depth,
        type: 'permission_request',
        content: request,
      };
      enqueue.sendTo('inbox', { type: 'ENQUEUE', messages: [message] });
      enqueue.assign({ enqueued: context.enqueued + 1 });
    }),
    replay: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REPLAY') return;
      enqueue.sendTo('inbox', { type: 'ENQUEUE', messages: event.messages, replay: true });
      enqueue.assign({ enqueued: context.enqueued + 1 });
    }),
    recordDrained: assign({ drainedAt: ({ context, event }) => (event.type === 'INBOX_DRAINED' ? event.received : context.drainedAt) }),
    /** One inbox message, handled synchronously (questions for the model go to `answeringQuestion`). */
    // The inbox's messages, routed by the transitions of `reading` (and `stopping`): one action per
    // kind of message, and for a permission one per tier of the matrix. Each ends with markHandled.

    /** A permission the matrix decides (auto_approve, auto_deny), or that the run's stop denies. */
    decidePermission: enqueueActions(({ context, event, enqueue }, params: { approved: boolean; reason: 'tier' | 'stopping' }) => {
      if (event.type !== 'INBOX_MESSAGE') return;
      const message = event.message;
      const task = taskOf(context, message);
      const request = message.content as PermissionRequest;
      const tier = permissionTier(context, request);
      const reason = params.reason === 'stopping' ? 'the run is stopping' : `${request.action} is ${tier} in the permission matrix`;
      const decision: PermissionDecision = { requestId: request.id, approved: params.approved, decidedBy: 'orchestrator', decider: 'orchestrator', reason };
      sendDecision(enqueue, request, decision);
      enqueue.emit({
        type: 'permission.decided',
        taskId: message.taskId,
        workerId: message.workerId,
        subTaskId: request.requesterId,
        request,
        data: { requestId: request.id, action: request.action, category: request.category, detail: request.detail, approved: params.approved, decidedBy: 'orchestrator', decider: 'orchestrator', tier, reason, via: request.via },
      });
      if (task) enqueue.assign({ conversations: appendConversation(context, task.id, { from: 'orchestrator', kind: 'permission', text: `${request.action} (${clip(request.detail, 200)}) for ${request.requesterId}: ${params.approved ? 'approved' : 'denied'}: ${reason}` }) });
    }),
    /** A permission under ask_user (or one only a person may give): a person decides, through the humanGate. */
    askPermission: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'INBOX_MESSAGE') return;
      const message = event.message;
      const request = message.content as PermissionRequest;
      // an MCP server's question has no answer to approve by default: nobody answering declines it
      const approveOnTimeout = context.policy.permissions.askUserDefault === 'approve' && !request.elicitation;
      const item: HumanItem = {
        id: request.id,
        kind: 'permission',
        planId: context.planId,
        taskId: message.taskId,
        workerId: message.workerId,
        requesterId: request.requesterId,
        title: `${request.action}: ${clip(request.detail, 200)}`,
        request,
        askedAt: request.timestamp,
        timeoutMs: context.policy.permissions.askUserTimeoutMs,
        onTimeout: { approved: approveOnTimeout, text: approveOnTimeout ? 'approved by default: nobody answered' : request.elicitation ? 'declined by default: nobody answered' : 'denied by default: nobody answered' },
      };
      enqueue.sendTo('humanGate', { type: 'ASK', item });
    }),
    /** A worker's (or a reviewer's) result: the task settles, or its branch takes over. */
    settleCompletion: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'INBOX_MESSAGE') return;
      const message = event.message;
      const task = taskOf(context, message);
      const update = message.content as TaskUpdate;
      if (!task || !update.result) return;
      enqueue.sendTo('humanGate', { type: 'WITHDRAW', workerId: message.workerId });
      if (context.reviewers[message.workerId]) {
        // a reviewer's verdict goes to the branch it reviewed
        const verdict = reviewVerdict(update.result);
        const reviewers = { ...context.reviewers };
        delete reviewers[message.workerId];
        enqueue.assign({
          reviewers,
          conversations: appendConversation(context, task.id, { from: message.workerId, kind: 'review', text: `${verdict.approved ? 'approved' : 'changes requested'}: ${verdict.feedback}` }),
        });
        if (task.state === 'completing') enqueue.sendTo(branchId(task.id), { type: 'REVIEW_DONE', approved: verdict.approved, feedback: verdict.feedback, by: message.workerId } satisfies TaskBranchEvent);
        return;
      }
      if (message.workerId !== task.spec.id || task.state !== 'running') return; // a session the task has moved on from
      const state = settledState(update.result);
      if (context.git) {
        if (state === 'succeeded') {
          // the branch is committed, measured and merged (or pushed, reviewed, kept) before the task settles
          enqueue.assign({ tasks: { ...context.tasks, [task.id]: { ...task, state: 'completing', result: update.result } } });
          enqueue.sendTo(branchId(task.id), { type: 'WORKER_FINISHED', result: update.result } satisfies TaskBranchEvent);
          return;
        }
        enqueue.sendTo(branchId(task.id), { type: 'ABANDON', reason: `the worker ${update.result.status}` } satisfies TaskBranchEvent);
      }
      enqueue.assign({ tasks: { ...context.tasks, [task.id]: { ...task, state, result: update.result } } });
      enqueue.emit({ type: 'task.completed', taskId: task.id, workerId: task.spec.id, data: { state, status: update.result.status, output: clip(update.result.output) } });
    }),
    /** A worker's question to the orchestrator: a person answers, or the policy's answer goes back. */
    routeQuestion: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'INBOX_MESSAGE') return;
      const message = event.message;
      const task = taskOf(context, message);
      const stopping = context.stopReason !== null;
      const update = message.content as TaskUpdate;
      const question = update.message ?? '';
      enqueue.assign({ notes: [...context.notes, update] });
      if (!task || !liveWorker(context, message.workerId)) return;
      enqueue.emit({ type: 'question.asked', taskId: task.id, workerId: message.workerId, data: { id: message.id, question: clip(question) } });
      const conversations = appendConversation(context, task.id, { from: message.workerId, kind: 'question', text: question });
      if (context.policy.questions.answerBy === 'human' && !stopping) {
        enqueue.assign({ conversations });
        const item: HumanItem = {
          id: message.id,
          kind: 'question',
          planId: context.planId,
          agentType: task.spec.agent.raw,
          taskId: task.id,
          workerId: message.workerId,
          requesterId: message.workerId,
          title: clip(question, 300),
          question,
          askedAt: message.timestamp,
          timeoutMs: context.policy.questions.humanTimeoutMs,
          onTimeout: { approved: true, text: context.policy.questions.policyAnswer },
        };
        enqueue.sendTo('humanGate', { type: 'ASK', item });
      } else {
        const text = stopping ? 'The run is stopping; wrap up.' : context.policy.questions.policyAnswer;
        enqueue.assign({ conversations: { ...conversations, [task.id]: [...conversations[task.id]!, { from: 'policy', kind: 'answer', text }] } });
        enqueue.sendTo('workers', { type: 'SEND_TO_CHILD', to: message.workerId, from: 'orchestrator', text });
        enqueue.emit({ type: 'question.answered', taskId: task.id, workerId: message.workerId, data: { id: message.id, by: 'policy', answer: clip(text) } });
      }
    }),
    /** An error or a stuck report: noted; a stuck worker is redirected, then restarted, as the policy says. */
    handleErrorReport: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'INBOX_MESSAGE') return;
      const message = event.message;
      const task = taskOf(context, message);
      const stopping = context.stopReason !== null;
      const update = message.content as TaskUpdate;
      enqueue.assign({ notes: [...context.notes, update] });
      if (!task) return;
      const stuck = update.kind === 'stuck';
      let conversations = appendConversation(context, task.id, { from: task.spec.id, kind: stuck ? 'stuck' : 'error', text: update.message ?? '' });
      if (stuck && isLive(task) && message.workerId === task.spec.id && !stopping && context.policy.stuck.action === 'redirect') {
        const count = context.redirects[task.id] ?? 0;
        if (count < context.policy.stuck.reinitializeAfter) {
          const text = `${context.policy.stuck.message}\n\n(The health monitor reported: ${update.message ?? 'stuck'}.)`;
          const redirect: ManagementEvent = { type: 'MESSAGE', from: 'orchestrator', text };
          enqueue.sendTo('workers', { type: 'FORWARD', to: task.spec.id, event: redirect });
          enqueue.emit({ type: 'worker.redirected', taskId: task.id, workerId: task.spec.id, data: { by: 'health monitor', reason: update.message ?? 'stuck', instructions: clip(text), redirect: count + 1 } });
          conversations = { ...conversations, [task.id]: [...conversations[task.id]!, { from: 'orchestrator', kind: 'redirect', text }] };
          enqueue.assign({ redirects: { ...context.redirects, [task.id]: count + 1 } });
        } else {
          const instructions = `${promptWithDependencies(context, task)}\n\nA previous attempt at this task got stuck (${update.message ?? 'no progress'}) and was restarted: take a different approach.`;
          enqueue.sendTo('workers', { type: 'FORWARD', to: task.spec.id, event: { type: 'REINITIALIZE', instructions, by: 'health monitor' } });
          conversations = { ...conversations, [task.id]: [...conversations[task.id]!, { from: 'orchestrator', kind: 'reinitialize', text: `restarted after ${count} redirects did not help` }] };
          enqueue.assign({ redirects: { ...context.redirects, [task.id]: 0 } });
        }
      }
      enqueue.assign({ conversations });
    }),
    /** A status update, an idle answer, an answer: noted in the task's conversation. */
    noteStatus: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'INBOX_MESSAGE') return;
      const message = event.message;
      const task = taskOf(context, message);
      const update = message.content as TaskUpdate;
      enqueue.assign({ notes: [...context.notes, update] });
      if (task) {
        const kind: ConversationEntry['kind'] = message.type === 'idle_response' ? 'idle' : 'status';
        enqueue.assign({ conversations: appendConversation(context, task.id, { from: task.spec.id, kind, text: update.message ?? '' }) });
      }
    }),
    /** The inbox may offer the next message. */
    markHandled: sendTo('inbox', ({ event }) => ({ type: 'HANDLED' as const, id: event.type === 'INBOX_MESSAGE' ? event.message.id : '' })),
    startAnswering: assign({ answering: ({ event }) => (event.type === 'INBOX_MESSAGE' ? event.message : null) }),
    /** The model's answer (or, when the model failed, the policy's) goes to the worker. */
    deliverAnswer: enqueueActions(({ context, enqueue }, params: { answer: string | null; error?: string }) => {
      const message = context.answering;
      if (!message) return;
      const update = message.content as TaskUpdate;
      const task = taskOf(context, message)!;
      const text = params.answer ?? context.policy.questions.policyAnswer;
      const by = params.answer === null ? 'policy' : 'orchestrator';
      let conversations = appendConversation(context, task.id, { from: message.workerId, kind: 'question', text: update.message ?? '' });
      conversations = { ...conversations, [task.id]: [...conversations[task.id]!, { from: by, kind: 'answer', text }] };
      enqueue.assign({ notes: [...context.notes, update], conversations, answering: null });
      if (liveWorker(context, message.workerId)) enqueue.sendTo('workers', { type: 'SEND_TO_CHILD', to: message.workerId, from: 'orchestrator', text });
      enqueue.emit({
        type: 'question.answered',
        taskId: task.id,
        workerId: message.workerId,
        data: { id: message.id, by, answer: clip(text), ...(params.error ? { modelError: params.error } : {}) },
      });
      enqueue.sendTo('inbox', { type: 'HANDLED', id: message.id });
    }),
    /** A person (or the timeout) decided a pending item. */
    applyHumanDecision: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'HUMAN_DECIDED') return;
      const { item, decision } = event;
      const task = context.tasks[item.taskId];
      const pendingSwitch = context.switches[item.id];
      if (pendingSwitch) {
        const switches = { ...context.switches };
        delete switches[item.id];
        enqueue.assign({ switches });
        const running = task?.state === 'running';
        if (decision.approved && running) {
          if (pendingSwitch.agent) {
            enqueue.sendTo('workers', { type: 'FORWARD', to: task.spec.id, event: { type: 'REASSIGN', agent: pendingSwitch.agent, by: pendingSwitch.by } });
            enqueue.assign({ tasks: { ...context.tasks, [task.id]: { ...task, spec: { ...task.spec, agent: pendingSwitch.agent } } } });
          } else {
            enqueue.sendTo('workers', { type: 'FORWARD', to: task.spec.id, event: { type: 'SWITCH_MODEL', profile: pendingSwitch.profile, by: pendingSwitch.by } });
          }
        }
        enqueue.emit({
          type: 'permission.decided',
          taskId: item.taskId,
          workerId: item.workerId,
          ...(item.request ? { request: item.request } : {}),
          data: { requestId: item.id, action: item.request?.action, detail: item.request?.detail, approved: decision.approved, decidedBy: decision.decidedBy, decider: decision.by, tier: 'ask_user', ...(decision.reason ? { reason: decision.reason } : {}) },
        });
        if (task) {
          enqueue.assign({
            conversations: appendConversation(context, task.id, {
              from: decision.decidedBy === 'timeout' ? 'timeout' : `human:${decision.by}`,
              kind: pendingSwitch.agent ? 'reassign' : 'model',
              text: `${pendingSwitch.agent ? `reassign to ${pendingSwitch.agent.raw}` : `switch to ${pendingSwitch.profile}`}: ${decision.approved ? (running ? 'approved' : 'approved, but the worker has ended') : 'denied'}`,
            }),
          });
        }
        return;
      }
      if (item.kind === 'permission' && item.request) {
        const request = item.request;
        const permission: PermissionDecision = {
          requestId: request.id,
          approved: decision.approved,
          decidedBy: decision.decidedBy,
          decider: decision.by,
          ...(decision.reason ? { reason: decision.reason } : {}),
          // an MCP server's question: what the person wrote is the answer's content
          ...(request.elicitation && decision.decidedBy === 'human' && decision.text ? { text: decision.text } : {}),
        };
        if (waitsForDecision(context, request)) sendDecision(enqueue, request, permission);
        enqueue.emit({
          type: 'permission.decided',
          taskId: item.taskId,
          workerId: item.workerId,
          subTaskId: request.requesterId,
          request,
          data: { requestId: request.id, action: request.action, category: request.category, detail: request.detail, approved: decision.approved, decidedBy: decision.decidedBy, decider: decision.by, tier: 'ask_user', ...(decision.reason ? { reason: decision.reason } : {}), via: request.via },
        });
        if (task) {
          enqueue.assign({
            conversations: appendConversation(context, task.id, {
              from: decision.decidedBy === 'timeout' ? 'timeout' : `human:${decision.by}`,
              kind: 'permission',
              text: `${request.action} (${clip(request.detail, 200)}) for ${request.requesterId}: ${decision.approved ? 'approved' : 'denied'}${decision.reason ? `: ${decision.reason}` : ''}`,
            }),
          });
        }
      } else if (task) {
        const text = decision.text || context.policy.questions.policyAnswer;
        if (liveWorker(context, item.workerId)) enqueue.sendTo('workers', { type: 'SEND_TO_CHILD', to: item.workerId, from: decision.decidedBy === 'human' ? `human:${decision.by}` : 'orchestrator', text });
        enqueue.assign({ conversations: appendConversation(context, task.id, { from: decision.decidedBy === 'human' ? `human:${decision.by}` : 'timeout', kind: 'answer', text }) });
        enqueue.emit({ type: 'question.answered', taskId: task.id, workerId: item.workerId, data: { id: item.id, by: decision.decidedBy === 'human' ? `human:${decision.by}` : 'timeout', answer: clip(text) } });
      }
    }),
    forwardHumanAnswer: sendTo('humanGate', ({ event }) => {
      const e = event as Extract<OrchestratorEvent, { type: 'HUMAN_ANSWER' }>;
      return { type: 'ANSWER' as const, id: e.id, answer: e.answer };
    }),
    /** Reassign, redirect, reinitialize or resume a running worker. */
    manageWorker: enqueueActions(({ context, event, enqueue }) => {
      if (!('taskId' in event) || typeof event.taskId !== 'string') return;
      const task = context.tasks[event.taskId]!;
      const to = task.spec.id;
      const note = (entry: ConversationEntry) => enqueue.assign({ conversations: appendConversation(context, task.id, entry) });
      switch (event.type) {
        case 'REASSIGN_WORKER': {
          // a permission action, as a model switch is: the matrix decides, or a person
          const tier = context.policy.permissions.matrix.agent_reassignment;
          if (tier === 'auto_deny') {
            enqueue.emit({ type: 'warning', taskId: task.id, workerId: to, data: { message: `reassigning ${to} to ${event.agent.raw} refused: agent_reassignment is auto_deny in the permission matrix` } });
          } else if (tier === 'auto_approve') {
            enqueue.sendTo('workers', { type: 'FORWARD', to, event: { type: 'REASSIGN', agent: event.agent, by: event.by } });
            enqueue.assign({ tasks: { ...context.tasks, [task.id]: { ...task, spec: { ...task.spec, agent: event.agent } } } });
            note({ from: event.by, kind: 'reassign', text: `${task.spec.agent.raw} → ${event.agent.raw}` });
          } else {
            const id = `reassign:${task.id}:${event.agent.raw}:${task.rounds}.${Object.keys(context.switches).length}`;
            askPerson(enqueue, context, task, id, 'agent_reassignment', event.by, `reassign ${to} (task ${task.id}) from ${task.spec.agent.raw} to ${event.agent.raw}`);
            enqueue.assign({ switches: { ...context.switches, [id]: { taskId: task.id, agent: event.agent, by: event.by } } });
          }
          break;
        }
        case 'REDIRECT_WORKER':
          enqueue.sendTo('workers', { type: 'FORWARD', to, event: { type: 'MESSAGE', from: event.by, text: event.instructions } });
          enqueue.emit({ type: 'worker.redirected', taskId: task.id, workerId: to, data: { by: event.by, instructions: clip(event.instructions) } });
          note({ from: event.by, kind: 'redirect', text: event.instructions });
          break;
        case 'REINITIALIZE_WORKER':
          enqueue.sendTo('workers', { type: 'FORWARD', to, event: { type: 'REINITIALIZE', instructions: event.instructions, by: event.by } });
          enqueue.assign({ redirects: { ...context.redirects, [task.id]: 0 } });
          note({ from: event.by, kind: 'reinitialize', text: event.instructions });
          break;
        case 'RESUME_WORKER':
          enqueue.sendTo('workers', { type: 'FORWARD', to, event: { type: 'RESUME', by: event.by } });
          enqueue.emit({ type: 'worker.resumed', taskId: task.id, workerId: to, data: { by: event.by } });
          note({ from: event.by, kind: 'resume', text: 'resumed' });
          break;
        case 'SWITCH_MODEL_WORKER': {
          // a permission action: the matrix decides, or a person
          const action = event.expensive ? 'model_switch_expensive' : 'model_switch_same_tier';
          const tier = context.policy.permissions.matrix[action];
          if (tier === 'auto_deny') {
            enqueue.emit({ type: 'warning', taskId: task.id, workerId: to, data: { message: `switching ${to} to ${event.profile} refused: ${action} is auto_deny in the permission matrix` } });
          } else if (tier === 'auto_approve') {
            enqueue.sendTo('workers', { type: 'FORWARD', to, event: { type: 'SWITCH_MODEL', profile: event.profile, by: event.by } });
            note({ from: event.by, kind: 'model', text: `switched to ${event.profile} (${action}: auto_approve)` });
          } else {
            const id = `switch:${task.id}:${event.profile}:${task.rounds}.${Object.keys(context.switches).length}`;
            askPerson(enqueue, context, task, id, action, event.by, `switch ${to} (task ${task.id}) to model profile ${event.profile}`);
            enqueue.assign({ switches: { ...context.switches, [id]: { taskId: task.id, profile: event.profile, by: event.by } } });
          }
          break;
        }
      }
    }),
    refuseManagement: enqueueActions(({ context, event, enqueue }) => {
      if (!('taskId' in event)) return;
      const task = context.tasks[event.taskId as string];
      enqueue.emit({
        type: 'warning',
        taskId: event.taskId as string,
        data: { message: `${event.type} ignored: task "${event.taskId as string}" ${task ? `is ${task.state}, not running` : 'does not exist'}` },
      });
    }),
    /** A workflow run starts its workflow, which asks for the first step's workers. */
    startWorkflow: enqueueActions(({ context, enqueue }, params: { input: SdlcInput | null }) => {
      if (!context.workflow || !params.input) return;
      enqueue.spawnChild('sdlcWorkflow', { id: 'workflow', input: params.input });
      enqueue.sendTo('workflow', { type: 'START' } satisfies SdlcCommand);
    }),
    /** A step's workers: tasks like a plan's, built from the role's agent and the run's template. */
    addWorkflowTasks: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'WORKFLOW_TASKS' || !context.workflow) return;
      const { roles, template } = context.workflow;
      const tasks = { ...context.tasks };
      const byWorker = { ...context.byWorker };
      const order = [...context.order];
      for (const t of event.tasks) {
        if (tasks[t.taskId]) continue; // asked again after a restore: already there
        const role = roles[t.role];
        const id = `w-${t.taskId}`;
        const spec: SessionSpec = {
          ...template,
          id,
          agent: role?.agent ?? template.agent,
          prompt: t.prompt,
          workflowRole: t.role,
          ...(role?.model ? { model: role.model } : {}),
          correlation: { ...template.correlation, taskId: t.taskId, workerId: id },
        };
        tasks[t.taskId] = { id: t.taskId, dependsOn: [], spec, state: 'waiting', result: null, note: null, brief: null, rounds: 0 };
        byWorker[id] = t.taskId;
        order.push(t.taskId);
      }
      enqueue.assign({ tasks, byWorker, order });
    }),
    /** Each settled task of the workflow, once, to the workflow. */
    tellWorkflow: enqueueActions(({ context, enqueue }) => {
      if (!context.workflow) return;
      const told = { ...context.workflow.told };
      for (const id of context.order) {
        if (!isNews(context, id)) continue;
        const task = context.tasks[id]!;
        told[id] = true;
        const outcome: TaskOutcome = {
          taskId: id,
          role: task.spec.workflowRole ?? task.spec.agent.agentName,
          workerId: task.spec.id,
          state: task.state as TaskOutcome['state'],
          result: task.result,
        };
        enqueue.sendTo('workflow', { type: 'TASK_SETTLED', outcome });
      }
      enqueue.assign({ workflow: { ...context.workflow, told } });
    }),
    recordWorkflowEnd: assign(({ context, event }) => {
      if (event.type !== 'WORKFLOW_ENDED' || !context.workflow) return {};
      return { workflow: { ...context.workflow, ended: { status: event.status, state: event.state, reason: event.reason, completion: event.completion } } };
    }),
    forwardWorkflowEvent: enqueueActions(({ event, enqueue }) => {
      if (event.type !== 'WORKFLOW_EVENT') return;
      enqueue.emit({ type: event.event.type, data: event.event.data });
    }),
    /** pause, resume, retry from a person: the workflow takes them or refuses them (INVALID_STATE_TRANSITION). */
    commandWorkflow: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'WORKFLOW_COMMAND') return;
      if (!context.workflow || context.workflow.ended) {
        enqueue.emit({ type: 'workflow.refused', data: { code: 'INVALID_STATE_TRANSITION', event: event.command.type, reason: context.workflow ? `the workflow has ended (${context.workflow.ended!.status})` : 'this run has no workflow' } });
        return;
      }
      enqueue.sendTo('workflow', event.command);
    }),
    /** The run is stopped: its workflow stops too (WORKFLOW_STOPPED). */
    stopWorkflow: enqueueActions(({ context, event, enqueue }) => {
      if (!context.workflow || context.workflow.ended) return;
      enqueue.sendTo('workflow', { type: 'STOP', by: 'run', reason: event.type === 'STOP' ? event.reason : 'run stopped' } satisfies SdlcCommand);
    }),
    cancelWorkers: sendTo('workers', ({ event }) => ({
      type: 'CANCEL_ALL' as const,
      reason: event.type === 'STOP' ? event.reason : 'run stopped',
    })),
    recordStop: enqueueActions(({ context, event, enqueue }) => {
      const tasks = { ...context.tasks };
      for (const id of context.order) {
        const task = tasks[id]!;
        if (task.state === 'waiting') tasks[id] = { ...task, state: 'cancelled', note: 'run stopped before it was deployed' };
        if (task.state === 'preparing' || task.state === 'completing') {
          // the branch workflow stops where it is; the worktree and branch are kept
          enqueue.stopChild(branchId(id));
          tasks[id] = {
            ...task,
            state: 'cancelled',
            note: task.state === 'preparing' ? 'run stopped while its worktree was being created' : `run stopped before its branch was merged; kept as a2a/${context.runId}/${id}`,
          };
        }
      }
      const reason = event.type === 'STOP' ? event.reason : 'stopped';
      enqueue.assign({ tasks, stopReason: reason });
      enqueue.emit({ type: 'run.stopped', data: { reason } });
    }),
    failAll: assign(({ context }, params: { error: unknown }) => {
      const tasks = { ...context.tasks };
      const note = `orchestrator error: ${errorText(params.error)}`;
      for (const id of context.order) {
        const task = tasks[id]!;
        if (!SETTLED.includes(task.state)) tasks[id] = { ...task, state: 'failed', note };
      }
      return { tasks };
    }),
  },
});

export function summarize(context: OrchestratorContext): RunSummary {
  const tasks = context.order.map((id) => {
    const t = context.tasks[id]!;
    return { id, agentType: t.spec.agent.raw, state: t.state, result: t.result, note: t.note };
  });
  const usage = tasks.reduce<Usage>(
    (u, t) => ({
      inputTokens: u.inputTokens + (t.result?.usage?.inputTokens ?? 0),
      outputTokens: u.outputTokens + (t.result?.usage?.outputTokens ?? 0),
      modelCalls: u.modelCalls + (t.result?.usage?.modelCalls ?? 0),
    }),
    { inputTokens: 0, outputTokens: 0, modelCalls: 0 },
  );
  const status: RunSummary['status'] =
    context.workflow
      ? context.workflow.ended?.status === 'completed'
        ? 'completed'
        : context.stopReason !== null || context.workflow.ended?.status === 'stopped'
          ? 'cancelled'
          : 'failed'
      : context.stopReason !== null
        ? 'cancelled'
        : tasks.every((t) => t.state === 'succeeded')
          ? 'completed'
          : 'failed';
  return {
    runId: context.runId,
    planId: context.planId,
    status,
    tasks,
    usage,
    notes: context.notes,
    conversations: context.conversations,
    stopReason: context.stopReason,
    ...(context.workflow ? { workflow: context.workflow.ended } : {}),
  };
}

/** A settled task of the workflow it has not been told about. */
function isNews(context: OrchestratorContext, id: string): boolean {
  const task = context.tasks[id]!;
  return task.spec.workflowRole !== undefined && SETTLED.includes(task.state) && !context.workflow!.told[id];
}
