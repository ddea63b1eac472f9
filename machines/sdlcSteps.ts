/**
 * The steps of the SDLC workflow (seed 003), as data the chart reads: which roles work in a step,
 * the brief each gets (artifact ids, never contents), which artifact the step produces, and where
 * an organiser's decision may lead from it. Pure: no I/O, no clock.
 */
import { WorkingState, type ArtifactType, type SubTaskResult, type WorkDistribution, type WorkflowDecision, type WorkflowState } from './protocol/index.js';

/** The states in which agents work, in the chart's order; PAUSED and ERROR keep the one they left. */
export const WORKING_STATES = WorkingState.options;
export type { WorkingState };

/** What the organiser sees of an artifact: its summary, never its content (actors/organiser/artifacts.ts). */
export interface OrganiserArtifact {
  id: string;
  type: ArtifactType;
  version: number;
  status: string;
  producerRole: string;
  brief: string;
  keyPoints: string[];
  filesAffectedCount: number;
  metrics?: { linesOfCode?: number; testsCount?: number; testsFailed?: number; issuesFound?: number };
}

export interface SdlcSettings {
  maxPlanRevisions: number;
  maxFixRounds: number;
  maxWaits: number;
  secondaryCoders: number;
  /** Roles that review the plan and the code, in parallel. */
  reviewers: string[];
  /** `stop`: a workflow in ERROR ends the run (failed); `wait`: it waits for retry, resume or stop. */
  onError: 'stop' | 'wait';
  /** How long the organiser's `wait` lasts before it is asked again (ms). */
  waitMs: number;
  testCommand?: string;
  /** Artifacts untouched this long leave the organiser's context (archived; still readable). */
  archiveAfterMs?: number;
}

/** A worker the workflow asks the orchestrator to deploy. */
export interface StepTask {
  taskId: string;
  role: string;
  prompt: string;
}

/** What the orchestrator reports of a step's task once it settled. */
export interface TaskOutcome {
  taskId: string;
  role: string;
  workerId: string;
  state: 'succeeded' | 'failed' | 'skipped' | 'cancelled';
  result: SubTaskResult | null;
}

/** The artifact a step produces. */
export const STEP_ARTIFACT: Record<WorkingState, ArtifactType> = {
  PLANNING: 'implementation_plan',
  PLAN_REVIEW: 'review_report',
  PLAN_REVISION: 'implementation_plan',
  STRUCTURE_CREATION: 'pseudocode',
  CODE_IMPLEMENTATION: 'code',
  CODE_REVIEW: 'review_report',
  CODE_FIXING: 'code',
  DOCUMENTATION: 'documentation',
  TESTING: 'test_results',
};

/**
 * Where a decision may lead from each state (seed 003's STATE_TRANSITIONS, without ERROR, which
 * the chart enters itself): `approve` takes the first, `request_revision` the revision target.
 */
export const NEXT: Record<WorkingState, { approve: WorkflowState; revise?: WorkflowState; also?: WorkflowState[] }> = {
  PLANNING: { approve: 'PLAN_REVIEW' },
  PLAN_REVIEW: { approve: 'STRUCTURE_CREATION', revise: 'PLAN_REVISION' },
  PLAN_REVISION: { approve: 'PLAN_REVIEW' },
  STRUCTURE_CREATION: { approve: 'CODE_IMPLEMENTATION' },
  CODE_IMPLEMENTATION: { approve: 'CODE_REVIEW' },
  CODE_REVIEW: { approve: 'DOCUMENTATION', revise: 'CODE_FIXING', also: ['TESTING'] },
  CODE_FIXING: { approve: 'CODE_REVIEW' },
  DOCUMENTATION: { approve: 'TESTING', also: ['COMPLETED'] },
  TESTING: { approve: 'COMPLETED', revise: 'CODE_FIXING' },
};

/** The states a decision may name from `state`. */
export function allowedTargets(state: WorkingState): WorkflowState[] {
  const n = NEXT[state];
  return [n.approve, ...(n.revise ? [n.revise] : []), ...(n.also ?? [])];
}

/**
 * Where a decision leads from `state`: a state, `wait`, or null when the chart does not allow it
 * (refused with INVALID_STATE_TRANSITION, never applied).
 */
export function resolveDecision(state: WorkingState, decision: WorkflowDecision, verdict: StepVerdict = null): WorkflowState | 'wait' | null {
  const n = NEXT[state];
  // a review that asked for changes, or tests that failed, cannot be moved past: only back
  if (blocked(state, verdict) && decision.action !== 'wait' && decision.action !== 'request_revision' && !(decision.action === 'transition' && decision.nextState === n.revise)) return null;
  switch (decision.action) {
    case 'wait':
      return 'wait';
    case 'approve':
      return n.approve;
    case 'request_revision':
      return n.revise ?? null;
    case 'transition':
      return decision.nextState && allowedTargets(state).includes(decision.nextState) ? decision.nextState : null;
  }
}

/** What a review or test step found (null for the other steps). */
export type StepVerdict = 'approved' | 'needs_revision' | 'passed' | 'failed' | null;

/** A step whose verdict sends the work back: a review that asked for changes, tests that failed. */
export function blocked(state: WorkingState, verdict: StepVerdict): boolean {
  return NEXT[state].revise !== undefined && (verdict === 'needs_revision' || verdict === 'failed');
}

/** Why a decision is refused, for the event and the organiser's next attempt. */
export function refusalReason(state: WorkingState, decision: WorkflowDecision, verdict: StepVerdict = null): string {
  const allowed = allowedTargets(state);
  if (blocked(state, verdict)) {
    return `${verdict === 'failed' ? 'the tests failed' : 'the review asked for changes'}: ${state} can only go back to ${NEXT[state].revise} (request_revision)`;
  }
  if (decision.action === 'request_revision') return `request_revision is not possible in ${state}: it leads to ${allowed.join(' or ')}`;
  if (decision.action === 'transition' && !decision.nextState) return `transition needs nextState (one of ${allowed.join(', ')})`;
  return `${state} cannot go to ${decision.nextState ?? '?'}: allowed next states are ${allowed.join(', ')}`;
}

const list = (artifacts: OrganiserArtifact[]) =>
  artifacts.length === 0 ? '(none yet)' : artifacts.map((a) => `- ${a.id} v${a.version} (${a.type}, ${a.status}, by ${a.producerRole}): ${a.brief}`).join('\n');

const latest = (artifacts: OrganiserArtifact[], type: ArtifactType) => artifacts.filter((a) => a.type === type);

/** Groups `files` into at most `n` groups of consecutive files, as even as can be. */
export function groupFiles(files: string[], n: number): string[][] {
  const groups = Math.max(1, Math.min(n, files.length));
  const out: string[][] = Array.from({ length: groups }, () => []);
  files.forEach((f, i) => out[Math.floor((i * groups) / files.length)]!.push(f));
  return out.filter((g) => g.length > 0);
}

/** The header every brief starts with: scripted models and people can tell steps apart by it. */
export const briefHeader = (state: WorkingState, round: number, role: string) => `SDLC step ${state} (round ${round}), role ${role}.`;

const FINISH =
  'Work only from the artifacts named here: read their full content with a2a_read_artifact (a2a_list_artifacts lists them). ' +
  'Store what you produce with a2a_write_artifact (or give it as your result), then finish with a2a_subtask_complete.';

/**
 * The workers a step deploys. `seq` numbers task ids (unique in the run: `<slug>-<n>`), `round`
 * is how many times the step has been entered.
 */
export function stepTasks(
  state: WorkingState,
  o: { goal: string; round: number; seq: number; artifacts: OrganiserArtifact[]; settings: SdlcSettings; distribution: WorkDistribution | null },
): StepTask[] {
  const { goal, round, artifacts, settings } = o;
  let seq = o.seq;
  const task = (slug: string, role: string, duty: string, extra: string[] = []): StepTask => ({
    taskId: `${slug}-${++seq}`,
    role,
    prompt: [briefHeader(state, round, role), '', `Goal: ${goal}`, '', duty, ...extra, '', FINISH].join('\n'),
  });
  const plans = latest(artifacts, 'implementation_plan');
  const reviews = latest(artifacts, 'review_report');
  const code = latest(artifacts, 'code');
  const pseudo = latest(artifacts, 'pseudocode');
  const tests = latest(artifacts, 'test_results');
  switch (state) {
    case 'PLANNING':
      return [task('plan', 'architect', 'Write the implementation plan (artifact type implementation_plan): the design, the files to create or change, and how it will be tested.')];
    case 'PLAN_REVIEW':
      return settings.reviewers.map((role) =>
        task(`plan-review-${role.toLowerCase()}`, role, 'Review the implementation plan. Approve it (start your result with "APPROVE"), or list each issue on a line starting with "issue:" and ask for changes.', ['', 'Plan:', list(plans.slice(-1))]),
      );
    case 'PLAN_REVISION':
      return [task('plan-revision', 'architect', 'Revise the implementation plan to address the review (a new version of the same artifact: a2a_write_artifact with reviseId).', ['', 'Plan:', list(plans.slice(-1)), '', 'Reviews:', list(reviews.slice(-settings.reviewers.length))])];
    case 'STRUCTURE_CREATION':
      return [task('structure', 'primaryCoder', 'Create the file structure and the pseudocode of every file (artifact type pseudocode; one "file: <path>" line per file).', ['', 'Approved plan:', list(plans.slice(-1))])];
    case 'CODE_IMPLEMENTATION': {
      const d = o.distribution;
      const tasks: StepTask[] = [];
      const base = ['', 'Pseudocode:', list(pseudo.slice(-1))];
      if (!d || d.primary.length + d.secondary.length === 0) return [task('implement', 'primaryCoder', 'Implement every file of the pseudocode.', base)];
      if (d.primary.length > 0) tasks.push(task('implement', 'primaryCoder', `Implement these files from the pseudocode: ${d.primary.join(', ')}.`, base));
      for (const group of groupFiles(d.secondary, settings.secondaryCoders)) {
        tasks.push(task('implement', 'secondaryCoder', `Implement these files from the pseudocode: ${group.join(', ')}. Other coders write the other files in parallel: do not touch them.`, base));
      }
      return tasks;
    }
    case 'CODE_REVIEW':
      return settings.reviewers.map((role) =>
        task(`code-review-${role.toLowerCase()}`, role, 'Review the code. Approve it (start your result with "APPROVE"), or list each issue on a line starting with "issue:" and ask for changes.', ['', 'Code:', list(code.slice(-6)), '', 'Plan:', list(plans.slice(-1))]),
      );
    case 'CODE_FIXING':
      return [task('fix', 'primaryCoder', 'Fix the issues the latest reviews and test results report, in the code.', ['', 'Reviews:', list(reviews.slice(-settings.reviewers.length)), '', 'Test results:', list(tests.slice(-1)), '', 'Code:', list(code.slice(-6))])];
    case 'DOCUMENTATION':
      return [task('docs', 'documentationWriter', 'Document the code for its users (artifact type documentation): what it does, how to use it, with an example.', ['', 'Code:', list(code.slice(-6))])];
    case 'TESTING':
      return [
        task('test', 'debugger', `Run the tests${settings.testCommand ? ` (\`${settings.testCommand}\`)` : ''} with run_command and report "N passed, M failed" with the failures (artifact type test_results).`, ['', 'Code:', list(code.slice(-6))]),
      ];
  }
}
