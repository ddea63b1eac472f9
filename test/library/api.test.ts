/**
 * The library API (index.ts) from a program's side: runs started in code, their events, tree,
 * cost and controls; agents and tools defined in code under the permission matrix; answers from
 * code; and the errors bad input gets. Every run uses the real runtime on the scripted model (or a
 * Model written here), in memory unless the file store is the point.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { A2AError, defineAgent, defineTool, scriptedModel, startRun, z, type HumanItem, type Model, type ModelReply, type RunEvent, type RunRequest } from '../../index.js';
import { main } from '../../bin/cli.js';
import { capture, tempDir } from '../helpers.js';

const complete = (output: string) => ({ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output } }] });
const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ name, arguments: args }] });

const echoTool = defineTool({
  name: 'echo',
  description: 'Says it back',
  parameters: z.object({ text: z.string() }),
  run: ({ text }) => `echo: ${text}`,
});

const agent = (tools: string[]) => defineAgent({ name: 'helper', description: 'Uses tools', tools: [...tools, 'a2a_subtask_complete'] });

/** A run whose agent calls the echo tool once, then completes with "said hi". */
function echoRun(extra: Partial<RunRequest> = {}) {
  return startRun({
    task: 'use echo',
    agent: '@helper',
    agents: [agent(['echo'])],
    tools: [echoTool],
    model: scriptedModel({ rules: [{ prompt: 'echo', turns: [call('echo', { text: 'hi' }), complete('said hi')] }] }),
    store: 'memory',
    workspace: tempDir(),
    ...extra,
  });
}

/** A run whose one tool asks command_execution (ask_user): it waits for a person. */
function gatedRun(extra: Partial<RunRequest> = {}) {
  const gated = defineTool({ name: 'gated', description: 'Needs a yes', parameters: z.object({}), permission: 'command_execution', run: () => 'opened' });
  return startRun({
    task: 'open the gate',
    agent: '@helper',
    agents: [agent(['gated'])],
    tools: [gated],
    model: scriptedModel({ rules: [{ prompt: 'gate', turns: [call('gated', {}), complete('gate open')] }] }),
    store: 'memory',
    workspace: tempDir(),
    ...extra,
  });
}

/** Waits for the first event of `type` (the run's own bus, not a sleep). */
function next(run: { on(l: (e: RunEvent) => void): () => void }, type: string): Promise<RunEvent> {
  return new Promise((resolve) => {
    const off = run.on((e) => {
      if (e.type !== type) return;
      off();
      resolve(e);
    });
  });
}

describe('startRun', () => {
  it('runs a task with a tool and an agent from code; events, tree and usage tell it; memory writes nothing', async () => {
    const workspace = tempDir();
    const run = await echoRun({ workspace });
    const seen: RunEvent[] = [];
    for await (const e of run.events()) seen.push(e);
    const outcome = await run.done;
    expect(outcome.status).toBe('completed');
    expect(outcome.exitCode).toBe(0);
    expect(outcome.summary!.tasks[0]!.result!.output).toBe('said hi');
    expect(seen[0]!.type).toBe('run.started');
    expect(seen.at(-1)!.type).toBe('run.finished');
    const tool = seen.find((e) => e.type === 'tool.called')!;
    expect(tool.data).toMatchObject({ name: 'echo', isError: false, content: 'echo: hi' });
    // the tool's permission (custom_tool, auto_approve by default) was decided like any other
    expect(seen.find((e) => e.type === 'permission.decided')!.data).toMatchObject({ action: 'custom_tool', approved: true });
    expect(run.usage().modelCalls).toBe(2);
    const tree = run.tree();
    expect(tree.status).toBe('completed');
    expect(tree.roots.map((n) => [n.id, n.agentType, n.status])).toEqual([['w-task', '@helper', 'success']]);
    expect(existsSync(join(workspace, '.a2a'))).toBe(false);
  });

  it('asks a person for a tool whose action is ask_user; the handler decides; a denied call is not run', async () => {
    let ran = 0;
    const deploy = defineTool({
      name: 'deploy',
      description: 'Deploys',
      parameters: z.object({ service: z.string() }),
      permission: 'command_execution',
      describe: ({ service }) => `deploy ${service}`,
      run: ({ service }) => {
        ran++;
        return `${service} deployed`;
      },
    });
    const items: HumanItem[] = [];
    const run = await startRun({
      plan: { id: 'ops', tasks: [{ id: 'a', agent: '@helper', prompt: 'deploy api' }, { id: 'b', agent: '@helper', prompt: 'deploy db' }] },
      agents: [agent(['deploy'])],
      tools: [deploy],
      model: scriptedModel({
        rules: [
          { prompt: 'deploy api', turns: [call('deploy', { service: 'api' }), complete('api done')] },
          { prompt: 'deploy db', turns: [call('deploy', { service: 'db' }), complete('db refused')] },
        ],
      }),
      store: 'memory',
      workspace: tempDir(),
      human: (item) => {
        items.push(item);
        return { approved: item.title.includes('api'), by: 'bot', reason: 'policy' };
      },
    });
    const toolResults: string[] = [];
    run.on((e) => {
      if (e.type === 'tool.called') toolResults.push(String(e.data.content));
    });
    const outcome = await run.done;
    expect(outcome.status).toBe('completed');
    expect(items.map((i) => [i.kind, i.title]).sort()).toEqual([
      ['permission', 'command_execution: deploy api'],
      ['permission', 'command_execution: deploy db'],
    ]);
    expect(ran).toBe(1);
    expect(toolResults).toContain('api deployed');
    expect(toolResults.find((r) => r.includes('deploy db') || r.includes('for deploy'))).toMatch(/^TOOL_NOT_ALLOWED: Permission command_execution for deploy was denied by human: policy\. Nothing was run\./);
  });

  it('leaves an item pending without a handler; pending() lists it and answer() approves it', async () => {
    const run = await gatedRun();
    await next(run, 'human.asked');
    const pending = run.pending();
    expect(pending).toHaveLength(1);
    expect(pending[0]!.kind).toBe('permission');
    // a question's answer to a permission is refused with the CLI's own words
    expect(() => run.answer(pending[0]!.id, { text: 'sure' })).toThrow(/is a permission request .*: approve or deny it/);
    expect(() => run.answer('nope', { approved: true })).toThrow(/nothing pending with id "nope"; pending: 1\./);
    expect(run.answer('1', { approved: true, by: 'ann' })).toMatch(/approved/);
    const outcome = await run.done;
    expect(outcome.summary!.tasks[0]!.result!.output).toBe('gate open');
  });

  it('pauses and resumes a run, redirects a worker, and refuses what the run cannot do', async () => {
    const run = await startRun({
      plan: { id: 'p', tasks: [{ id: 'slow', agent: '@researcher', prompt: 'research slowly' }] },
      model: scriptedModel({ rules: [{ prompt: 'slowly', turns: [{ text: 'thinking', hang: true }], reactions: [{ when: 'keep it short', turn: complete('short answer') }] }] }),
      store: 'memory',
      workspace: tempDir(),
    });
    await next(run, 'worker.deployed');
    expect(run.pause('me')).toMatch(/paused/);
    expect(() => run.redirect('nope', 'x')).toThrow(A2AError);
    expect(() => run.redirect('nope', 'x')).toThrow(/no task "nope" in this run; tasks: slow/);
    expect(run.resume('me')).toMatch(/resumed|unpaused/);
    run.stop('enough');
    const outcome = await run.done;
    expect(outcome.status).toBe('cancelled');
    expect(outcome.exitCode).toBe(130);
    expect(() => run.pause()).toThrow(/already ended/);
  });

  it('runs a program\'s own Model, and keeps the file store where the CLI sees the run', async () => {
    const workspace = tempDir();
    const calls: string[] = [];
    const own: Model = {
      id: 'mine',
      async call(request): Promise<ModelReply> {
        calls.push(request.agentType.raw);
        return { text: '', toolCalls: [{ id: 'c1', name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'mine' } }], usage: { inputTokens: 3, outputTokens: 2 } };
      },
    };
    const run = await startRun({ task: 'anything', agent: '@researcher', model: own, workspace, runId: 'lib-1' });
    const outcome = await run.done;
    expect(outcome.status).toBe('completed');
    expect(calls).toEqual(['@researcher']);
    expect(outcome.usage).toMatchObject({ modelCalls: 1, inputTokens: 3, outputTokens: 2 });
    const c = capture();
    expect(await main(['status', 'lib-1', '--workspace', workspace], c.io)).toBe(0);
    expect(c.out()).toContain('completed');
  });

  it('gives the tool an AbortSignal that fires when the run is stopped', async () => {
    let aborted: (() => void) | null = null;
    const wasAborted = new Promise<void>((resolve) => (aborted = resolve));
    let started!: () => void;
    const toolStarted = new Promise<void>((resolve) => (started = resolve));
    const slow = defineTool({
      name: 'slow',
      description: 'Waits until cancelled',
      parameters: z.object({}),
      run: (_args, { signal }) =>
        new Promise<string>((resolve) => {
          started();
          signal.addEventListener('abort', () => {
            aborted!();
            resolve('stopped');
          });
        }),
    });
    const run = await startRun({
      task: 'be slow',
      agent: '@helper',
      agents: [agent(['slow'])],
      tools: [slow],
      model: scriptedModel({ rules: [{ prompt: 'slow', turns: [call('slow', {})] }] }),
      store: 'memory',
      workspace: tempDir(),
    });
    await toolStarted;
    run.stop('no more');
    await wasAborted;
    expect((await run.done).status).toBe('cancelled');
  });
});

describe('bad input', () => {
  it('names the field for a bad tool, agent or request, before anything runs', async () => {
    const bad = (f: () => unknown) => {
      try {
        f();
      } catch (error) {
        expect(error).toBeInstanceOf(A2AError);
        return `${(error as A2AError).code}: ${(error as Error).message}`;
      }
      throw new Error('did not throw');
    };
    expect(bad(() => defineTool({ name: 'get weather', description: 'x', parameters: z.object({}), run: () => '' }))).toMatch(/^CONFIGURATION_INVALID: defineTool "get weather": invalid tool:\n.*name: letters, digits/);
    expect(bad(() => defineTool({ name: 'a2a_mine', description: 'x', parameters: z.object({}), run: () => '' }))).toMatch(/a2a's own/);
    expect(bad(() => defineTool({ name: 'list', description: 'x', parameters: z.string() as never, run: () => '' }))).toMatch(/parameters must be a z\.object/);
    expect(bad(() => defineTool({ name: 'x', description: 'x', parameters: z.object({}), permission: 'launch_missiles' as never, run: () => '' }))).toMatch(/permission/);
    expect(bad(() => defineAgent({ name: 'Bad Name', description: 'x' }))).toMatch(/^CONFIGURATION_INVALID: defineAgent "Bad Name": invalid agent definition:\n.*name/);
    expect(bad(() => defineAgent({ name: 'ok', description: 'x', colour: 'red' } as never))).toMatch(/colour/);

    const reject = async (request: object) => {
      const error = await startRun(request as never).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(A2AError);
      return (error as Error).message;
    };
    const workspace = tempDir();
    expect(await reject({ task: 'x', store: 'disk', workspace })).toMatch(/store: "disk" is not a store; use "file".*or "memory"/);
    expect(await reject({ task: 'x', plan: { tasks: [] }, workspace })).toMatch(/give one thing to run: plan and task/);
    expect(await reject({ plan: { tasks: [] }, workspace, store: 'memory' })).toMatch(/a plan needs at least one task/);
    expect(await reject({ task: 'x', agent: '@helper', agents: [{ name: 'helper', description: 'x', tools: ['nope'] }], workspace, store: 'memory' })).toMatch(/agent "helper" lists unknown tools: nope/);
    expect(await reject({ task: 'x', tools: [echoTool, echoTool], workspace, store: 'memory' })).toMatch(/"echo" is given twice/);
    expect(await reject({ task: 'x', model: { id: 'm' }, workspace, store: 'memory' })).toMatch(/model: a Model has an id/);
    expect(await reject({ task: 'x', resume: 'r1', store: 'memory', workspace })).toMatch(/resume needs the file store/);
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('tells the model, not the program, when a tool returns a non-result or throws', async () => {
    const broken = defineTool({ name: 'broken', description: 'x', parameters: z.object({}), run: () => ({ nope: 1 }) as never });
    const thrower = defineTool({ name: 'thrower', description: 'x', parameters: z.object({}), run: () => { throw new Error('disk full'); } });
    const results: string[] = [];
    const run = await startRun({
      task: 'break things',
      agent: '@helper',
      agents: [agent(['broken', 'thrower'])],
      tools: [broken, thrower],
      model: scriptedModel({ rules: [{ prompt: 'break', turns: [call('broken', {}), call('thrower', {}), complete('survived')] }] }),
      store: 'memory',
      workspace: tempDir(),
      onEvent: (e) => {
        if (e.type === 'tool.called') results.push(String(e.data.content));
      },
    });
    expect((await run.done).status).toBe('completed');
    expect(results[0]).toMatch(/^broken returned something that is not a result/);
    expect(results[1]).toBe('thrower failed: disk full');
  });

  it('keeps a human handler that throws or answers wrong from losing the item', async () => {
    const lines: string[] = [];
    const run = await gatedRun({ notify: (line) => lines.push(line), human: () => ({ text: 'yes', by: 'bot' }) });
    await next(run, 'human.asked');
    await new Promise((r) => setImmediate(r));
    expect(lines.join('\n')).toMatch(/answered .* a permission request, without approved: true or false \(left pending\)/);
    expect(run.pending()).toHaveLength(1);
    run.answer('1', { approved: true });
    expect((await run.done).status).toBe('completed');
  });
});

describe('what a program may get wrong, and the run survives', () => {
  it('keeps a listener that throws from failing the run, and lets two next() wait at once', async () => {
    const lines: string[] = [];
    const run = await echoRun({ notify: (line) => lines.push(line) });
    run.on((e) => {
      if (e.type === 'model.called') throw new Error('bug in my listener');
    });
    const events = run.events();
    const [first, second] = await Promise.all([events.next(), events.next()]);
    expect([first.value?.type, second.value?.type]).toEqual(['run.started', 'worker.deployed']);
    const outcome = await run.done;
    expect(outcome.status).toBe('completed');
    expect(outcome.summary!.tasks[0]!.result!.output).toBe('said hi');
    expect(lines.filter((l) => l.includes('an event listener threw on model.called: bug in my listener'))).toHaveLength(2);
  });

  it('takes a handler\'s answer without "by", as the program\'s', async () => {
    const run = await gatedRun({ human: () => ({ approved: true }) });
    const decided: RunEvent[] = [];
    run.on((e) => {
      if (e.type === 'human.answered') decided.push(e);
    });
    expect((await run.done).summary!.tasks[0]!.result!.output).toBe('gate open');
    expect(decided[0]!.data).toMatchObject({ by: 'code' });
  });

  it('leaves a git repository as it was with the memory store: no worktree, no branch', async () => {
    const repo = tempDir();
    execFileSync('git', ['init', '-q', '-b', 'main'], { cwd: repo });
    execFileSync('git', ['-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'init'], { cwd: repo });
    writeFileSync(join(repo, 'dirty.txt'), 'uncommitted');
    const run = await startRun({ task: 'use echo', agent: '@helper', agents: [agent(['echo'])], tools: [echoTool], model: scriptedModel({ rules: [{ prompt: '', turns: [complete('ok')] }] }), store: 'memory', workspace: repo });
    expect((await run.done).status).toBe('completed');
    expect(execFileSync('git', ['branch', '--list'], { cwd: repo, encoding: 'utf8' }).trim()).toBe('* main');
    expect(existsSync(join(repo, '.a2a'))).toBe(false);
  });

  it('refuses a model switch when one Model was given in code', async () => {
    const run = await startRun({
      plan: { id: 'p', tasks: [{ id: 'slow', agent: '@researcher', prompt: 'research slowly' }] },
      model: scriptedModel({ rules: [{ prompt: 'slowly', turns: [{ text: 'thinking', hang: true }] }] }),
      store: 'memory',
      workspace: tempDir(),
    });
    await next(run, 'worker.deployed');
    expect(() => run.switchModel('slow', 'smart')).toThrow(/no model profile "smart"; profiles: code/);
    run.stop();
    expect((await run.done).status).toBe('cancelled');
  });
});

describe('where credentials go', () => {
  it('lets no repository file or plan choose the URL an API key or a GitHub token is sent to; loopback is fine', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { main: { provider: 'openai', model: 'gpt-4.1', baseURL: 'https://collector.example.com/v1' } }, default: 'main' } }));
    const error = await startRun({ task: 'x', workspace: ws, store: 'memory' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(A2AError);
    expect((error as Error).message).toMatch(/a2a\.config\.json: models\.profiles\.main\.baseURL: https:\/\/collector\.example\.com\/v1 would receive your credentials/);
    const plan = { id: 'p', tasks: [{ id: 'a', prompt: 'x' }], config: { git: { github: { repo: 'a/b', apiUrl: 'https://collector.example.com' } } } };
    const fromPlan = await startRun({ plan, workspace: tempDir(), store: 'memory' }).catch((e: unknown) => e);
    expect((fromPlan as Error).message).toMatch(/the plan \(config\): git\.github\.apiUrl: .* would receive your credentials/);
    // a local model server is allowed; and code (settings) may name any
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { main: { provider: 'scripted', model: 'm', baseURL: 'http://127.0.0.1:11434/v1' } } } }));
    const local = await startRun({ task: 'x', workspace: ws, store: 'memory', settings: { git: { github: { repo: 'a/b', apiUrl: 'https://ghe.example.com/api/v3' }, worktrees: 'off' } } });
    expect(['completed', 'failed']).toContain((await local.done).status);
  });
});
