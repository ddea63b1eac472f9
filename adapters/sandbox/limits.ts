/**
 * What a sandboxed command may use, besides what it may see (mounts.ts):
 *
 *   memoryMB   RLIMIT_DATA of every process (its heap and writable mappings; address space that
 *              is only reserved, as V8 and Go reserve it, does not count, so node and go still start)
 *   fileMB     RLIMIT_FSIZE: the largest file a process may write (SIGXFSZ past it)
 *   tmpMB      the size of the sandbox's /tmp (a tmpfs; HOME is /tmp): "No space left on device"
 *   processes  the processes and threads of the sandbox at once: a pids cgroup made for the
 *              command when this process may make one (root, or a delegated cgroup), else
 *              RLIMIT_NPROC set to this user's count now plus the limit (a fork bomb stops there)
 *   diskMB     how much the disk holding the worktree may fill while the command runs (watched,
 *              the command killed past it: quota.ts; preallocation refused: seccomp.ts)
 *
 * The limits are set by `prlimit` (util-linux) on bwrap, and inherited by everything inside.
 * When the command hit one, `limitHit` says which, with the setting that changes it, for the
 * tool's result: the model learns why its command failed instead of guessing.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface SandboxLimits {
  memoryMB: number;
  processes: number;
  fileMB: number;
  tmpMB: number;
  /** Default: DEFAULT_DISK_MB. */
  diskMB?: number;
}

export const DEFAULT_DISK_MB = 10_240;
export const DEFAULT_LIMITS: SandboxLimits = { memoryMB: 4096, processes: 512, fileMB: 1024, tmpMB: 512, diskMB: DEFAULT_DISK_MB };

const MiB = 1024 * 1024;

/** A pids cgroup for one command: where its processes go, and whether the limit was hit. */
export interface PidsGroup {
  procs: string;
  /** Whether a fork was refused for the limit; then removes the group (its processes are gone). */
  close(): Promise<boolean>;
}

let parent: Promise<string | null> | null = null;
let made = 0;

/** The cgroup under which this process may make pids groups, or null (checked once, by trying). */
function pidsParent(): Promise<string | null> {
  parent ??= (async () => {
    let own: string;
    try {
      own = await readFile('/proc/self/cgroup', 'utf8');
    } catch {
      return null;
    }
    const candidates: string[] = [];
    for (const line of own.split('\n')) {
      const [, controllers, path] = line.split(':');
      if (path === undefined) continue;
      if (controllers?.split(',').includes('pids')) candidates.push(join('/sys/fs/cgroup/pids', path));
      if (controllers === '' && existsSync('/sys/fs/cgroup/cgroup.controllers')) candidates.push(join('/sys/fs/cgroup', path));
    }
    for (const dir of candidates) {
      const probe = join(dir, `a2a-probe-${process.pid}`);
      try {
        await mkdir(probe);
        try {
          await writeFile(join(probe, 'pids.max'), '8');
          return dir;
        } finally {
          await rmdir(probe).catch(() => undefined);
        }
      } catch {
        // not writable, or no pids controller there
      }
    }
    return null;
  })();
  return parent;
}

/** A pids cgroup of `max` for one command, or null when this process cannot make one. */
export async function pidsGroup(max: number): Promise<PidsGroup | null> {
  const root = await pidsParent();
  if (!root) return null;
  const dir = join(root, `a2a-${process.pid}-${++made}`);
  try {
    await mkdir(dir);
    await writeFile(join(dir, 'pids.max'), String(max));
  } catch {
    await rmdir(dir).catch(() => undefined);
    return null;
  }
  return {
    procs: join(dir, 'cgroup.procs'),
    async close() {
      const events = await readFile(join(dir, 'pids.events'), 'utf8').catch(() => '');
      // removed in the background: the sandbox's last processes are still being reaped for a few
      // milliseconds after bwrap ended (rmdir says EBUSY until then), and the result need not wait
      void (async () => {
        for (let i = 0; i < 250; i++) {
          if (await rmdir(dir).then(() => true, () => false)) return;
          await new Promise((r) => setTimeout(r, 20));
        }
      })();
      return Number(/max (\d+)/.exec(events)?.[1] ?? 0) > 0;
    },
  };
}

/** How many processes this user has now (for RLIMIT_NPROC, which counts them all). */
function processesOfThisUser(): number {
  const uid = process.getuid?.() ?? 0;
  let n = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (statSync(`/proc/${name}`).uid === uid) n++;
    } catch {
      // ended meanwhile
    }
  }
  return n;
}

let prlimitBin: Promise<string | null> | null = null;

/** prlimit's path, or null when util-linux's prlimit is missing (then no rlimits are set, and the check says so). */
export function findPrlimit(): Promise<string | null> {
  prlimitBin ??= new Promise((resolve) => {
    const found = ['/usr/bin/prlimit', '/bin/prlimit'].find((p) => existsSync(p));
    if (!found) return resolve(null);
    execFile(found, ['--version'], { timeout: 5_000 }, (error) => resolve(error ? null : found));
  });
  return prlimitBin;
}

/** The command line that starts bwrap under the limits (prlimit, and the cgroup when there is one). */
export function limitedCommand(prlimit: string, limits: SandboxLimits, group: PidsGroup | null, bwrap: string, args: string[]): { file: string; args: string[] } {
  const rlimits = [`--data=${limits.memoryMB * MiB}`, `--fsize=${limits.fileMB * MiB}`];
  // without a cgroup, the process count is the user's: what it has now, plus the sandbox's share
  if (!group && (process.getuid?.() ?? 0) !== 0) rlimits.push(`--nproc=${processesOfThisUser() + limits.processes}`);
  const limited = [prlimit, ...rlimits, '--', bwrap, ...args];
  if (!group) return { file: limited[0]!, args: limited.slice(1) };
  // the shell enters the cgroup, then becomes prlimit, which becomes bwrap: one pid throughout
  return { file: '/bin/sh', args: ['-c', 'echo $$ > "$0" && exec "$@"', group.procs, ...limited] };
}

/** The tmpfs of the sandbox's /tmp, sized. */
export function tmpArgs(limits: SandboxLimits): string[] {
  return ['--size', String(limits.tmpMB * MiB), '--tmpfs', '/tmp'];
}

/** What the runner saw of a command besides its result. */
export interface Seen {
  /** The pids cgroup refused a fork. */
  forkRefused: boolean;
  /** The disk quota stopped it. */
  diskFull: boolean;
  /** The worktree is a checkout whose `.git` directory is read-only in the sandbox. */
  gitReadOnly: boolean;
}

/** Which limit a command hit, said with the setting that raises it; null when none. */
export function limitHit(limits: SandboxLimits, result: { exitCode: number | null; signal: string | null; output: string }, seen: Seen): string | null {
  const out = result.output;
  if (seen.diskFull) {
    return (
      `the disk holding the worktree may fill by ${limits.diskMB ?? DEFAULT_DISK_MB} MB while a command runs (sandbox.limits.diskMB), and it filled by more: ` +
      'the command and everything it started were killed; what it wrote is still there (remove what is not needed). The count is the disk\'s, so what other programs wrote to it meanwhile counts too'
    );
  }
  if (seen.forkRefused || /fork: (?:retry: )?Resource temporarily unavailable|Cannot fork|can't fork|fork failed/i.test(out)) {
    return `the sandbox allows ${limits.processes} processes and threads at once (sandbox.limits.processes), and the command tried to start more`;
  }
  if (result.signal === 'SIGXFSZ' || result.exitCode === 153 || /File size limit exceeded/.test(out)) {
    return `a file may grow to ${limits.fileMB} MB in the sandbox (sandbox.limits.fileMB), and the command wrote past it`;
  }
  if (/No space left on device/.test(out)) {
    return `the sandbox's /tmp (also HOME) holds ${limits.tmpMB} MB (sandbox.limits.tmpMB): write large files in your worktree, or the disk holding it is full`;
  }
  if (/Cannot allocate memory|out of memory|bad_alloc|MemoryError|heap out of memory|memory exhausted/i.test(out)) {
    return `each process of the sandbox may use ${limits.memoryMB} MB of memory (sandbox.limits.memoryMB), and the command ran out of it`;
  }
  if (result.exitCode !== 0 && /fallocate[^\n]*(?:Operation not supported|unsupported)/.test(out)) {
    return 'the sandbox refuses preallocation (fallocate): it would take disk space without writing it, past sandbox.limits.fileMB and sandbox.limits.diskMB; write the data instead';
  }
  if (seen.gitReadOnly && /\.git\/\S*'?: Read-only file system/.test(out)) {
    return (
      "this checkout's .git is read-only in the sandbox (agents work in the checkout itself, without worktrees): git status, diff and log work, " +
      'but commits, branches and other changes to the repository do not; sandbox.gitWritable: true lets commands make them'
    );
  }
  return null;
}
