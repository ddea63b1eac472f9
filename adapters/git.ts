/**
 * The `Git` port with simple-git: worktrees per task, diff stats, commits and merges.
 * Merges are decided with `git merge-tree --write-tree`, which needs no working tree, so that a
 * conflict leaves the base branch exactly as it was (ref, HEAD, index and files).
 */
import { appendFile, lstat, mkdir, readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { DiffSummary, Git, MergeOutcome } from '../machines/ports.js';
import { A2AError } from '../actors/errors.js';
import type { RunConfig } from '../actors/config/config.js';
import type { GitPlan } from '../machines/orchestrator.machine.js';
import type { ParsedAgentType } from '../machines/protocol/index.js';
import { STATE_DIR } from '../actors/tools/paths.js';
import { errorText } from '../machines/errorText.js';

/** The runtime's own directory in a repository (worktrees, logs); never user changes. */
export { STATE_DIR };
/** Used only when the repository has no identity of its own, so that commits never fail on it. */
export const FALLBACK_IDENTITY = { name: 'a2a', email: 'a2a@localhost' };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Settings for every git the runtime runs itself (outside any sandbox): no hooks and no file
 * system monitor, since agents work in these repositories and could have planted either.
 */
export const HARDENING = ['core.hooksPath=/dev/null', 'core.fsmonitor=false'];

/** simple-git, loaded by the first git step: a run outside a repository never loads it. */
let simpleGitModule: Promise<typeof import('simple-git')> | null = null;
const loadSimpleGit = () => (simpleGitModule ??= import('simple-git'));

/**
 * Runs git in `dir` and reports its exit code, since several commands answer with it
 * (merge-tree, config --get, check-ref-format). Throws only when git could not run at all.
 */
async function exec(dir: string, args: string[], config: string[] = []): Promise<Run> {
  let code = 0;
  let stderr = '';
  try {
    const { simpleGit } = await loadSimpleGit();
    const git = simpleGit({
      baseDir: dir,
      config: [...HARDENING, ...config],
      // simple-git refuses these two keys by default, since they can run programs; ours disable them
      unsafe: { allowUnsafeHooksPath: true, allowUnsafeFsMonitor: true },
      // git's own exit codes are reported, not thrown; other failures (no git, aborted) are thrown.
      errors: (error, result) => {
        code = result.exitCode;
        stderr = Buffer.concat(result.stdErr).toString('utf8');
        return code > 0 && code < 256 ? undefined : error;
      },
    });
    const stdout = await git.raw(args);
    return { code, stdout, stderr };
  } catch (error) {
    throw new A2AError('AGENT_ERROR', `git ${args[0]} could not run in ${dir}: ${errorText(error)}`, {
      cause: error,
    });
  }
}

/** Runs git and returns its output; a non-zero exit is an error carrying git's message. */
async function git(dir: string, args: string[], config: string[] = []): Promise<string> {
  const run = await exec(dir, args, config);
  if (run.code !== 0) {
    const detail = (run.stderr || run.stdout).trim() || `exit code ${run.code}`;
    throw new A2AError('AGENT_ERROR', `git ${args[0]} failed in ${dir}: ${detail}`);
  }
  return run.stdout;
}

/** Refuses names git would read as options, or that are not valid branch names. */
async function assertBranchName(dir: string, name: string): Promise<void> {
  const { code } = await exec(dir, ['check-ref-format', '--branch', name]);
  if (name.startsWith('-') || code !== 0) throw new A2AError('VALIDATION_ERROR', `"${name}" is not a valid branch name.`);
}

function assertRevision(name: string, what: string): void {
  if (name.length === 0 || name.startsWith('-')) throw new A2AError('VALIDATION_ERROR', `Invalid ${what} "${name}".`);
}

async function commitOf(dir: string, rev: string, what: string): Promise<string> {
  const { code, stdout } = await exec(dir, ['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]);
  if (code !== 0 || !stdout.trim()) throw new A2AError('NOT_FOUND', `No ${what} "${rev}" in ${dir}.`);
  return stdout.trim();
}

/** `-c` settings for the fallback author when the repository (or user) has none configured. */
async function identity(dir: string): Promise<string[]> {
  const config: string[] = [];
  const name = await exec(dir, ['config', '--get', 'user.name']);
  if (!name.stdout.trim()) config.push(`user.name=${FALLBACK_IDENTITY.name}`);
  const email = await exec(dir, ['config', '--get', 'user.email']);
  if (!email.stdout.trim()) config.push(`user.email=${FALLBACK_IDENTITY.email}`);
  return config;
}

/**
 * Worktree changes of one repository, one at a time (in this process). `git worktree add` reads
 * every other worktree's metadata (is the branch checked out elsewhere?), and one being written
 * beside it fails it ("failed to read .git/worktrees/<name>/commondir"): two tasks starting at
 * once in the same repository did, about once in 30 runs on a loaded machine.
 */
const worktreeQueues = new Map<string, Promise<unknown>>();
function oneAtATime<T>(repo: string, step: () => Promise<T>): Promise<T> {
  const key = resolve(repo);
  const run = (worktreeQueues.get(key) ?? Promise.resolve()).then(step, step);
  const settled = run.then(
    () => undefined,
    () => undefined,
  );
  worktreeQueues.set(key, settled);
  void settled.then(() => {
    if (worktreeQueues.get(key) === settled) worktreeQueues.delete(key);
  });
  return run;
}

const excluding = new Map<string, Promise<void>>();
/**
 * Lists `.a2a/` in `.git/info/exclude` (shared by all worktrees, and not a tracked change), so
 * that the runtime's state never makes the repository dirty whatever the user's .gitignore says.
 */
function excludeStateDir(repo: string): Promise<void> {
  // Once per repository and process: concurrent worktree creations must not append it twice.
  let done = excluding.get(repo);
  if (!done) {
    done = addExclude(repo);
    excluding.set(repo, done);
    done.catch(() => excluding.delete(repo));
  }
  return done;
}

async function addExclude(repo: string): Promise<void> {
  const common = (await git(repo, ['rev-parse', '--git-common-dir'])).trim();
  const file = resolve(repo, common, 'info', 'exclude');
  const text = await readFile(file, 'utf8').catch(() => '');
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  if (lines.some((l) => l === `${STATE_DIR}/` || l === `/${STATE_DIR}/` || l === STATE_DIR || l === `/${STATE_DIR}`)) return;
  await mkdir(dirname(file), { recursive: true });
  await appendFile(file, `${text && !text.endsWith('\n') ? '\n' : ''}# a2a runtime state (worktrees, logs)\n${STATE_DIR}/\n`);
}

const inStateDir = (path: string) => path.split('/').includes(STATE_DIR);

/** Paths from `git status --porcelain=v1 -z` (a rename's second entry is its old name). */
function statusPaths(out: string): string[] {
  const entries = out.split('\0');
  const paths: string[] = [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (entry.length < 4) continue;
    paths.push(entry.slice(3));
    if (/[RC]/.test(entry.slice(0, 2))) i++;
  }
  return paths;
}

/** Lines git's numstat would count for a new file; null for binary content. */
function countLines(content: Buffer): number | null {
  if (content.subarray(0, 8000).includes(0)) return null;
  let lines = 0;
  for (const byte of content) if (byte === 10) lines++;
  return content.length > 0 && content[content.length - 1] !== 10 ? lines + 1 : lines;
}

/** The worktree (if any) that has `branch` checked out. */
async function checkedOutIn(repo: string, branch: string): Promise<string | null> {
  // (listed between worktree changes: a worktree being added has half-written metadata)
  const out = await oneAtATime(repo, () => git(repo, ['worktree', 'list', '--porcelain']));
  for (const block of out.split(/\n\n+/)) {
    const lines = block.split('\n');
    if (lines.includes(`branch refs/heads/${branch}`)) return lines.find((l) => l.startsWith('worktree '))!.slice('worktree '.length);
  }
  return null;
}

/**
 * A fresh git repository in a new temp dir holding a copy of `template` (one commit on `main`):
 * the workspace of an example that declares one, so that running it never touches the checkout
 * it is run from.
 */
export async function seedRepository(template: string, prefix: string): Promise<string> {
  const { cp, mkdtemp } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), prefix));
  // the files only: no git directory of the template's (its config and hooks), no symlinks (out of it)
  const { lstatSync } = await import('node:fs');
  const { basename } = await import('node:path');
  await cp(template, dir, { recursive: true, filter: (source) => basename(source) !== '.git' && !lstatSync(source).isSymbolicLink() });
  const steps = [['init', '-q', '-b', 'main'], ['add', '-A'], ['-c', `user.name=${FALLBACK_IDENTITY.name}`, '-c', `user.email=${FALLBACK_IDENTITY.email}`, 'commit', '-q', '-m', `copy of ${template}`]];
  for (const args of steps) {
    const r = await exec(dir, args);
    if (r.code !== 0) throw new A2AError('AGENT_ERROR', `git ${args.find((a) => !a.startsWith('-') && !a.includes('='))} failed in ${dir}: ${r.stderr.trim()}`);
  }
  return dir;
}

export function createGit(): Git {
  return {
    async repositoryRoot(dir) {
      const { code, stdout } = await exec(dir, ['rev-parse', '--show-toplevel']);
      return code === 0 && stdout.trim() ? stdout.trim() : null;
    },

    async assertClean(repo) {
      await excludeStateDir(repo);
      const out = await git(repo, ['status', '--porcelain=v1', '-z', '--untracked-files=normal']);
      const dirty = statusPaths(out).filter((p) => !inStateDir(p));
      if (dirty.length === 0) return;
      const shown = dirty.slice(0, 5).join(', ') + (dirty.length > 5 ? ` and ${dirty.length - 5} more` : '');
      throw new A2AError(
        'VALIDATION_ERROR',
        `The repository ${repo} has uncommitted changes (${dirty.length} ${dirty.length === 1 ? 'path' : 'paths'}: ${shown}). ` +
          'Commit, stash or discard them first: worktrees start from the last commit, and merging results must not touch unsaved work.',
        { where: repo },
      );
    },

    async currentBranch(repo) {
      const { stdout } = await exec(repo, ['symbolic-ref', '--quiet', '--short', 'HEAD']);
      if (!stdout.trim()) throw new A2AError('VALIDATION_ERROR', `HEAD is detached in ${repo}: check out a branch to work on.`);
      return stdout.trim();
    },

    async createWorktree(repo, { path, branch, base }) {
      await assertBranchName(repo, branch);
      assertRevision(base, 'base');
      await commitOf(repo, base, 'base');
      await excludeStateDir(repo);
      // a run started again under its id (killed before its first checkpoint) finds the worktree
      // its first attempt made on this branch: it is the task's, and is taken as it is
      const target = resolve(repo, path);
      await oneAtATime(repo, async () => {
        const there = await lstat(target).then(
          () => true,
          () => false,
        );
        if (there) {
          const listed = (await exec(repo, ['worktree', 'list', '--porcelain'])).stdout;
          const mine = listed.split('\n\n').some((entry) => entry.split('\n').includes(`worktree ${target}`) && entry.split('\n').includes(`branch refs/heads/${branch}`));
          if (mine) return;
        }
        await git(repo, ['worktree', 'add', '--quiet', '-b', branch, target, base]);
      });
    },

    async removeWorktree(repo, path, options = {}) {
      const target = resolve(repo, path);
      const exists = await lstat(target).then(
        () => true,
        () => false,
      );
      // --force: a finished task's leftovers (build output, abandoned edits) must not block removal
      await oneAtATime(repo, () => (exists ? git(repo, ['worktree', 'remove', '--force', target]) : git(repo, ['worktree', 'prune'])));
      if (options.deleteBranch) {
        await assertBranchName(repo, options.deleteBranch);
        await git(repo, ['branch', '--quiet', '-D', options.deleteBranch]);
      }
    },

    async diffSummary(worktree, base) {
      assertRevision(base, 'base');
      const baseSha = await commitOf(worktree, base, 'base');
      // Against the fork point: later merges into the base are not this worktree's changes.
      const forkPoint = (await exec(worktree, ['merge-base', baseSha, 'HEAD'])).stdout.trim() || baseSha;
      const files = new Set<string>();
      let insertions = 0;
      let deletions = 0;
      const numstat = await git(worktree, ['diff', '--numstat', '-z', '--no-renames', forkPoint, '--']);
      for (const entry of numstat.split('\0')) {
        const match = /^(\d+|-)\t(\d+|-)\t(.+)$/s.exec(entry);
        if (!match) continue;
        files.add(match[3]!);
        if (match[1] !== '-') insertions += Number(match[1]);
        if (match[2] !== '-') deletions += Number(match[2]);
      }
      const untracked = await git(worktree, ['ls-files', '--others', '--exclude-standard', '-z']);
      for (const path of untracked.split('\0').filter(Boolean)) {
        files.add(path);
        const full = resolve(worktree, path);
        const stat = await lstat(full).catch(() => null);
        if (stat?.isSymbolicLink()) insertions += 1; // git stores the link target as one line
        else if (stat?.isFile()) insertions += countLines(await readFile(full)) ?? 0;
      }
      const list = [...files].sort();
      return { changedFiles: list.length, insertions, deletions, files: list } satisfies DiffSummary;
    },

    async commitAll(worktree, message) {
      await git(worktree, ['add', '--all']);
      const staged = await git(worktree, ['diff', '--cached', '--name-only', '-z']);
      if (!staged.replace(/\0/g, '')) return null;
      await git(worktree, ['commit', '--quiet', '-m', message], await identity(worktree));
      return (await git(worktree, ['rev-parse', 'HEAD'])).trim();
    },

    async merge(repo, { branch, into, message }): Promise<MergeOutcome> {
      assertRevision(branch, 'branch');
      await assertBranchName(repo, into);
      const base = await commitOf(repo, `refs/heads/${into}`, 'branch');
      const head = await commitOf(repo, branch, 'branch');
      const forkPoint = (await exec(repo, ['merge-base', base, head])).stdout.trim();
      if (forkPoint === head) return { merged: true, commit: base }; // already merged

      // Computes the merge in the object store only: nothing checked out is touched.
      const tree = await exec(repo, ['merge-tree', '--write-tree', '--name-only', '--no-messages', '-z', base, head]);
      const [treeId, ...rest] = tree.stdout.split('\0');
      const conflicts = [...new Set(rest.filter(Boolean))];
      if (tree.code !== 0 || conflicts.length > 0) return { merged: false, conflicts };

      const commit = (
        await git(repo, ['commit-tree', treeId!.trim(), '-p', base, '-p', head, '-m', message], await identity(repo))
      ).trim();
      const checkedOut = await checkedOutIn(repo, into);
      if (checkedOut === null) {
        // Compare-and-swap: fails rather than overwrite a base that moved meanwhile.
        await git(repo, ['update-ref', '-m', `a2a: merge ${branch} into ${into}`, `refs/heads/${into}`, commit, base]);
      } else {
        // The merge commit's first parent is the base: a fast-forward, which git refuses
        // as a whole (touching nothing) if it would overwrite local changes in that worktree.
        const ff = await exec(checkedOut, ['merge', '--ff-only', '--quiet', commit]);
        if (ff.code !== 0) {
          const said = (ff.stderr || ff.stdout).trim();
          if (/overwritten|local changes/i.test(said)) {
            throw new A2AError(
              'VALIDATION_ERROR',
              `Cannot merge ${branch} into ${into}: ${into} is checked out in ${checkedOut}, whose local changes the merge would overwrite. ` +
                `Commit, stash or discard them, then merge again. Nothing was changed. (git: ${said})`,
              { where: checkedOut },
            );
          }
          // e.g. the base moved meanwhile: merges into one base must run one at a time
          throw new A2AError('AGENT_ERROR', `Cannot merge ${branch} into ${into} in ${checkedOut}; nothing was changed. (git: ${said})`);
        }
      }
      return { merged: true, commit };
    },

    async push(repo, { remote, branch }) {
      assertRevision(remote, 'remote');
      await assertBranchName(repo, branch);
      await commitOf(repo, `refs/heads/${branch}`, 'branch');
      // An explicit refspec without "+" and no --force: a rejected push stays rejected.
      await git(repo, ['push', '--quiet', remote, `refs/heads/${branch}:refs/heads/${branch}`]);
    },
  };
}

/**
 * How a run uses git: null when the workspace is not a repository (or `git.worktrees` is off);
 * otherwise the repository, its base branch (the checked-out one by default) and the completion
 * action. A repository with uncommitted changes is refused before anything starts.
 */
export async function planGit(
  config: RunConfig['git'],
  options: { workspace: string; runId: string; git: Git; reviewer: ParsedAgentType },
): Promise<GitPlan | null> {
  if (config.worktrees === 'off') return null;
  const repo = await options.git.repositoryRoot(options.workspace);
  if (!repo) {
    if (config.worktrees === 'on') {
      throw new A2AError('CONFIGURATION_INVALID', `git.worktrees is "on" but ${options.workspace} is not in a git repository: run git init, or set git.worktrees to "auto" or "off"`);
    }
    return null;
  }
  await options.git.assertClean(repo);
  const base = config.base ?? (await options.git.currentBranch(repo));
  const [owner, name] = config.github ? config.github.repo.split('/') : [];
  return {
    repo,
    base,
    worktrees: resolve(repo, STATE_DIR, 'worktrees', options.runId),
    action: config.onComplete,
    maxRounds: config.maxRounds,
    remote: config.remote,
    github: owner && name ? { owner, repo: name } : null,
    reviewer: options.reviewer,
  };
}
