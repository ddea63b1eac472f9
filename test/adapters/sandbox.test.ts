/**
 * The sandbox under attack: real bwrap, real files in temp dirs. Every way out of the worktree
 * is tried through run_command and the file tools; each attempt is counted, and the last test
 * asserts that none got out. Without bubblewrap every test fails, saying how to install it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join, relative } from 'node:path';
import { networkInterfaces } from 'node:os';
import { SimulatedClock } from 'xstate';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FileLockTable } from '../../actors/session/fileLocks.js';
import { AgentRegistry, type AgentDefinition } from '../../actors/config/registry.js';
import { codingTools } from '../../actors/tools/coding.js';
import { childIds, ToolCatalog, type ToolContext } from '../../actors/tools/index.js';
import type { PermissionAnswer, PermissionAsk } from '../../actors/tools/types.js';
import { createGit } from '../../adapters/git.js';
import { bubblewrapRunner, unconfinedRunner } from '../../adapters/sandbox/index.js';
import { outsideLinks } from '../../adapters/sandbox/hardlinks.js';
import type { CommandRunner } from '../../machines/ports.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';

const catalog = new ToolCatalog([...codingTools]);
const coder = {
  capability: { id: 'coder', name: 'coder', description: '', strengths: [], weaknesses: [], canSpawnSubTasks: false, tools: codingTools.map((t) => t.name), source: 'builtin' },
  systemPrompt: '',
  files: [],
} as AgentDefinition;
const sandbox = bubblewrapRunner();

function context(worktree: string, o: { commands?: CommandRunner; deny?: PermissionAsk['action'][] } = {}) {
  const asks: PermissionAsk[] = [];
  const ctx: ToolContext = {
    spec: { id: 'w-t.1' } as SessionSpec,
    worktree,
    signal: new AbortController().signal,
    permit: async (ask): Promise<PermissionAnswer> => {
      asks.push(ask);
      return o.deny?.includes(ask.action) ? { approved: false, decidedBy: 'human', reason: 'no' } : { approved: true, decidedBy: 'policy' };
    },
    locks: new FileLockTable(),
    registry: new AgentRegistry([]),
    family: null,
    updates: [],
    ids: childIds(),
    clock: new SimulatedClock(),
    commands: o.commands ?? sandbox,
  };
  return { ctx, asks };
}
const call = (ctx: ToolContext, name: string, args: Record<string, unknown>) => catalog.run({ id: 'c1', name, arguments: args }, coder, ctx);
const run = async (worktree: string, command: string, extra: Record<string, unknown> = {}) => (await call(context(worktree).ctx, 'run_command', { command, ...extra })).content;
/** The whole tool result of a command run by `runner`. */
const runWith = (runner: CommandRunner, worktree: string, command: string, extra: Record<string, unknown> = {}) => call(context(worktree, { commands: runner }).ctx, 'run_command', { command, timeoutMs: 8_000, ...extra });
/** What a command printed: a tool result without its "$ command", status and "[sandbox…]" lines. */
function body(content: string): string {
  const lines = content.split('\n');
  let first = 2;
  while (lines[first]?.startsWith('[sandbox')) first++;
  return lines.slice(first).join('\n');
}

/** Every escape attempt, and whether it got out. */
const table: Array<{ form: string; via: string; escaped: boolean }> = [];
function attempt(form: string, via: string, escaped: boolean, shown?: string): void {
  table.push({ form, via, escaped });
  expect(escaped, `${form} through ${via} got out${shown === undefined ? '' : `; the command printed:\n${shown}`}`).toBe(false);
}

/** Polls `done` until it holds (or fails after `ms`): waits on a condition, never a fixed sleep. */
async function waitFor(done: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
const processesWith = (marker: string) =>
  execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(marker) && !l.includes('ps -eo'));

function git(cwd: string, ...args: string[]): string {
  const env = { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@l', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@l' };
  return execFileSync('git', args, { cwd, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const SECRET = `TOP-SECRET-${process.pid}-${Date.now()}`;
const base = tempDir('a2a-sandbox-');
const outside = join(base, 'outside');
const repo = join(base, 'repo');
const wt = join(repo, '.a2a', 'worktrees', 'r1', 't1');
const sibling = join(repo, '.a2a', 'worktrees', 'r1', 't2');
const plain = join(base, 'plain');
const common = join(repo, '.git');

let missing: string | null = null;
// every test fails, one by one, with how to install bubblewrap: never skipped
beforeEach(() => {
  if (missing) throw new Error(`The sandbox tests need bubblewrap: ${missing}`);
});
beforeAll(async () => {
  const status = await sandbox.check();
  if (!status.ready) return void (missing = status.reason);
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), `${SECRET}\n`);
  mkdirSync(repo);
  git(repo, 'init', '-q', '-b', 'main');
  writeFileSync(join(repo, 'README.md'), 'main checkout\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '-qm', 'init');
  const port = createGit();
  await port.createWorktree(repo, { path: wt, branch: 'a2a/r1/t1', base: 'main' });
  await port.createWorktree(repo, { path: sibling, branch: 'a2a/r1/t2', base: 'main' });
  writeFileSync(join(sibling, 'sibling.txt'), `${SECRET}\n`);
  mkdirSync(join(repo, '.a2a', 'runs', 'r1'), { recursive: true });
  writeFileSync(join(repo, '.a2a', 'runs', 'r1', 'events.jsonl'), `${SECRET}\n`);
  // a workspace without git: the worktree is the workspace, and holds .a2a/
  mkdirSync(join(plain, '.a2a', 'runs', 'r1', 'control'), { recursive: true });
  writeFileSync(join(plain, '.a2a', 'runs', 'r1', 'events.jsonl'), `${SECRET}\n`);
  writeFileSync(join(plain, 'main.c'), 'int main(void) { return 0; }\n');
  // a hard link placed in the worktree from outside: the same inode as the secret
  linkSync(join(outside, 'secret.txt'), join(wt, 'hard.txt'));
});
afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('sandbox: bubblewrap is there', () => {
  it('should start a sandbox on this machine (or every test here fails, saying how to install it)', async () => {
    expect(await sandbox.check()).toEqual({ ready: true });
  });
});

describe('sandbox: the file system through run_command', () => {
  it('should not read outside by a relative path, an absolute path or /proc/self/root', async () => {
    const rel = relative(wt, join(outside, 'secret.txt'));
    for (const [form, command] of [
      ['relative ../ path (read)', `cat ${rel}`],
      ['absolute path outside (read)', `cat ${join(outside, 'secret.txt')}`],
      ['/proc/self/root/... (read)', `cat /proc/self/root${join(outside, 'secret.txt')}`],
      ['/proc/1/root/... (read)', `cat /proc/1/root${join(outside, 'secret.txt')}`],
    ] as const) {
      const out = await run(wt, command);
      attempt(form, 'run_command', out.includes(SECRET));
      expect(out).toMatch(/No such file or directory/);
    }
  });

  it('should not write outside by a relative or absolute path', async () => {
    const out = await run(wt, `echo pwned >> ${relative(wt, join(outside, 'secret.txt'))}; echo pwned > ${join(outside, 'new.txt')}; mkdir -p ${join(outside, 'dir')}`);
    attempt('relative ../ path (write)', 'run_command', readFileSync(join(outside, 'secret.txt'), 'utf8') !== `${SECRET}\n`);
    attempt('absolute path outside (write)', 'run_command', existsSync(join(outside, 'new.txt')) || existsSync(join(outside, 'dir')));
    expect(out).toMatch(/cannot create .*: Directory nonexistent/);
  });

  it('should not follow a symbolic link out, to read or to write', async () => {
    const out = await run(wt, `ln -s ${join(outside, 'secret.txt')} link-read; cat link-read; ln -s ${join(outside, 'victim.txt')} link-write; echo pwned > link-write; ln -s ${outside} link-dir; ls link-dir/`);
    attempt('symlink to outside (read)', 'run_command', out.includes(SECRET));
    attempt('symlink to outside (write)', 'run_command', existsSync(join(outside, 'victim.txt')));
    attempt('symlinked directory outside (list)', 'run_command', body(out).includes('secret.txt'));
  });

  it('should not make a hard link to a file outside, nor to git config', async () => {
    const out = await run(wt, `ln ${join(outside, 'secret.txt')} hl; cat hl; ln ${join(common, 'config')} cfg && echo '[core] hooksPath = /tmp' >> cfg`);
    attempt('hard link to outside (create + read)', 'run_command', out.includes(SECRET));
    attempt('hard link to the repository config (write)', 'run_command', readFileSync(join(common, 'config'), 'utf8').includes('hooksPath'));
  });

  it('should show only the system at /, and no host directory', async () => {
    const out = await run(wt, 'cd / && ls -A');
    const listed = body(out).split('\n');
    const allowed = ['bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'sbin', 'tmp', 'usr'];
    attempt('cd / && ls (host directories visible)', 'run_command', listed.some((d) => !allowed.includes(d)));
    expect(listed).toEqual(expect.arrayContaining(['usr', 'etc', 'tmp', 'proc']));
    const tmp = await run(wt, `ls -A /tmp ${base} ${repo}`);
    attempt('the parents of the worktree (list)', 'run_command', /outside|plain|README|runs/.test(body(tmp)));
  });

  it('should not show another worktree, the main checkout or .a2a/ state', async () => {
    const out = await run(wt, `cat ${join(sibling, 'sibling.txt')}; ls -A ${join(repo, '.a2a', 'worktrees', 'r1')}; cat ${join(repo, 'README.md')}; cat ${join(repo, '.a2a', 'runs', 'r1', 'events.jsonl')}`);
    attempt('a sibling worktree (read)', 'run_command', out.includes(SECRET) || /^t2$/m.test(body(out)));
    attempt('the main checkout (read)', 'run_command', body(out).includes('main checkout'));
    attempt('.a2a/ run state in a git repository (read)', 'run_command', out.includes(SECRET));
    const plainOut = await run(plain, 'ls -A .a2a; cat .a2a/runs/r1/events.jsonl; touch .a2a/runs/r1/control/approve-all; echo done');
    attempt('.a2a/ of a workspace without git (read)', 'run_command', plainOut.includes(SECRET));
    attempt('.a2a/ of a workspace without git (write a control request)', 'run_command', existsSync(join(plain, '.a2a', 'runs', 'r1', 'control', 'approve-all')));
    expect(await run(plain, 'cat main.c')).toContain('int main');
  });

  it('should mask /etc secrets, and run without capabilities', async () => {
    const out = await run(wt, 'cat /etc/shadow; ls -A /etc/ssh; umount /etc/shadow; grep CapEff /proc/self/status; touch /etc/x /usr/x');
    attempt('/etc/shadow (read)', 'run_command', /^root:/m.test(out));
    // (the line may end the output: stdout and stderr arrive in either order)
    attempt('unmount a mask (needs CAP_SYS_ADMIN)', 'run_command', !/^CapEff:\s+0+$/m.test(out), out);
    attempt('write to the system', 'run_command', existsSync('/etc/x') || existsSync('/usr/x'));
  });

  it('should close every descriptor the runtime holds or inherited', async () => {
    const out = await run(wt, 'ls /proc/self/fd');
    // 0-2, and the one ls reads the directory with
    attempt('descriptors of the runtime (inherited by the command)', 'run_command', body(out).split('\n').some((fd) => Number(fd) > 3));
  });

  it('should not see the runtime\'s processes', async () => {
    const out = await run(wt, `cat /proc/${process.pid}/environ; ls /proc | grep -c '^[0-9]'`);
    attempt('/proc/<runtime pid>/environ (read)', 'run_command', out.includes('PATH='));
    expect(Number(out.trim().split('\n').at(-1))).toBeLessThan(10);
  });
});

describe('sandbox: environment, processes, network', () => {
  it('should pass no credentials, and HOME is private', async () => {
    process.env.OPENAI_API_KEY = `sk-${SECRET}`;
    process.env.A2A_NATS_PASSWORD = `nats-${SECRET}`;
    try {
      const out = await run(wt, 'echo "key=[$OPENAI_API_KEY] nats=[$A2A_NATS_PASSWORD] home=$HOME"; env');
      attempt('echo $OPENAI_API_KEY / env', 'run_command', out.includes(SECRET));
      expect(out).toContain('key=[] nats=[] home=/tmp');
      const loose = await call(context(wt, { commands: unconfinedRunner() }).ctx, 'run_command', { command: 'echo "key=[$OPENAI_API_KEY]"; env' });
      attempt('echo $OPENAI_API_KEY / env (unconfined opt-out)', 'run_command', loose.content.includes(SECRET));
    } finally {
      delete process.env.OPENAI_API_KEY;
      delete process.env.A2A_NATS_PASSWORD;
    }
  });

  it('should kill a background process when the command ends: its marker never appears', async () => {
    const tag = `30.${process.pid % 1000}${String(Date.now()).slice(-6)}`;
    const out = await run(wt, `(sleep ${tag}; echo late > marker) & echo started`);
    expect(out).toMatch(/\[exit code 0; \d+ ms\]\n/);
    expect(body(out)).toBe('started');
    await waitFor(() => processesWith(`sleep ${tag}`).length === 0, 3000, `a process "sleep ${tag}" is still running`);
    attempt('a background process outliving its command', 'run_command', processesWith(tag).length > 0 || existsSync(join(wt, 'marker')));
  });

  it('should kill everything a command started when it times out', async () => {
    const tag = `40.${process.pid % 1000}${String(Date.now()).slice(-6)}`;
    const started = Date.now();
    const out = await run(wt, `sleep ${tag} & echo started; sleep 5${tag.slice(2)}`, { timeoutMs: 300 });
    expect(out).toContain('[timed out after 300 ms: the command and everything it started were killed;');
    expect(Date.now() - started).toBeLessThan(3000);
    await waitFor(() => processesWith(tag.slice(3)).length === 0, 3000, `a process with ${tag} is still running`);
    attempt('processes outliving a timeout', 'run_command', processesWith(tag.slice(3)).length > 0);
  });

  describe('network', () => {
    let server: Server;
    let port = 0;
    const received: string[] = [];
    // this machine's own address on its network: what egress reaches (the traffic stays on this machine)
    const external = Object.values(networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
    beforeAll(async () => {
      // each line is answered: a command that waits for the answer knows its line arrived (one
      // that wrote and exited could end its network, and slirp4netns with it, before the line
      // left: on a loaded machine it did)
      server = createServer((socket: Socket) =>
        socket.on('data', (d) => {
          received.push(d.toString());
          socket.write('ack\n');
        }),
      );
      await new Promise<void>((r) => server.listen(0, '0.0.0.0', () => r()));
      port = (server.address() as { port: number }).port;
    });
    afterAll(() => new Promise<void>((r) => server.close(() => r())));
    const connect = (word: string, host = '127.0.0.1') => `timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port} && echo ${word} >&3 && read -r reply <&3 && echo "CONNECTED $reply"'`;

    it('should refuse a connection without network: true, asking nothing', async () => {
      const { ctx, asks } = context(wt);
      const out = (await call(ctx, 'run_command', { command: connect('no-network') })).content;
      attempt('a TCP connection to the host\'s loopback (no network)', 'run_command', body(out).includes('CONNECTED') || received.includes('no-network\n'));
      expect(out).toMatch(/Connection refused/);
      expect(asks.map((a) => a.action)).toEqual(['command_execution']);
    });

    it('should run nothing when network_access is denied', async () => {
      const { ctx, asks } = context(wt, { deny: ['network_access'] });
      const out = (await call(ctx, 'run_command', { command: connect('denied'), network: true })).content;
      expect(out).toMatch(/^TOOL_NOT_ALLOWED: Permission network_access for `.*` was denied by human: no\. Nothing was run\.$/);
      expect(asks.map((a) => a.action)).toEqual(['command_execution', 'network_access']);
      attempt('a TCP connection with network_access denied', 'run_command', received.includes('denied\n'));
    });

    it('should connect out with network: true once network_access is approved, and never to the host\'s loopback', async () => {
      expect(external, 'this machine has no IPv4 address besides loopback: the egress test needs one').toBeDefined();
      const out = await run(wt, connect('approved', external!), { network: true });
      expect(body(out)).toContain('CONNECTED');
      await waitFor(() => received.includes('approved\n'), 3000, 'the server did not receive the approved connection');
      // the host's loopback services: neither as 127.0.0.1 (the sandbox's own) nor through the gateway
      for (const [form, host] of [['127.0.0.1', '127.0.0.1'], ['the gateway to the host (10.0.2.2)', '10.0.2.2']] as const) {
        const word = `loop-${host}`;
        const tried = await run(wt, connect(word, host), { network: true });
        attempt(`a TCP connection to the host's loopback via ${form} (network: true)`, 'run_command', body(tried).includes('CONNECTED') || received.includes(`${word}\n`), tried);
      }
    });
  });
});

describe('sandbox: git', () => {
  it('should let git status and git commit work on the worktree\'s own branch, and nothing else', async () => {
    const out = await run(wt, 'echo work > work.txt && git status --short && git add work.txt && git -c user.name=a -c user.email=a@l commit -qm work && git log --oneline -1');
    expect(out).toMatch(/\[exit code 0; \d+ ms\]\n[\s\S]*\?\? work\.txt[\s\S]*work$/);
    expect(git(repo, 'log', '--oneline', '-1', 'a2a/r1/t1')).toMatch(/ work$/);
    const main = git(repo, 'rev-parse', 'main');
    await run(wt, 'git update-ref refs/heads/main HEAD; git branch -f a2a/r1/other HEAD; git update-ref -d refs/heads/main');
    attempt('move or delete the base branch (refs/heads/main)', 'run_command', git(repo, 'rev-parse', 'main') !== main);
  });

  it('should not let a hook, git config or the .git pointers be planted for the runtime\'s git', async () => {
    const evil = `#!/bin/sh\ntouch ${join(outside, 'hook-ran')}\n`;
    const out = await run(
      wt,
      [
        `printf '${evil.replace(/\n/g, '\\n')}' > ${join(common, 'hooks', 'pre-commit')}`,
        `git config core.hooksPath ${wt}`,
        `git config core.fsmonitor ${join(wt, 'fsmon')}`,
        `echo "gitdir: ${wt}/evil" > .git`,
        `echo ${wt}/evil > ${join(common, 'worktrees', 't1', 'commondir')}`,
        `echo evil > ${join(common, 'worktrees', 't2', 'HEAD')}`,
        'echo end',
      ].join('; '),
    );
    expect(out).toMatch(/Read-only file system|could not lock config file/);
    attempt('plant .git/hooks/pre-commit', 'run_command', existsSync(join(common, 'hooks', 'pre-commit')));
    attempt('set core.hooksPath / core.fsmonitor in the repository config', 'run_command', /hooksPath|fsmonitor/.test(readFileSync(join(common, 'config'), 'utf8')));
    attempt('rewrite the worktree\'s .git pointer or commondir', 'run_command', !readFileSync(join(wt, '.git'), 'utf8').includes(join(common, 'worktrees', 't1')) || readFileSync(join(common, 'worktrees', 't1', 'commondir'), 'utf8').includes('evil'));
    attempt('change another worktree\'s git metadata', 'run_command', readFileSync(join(common, 'worktrees', 't2', 'HEAD'), 'utf8').includes('evil'));
  });

  it('should not take a .git an agent wrote as a way to show host directories', async () => {
    const ws = join(base, 'forged');
    mkdirSync(join(ws, 'fake'), { recursive: true });
    const look = `cat ${join(outside, 'secret.txt')}; ls ${outside}`;
    // a .git file pointing straight at a host directory
    await run(ws, `echo "gitdir: ${outside}" > .git`);
    const shows = (out: string) => out.includes(SECRET) || /^secret\.txt$/m.test(body(out));
    attempt('a forged .git file (gitdir: <host dir>)', 'run_command', shows(await run(ws, look)));
    // with a back-pointer and commondir of its own making, inside the worktree
    await run(ws, `echo "${join(ws, '.git')}" > fake/gitdir; echo "${outside}" > fake/commondir; mkdir -p ${join(outside, 'worktrees')}; echo "gitdir: ${join(ws, 'fake')}" > .git`);
    attempt('a forged .git file with its own gitdir/commondir', 'run_command', shows(await run(ws, look)));
    // a .git directory whose config is a link to a host file: read-only with the rest of .git
    // (the link leads nowhere inside); with sandbox.gitWritable, config is bound by descriptor, so refused
    await run(ws, `rm .git && mkdir -p .git && ln -s ${join(outside, 'secret.txt')} .git/config`);
    const followed = await run(ws, 'cat .git/config');
    attempt('a .git/config symlink to a host file', 'run_command', followed.includes(SECRET));
    expect(followed).toContain('No such file or directory');
    const writable = context(ws, { commands: bubblewrapRunner({ gitWritable: true }) }).ctx;
    const refused = (await call(writable, 'run_command', { command: 'cat .git/config' })).content;
    attempt('a .git/config symlink to a host file (sandbox.gitWritable)', 'run_command', refused.includes(SECRET));
    expect(refused).toMatch(/^TOOL_NOT_ALLOWED: .*\.git\/config changed while the sandbox was being prepared \(it should be a regular file\); nothing was run\.$/);
  });

  it('should run no hook or fsmonitor planted in the repository when the runtime commits', async () => {
    // planted from outside (as a commit by hand or an unsandboxed tool could): the runtime's git ignores them
    const hooks = join(base, 'planted-hooks');
    mkdirSync(hooks, { recursive: true });
    for (const dir of [join(common, 'hooks'), hooks]) {
      for (const hook of ['pre-commit', 'post-commit', 'commit-msg', 'post-checkout']) {
        writeFileSync(join(dir, hook), `#!/bin/sh\ntouch ${join(outside, `ran-${hook}`)}\n`, { mode: 0o755 });
      }
    }
    writeFileSync(join(base, 'fsmon'), `#!/bin/sh\ntouch ${join(outside, 'ran-fsmonitor')}\n`, { mode: 0o755 });
    try {
      git(repo, 'config', 'core.fsmonitor', join(base, 'fsmon'));
      writeFileSync(join(wt, 'change.txt'), 'x\n');
      const port = createGit();
      expect(await port.commitAll(wt, 'runtime commit')).toMatch(/^[0-9a-f]{40}$/);
      await port.diffSummary(wt, 'main');
      git(repo, 'config', 'core.hooksPath', hooks);
      writeFileSync(join(wt, 'change2.txt'), 'y\n');
      expect(await port.commitAll(wt, 'runtime commit 2')).toMatch(/^[0-9a-f]{40}$/);
      const ran = ['pre-commit', 'post-commit', 'commit-msg', 'post-checkout', 'fsmonitor'].filter((h) => existsSync(join(outside, `ran-${h}`)));
      attempt('a planted hook / fsmonitor run by the runtime\'s git', 'adapters/git.ts', ran.length > 0);
      // the hook is real: git without the runtime's settings runs it
      git(wt, 'commit', '-q', '--allow-empty', '-m', 'by hand');
      expect(existsSync(join(outside, 'ran-pre-commit'))).toBe(true);
    } finally {
      git(repo, 'config', '--unset', 'core.hooksPath');
      git(repo, 'config', '--unset', 'core.fsmonitor');
      for (const hook of ['pre-commit', 'post-commit', 'commit-msg', 'post-checkout']) rmSync(join(common, 'hooks', hook), { force: true });
    }
  });
});

describe('sandbox: the file tools', () => {
  it('should refuse paths that lead out: relative, absolute, symlinks', async () => {
    symlinkSync(join(outside, 'secret.txt'), join(wt, 'tool-link'));
    symlinkSync(join(outside, 'tool-victim.txt'), join(wt, 'tool-dangling'));
    const { ctx, asks } = context(wt);
    for (const [form, path] of [
      ['relative ../ path', relative(wt, join(outside, 'secret.txt'))],
      ['absolute path outside', join(outside, 'secret.txt')],
      ['symlink to outside', 'tool-link'],
      ['/proc/self/root/...', `/proc/self/root${join(outside, 'secret.txt')}`],
    ] as const) {
      const read = await call(ctx, 'read_file', { path });
      attempt(`${form} (read)`, 'read_file', read.content.includes(SECRET));
      expect(read.content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
      const write = await call(ctx, 'write_file', { path, content: 'pwned' });
      attempt(`${form} (write)`, 'write_file', readFileSync(join(outside, 'secret.txt'), 'utf8') !== `${SECRET}\n`);
      expect(write.content).toMatch(/^TOOL_NOT_ALLOWED: edits_outside_worktree: /);
    }
    await call(ctx, 'write_file', { path: 'tool-dangling', content: 'pwned' });
    attempt('dangling symlink to outside (create)', 'write_file', existsSync(join(outside, 'tool-victim.txt')));
    expect(asks).toEqual([]);
  });

  it('should refuse a hard-linked file: read, write, edit, and skip it in search', async () => {
    const { ctx, asks } = context(wt);
    const read = await call(ctx, 'read_file', { path: 'hard.txt' });
    attempt('hard link to outside (read)', 'read_file', read.content.includes(SECRET));
    expect(read.content).toMatch(/^TOOL_NOT_ALLOWED: hard\.txt has 2 hard links: it shares its content with another name, which may be outside the worktree/);
    const write = await call(ctx, 'write_file', { path: 'hard.txt', content: 'pwned' });
    const edit = await call(ctx, 'edit_file', { path: 'hard.txt', old_string: 'TOP', new_string: 'pwned' });
    attempt('hard link to outside (write, edit)', 'write_file/edit_file', readFileSync(join(outside, 'secret.txt'), 'utf8') !== `${SECRET}\n`);
    expect(write.content).toMatch(/^TOOL_NOT_ALLOWED: hard\.txt has 2 hard links/);
    expect(edit.content).toMatch(/^TOOL_NOT_ALLOWED: hard\.txt has 2 hard links/);
    const search = await call(ctx, 'search', { pattern: 'TOP-SECRET' });
    attempt('hard link to outside (search)', 'search', search.content.includes(SECRET));
    expect(search.content).toContain('[skipped 1 hard-linked file: hard.txt]');
    expect(asks).toEqual([]);
  });

  it('should refuse the runtime\'s .a2a/ state in a workspace without git, and leave it out of listings', async () => {
    const { ctx } = context(plain);
    const read = await call(ctx, 'read_file', { path: '.a2a/runs/r1/events.jsonl' });
    attempt('.a2a/ run state (read)', 'read_file', read.content.includes(SECRET));
    expect(read.content).toMatch(/^TOOL_NOT_ALLOWED: \.a2a\/runs\/r1\/events\.jsonl is the runtime's own state/);
    await call(ctx, 'write_file', { path: '.a2a/runs/r1/control/approve.json', content: '{}' });
    attempt('.a2a/ control request (write)', 'write_file', existsSync(join(plain, '.a2a', 'runs', 'r1', 'control', 'approve.json')));
    const listed = (await call(ctx, 'list_files', { recursive: true })).content;
    const found = (await call(ctx, 'search', { pattern: 'TOP-SECRET' })).content;
    attempt('.a2a/ run state (list, search)', 'list_files/search', listed.includes('.a2a') || found.includes(SECRET));
    expect(listed).toBe('main.c');
  });
});

describe('sandbox: when it cannot start, and the opt-out', () => {
  it('should refuse run_command when bwrap is missing, saying how to install it, and ask nobody', async () => {
    const { ctx, asks } = context(plain, { commands: bubblewrapRunner({ bwrap: join(base, 'no-such-bwrap') }) });
    const outcome = await call(ctx, 'run_command', { command: 'touch ran' });
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^TOOL_NOT_ALLOWED: run_command runs commands in a bubblewrap sandbox, and bwrap \(.*no-such-bwrap\) is not installed\. Install it with `apt-get install bubblewrap`.*sandbox: \{ mode: none \}.* Nothing was run\.$/);
    expect(asks).toEqual([]);
    expect(existsSync(join(plain, 'ran'))).toBe(false);
  });

  it('should refuse run_command when the sandbox self-check fails, saying why', async () => {
    const outcome = await call(context(plain, { commands: bubblewrapRunner({ bwrap: '/bin/false' }) }).ctx, 'run_command', { command: 'true' });
    expect(outcome.content).toMatch(/^TOOL_NOT_ALLOWED: run_command runs commands in a bubblewrap sandbox, and \/bin\/false cannot start one here: .*sandbox: \{ mode: none \}/);
  });

  it('should ask a person for every unconfined command', async () => {
    const { ctx, asks } = context(plain, { commands: unconfinedRunner() });
    const outcome = await call(ctx, 'run_command', { command: 'echo unconfined' });
    expect(outcome.content).toMatch(/\nunconfined$/);
    expect(asks).toEqual([{ action: 'command_execution', detail: 'echo unconfined', needsPerson: true }]);
  });
});

describe('sandbox: limits (memory, processes, file size, /tmp)', () => {
  const limited = bubblewrapRunner({ limits: { memoryMB: 64, processes: 24, fileMB: 2, tmpMB: 8 } });
  const runLimited = async (command: string) => call(context(wt, { commands: limited }).ctx, 'run_command', { command, timeoutMs: 8_000 });

  it('stops a /tmp that fills up at its size, and says which setting raises it', async () => {
    // files of 1 MB each (under the file size limit), 12 of them in a /tmp of 8 MB
    const out = await runLimited('for i in 1 2 3 4 5 6 7 8 9 10 11 12; do head -c 1M /dev/zero > /tmp/f$i || break; done; df -k /tmp | tail -1');
    expect(out.isError).toBe(true);
    expect(out.content).toContain("[sandbox limit: the sandbox's /tmp (also HOME) holds 8 MB (sandbox.limits.tmpMB)");
    expect(out.content).toContain('No space left on device');
  });

  it('stops a file at its size limit, in the worktree too', async () => {
    const out = await runLimited('head -c 5M /dev/zero > big.bin; echo "rc=$?"');
    expect(out.isError).toBe(true);
    expect(out.content).toContain('[sandbox limit: a file may grow to 2 MB in the sandbox (sandbox.limits.fileMB)');
    rmSync(join(wt, 'big.bin'), { force: true });
  });

  it('refuses memory past the limit to each process', async () => {
    const out = await runLimited('awk \'BEGIN { s = sprintf("%*s", 200000000, ""); print length(s) }\'');
    expect(out.isError).toBe(true);
    expect(out.content).toContain('[sandbox limit: each process of the sandbox may use 64 MB of memory (sandbox.limits.memoryMB)');
  });

  it('stops a fork bomb at the process limit; the machine keeps its processes', async () => {
    const out = await runLimited('i=0; while [ $i -lt 200 ]; do sleep 3 & i=$((i+1)); done; echo started');
    expect(out.isError).toBe(true);
    expect(out.content).toContain('[sandbox limit: the sandbox allows 24 processes and threads at once (sandbox.limits.processes)');
  });

  it('runs node and a normal build under the default limits', async () => {
    const out = await call(context(wt).ctx, 'run_command', { command: `${process.execPath} -e "console.log(Buffer.alloc(64 * 1024 * 1024).length)"` });
    expect(out.content).toContain('exit code 0');
    expect(out.content).toContain('67108864');
    expect(out.content).not.toContain('sandbox limit');
  });

  it('refuses limits that are not numbers in range, naming the setting', async () => {
    const { SandboxConfig } = await import('../../actors/config/config.js');
    const bad = SandboxConfig.safeParse({ limits: { memoryMB: 8, processes: 'many', diskMB: 0 } });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(bad.error?.issues.map((i) => i.path.join('.')))).toBe('["limits.memoryMB","limits.processes","limits.diskMB"]');
    const settings = SandboxConfig.safeParse({ gitWritable: 'yes', outsideHardLinks: 'copy' });
    expect(JSON.stringify(settings.error?.issues.map((i) => i.path.join('.')))).toBe('["gitWritable","outsideHardLinks"]');
    expect(SandboxConfig.parse({ gitWritable: true, outsideHardLinks: 'allow', limits: { diskMB: 20_480 } })).toMatchObject({ gitWritable: true, outsideHardLinks: 'allow', limits: { diskMB: 20_480, tmpMB: 512 } });
  });
});

describe('sandbox: hard links planted in the worktree', () => {
  const linked = join(base, 'linked');
  const secretFile = () => join(outside, 'secret.txt');
  const note = (content: string) =>
    /^\[sandbox: (?:1 file of the worktree shares its content with a file outside it \(a hard link someone else made\), so in the sandbox it reads|\d+ files of the worktree share their content with files outside it \(hard links someone else made\), so in the sandbox they read) as empty and cannot be written: (.*)\]$/m.exec(content)?.[1] ?? null;
  let socketServer: Server;
  const connections: Socket[] = [];
  beforeAll(async () => {
    if (missing) return;
    mkdirSync(join(linked, 'node_modules', 'pkg'), { recursive: true });
    mkdirSync(join(linked, 'deep', 'a', 'b'), { recursive: true });
    mkdirSync(join(linked, '.a2a', 'runs'), { recursive: true });
    writeFileSync(join(linked, 'own.txt'), 'own\n');
    linkSync(secretFile(), join(linked, 'node_modules', 'pkg', 'index.js'));
    linkSync(secretFile(), join(linked, 'deep', 'a', 'b', 'key'));
    // a link to the runtime's state, which the sandbox masks: it counts as outside
    writeFileSync(join(linked, '.a2a', 'runs', 'state.json'), `${SECRET}\n`);
    linkSync(join(linked, '.a2a', 'runs', 'state.json'), join(linked, 'state-link.json'));
    // a host service's unix socket, linked in
    socketServer = createServer((socket) => connections.push(socket));
    await new Promise<void>((r) => socketServer.listen(join(outside, 'host.sock'), () => r()));
    linkSync(join(outside, 'host.sock'), join(linked, 'service.sock'));
  });
  afterAll(() => new Promise<void>((r) => (socketServer ? socketServer.close(() => r()) : r())));

  it('should mask them in run_command: they read as empty, cannot be written, and the result names them', async () => {
    const outcome = await runWith(sandbox, linked, 'for f in node_modules/pkg/index.js deep/a/b/key state-link.json; do echo "$f=[$(cat $f)]"; echo pwned > $f; done; test -f deep/a/b/key && echo still-a-file; cat own.txt');
    const out = outcome.content;
    attempt('planted hard link to outside, in node_modules (read)', 'run_command', out.includes(SECRET), out);
    attempt('planted hard link to outside, deep in the tree (read)', 'run_command', /key=\[.+\]/.test(out), out);
    attempt('planted hard link into the masked .a2a/ state (read)', 'run_command', /state-link\.json=\[.+\]/.test(out), out);
    attempt('planted hard links (write)', 'run_command', readFileSync(secretFile(), 'utf8') !== `${SECRET}\n` || readFileSync(join(linked, '.a2a', 'runs', 'state.json'), 'utf8') !== `${SECRET}\n`);
    expect(outcome.isError).toBe(false);
    expect(note(out)).toBe('deep/a/b/key, node_modules/pkg/index.js, service.sock, state-link.json');
    for (const line of ['node_modules/pkg/index.js=[]', 'deep/a/b/key=[]', 'state-link.json=[]', '/bin/sh: 1: cannot create deep/a/b/key: Read-only file system', 'still-a-file', 'own']) expect(body(out).split('\n')).toContain(line);
  });

  it("should mask a host service's unix socket linked in", async () => {
    const out = await run(linked, `${process.execPath} -e "require('net').connect('service.sock').on('connect', () => console.log('CONNECTED')).on('error', (e) => console.log(e.code))"`);
    attempt("a hard link to a host service's unix socket (connect)", 'run_command', body(out).includes('CONNECTED') || connections.length > 0, out);
    expect(body(out)).toMatch(/ECONNREFUSED|ENOTSOCK|EACCES/);
  });

  it("should leave links made inside alone, and mask them once one of their names is outside", async () => {
    const first = await run(linked, 'mkdir -p mine && echo mine > mine/a.txt && ln mine/a.txt b.txt && cat b.txt');
    expect(body(first)).toBe('mine');
    expect(note(await run(linked, 'cat b.txt'))).not.toMatch(/a\.txt|b\.txt/);
    linkSync(join(linked, 'mine', 'a.txt'), join(outside, 'a-too.txt'));
    const after = await run(linked, 'cat b.txt mine/a.txt; echo done');
    expect(note(after)).toBe('b.txt, deep/a/b/key, mine/a.txt, node_modules/pkg/index.js, service.sock, state-link.json');
    expect(body(after)).toBe('done');
  });

  it('should reuse what it read of unchanged directories, and still find what changed since', async () => {
    const tree = join(base, 'scanned');
    mkdirSync(join(tree, 'x', 'sub'), { recursive: true });
    writeFileSync(join(tree, 'x', 'sub', 'c.txt'), 'c\n');
    writeFileSync(join(outside, 'other.txt'), `${SECRET}\n`);
    const racyMs = 50;
    // what was read of a directory is reused once its ctime is older than racyMs
    const aged = async () => {
      const newest = Math.max(...['', 'x', 'x/sub'].map((d) => lstatSync(join(tree, d)).ctimeMs));
      await waitFor(() => Date.now() > newest + racyMs + 20, 3000, 'the directories to age');
    };
    await aged();
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: [], dirs: 3, read: 3 });
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: [], dirs: 3, read: 0 });
    // a new file: only its directory is read again
    writeFileSync(join(tree, 'x', 'plain.txt'), 'p\n');
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: [], dirs: 3, read: 1 });
    // a link planted from outside: its directory's ctime changed; a new inode whose other names
    // were not found makes the scan read everything once more (they could be older names inside)
    linkSync(join(outside, 'other.txt'), join(tree, 'x', 'planted'));
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: ['x/planted'], dirs: 3, read: 3 });
    // (read again once after they aged: when they were read, their ctime was too recent to trust)
    await aged();
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: ['x/planted'], dirs: 3, read: 1 });
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: ['x/planted'], dirs: 3, read: 0 });
    // a link made inside to a file whose directory was read when it had one link: not masked
    linkSync(join(tree, 'x', 'sub', 'c.txt'), join(tree, 'd.txt'));
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: ['x/planted'], dirs: 3, read: 3 });
    // a name added outside to an inode whose names inside all lie in unchanged directories
    await aged();
    await outsideLinks(tree, { racyMs });
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: ['x/planted'], dirs: 3, read: 0 });
    linkSync(join(tree, 'd.txt'), join(outside, 'd-too.txt'));
    expect(await outsideLinks(tree, { racyMs })).toEqual({ masked: ['d.txt', 'x/planted', 'x/sub/c.txt'], dirs: 3, read: 0 });
  });

  it('should refuse a command when too many files are linked from outside, naming the setting; outsideHardLinks: allow lets them be read', async () => {
    const many = join(base, 'many');
    mkdirSync(many);
    for (let i = 0; i < 101; i++) linkSync(secretFile(), join(many, `l${i}`));
    const refused = await runWith(sandbox, many, 'cat l0');
    attempt('101 planted hard links (read)', 'run_command', refused.content.includes(SECRET));
    expect(refused.content).toMatch(/^TOOL_NOT_ALLOWED: 101 files of the worktree share their content with files outside it .* too many to mask one by one in the sandbox \(at most 100\): l0, l1, .* and 91 more\. .*set sandbox\.outsideHardLinks: allow .* Nothing was run\.$/);
    const allowed = await runWith(bubblewrapRunner({ outsideHardLinks: 'allow' }), many, 'cat l0');
    expect(body(allowed.content)).toBe(SECRET);
    rmSync(many, { recursive: true, force: true });
  });

  it("should keep git's own objects hard-linked by git clone --local, and mask one planted among them", async () => {
    const clone = join(base, 'clone');
    execFileSync('git', ['clone', '-q', '--local', '--no-hardlinks', repo, join(base, 'clone-source')]);
    execFileSync('git', ['clone', '-q', '--local', join(base, 'clone-source'), clone]);
    const objects = join(clone, '.git', 'objects');
    const linkedObjects = readdirSync(objects, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(objects, f)).isFile() && statSync(join(objects, f)).nlink > 1);
    expect(linkedObjects.length).toBeGreaterThan(0);
    const ok = await run(clone, 'git log --oneline -1 && git status --short && git cat-file -p HEAD:README.md');
    expect(ok).toMatch(/\[exit code 0; \d+ ms\]\n[0-9a-f]+ init\nmain checkout$/);
    // an object-like name, linked to a host file
    mkdirSync(join(objects, 'ab'), { recursive: true });
    const fake = `ab/${'c'.repeat(38)}`;
    linkSync(secretFile(), join(objects, fake));
    const out = await run(clone, `cat .git/objects/${fake}; git log --oneline -1`);
    attempt('a hard link to outside planted among .git/objects (read)', 'run_command', out.includes(SECRET), out);
    expect(note(out)).toBe(`.git/objects/${fake}`);
  });
});

describe('sandbox: the .git of a checkout (worktrees off)', () => {
  const checkout = join(base, 'checkout');
  beforeAll(() => {
    if (missing) return;
    mkdirSync(checkout);
    git(checkout, 'init', '-q', '-b', 'main');
    writeFileSync(join(checkout, 'app.js'), 'one\n');
    git(checkout, 'add', '.');
    git(checkout, 'commit', '-qm', 'init');
    writeFileSync(join(checkout, 'app.js'), 'two\n');
  });
  const head = () => git(checkout, 'rev-parse', 'HEAD');

  it('should keep all of .git read-only: status and diff work, a commit is refused naming sandbox.gitWritable', async () => {
    const before = head();
    const outcome = await runWith(sandbox, checkout, 'git status --short && git diff --stat && git -c user.name=a -c user.email=a@l commit -qam change');
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toMatch(/^ M app\.js$/m);
    expect(outcome.content).toContain('1 file changed, 1 insertion(+), 1 deletion(-)');
    expect(outcome.content).toContain("[sandbox limit: this checkout's .git is read-only in the sandbox (agents work in the checkout itself, without worktrees): git status, diff and log work, but commits, branches and other changes to the repository do not; sandbox.gitWritable: true lets commands make them]");
    const writes = await run(checkout, 'echo x > .git/objects/planted; echo "[core] hooksPath = /tmp" >> .git/config; git update-ref refs/heads/other HEAD; rm -f .git/index; echo end');
    attempt("write to a checkout's .git (objects, config, refs, index; worktrees off)", 'run_command', head() !== before || existsSync(join(checkout, '.git', 'objects', 'planted')) || existsSync(join(checkout, '.git', 'refs', 'heads', 'other')) || !existsSync(join(checkout, '.git', 'index')) || readFileSync(join(checkout, '.git', 'config'), 'utf8').includes('hooksPath'), writes);
  });

  it('should let commits through with sandbox.gitWritable, config and hooks still read-only', async () => {
    const writable = bubblewrapRunner({ gitWritable: true });
    const outcome = await runWith(writable, checkout, 'git -c user.name=a -c user.email=a@l commit -qam change && git log --oneline -1; echo "[core] hooksPath = /tmp" >> .git/config; touch .git/hooks/pre-commit');
    expect(outcome.content).toMatch(/[0-9a-f]+ change/);
    expect(git(checkout, 'log', '--oneline', '-1')).toMatch(/ change$/);
    attempt('git config or a hook, with sandbox.gitWritable (write)', 'run_command', readFileSync(join(checkout, '.git', 'config'), 'utf8').includes('hooksPath') || existsSync(join(checkout, '.git', 'hooks', 'pre-commit')), outcome.content);
  });
});

describe('sandbox: disk quota', () => {
  const quotaDir = join(base, 'quota');
  beforeAll(() => {
    if (!missing) mkdirSync(quotaDir);
  });
  afterAll(() => rmSync(quotaDir, { recursive: true, force: true }));

  it('stops a command that fills the disk past diskMB (many files, each under fileMB), and says which setting raises it', async () => {
    const quota = bubblewrapRunner({ limits: { memoryMB: 4096, processes: 512, fileMB: 1024, tmpMB: 64, diskMB: 32 } });
    // 1 MB files until it is stopped (the command's timeout would say it was not)
    const outcome = await runWith(quota, quotaDir, 'i=0; while :; do head -c 1M /dev/zero > f$i; i=$((i+1)); done');
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('[sandbox limit: the disk holding the worktree may fill by 32 MB while a command runs (sandbox.limits.diskMB), and it filled by more: the command and everything it started were killed;');
    expect(outcome.content).not.toContain('timed out');
    attempt('fill the disk with many files (past diskMB)', 'run_command', readdirSync(quotaDir).length > 1024);
    for (const f of readdirSync(quotaDir)) rmSync(join(quotaDir, f));
  });

  it('refuses preallocation, which takes space without writing it (past fileMB and before a look at the disk)', async () => {
    const limited = bubblewrapRunner({ limits: { memoryMB: 4096, processes: 512, fileMB: 2, tmpMB: 64, diskMB: 32 } });
    const ioctl = `open(F, ">>", "r") or die; my $sr = pack("s s x4 q q l L l4", 0, 0, 0, 512 << 20, 0, 0, 0, 0, 0, 0); ioctl(F, 0x4030582a, $sr) or print "ioctl: $!\\n"`;
    const outcome = await runWith(limited, quotaDir, `perl -e '${ioctl}'; fallocate -l 512M g; touch f; fallocate -n -l 512M f`);
    const used = (name: string) => (existsSync(join(quotaDir, name)) ? statSync(join(quotaDir, name)).blocks * 512 : 0);
    attempt('preallocate 512 MB in a file of size 0 (fallocate --keep-size)', 'run_command', used('f') > 1 << 20, outcome.content);
    attempt('preallocate 512 MB (fallocate)', 'run_command', used('g') > 2 << 20, outcome.content);
    attempt('preallocate 512 MB (ioctl FS_IOC_RESVSP64)', 'run_command', used('r') > 1 << 20, outcome.content);
    expect(outcome.isError).toBe(true);
    expect(outcome.content).toContain('[sandbox limit: the sandbox refuses preallocation (fallocate): it would take disk space without writing it, past sandbox.limits.fileMB and sandbox.limits.diskMB; write the data instead]');
    expect(outcome.content).toContain('ioctl: Operation not supported');
    expect(outcome.content).toMatch(/fallocate: fallocate failed: (?:keep size mode is unsupported|Operation not supported)/);
  });
});

describe('sandbox: the count', () => {
  it('should have let nothing out', () => {
    const escaped = table.filter((t) => t.escaped);
    console.log(`sandbox escape attempts: ${table.length}, escaped: ${escaped.length}\n${table.map((t) => `  ${t.escaped ? 'ESCAPED' : 'held   '}  ${t.via.padEnd(22)} ${t.form}`).join('\n')}`);
    expect(table.length).toBeGreaterThanOrEqual(40);
    expect(escaped).toEqual([]);
  });
});
