/**
 * One task's branch, from worktree to merge (seed 000 phase 10, seed 001 §9.4). The orchestrator
 * spawns it when it deploys a task in a git repository:
 *
 *   preparing ─▶ working ─WORKER_FINISHED─▶ committing ─▶ reviewing? ─▶ askingMerge ─▶ merging ─▶ cleaning ─▶ merged
 *                   ▲                                                       │ conflict
 *                   └──────────── changesRequested ◀────────────────────────┘ (or the reviewer asks)
 *
 * The worktree `.a2a/worktrees/<task>` on branch `a2a/<run>/<task>` is shared by the worker and its
 * sub-tasks. When the worker finishes, its changes are committed and measured (diff stats), then
 * the configured action runs: `merge` (approve_and_merge), `pr` (push, then open a pull request),
 * `review` (a reviewer agent's verdict decides), or `keep`. Merges and pushes are permission
 * actions decided by the orchestrator's matrix (ask_user by default). A merge conflict leaves the
 * base untouched and goes back to the worker as requested changes listing the files. Worktrees are
 * removed after a merge and kept after anything else, for inspection.
 *
 * Every outcome is reported to the orchestrator with `BRANCH_DONE` exactly once.
 */
import { assign, enqueueActions, fromPromise, sendParent, setup } from 'xstate';
import type { MergeOutcome as MergeOutcomeLike } from './ports.js';
import type { DiffStats, PermissionAction, PermissionDecision, SubTaskResult } from './protocol/index.js';
import { errorText } from './errorText.js';

export type BranchAction = 'merge' | 'pr' | 'review' | 'keep';

export interface TaskBranchInput {
  runId: string;
  taskId: string;
  /** The repository's top directory, and the worktree's path inside it. */
  repo: string;
  worktree: string;
  branch: string;
  base: string;
  action: BranchAction;
  /** Review rounds and change requests a task may go through before it is given up. */
  maxRounds: number;
  /** Where `pr` pushes, and the GitHub repository a PR is opened in (none: push only). */
  remote: string;
  github: { owner: string; repo: string } | null;
}

export type BranchOutcome = 'merged' | 'pr_opened' | 'pushed' | 'kept' | 'no_changes' | 'rejected' | 'failed' | 'abandoned';

/** What the branch tells the orchestrator. */
export type TaskBranchReply =
  | { type: 'WORKTREE_READY'; taskId: string; worktree: string; branch: string }
  | { type: 'REVIEW_REQUESTED'; taskId: string; round: number; diff: DiffStats; output: string; branch: string; base: string }
  | { type: 'CHANGES_REQUESTED'; taskId: string; round: number; feedback: string; by: string }
  | { type: 'WORKFLOW_PERMISSION'; taskId: string; action: PermissionAction; detail: string; requestId: string }
  | {
      type: 'BRANCH_DONE';
      taskId: string;
      outcome: BranchOutcome;
      reason: string;
      branch: string;
      diff: DiffStats | null;
      commit: string | null;
      pullRequest: { number: number; url: string } | null;
    };

export type TaskBranchEvent =
  | { type: 'WORKER_FINISHED'; result: SubTaskResult }
  /** The worker failed or was cancelled: the worktree is kept for inspection. */
  | { type: 'ABANDON'; reason: string }
  | { type: 'REVIEW_DONE'; approved: boolean; feedback: string; by: string }
  | { type: 'PERMISSION_DECIDED'; decision: PermissionDecision };

export interface Context extends TaskBranchInput {
  result: SubTaskResult | null;
  diff: DiffStats | null;
  commit: string | null;
  round: number;
  feedback: string;
  pullRequest: { number: number; url: string } | null;
  /** The permission asked, so that a decision for another request is not taken for it. */
  asking: string | null;
  reason: string;
}

const NO_DIFF: DiffStats = { changedFiles: 0, insertions: 0, deletions: 0, files: [] };
const describeDiff = (d: DiffStats | null) => (d ? `${d.changedFiles} file(s), +${d.insertions} −${d.deletions}` : 'no diff');

function notProvided(name: string) {
  return fromPromise<never, unknown>(async () => {
    throw new Error(`${name} is not provided: build the machines with createRuntime()`);
  });
}

export const taskBranchMachine = setup({
  types: {
    input: {} as TaskBranchInput,
    context: {} as Context,
    events: {} as TaskBranchEvent,
  },
  actors: {
    prepareWorktree: notProvided('prepareWorktree') as unknown as ReturnType<typeof fromPromise<void, { repo: string; worktree: string; branch: string; base: string }>>,
    commitAndMeasure: notProvided('commitAndMeasure') as unknown as ReturnType<
      typeof fromPromise<{ commit: string | null; diff: DiffStats }, { worktree: string; base: string; message: string }>
    >,
    mergeBranch: notProvided('mergeBranch') as unknown as ReturnType<typeof fromPromise<MergeOutcomeLike, { repo: string; branch: string; base: string; message: string }>>,
    removeWorktree: notProvided('removeWorktree') as unknown as ReturnType<typeof fromPromise<void, { repo: string; worktree: string; branch: string }>>,
    pushBranch: notProvided('pushBranch') as unknown as ReturnType<typeof fromPromise<void, { repo: string; remote: string; branch: string }>>,
    openPullRequest: notProvided('openPullRequest') as unknown as ReturnType<
      typeof fromPromise<{ number: number; url: string }, { github: { owner: string; repo: string }; branch: string; base: string; title: string; body: string }>
    >,
  },
  guards: {
    isAction: ({ context }, action: BranchAction) => context.action === action,
    noChanges: ({ context }) => (context.diff?.changedFiles ?? 0) === 0,
    approved: ({ context, event }) => event.type === 'PERMISSION_DECIDED' && event.decision.requestId === context.asking && event.decision.approved,
    decided: ({ context, event }) => event.type === 'PERMISSION_DECIDED' && event.decision.requestId === context.asking,
    reviewApproved: ({ event }) => event.type === 'REVIEW_DONE' && event.approved,
    merged: (_, outcome: MergeOutcomeLike) => outcome.merged,
    roundsLeft: ({ context }) => context.round < context.maxRounds,
    hasGitHub: ({ context }) => context.github !== null,
  },
  actions: {
    /** Asks the orchestrator for a permission (its matrix, or a person). */
    ask: enqueueActions(({ context, enqueue }, params: { action: PermissionAction; detail: string }) => {
      const requestId = `branch-${context.taskId}:${params.action}:${context.round}`;
      enqueue.assign({ asking: requestId });
      enqueue.sendParent({ type: 'WORKFLOW_PERMISSION', taskId: context.taskId, action: params.action, detail: params.detail, requestId } satisfies TaskBranchReply);
    }),
    denied: assign(({ event }) => ({
      asking: null,
      reason: event.type === 'PERMISSION_DECIDED' ? `denied by ${event.decision.decidedBy}${event.decision.reason ? `: ${event.decision.reason}` : ''}` : 'denied',
    })),
    requestChanges: enqueueActions(({ context, enqueue }, params: { feedback: string; by: string }) => {
      enqueue.assign({ round: context.round + 1, feedback: params.feedback });
      enqueue.sendParent({ type: 'CHANGES_REQUESTED', taskId: context.taskId, round: context.round + 1, feedback: params.feedback, by: params.by } satisfies TaskBranchReply);
    }),
    report: enqueueActions(({ context, enqueue }, params: { outcome: BranchOutcome; reason?: string }) => {
      enqueue.sendParent({
        type: 'BRANCH_DONE',
        taskId: context.taskId,
        outcome: params.outcome,
        reason: params.reason ?? context.reason,
        branch: context.branch,
        diff: context.diff,
        commit: context.commit,
        pullRequest: context.pullRequest,
      } satisfies TaskBranchReply);
    }),
    failWith: assign((_, params: { stage: string; error: unknown }) => ({ reason: `${params.stage} failed: ${errorText(params.error)}` })),
  },
}).createMachine({
  id: 'taskBranch',
  context: ({ input }) => ({ ...input, result: null, diff: null, commit: null, round: 0, feedback: '', pullRequest: null, asking: null, reason: '' }),
  initial: 'preparing',
  states: {
    preparing: {
      invoke: {
        id: 'prepareWorktree',
        src: 'prepareWorktree',
        input: ({ context }) => ({ repo: context.repo, worktree: context.worktree, branch: context.branch, base: context.base }),
        onDone: {
          target: 'working',
          actions: sendParent(({ context }) => ({ type: 'WORKTREE_READY', taskId: context.taskId, worktree: context.worktree, branch: context.branch }) satisfies TaskBranchReply),
        },
        onError: { target: 'failed', actions: { type: 'failWith', params: ({ event }) => ({ stage: 'creating the worktree', error: event.error }) } },
      },
    },
    /** The worker (and its sub-tasks) change files in the worktree. */
    working: {
      on: {
        WORKER_FINISHED: { target: 'committing', actions: assign({ result: ({ event }) => event.result }) },
        ABANDON: { target: 'abandoned', actions: assign({ reason: ({ event }) => event.reason }) },
      },
    },
    committing: {
      invoke: {
        id: 'commitAndMeasure',
        src: 'commitAndMeasure',
        input: ({ context }) => ({
          worktree: context.worktree,
          base: context.base,
          message: `${context.taskId}: ${(context.result?.output ?? '').split('\n')[0]!.slice(0, 72) || 'changes'}\n\n${context.result?.output ?? ''}`.trim(),
        }),
        onDone: { target: 'routing', actions: assign({ commit: ({ event }) => event.output.commit, diff: ({ event }) => event.output.diff }) },
        onError: { target: 'failed', actions: { type: 'failWith', params: ({ event }) => ({ stage: 'committing', error: event.error }) } },
      },
    },
    /** Which way the branch goes: nothing to merge, or the configured action. */
    routing: {
      always: [
        { guard: 'noChanges', target: 'cleaningEmpty' },
        { guard: { type: 'isAction', params: 'keep' }, target: 'kept', actions: assign({ reason: 'kept as configured (git.onComplete: keep)' }) },
        { guard: { type: 'isAction', params: 'review' }, target: 'reviewing' },
        { guard: { type: 'isAction', params: 'pr' }, target: 'askingPush' },
        { target: 'askingMerge' },
      ],
    },
    /** A reviewer agent reads the diff; its verdict decides. */
    reviewing: {
      entry: sendParent(
        ({ context }) =>
          ({
            type: 'REVIEW_REQUESTED',
            taskId: context.taskId,
            round: context.round,
            diff: context.diff ?? NO_DIFF,
            output: context.result?.output ?? '',
            branch: context.branch,
            base: context.base,
          }) satisfies TaskBranchReply,
      ),
      on: {
        REVIEW_DONE: [
          { guard: 'reviewApproved', target: 'askingMerge' },
          { target: 'changesRequested', actions: assign({ feedback: ({ event }) => event.feedback }) },
        ],
      },
    },
    askingMerge: {
      entry: {
        type: 'ask',
        params: ({ context }) => ({ action: 'branch_merge' as const, detail: `merge ${context.branch} into ${context.base} (${describeDiff(context.diff)})` }),
      },
      on: {
        PERMISSION_DECIDED: [
          { guard: 'approved', target: 'merging', actions: assign({ asking: null }) },
          { guard: 'decided', target: 'kept', actions: 'denied' },
        ],
      },
    },
    merging: {
      invoke: {
        id: 'mergeBranch',
        src: 'mergeBranch',
        input: ({ context }) => ({
          repo: context.repo,
          branch: context.branch,
          base: context.base,
          message: `Merge ${context.branch}: ${context.taskId}\n\n${describeDiff(context.diff)}`,
        }),
        onDone: [
          {
            guard: { type: 'merged', params: ({ event }) => event.output },
            target: 'cleaning',
            actions: assign({ commit: ({ event, context }) => (event.output.merged ? event.output.commit : context.commit) }),
          },
          {
            target: 'changesRequested',
            actions: assign({
              feedback: ({ event, context }) =>
                `Merging ${context.branch} into ${context.base} conflicts in: ${(event.output.merged ? [] : event.output.conflicts).join(', ')}. ` +
                `${context.base} was left unchanged. Merge ${context.base} into your branch (run_command: git merge ${context.base}), resolve the conflicts in these files, commit, and finish again.`,
            }),
          },
        ],
        onError: { target: 'failed', actions: { type: 'failWith', params: ({ event }) => ({ stage: 'merging', error: event.error }) } },
      },
    },
    /** Merged: the worktree and its branch are no longer needed. */
    cleaning: {
      invoke: {
        id: 'removeWorktree',
        src: 'removeWorktree',
        input: ({ context }) => ({ repo: context.repo, worktree: context.worktree, branch: context.branch }),
        onDone: { target: 'merged', actions: assign({ reason: ({ context }) => `merged into ${context.base}` }) },
        onError: { target: 'merged', actions: assign({ reason: ({ context, event }) => `merged into ${context.base}; removing the worktree failed: ${errorText(event.error)}` }) },
      },
    },
    /** The worker changed nothing: there is nothing to merge, and the empty worktree goes. */
    cleaningEmpty: {
      invoke: {
        id: 'removeWorktree',
        src: 'removeWorktree',
        input: ({ context }) => ({ repo: context.repo, worktree: context.worktree, branch: context.branch }),
        onDone: { target: 'noChanges', actions: assign({ reason: 'no files changed' }) },
        onError: { target: 'noChanges', actions: assign({ reason: ({ event }) => `no files changed; removing the worktree failed: ${errorText(event.error)}` }) },
      },
    },
    askingPush: {
      entry: { type: 'ask', params: ({ context }) => ({ action: 'branch_push' as const, detail: `git push ${context.remote} ${context.branch} (${describeDiff(context.diff)})` }) },
      on: {
        PERMISSION_DECIDED: [
          { guard: 'approved', target: 'pushing', actions: assign({ asking: null }) },
          { guard: 'decided', target: 'kept', actions: 'denied' },
        ],
      },
    },
    pushing: {
      invoke: {
        id: 'pushBranch',
        src: 'pushBranch',
        input: ({ context }) => ({ repo: context.repo, remote: context.remote, branch: context.branch }),
        onDone: [{ guard: 'hasGitHub', target: 'askingPr' }, { target: 'pushed', actions: assign({ reason: ({ context }) => `pushed to ${context.remote}; no GitHub repository configured, so no pull request` }) }],
        onError: { target: 'failed', actions: { type: 'failWith', params: ({ event }) => ({ stage: 'pushing', error: event.error }) } },
      },
    },
    askingPr: {
      entry: {
        type: 'ask',
        params: ({ context }) => ({ action: 'pr_creation' as const, detail: `open a pull request ${context.branch} → ${context.base} in ${context.github!.owner}/${context.github!.repo}` }),
      },
      on: {
        PERMISSION_DECIDED: [
          { guard: 'approved', target: 'openingPr', actions: assign({ asking: null }) },
          { guard: 'decided', target: 'pushed', actions: 'denied' },
        ],
      },
    },
    openingPr: {
      invoke: {
        id: 'openPullRequest',
        src: 'openPullRequest',
        input: ({ context }) => ({
          github: context.github!,
          branch: context.branch,
          base: context.base,
          title: `${context.taskId}: ${(context.result?.output ?? '').split('\n')[0]!.slice(0, 60) || 'changes'}`,
          body: [
            `Task \`${context.taskId}\` of run \`${context.runId}\`, by a2a.`,
            '',
            `**Changes:** ${describeDiff(context.diff)}${context.diff?.files?.length ? `\n\n${context.diff.files.map((f) => `- \`${f}\``).join('\n')}` : ''}`,
            '',
            '**Result**',
            '',
            context.result?.output ?? '',
          ].join('\n'),
        }),
        onDone: { target: 'prOpened', actions: assign({ pullRequest: ({ event }) => event.output, reason: ({ event }) => `pull request #${event.output.number}: ${event.output.url}` }) },
        onError: { target: 'failed', actions: { type: 'failWith', params: ({ event }) => ({ stage: 'opening the pull request', error: event.error }) } },
      },
    },
    /** Back to the worker with feedback (a conflict, or the reviewer's), unless rounds ran out. */
    changesRequested: {
      always: [
        {
          guard: 'roundsLeft',
          target: 'working',
          actions: { type: 'requestChanges', params: ({ context }) => ({ feedback: context.feedback, by: context.action === 'review' ? 'reviewer' : 'merge' }) },
        },
        { target: 'rejected', actions: assign({ reason: ({ context }) => `changes still requested after ${context.round} round(s): ${context.feedback}` }) },
      ],
    },
    merged: { type: 'final', entry: { type: 'report', params: { outcome: 'merged' } } },
    prOpened: { type: 'final', entry: { type: 'report', params: { outcome: 'pr_opened' } } },
    pushed: { type: 'final', entry: { type: 'report', params: { outcome: 'pushed' } } },
    kept: { type: 'final', entry: { type: 'report', params: { outcome: 'kept' } } },
    noChanges: { type: 'final', entry: { type: 'report', params: { outcome: 'no_changes' } } },
    rejected: { type: 'final', entry: { type: 'report', params: { outcome: 'rejected' } } },
    failed: { type: 'final', entry: { type: 'report', params: { outcome: 'failed' } } },
    abandoned: { type: 'final', entry: { type: 'report', params: { outcome: 'abandoned' } } },
  },
});
