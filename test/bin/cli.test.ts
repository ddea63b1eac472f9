import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { RunEvent } from '../../machines/protocol.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { capture, tempDir } from '../helpers.js';

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
      ['{ "tasks": [', ['run', bad], /bad\.json is not valid JSON/],
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
    expect(c.err()).toContain('plan file not found');
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
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bin/a2a.ts'), 'run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--run-id', 'long', '--workspace', ws], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number>((r) => child.on('exit', (code) => r(code ?? -1)));
    const store = new FileRunStore(ws);
    for (let i = 0; i < 200 && !(existsSync(join(store.dir('long'), 'run.json')) && stdout.includes('+ w-a.2')); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
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
