/**
 * A task's branch (taskBranch): commit, merge or review rounds, push and pull request, with the permissions they ask.
 */
import { taskBranchMachine, type TaskBranchInput, type TaskBranchEvent } from '../../../machines/taskBranch.machine.js';
import type { MachineModel } from '../paths.js';
import { inert, fail, done, failed, type Sample } from './shared.js';

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


export const taskBranchModel: MachineModel = {
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
    const result = { taskId: 'w-t', status: 'success' as const, output: 'done' };
    const events: Array<Sample<TaskBranchEvent>> = [
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
