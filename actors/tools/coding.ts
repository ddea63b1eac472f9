/**
 * The coding tools: read, write, edit, list, search and run commands, all confined to the
 * session's worktree (see paths.ts). Changes ask permission first and respect the files sibling
 * sub-tasks hold; a failure is an A2AError the catalog turns into a tool error.
 */
import type { Dirent } from 'node:fs';
import { mkdir, readdir, readlink } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { z } from 'zod';
import type { ToolOutcome } from '../../machines/ports.js';
import type { PermissionAction } from '../../machines/protocol/index.js';
import { A2AError, isA2AError } from '../errors.js';
import { readConfined, writeConfined } from './files.js';
import { resolveInWorktree, STATE_DIR, worktreeRoot, type WorktreePath } from './paths.js';
import type { ToolContext, ToolDefinition } from './types.js';
import { errorText } from '../../machines/errorText.js';

const READ_DEFAULT_LINES = 2000;
const READ_MAX_CHARS = 100_000;
/** Larger files are for run_command (head, sed, grep): reading them whole would flood memory. */
const MAX_FILE_BYTES = 20 * 1024 * 1024;
const LINE_MAX_CHARS = 2000;
const LIST_MAX_ENTRIES = 1000;
const SEARCH_DEFAULT_RESULTS = 100;
const SEARCH_MAX_RESULTS = 1000;
const SEARCH_MAX_FILE_BYTES = 2 * 1024 * 1024;
const COMMAND_DEFAULT_TIMEOUT_MS = 120_000;
const COMMAND_MAX_TIMEOUT_MS = 600_000;
/** Never searched, and not descended into when listing recursively. */
const SKIPPED_DIRS = new Set(['.git', 'node_modules']);

const ok = (content: string): ToolOutcome => ({ isError: false, content });

/**
 * Lines added and removed by replacing `before` with `after`, as a multiset difference of lines:
 * the same counts as `git diff --numstat` for edits that do not move lines, without a diff
 * algorithm's cost on large files.
 */
export function lineChanges(before: string, after: string): { insertions: number; deletions: number } {
  const split = (t: string) => (t === '' ? [] : t.replace(/\n$/, '').split('\n'));
  const counts = new Map<string, number>();
  for (const line of split(before)) counts.set(line, (counts.get(line) ?? 0) + 1);
  let insertions = 0;
  for (const line of split(after)) {
    const n = counts.get(line) ?? 0;
    if (n > 0) counts.set(line, n - 1);
    else insertions++;
  }
  let deletions = 0;
  for (const n of counts.values()) deletions += n;
  return { insertions, deletions };
}
const isBinary = (content: Buffer) => content.subarray(0, 8000).includes(0);
const shownDir = (target: WorktreePath) => (target.relative === '.' ? 'the worktree' : target.relative);
const clip = (line: string, max: number) => (line.length > max ? `${line.slice(0, max)}… [line cut at ${max} characters]` : line);

async function fileToRead(ctx: ToolContext, path: string): Promise<{ target: WorktreePath; content: Buffer }> {
  const target = await resolveInWorktree(ctx.worktree, path);
  if (target.kind === 'missing') throw new A2AError('NOT_FOUND', `File not found: ${target.relative}.`, { where: path });
  if (target.kind === 'directory') throw new A2AError('VALIDATION_ERROR', `${target.relative} is a directory: use list_files.`, { where: path });
  return { target, content: await readWhole(target) };
}

/** The whole file (refused when it is hard-linked, or too large to read whole). */
async function readWhole(target: WorktreePath): Promise<Buffer> {
  const { size, content } = await readConfined(target.real, target.relative, MAX_FILE_BYTES);
  if (content === null) {
    throw new A2AError('VALIDATION_ERROR', `${target.relative} has ${size} bytes, too many to read whole: use run_command with head, sed or grep.`);
  }
  return content;
}

/** File system failures (permissions, a full disk, …) become tool errors the model can read. */
function guarded<S extends z.ZodType>(tool: ToolDefinition<S>): ToolDefinition<S> {
  return {
    ...tool,
    async execute(args, ctx) {
      try {
        return await tool.execute(args, ctx);
      } catch (error) {
        const errno = error as NodeJS.ErrnoException;
        if (!(error instanceof A2AError) && typeof errno?.code === 'string' && errno.syscall) throw new A2AError('AGENT_ERROR', errno.message, { cause: error });
        throw error;
      }
    },
  };
}

/** Refuses a change the session may not make: git's own data, a sibling's file, a denied permission. */
async function mayChange(ctx: ToolContext, target: WorktreePath, action: PermissionAction): Promise<void> {
  if (target.relative === '.git' || target.relative.startsWith('.git/')) {
    throw new A2AError('TOOL_NOT_ALLOWED', `${target.relative} is git's own data; change it with git commands, not file tools.`);
  }
  const aliases = new Set([target.relative, relative(resolve(ctx.worktree), target.lexical)]);
  for (const file of aliases) {
    const holder = ctx.locks.heldBy(ctx.worktree, file, ctx.spec.id);
    if (holder) {
      throw new A2AError(
        'TOOL_NOT_ALLOWED',
        `${target.relative} is held by sibling sub-task ${holder}, which declared it in its targetFiles; nothing was written. ` +
          `Wait for ${holder}'s result, or ask your parent to coordinate the change.`,
        { where: target.relative },
      );
    }
  }
  const answer = await ctx.permit({ action, detail: target.relative });
  if (!answer.approved) {
    throw new A2AError(
      'TOOL_NOT_ALLOWED',
      `Permission ${action} for ${target.relative} was denied by ${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}. Nothing was changed.`,
    );
  }
}

const ReadArgs = z.object({
  path: z.string().min(1).describe('File path, relative to your worktree.'),
  offset: z.number().int().min(1).optional().describe('First line to show (1-based). Default 1.'),
  limit: z.number().int().min(1).optional().describe(`How many lines to show. Default ${READ_DEFAULT_LINES}.`),
});
const readFileTool: ToolDefinition<typeof ReadArgs> = {
  name: 'read_file',
  idempotent: true,
  description: `Read a text file of your worktree, with line numbers. Long files are shown in parts (up to ${READ_DEFAULT_LINES} lines or ${READ_MAX_CHARS} characters); the output says how to read the rest with offset.`,
  parameters: ReadArgs,
  async execute(args, ctx) {
    const { target, content } = await fileToRead(ctx, args.path);
    if (isBinary(content)) return ok(`${target.relative} is a binary file (${content.length} bytes); it cannot be shown as text.`);
    const lines = content.toString('utf8').split('\n');
    if (lines.at(-1) === '') lines.pop();
    if (lines.length === 0) return ok(`${target.relative} is empty.`);
    const first = args.offset ?? 1;
    if (first > lines.length) {
      throw new A2AError('VALIDATION_ERROR', `offset ${first} is past the end of ${target.relative}, which has ${lines.length} lines.`);
    }
    const last = Math.min(lines.length, first - 1 + (args.limit ?? READ_DEFAULT_LINES));
    const shown: string[] = [];
    let chars = 0;
    let n = first;
    for (; n <= last; n++) {
      const line = `${String(n).padStart(6)}\t${clip(lines[n - 1]!, LINE_MAX_CHARS)}`;
      if (chars + line.length > READ_MAX_CHARS && shown.length > 0) break;
      shown.push(line);
      chars += line.length + 1;
    }
    const end = n - 1;
    if (first > 1 || end < lines.length) {
      const more = end < lines.length ? ` ${lines.length - end} more: read_file with offset=${end + 1}.` : '';
      shown.push(`[lines ${first}-${end} of ${lines.length} in ${target.relative}.${more}]`);
    }
    return ok(shown.join('\n'));
  },
};

const WriteArgs = z.object({
  path: z.string().min(1).describe('File path, relative to your worktree. Missing directories are created.'),
  content: z.string().describe('The whole new content of the file.'),
});
const writeFileTool: ToolDefinition<typeof WriteArgs> = {
  name: 'write_file',
  description: 'Create a file in your worktree, or replace the whole content of an existing one. To change part of a file, use edit_file.',
  parameters: WriteArgs,
  async execute(args, ctx) {
    const target = await resolveInWorktree(ctx.worktree, args.path);
    if (target.kind === 'directory' || target.kind === 'other') {
      throw new A2AError('VALIDATION_ERROR', `${target.relative} is not a regular file.`, { where: args.path });
    }
    const created = target.kind === 'missing';
    // read first: a hard-linked file is refused before anyone is asked
    const before = created ? '' : ((await readConfined(target.real, target.relative)).content ?? Buffer.alloc(0)).toString('utf8');
    await mayChange(ctx, target, created ? 'file_creation_in_worktree' : 'file_edits_in_worktree');
    await mkdir(dirname(target.real), { recursive: true });
    await writeConfined(target.real, target.relative, args.content, created);
    const lines = args.content === '' ? 0 : args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0);
    return {
      ...ok(`${created ? 'Created' : 'Overwrote'} ${target.relative} (${lines} line${lines === 1 ? '' : 's'}, ${Buffer.byteLength(args.content)} bytes).`),
      changes: [{ file: target.relative, ...lineChanges(before, args.content) }],
    };
  },
};

const EditArgs = z.object({
  path: z.string().min(1).describe('File path, relative to your worktree.'),
  old_string: z.string().min(1).describe('The exact text to replace, including whitespace and indentation. It must occur exactly once unless replace_all is true.'),
  new_string: z.string().describe('The text to put in its place.'),
  replace_all: z.boolean().default(false).describe('Replace every occurrence of old_string (default false: it must be unique).'),
});
const editFileTool: ToolDefinition<typeof EditArgs> = {
  name: 'edit_file',
  description:
    'Replace exact text in a file of your worktree (search and replace, no regular expressions). Read the file first and copy old_string exactly; include enough surrounding lines to make it unique, or set replace_all.',
  parameters: EditArgs,
  async execute(args, ctx) {
    const target = await resolveInWorktree(ctx.worktree, args.path);
    if (target.kind === 'missing') throw new A2AError('NOT_FOUND', `File not found: ${target.relative}. Use write_file to create it.`, { where: args.path });
    if (target.kind !== 'file') throw new A2AError('VALIDATION_ERROR', `${target.relative} is not a regular file.`, { where: args.path });
    const raw = await readWhole(target);
    if (isBinary(raw)) throw new A2AError('VALIDATION_ERROR', `${target.relative} is a binary file; edit_file changes text files only.`);
    const text = raw.toString('utf8');
    if (args.old_string === args.new_string) throw new A2AError('VALIDATION_ERROR', 'old_string and new_string are the same: nothing to change.');
    const parts = text.split(args.old_string);
    const count = parts.length - 1;
    if (count === 0) {
      throw new A2AError(
        'VALIDATION_ERROR',
        `old_string was not found in ${target.relative}. It must match the file exactly, including whitespace, indentation and line breaks: read the file again and copy the text.`,
        { where: args.path },
      );
    }
    if (count > 1 && !args.replace_all) {
      const lines: number[] = [];
      let at = 0;
      for (const part of parts.slice(0, -1)) {
        at += part.length;
        lines.push(text.slice(0, at).split('\n').length);
        at += args.old_string.length;
      }
      throw new A2AError(
        'VALIDATION_ERROR',
        `old_string occurs ${count} times in ${target.relative} (lines ${lines.slice(0, 10).join(', ')}${count > 10 ? ', …' : ''}). ` +
          'Include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence.',
        { where: args.path },
      );
    }
    await mayChange(ctx, target, 'file_edits_in_worktree');
    const after = parts.join(args.new_string);
    await writeConfined(target.real, target.relative, after, false);
    return { ...ok(`Replaced ${count} occurrence${count === 1 ? '' : 's'} in ${target.relative}.`), changes: [{ file: target.relative, ...lineChanges(text, after) }] };
  },
};

/** A glob (`*`, `**`, `?`, `{a,b}`) as a regular expression over "/"-separated paths. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  let braces = 0;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      const slash = glob[i + 2] === '/';
      re += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '{') (re += '(?:'), braces++;
    else if (c === '}' && braces > 0) (re += ')'), braces--;
    else if (c === ',' && braces > 0) re += '|';
    else re += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${re}${')'.repeat(braces)}$`);
}

/**
 * Entries under `dir` in a stable order, depth first; never follows symbolic links. Leaves out
 * .git everywhere and the runtime's state directory at the worktree's `root`.
 */
async function* walk(dir: string, recursive: boolean, skip: ReadonlySet<string>, root: string): AsyncGenerator<{ path: string; entry: Dirent }> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (entry.name === '.git' || (entry.name === STATE_DIR && dir === root)) continue;
    const path = join(dir, entry.name);
    yield { path, entry };
    if (recursive && entry.isDirectory() && !skip.has(entry.name)) yield* walk(path, recursive, skip, root);
  }
}

const ListArgs = z.object({
  path: z.string().min(1).optional().describe('Directory, relative to your worktree. Default: the worktree itself.'),
  recursive: z.boolean().default(false).describe('List subdirectories too (node_modules is listed but not entered).'),
  pattern: z.string().min(1).optional().describe('Glob filter, e.g. "*.ts" (matched against names) or "src/**/*.test.ts" (against paths under `path`).'),
});
const listFilesTool: ToolDefinition<typeof ListArgs> = {
  name: 'list_files',
  idempotent: true,
  description: `List files and directories (directories end with "/") in your worktree; .git is left out. At most ${LIST_MAX_ENTRIES} entries.`,
  parameters: ListArgs,
  async execute(args, ctx) {
    const target = await resolveInWorktree(ctx.worktree, args.path ?? '.');
    if (target.kind !== 'directory') throw new A2AError(target.kind === 'missing' ? 'NOT_FOUND' : 'VALIDATION_ERROR', `${target.relative} is not a directory.`);
    const root = await worktreeRoot(ctx.worktree);
    const filter = args.pattern ? globToRegExp(args.pattern) : null;
    const byPath = args.pattern?.includes('/') ?? false;
    const lines: string[] = [];
    let truncated = false;
    for await (const { path, entry } of walk(target.real, args.recursive, new Set(['node_modules']), root)) {
      const under = relative(target.real, path).split(sep).join('/');
      if (filter && !filter.test(byPath ? under : entry.name)) continue;
      if (lines.length >= LIST_MAX_ENTRIES) {
        truncated = true;
        break;
      }
      const shown = relative(root, path).split(sep).join('/');
      if (entry.isSymbolicLink()) lines.push(`${shown} -> ${await readlink(path).catch(() => '?')}`);
      else lines.push(entry.isDirectory() ? `${shown}/` : shown);
    }
    if (lines.length === 0) return ok(`No entries in ${shownDir(target)}${args.pattern ? ` matching ${args.pattern}` : ''}.`);
    if (truncated) lines.push(`[stopped at ${LIST_MAX_ENTRIES} entries: narrow path or pattern]`);
    return ok(lines.join('\n'));
  },
};

const SearchArgs = z.object({
  pattern: z.string().min(1).describe('Text to find (a JavaScript regular expression when regex is true). Case-sensitive.'),
  path: z.string().min(1).optional().describe('File or directory to search, relative to your worktree. Default: the worktree.'),
  regex: z.boolean().default(false).describe('Treat pattern as a regular expression (default: plain text).'),
  maxResults: z.number().int().min(1).max(SEARCH_MAX_RESULTS).optional().describe(`At most this many matching lines. Default ${SEARCH_DEFAULT_RESULTS}.`),
});
const searchTool: ToolDefinition<typeof SearchArgs> = {
  name: 'search',
  idempotent: true,
  description:
    'Search the text files of your worktree for a string or regular expression; answers "file:line: text" per matching line. Skips .git, node_modules, binary and very large files.',
  parameters: SearchArgs,
  async execute(args, ctx) {
    let matcher: (line: string) => boolean;
    if (args.regex) {
      let re: RegExp;
      try {
        re = new RegExp(args.pattern);
      } catch (error) {
        throw new A2AError('VALIDATION_ERROR', `Invalid regular expression: ${errorText(error)}`);
      }
      matcher = (line) => re.test(line);
    } else matcher = (line) => line.includes(args.pattern);
    const target = await resolveInWorktree(ctx.worktree, args.path ?? '.');
    if (target.kind === 'missing') throw new A2AError('NOT_FOUND', `Not found: ${target.relative}.`);
    if (target.kind === 'other') throw new A2AError('VALIDATION_ERROR', `${target.relative} is not a regular file or a directory.`);
    const root = await worktreeRoot(ctx.worktree);
    const max = args.maxResults ?? SEARCH_DEFAULT_RESULTS;
    const results: string[] = [];
    let files = 0;

    const linked: string[] = [];
    const searchFile = async (file: string): Promise<boolean> => {
      const name = relative(root, file).split(sep).join('/');
      const read = await readConfined(file, name, SEARCH_MAX_FILE_BYTES).catch((error: unknown) => {
        if (isA2AError(error, 'TOOL_NOT_ALLOWED')) linked.push(name); // hard-linked: its content may be another's
        return null;
      });
      const content = read?.content;
      if (!content || isBinary(content)) return true;
      let found = false;
      const lines = content.toString('utf8').split('\n');
      for (let i = 0; i < lines.length; i++) {
        if (!matcher(lines[i]!)) continue;
        if (results.length >= max) return false;
        found = true;
        results.push(`${name}:${i + 1}: ${clip(lines[i]!.replace(/\r$/, ''), 300)}`);
      }
      if (found) files++;
      return true;
    };

    let complete = true;
    if (target.kind === 'file') complete = await searchFile(target.real);
    else {
      for await (const { path, entry } of walk(target.real, true, SKIPPED_DIRS, root)) {
        if (!entry.isFile()) continue; // links are not followed: they may lead outside
        if (!(await searchFile(path))) {
          complete = false;
          break;
        }
      }
    }
    const skipped = linked.length
      ? ` [skipped ${linked.length} hard-linked file${linked.length === 1 ? '' : 's'}: ${linked.slice(0, 5).join(', ')}${linked.length > 5 ? ', …' : ''}]`
      : '';
    if (results.length === 0) return ok(`No matches for ${JSON.stringify(args.pattern)} in ${shownDir(target)}.${skipped}`);
    results.push(
      (complete
        ? `[${results.length} matching line${results.length === 1 ? '' : 's'} in ${files} file${files === 1 ? '' : 's'}]`
        : `[stopped at ${max} matching lines: narrow the pattern or path, or raise maxResults]`) + skipped,
    );
    return ok(results.join('\n'));
  },
};

const RunArgs = z.object({
  command: z.string().min(1).describe('Shell command line, run with /bin/sh -c.'),
  timeoutMs: z
    .number()
    .int()
    .positive()
    .max(COMMAND_MAX_TIMEOUT_MS)
    .optional()
    .describe(`Kill the command after this long. Default ${COMMAND_DEFAULT_TIMEOUT_MS}, at most ${COMMAND_MAX_TIMEOUT_MS}.`),
  cwd: z.string().min(1).optional().describe('Working directory, relative to your worktree. Default: the worktree.'),
  network: z.boolean().default(false).describe('Let the command reach the network (installs, downloads); asks for network_access. Default false: no network.'),
});

/** Refuses a command the session may not run: denied permission, or a sandbox that cannot start. */
async function mayRun(ctx: ToolContext, command: string, network: boolean): Promise<NonNullable<ToolContext['commands']>> {
  const runner = ctx.commands;
  if (!runner) throw new A2AError('TOOL_NOT_ALLOWED', 'run_command is not available: this runtime was built without a command runner. Nothing was run.');
  const status = await runner.check();
  if (!status.ready) throw new A2AError('TOOL_NOT_ALLOWED', `${status.reason} Nothing was run.`);
  // without a sandbox, only a person may approve a command, whatever the matrix says
  const needsPerson = runner.confined ? {} : { needsPerson: true };
  const actions: PermissionAction[] = network ? ['command_execution', 'network_access'] : ['command_execution'];
  for (const action of actions) {
    const answer = await ctx.permit({ action, detail: command, ...needsPerson });
    if (!answer.approved) {
      throw new A2AError(
        'TOOL_NOT_ALLOWED',
        `Permission ${action} for \`${command}\` was denied by ${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}. Nothing was run.`,
      );
    }
  }
  return runner;
}

const runCommandTool: ToolDefinition<typeof RunArgs> = {
  name: 'run_command',
  description:
    'Run a shell command in your worktree (build, tests, git, …) and get its exit code and output (stdout and stderr; long output keeps its beginning and end). ' +
    'Unless the user opted out, it runs in a sandbox: only your worktree is writable, the system is read-only, nothing else of the machine is visible, HOME and /tmp are private and empty, and there is no network unless network is true. ' +
    'No input can be given to it; it is killed with everything it started when it ends or after timeoutMs.',
  parameters: RunArgs,
  async execute(args, ctx) {
    const cwd = await resolveInWorktree(ctx.worktree, args.cwd ?? '.');
    if (cwd.kind !== 'directory') throw new A2AError('VALIDATION_ERROR', `cwd ${cwd.relative} is not a directory of your worktree.`);
    const runner = await mayRun(ctx, args.command, args.network);
    const timeoutMs = args.timeoutMs ?? COMMAND_DEFAULT_TIMEOUT_MS;
    const worktree = await worktreeRoot(ctx.worktree);
    const run = await runner.run({ command: args.command, worktree, cwd: cwd.real, timeoutMs, signal: ctx.signal, network: args.network });
    const status = run.aborted
      ? 'cancelled: the session ended; the command and everything it started were killed'
      : run.timedOut
        ? `timed out after ${timeoutMs} ms: the command and everything it started were killed`
        : run.exitCode !== null
          ? `exit code ${run.exitCode}`
          : `killed by ${run.signal ?? 'an unknown cause'}`;
    const where = cwd.relative === '.' ? '' : ` (in ${cwd.relative})`;
    const body = run.output.length > 0 ? run.output.replace(/\n$/, '') : '(no output)';
    const limit = run.limit ? `\n[sandbox limit: ${run.limit}]` : '';
    const note = run.note ? `\n[sandbox: ${run.note}]` : '';
    return { isError: run.aborted || run.timedOut || run.limit !== undefined, content: `$ ${args.command}${where}\n[${status}; ${run.durationMs} ms]${limit}${note}\n${body}` };
  },
};

export const codingTools: ReadonlyArray<ToolDefinition<z.ZodType>> = [
  guarded(readFileTool),
  guarded(writeFileTool),
  guarded(editFileTool),
  guarded(listFilesTool),
  guarded(searchTool),
  guarded(runCommandTool),
];
