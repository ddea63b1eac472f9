/**
 * Confinement of file and command tools to a session's worktree. A path is checked twice: as
 * written (no `..` escape, no absolute path elsewhere), then by where it really is once every
 * symbolic link is followed, so that a link inside the worktree cannot lead outside it. For a
 * path that does not exist yet, the real location of its nearest existing ancestor counts.
 */
import { readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { A2AError } from '../errors.js';

/**
 * The runtime's own directory (worktrees, run logs, checkpoints, the control requests `a2a inbox`
 * answers through). In a workspace without git the worktree is the workspace and holds it.
 */
export const STATE_DIR = '.a2a';

export interface WorktreePath {
  /** Where the path really is (symbolic links followed); what the tools read and write. */
  real: string;
  /** `real` relative to the worktree, with "/" separators: what the model and locks see. */
  relative: string;
  /** The path as written, resolved against the worktree without following links. */
  lexical: string;
  kind: 'file' | 'directory' | 'other' | 'missing';
}

export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

const MAX_LINK_HOPS = 40;

/** The real path of `path`, which need not exist: missing parts are appended to the real ancestor. */
async function realOf(path: string, hops = 0): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  const parent = dirname(path);
  if (parent === path) return path;
  const candidate = join(await realOf(parent, hops), basename(path));
  // A dangling link: where it points is where a write would land.
  const target = await readlink(candidate).catch(() => null);
  if (target === null) return candidate;
  if (hops >= MAX_LINK_HOPS) throw new A2AError('VALIDATION_ERROR', `Too many levels of symbolic links at ${candidate}.`);
  return realOf(resolve(dirname(candidate), target), hops + 1);
}

export async function worktreeRoot(worktree: string): Promise<string> {
  try {
    return await realpath(worktree);
  } catch {
    throw new A2AError('NOT_FOUND', `The worktree ${worktree} does not exist.`);
  }
}

function outside(input: string, where: string, root: string, viaLink: boolean): A2AError {
  return new A2AError(
    'TOOL_NOT_ALLOWED',
    `edits_outside_worktree: "${input}" resolves to ${where}${viaLink ? ' (through a symbolic link)' : ''}, which is outside the worktree ${root}. ` +
      'Only files inside the worktree can be used; use a path relative to it.',
    { where: input },
  );
}

/** Resolves `input` against the worktree; refuses it when it is, or leads, outside. */
export async function resolveInWorktree(worktree: string, input: string): Promise<WorktreePath> {
  const root = await worktreeRoot(worktree);
  const lexical = resolve(worktree, input);
  // An absolute path may name the worktree by its real path (e.g. /private/tmp on macOS).
  if (!isInside(resolve(worktree), lexical) && !isInside(root, lexical)) throw outside(input, lexical, root, false);
  const real = await realOf(lexical);
  if (!isInside(root, real)) throw outside(input, real, root, true);
  const rel = relative(root, real).split(sep).join('/') || '.';
  if (rel === STATE_DIR || rel.startsWith(`${STATE_DIR}/`)) {
    throw new A2AError('TOOL_NOT_ALLOWED', `${rel} is the runtime's own state (logs, checkpoints, control requests): the tools cannot use it.`, { where: input });
  }
  const info = await stat(real).catch(() => null);
  const kind = !info ? 'missing' : info.isFile() ? 'file' : info.isDirectory() ? 'directory' : 'other';
  return { real, relative: rel, lexical, kind };
}
