/**
 * The SDLC workflow chart's implementations (machines/sdlcWorkflow.machine.ts draws the chart): its
 * context and events, and the guards and actions its states name, under those names.
 */
import { assign, enqueueActions, fromPromise, setup } from 'xstate';
import type { CompletionSummary, WorkDistribution, WorkflowDecision, WorkflowState } from './protocol/index.js';
import {
  NEXT,
  refusalReason,
  resolveDecision,
  stepTasks,
  type OrganiserArtifact,
  type SdlcSettings,
  type StepTask,
  type TaskOutcome,
  type WorkingState,
} from './sdlcSteps.js';
import { errorText } from './errorText.js';

export interface SdlcInput {
  runId: string;
  goal: string;
  settings: SdlcSettings;
  /** When the workflow started (the run's clock). */
  startedAt: number;
}

/** What the recording phase is given: the step's outcomes. */
export interface RecordInput {
  runId: string;
  state: WorkingState;
  round: number;
  outcomes: TaskOutcome[];
  archiveAfterMs?: number;
}

/** What the recording phase reports: the artifacts now, and what the step found. */
export interface RecordOutput {
  artifacts: OrganiserArtifact[];
  created: number;
  /** Reviews: approved or not; tests: passed or not; other steps: null. */
  verdict: 'approved' | 'needs_revision' | 'passed' | 'failed' | null;
  files: string[];
  linesOfCode: number;
  issuesFound: number;
  at: number;
}

/** The organiser's view of the run (seed 003 `OrganiserContext`, minimal). */
export interface OrganiserView {
  userTask: string;
  workflowState: WorkingState;
  round: number;
  artifacts: OrganiserArtifact[];
  /** Ids of the artifacts this step produced. */
  stepArtifacts: string[];
  agentStatuses: Array<{ role: string; taskId: string; status: string }>;
  todoList: Array<{ id: string; description: string; status: string }>;
  workflowHistory: WorkflowState[];
  rounds: { planRevisions: number; maxPlanRevisions: number; fixRounds: number; maxFixRounds: number };
  allowed: WorkflowState[];
  /** Why the organiser's previous attempt was refused, if it was. */
  refused: string | null;
  /** STRUCTURE_CREATION: the organiser also distributes the files between the coders. */
  distribute: { files: string[]; secondaryCoders: number } | null;
}

export interface DecideOutput {
  decision: WorkflowDecision;
  distribution?: WorkDistribution;
  /** Size of the organiser's prompt, in estimated tokens. */
  contextTokens: number;
  /** When it decided (the run's clock). */
  at: number;
}

export type SdlcCommand =
  | { type: 'START' }
  | { type: 'PAUSE'; by: string }
  | { type: 'RESUME'; by: string }
  | { type: 'RETRY'; by: string }
  | { type: 'STOP'; by: string; reason?: string };

export type SdlcEvent =
  | SdlcCommand
  | { type: 'TASK_SETTLED'; outcome: TaskOutcome }
  | { type: 'xstate.done.actor.recordStep'; output: RecordOutput }
  | { type: 'xstate.error.actor.recordStep'; error: unknown }
  | { type: 'xstate.done.actor.decide'; output: DecideOutput }
  | { type: 'xstate.error.actor.decide'; error: unknown };

/** What the workflow tells the orchestrator (its run events too: the orchestrator stamps and logs them). */
export type SdlcToParent =
  | { type: 'WORKFLOW_TASKS'; state: WorkingState; tasks: StepTask[] }
  | { type: 'WORKFLOW_EVENT'; event: SdlcEmitted }
  | { type: 'WORKFLOW_ENDED'; status: 'completed' | 'failed' | 'stopped'; state: WorkflowState; reason: string | null; completion: CompletionSummary | null };

export type SdlcEmitted = { type: 'workflow.state' | 'workflow.decision' | 'workflow.refused' | 'workflow.completed' | 'warning'; data: Record<string, unknown> };

interface Tally {
  steps: number;
  artifactsCreated: number;
  files: string[];
  linesOfCode: number;
  issuesFound: number;
  issuesFixed: number;
  /** Issues of the review (or failed tests) the current revision or fix answers. */
  open: number;
}

export interface SdlcContext {
  runId: string;
  goal: string;
  settings: SdlcSettings;
  startedAt: number;
  /** The step under way: its state, its round, and its tasks (null until settled). */
  step: { state: WorkingState | null; round: number; tasks: Record<string, TaskOutcome | null>; artifacts: string[]; files: string[]; verdict: RecordOutput['verdict'] };
  /** Times each working state was entered. */
  entries: Partial<Record<WorkingState, number>>;
  /** Organiser answers in a row that were `wait` or refused. */
  strikes: number;
  /** Task ids issued so far. */
  seq: number;
  artifacts: OrganiserArtifact[];
  history: WorkflowState[];
  distribution: WorkDistribution | null;
  refused: string | null;
  error: { state: WorkingState; reason: string; cause: 'task' | 'record' | 'exhausted' | 'strikes' } | null;
  tally: Tally;
  /** Events refused as not allowed in the state they came in (INVALID_STATE_TRANSITION). */
  refusals: number;
  completion: CompletionSummary | null;
  /** The latest time a phase reported (the run's clock): the completion's end. */
  lastAt: number;
}

/** A run event, sent to the orchestrator, which stamps it and puts it on the run's bus. */
const announce = (event: SdlcEmitted): SdlcToParent => ({ type: 'WORKFLOW_EVENT', event });

const MAX_HISTORY = 20;
const MAX_ARTIFACTS = 100;
const MAX_TODOS = 50;
const push = (history: WorkflowState[], s: WorkflowState) => [...history, s].slice(-MAX_HISTORY);

/** The round a step is in (1 the first time it is entered). */
export const roundOf = (c: SdlcContext, s: WorkingState) => c.entries[s] ?? 0;

function stepSettled(c: SdlcContext): boolean {
  const all = Object.values(c.step.tasks);
  return all.length > 0 && all.every((t) => t !== null);
}

function completionOf(c: SdlcContext, at: number): CompletionSummary {
  return {
    totalTimeMs: Math.max(0, Math.round(at - c.startedAt)),
    stepsCompleted: c.tally.steps,
    artifactsCreated: c.tally.artifactsCreated,
    filesModified: [...c.tally.files].sort(),
    linesOfCode: c.tally.linesOfCode,
    issuesFound: c.tally.issuesFound,
    issuesFixed: c.tally.issuesFixed,
  };
}

/** The organiser's input: summaries only, bounded lists. */
export function organiserView(c: SdlcContext): OrganiserView {
  const state = c.step.state!;
  const todo = Object.entries(c.step.tasks).map(([taskId, t]) => ({ id: taskId, description: `${t?.role ?? 'worker'}: ${state.toLowerCase()}`, status: t === null ? 'in_progress' : t.state === 'succeeded' ? 'completed' : 'blocked' }));
  return {
    userTask: c.goal,
    workflowState: state,
    round: roundOf(c, state),
    artifacts: c.artifacts.slice(-MAX_ARTIFACTS),
    stepArtifacts: c.step.artifacts,
    agentStatuses: Object.entries(c.step.tasks).map(([taskId, t]) => ({ role: t?.role ?? '?', taskId, status: t === null ? 'working' : t.state === 'succeeded' ? 'idle' : 'error' })),
    todoList: todo.slice(-MAX_TODOS),
    workflowHistory: c.history.slice(-MAX_HISTORY),
    rounds: { planRevisions: roundOf(c, 'PLAN_REVISION'), maxPlanRevisions: c.settings.maxPlanRevisions, fixRounds: roundOf(c, 'CODE_FIXING'), maxFixRounds: c.settings.maxFixRounds },
    allowed: [NEXT[state].approve, ...(NEXT[state].revise ? [NEXT[state].revise] : []), ...(NEXT[state].also ?? [])],
    refused: c.refused,
    distribute: state === 'STRUCTURE_CREATION' ? { files: c.step.files, secondaryCoders: c.settings.secondaryCoders } : null,
  };
}

type Decided = { type: 'xstate.done.actor.decide'; output: DecideOutput };
const decidedTarget = (c: SdlcContext, e: SdlcEvent) => (e.type === 'xstate.done.actor.decide' ? resolveDecision(c.step.state!, (e as Decided).output.decision, c.step.verdict) : null);

/** Revision rounds left for a step that leads to PLAN_REVISION or CODE_FIXING. */
function roundsLeft(c: SdlcContext, target: WorkflowState): boolean {
  if (target === 'PLAN_REVISION') return roundOf(c, 'PLAN_REVISION') < c.settings.maxPlanRevisions;
  if (target === 'CODE_FIXING') return roundOf(c, 'CODE_FIXING') < c.settings.maxFixRounds;
  return true;
}

// The step configs are generated (nine alike): XState checks guard and action names against
// setup() only for literal configs, so these are typed loosely and the model-based suite checks
// every transition they produce.
export type LooseTransition = Record<string, unknown>;

export const sdlcWorkflowSetup = setup({
  types: {
    input: {} as SdlcInput,
    context: {} as SdlcContext,
    events: {} as SdlcEvent,
  },
  actors: {
    recordStep: fromPromise<RecordOutput, RecordInput>(async () => {
      throw new Error('the artifact store is not provided: build the machines with createRuntime()');
    }),
    decide: fromPromise<DecideOutput, OrganiserView & { runId: string }>(async () => {
      throw new Error('no organiser model is provided: build the machines with createRuntime()');
    }),
  },
  delays: {
    organiserWait: ({ context }) => context.settings.waitMs,
  },
  guards: {
    stepSettled: ({ context }) => stepSettled(context),
    stepFailed: ({ context }) => Object.values(context.step.tasks).some((t) => t !== null && t.state !== 'succeeded'),
    decisionLeadsTo: ({ context, event }, params: { to: WorkflowState }) => decidedTarget(context, event) === params.to,
    roundsLeft: ({ context }, params: { to: WorkflowState }) => roundsLeft(context, params.to),
    decidedToWait: ({ context, event }) => decidedTarget(context, event) === 'wait',
    strikesLeft: ({ context }) => context.strikes < context.settings.maxWaits,
    failedIn: ({ context }, params: { state: WorkingState }) => context.error?.state === params.state,
    workerFailed: ({ context }) => context.error?.cause === 'task',
  },
  actions: {
    start: enqueueActions(({ enqueue }) => {
      enqueue.assign({ history: ['IDLE'] });
    }),
    /** A step begins: its round counts, its workers are asked for, the state is announced. */
    beginStep: enqueueActions(({ context, enqueue }, params: { state: WorkingState; retry?: boolean }) => {
      const state = params.state;
      // a retry runs the same round again: a person's decision, not one of the bounded rounds
      const entries = params.retry ? context.entries : { ...context.entries, [state]: roundOf(context, state) + 1 };
      const tasks = stepTasks(state, { goal: context.goal, round: entries[state]!, seq: context.seq, artifacts: context.artifacts, settings: context.settings, distribution: context.distribution });
      enqueue.assign({
        entries,
        seq: context.seq + tasks.length,
        step: { state, round: entries[state]!, tasks: Object.fromEntries(tasks.map((t) => [t.taskId, null])), artifacts: [], files: [], verdict: null },
        history: push(context.history, state),
        refused: null,
        strikes: 0,
        error: null,
      });
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state, round: entries[state]!, tasks: tasks.map((t) => ({ taskId: t.taskId, role: t.role })) } }));
      enqueue.sendParent({ type: 'WORKFLOW_TASKS', state, tasks } satisfies SdlcToParent);
    }),
    /** A task of the step settled (results that come while paused are kept for when it resumes). */
    recordOutcome: assign(({ context, event }) => {
      if (event.type !== 'TASK_SETTLED' || !(event.outcome.taskId in context.step.tasks) || context.step.tasks[event.outcome.taskId] !== null) return {};
      return { step: { ...context.step, tasks: { ...context.step.tasks, [event.outcome.taskId]: event.outcome } } };
    }),
    recordArtifacts: assign(({ context, event }) => {
      if (event.type !== 'xstate.done.actor.recordStep') return {};
      const r = event.output;
      const state = context.step.state!;
      const fixing = state === 'PLAN_REVISION' || state === 'CODE_FIXING';
      const verdictIssues = r.verdict === 'needs_revision' || r.verdict === 'failed' ? Math.max(1, r.issuesFound) : 0;
      // files modified are those the code and documentation steps touched; planned ones do not count
      const writes = state === 'CODE_IMPLEMENTATION' || state === 'CODE_FIXING' || state === 'DOCUMENTATION';
      const files = writes ? [...new Set([...context.tally.files, ...r.files])] : context.tally.files;
      const tally: Tally = {
        steps: context.tally.steps + 1,
        artifactsCreated: context.tally.artifactsCreated + r.created,
        files,
        linesOfCode: state === 'CODE_IMPLEMENTATION' || state === 'CODE_FIXING' ? r.linesOfCode : context.tally.linesOfCode,
        issuesFound: context.tally.issuesFound + verdictIssues,
        // a revision or a fix answers the issues that asked for it
        issuesFixed: context.tally.issuesFixed + (fixing ? context.tally.open : 0),
        open: fixing ? 0 : context.tally.open + verdictIssues,
      };
      const stepArtifacts = r.artifacts.filter((a) => !context.artifacts.some((b) => b.id === a.id && b.version === a.version)).map((a) => a.id);
      return {
        // the store's view is the truth: archived artifacts leave the organiser's context
        artifacts: r.artifacts.slice(-MAX_ARTIFACTS),
        step: { ...context.step, artifacts: stepArtifacts, files: r.files, verdict: r.verdict },
        tally,
        lastAt: Math.max(context.lastAt, r.at),
      };
    }),
    applyDecision: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'xstate.done.actor.decide') return;
      const { decision, distribution, contextTokens, at } = event.output;
      const state = context.step.state!;
      enqueue.assign({ lastAt: Math.max(context.lastAt, at), ...(distribution ? { distribution } : {}) });
      enqueue.sendParent(announce({ type: 'workflow.decision', data: { state, ...decision, ...(distribution ? { distribution } : {}), contextTokens, artifacts: context.artifacts.length } }));
    }),
    refuseDecision: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'xstate.done.actor.decide') return;
      const state = context.step.state!;
      const reason = refusalReason(state, event.output.decision, context.step.verdict);
      enqueue.assign({ refused: reason, refusals: context.refusals + 1 });
      enqueue.sendParent(announce({ type: 'workflow.refused', data: { code: 'INVALID_STATE_TRANSITION', state, decision: event.output.decision, reason } }));
    }),
    organiserFailed: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'xstate.error.actor.decide') return;
      const reason = `the organiser's decision could not be used: ${errorText(event.error)}`;
      enqueue.assign({ refused: reason });
      enqueue.sendParent(announce({ type: 'warning', data: { message: `${context.step.state}: ${reason}` } }));
    }),
    strike: assign({ strikes: ({ context }) => context.strikes + 1 }),
    fail: enqueueActions(({ context, event, enqueue }, params: { why: 'task' | 'record' | 'exhausted' | 'strikes' }) => {
      const state = context.step.state!;
      let reason: string;
      if (params.why === 'task') {
        const bad = Object.values(context.step.tasks).filter((t) => t !== null && t.state !== 'succeeded') as TaskOutcome[];
        reason = `${bad.map((t) => `${t.taskId} (${t.role}) ${t.state}${t.result?.error ? `: ${t.result.error}` : ''}`).join('; ')}`;
      } else if (params.why === 'record') {
        reason = `its results could not be recorded: ${errorText((event as { error?: unknown }).error)}`;
      } else if (params.why === 'exhausted') {
        const to = decidedTarget(context, event) as WorkflowState;
        const [used, max] = to === 'PLAN_REVISION' ? [roundOf(context, 'PLAN_REVISION'), context.settings.maxPlanRevisions] : [roundOf(context, 'CODE_FIXING'), context.settings.maxFixRounds];
        reason = `${to === 'PLAN_REVISION' ? 'plan revision' : 'code fixing'} rounds exhausted (${used} of ${max}): the organiser asked for another after ${state}`;
      } else {
        reason = `the organiser gave no usable decision ${context.strikes + 1} times in a row${context.refused ? ` (last: ${context.refused})` : ''}`;
      }
      enqueue.assign({ error: { state, reason, cause: params.why }, history: push(context.history, 'ERROR') });
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state: 'ERROR', from: state, reason } }));
      if (context.settings.onError === 'stop') {
        enqueue.sendParent({ type: 'WORKFLOW_ENDED', status: 'failed', state: 'ERROR', reason, completion: null } satisfies SdlcToParent);
      }
    }),
    complete: enqueueActions(({ context, event, enqueue }) => {
      const at = event.type === 'xstate.done.actor.decide' ? event.output.at : context.lastAt;
      const completion = completionOf(context, Math.max(at, context.lastAt));
      enqueue.assign({ completion, history: push(context.history, 'COMPLETED') });
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state: 'COMPLETED' } }));
      enqueue.sendParent(announce({ type: 'workflow.completed', data: { ...completion } }));
      enqueue.sendParent({ type: 'WORKFLOW_ENDED', status: 'completed', state: 'COMPLETED', reason: null, completion } satisfies SdlcToParent);
    }),
    paused: enqueueActions(({ context, event, enqueue }) => {
      enqueue.assign({ history: push(context.history, 'PAUSED') });
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state: 'PAUSED', from: context.step.state, by: (event as { by?: string }).by ?? null } }));
    }),
    resumed: enqueueActions(({ context, event, enqueue }) => {
      const state = context.step.state!;
      enqueue.assign({ history: push(context.history, state), error: null, strikes: 0 });
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state, resumed: true, by: (event as { by?: string }).by ?? null } }));
    }),
    retry: enqueueActions(({ context, enqueue }) => {
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state: context.error?.state ?? null, retry: true } }));
    }),
    stopped: enqueueActions(({ context, event, enqueue }) => {
      const reason = event.type === 'STOP' ? (event.reason ?? `stopped by ${event.by}`) : 'stopped';
      enqueue.assign({ history: push(context.history, 'IDLE') });
      enqueue.sendParent(announce({ type: 'workflow.state', data: { state: 'IDLE', code: 'WORKFLOW_STOPPED', reason } }));
      enqueue.sendParent({ type: 'WORKFLOW_ENDED', status: 'stopped', state: 'IDLE', reason, completion: null } satisfies SdlcToParent);
    }),
    /** An event this state does not take: refused, nothing changes but the count of refusals. */
    refuse: enqueueActions(({ context, event, enqueue }) => {
      const where = workflowStateOf(context);
      enqueue.assign({ refusals: context.refusals + 1 });
      const why = event.type === 'RESUME' && where === 'ERROR' && context.error?.cause === 'task' ? `: a worker of ${context.error.state} failed and would fail it again; RETRY runs the step again` : '';
      enqueue.sendParent(announce({ type: 'workflow.refused', data: { code: 'INVALID_STATE_TRANSITION', event: event.type, state: where, reason: `${event.type} is not allowed in ${where}${why}` } }));
    }),
  },
});

/** The seed's name of the state the workflow is in: the last entry of its history. */
function workflowStateOf(c: SdlcContext): WorkflowState {
  return c.history.at(-1) ?? 'IDLE';
}
