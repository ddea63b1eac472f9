/**
 * The orchestrator: runs one plan (a DAG of tasks). It deploys a worker for every task whose
 * dependencies succeeded and skips tasks whose dependencies failed. Everything its workers send
 * up (results, questions, notes, stuck reports, permission requests from anywhere in their
 * trees) goes through its priority `inbox`, which hands it one message at a time:
 *
 *   permission_request → the matrix: auto_approve / auto_deny here, ask_user → `humanGate`
 *   completion         → the task settles; dependents are deployed
 *   question           → answered by policy, by its own model (`answeringQuestion`), or a human
 *   error (stuck)      → the health monitor's report: the worker is redirected by policy
 *   status, idle       → kept as notes and in the worker's conversation history
 *
 * It also takes management events (reassign, redirect, reinitialize, resume a worker) from the
 * CLI or a host. `STOP` cancels every worker; each still reports `cancelled`, and the run ends
 * `cancelled` once all have reported and the inbox is drained.
 */
import { and } from 'xstate';
import type { TaskUpdate } from './protocol/index.js';
import { errorText } from './errorText.js';
import { orchestratorSetup, summarize, taskOf } from './orchestrator.setup.js';

// its types and helpers, for those who import them from the chart's module
export * from './orchestrator.setup.js';

/** The chart: states and transitions; every guard, action and actor it names is in orchestrator.setup.ts. */
export const orchestratorMachine = orchestratorSetup.createMachine({
  id: 'orchestrator',
  context: ({ input }) => ({
    runId: input.runId,
    planId: input.planId,
    order: input.tasks.map((t) => t.id),
    tasks: Object.fromEntries(
      input.tasks.map((t) => [t.id, { id: t.id, dependsOn: t.dependsOn, spec: t.spec, state: 'waiting' as const, result: null, note: null, brief: null, rounds: 0 }]),
    ),
    byWorker: Object.fromEntries(input.tasks.map((t) => [t.spec.id, t.id])),
    maxParallelWorkers: input.maxParallelWorkers,
    policy: input.policy,
    notes: [],
    conversations: {},
    redirects: {},
    enqueued: 0,
    drainedAt: 0,
    answering: null,
    git: input.git ?? null,
    reviewers: {},
    switches: {},
    stopReason: null,
    workflow: input.workflow ? { input: input.workflow.input, roles: input.workflow.roles, template: input.workflow.template, told: {}, ended: null } : null,
  }),
  invoke: [
    {
      id: 'workers',
      src: 'workers',
      input: ({ context }) => ({ owner: null, ownerId: 'orchestrator', maxParallel: context.maxParallelWorkers }),
      onError: { target: '.failed', actions: { type: 'failAll', params: ({ event }) => ({ error: event.error }) } },
    },
    { id: 'inbox', src: 'inbox', onError: { target: '.failed', actions: { type: 'failAll', params: ({ event }) => ({ error: event.error }) } } },
    { id: 'humanGate', src: 'humanGate', onError: { target: '.failed', actions: { type: 'failAll', params: ({ event }) => ({ error: event.error }) } } },
  ],
  on: {
    UPDATES_AVAILABLE: { actions: 'enqueueUpdates' },
    CHILD_PERMISSION_REQUEST: { actions: 'enqueuePermission' },
    WORKFLOW_PERMISSION: { actions: 'enqueueWorkflowPermission' },
    WORKTREE_READY: { actions: 'deployIntoWorktree' },
    CHANGES_REQUESTED: { actions: 'redeployWithFeedback' },
    REVIEW_REQUESTED: { actions: 'deployReviewer' },
    BRANCH_DONE: { actions: 'settleBranch' },
    REPLAY: { actions: 'replay' },
    INBOX_DRAINED: { actions: 'recordDrained' },
    HUMAN_ANSWER: { actions: 'forwardHumanAnswer' },
    HUMAN_DECIDED: { actions: 'applyHumanDecision' },
    WORKFLOW_EVENT: { actions: 'forwardWorkflowEvent' },
    WORKFLOW_ENDED: { actions: 'recordWorkflowEnd' },
    WORKFLOW_COMMAND: { actions: 'commandWorkflow' },
  },
  always: { guard: 'workflowNeedsNews', actions: 'tellWorkflow' },
  initial: 'running',
  states: {
    running: {
      entry: { type: 'startWorkflow', params: ({ context }) => ({ input: context.workflow?.input ?? null }) },
      always: [
        // a task whose dependencies succeeded is deployed; one whose dependency did not is skipped
        { guard: 'tasksToDeploy', actions: 'deployReadyTasks' },
        { guard: and(['allSettled', 'inboxDrained', 'workflowEnded']), target: 'finished' },
      ],
      on: {
        SPAWN_RESULT: { actions: 'recordDeployment' },
        BRANCH_DONE: { actions: 'settleBranch' },
        WORKFLOW_TASKS: { actions: 'addWorkflowTasks' },
        STOP: { target: 'stopping', actions: ['recordStop', 'stopWorkflow'] },
        REASSIGN_WORKER: [{ guard: 'workerRunning', actions: 'manageWorker' }, { actions: 'refuseManagement' }],
        REDIRECT_WORKER: [{ guard: 'workerRunning', actions: 'manageWorker' }, { actions: 'refuseManagement' }],
        REINITIALIZE_WORKER: [{ guard: 'workerRunning', actions: 'manageWorker' }, { actions: 'refuseManagement' }],
        RESUME_WORKER: [{ guard: 'workerRunning', actions: 'manageWorker' }, { actions: 'refuseManagement' }],
        SWITCH_MODEL_WORKER: [{ guard: 'workerRunning', actions: 'manageWorker' }, { actions: 'refuseManagement' }],
      },
      initial: 'reading',
      states: {
        /** Reading the inbox: one message at a time, most urgent first. */
        reading: {
          on: {
            INBOX_MESSAGE: [
              { guard: 'answeredByModel', target: 'answeringQuestion', actions: 'startAnswering' },
              // a permission: nobody waits for it any more, or the matrix decides, or a person does
              { guard: 'permissionUnawaited', actions: 'markHandled' },
              {
                guard: 'permissionAutoApproved',
                actions: [{ type: 'decidePermission', params: { approved: true, reason: 'tier' } }, 'markHandled'],
              },
              {
                guard: 'permissionAutoDenied',
                actions: [{ type: 'decidePermission', params: { approved: false, reason: 'tier' } }, 'markHandled'],
              },
              { guard: 'isPermission', actions: ['askPermission', 'markHandled'] },
              { guard: 'isCompletion', actions: ['settleCompletion', 'markHandled'] },
              { guard: 'isQuestion', actions: ['routeQuestion', 'markHandled'] },
              { guard: 'isErrorReport', actions: ['handleErrorReport', 'markHandled'] },
              // status updates, idle answers, answers
              { actions: ['noteStatus', 'markHandled'] },
            ],
          },
        },
        /** A worker's question, put to the orchestrator's own model; the inbox waits. */
        answeringQuestion: {
          invoke: {
            id: 'answerQuestion',
            src: 'answerQuestion',
            input: ({ context }) => {
              const message = context.answering!;
              const task = taskOf(context, message)!;
              return {
                taskId: task.id,
                workerId: task.spec.id,
                agentType: task.spec.agent.raw,
                task: task.spec.prompt,
                question: (message.content as TaskUpdate).message ?? '',
                history: context.conversations[task.id] ?? [],
              };
            },
            onDone: { target: 'reading', actions: { type: 'deliverAnswer', params: ({ event }) => ({ answer: event.output }) } },
            onError: {
              target: 'reading',
              actions: { type: 'deliverAnswer', params: ({ event }) => ({ answer: null, error: errorText(event.error) }) },
            },
          },
          on: {
            INBOX_MESSAGE: { guard: 'alreadyHandling' },
          },
        },
      },
    },
    stopping: {
      entry: 'cancelWorkers',
      always: { guard: and(['allSettled', 'inboxDrained', 'workflowEnded']), target: 'cancelled' },
      on: {
        SPAWN_RESULT: { actions: 'recordDeployment' },
        // the run is stopping: permissions are denied, questions told to wrap up, results still settle
        INBOX_MESSAGE: [
          { guard: 'permissionUnawaited', actions: 'markHandled' },
          { guard: 'isPermission', actions: [{ type: 'decidePermission', params: { approved: false, reason: 'stopping' } }, 'markHandled'] },
          { guard: 'isCompletion', actions: ['settleCompletion', 'markHandled'] },
          { guard: 'isQuestion', actions: ['routeQuestion', 'markHandled'] },
          { guard: 'isErrorReport', actions: ['handleErrorReport', 'markHandled'] },
          { actions: ['noteStatus', 'markHandled'] },
        ],
      },
    },
    finished: {
      always: [{ guard: 'allSucceeded', target: 'completed' }, { target: 'failed' }],
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    cancelled: { type: 'final' },
  },
  output: ({ context }) => summarize(context),
});
