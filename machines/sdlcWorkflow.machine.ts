/**
 * The organiser's SDLC workflow (seed 003), run by the orchestrator as its child `workflow`:
 *
 *   IDLE → PLANNING → PLAN_REVIEW ⇄ PLAN_REVISION → STRUCTURE_CREATION → CODE_IMPLEMENTATION
 *        → CODE_REVIEW ⇄ CODE_FIXING → DOCUMENTATION → TESTING → COMPLETED   (TESTING → CODE_FIXING)
 *
 * Every working state is a step of three phases: `working` (its workers, deployed by the
 * orchestrator, run until each has settled), `recording` (their results become artifacts, with
 * summaries), `deciding` (the organiser, an LLM, makes a WorkflowDecision from the summaries
 * only; the chart checks it: a decision the state does not allow is refused with
 * INVALID_STATE_TRANSITION and the organiser is asked again). Revision and fixing rounds are
 * bounded; running out, a failed worker, or an organiser that keeps failing ends in ERROR.
 *
 * PAUSE from any working state keeps the exact phase in a deep history state; RESUME
 * goes back there, and results that arrived meanwhile are not lost. ERROR offers RETRY (the step
 * again, from its start) and RESUME (the phase it failed in). STOP goes to IDLE (WORKFLOW_STOPPED).
 * An event the current state does not take is refused with INVALID_STATE_TRANSITION, never applied.
 */
import { and, assign, enqueueActions, fromPromise, not, setup } from 'xstate';
import type { CompletionSummary, WorkDistribution, WorkflowDecision, WorkflowState } from './protocol/index.js';
import {
  NEXT,
  refusalReason,
  resolveDecision,
  stepTasks,
  WORKING_STATES,
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
const roundOf = (c: SdlcContext, s: WorkingState) => c.entries[s] ?? 0;

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
type LooseTransition = Record<string, unknown>;

/** The transitions of a step's `deciding` phase when the organiser has answered. */
function decisionTransitions(state: WorkingState): LooseTransition[] {
  const n = NEXT[state];
  const targets: WorkflowState[] = [n.approve, ...(n.revise ? [n.revise] : []), ...(n.also ?? [])];
  const go = targets.flatMap((to): LooseTransition[] => {
    const path = to === 'COMPLETED' ? '#sdlc.COMPLETED' : `#sdlc.active.${to}`;
    const apply = { type: 'applyDecision' as const };
    const begin = to === 'COMPLETED' ? [] : [{ type: 'beginStep' as const, params: { state: to as WorkingState } }];
    if (to === 'PLAN_REVISION' || to === 'CODE_FIXING') {
      return [
        { guard: and([{ type: 'decisionLeadsTo' as const, params: { to } }, { type: 'roundsLeft' as const, params: { to } }]), target: path, actions: [apply, ...begin] },
        { guard: { type: 'decisionLeadsTo' as const, params: { to } }, target: '#sdlc.ERROR', actions: [apply, { type: 'fail' as const, params: { why: 'exhausted' as const } }] },
      ];
    }
    return [{ guard: { type: 'decisionLeadsTo' as const, params: { to } }, target: path, actions: to === 'COMPLETED' ? [apply, 'complete' as const] : [apply, ...begin] }];
  });
  return [
    ...go,
    { guard: and(['decidedToWait', 'strikesLeft']), target: 'waiting', actions: ['applyDecision', 'strike'] },
    { guard: and([not('decidedToWait'), 'strikesLeft']), target: 'deciding', reenter: true, actions: ['refuseDecision', 'strike'] },
    { target: '#sdlc.ERROR', actions: ['refuseDecision', { type: 'fail' as const, params: { why: 'strikes' as const } }] },
  ];
}

/** One working state: its workers work, their results are recorded, the organiser decides. */
function step(state: WorkingState) {
  return {
    initial: 'working' as const,
    states: {
      working: {
        always: [
          { guard: and(['stepSettled', 'stepFailed']), target: '#sdlc.ERROR', actions: { type: 'fail' as const, params: { why: 'task' as const } } },
          { guard: 'stepSettled', target: 'recording' },
        ],
      },
      recording: {
        invoke: {
          id: 'recordStep',
          src: 'recordStep' as const,
          input: ({ context }: { context: SdlcContext }) => ({
            runId: context.runId,
            state,
            round: roundOf(context, state),
            outcomes: Object.values(context.step.tasks) as TaskOutcome[],
            ...(context.settings.archiveAfterMs !== undefined ? { archiveAfterMs: context.settings.archiveAfterMs } : {}),
          }),
          onDone: { target: 'deciding', actions: 'recordArtifacts' },
          onError: { target: '#sdlc.ERROR', actions: { type: 'fail' as const, params: { why: 'record' as const } } },
        },
      },
      deciding: {
        invoke: {
          id: 'decide',
          src: 'decide' as const,
          input: ({ context }: { context: SdlcContext }) => ({ ...organiserView(context), runId: context.runId }),
          onDone: decisionTransitions(state),
          onError: [
            { guard: 'strikesLeft', target: 'deciding', reenter: true, actions: ['organiserFailed', 'strike'] },
            { target: '#sdlc.ERROR', actions: ['organiserFailed', { type: 'fail' as const, params: { why: 'strikes' as const } }] },
          ],
        },
      },
      /** The organiser said `wait`: asked again after `waitMs`. */
      waiting: {
        after: { organiserWait: { target: 'deciding' } },
      },
    },
  };
}

const stepStates = Object.fromEntries(WORKING_STATES.map((s) => [s, step(s)])) as Record<WorkingState, ReturnType<typeof step>>;

export const sdlcWorkflowMachine = setup({
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
}).createMachine({
  id: 'sdlc',
  context: ({ input }) => ({
    runId: input.runId,
    goal: input.goal,
    settings: input.settings,
    startedAt: input.startedAt,
    step: { state: null, round: 0, tasks: {}, artifacts: [], files: [], verdict: null },
    entries: {},
    strikes: 0,
    seq: 0,
    artifacts: [],
    history: [],
    distribution: null,
    refused: null,
    error: null,
    tally: { steps: 0, artifactsCreated: 0, files: [], linesOfCode: 0, issuesFound: 0, issuesFixed: 0, open: 0 },
    refusals: 0,
    completion: null,
    lastAt: input.startedAt,
  }),
  on: {
    TASK_SETTLED: { actions: 'recordOutcome' },
    START: { actions: 'refuse' },
    PAUSE: { actions: 'refuse' },
    RESUME: { actions: 'refuse' },
    RETRY: { actions: 'refuse' },
    STOP: { actions: 'refuse' },
  },
  initial: 'IDLE',
  states: {
    IDLE: {
      on: {
        START: [{ guard: ({ context }) => context.step.state === null, target: 'active.PLANNING', actions: ['start', { type: 'beginStep', params: { state: 'PLANNING' } }] }, { actions: 'refuse' }],
      },
    },
    active: {
      initial: 'PLANNING',
      on: {
        PAUSE: { target: 'PAUSED', actions: 'paused' },
        STOP: { target: 'IDLE', actions: 'stopped' },
      },
      states: { ...(stepStates as unknown as Record<WorkingState, object>), hist: { type: 'history', history: 'deep' } },
    },
    PAUSED: {
      on: {
        RESUME: { target: 'active.hist', actions: 'resumed' },
        STOP: { target: 'IDLE', actions: 'stopped' },
      },
    },
    ERROR: {
      on: {
        RETRY: WORKING_STATES.map((state) => ({ guard: { type: 'failedIn' as const, params: { state } }, target: `active.${state}`, actions: ['retry', { type: 'beginStep' as const, params: { state, retry: true } }] })),
        // a worker that failed would fail the step again where it was: that needs RETRY
        RESUME: [{ guard: 'workerFailed', actions: 'refuse' }, { target: 'active.hist', actions: 'resumed' }],
        STOP: { target: 'IDLE', actions: 'stopped' },
      },
    },
    /**
     * Not a final state: the orchestrator, told by WORKFLOW_ENDED, ends the run and stops this
     * actor (a final state's done event would reach a parent that has already finished).
     */
    COMPLETED: {},
  },
});

/** The seed's name of the state the workflow is in: the last entry of its history. */
function workflowStateOf(c: SdlcContext): WorkflowState {
  return c.history.at(-1) ?? 'IDLE';
}
