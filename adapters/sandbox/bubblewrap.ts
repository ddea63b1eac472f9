/**
 * The default command runner: each command in a bubblewrap sandbox (mounts.ts says what it sees),
 * in new pid, ipc, uts, cgroup and network namespaces: only its own loopback, or, when
 * `network_access` was granted, egress through slirp4netns and still no way to the host's
 * loopback (network.ts). Limits on memory, processes, file size and /tmp (limits.ts), a disk
 * quota (quota.ts) and no preallocation (seccomp.ts); files hard-linked from outside the worktree
 * masked (hardlinks.ts). No capabilities, its own session (no terminal to push input into), and
 * when bwrap ends, everything inside ends with it: the pid namespace dies with its first process,
 * and bwrap dies with the runtime (`--die-with-parent`).
 */
import { spawn } from 'node:child_process';
import { access, constants, open, realpath } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import type { CommandRequest, CommandResult, CommandRunner, CommandRunnerStatus } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';
import { commandEnv } from './env.js';
import { maskFiles, MountPlan, readOnlyArgs, systemArgs, worktreeMounts } from './mounts.js';
import { runProcess } from './process.js';
import { egressArgs, egressFor, findSlirp } from './network.js';
import { DEFAULT_DISK_MB, DEFAULT_LIMITS, findPrlimit, limitedCommand, limitHit, pidsGroup, tmpArgs, type PidsGroup, type SandboxLimits } from './limits.js';
import { outsideLinks } from './hardlinks.js';
import { diskWatch } from './quota.js';
import { filterFile } from './seccomp.js';

export interface BubblewrapOptions {
  /** The bwrap binary (default: `bwrap` on PATH, else /usr/bin/bwrap). */
  bwrap?: string;
  /** Environment variable names passed to commands besides the built-in allowlist. */
  env?: readonly string[];
  /** Host paths made visible read-only (a toolchain outside /usr, e.g. ~/.nvm). */
  readOnlyPaths?: readonly string[];
  /** What a command may use (memory, processes, file size, /tmp, disk): limits.ts. */
  limits?: SandboxLimits;
  /** A checkout's `.git` directory (worktrees off) writable, but for its config and hooks (default: read-only). */
  gitWritable?: boolean;
  /** Files hard-linked from outside the worktree: `mask` (default) or `allow` (readable and writable, no scan). */
  outsideHardLinks?: 'mask' | 'allow';
}

/** More masks than this cost bwrap too much (100: +16 ms, 300: +100 ms, 1,000: +1 s): the command is refused. */
const MAX_MASKS = 100;
/** Masked files named in a tool result. */
const NAMED = 10;

function named(paths: readonly string[]): string {
  return paths.slice(0, NAMED).join(', ') + (paths.length > NAMED ? ` and ${paths.length - NAMED} more` : '');
}

const CHECK_TIMEOUT_MS = 10_000;
const NAMESPACES = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
const PROCESS = ['--die-with-parent', '--new-session', '--cap-drop', 'ALL'];
/**
 * Descriptors the runtime inherited without close-on-exec (from whatever started it) would reach
 * the command, and an open directory is a way around every mount. bash closes them (dash cannot
 * name descriptors above 9), then becomes the /bin/sh that runs the command.
 */
const CLOSE_INHERITED = 'for p in /proc/self/fd/*; do f=${p##*/}; if [ "$f" -gt 2 ] && [ -e "$p" ]; then exec {f}>&-; fi; done; exec /bin/sh -c "$1"';

const INSTALL = 'Install it with `apt-get install bubblewrap` (Debian, Ubuntu; `dnf install bubblewrap` on Fedora)';
const OPT_OUT = 'opt out in the configuration with `sandbox: { mode: none }`: commands then run unconfined, and each one asks a person.';

async function firstExecutable(candidates: string[]): Promise<string | null> {
  for (const candidate of candidates) {
    if (await access(candidate, constants.X_OK).then(() => true, () => false)) return candidate;
  }
  return null;
}

const findBwrap = (explicit: string | undefined) =>
  firstExecutable(explicit ? [explicit] : [...(process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'bwrap')), '/usr/bin/bwrap']);

/** The bash that closes inherited descriptors (looked up once), or null: then /bin/sh runs the command directly. */
let closer: Promise<string | null> | null = null;
const closingShell = () => (closer ??= firstExecutable(['/usr/bin/bash', '/bin/bash']));

/** Whether a sandbox starts here: bwrap exists and runs /bin/true inside the system mounts. */
async function selfCheck(explicit: string | undefined): Promise<{ bwrap: string; status: CommandRunnerStatus }> {
  const bwrap = await findBwrap(explicit);
  if (!bwrap) {
    return { bwrap: '', status: { ready: false, reason: `run_command runs commands in a bubblewrap sandbox, and bwrap${explicit ? ` (${explicit})` : ''} is not installed. ${INSTALL}, or ${OPT_OUT}` } };
  }
  // with the seccomp filter every command gets (a kernel or container that refuses it says so now)
  const filter = filterFile();
  const handle = filter ? await open(filter, 'r') : null;
  const args = [...PROCESS, ...NAMESPACES, '--unshare-net', ...(await systemArgs()), '--tmpfs', '/tmp', ...(handle ? ['--seccomp', '3'] : []), '/bin/true'];
  const failure = await new Promise<string | null>((done) => {
    const child = spawn(bwrap, args, { timeout: CHECK_TIMEOUT_MS, env: commandEnv([]), stdio: ['ignore', 'ignore', 'pipe', ...(handle ? [handle.fd] : [])] });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', (error) => done(error.message));
    child.once('close', (code, signal) => done(code === 0 ? null : (stderr.trim() || `${bwrap} ended with ${code ?? signal}`).split('\n').slice(0, 3).join(' ')));
  }).finally(() => handle?.close());
  if (failure === null) return { bwrap, status: { ready: true } };
  return {
    bwrap,
    status: {
      ready: false,
      reason:
        `run_command runs commands in a bubblewrap sandbox, and ${bwrap} cannot start one here: ${failure}. ` +
        `It needs user namespaces (or root) and seccomp filters; in a container, allow them (a seccomp profile that permits unshare, mount and seccomp). Or ${OPT_OUT}`,
    },
  };
}

/** One self-check per binary and process, on first use. */
const checks = new Map<string, Promise<{ bwrap: string; status: CommandRunnerStatus }>>();

export function bubblewrapRunner(options: BubblewrapOptions = {}): CommandRunner {
  const key = options.bwrap ?? '';
  const limits = options.limits ?? DEFAULT_LIMITS;
  const checked = () => {
    let check = checks.get(key);
    if (!check) {
      check = selfCheck(options.bwrap);
      checks.set(key, check);
    }
    return check;
  };
  return {
    name: 'bubblewrap',
    confined: true,
    async check() {
      return (await checked()).status;
    },
    async run(request: CommandRequest): Promise<CommandResult> {
      // bwrap failing in its own setup of a new network namespace (a race with the kernel or
      // slirp4netns, seen about once in 30 with network: true) ran nothing of the command: it is
      // started again, twice at most
      for (let attempt = 0; ; attempt++) {
        const result = await runOnce(request);
        if (attempt >= 2 || result.exitCode !== 1 || !/^bwrap: loopback: /.test(result.output.trim())) return result;
      }
    },
  };

  async function runOnce(request: CommandRequest): Promise<CommandResult> {
    const { bwrap, status } = await checked();
    if (!status.ready) throw new A2AError('TOOL_NOT_ALLOWED', status.reason);
    const prlimit = await findPrlimit();
    if (!prlimit) throw new A2AError('TOOL_NOT_ALLOWED', `run_command limits what a sandboxed command may use with prlimit, which is not installed: install util-linux (apt-get install util-linux), or ${OPT_OUT}`);
    const root = await realpath(request.worktree);
    // before the mounts: names whose inode has links outside the worktree
    const masked = options.outsideHardLinks === 'allow' ? [] : (await outsideLinks(root)).masked;
    if (masked.length > MAX_MASKS) {
      throw new A2AError(
        'TOOL_NOT_ALLOWED',
        `${masked.length} files of the worktree share their content with files outside it (hard links: a pnpm node_modules linked to its store, or links someone else made), ` +
          `too many to mask one by one in the sandbox (at most ${MAX_MASKS}): ${named(masked)}. ` +
          'Remove the links (pnpm: package-import-method=copy), or set sandbox.outsideHardLinks: allow to let commands read and write them. Nothing was run.',
      );
    }
    const plan = new MountPlan();
    let group: PidsGroup | null = null;
    try {
      // its own network namespace always: only its own loopback, or with network: true egress through slirp4netns
      const slirp = request.network ? findSlirp() : null;
      if (request.network && !slirp) throw new A2AError('TOOL_NOT_ALLOWED', 'network: true gives a command a network namespace of its own with egress only (no way to this machine\'s loopback services), through slirp4netns, which is not installed: `apt-get install slirp4netns`. Nothing was run.');
      plan.args.push(...PROCESS, ...NAMESPACES, '--unshare-net', ...(await systemArgs()), ...(slirp ? egressArgs() : []), ...tmpArgs(limits), ...(await readOnlyArgs(options.readOnlyPaths ?? [])));
      const access = await worktreeMounts(plan, root, { gitWritable: options.gitWritable ?? false });
      maskFiles(plan, masked.map((rel) => join(root, rel)));
      // the sandbox's own root (where the mount points were made) is read-only too
      plan.args.push('--remount-ro', '/', '--chdir', request.cwd);
      const filter = filterFile();
      if (filter) plan.args.push('--seccomp', String(await plan.passFile(filter)));
      const shell = await closingShell();
      // the sandbox's first process, whose pid a stop needs (see runProcess)
      plan.args.push('--info-fd', String(3 + plan.fds.length));
      // with a network: the command waits until slirp4netns has set up its namespace
      if (slirp) plan.args.push('--block-fd', String(4 + plan.fds.length));
      plan.args.push(...(shell ? [shell, '-c', CLOSE_INHERITED, 'sh'] : ['/bin/sh', '-c']), request.command);
      const env = commandEnv(options.env ?? []);
      group = await pidsGroup(limits.processes);
      const launch = limitedCommand(prlimit, limits, group, bwrap, plan.args);
      const disk = diskWatch(access.writable, limits.diskMB ?? DEFAULT_DISK_MB);
      // bwrap has its own copies of the descriptors once spawned: ours are closed right after
      const result = await runProcess(launch.file, launch.args, {
        cwd: root,
        env,
        timeoutMs: request.timeoutMs,
        signal: request.signal,
        fds: plan.fds,
        info: true,
        monitor: disk.start,
        ...(slirp ? { gate: (pid: number) => egressFor(slirp, pid) } : {}),
      });
      const forkRefused = group ? await group.close() : false;
      group = null;
      const hit = limitHit(limits, result, { forkRefused, diskFull: disk.hit, gitReadOnly: access.gitReadOnly });
      const note =
        masked.length === 0
          ? null
          : masked.length === 1
            ? `1 file of the worktree shares its content with a file outside it (a hard link someone else made), so in the sandbox it reads as empty and cannot be written: ${masked[0]}`
            : `${masked.length} files of the worktree share their content with files outside it (hard links someone else made), so in the sandbox they read as empty and cannot be written: ${named(masked)}`;
      return { ...result, ...(hit ? { limit: hit } : {}), ...(note ? { note } : {}) };
    } finally {
      await group?.close();
      await plan.close();
    }
  }
}
