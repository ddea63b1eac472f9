/**
 * The completion workflow on real git repositories in temp dirs: worktrees per worker, merges
 * (clean, and a conflict that leaves the base untouched and goes back to the worker), a push to a
 * bare remote with a pull request opened on a local server that speaks the GitHub API, and a
 * reviewer whose verdict decides.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { capture, tempDir } from '../helpers.js';

const root = resolve(import.meta.dirname, '..', '..');
const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();


/** A copy of examples/git-edits/repo as a repository of its own, on main. */
function demoRepo(): string {
  const dir = tempDir('a2a-git-');
  cpSync(join(root, 'examples/git-edits/repo'), dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'add', '-A');
  git(dir, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'initial');
  return dir;
}

function writeRun(dir: string, plan: object, script: object) {
  const runDir = tempDir('a2a-plan-');
  writeFileSync(join(runDir, 'plan.json'), JSON.stringify({ script: 'script.json', ...plan }));
  writeFileSync(join(runDir, 'script.json'), JSON.stringify(script));
  return join(runDir, 'plan.json');
}

const summaryOf = (ws: string, runId: string) => new FileRunStore(ws).read(runId).summary as RunSummary;
const eventsOf = (ws: string, runId: string, type: RunEvent['type']) => new FileRunStore(ws).events(runId).filter((e) => e.type === type);

const edit = (path: string, from: string, to: string) => ({ toolCalls: [{ name: 'edit_file', arguments: { path, old_string: from, new_string: to } }] });
const done = (output: string, delayMs?: number) => ({ ...(delayMs ? { delayMs } : {}), toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output } }] });

describe('worktrees and merging', () => {
  it('runs examples/git-edits: two workers edit different files in their worktrees and both branches merge', async () => {
    const repo = demoRepo();
    const c = capture();
    expect(await main(['run', join(root, 'examples/git-edits'), '--workspace', repo, '--run-id', 'edits-1'], c.io), c.err() + c.out()).toBe(0);
    expect(readFileSync(join(repo, 'src/greet.js'), 'utf8')).toContain('export function farewell(name)');
    expect(readFileSync(join(repo, 'README.md'), 'utf8')).toContain('## Usage');
    expect(git(repo, 'status', '--porcelain')).toBe(''); // merged into the checked-out branch, cleanly
    const merges = git(repo, 'log', '--merges', '--format=%s').split('\n');
    expect(merges.sort()).toEqual(['Merge a2a/edits-1/docs: docs', 'Merge a2a/edits-1/farewell: farewell']);
    // worktrees and branches are removed after the merge
    expect(existsSync(join(repo, '.a2a/worktrees/edits-1/farewell'))).toBe(false);
    expect(git(repo, 'branch', '--list', 'a2a/*')).toBe('');
    const summary = summaryOf(repo, 'edits-1');
    const farewell = summary.tasks.find((t) => t.id === 'farewell')!;
    expect(farewell).toMatchObject({ state: 'succeeded', result: { diffStats: { changedFiles: 1, insertions: 4, deletions: 0, files: ['src/greet.js'] }, metadata: { git: { outcome: 'merged' } } } });
    // the worker's own tool edits were counted too
    expect(eventsOf(repo, 'edits-1', 'subtask.result').length).toBeGreaterThan(0);
    expect(c.out()).toMatch(/⎇ farewell: merged a2a\/edits-1\/farewell into main/);
    expect(c.out()).toContain('changes: 1 file(s), +4 −0: src/greet.js');
  });

  it('detects a conflict, leaves the base untouched, and sends the worker back with the files; the second round merges', async () => {
    const repo = demoRepo();
    const line = '  return `Hello, ${name}!`;';
    const plan = writeRun(
      repo,
      {
        id: 'clash',
        config: { permissions: { auto_approve: ['branch_merge', 'command_execution'] }, git: { worktrees: 'on', maxRounds: 1 } },
        tasks: [
          { id: 'polite', agent: '@coder', prompt: 'Make greet polite.' },
          { id: 'loud', agent: '@coder', prompt: 'Make greet loud.' },
        ],
      },
      {
        rules: [
          // round 2: take main's changes, keep this branch's side of the clash, finish again
          {
            agent: 'coder',
            prompt: 'Changes requested',
            turns: [{ toolCalls: [{ name: 'run_command', arguments: { command: 'git -c user.name=t -c user.email=t@localhost merge -q -X ours main -m "merge main"' } }] }, done('merged main, kept loud')],
          },
          { agent: 'coder', prompt: 'polite', turns: [edit('src/greet.js', line, '  return `Good day, ${name}.`;'), done('polite')] },
          { agent: 'coder', prompt: 'loud', turns: [edit('src/greet.js', line, '  return `HELLO, ${name}!!!`;'), done('loud', 400)] },
        ],
      },
    );
    const c = capture();
    expect(await main(['run', plan, '--workspace', repo, '--run-id', 'clash-1'], c.io), c.err() + c.out()).toBe(0);
    const conflict = eventsOf(repo, 'clash-1', 'branch.conflict');
    expect(conflict).toHaveLength(1);
    expect(conflict[0]!.data).toMatchObject({ conflicts: ['src/greet.js'], into: 'main' });
    // main was not touched by the failed merge: its history is the initial commit and two merges
    expect(git(repo, 'log', '--first-parent', '--format=%s', 'main').split('\n')).toEqual(['Merge a2a/clash-1/loud: loud', 'Merge a2a/clash-1/polite: polite', 'initial']);
    const changes = eventsOf(repo, 'clash-1', 'changes.requested');
    expect(changes[0]!.data).toMatchObject({ round: 1, by: 'merge' });
    expect(String(changes[0]!.data.feedback)).toContain('conflicts in: src/greet.js');
    expect(changes[0]!.workerId).toBe('w-loud-r1');
    expect(readFileSync(join(repo, 'src/greet.js'), 'utf8')).toContain('HELLO, ${name}!!!');
    expect(summaryOf(repo, 'clash-1').tasks.map((t) => t.state)).toEqual(['succeeded', 'succeeded']);
  });

  it('gives the task up when changes are still requested after the last round, keeping its branch', async () => {
    const repo = demoRepo();
    const line = '  return `Hello, ${name}!`;';
    const plan = writeRun(
      repo,
      {
        id: 'clash',
        config: { permissions: { auto_approve: ['branch_merge'] }, git: { worktrees: 'on', maxRounds: 0 } },
        tasks: [
          { id: 'a', agent: '@coder', prompt: 'variant a' },
          { id: 'b', agent: '@coder', prompt: 'variant b' },
        ],
      },
      {
        rules: [
          { agent: 'coder', prompt: 'variant a', turns: [edit('src/greet.js', line, '  return `A ${name}`;'), done('a')] },
          { agent: 'coder', prompt: 'variant b', turns: [edit('src/greet.js', line, '  return `B ${name}`;'), done('b', 400)] },
        ],
      },
    );
    const before = capture();
    expect(await main(['run', plan, '--workspace', repo, '--run-id', 'clash-2'], before.io)).toBe(1);
    const b = summaryOf(repo, 'clash-2').tasks.find((t) => t.id === 'b')!;
    expect(b.state).toBe('failed');
    expect(b.note).toContain('changes still requested after 0 round(s)');
    expect(git(repo, 'branch', '--list', 'a2a/clash-2/b')).toContain('a2a/clash-2/b');
    expect(existsSync(join(repo, '.a2a/worktrees/clash-2/b/src/greet.js'))).toBe(true);
    expect(readFileSync(join(repo, 'src/greet.js'), 'utf8')).toContain('A ${name}');
  });

  it('refuses a repository with uncommitted changes before anything starts', async () => {
    const repo = demoRepo();
    writeFileSync(join(repo, 'README.md'), 'edited by hand\n');
    const c = capture();
    expect(await main(['run', join(root, 'examples/git-edits'), '--workspace', repo], c.io)).toBe(2);
    expect(c.err()).toMatch(/has uncommitted changes \(1 path: README\.md\)\. Commit, stash or discard them first/);
    expect(existsSync(join(repo, '.a2a/runs'))).toBe(false);
  });
});

describe('pull requests and reviews', () => {
  let server: Server | null = null;
  afterAll(() => server?.close());

  it('pushes the branch to the remote (a bare repository) and opens a PR on the GitHub API', async () => {
    const repo = demoRepo();
    const bare = tempDir('a2a-bare-');
    git(bare, 'init', '-q', '--bare');
    git(repo, 'remote', 'add', 'origin', bare);
    const requests: Array<{ url: string; auth: string; body: Record<string, unknown> }> = [];
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        requests.push({ url: req.url ?? '', auth: String(req.headers.authorization), body: JSON.parse(body) as Record<string, unknown> });
        res.writeHead(201, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ number: 7, html_url: 'https://github.example/acme/greet/pull/7' }));
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    process.env.A2A_TEST_GITHUB_TOKEN = 'ghp_testtoken0123456789abcdefghijklmno';
    const plan = writeRun(
      repo,
      {
        id: 'pr',
        config: {
          permissions: { auto_approve: ['branch_push', 'pr_creation'] },
          git: { worktrees: 'on', onComplete: 'pr', github: { repo: 'acme/greet', tokenEnv: 'A2A_TEST_GITHUB_TOKEN', apiUrl: `http://127.0.0.1:${port}` } },
        },
        tasks: [{ id: 'farewell', agent: '@coder', prompt: 'Add farewell.' }],
      },
      { rules: [{ agent: 'coder', turns: [edit('src/greet.js', '}\n', '}\n\nexport const farewell = (n) => `Bye ${n}`;\n'), done('Added farewell.')] }] },
    );
    const c = capture();
    expect(await main(['run', plan, '--workspace', repo, '--run-id', 'pr-1'], c.io), c.err() + c.out()).toBe(0);
    expect(git(bare, 'branch', '--list')).toContain('a2a/pr-1/farewell');
    expect(git(bare, 'show', 'a2a/pr-1/farewell:src/greet.js')).toContain('export const farewell');
    expect(requests).toHaveLength(1);
    expect(requests[0]!.url).toBe('/repos/acme/greet/pulls');
    expect(requests[0]!.auth).toBe('Bearer ghp_testtoken0123456789abcdefghijklmno');
    expect(requests[0]!.body).toMatchObject({ head: 'a2a/pr-1/farewell', base: 'main' });
    expect(String(requests[0]!.body.body)).toContain('1 file(s), +2 −0');
    const task = summaryOf(repo, 'pr-1').tasks[0]!;
    expect(task.result!.metadata).toMatchObject({ git: { outcome: 'pr_opened', pullRequest: { number: 7, url: 'https://github.example/acme/greet/pull/7' } } });
    expect(git(repo, 'log', '--format=%s', 'main')).toBe('initial'); // nothing merged locally
    const audit = JSON.stringify(new FileRunStore(repo).readLines('pr-1', 'audit.jsonl'));
    expect(audit).toContain('"type":"pr.created"');
    expect(audit).not.toContain('ghp_testtoken');
  });

  it('has a reviewer read the branch: changes requested go back to the worker, approval merges', async () => {
    const repo = demoRepo();
    const plan = writeRun(
      repo,
      {
        id: 'review',
        config: { permissions: { auto_approve: ['branch_merge'] }, git: { worktrees: 'on', onComplete: 'review' } },
        tasks: [{ id: 'farewell', agent: '@coder', prompt: 'Add farewell.' }],
      },
      {
        rules: [
          {
            agent: 'reviewer',
            prompt: 'now with a doc comment',
            turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'Looks good.', metadata: { verdict: 'approve' } } }] }],
          },
          {
            agent: 'reviewer',
            turns: [
              { toolCalls: [{ name: 'read_file', arguments: { path: 'src/greet.js' } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'Add a doc comment to farewell.', metadata: { verdict: 'request_changes' } } }] },
            ],
          },
          { agent: 'coder', prompt: 'Changes requested', turns: [edit('src/greet.js', 'export const farewell', '/** Says goodbye. */\nexport const farewell'), done('Added farewell, now with a doc comment.')] },
          { agent: 'coder', turns: [edit('src/greet.js', '}\n', '}\n\nexport const farewell = (n) => `Bye ${n}`;\n'), done('Added farewell.')] },
        ],
      },
    );
    const c = capture();
    expect(await main(['run', plan, '--workspace', repo, '--run-id', 'review-1'], c.io), c.err() + c.out()).toBe(0);
    expect(eventsOf(repo, 'review-1', 'review.requested').map((e) => e.workerId)).toEqual(['w-farewell-review1', 'w-farewell-review2']);
    expect(eventsOf(repo, 'review-1', 'changes.requested')[0]!.data).toMatchObject({ by: 'reviewer', feedback: 'Add a doc comment to farewell.' });
    expect(readFileSync(join(repo, 'src/greet.js'), 'utf8')).toContain('/** Says goodbye. */');
    const summary = summaryOf(repo, 'review-1');
    expect(summary.tasks[0]).toMatchObject({ state: 'succeeded', result: { metadata: { git: { outcome: 'merged' } } } });
    expect(summary.conversations['farewell']!.filter((e) => e.kind === 'review').map((e) => e.text)).toEqual([
      'changes requested: Add a doc comment to farewell.',
      'approved: Looks good.',
    ]);
  });
});
