/**
 * Hard links someone else planted in the worktree. A file whose inode also has a name outside
 * the worktree (a link made from outside to a file of the host user's, to the runtime's `.a2a/`
 * state, or to the repository's config) would be read and written through the worktree's
 * read-write bind: such files are masked in the sandbox (an empty, read-only file over each; the
 * tool result names them), and the command still runs.
 *
 * "Outside" is decided by counting: a name is masked when its inode has more links (st_nlink)
 * than the names of that inode found in what the sandbox shows of the worktree. Files with one
 * link are never masked, nor are links whose every name is inside (an agent's own `ln a b`).
 * Symbolic links (resolved inside the sandbox) and directories (which cannot be hard-linked) are
 * not concerned; regular files, sockets and FIFOs are (a socket linked in from outside would be a
 * way to a host service). The zones:
 *
 * - the worktree, without `.a2a/` (masked in the sandbox: a link into it counts as outside) and
 *   without `.git/`: a name here is masked when its inode has any name elsewhere, `.git/` included
 *   (a worktree file linked to `.git/config` would write the config the runtime's git reads);
 * - `.git/` when it is a directory (the agent works in the checkout itself): its names count with
 *   the worktree's; the repository's own object files (`git clone --local` hard-links them to the
 *   source repository's) are kept when their first bytes say they are git data (a pack, an index,
 *   a zlib-compressed loose object with its header), else masked as well.
 *
 * Cost: the first scan of a worktree reads every directory and lstats every file (0.4 to 1 s
 * for 50,000 files on a 2-core VM; it yields to the event loop every 10 ms). Later scans lstat
 * each directory and reuse what was read when its ctime is unchanged (a new name, a rename or a
 * removal in a directory changes its ctime, which only a change of the machine's clock could set
 * back), so a command pays about 8 µs per directory (36 to 38 ms for 5,000), plus the
 * directories that changed. A directory whose ctime is within 2 s of a scan's start is read
 * again next time (a change in the same clock tick would leave the ctime as it was), and ctimes
 * are trusted only on local filesystems (ext4, xfs, btrfs, tmpfs, overlayfs, f2fs, zfs,
 * bcachefs): on others (NFS, FUSE) every scan reads everything.
 *
 * What it cannot see: a link planted while the command already runs (the worktree is live), or
 * in the moment between the scan and bwrap's mounts; a link made from outside to a worktree file
 * that had one name when its directory was read (its content is the worktree's own, and making
 * that link needs access to the file already).
 */
import { closeSync, lstatSync, openSync, readdirSync, readSync, statfsSync, type Stats } from 'node:fs';
import { constants as zlib, inflateSync } from 'node:zlib';
import { join } from 'node:path';

/** A directory whose ctime is this recent is read again next time (ms). */
const RACY_MS = 2_000;
/** Synchronous work between two yields to the event loop (ms). */
const SLICE_MS = 10;
/** Worktrees whose scans are kept (the least recently used go first). */
const KEPT = 32;

/** Filesystems whose directory ctimes come from this machine's clock, and may be trusted. */
const LOCAL_FS = new Set([
  0xef53, // ext2/3/4
  0x58465342, // xfs
  0x9123683e, // btrfs
  0x01021994, // tmpfs
  0x794c7630, // overlayfs
  0xf2f52010, // f2fs
  0x2fc12fc1, // zfs
  0xca451a4e, // bcachefs
]);

interface Linked {
  name: string;
  dev: number;
  ino: number;
  nlink: number;
}

interface Dir {
  dev: number;
  ino: number;
  ctimeMs: number;
  /** Its ctime was old enough, on a local filesystem, when it was read. */
  trusted: boolean;
  subdirs: string[];
  /** Its files (not directories or symbolic links) with more than one link when it was read. */
  linked: Linked[];
}

interface Name {
  rel: string;
  git: boolean;
}

interface Inode {
  nlink: number;
  names: Name[];
  /** One of its names was found in a directory read in this pass (not taken from the last one). */
  fresh: boolean;
}

export interface LinkScanResult {
  /** Paths (relative to the worktree) to mask, sorted. */
  masked: string[];
  /** Directories and files looked at, and how many directories were read (not reused). */
  dirs: number;
  read: number;
}

const MAYBE = { throwIfNoEntry: false } as const;
const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Git's own data formats, by their first bytes (what `git clone --local` hard-links). */
const GIT_DATA = /^\.git\/objects\/(?:[0-9a-f]{2}\/(?:[0-9a-f]{38}|[0-9a-f]{62})|pack\/pack-[0-9a-f]{40,64}\.(?:pack|idx|rev|bitmap|mtimes)|pack\/multi-pack-index|info\/commit-graph|info\/commit-graphs\/graph-[0-9a-f]{40,64}\.graph)$/;
const MAGIC: Record<string, string> = { pack: 'PACK', idx: '\xfftOc', rev: 'RIDX', bitmap: 'BITM', mtimes: 'MTME', graph: 'CGPH', 'commit-graph': 'CGPH', 'multi-pack-index': 'MIDX' };

function isGitData(abs: string, rel: string): boolean {
  if (!GIT_DATA.test(rel)) return false;
  let fd: number | null = null;
  try {
    fd = openSync(abs, 'r');
    const head = Buffer.alloc(64);
    const n = readSync(fd, head, 0, head.length, 0);
    const bytes = head.subarray(0, n);
    const kind = /\.([a-z]+)$/.exec(rel)?.[1] ?? rel.slice(rel.lastIndexOf('/') + 1);
    const magic = MAGIC[kind];
    if (magic !== undefined) return bytes.subarray(0, 4).toString('latin1') === magic;
    // a loose object: zlib, inflating to "<type> <size>\0"
    const text = inflateSync(bytes, { finishFlush: zlib.Z_SYNC_FLUSH }).toString('latin1');
    return /^(?:blob|tree|commit|tag) \d+\0/.test(text);
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** One worktree's scans: what its directories held, reused while their ctime says nothing changed. */
class WorktreeLinks {
  #dirs = new Map<string, Dir>();
  /** Git data verified, by inode (and its ctime and size then). */
  #gitData = new Map<string, { ctimeMs: number; size: number; ok: boolean }>();
  /** The inodes with more than one link that the last scan found (with every inside name of each). */
  #known = new Set<string>();
  /** The scan under way (scans of one worktree run one at a time). */
  #last: Promise<unknown> = Promise.resolve();

  constructor(readonly root: string) {}

  scan(racyMs: number): Promise<LinkScanResult> {
    const run = this.#last.then(() => this.#scan(racyMs), () => this.#scan(racyMs));
    this.#last = run.catch(() => undefined);
    return run;
  }

  async #scan(racyMs: number): Promise<LinkScanResult> {
    let pass = await this.#pass(false, racyMs);
    // a new inode with more than one link, found in a directory read now, whose other names were
    // not all found: they may be older names that had one link when their directory was read (an
    // agent's `ln a b`), in directories taken from the last scan: everything is read once more,
    // so that only links really outside are masked. (An inode the last scan knew had all its
    // names found then, and a name added since is in a directory read now.)
    const unsure = (key: string, inode: Inode) => inode.fresh && inode.nlink > inode.names.length && !this.#known.has(key);
    if (pass.read < pass.dirs && [...pass.inodes].some(([key, inode]) => unsure(key, inode))) pass = await this.#pass(true, racyMs);
    this.#known = new Set(pass.inodes.keys());
    const masked: string[] = [];
    for (const inode of pass.inodes.values()) {
      const inside = inode.names.length;
      const worktree = inode.names.filter((n) => !n.git).length;
      for (const name of inode.names) {
        if (!name.git ? inode.nlink > worktree : inode.nlink > inside && !this.#ownGitData(name.rel)) masked.push(name.rel);
      }
    }
    return { masked: masked.sort(), dirs: pass.dirs, read: pass.read };
  }

  #ownGitData(rel: string): boolean {
    const abs = join(this.root, rel);
    const info = lstatSync(abs, { throwIfNoEntry: false });
    if (!info?.isFile()) return false;
    const key = `${info.dev}:${info.ino}`;
    const known = this.#gitData.get(key);
    if (known && known.ctimeMs === info.ctimeMs && known.size === info.size) return known.ok;
    const ok = isGitData(abs, rel);
    this.#gitData.set(key, { ctimeMs: info.ctimeMs, size: info.size, ok });
    return ok;
  }

  async #pass(full: boolean, racyMs: number): Promise<{ inodes: Map<string, Inode>; dirs: number; read: number }> {
    const start = Date.now();
    let sliceStart = performance.now();
    const rootInfo = lstatSync(this.root, { throwIfNoEntry: false });
    const localFs = rootInfo ? LOCAL_FS.has(Number(statfsSync(this.root).type)) : false;
    const trustable = (info: Stats) => localFs && info.dev === rootInfo!.dev && info.ctimeMs < start - racyMs;
    const next = new Map<string, Dir>();
    const inodes = new Map<string, Inode>();
    let read = 0;
    const stack = [''];
    while (stack.length > 0) {
      if (performance.now() - sliceStart > SLICE_MS) {
        await yieldNow();
        sliceStart = performance.now();
      }
      const rel = stack.pop()!;
      const abs = rel === '' ? this.root : `${this.root}/${rel}`;
      const info = lstatSync(abs, MAYBE);
      if (!info?.isDirectory()) continue;
      let dir = full ? undefined : this.#dirs.get(rel);
      if (dir && !(dir.trusted && dir.dev === info.dev && dir.ino === info.ino && dir.ctimeMs === info.ctimeMs)) dir = undefined;
      if (dir) {
        // the same names, the same inodes: only their link counts may have changed
        for (const file of dir.linked) {
          const now = lstatSync(`${abs}/${file.name}`, MAYBE);
          if (!now || now.dev !== file.dev || now.ino !== file.ino) {
            dir = undefined;
            break;
          }
          file.nlink = now.nlink;
        }
      }
      const fresh = dir === undefined;
      if (!dir) {
        dir = readDir(abs, info, trustable(info));
        read++;
      }
      next.set(rel, dir);
      const git = rel === '.git' || rel.startsWith('.git/');
      for (const file of dir.linked) {
        if (file.nlink < 2) continue;
        const key = `${file.dev}:${file.ino}`;
        let inode = inodes.get(key);
        if (!inode) inodes.set(key, (inode = { nlink: file.nlink, names: [], fresh: false }));
        inode.names.push({ rel: rel === '' ? file.name : `${rel}/${file.name}`, git });
        inode.fresh ||= fresh;
      }
      for (const name of dir.subdirs) {
        // .a2a/ is masked in the sandbox: nothing under it is inside
        if (rel === '' && name === '.a2a') continue;
        stack.push(rel === '' ? name : `${rel}/${name}`);
      }
    }
    this.#dirs = next;
    return { inodes, dirs: next.size, read };
  }
}

function readDir(abs: string, info: Stats, trusted: boolean): Dir {
  const dir: Dir = { dev: info.dev, ino: info.ino, ctimeMs: info.ctimeMs, trusted, subdirs: [], linked: [] };
  let entries;
  try {
    entries = readdirSync(abs, { withFileTypes: true });
  } catch {
    // unreadable to the runtime (and so to the sandbox's same user): nothing found, read again next time
    dir.trusted = false;
    return dir;
  }
  for (const entry of entries) {
    if (entry.isDirectory()) {
      dir.subdirs.push(entry.name);
      continue;
    }
    if (entry.isSymbolicLink()) continue;
    const file = lstatSync(`${abs}/${entry.name}`, MAYBE);
    // gone meanwhile: the directory's ctime changed, it is read again next time
    if (!file || file.isSymbolicLink()) continue;
    if (file.isDirectory()) dir.subdirs.push(entry.name);
    else if (file.nlink > 1) dir.linked.push({ name: entry.name, dev: file.dev, ino: file.ino, nlink: file.nlink });
  }
  return dir;
}

const worktrees = new Map<string, WorktreeLinks>();

/**
 * The names in `root` (a real path) whose inode has links outside what the sandbox shows of it.
 * `racyMs`: how old a directory's ctime must be for what was read of it to be reused (the tests
 * shorten it; the default is safe on any clock tick).
 */
export function outsideLinks(root: string, options: { racyMs?: number } = {}): Promise<LinkScanResult> {
  let links = worktrees.get(root);
  if (links) worktrees.delete(root);
  else links = new WorktreeLinks(root);
  // most recently used last
  worktrees.set(root, links);
  while (worktrees.size > KEPT) worktrees.delete(worktrees.keys().next().value!);
  return links.scan(options.racyMs ?? RACY_MS);
}
