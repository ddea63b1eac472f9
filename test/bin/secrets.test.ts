/**
 * Secrets never leave in clear: a run whose model writes the API key in its text, in a command,
 * in a file it reads back, in a question, in a child's prompt and result, then every file under
 * `.a2a/` and everything printed (the tree, `--json`, `a2a audit` as JSON and Markdown, `a2a
 * status`) is searched for the key: 0 hits; the markers say what was there.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { tempDir } from '../helpers.js';

const KEY = 'sk-test-SECRET123';

function capture() {
  let out = '';
  let err = '';
  return {
    io: { stdout: { write: (s: string) => ((out += s), true) }, stderr: { write: (s: string) => ((err += s), true) } } as never,
    text: () => out + err,
  };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

function workspace(): string {
  const ws = tempDir('a2a-secrets-');
  writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ permissions: { auto_approve: ['command_execution'] } }));
  writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'leak', tasks: [{ id: 't', agent: '@coder', prompt: 'Set up the API client' }] }));
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        {
          agent: 'coder',
          depth: 0,
          turns: [
            {
              text: `I will use the key ${KEY} for this.`,
              toolCalls: [
                { name: 'run_command', arguments: { command: `echo "calling with ${KEY}"` } },
                { name: 'write_file', arguments: { path: 'client.env', content: `API=${KEY}\n` } },
                { name: 'read_file', arguments: { path: 'client.env' } },
                { name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: `Is ${KEY} the right key?` } },
                { name: 'a2a_spawn_subtask', arguments: { agentType: '@coder', prompt: `Check that ${KEY} works`, expectedOutput: 'yes or no', blocking: true } },
              ],
            },
            { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: `Configured with ${KEY}` } }] },
          ],
        },
        { agent: 'coder', depth: 1, turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: `${KEY} works` } }] }] },
      ],
    }),
  );
  return ws;
}

describe('secrets', () => {
  let saved: string | undefined;
  beforeEach(() => {
    saved = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = KEY;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  });

  it('are written nowhere under .a2a/ and printed nowhere, whatever the model and the tools put them in', async () => {
    const ws = workspace();
    const printed: string[] = [];
    const run = async (args: string[], expected = 0) => {
      const c = capture();
      expect(await main(args, c.io), c.text()).toBe(expected);
      printed.push(c.text());
      return c.text();
    };
    const human = await run(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'leak-1', '--no-tree']);
    await run(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'leak-2', '--json']);
    await run(['audit', 'leak-1', '--workspace', ws, '--format', 'json']);
    await run(['audit', 'leak-1', '--workspace', ws, '--format', 'md']);
    await run(['status', '--run', 'leak-1', '--workspace', ws]);

    const files = filesUnder(join(ws, '.a2a'));
    const names = files.map((f) => f.slice(ws.length + 1));
    for (const expected of ['events.jsonl', 'audit.jsonl', 'checkpoint.json', 'inbox.jsonl', 'run.json', 'status.json']) {
      expect(names.some((n) => n.endsWith(`leak-1/${expected}`)), expected).toBe(true);
    }
    const hits = [...files.filter((f) => readFileSync(f, 'utf8').includes('SECRET123')).map((f) => f.slice(ws.length + 1)), ...printed.filter((p) => p.includes('SECRET123')).map(() => 'printed output')];
    expect(hits).toEqual([]);
    // and what was there is said: the key's name, not its value
    expect(readFileSync(join(ws, '.a2a/runs/leak-1/events.jsonl'), 'utf8')).toContain('[redacted:OPENAI_API_KEY]');
    expect(human).toContain('[redacted:OPENAI_API_KEY]');
    // the agent's own file keeps what the agent wrote there (it is the user's worktree, not a2a's record)
    expect(readFileSync(join(ws, 'client.env'), 'utf8')).toBe(`API=${KEY}\n`);
  }, 20_000);
});
