import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedClock } from 'xstate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileLockTable } from '../../actors/session/fileLocks.js';
import type { AgentDefinition } from '../../actors/config/registry.js';
import { AgentRegistry } from '../../actors/config/registry.js';
import { codingTools, globToRegExp } from '../../actors/tools/coding.js';
import { ToolCatalog, childIds, type ToolContext } from '../../actors/tools/index.js';
import type { PermissionAnswer, PermissionAsk } from '../../actors/tools/types.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { bubblewrapRunner, unconfinedRunner } from '../../adapters/sandbox/index.js';
import type { CommandRunner } from '../../machines/ports.js';

const catalog = new ToolCatalog([...codingTools]);
const coder: AgentDefinition = {
  capability: {
    id: 'coder',
    name: 'coder',
    description: 'test coder',
    strengths: [],
    weaknesses: [],
    canSpawnSubTasks: false,
    tools: codingTools.map((t) => t.name),
    source: 'builtin',
  },
  systemPrompt: '',
  files: [],
};

interface TestContext extends ToolContext {
  asks: PermissionAsk[];
}

function baseContext(
  worktree: string,
  options: { id?: string; answer?: PermissionAnswer; locks?: FileLockTable; signal?: AbortSignal; commands?: CommandRunner } = {},
): TestContext {
  const asks: PermissionAsk[] = [];
  return {
    asks,
    spec: { id: options.id ?? 'st-1' } as SessionSpec,
    worktree,
    signal: options.signal ?? new AbortController().signal,
    permit: async (ask) => {
      asks.push(ask);
      return options.answer ?? { approved: true, decidedBy: 'policy' };
    },
    locks: options.locks ?? new FileLockTable(),
    registry: new AgentRegistry([]),
    family: null,
    updates: [],
    ids: childIds(),
    clock: new SimulatedClock(),
    commands: options.commands ?? bubblewrapRunner(),
  };
}

/** Polls until `done` holds: waits on a condition, never a fixed sleep. */
async function until(done: () => boolean, what: string, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const context = baseContext;
const call = (ctx: ToolContext, name: string, args: Record<string, unknown>) => catalog.run({ id: 'c1', name, arguments: args }, coder, ctx);

// created at load time: the it.each tables below name paths in them
const worktree = tempDir('a2a-wt-');
const outside = tempDir('a2a-outside-');
beforeAll(() => {
  writeFileSync(join(outside, 'secret.txt'), 'secret\n');
  mkdirSync(join(worktree, 'src', 'nested'), { recursive: true });
  writeFileSync(join(worktree, 'src', 'a.ts'), 'export const a = 1;\nexport const b = 2;\n');
  writeFileSync(join(worktree, 'src', 'nested', 'c.test.ts'), 'test("c", () => {});\n');
  writeFileSync(join(worktree, 'README.md'), '# readme\nconst a = 1;\n');
  writeFileSync(join(worktree, 'logo.png'), Buffer.from([137, 80, 78, 71, 0, 0, 0, 13]));
  mkdirSync(join(worktree, '.git'));
  writeFileSync(join(worktree, '.git', 'HEAD'), 'const a = 1;\n');
  mkdirSync(join(worktree, 'node_modules', 'dep'), { recursive: true });
  writeFileSync(join(worktree, 'node_modules', 'dep', 'index.js'), 'const a = 1;\n');
  symlinkSync(join(outside, 'secret.txt'), join(worktree, 'link-file'));
  symlinkSync(outside, join(worktree, 'link-dir'));
  symlinkSync(join(outside, 'created-through-dangling.txt'), join(worktree, 'dangling'));
  symlinkSync(join(worktree, 'src', 'a.ts'), join(worktree, 'inside-link.ts'));
});
afterAll(() => {
  rmSync(worktree, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe('coding tools: confinement to the worktree', () => {
  const escapes = (): Array<[string, string]> => [
    ['a parent directory', '../outside.txt'],
    ['".." in the middle', 'src/../../outside.txt'],
    ['an absolute path elsewhere', join(outside, 'secret.txt')],
    ['a symlinked file pointing outside', 'link-file'],
    ['a file in a symlinked directory pointing outside', 'link-dir/secret.txt'],
    ['a dangling symlink pointing outside', 'dangling'],
  ];

  it.each(escapes())('should refuse to read through %s', async (_what, path) => {
    const outcome = await call(context(worktree), 'read_file', { path });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: ".*" resolves to .*, which is outside the worktree .*Only files inside the worktree can be used/);
    expect(outcome.content).not.toContain('secret\n');
  });

  it.each(escapes())('should refuse to write through %s, and ask nobody', async (_what, path) => {
    const ctx = context(worktree);
    const write = await call(ctx, 'write_file', { path, content: 'pwned' });
    expect(write.content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
    const edit = await call(ctx, 'edit_file', { path, old_string: 'secret', new_string: 'pwned' });
    expect(edit.content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
    expect(ctx.asks).toEqual([]);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
    expect(existsSync(join(outside, 'created-through-dangling.txt'))).toBe(false);
    expect(existsSync(join(worktree, '..', 'outside.txt'))).toBe(false);
  });

  it('should say where a symlinked path really leads', async () => {
    const outcome = await call(context(worktree), 'read_file', { path: 'link-dir/secret.txt' });
    expect(outcome.content).toContain(`"link-dir/secret.txt" resolves to ${join(outside, 'secret.txt')} (through a symbolic link)`);
  });

  it('should refuse to create a file through a symlinked directory', async () => {
    const outcome = await call(context(worktree), 'write_file', { path: 'link-dir/new/deep.txt', content: 'x' });
    expect(outcome.content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: "link-dir\/new\/deep.txt" resolves to /);
    expect(existsSync(join(outside, 'new'))).toBe(false);
  });

  it('should refuse to list, search or run commands outside the worktree', async () => {
    const ctx = context(worktree);
    for (const path of ['..', 'link-dir', outside]) {
      expect((await call(ctx, 'list_files', { path })).content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
      expect((await call(ctx, 'search', { pattern: 'secret', path })).content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
      expect((await call(ctx, 'run_command', { command: 'cat secret.txt', cwd: path })).content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
    }
    expect(ctx.asks).toEqual([]);
  });

  it('should accept paths that stay inside: "..", absolute, and symlinks within the worktree', async () => {
    const ctx = context(worktree);
    expect((await call(ctx, 'read_file', { path: 'src/nested/../a.ts' })).content).toContain('export const a = 1;');
    expect((await call(ctx, 'read_file', { path: join(worktree, 'src', 'a.ts') })).content).toContain('export const a = 1;');
    expect((await call(ctx, 'read_file', { path: 'inside-link.ts' })).content).toContain('export const a = 1;');
  });

  it('should refuse to change git data', async () => {
    const outcome = await call(context(worktree), 'write_file', { path: '.git/HEAD', content: 'x' });
    expect(outcome.content).toMatch(/^TOOL_NOT_ALLOWED: \.git\/HEAD is git's own data/);
  });
});

describe('coding tools: read_file', () => {
  it('should show lines with their numbers', async () => {
    const outcome = await call(context(worktree), 'read_file', { path: 'src/a.ts' });
    expect(outcome).toEqual({ isError: false, content: '     1\texport const a = 1;\n     2\texport const b = 2;' });
  });

  it('should read a part with offset and limit, and say how to read on', async () => {
    const dir = tempDir('a2a-read-');
    writeFileSync(join(dir, 'long.txt'), Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n'));
    const outcome = await call(context(dir), 'read_file', { path: 'long.txt', offset: 3, limit: 2 });
    expect(outcome.content).toBe('     3\tline 3\n     4\tline 4\n[lines 3-4 of 10 in long.txt. 6 more: read_file with offset=5.]');
    const end = await call(context(dir), 'read_file', { path: 'long.txt', offset: 9 });
    expect(end.content).toBe('     9\tline 9\n    10\tline 10\n[lines 9-10 of 10 in long.txt.]');
    expect((await call(context(dir), 'read_file', { path: 'long.txt', offset: 11 })).content).toBe(
      'VALIDATION_ERROR: offset 11 is past the end of long.txt, which has 10 lines.',
    );
  });

  it('should cap the size it shows, and say it was truncated', async () => {
    const dir = tempDir('a2a-read-');
    writeFileSync(join(dir, 'big.txt'), Array.from({ length: 5000 }, () => 'x'.repeat(100)).join('\n'));
    writeFileSync(join(dir, 'wide.txt'), 'y'.repeat(5000));
    const big = await call(context(dir), 'read_file', { path: 'big.txt' });
    expect(big.content.length).toBeLessThan(110_000);
    expect(big.content).toMatch(/\[lines 1-\d+ of 5000 in big\.txt\. \d+ more: read_file with offset=\d+\.\]$/);
    const wide = await call(context(dir), 'read_file', { path: 'wide.txt' });
    expect(wide.content).toContain('… [line cut at 2000 characters]');
  });

  it('should say what it cannot read', async () => {
    const ctx = context(worktree);
    expect((await call(ctx, 'read_file', { path: 'missing.ts' })).content).toBe('NOT_FOUND: File not found: missing.ts.');
    expect((await call(ctx, 'read_file', { path: 'src' })).content).toBe('VALIDATION_ERROR: src is a directory: use list_files.');
    expect((await call(ctx, 'read_file', { path: 'logo.png' })).content).toBe('logo.png is a binary file (8 bytes); it cannot be shown as text.');
    expect((await call(ctx, 'read_file', { path: 'src/a.ts', offset: 0 })).content).toMatch(/^VALIDATION_ERROR: Invalid arguments for read_file/);
  });
});

describe('coding tools: write_file and edit_file', () => {
  it('should create a file with its directories, asking for file creation', async () => {
    const dir = tempDir('a2a-write-');
    const ctx = context(dir);
    const outcome = await call(ctx, 'write_file', { path: 'src/deep/new.ts', content: 'one\ntwo\n' });
    expect(outcome).toEqual({
      isError: false,
      content: 'Created src/deep/new.ts (2 lines, 8 bytes).',
      changes: [{ file: 'src/deep/new.ts', insertions: 2, deletions: 0 }],
    });
    expect(readFileSync(join(dir, 'src', 'deep', 'new.ts'), 'utf8')).toBe('one\ntwo\n');
    expect(ctx.asks).toEqual([{ action: 'file_creation_in_worktree', detail: 'src/deep/new.ts' }]);

    const again = await call(ctx, 'write_file', { path: 'src/deep/new.ts', content: 'three' });
    expect(again.content).toBe('Overwrote src/deep/new.ts (1 line, 5 bytes).');
    expect(ctx.asks[1]).toEqual({ action: 'file_edits_in_worktree', detail: 'src/deep/new.ts' });
  });

  it('should change nothing when the permission is denied, saying who decided and why', async () => {
    const dir = tempDir('a2a-write-');
    writeFileSync(join(dir, 'a.txt'), 'keep\n');
    const ctx = context(dir, { answer: { approved: false, decidedBy: 'human', reason: 'not now' } });
    const write = await call(ctx, 'write_file', { path: 'a.txt', content: 'x' });
    expect(write).toEqual({
      isError: true,
      content: 'TOOL_NOT_ALLOWED: Permission file_edits_in_worktree for a.txt was denied by human: not now. Nothing was changed.',
    });
    const create = await call(ctx, 'write_file', { path: 'b.txt', content: 'x' });
    expect(create.content).toContain('Permission file_creation_in_worktree for b.txt was denied by human');
    const edit = await call(ctx, 'edit_file', { path: 'a.txt', old_string: 'keep', new_string: 'x' });
    expect(edit.content).toContain('Permission file_edits_in_worktree for a.txt was denied by human');
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('keep\n');
    expect(existsSync(join(dir, 'b.txt'))).toBe(false);
  });

  it('should replace a unique text exactly, taking "$" literally', async () => {
    const dir = tempDir('a2a-edit-');
    writeFileSync(join(dir, 'a.ts'), 'const a = 1;\nconst b = 2;\n');
    const ctx = context(dir);
    const outcome = await call(ctx, 'edit_file', { path: 'a.ts', old_string: 'const b = 2;', new_string: "const b = '$&$1';" });
    expect(outcome).toEqual({ isError: false, content: 'Replaced 1 occurrence in a.ts.', changes: [{ file: 'a.ts', insertions: 1, deletions: 1 }] });
    expect(readFileSync(join(dir, 'a.ts'), 'utf8')).toBe("const a = 1;\nconst b = '$&$1';\n");
    expect(ctx.asks).toEqual([{ action: 'file_edits_in_worktree', detail: 'a.ts' }]);
  });

  it('should refuse a text that is not found, or not unique without replace_all', async () => {
    const dir = tempDir('a2a-edit-');
    writeFileSync(join(dir, 'a.ts'), 'x = 1;\ny = 2;\nx = 1;\n');
    const ctx = context(dir);
    const missing = await call(ctx, 'edit_file', { path: 'a.ts', old_string: 'z = 3;', new_string: '' });
    expect(missing.content).toMatch(/^VALIDATION_ERROR: old_string was not found in a\.ts\. It must match the file exactly/);
    const twice = await call(ctx, 'edit_file', { path: 'a.ts', old_string: 'x = 1;', new_string: 'x = 9;' });
    expect(twice.content).toBe(
      'VALIDATION_ERROR: old_string occurs 2 times in a.ts (lines 1, 3). Include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence.',
    );
    expect(ctx.asks).toEqual([]);
    expect(readFileSync(join(dir, 'a.ts'), 'utf8')).toBe('x = 1;\ny = 2;\nx = 1;\n');

    const all = await call(ctx, 'edit_file', { path: 'a.ts', old_string: 'x = 1;', new_string: 'x = 9;', replace_all: true });
    expect(all.content).toBe('Replaced 2 occurrences in a.ts.');
    expect(readFileSync(join(dir, 'a.ts'), 'utf8')).toBe('x = 9;\ny = 2;\nx = 9;\n');
    expect((await call(ctx, 'edit_file', { path: 'nope.ts', old_string: 'a', new_string: 'b' })).content).toBe(
      'NOT_FOUND: File not found: nope.ts. Use write_file to create it.',
    );
    expect((await call(ctx, 'edit_file', { path: 'a.ts', old_string: 'y', new_string: 'y' })).content).toMatch(/are the same/);
  });

  it('should turn a file system failure into a tool error', async () => {
    const dir = tempDir('a2a-write-');
    writeFileSync(join(dir, 'file.txt'), 'x');
    const outcome = await call(context(dir), 'write_file', { path: 'file.txt/inner.txt', content: 'y' });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^AGENT_ERROR: E(EXIST|NOTDIR): /);
  });

  it('should refuse to write a file a sibling sub-task holds, and let the holder write it', async () => {
    const dir = tempDir('a2a-locks-');
    writeFileSync(join(dir, 'shared.ts'), 'original\n');
    const locks = new FileLockTable();
    expect(locks.acquire(dir, ['shared.ts'], 'st-2')).toEqual({ ok: true });
    const me = context(dir, { id: 'st-1', locks });
    for (const path of ['shared.ts', './x/../shared.ts', join(dir, 'shared.ts')]) {
      const write = await call(me, 'write_file', { path, content: 'mine' });
      expect(write.content).toBe(
        "TOOL_NOT_ALLOWED: shared.ts is held by sibling sub-task st-2, which declared it in its targetFiles; nothing was written. Wait for st-2's result, or ask your parent to coordinate the change.",
      );
    }
    const edit = await call(me, 'edit_file', { path: 'shared.ts', old_string: 'original', new_string: 'mine' });
    expect(edit.content).toContain('held by sibling sub-task st-2');
    expect(me.asks).toEqual([]);
    expect(readFileSync(join(dir, 'shared.ts'), 'utf8')).toBe('original\n');

    const holder = context(dir, { id: 'st-2', locks });
    expect((await call(holder, 'write_file', { path: 'shared.ts', content: 'theirs\n' })).isError).toBe(false);
    locks.release('st-2');
    expect((await call(me, 'write_file', { path: 'shared.ts', content: 'mine\n' })).isError).toBe(false);
  });
});

describe('coding tools: list_files and search', () => {
  it('should list a directory, skipping .git, with directories marked and links shown', async () => {
    const outcome = await call(context(worktree), 'list_files', {});
    expect(outcome.content.split('\n')).toEqual([
      'README.md',
      `dangling -> ${join(outside, 'created-through-dangling.txt')}`,
      `inside-link.ts -> ${join(worktree, 'src', 'a.ts')}`,
      `link-dir -> ${outside}`,
      `link-file -> ${join(outside, 'secret.txt')}`,
      'logo.png',
      'node_modules/',
      'src/',
    ]);
  });

  it('should list recursively with a glob, without entering node_modules or links', async () => {
    const ctx = context(worktree);
    const all = await call(ctx, 'list_files', { recursive: true });
    expect(all.content.split('\n')).toContain('src/nested/c.test.ts');
    expect(all.content).not.toContain('node_modules/dep');
    expect(all.content).not.toContain('link-dir/secret.txt');
    expect((await call(ctx, 'list_files', { recursive: true, pattern: '*.ts' })).content.split('\n')).toEqual([
      `inside-link.ts -> ${join(worktree, 'src', 'a.ts')}`,
      'src/a.ts',
      'src/nested/c.test.ts',
    ]);
    expect((await call(ctx, 'list_files', { path: 'src', recursive: true, pattern: '**/*.test.ts' })).content).toBe('src/nested/c.test.ts');
    expect((await call(ctx, 'list_files', { path: 'src', pattern: '*.md' })).content).toBe('No entries in src matching *.md.');
    expect((await call(ctx, 'list_files', { path: 'README.md' })).content).toBe('VALIDATION_ERROR: README.md is not a directory.');
  });

  it('should cap the number of entries', async () => {
    const dir = tempDir('a2a-list-');
    for (let i = 0; i < 1005; i++) writeFileSync(join(dir, `f${String(i).padStart(4, '0')}.txt`), '');
    const lines = (await call(context(dir), 'list_files', {})).content.split('\n');
    expect(lines).toHaveLength(1001);
    expect(lines.at(-1)).toBe('[stopped at 1000 entries: narrow path or pattern]');
  });

  it('should translate globs', () => {
    expect(globToRegExp('*.ts').test('a.ts')).toBe(true);
    expect(globToRegExp('*.ts').test('src/a.ts')).toBe(false);
    expect(globToRegExp('src/**/*.ts').test('src/a.ts')).toBe(true);
    expect(globToRegExp('src/**/*.ts').test('src/x/y/a.ts')).toBe(true);
    expect(globToRegExp('*.{ts,md}').test('README.md')).toBe(true);
    expect(globToRegExp('a?c.txt').test('abc.txt')).toBe(true);
    expect(globToRegExp('a.txt').test('abtxt')).toBe(false);
  });

  it('should find text as file:line: text, skipping .git, node_modules, binaries and links', async () => {
    const outcome = await call(context(worktree), 'search', { pattern: 'const a = 1;' });
    expect(outcome).toEqual({
      isError: false,
      content: 'README.md:2: const a = 1;\nsrc/a.ts:1: export const a = 1;\n[2 matching lines in 2 files]',
    });
    expect((await call(context(worktree), 'search', { pattern: 'secret' })).content).toBe('No matches for "secret" in the worktree.');
  });

  it('should search with a regular expression, in one file or directory, and cap the results', async () => {
    const ctx = context(worktree);
    expect((await call(ctx, 'search', { pattern: '^export const [ab]', regex: true, path: 'src' })).content).toBe(
      'src/a.ts:1: export const a = 1;\nsrc/a.ts:2: export const b = 2;\n[2 matching lines in 1 file]',
    );
    expect((await call(ctx, 'search', { pattern: 'const', path: 'src/a.ts', maxResults: 1 })).content).toBe(
      'src/a.ts:1: export const a = 1;\n[stopped at 1 matching lines: narrow the pattern or path, or raise maxResults]',
    );
    expect((await call(ctx, 'search', { pattern: '(', regex: true })).content).toMatch(/^VALIDATION_ERROR: Invalid regular expression/);
    expect((await call(ctx, 'search', { pattern: '("c"' })).content).toBe('src/nested/c.test.ts:1: test("c", () => {});\n[1 matching line in 1 file]');
  });
});

/** Unique per test run, so that `ps` finds only this test's processes. */
const marker = () => `${process.pid % 1000}${String(Date.now()).slice(-6)}`;
const running = (text: string) => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').some((l) => l.includes(text));

describe.each([
  ['in the bubblewrap sandbox', bubblewrapRunner()],
  ['unconfined (sandbox.mode none)', unconfinedRunner()],
] as const)('coding tools: run_command %s', (_how, commands) => {
  const context = (worktree: string, options: Parameters<typeof baseContext>[1] = {}) => baseContext(worktree, { ...options, commands });

  it('should report the exit code and output; a failing command is a normal result', async () => {
    const ctx = context(worktree);
    const okRun = await call(ctx, 'run_command', { command: 'echo out; echo err >&2' });
    expect(okRun.isError).toBe(false);
    expect(okRun.content).toMatch(/^\$ echo out; echo err >&2\n\[exit code 0; \d+ ms\]\nout\nerr$/);
    // without a sandbox only a person may approve it
    expect(ctx.asks).toEqual([{ action: 'command_execution', detail: 'echo out; echo err >&2', ...(commands.confined ? {} : { needsPerson: true }) }]);
    const failed = await call(ctx, 'run_command', { command: 'echo failing; exit 3' });
    expect(failed.isError).toBe(false);
    expect(failed.content).toMatch(/\[exit code 3; \d+ ms\]\nfailing$/);
  });

  it('should run in the worktree, or in a directory inside it', async () => {
    const ctx = context(worktree);
    expect((await call(ctx, 'run_command', { command: 'pwd' })).content).toMatch(new RegExp(`\\n${worktree}$`));
    const sub = await call(ctx, 'run_command', { command: 'pwd', cwd: 'src/nested' });
    expect(sub.content).toMatch(new RegExp(`^\\$ pwd \\(in src/nested\\)\\n.*\\n${join(worktree, 'src', 'nested')}$`));
    expect((await call(ctx, 'run_command', { command: 'pwd', cwd: 'README.md' })).content).toMatch(/^VALIDATION_ERROR: cwd README.md is not a directory/);
  });

  it('should kill the whole process group on timeout', async () => {
    const tag = `30.${marker()}`;
    const outcome = await call(context(worktree), 'run_command', { command: `sleep ${tag} & echo started; wait`, timeoutMs: 300 });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('[timed out after 300 ms: the command and everything it started were killed;');
    expect(outcome.content).toMatch(/started$/);
    await until(() => !running(`sleep ${tag}`), `sleep ${tag} still runs`);
  });

  it('should kill background processes when the command ends', async () => {
    const tag = `30.${marker()}`;
    const outcome = await call(context(worktree), 'run_command', { command: `sleep ${tag} > /dev/null 2>&1 & echo started` });
    expect(outcome.content).toMatch(/\[exit code 0; \d+ ms\]\nstarted$/);
    await until(() => !running(`sleep ${tag}`), `sleep ${tag} still runs`);
  });

  it('should kill the command when the session is cancelled', async () => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 200);
    const outcome = await call(context(worktree, { signal: controller.signal }), 'run_command', { command: 'sleep 30' });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('[cancelled: the session ended');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('should cap the output, keeping its beginning and end and saying how much was cut', async () => {
    const outcome = await call(context(worktree), 'run_command', {
      command: "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST",
    });
    expect(outcome.content.length).toBeLessThan(70_000);
    expect(outcome.content).toMatch(/\nFIRST\nx+\n\[\.\.\. \d+ bytes of output cut \.\.\.\]\nx+\nLAST$/);
    const cut = Number(/\[\.\.\. (\d+) bytes/.exec(outcome.content)![1]);
    expect(cut).toBe(6 + 200000 + 1 + 5 - 64 * 1024);
  });

  it('should run nothing when the permission is denied', async () => {
    const dir = tempDir('a2a-run-');
    const ctx = context(dir, { answer: { approved: false, decidedBy: 'parent', reason: 'no installs' } });
    const outcome = await call(ctx, 'run_command', { command: 'touch ran' });
    expect(outcome).toEqual({
      isError: true,
      content: 'TOOL_NOT_ALLOWED: Permission command_execution for `touch ran` was denied by parent: no installs. Nothing was run.',
    });
    expect(existsSync(join(dir, 'ran'))).toBe(false);
  });

  it('should refuse a timeout above the maximum', async () => {
    const outcome = await call(context(worktree), 'run_command', { command: 'true', timeoutMs: 10_000_000 });
    expect(outcome.content).toMatch(/^VALIDATION_ERROR: Invalid arguments for run_command/);
  });
});

describe('diff stats of tool edits', () => {
  it('counts lines added and removed like git --numstat for edits that do not move lines', async () => {
    const { lineChanges } = await import('../../actors/tools/coding.js');
    expect(lineChanges('', 'a\nb\n')).toEqual({ insertions: 2, deletions: 0 });
    expect(lineChanges('a\nb\nc\n', 'a\nB\nc\nd\n')).toEqual({ insertions: 2, deletions: 1 });
    expect(lineChanges('x\nx\n', 'x\n')).toEqual({ insertions: 0, deletions: 1 });
    expect(lineChanges('same\n', 'same\n')).toEqual({ insertions: 0, deletions: 0 });
  });
});

describe('coding tools: files that are not what they seem', () => {
  it('should refuse a FIFO instead of hanging on it', async () => {
    const dir = tempDir('a2a-fifo-');
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const outcome = await call(context(dir), 'read_file', { path: 'pipe' });
    expect(outcome.content).toBe('VALIDATION_ERROR: pipe is not a regular file.');
    expect((await call(context(dir), 'search', { pattern: 'x', path: 'pipe' })).content).toBe('VALIDATION_ERROR: pipe is not a regular file or a directory.');
    expect((await call(context(dir), 'search', { pattern: 'x' })).content).toBe('No matches for "x" in the worktree.');
  });
});
