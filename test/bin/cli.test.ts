import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { RunEvent } from '../../machines/protocol/index.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { capture, tempDir } from '../helpers.js';
import { a2aProcess } from '../nats/cluster.js';

const root = resolve(import.meta.dirname, '..', '..');


describe('a2a run', () => {
  it('should run the OAuth example on the embedded default and show the tree, the inquiry, the failed child and the finish', async () => {
    const c = capture();
    const code = await main(['run', join(root, 'examples/oauth'), '--workspace', tempDir(), '--run-id', 'oauth-1'], c.io);
    const out = c.out();
    expect(code).toBe(0);
    for (const id of ['w-design\\.1', 'w-design\\.2', 'w-design\\.3']) expect(out).toMatch(new RegExp(`\\+ ${id} @architect spawned by w-design \\(depth 1\\)`));
    expect(out).toContain('? w-design.2 is idle: inquiry 1 sent');
    expect(out).toContain('! w-design.2 answered the inquiry: Blocked: I need the list of OAuth providers');
    expect(out).toContain('→ w-design a2a_send_subtask_message: Message sent to w-design.2.');
    expect(out).toContain('✗ w-design.3 failed → w-design: model call failed: model provider connection reset (simulated crash)');
    expect(out).toContain('✓ w-design partial → orchestrator: # OAuth login: architecture plan');
    expect(out).toMatch(/└─ design \(w-design\)\s+@architect\s+partial\s+d0/);
    expect(out).toMatch(/├─ w-design.1\s+@architect\s+success\s+d1/);
    expect(out).toMatch(/└─ w-design.3\s+@architect\s+failed\s+d1/);
    expect(out).toContain('Run oauth-1: completed');
    expect(out).toContain('## Frontend\nA LoginButton per provider');
  });

  it('should print correlated JSON lines with --json', async () => {
    const c = capture();
    const ws = tempDir();
    const code = await main(['run', join(root, 'examples/oauth'), '--json', '--workspace', ws, '--run-id', 'oauth-json'], c.io);
    expect(code).toBe(0);
    const events = c
      .out()
      .trim()
      .split('\n')
      .map((l) => RunEvent.parse(JSON.parse(l)));
    expect(events.every((e) => e.runId === 'oauth-json')).toBe(true);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i));
    const spawned = events.filter((e) => e.type === 'subtask.spawned');
    expect(spawned.map((e) => [e.subTaskId, e.parentId, e.taskId, e.workerId, e.depth])).toEqual([
      ['w-design.1', 'w-design', 'design', 'w-design', 1],
      ['w-design.2', 'w-design', 'design', 'w-design', 1],
      ['w-design.3', 'w-design', 'design', 'w-design', 1],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', data: { status: 'completed' } });
    // the same events are in the run's log
    expect(new FileRunStore(ws).events('oauth-json')).toHaveLength(events.length);
  });

  it('should tell the last step and final state of a session before its owner hears it ended; the tree of a standalone run has no orchestrator', async () => {
    const c = capture();
    expect(await main(['run', join(root, 'examples/oauth'), '--json', '--workspace', tempDir(), '--run-id', 'oauth-order'], c.io)).toBe(0);
    const events = c
      .out()
      .trim()
      .split('\n')
      .map((l) => RunEvent.parse(JSON.parse(l)));
    const at = (match: (e: RunEvent) => boolean) => events.findIndex(match);
    const completing = at((e) => e.type === 'tool.called' && e.subTaskId === 'w-design' && e.data.name === 'a2a_subtask_complete');
    const final = at((e) => e.type === 'session.state' && e.subTaskId === 'w-design' && e.data.state === 'completed');
    const completed = at((e) => e.type === 'task.completed' && e.taskId === 'design');
    expect(completing).toBeGreaterThan(0);
    expect(completing).toBeLessThan(final);
    expect(final).toBeLessThan(completed);
    for (const child of ['w-design.1', 'w-design.2']) {
      expect(at((e) => e.type === 'session.state' && e.subTaskId === child && e.data.state === 'completed')).toBeLessThan(at((e) => e.type === 'subtask.result' && e.subTaskId === child));
    }
    const tree = capture();
    expect(await main(['run', 'say hello', '--standalone', '--workspace', tempDir()], tree.io)).toBe(0);
    expect(tree.out()).toMatch(/\nrun \(standalone\) {2}completed/);
    expect(tree.out()).not.toMatch(/^orchestrator/m);
  });

  it('should say at the start, on stderr and as a run event, that commands run without a sandbox', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ sandbox: { mode: 'none' } }));
    const c = capture();
    await main(['run', 'say hello', '--json', '--workspace', ws, '--run-id', 'unconfined-1'], c.io);
    expect(c.err()).toContain('a2a: warning: sandbox.mode is "none": run_command runs commands without a sandbox');
    const warnings = c
      .out()
      .trim()
      .split('\n')
      .map((l) => RunEvent.parse(JSON.parse(l)))
      .filter((e) => e.type === 'warning');
    expect(warnings[0]!.data).toMatchObject({ sandbox: 'none', message: expect.stringContaining('every command asks a person') });
  });

  it('should reject bad input with a message that says what is wrong and what is allowed', async () => {
    const ws = tempDir();
    const bad = join(ws, 'bad.json');
    const cases: Array<[string, string[], RegExp]> = [
      ['{ "tasks": [', ['run', bad], /bad\.json is not valid JSON: line 1, column 13: unexpected end of the file\n {2}\{ "tasks": \[\n {14}\^/],
      // where, why, the line with a caret; the content is not repeated after it
      ['{\n  "tasks": [\n    { "id": "a", "prompt": "p", },\n  ]\n}\n', ['run', bad], /bad\.json is not valid JSON: line 3, column 33: Expected double-quoted property name\n {6}\{ "id": "a", "prompt": "p", \},\n {34}\^\n/],
      ['{ "tasks": [] }', ['run', bad], /bad\.json: invalid plan:\n {2}- tasks: a plan needs at least one task/],
      ['{ "tasks": [{ "id": "a b", "prompt": "x" }] }', ['run', bad], /tasks\[0\]\.id: letters, digits/],
      ['{ "tasks": [{ "id": "a", "prompt": "x", "agent": "@wizard" }] }', ['run', bad], /tasks\[0\]\.agent: Unknown agent type "@wizard"\. Available types: @agent, @architect/],
      [
        '{ "tasks": [{ "id": "a", "prompt": "x", "dependsOn": ["b"] }, { "id": "b", "prompt": "y", "dependsOn": ["a"] }] }',
        ['run', bad],
        /dependency cycle: a → b → a/,
      ],
      ['{ "tasks": [{ "id": "a", "prompt": "x" }] }', ['run', bad, '--max-depth', 'two'], /--max-depth must be an integer >= 0, got "two"/],
    ];
    for (const [content, args, message] of cases) {
      writeFileSync(bad, content);
      const c = capture();
      expect(await main([...args, '--workspace', ws], c.io), content).toBe(2);
      expect(c.err(), content).toMatch(message);
    }
    const c = capture();
    expect(await main(['run', join(ws, 'missing.json'), '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain(`${join(ws, 'missing.json')}: no such file or directory. Pass a plan file`);
  });

  it('should take the run as --run everywhere (or as the argument where there is one), and say which run it took when none was named', async () => {
    const ws = tempDir();
    for (const id of ['r-one', 'r-two']) expect(await main(['run', 'say hi', '--standalone', '--workspace', ws, '--run-id', id], capture().io)).toBe(0);
    const implicit = capture();
    expect(await main(['audit', '--workspace', ws], implicit.io)).toBe(0);
    expect(implicit.err()).toContain('a2a: run r-two (the latest; name another with --run <runId>)');
    expect(implicit.out()).toContain('"runId":"r-two"');
    for (const args of [['audit', '--run', 'r-one'], ['audit', 'r-one'], ['status', 'r-one', '--json'], ['status', '--run', 'r-one', '--json'], ['artifacts', '--run', 'r-one']]) {
      const c = capture();
      await main([...args, '--workspace', ws], c.io);
      expect(c.err(), args.join(' ')).not.toContain('r-two');
      expect(c.err(), args.join(' ')).not.toContain('unknown option');
    }
    for (const command of ['audit', 'stop', 'pause', 'retry', 'artifacts', 'status']) {
      const c = capture();
      expect(await main([command, 'r-one', '--run', 'r-two', '--workspace', ws], c.io), command).toBe(2);
      expect(c.err(), command).toContain('two runs named: r-one and --run r-two; name it once');
    }
    const none = capture();
    expect(await main(['stop', '--workspace', ws], none.io)).toBe(2);
    expect(none.err()).toContain('no run in progress in');
    expect(none.err()).toContain('name one with --run <runId>');
  });

  it('should print its version, and help with examples for every command and the machines graph knows', async () => {
    const version = capture();
    expect(await main(['--version'], version.io)).toBe(0);
    expect(version.out().trim()).toBe(JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8')).version);
    const top = capture();
    expect(await main(['--help'], top.io)).toBe(0);
    const commands = [...top.out().matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    expect(commands.length).toBeGreaterThan(15);
    for (const command of commands) {
      const help = capture();
      expect(await main([command, '--help'], help.io), command).toBe(0);
      expect(help.out(), command).toMatch(new RegExp(`\\nExamples:\\n {2}\\$ a2a ${command}`));
    }
    const graph = capture();
    await main(['graph', '--help'], graph.io);
    for (const machine of ['orchestrator', 'worker', 'subtask', 'idleInquiry', 'taskBranch', 'externalTask', 'sdlcWorkflow']) expect(graph.out()).toContain(machine);
    const model = capture();
    await main(['model', '--help'], model.io);
    expect(model.out()).toMatch(/profile +a model profile/);
  });

  it('should refuse a plan key it does not know, naming the nearest one, instead of dropping what it meant', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ scirpt: 's.json', tasks: [{ id: 'a', agnt: '@planner', prompt: 'p' }] }));
    const c = capture();
    expect(await main(['run', join(ws, 'plan.json'), '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain('tasks[0]: unknown key "agnt" (did you mean "agent"?); allowed: id, agent, prompt,');
    expect(c.err()).toContain('(root): unknown key "scirpt" (did you mean "script"?); allowed: id, name, description, tasks, script, config');
    expect(readdirSync(ws)).toEqual(['plan.json']); // nothing ran
  });

  it('should take a mistyped path for a typo (with the nearest path), not for a task; a task in quotes still runs', async () => {
    const ws = tempDir();
    mkdirSync(join(ws, 'examples', 'oauth'), { recursive: true });
    writeFileSync(join(ws, 'examples', 'oauth', 'plan.json'), JSON.stringify({ tasks: [{ id: 'a', prompt: 'p' }] }));
    const cwd = process.cwd();
    process.chdir(ws);
    try {
      for (const [target, said] of [
        ['examples/oauht', 'examples/oauht: no such file or directory (did you mean examples/oauth?)'],
        ['exmaples/oauth', 'exmaples/oauth: no such file or directory (did you mean examples/oauth?)'],
        ['examples/elsewhere', 'examples/elsewhere: no such file or directory. Pass a plan file, a directory with plan.json or workflow.json, or a task in quotes'],
        ['plan.jsn', 'plan.jsn: no such file or directory. Pass'],
        ['exampels', 'exampels: no such file or directory (did you mean examples?)'],
      ]) {
        const c = capture();
        expect(await main(['run', target!, '--workspace', ws, '--standalone'], c.io), target).toBe(2);
        expect(c.err(), target).toContain(said);
      }
      expect(readdirSync(ws).sort()).toEqual(['examples']); // no run, no worktree
      const c = capture();
      expect(await main(['run', 'explain the files in examples/oauth', '--workspace', ws, '--standalone', '--json'], c.io)).toBe(0);
    } finally {
      process.chdir(cwd);
    }
  });

  it('should report a limit hit to the agent as a tool error and go on', async () => {
    const ws = tempDir();
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [1, 2, 3].map((i) => ({ agentType: '@agent', prompt: `p${i}`, expectedOutput: 'x' })) } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'did it myself' } }] },
            ],
          },
        ],
      }),
    );
    const c = capture();
    const code = await main(['run', 'split this', '--script', join(ws, 'script.json'), '--max-subtasks', '2', '--workspace', ws], c.io);
    expect(code).toBe(0);
    expect(c.out()).toContain('⚠ w-task limit: SUBTASK_LIMIT_EXCEEDED: Sub-task limit reached: worker w-task has spawned 0 of at most 2 sub-tasks');
    expect(c.out()).toContain('did it myself');
  });
});

describe('a2a agents', () => {
  it('should list the registry with what each agent is good at', async () => {
    const c = capture();
    expect(await main(['agents', '--workspace', tempDir()], c.io)).toBe(0);
    expect(c.out()).toContain('@architect  (builtin, spawns to depth 2)');
    expect(c.out()).toContain('@reviewer  (builtin, no sub-tasks)');
    expect(c.out()).toContain('good at: System design and API architecture');
  });
});

describe('a2a stop', () => {
  it('should cancel a run in progress in another process; every worker and sub-task reports cancelled', async () => {
    const ws = tempDir();
    writeFileSync(
      join(ws, 'plan.json'),
      JSON.stringify({
        tasks: [
          { id: 'a', agent: '@architect', prompt: 'split' },
          { id: 'b', agent: '@coder', prompt: 'wait forever' },
        ],
      }),
    );
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'architect',
            depth: 0,
            turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [1, 2].map((i) => ({ agentType: '@coder', prompt: `part ${i}`, expectedOutput: 'x' })) } }] }, { text: 'waiting' }],
          },
          { agent: 'coder', turns: [{ hang: true }] },
        ],
      }),
    );
    // the bundle the suite builds once (test/globalSetup.ts): it starts in a fraction of a second,
    // where tsx compiled every source file first (seconds on a fresh clone, over 10 s under load)
    const proc = a2aProcess(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--run-id', 'long', '--workspace', ws], root);
    const exited = proc.exited;
    const store = new FileRunStore(ws);
    for (let i = 0; i < 300 && !(existsSync(join(store.dir('long'), 'run.json')) && proc.out().includes('+ w-a.2')); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    const stdout = proc.out();
    expect(stdout).toContain('+ w-a.2');
    const c = capture();
    expect(await main(['stop', '--workspace', ws], c.io)).toBe(0);
    expect(c.out()).toContain('stop requested for run long');
    expect(await exited).toBe(130);
    const results = store.events('long').filter((e) => e.type === 'subtask.result');
    expect(new Set(results.map((e) => `${e.subTaskId}:${e.data.status}`))).toEqual(
      new Set(['w-a.1:cancelled', 'w-a.2:cancelled', 'w-a:cancelled', 'w-b:cancelled']),
    );
    expect(results).toHaveLength(4);
    expect(store.read('long').status).toBe('cancelled');
    expect(JSON.parse(readFileSync(join(store.dir('long'), 'run.json'), 'utf8')).summary.status).toBe('cancelled');
  });
});
