/**
 * The instructions the orchestrator writes for the sessions it deploys around a task's branch: a
 * reviewer's, and a worker's when changes are asked for. Text, kept out of the chart (a pure
 * module beside it: machines import no actors; actors/session/prompts.ts holds the agents' own prompts).
 */
import type { DiffStats } from './protocol/index.js';

/** A worker sent back to its branch with the changes a reviewer (or a conflict) asked for. */
export function reworkPrompt(p: { task: string; round: number; by: string; feedback: string; previous: string }): string {
  return [
    p.task,
    '',
    `## Changes requested (round ${p.round}, by the ${p.by})`,
    '',
    p.feedback,
    '',
    '## Your previous result',
    '',
    p.previous,
    '',
    'Your earlier changes are committed on this branch in your worktree. Make the requested changes, then finish again with a2a_subtask_complete.',
  ].join('\n');
}

export const REVIEW_EXPECTED_OUTPUT = 'A verdict (approve or request_changes) with the reasons.';

/** A reviewer reading a task's branch against its base. */
export function reviewPrompt(p: { taskId: string; branch: string; base: string; diff: DiffStats; task: string; output: string }): string {
  return [
    `Review the changes of task "${p.taskId}" on branch ${p.branch} (against ${p.base}) in your worktree.`,
    `Changed: ${p.diff.changedFiles} file(s), +${p.diff.insertions} −${p.diff.deletions}: ${(p.diff.files ?? []).join(', ')}`,
    '',
    '## The task',
    '',
    p.task,
    '',
    "## The worker's result",
    '',
    p.output,
    '',
    'Read the changed files (or run `git diff ' + p.base + '...HEAD`). Finish with a2a_subtask_complete: set metadata.verdict to "approve" or "request_changes", and in output say why and, for changes, exactly what to change.',
  ].join('\n');
}
