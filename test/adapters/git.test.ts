import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createGit, FALLBACK_IDENTITY } from '../../adapters/git.js';
import { isA2AError } from '../../actors/errors.js';
import { tempDir } from '../helpers.js';

const gitPort = createGit();

/** Plain git for fixtures; the identity comes from the environment, not from any config. */
function sh(cwd: string, ...args: string[]): string {
  const env = { ...process.env, GIT_AUTHOR_NAME: 'Test', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 'Test', GIT_COMMITTER_EMAIL: 't@example.com' };
  return execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const lines = (...xs: string[]) => xs.map((x) => `${x}\n`).join('');

/** A repository on `main` with two files of a few lines, committed. */
function makeRepo(): string {
  const repo = tempDir('a2a-git-');
  sh(repo, 'init', '--quiet', '-b', 'main');
  writeFileSync(join(repo, 'a.txt'), lines('a1', 'a2', 'a3'));
  writeFileSync(join(repo, 'b.txt'), lines('b1', 'b2', 'b3'));
  sh(repo, 'add', '.');
  sh(repo, 'commit', '--quiet', '-m', 'init');
  return repo;
}

/** Everything a failed merge must leave as it was. */
function snapshot(repo: string) {
  return {
    main: sh(repo, 'rev-parse', 'refs/heads/main'),
    head: sh(repo, 'symbolic-ref', 'HEAD'),
    headSha: sh(repo, 'rev-parse', 'HEAD'),
    index: sh(repo, 'ls-files', '--stage'),
    status: sh(repo, 'status', '--porcelain=v1', '--untracked-files=all'),
    files: { a: readFileSync(join(repo, 'a.txt'), 'utf8'), b: readFileSync(join(repo, 'b.txt'), 'utf8') },
    merging: existsSync(join(repo, '.git', 'MERGE_HEAD')),
  };
}

async function worktree(repo: string, task: string, base = 'main'): Promise<string> {
  const path = join(repo, '.a2a', 'worktrees', task);
  await gitPort.createWorktree(repo, { path, branch: `a2a/${task}`, base });
  return path;
}

describe('git adapter', () => {
  let repo: string;
  beforeEach(() => {
    repo = makeRepo();
  });
  afterEach(() => rmSync(repo, { recursive: true, force: true }));

  it('should create a worktree on a new branch, and remove it with its branch', async () => {
    const wt = await worktree(repo, 't1');
    expect(readFileSync(join(wt, 'a.txt'), 'utf8')).toBe(lines('a1', 'a2', 'a3'));
    expect(await gitPort.currentBranch(wt)).toBe('a2a/t1');
    expect(await gitPort.currentBranch(repo)).toBe('main');
    expect(sh(repo, 'worktree', 'list')).toContain(wt);

    await gitPort.removeWorktree(repo, wt, { deleteBranch: 'a2a/t1' });
    expect(existsSync(wt)).toBe(false);
    expect(sh(repo, 'worktree', 'list')).not.toContain(wt);
    expect(sh(repo, 'branch', '--list', 'a2a/t1')).toBe('');
  });

  it('should create and remove many worktrees of one repository at once (tasks starting together)', async () => {
    // git reads every worktree's metadata when it adds one: one half-written beside it failed the add
    const tasks = Array.from({ length: 8 }, (_, i) => `p${i}`);
    for (let round = 0; round < 2; round++) {
      const made = await Promise.all(tasks.map((t) => worktree(repo, `${t}-${round}`)));
      expect(made.every((wt) => existsSync(join(wt, 'a.txt')))).toBe(true);
      await Promise.all(made.map((wt, i) => gitPort.removeWorktree(repo, wt, { deleteBranch: `a2a/${tasks[i]}-${round}` })));
    }
    expect(sh(repo, 'worktree', 'list').split('\n')).toHaveLength(1);
  });

  it('should take the worktree a first attempt of the same run made for the task, as it is (a restarted run)', async () => {
    const wt = await worktree(repo, 't1');
    writeFileSync(join(wt, 'work.txt'), 'from the first attempt');
    expect(await worktree(repo, 't1')).toBe(wt);
    expect(readFileSync(join(wt, 'work.txt'), 'utf8')).toBe('from the first attempt');
    // another branch at that path is still an error
    await expect(gitPort.createWorktree(repo, { path: wt, branch: 'a2a/other', base: 'main' })).rejects.toThrow();
  });

    it('should remove a worktree that has uncommitted leftovers, or that is already gone', async () => {
    const wt = await worktree(repo, 't1');
    writeFileSync(join(wt, 'build.log'), 'x');
    writeFileSync(join(wt, 'a.txt'), 'changed');
    await gitPort.removeWorktree(repo, wt);
    expect(existsSync(wt)).toBe(false);
    expect(sh(repo, 'branch', '--list', 'a2a/t1')).toContain('a2a/t1');

    const gone = await worktree(repo, 't2');
    rmSync(gone, { recursive: true, force: true });
    await gitPort.removeWorktree(repo, gone, { deleteBranch: 'a2a/t2' });
    expect(sh(repo, 'worktree', 'list')).not.toContain('t2');
  });

  it('should refuse a branch name git would read as an option, and an unknown base', async () => {
    await expect(gitPort.createWorktree(repo, { path: join(repo, '.a2a', 'x'), branch: '--force', base: 'main' })).rejects.toThrow(
      /not a valid branch name/,
    );
    await expect(gitPort.createWorktree(repo, { path: join(repo, '.a2a', 'x'), branch: 'ok', base: 'nope' })).rejects.toThrow(
      /No base "nope"/,
    );
  });

  it('should fail fast on a dirty workspace, naming the files, and ignore its own .a2a directory', async () => {
    await expect(gitPort.assertClean(repo)).resolves.toBeUndefined();

    // the runtime's state (and worktrees inside it) never make the repository dirty
    mkdirSync(join(repo, '.a2a', 'logs'), { recursive: true });
    writeFileSync(join(repo, '.a2a', 'logs', 'run.jsonl'), '{}\n');
    await worktree(repo, 't1');
    await expect(gitPort.assertClean(repo)).resolves.toBeUndefined();
    expect(readFileSync(join(repo, '.git', 'info', 'exclude'), 'utf8')).toContain('.a2a/');
    expect(existsSync(join(repo, '.gitignore'))).toBe(false);

    writeFileSync(join(repo, 'a.txt'), 'changed\n'); // unstaged
    writeFileSync(join(repo, 'new.txt'), 'new\n'); // untracked
    writeFileSync(join(repo, 'b.txt'), 'staged\n');
    sh(repo, 'add', 'b.txt'); // staged
    const error = await gitPort.assertClean(repo).catch((e: unknown) => e);
    expect(isA2AError(error, 'VALIDATION_ERROR')).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('has uncommitted changes (3 paths: ');
    for (const file of ['a.txt', 'b.txt', 'new.txt']) expect(message).toContain(file);
    expect(message).toContain('Commit, stash or discard them');
    expect(message).not.toContain('.a2a');
  });

  it('should name at most five dirty files', async () => {
    for (let i = 0; i < 8; i++) writeFileSync(join(repo, `f${i}.txt`), 'x');
    await expect(gitPort.assertClean(repo)).rejects.toThrow(/8 paths: f0\.txt, f1\.txt, f2\.txt, f3\.txt, f4\.txt and 3 more/);
  });

  it('should summarise what a worktree changed: committed, uncommitted, untracked and deleted', async () => {
    const wt = await worktree(repo, 't1');
    writeFileSync(join(wt, 'a.txt'), lines('a1', 'A2', 'a3', 'a4')); // +2 -1
    await gitPort.commitAll(wt, 'edit a');
    rmSync(join(wt, 'b.txt')); // -3, uncommitted
    writeFileSync(join(wt, 'new.txt'), 'one\ntwo\nthree'); // untracked, 3 lines without a final newline
    writeFileSync(join(wt, 'image.bin'), Buffer.from([0, 1, 2, 0, 255])); // binary: changed, no lines
    // later merges into the base are not this worktree's changes
    writeFileSync(join(repo, 'c.txt'), lines('c1'));
    sh(repo, 'add', 'c.txt');
    sh(repo, 'commit', '--quiet', '-m', 'c');

    expect(await gitPort.diffSummary(wt, 'main')).toEqual({
      changedFiles: 4,
      insertions: 5,
      deletions: 4,
      files: ['a.txt', 'b.txt', 'image.bin', 'new.txt'],
    });
    // diffSummary only reads: nothing was staged
    expect(sh(wt, 'diff', '--cached', '--name-only')).toBe('');
  });

  it('should commit everything, and answer null when there is nothing to commit', async () => {
    const wt = await worktree(repo, 't1');
    expect(await gitPort.commitAll(wt, 'nothing')).toBeNull();
    writeFileSync(join(wt, 'a.txt'), 'changed\n');
    writeFileSync(join(wt, 'new.txt'), 'new\n');
    const sha = await gitPort.commitAll(wt, 'task t1: done');
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    expect(sh(wt, 'rev-parse', 'HEAD')).toBe(sha);
    expect(sh(wt, 'log', '-1', '--format=%s')).toBe('task t1: done');
    expect(sh(wt, 'show', '--name-only', '--format=', 'HEAD').split('\n').sort()).toEqual(['a.txt', 'new.txt']);
    expect(sh(wt, 'status', '--porcelain')).toBe('');
  });

  it('should commit with a fallback author when no git identity is configured', async () => {
    const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
    const home = tempDir('a2a-home-');
    process.env.HOME = home;
    process.env.XDG_CONFIG_HOME = home;
    try {
      const wt = await worktree(repo, 't1');
      writeFileSync(join(wt, 'a.txt'), 'changed\n');
      const sha = await gitPort.commitAll(wt, 'anonymous');
      expect(sh(wt, 'log', '-1', '--format=%an <%ae> / %cn <%ce>', sha!)).toBe(
        `${FALLBACK_IDENTITY.name} <${FALLBACK_IDENTITY.email}> / ${FALLBACK_IDENTITY.name} <${FALLBACK_IDENTITY.email}>`,
      );
      // and no identity was written to any configuration
      expect(spawnSync('git', ['config', '--get', 'user.name'], { cwd: wt }).status).toBe(1);
    } finally {
      Object.assign(process.env, saved);
      if (saved.XDG_CONFIG_HOME === undefined) delete process.env.XDG_CONFIG_HOME;
    }
  });

  it('should merge two worktrees that changed different files, into the checked-out base', async () => {
    const one = await worktree(repo, 't1');
    const two = await worktree(repo, 't2');
    writeFileSync(join(one, 'a.txt'), lines('a1', 'A2', 'a3'));
    writeFileSync(join(two, 'b.txt'), lines('b1', 'B2', 'b3'));
    await gitPort.commitAll(one, 't1');
    await gitPort.commitAll(two, 't2');

    const first = await gitPort.merge(repo, { branch: 'a2a/t1', into: 'main', message: 'Merge t1' });
    const second = await gitPort.merge(repo, { branch: 'a2a/t2', into: 'main', message: 'Merge t2' });
    expect(first.merged && second.merged).toBe(true);
    if (!second.merged) return;
    expect(sh(repo, 'rev-parse', 'main')).toBe(second.commit);
    expect(sh(repo, 'log', '-1', '--format=%s %P', 'main')).toBe(`Merge t2 ${first.merged ? first.commit : ''} ${sh(repo, 'rev-parse', 'a2a/t2')}`);
    // the checked-out base moved with its files and index: nothing left to commit
    expect(readFileSync(join(repo, 'a.txt'), 'utf8')).toBe(lines('a1', 'A2', 'a3'));
    expect(readFileSync(join(repo, 'b.txt'), 'utf8')).toBe(lines('b1', 'B2', 'b3'));
    expect(sh(repo, 'status', '--porcelain')).toBe('');
    // merging again changes nothing
    expect(await gitPort.merge(repo, { branch: 'a2a/t2', into: 'main', message: 'again' })).toEqual({ merged: true, commit: second.commit });
  });

  it('should merge into a branch that is not checked out without touching the working tree', async () => {
    sh(repo, 'branch', 'integration');
    const one = await worktree(repo, 't1', 'integration');
    writeFileSync(join(one, 'a.txt'), lines('a1', 'A2', 'a3'));
    await gitPort.commitAll(one, 't1');
    const before = snapshot(repo);

    const outcome = await gitPort.merge(repo, { branch: 'a2a/t1', into: 'integration', message: 'Merge t1' });
    expect(outcome.merged).toBe(true);
    expect(sh(repo, 'rev-parse', 'integration')).toBe(outcome.merged ? outcome.commit : '');
    expect(sh(repo, 'show', 'integration:a.txt')).toBe(lines('a1', 'A2', 'a3').trim());
    expect(snapshot(repo)).toEqual(before);
  });

  it('should detect a conflict, list the file, and leave the base exactly as it was', async () => {
    const one = await worktree(repo, 't1');
    const two = await worktree(repo, 't2');
    writeFileSync(join(one, 'a.txt'), lines('a1', 'ONE', 'a3'));
    writeFileSync(join(two, 'a.txt'), lines('a1', 'TWO', 'a3'));
    writeFileSync(join(two, 'b.txt'), lines('b1', 'b2', 'b3', 'b4'));
    await gitPort.commitAll(one, 't1');
    await gitPort.commitAll(two, 't2');
    expect((await gitPort.merge(repo, { branch: 'a2a/t1', into: 'main', message: 'Merge t1' })).merged).toBe(true);
    const before = snapshot(repo);

    const outcome = await gitPort.merge(repo, { branch: 'a2a/t2', into: 'main', message: 'Merge t2' });
    expect(outcome).toEqual({ merged: false, conflicts: ['a.txt'] });
    const after = snapshot(repo);
    expect(after).toEqual(before);
    expect(after.merging).toBe(false);
    expect(after.files.a).toBe(lines('a1', 'ONE', 'a3'));
    expect(after.status).toBe('');
  });

  it('should detect a conflict into a branch that is not checked out, leaving its ref alone', async () => {
    sh(repo, 'branch', 'integration');
    const one = await worktree(repo, 't1', 'integration');
    const two = await worktree(repo, 't2', 'integration');
    writeFileSync(join(one, 'b.txt'), 'one\n');
    writeFileSync(join(two, 'b.txt'), 'two\n');
    await gitPort.commitAll(one, 't1');
    await gitPort.commitAll(two, 't2');
    await gitPort.merge(repo, { branch: 'a2a/t1', into: 'integration', message: 'Merge t1' });
    const ref = sh(repo, 'rev-parse', 'integration');
    const before = snapshot(repo);
    expect(await gitPort.merge(repo, { branch: 'a2a/t2', into: 'integration', message: 'Merge t2' })).toEqual({
      merged: false,
      conflicts: ['b.txt'],
    });
    expect(sh(repo, 'rev-parse', 'integration')).toBe(ref);
    expect(snapshot(repo)).toEqual(before);
  });

  it('should refuse to merge over local changes in the checked-out base, touching nothing', async () => {
    const one = await worktree(repo, 't1');
    writeFileSync(join(one, 'a.txt'), lines('a1', 'A2', 'a3'));
    await gitPort.commitAll(one, 't1');
    writeFileSync(join(repo, 'a.txt'), 'user edit\n');
    const before = snapshot(repo);
    await expect(gitPort.merge(repo, { branch: 'a2a/t1', into: 'main', message: 'Merge t1' })).rejects.toThrow(
      /local changes the merge would overwrite/,
    );
    expect(snapshot(repo)).toEqual(before);
  });

  it('should push a branch to a remote, and never force it', async () => {
    const remote = tempDir('a2a-remote-');
    sh(remote, 'init', '--quiet', '--bare');
    sh(repo, 'remote', 'add', 'origin', remote);
    const wt = await worktree(repo, 't1');
    writeFileSync(join(wt, 'a.txt'), 'pushed\n');
    const sha = await gitPort.commitAll(wt, 't1');

    await gitPort.push(repo, { remote: 'origin', branch: 'a2a/t1' });
    expect(sh(remote, 'rev-parse', 'refs/heads/a2a/t1')).toBe(sha);

    // rewrite the branch: a non-fast-forward push is rejected and the remote keeps its commit
    sh(wt, 'reset', '--quiet', '--hard', 'main');
    writeFileSync(join(wt, 'b.txt'), 'rewritten\n');
    await gitPort.commitAll(wt, 'rewritten');
    await expect(gitPort.push(repo, { remote: 'origin', branch: 'a2a/t1' })).rejects.toThrow(/rejected|fetch first|non-fast-forward/);
    expect(sh(remote, 'rev-parse', 'refs/heads/a2a/t1')).toBe(sha);
    rmSync(remote, { recursive: true, force: true });
  });
});
