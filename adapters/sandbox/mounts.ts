/**
 * What a sandboxed command sees of the host's files, as bwrap arguments (later mounts go on top of
 * earlier ones):
 *
 * - the system read-only: /usr, /bin, /sbin, /lib*, and /etc with its secrets masked;
 * - a fresh /proc and /dev, a private /tmp;
 * - the worktree read-write at its own path, with `.a2a/` (the runtime's state: logs, checkpoints,
 *   the control directory `a2a inbox` answers through) masked when the worktree holds it;
 * - for a git worktree, what `git status` and `git commit` need of the repository's git directory:
 *   objects, this worktree's own metadata and its branch's ref directory read-write, everything
 *   else read-only: config and hooks above all, since the runtime's own git (unsandboxed) reads
 *   them, and the `.git` file and `commondir`, which say where that git directory is;
 * - for a checkout whose `.git` is a directory (agents working in the checkout itself, worktrees
 *   off): all of `.git` read-only (git status, diff and log work; a read-only index only keeps
 *   git status from saving its refreshed stat data), unless `sandbox.gitWritable` says commands
 *   may write it: then all but its config and hooks;
 * - files of the worktree that share their inode with a file outside it (hard links someone else
 *   planted: hardlinks.ts) masked by an empty read-only file.
 *
 * Nothing else of the host exists inside: no home, no other worktree, no sockets. Agents can
 * write in the worktree (and, from another sandbox at the same moment, swap a file for a symbolic
 * link), so what is read-only-bound from there is bound by descriptor: the file that was checked
 * is the file that gets mounted. A `.git` file counts only when git's own back-pointer confirms it.
 */
import { chmodSync, constants, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { lstat, mkdir, open, readdir, readFile, readlink, realpath, writeFile, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { A2AError } from '../../actors/errors.js';

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Masked whatever their permissions say. */
const ETC_SECRETS = ['/etc/shadow', '/etc/shadow-', '/etc/gshadow', '/etc/gshadow-', '/etc/ssh', '/etc/ssl/private', '/etc/sudoers', '/etc/sudoers.d', '/etc/security/opasswd'];
const ETC_SCAN_DEPTH = 6;
/** The child's first descriptor after stdin, stdout and stderr. */
const FIRST_FD = 3;

type Kind = 'file' | 'dir' | 'link' | 'other' | null;

async function kindOf(path: string): Promise<Kind> {
  const info = await lstat(path).catch(() => null);
  if (!info) return null;
  return info.isSymbolicLink() ? 'link' : info.isDirectory() ? 'dir' : info.isFile() ? 'file' : 'other';
}

const inside = (parent: string, path: string) => {
  const rel = relative(parent, path);
  return rel !== '' && !rel.startsWith('..') && !rel.startsWith(sep);
};

/** A file reads as denied, a directory as empty; neither can be written. */
function mask(path: string, kind: Kind): string[] {
  return kind === 'dir' ? ['--tmpfs', path, '--remount-ro', path] : ['--ro-bind', '/dev/null', path];
}

/**
 * Secrets under /etc: the known ones, and whatever other users of the machine may not read
 * (a file or directory without the world-read bit): the sandbox reads no more than they do.
 */
async function etcSecrets(): Promise<Array<{ path: string; kind: Kind }>> {
  const found: Array<{ path: string; kind: Kind }> = [];
  for (const path of ETC_SECRETS) {
    const kind = await kindOf(path);
    if (kind === 'file' || kind === 'dir') found.push({ path, kind });
  }
  const masked = (path: string) => found.some((f) => f.path === path || inside(f.path, path));
  const scan = async (dir: string, depth: number): Promise<void> => {
    const names = await readdir(dir).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const path = join(dir, name);
      if (masked(path)) continue;
      const info = await lstat(path).catch(() => null);
      if (!info || !(info.isFile() || info.isDirectory())) continue;
      if ((info.mode & 0o004) === 0) found.push({ path, kind: info.isDirectory() ? 'dir' : 'file' });
      else if (info.isDirectory() && depth < ETC_SCAN_DEPTH) await scan(path, depth + 1);
    }
  };
  await scan('/etc', 1);
  return found.sort((a, b) => (a.path < b.path ? -1 : 1));
}

let system: Promise<string[]> | null = null;

/** The system part, the same for every command: computed once per process. */
export function systemArgs(): Promise<string[]> {
  system ??= (async () => {
    const args: string[] = [];
    for (const dir of SYSTEM_DIRS) {
      const kind = await kindOf(dir);
      // merged /usr: /bin -> usr/bin stays a link, so paths look as they do on the host
      if (kind === 'link') args.push('--symlink', await readlink(dir), dir);
      else if (kind === 'dir') args.push('--ro-bind', dir, dir);
    }
    args.push('--ro-bind', '/etc', '/etc');
    for (const secret of await etcSecrets()) args.push(...mask(secret.path, secret.kind));
    // /tmp: a tmpfs of the size the runner's limits give (limits.ts tmpArgs), mounted right after these
    args.push('--proc', '/proc', '--dev', '/dev');
    return args;
  })();
  return system;
}

/** bwrap arguments, and the descriptors they name (passed to bwrap as fd 3, 4, …; closed once it started). */
export class MountPlan {
  readonly args: string[] = [];
  readonly #handles: FileHandle[] = [];

  get fds(): number[] {
    return this.#handles.map((h) => h.fd);
  }

  /**
   * Binds `path` read-only through a descriptor opened without following a link, and only if it
   * really is `path` (no component swapped for a link): otherwise nothing runs.
   */
  async roBindExact(path: string, kind: 'file' | 'dir'): Promise<void> {
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (kind === 'dir' ? constants.O_DIRECTORY : 0);
    const handle = await open(path, flags).catch(() => null);
    const info = await handle?.stat();
    const where = handle ? await readlink(`/proc/self/fd/${handle.fd}`).catch(() => null) : null;
    if (!handle || !info || (kind === 'file' ? !info.isFile() : !info.isDirectory()) || where !== path) {
      await handle?.close();
      throw new A2AError('TOOL_NOT_ALLOWED', `${path} changed while the sandbox was being prepared (it should be a ${kind === 'dir' ? 'directory' : 'regular file'}); nothing was run.`);
    }
    this.#handles.push(handle);
    this.args.push('--ro-bind-fd', String(FIRST_FD + this.#handles.length - 1), path);
  }

  /** Opens `path` for reading and passes it to bwrap; returns the descriptor's number there. */
  async passFile(path: string): Promise<number> {
    const handle = await open(path, constants.O_RDONLY);
    this.#handles.push(handle);
    return FIRST_FD + this.#handles.length - 1;
  }

  async close(): Promise<void> {
    await Promise.all(this.#handles.splice(0).map((h) => h.close()));
  }
}

let empty: string | null = null;

/** Each of `paths` (absolute) read as an empty file that cannot be written. */
export function maskFiles(plan: MountPlan, paths: readonly string[]): void {
  if (paths.length === 0) return;
  // made once (again if a cleaner of /tmp removed it)
  if (!empty || !existsSync(empty)) {
    const file = join(mkdtempSync(join(tmpdir(), 'a2a-mask-')), 'empty');
    writeFileSync(file, '');
    chmodSync(file, 0o444);
    empty = file;
  }
  for (const path of paths) plan.args.push('--ro-bind', empty, path);
}

/** `config` and `config.worktree` (when present) and `hooks` of a git directory inside the worktree, read-only. */
async function protectGitDir(plan: MountPlan, gitDir: string): Promise<void> {
  for (const name of ['config', 'config.worktree']) {
    const path = join(gitDir, name);
    if ((await kindOf(path)) !== null) await plan.roBindExact(path, 'file');
  }
  const hooks = join(gitDir, 'hooks');
  // a missing hooks directory could be created inside and run by git outside: make it, empty
  if ((await kindOf(hooks)) === null) await mkdir(hooks).catch(() => undefined);
  await plan.roBindExact(hooks, 'dir');
}

/**
 * A worktree whose `.git` is a file, `gitdir: <repo>/.git/worktrees/<name>`: trusted only when
 * that directory, outside the worktree, points back at this `.git` (git's own record), so that a
 * `.git` file an agent wrote cannot make the sandbox show a host directory.
 */
async function linkedGit(plan: MountPlan, root: string, dotGit: string): Promise<string | null> {
  const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(await readFile(dotGit, 'utf8').catch(() => ''));
  const gitDir = pointer ? await realpath(resolve(root, pointer[1]!)).catch(() => null) : null;
  if (!gitDir || inside(root, gitDir)) return null;
  const back = (await readFile(join(gitDir, 'gitdir'), 'utf8').catch(() => '')).trim();
  const backReal = back ? await realpath(resolve(gitDir, back)).catch(() => null) : null;
  const commonText = await readFile(join(gitDir, 'commondir'), 'utf8').catch(() => null);
  const common = commonText === null ? null : await realpath(resolve(gitDir, commonText.trim())).catch(() => null);
  if (backReal !== dotGit || !common || inside(root, common) || !inside(join(common, 'worktrees'), gitDir)) return null;

  plan.args.push('--ro-bind', common, common);
  const objects = join(common, 'objects');
  if ((await kindOf(objects)) === 'dir') plan.args.push('--bind', objects, objects);
  // the other worktrees' metadata (their HEAD, index, commondir) is none of this one's business
  plan.args.push('--tmpfs', join(common, 'worktrees'), '--bind', gitDir, gitDir);
  // git reads config.worktree when extensions.worktreeConfig is on: an empty one, read-only, so that none can be planted
  await writeFile(join(gitDir, 'config.worktree'), '', { flag: 'wx' }).catch(() => undefined);
  for (const name of ['commondir', 'gitdir', 'config.worktree']) await plan.roBindExact(join(gitDir, name), 'file');
  // commits move this worktree's branch: its ref directory (and reflog) is writable, other refs
  // are not, unless the branch sits directly in refs/heads (then commits fail inside)
  const head = /^ref:\s*(refs\/heads\/.+\/[^/]+)\s*$/m.exec(await readFile(join(gitDir, 'HEAD'), 'utf8').catch(() => ''));
  if (head) {
    for (const base of [common, join(common, 'logs')]) {
      const dir = dirname(join(base, head[1]!));
      if (inside(base, dir) && (await kindOf(dir)) === 'dir') plan.args.push('--bind', dir, dir);
    }
  }
  await plan.roBindExact(dotGit, 'file');
  return common;
}

/** What the worktree's mounts give a command. */
export interface WorktreeAccess {
  /** The host paths it may write (the worktree, and the git directory's parts outside it). */
  writable: string[];
  /** The worktree is a checkout whose `.git` directory is read-only. */
  gitReadOnly: boolean;
}

/** The worktree read-write, its runtime state masked, and the git directory it needs. */
export async function worktreeMounts(plan: MountPlan, root: string, options: { gitWritable?: boolean } = {}): Promise<WorktreeAccess> {
  plan.args.push('--bind', root, root);
  const access: WorktreeAccess = { writable: [root], gitReadOnly: false };
  const state = join(root, '.a2a');
  if ((await kindOf(state)) === 'dir') plan.args.push(...mask(state, 'dir'));
  const dotGit = join(root, '.git');
  const kind = await kindOf(dotGit);
  if (kind === 'dir') {
    if (options.gitWritable) await protectGitDir(plan, dotGit);
    else {
      await plan.roBindExact(dotGit, 'dir');
      access.gitReadOnly = true;
    }
  } else if (kind === 'file') {
    const common = await linkedGit(plan, root, dotGit);
    if (common) access.writable.push(common);
  }
  return access;
}

/** Extra host paths the user made visible (`sandbox.readOnlyPaths`), read-only. */
export async function readOnlyArgs(paths: readonly string[]): Promise<string[]> {
  const args: string[] = [];
  for (const path of paths) if ((await kindOf(path)) !== null) args.push('--ro-bind', path, path);
  return args;
}
