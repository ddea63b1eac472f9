/**
 * The organiser's SDLC workflow run by the CLI: examples/sdlc end to end (the state sequence, the
 * artifacts with their versions, the code it wrote and whose tests pass), the bounds (a sceptic
 * who never approves ends in ERROR with the reason), the organiser's decisions checked against the
 * chart, and pause / resume / retry refused where the chart does not allow them.
 */
import { cpSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { organiserPrompt } from '../../actors/organiser/organiser.js';
import { capture, waitFor } from '../nats/cluster.js';
import { tempDir } from '../helpers.js';
import { artifactVersions, EXAMPLE, EXAMPLE_ARTIFACTS, exampleRepo, exampleScript, workflowStates as states } from './example.js';

const events = (ws: string, runId: string) => new FileRunStore(ws).events(runId);

/** A workflow file in `ws` with the example's script, with overrides. */
function workflowFile(ws: string, o: { script?: object; config?: object; goal?: string }): string {
  const script = o.script ?? exampleScript();
  writeFileSync(join(ws, 'script.json'), JSON.stringify(script));
  const file = join(ws, 'workflow.json');
  writeFileSync(file, JSON.stringify({ workflow: 'sdlc', goal: o.goal ?? 'greet(name) with its tests', script: 'script.json', config: { permissions: { auto_approve: ['command_execution'] }, ...(o.config ?? {}) } }));
  return file;
}

describe('a2a run --workflow sdlc', () => {
  it('should run examples/sdlc through every state, revising the plan and fixing the code until its tests pass', async () => {
    const ws = exampleRepo();
    const c = capture();
    const code = await main(['run', EXAMPLE, '--workspace', ws, '--worktrees', 'off', '--run-id', 'sdlc-1', '--json'], c.io);
    expect(code, c.err()).toBe(0);
    const list = events(ws, 'sdlc-1');
    expect(states(list)).toEqual([
      'PLANNING',
      'PLAN_REVIEW',
      'PLAN_REVISION',
      'PLAN_REVIEW',
      'STRUCTURE_CREATION',
      'CODE_IMPLEMENTATION',
      'CODE_REVIEW',
      'CODE_FIXING',
      'CODE_REVIEW',
      'DOCUMENTATION',
      'TESTING',
      'CODE_FIXING',
      'CODE_REVIEW',
      'DOCUMENTATION',
      'TESTING',
      'COMPLETED',
    ]);
    // --json printed the same events
    expect(states(c.out().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as RunEvent))).toHaveLength(16);
    expect(artifactVersions(list)).toEqual(EXAMPLE_ARTIFACTS);
    // the organiser distributed the two files between the coders, who implemented them in parallel
    const distribution = list.find((e) => e.type === 'workflow.decision' && e.data.state === 'STRUCTURE_CREATION')!.data.distribution;
    expect(distribution).toMatchObject({ primary: ['src/greet.js'], secondary: ['test/greet.test.js'] });
    const summary = new FileRunStore(ws).read('sdlc-1').summary as RunSummary;
    expect(summary.status).toBe('completed');
    expect(summary.workflow).toMatchObject({ status: 'completed', state: 'COMPLETED' });
    expect(summary.workflow!.completion).toMatchObject({ stepsCompleted: 15, artifactsCreated: 16, filesModified: ['README.md', 'src/greet.js', 'test/greet.test.js'], issuesFound: 3, issuesFixed: 3 });
    // the code the team wrote is real, and its tests pass
    // (node:test prints its counts as `# pass 3` (TAP, Node 20 and 22 without a terminal) or `ℹ pass 3` (spec, the default from Node 23))
    expect(execFileSync(process.execPath, ['--test'], { cwd: ws, encoding: 'utf8' })).toMatch(/^[#ℹ] pass 3$/m);
    // every version stays readable
    const out = capture();
    expect(await main(['artifacts', 'sdlc-1', '--workspace', ws, '--show', 'implementation_plan-1@1'], out.io)).toBe(0);
    expect(out.out()).not.toMatch(/stranger/);
    expect(await main(['artifacts', 'sdlc-1', '--workspace', ws, '--show', 'implementation_plan-1'], out.io)).toBe(0);
    expect(out.out()).toMatch(/stranger/);
  });

  it('should keep the organiser to summaries: no artifact content in its context, which stays small', async () => {
    const ws = exampleRepo();
    const c = capture();
    expect(await main(['run', EXAMPLE, '--workspace', ws, '--worktrees', 'off', '--run-id', 'sdlc-ctx', '--json'], c.io)).toBe(0);
    const decisions = events(ws, 'sdlc-ctx').filter((e) => e.type === 'workflow.decision');
    const tokens = decisions.map((e) => Number(e.data.contextTokens));
    expect(tokens.every((t) => t > 0 && t < 2_000)).toBe(true);
    const prompt = organiserPrompt({
      userTask: 'greet',
      workflowState: 'CODE_REVIEW',
      round: 1,
      artifacts: [{ id: 'code-1', type: 'code', version: 2, status: 'completed', producerRole: 'primaryCoder', brief: 'Code: 5 lines in 1 file: src/greet.js.', keyPoints: ['src/greet.js'], filesAffectedCount: 1 }],
      stepArtifacts: ['code-1'],
      agentStatuses: [],
      todoList: [],
      workflowHistory: ['PLANNING'],
      rounds: { planRevisions: 0, maxPlanRevisions: 2, fixRounds: 1, maxFixRounds: 3 },
      allowed: ['DOCUMENTATION', 'CODE_FIXING', 'TESTING'],
      refused: null,
      distribute: null,
    });
    expect(prompt.split('\n')[0]).toBe('Decide the next step of the workflow in state CODE_REVIEW (round 1) after: code-1 v2 code completed.');
    expect(prompt).not.toMatch(/typeof name/);
  });

  it('should end in ERROR, naming the bound, when the sceptic never approves the plan', async () => {
    const ws = tempDir('a2a-sdlc-bound-');
    const decide = (action: string) => ({ toolCalls: [{ name: 'workflow_decision', arguments: { action, reasoning: 'as the review says' } }] });
    const script = {
      rules: [
        { agent: 'organiser', prompt: 'in state PLAN_REVIEW', turns: [decide('request_revision')] },
        { agent: 'organiser', prompt: '', turns: [decide('approve')] },
        { agent: 'code-sceptic', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'Request changes.\nissue: still vague' } }] }] },
        { agent: 'architect', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: '# Plan\n- do it' } }] }] },
      ],
    };
    const file = workflowFile(ws, { script, config: { workflow: { maxPlanRevisions: 1 } } });
    const c = capture();
    const code = await main(['run', file, '--workspace', ws, '--run-id', 'bound', '--no-tree'], c.io);
    expect(code).toBe(1);
    expect(states(events(ws, 'bound'))).toEqual(['PLANNING', 'PLAN_REVIEW', 'PLAN_REVISION', 'PLAN_REVIEW', 'ERROR']);
    const summary = new FileRunStore(ws).read('bound').summary as RunSummary;
    expect(summary.status).toBe('failed');
    expect(summary.workflow).toMatchObject({ status: 'failed', state: 'ERROR', reason: 'plan revision rounds exhausted (1 of 1): the organiser asked for another after PLAN_REVIEW' });
    expect(c.out()).toMatch(/workflow ERROR after PLAN_REVIEW: plan revision rounds exhausted \(1 of 1\)/);
  });

  it('should refuse a decision the state does not allow (INVALID_STATE_TRANSITION) and ask the organiser again', async () => {
    const ws = tempDir('a2a-sdlc-refuse-');
    const decide = (args: object) => ({ toolCalls: [{ name: 'workflow_decision', arguments: { reasoning: 'because', ...args } }] });
    const script = {
      rules: [
        // told why its answer was refused, it answers as the chart allows
        { agent: 'organiser', prompt: 'could not be used', turns: [decide({ action: 'approve' })] },
        { agent: 'organiser', prompt: 'in state PLANNING', turns: [decide({ action: 'transition', nextState: 'TESTING' })] },
        { agent: 'organiser', prompt: 'in state PLAN_REVIEW', turns: [decide({ action: 'wait' })] },
        { agent: '*', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'APPROVE' } }] }] },
      ],
    };
    const file = workflowFile(ws, { script, config: { workflow: { maxWaits: 1, waitMs: 10 } } });
    const c = capture();
    expect(await main(['run', file, '--workspace', ws, '--run-id', 'refuse', '--no-tree'], c.io)).toBe(1);
    const list = events(ws, 'refuse');
    const refused = list.find((e) => e.type === 'workflow.refused')!;
    expect(refused.data).toMatchObject({ code: 'INVALID_STATE_TRANSITION', state: 'PLANNING', reason: 'PLANNING cannot go to TESTING: allowed next states are PLAN_REVIEW' });
    // refused, never applied: PLANNING went on to PLAN_REVIEW, where the organiser waited once and then ran out
    expect(states(list)).toEqual(['PLANNING', 'PLAN_REVIEW', 'ERROR']);
    expect(String(list.find((e) => e.type === 'workflow.state' && e.data.state === 'ERROR')!.data.reason)).toMatch(/no usable decision 2 times in a row/);
  });

  it('should run a workflow that names a template workspace on a fresh git copy of it, never in the current directory', async () => {
    const dir = tempDir('a2a-sdlc-tpl-');
    cpSync(join(EXAMPLE, 'repo'), join(dir, 'tpl'), { recursive: true });
    const decide = { toolCalls: [{ name: 'workflow_decision', arguments: { action: 'approve', reasoning: 'fine' } }] };
    writeFileSync(join(dir, 'script.json'), JSON.stringify({ rules: [{ agent: 'organiser', turns: [decide] }, { agent: 'code-sceptic', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'APPROVE' } }] }] }, { agent: '*', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'done: 1 passed, 0 failed' } }] }] }] }));
    writeFileSync(join(dir, 'workflow.json'), JSON.stringify({ workflow: 'sdlc', goal: 'nothing much', script: 'script.json', workspace: 'tpl', config: { git: { worktrees: 'off' } } }));
    const c = capture();
    expect(await main(['run', join(dir, 'workflow.json'), '--run-id', 'seeded', '--no-tree'], c.io), c.err()).toBe(0);
    const seeded = /workspace: (\S+) \(a fresh git repository holding a copy of /.exec(c.err())?.[1];
    expect(seeded).toBeTruthy();
    expect(new FileRunStore(seeded!).read('seeded').status).toBe('completed');
    expect(execFileSync('git', ['-C', seeded!, 'log', '--oneline'], { encoding: 'utf8' })).toMatch(/copy of /);
    expect(() => new FileRunStore(process.cwd()).read('seeded')).toThrow();
    // found from anywhere by its id, without --workspace
    const found = capture();
    expect(await main(['status', '--run', 'seeded'], found.io), found.err()).toBe(0);
    expect(found.out()).toMatch(/state COMPLETED/);
    expect(await main(['artifacts', 'seeded'], found.io), found.err()).toBe(0);
    expect(found.out()).toMatch(/implementation_plan-1/);
    // the template is a directory beside the file, nothing else
    symlinkSync('/etc', join(dir, 'escape'));
    for (const workspace of ['..', '/', '../other', 'missing', 'escape']) {
      writeFileSync(join(dir, 'workflow.json'), JSON.stringify({ workflow: 'sdlc', goal: 'x', workspace }));
      const bad = capture();
      expect(await main(['run', join(dir, 'workflow.json')], bad.io)).not.toBe(0);
      expect(bad.err()).toMatch(/workspace: .*(must name a directory inside|is not a directory|outside)/);
    }
  });

  it('should stop with the run: the workflow goes to IDLE (WORKFLOW_STOPPED) and the run ends cancelled', async () => {
    const ws = exampleRepo();
    const script = exampleScript(() => 40);
    const file = workflowFile(ws, { script });
    const c = capture();
    const running = main(['run', file, '--workspace', ws, '--run-id', 'stopped', '--no-tree'], c.io);
    const store = new FileRunStore(ws);
    await waitFor('the plan review', () => states(safeEvents(store, 'stopped')).includes('PLAN_REVIEW'), 8_000, c.out);
    const ctl = capture();
    expect(await main(['stop', 'stopped', '--workspace', ws], ctl.io), ctl.err()).toBe(0);
    expect(await running).toBe(130);
    const list = events(ws, 'stopped');
    expect(list.find((e) => e.type === 'workflow.state' && e.data.state === 'IDLE')?.data).toMatchObject({ code: 'WORKFLOW_STOPPED' });
    expect((store.read('stopped').summary as RunSummary).workflow).toMatchObject({ status: 'stopped', state: 'IDLE' });
  });

  it("should give each role its agent and profile: a role's own profile, else --model", async () => {
    const ws = exampleRepo();
    const file = workflowFile(ws, {
      config: {
        permissions: { auto_approve: ['command_execution'] },
        models: { profiles: { strict: { provider: 'scripted', model: 'scripted' }, everyday: { provider: 'scripted', model: 'scripted' } } },
        workflow: { roles: { sceptic: 'strict', documentationWriter: { agent: '@agent' } } },
      },
    });
    const c = capture();
    expect(await main(['run', file, '--workspace', ws, '--run-id', 'roles', '--model', 'everyday', '--no-tree'], c.io), c.err()).toBe(0);
    const deployed = events(ws, 'roles').filter((e) => e.type === 'worker.deployed');
    const of = (role: string) => deployed.filter((e) => e.data.role === role).map((e) => `${e.agentType} ${String(e.data.model)}`);
    expect(new Set(of('sceptic'))).toEqual(new Set(['@code-sceptic strict']));
    expect(new Set(of('architect'))).toEqual(new Set(['@architect everyday']));
    expect(new Set(of('documentationWriter'))).toEqual(new Set(['@agent everyday']));
  });

  it('should refuse to approve past a review that asked for changes, and ask the organiser again', async () => {
    const ws = exampleRepo();
    const example = exampleScript();
    const decide = (action: string) => ({ toolCalls: [{ name: 'workflow_decision', arguments: { action, reasoning: 'my call' } }] });
    const script = {
      rules: [
        { agent: 'organiser', prompt: 'could not be used: the review asked for changes', turns: [decide('request_revision')] },
        // an organiser that waves a rejected plan through
        { agent: 'organiser', prompt: 'in state PLAN_REVIEW .*after: .*needs_revision', turns: [decide('approve')] },
        ...example.rules,
      ],
    };
    const file = workflowFile(ws, { script });
    const c = capture();
    expect(await main(['run', file, '--workspace', ws, '--run-id', 'verdict', '--no-tree'], c.io), c.err()).toBe(0);
    const list = events(ws, 'verdict');
    const refused = list.filter((e) => e.type === 'workflow.refused').map((e) => e.data.reason);
    expect(refused).toEqual(['the review asked for changes: PLAN_REVIEW can only go back to PLAN_REVISION (request_revision)']);
    expect(states(list).slice(0, 3)).toEqual(['PLANNING', 'PLAN_REVIEW', 'PLAN_REVISION']);
    expect(states(list).at(-1)).toBe('COMPLETED');
  });

  it('should refuse an unknown workflow and an empty goal, naming what is allowed', async () => {
    const ws = tempDir('a2a-sdlc-bad-');
    const c = capture();
    expect(await main(['run', '--workflow', 'waterfall', 'build it', '--workspace', ws], c.io)).not.toBe(0);
    expect(c.err()).toMatch(/--workflow waterfall: unknown workflow; known: sdlc/);
    expect(await main(['run', '--workflow', 'sdlc', '   ', '--workspace', ws], c.io)).not.toBe(0);
    expect(c.err()).toMatch(/goal: the goal is empty/);
    // in a git repository, steps build on each other's merges: a branch left for a PR would not do
    const repo = tempDir('a2a-sdlc-pr-');
    execFileSync('git', ['init', '-q', '-b', 'main', repo]);
    execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@l', 'commit', '-q', '--allow-empty', '-m', 'init']);
    expect(await main(['run', '--workflow', 'sdlc', 'build it', '--workspace', repo, '--on-complete', 'pr'], c.io)).not.toBe(0);
    expect(c.err()).toMatch(/git.onComplete is "pr", but a workflow run needs "merge"/);
    const bad = workflowFile(ws, { config: { workflow: { roles: { sceptic: { agent: '@nobody' } } } } });
    expect(await main(['run', bad, '--workspace', ws], c.io)).not.toBe(0);
    expect(c.err()).toMatch(/workflow\.roles\.sceptic\.agent/);
  });

  it('should pause at a step boundary, refuse what the paused state does not take, and resume where it was', async () => {
    const ws = exampleRepo();
    // every model turn takes a while, so that the run is still in its first steps when paused
    const script = exampleScript(() => 40);
    const file = workflowFile(ws, { script, config: { permissions: { auto_approve: ['command_execution'] }, workflow: { testCommand: 'node --test' } } });
    const c = capture();
    const running = main(['run', file, '--workspace', ws, '--run-id', 'paused', '--no-tree'], c.io);
    const store = new FileRunStore(ws);
    await waitFor('the workflow to start', () => states(safeEvents(store, 'paused')).length > 0, 8_000, c.out);
    const ctl = capture();
    expect(await main(['retry', 'paused', '--workspace', ws], ctl.io)).not.toBe(0);
    expect(ctl.err()).toMatch(/INVALID_STATE_TRANSITION: RETRY is not allowed while the workflow is [A-Z_]+ \(retry runs again a step that failed/);
    expect(await main(['pause', 'paused', '--workspace', ws], ctl.io)).toBe(0);
    expect(await main(['pause', 'paused', '--workspace', ws], ctl.io)).not.toBe(0);
    expect(ctl.err()).toMatch(/INVALID_STATE_TRANSITION: PAUSE is not allowed while the workflow is PAUSED/);
    expect(store.read('paused').paused?.by).toBeTruthy();
    await waitFor('PAUSED', () => states(safeEvents(store, 'paused')).includes('PAUSED'), 8_000, c.out);
    // a while paused (the log below says that nothing started meanwhile)
    await new Promise((r) => setTimeout(r, 300));
    expect(await main(['resume', 'paused', '--workspace', ws], ctl.io)).toBe(0);
    expect(ctl.out()).toMatch(/resumed: the workflow goes on in [A-Z_]+/);
    expect(await running).toBe(0);
    const list = events(ws, 'paused');
    const from = list.findIndex((e) => e.type === 'workflow.state' && e.data.state === 'PAUSED');
    const to = list.findIndex((e) => e.type === 'workflow.state' && e.data.resumed === true);
    expect(list.some((e) => e.type === 'run.unpaused')).toBe(true);
    expect(from).toBeGreaterThan(0);
    expect(to).toBeGreaterThan(from);
    expect(list.slice(from + 1, to).filter((e) => e.type === 'worker.deployed' || e.type === 'workflow.state' || e.type === 'workflow.decision')).toEqual([]);
    const s = states(list);
    expect(s[s.indexOf('PAUSED') + 1]).toBe(s[s.indexOf('PAUSED') - 1]);
    expect(s.at(-1)).toBe('COMPLETED');
    expect(store.read('paused').paused).toBeNull();
  });
});

function safeEvents(store: FileRunStore, runId: string): RunEvent[] {
  try {
    return store.events(runId);
  } catch {
    return [];
  }
}
