/**
 * examples/sdlc as the workflow tests use it: a workspace holding a copy of its repository, its
 * script (with turn delays of the test's choosing) and its workflow file run in place (no
 * template copy, no worktrees), and what an uninterrupted run of it logs.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { RunEvent } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';

export const EXAMPLE = resolve(import.meta.dirname, '../../examples/sdlc');

export interface ExampleRule {
  agent: string;
  prompt?: string;
  turns: Array<{ delayMs?: number }>;
}

/** The artifact versions an uninterrupted run of the example writes, in order. */
export const EXAMPLE_ARTIFACTS = [
  'implementation_plan-1@1',
  'review_report-1@1',
  'implementation_plan-1@2',
  'review_report-2@1',
  'pseudocode-1@1',
  'code-1@1',
  'code-2@1',
  'review_report-3@1',
  'code-1@2',
  'review_report-4@1',
  'documentation-1@1',
  'test_results-1@1',
  'code-1@3',
  'review_report-5@1',
  'documentation-2@1',
  'test_results-2@1',
];

/** The example's script, each turn taking `delayMs(rule)` when given. */
export function exampleScript(delayMs?: (rule: ExampleRule) => number): { rules: ExampleRule[] } {
  const script = JSON.parse(readFileSync(join(EXAMPLE, 'script.json'), 'utf8')) as { rules: ExampleRule[] };
  if (delayMs) for (const rule of script.rules) for (const turn of rule.turns) turn.delayMs = delayMs(rule);
  return script;
}

/** A copy of the example's repository (not a git repository: workers share it). */
export function exampleRepo(prefix = 'a2a-sdlc-'): string {
  const ws = tempDir(prefix);
  cpSync(join(EXAMPLE, 'repo'), ws, { recursive: true });
  return ws;
}

/** The example ready to run in `workflow.json` of a copy of its repository, worktrees off. */
export function exampleWorkspace(prefix: string, delayMs?: (rule: ExampleRule) => number): string {
  const ws = exampleRepo(prefix);
  writeFileSync(join(ws, 'script.json'), JSON.stringify(exampleScript(delayMs)));
  const workflow = JSON.parse(readFileSync(join(EXAMPLE, 'workflow.json'), 'utf8')) as { config: { git: object }; workspace?: string };
  workflow.config.git = { worktrees: 'off' };
  delete workflow.workspace; // the test's directory is the workspace
  writeFileSync(join(ws, 'workflow.json'), JSON.stringify(workflow));
  return ws;
}

export const workflowStates = (list: RunEvent[]) => list.filter((e) => e.type === 'workflow.state').map((e) => String(e.data.state));
export const artifactVersions = (list: RunEvent[]) =>
  list.filter((e) => e.type === 'artifact.created' || e.type === 'artifact.updated').map((e) => `${String(e.data.artifactId)}@${String(e.data.version)}`);
