/**
 * The SDLC workflow (seed 003): one revision and one fixing round, one `wait` allowed, so that every bound is reached on short paths.
 */
import { sdlcWorkflowMachine, type SdlcInput, type SdlcEvent } from '../../../machines/sdlcWorkflow.machine.js';
import { allowedTargets, type TaskOutcome, type WorkingState } from '../../../machines/sdlcSteps.js';
import type { MachineModel } from '../paths.js';
import { fail, type Sample, done } from './shared.js';

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

export const sdlcModel: MachineModel = {
  name: 'sdlcWorkflow',
  machine: sdlcWorkflowMachine,
  input: sdlcInput,
  events: (state) => {
    const c = state.context as SdlcView;
    const events: Array<Sample<SdlcEvent>> = [{ type: 'START' }, { type: 'PAUSE', by: 'u' }, { type: 'RESUME', by: 'u' }, { type: 'RETRY', by: 'u' }, { type: 'STOP', by: 'u' }];
    const pending = Object.entries(c.step.tasks).filter(([, t]) => t === null);
    if (pending.length > 0) {
      const [taskId] = pending[0]!;
      const outcome = (ok: boolean): TaskOutcome => ({ taskId, role: 'r', workerId: `w-${taskId}`, state: ok ? 'succeeded' : 'failed', result: { taskId: `w-${taskId}`, status: ok ? 'success' : 'failed', output: 'done' } as TaskOutcome['result'] });
      events.push({ type: 'TASK_SETTLED', outcome: outcome(true) }, { type: 'TASK_SETTLED', outcome: outcome(false) });
    }
    const recorded = (verdict: string | null) => done('recordStep', { artifacts: [], created: 1, verdict, files: ['a.js'], linesOfCode: 3, issuesFound: 1, at: 5 });
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
      const decide = (decision: Record<string, unknown>) => done('decide', { decision: { reasoning: 'because', ...decision }, contextTokens: 10, at: 9 });
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
