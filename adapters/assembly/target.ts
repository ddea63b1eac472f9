/**
 * What a run runs: a plan file or directory, a workflow file, a task in quotes (the CLI's
 * argument), or a plan object or task given in code. A word that looks like a path and names
 * nothing is a typo, said with the nearest path; a workflow's template workspace must lie inside
 * its directory.
 */
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { WorkflowRequest, type Plan } from '../../machines/protocol/index.js';
import { A2AError, describeIssues, nearest } from '../../actors/errors.js';
import { parsePlan } from '../../actors/run.js';
import { readStructured } from '../config.js';

export interface Target {
  kind: 'plan' | 'task' | 'workflow';
  plan?: Plan;
  /** A workflow run: what to build, and the workflow file's script and config if any. */
  workflow?: WorkflowRequest;
  source: string;
  baseDir: string;
  task?: string;
}

export const WORKFLOWS = ['sdlc'];

function parseWorkflow(data: unknown, source: string): WorkflowRequest {
  const parsed = WorkflowRequest.safeParse(data);
  if (!parsed.success) {
    throw new A2AError('VALIDATION_ERROR', `${source}: invalid workflow:\n${describeIssues(parsed.error.issues)}\nA workflow file is {"workflow": "sdlc", "goal": "...", "script"?: "script.json", "config"?: {...}}.`, { where: source });
  }
  return parsed.data;
}

/**
 * The existing path nearest to `target`, segment by segment (`exmaples/oauht` → `examples/oauth`),
 * or null when a segment has no near match or nothing changes.
 */
function nearestPath(target: string): string | null {
  const absolute = isAbsolute(target);
  const segments = target.split('/').filter((part, i) => part !== '' || (i === 0 && absolute));
  let at = absolute ? '/' : process.cwd();
  const fixed: string[] = [];
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      fixed.push(segment);
      at = resolve(at, segment || '/');
      continue;
    }
    const exact = join(at, segment);
    if (existsSync(exact)) {
      fixed.push(segment);
      at = exact;
      continue;
    }
    let entries: string[];
    try {
      entries = readdirSync(at);
    } catch {
      return null;
    }
    const near = nearest(segment, entries);
    if (!near) return null;
    fixed.push(near);
    at = join(at, near);
  }
  const suggestion = fixed.join('/') || '/';
  return suggestion === target ? null : suggestion;
}

export function resolveTarget(target: string, workspace: string, workflow: string | undefined): Target {
  if (workflow !== undefined && !WORKFLOWS.includes(workflow)) {
    throw new A2AError('VALIDATION_ERROR', `--workflow ${workflow}: unknown workflow; known: ${WORKFLOWS.join(', ')}`, { where: '--workflow' });
  }
  const path = isAbsolute(target) ? target : resolve(process.cwd(), target);
  if (existsSync(path)) {
    const dir = statSync(path).isDirectory();
    const file = dir ? [join(path, 'plan.json'), join(path, 'workflow.json')].find((f) => existsSync(f)) : path;
    if (!file) throw new A2AError('VALIDATION_ERROR', `${path} is a directory without a plan.json or a workflow.json`);
    const data = readStructured(file);
    if (workflow !== undefined || (typeof data === 'object' && data !== null && 'workflow' in data)) {
      return { kind: 'workflow', workflow: parseWorkflow(data, file), source: file, baseDir: dirname(file) };
    }
    return { kind: 'plan', plan: parsePlan(data, file), source: file, baseDir: dirname(file) };
  }
  // a word that looks like a path (or nearly names something here) is a typo, not a task
  const suggestion = nearestPath(target);
  if (!/\s/.test(target) && (target.includes('/') || /\.[A-Za-z0-9]{1,5}$/.test(target) || suggestion !== null)) {
    throw new A2AError(
      'VALIDATION_ERROR',
      `${target}: no such file or directory${suggestion ? ` (did you mean ${suggestion}?)` : ''}. Pass a plan file, a directory with plan.json or workflow.json, or a task in quotes ("fix the login form").`,
      { where: target },
    );
  }
  if (workflow !== undefined) return { kind: 'workflow', workflow: parseWorkflow({ workflow, goal: target }, 'the goal'), source: 'command line', baseDir: workspace };
  return { kind: 'task', task: target, source: 'command line', baseDir: workspace };
}

/** What the request names to run: exactly one of target, plan and task (or a resume). */
export function targetOf(request: { plan?: unknown; task?: string; workflow?: string }, target: string | undefined, workspace: string): Target {
  const given = [target !== undefined && 'target', request.plan !== undefined && 'plan', request.task !== undefined && 'task'].filter(Boolean);
  if (given.length > 1) throw new A2AError('VALIDATION_ERROR', `give one thing to run: ${given.join(' and ')} were both given`, { where: String(given[1]) });
  if (request.plan !== undefined) return { kind: 'plan', plan: parsePlan(request.plan, 'the plan'), source: 'the plan', baseDir: workspace };
  if (request.task !== undefined) {
    if (typeof request.task !== 'string' || !request.task.trim()) throw new A2AError('VALIDATION_ERROR', 'task: say what to do (a non-empty string)', { where: 'task' });
    if (request.workflow !== undefined) return resolveTarget(request.task, workspace, request.workflow);
    return { kind: 'task', task: request.task, source: 'the task', baseDir: workspace };
  }
  if (target === undefined) throw new A2AError('VALIDATION_ERROR', 'nothing to run: give a plan file, a directory with plan.json, a task in quotes, or --resume <runId>');
  return resolveTarget(target, workspace, request.workflow);
}

export /** A workflow file's template workspace: a directory beside or below the file, nothing else. */
function templateDir(baseDir: string, given: string, source: string): string {
  const dir = resolve(baseDir, given);
  const inside = relative(baseDir, dir);
  if (isAbsolute(given) || inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new A2AError('VALIDATION_ERROR', `${source}: workspace: "${given}" must name a directory inside ${baseDir} (relative, no ".."): the run works on a copy of it`, { where: 'workspace' });
  }
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new A2AError('VALIDATION_ERROR', `${source}: workspace: ${dir} is not a directory`, { where: 'workspace' });
  // a symlink may not lead out either
  const real = realpathSync(dir);
  const realInside = relative(realpathSync(baseDir), real);
  if (realInside === '' || realInside.startsWith('..') || isAbsolute(realInside)) {
    throw new A2AError('VALIDATION_ERROR', `${source}: workspace: "${given}" leads to ${real}, outside ${baseDir}`, { where: 'workspace' });
  }
  return real;
}
