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
import { and, not } from 'xstate';
import type { WorkflowState } from './protocol/index.js';
import { NEXT, WORKING_STATES, type TaskOutcome, type WorkingState } from './sdlcSteps.js';
import { organiserView, roundOf, sdlcWorkflowSetup, type LooseTransition, type SdlcContext } from './sdlcWorkflow.setup.js';

// its types and helpers, for those who import them from the chart's module
export * from './sdlcWorkflow.setup.js';

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

/** The chart: states and transitions; every guard and action it names is in sdlcWorkflow.setup.ts. */
export const sdlcWorkflowMachine = sdlcWorkflowSetup.createMachine({
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
