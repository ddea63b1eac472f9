/**
 * The disk quota of a command (`sandbox.limits.diskMB`): how much the filesystems it may write
 * (the worktree's, and the git directory's when that lies on another) may fill while it runs.
 * Their free blocks and free inodes (statfs) are read when it starts and every 20 ms after; each
 * inode used counts as one block (4 KB), so that a command making millions of empty files is
 * stopped too (10,240 MB: about 2.6 million files). Past the quota, the command and everything
 * it started are killed at once, and the tool result says so.
 *
 * Why this way: what a command writes has no kernel limit an unprivileged process can set (ext4
 * and xfs project quotas need root and a filesystem mounted with them; bwrap 0.8 has no overlay
 * with a sized upper layer, and one would hold what the command writes in memory until merged
 * back; per-process write counters, /proc/<pid>/io, miss directories, inodes and preallocation,
 * and count a file rewritten ten times ten times). The filesystem's own count sees everything
 * that takes space: file data as soon as it is written (delayed allocation counts at once),
 * directories, inodes. Preallocation, which takes gigabytes in one call before the next look,
 * is refused by the sandbox's seccomp filter (seccomp.ts). The price: the count is the
 * filesystem's, so what other processes write to that disk while the command runs counts too (a
 * command is stopped only when the disk filled by more than the quota meanwhile), and space freed
 * meanwhile gives room. A command writing at 1 GB/s passes the quota by about 20 MB before it is
 * stopped (measured: 1 to 11 MB past 64 and 256 MB); what it wrote stays.
 */
import { statfsSync, statSync } from 'node:fs';

const EVERY_MS = 20;

export interface DiskWatch {
  /** Starts watching (when the command has started); `stop` kills it. Returns what ends the watch. */
  start(stop: () => void): () => void;
  /** Whether the quota was passed (and the command stopped for it). */
  readonly hit: boolean;
}

/** A watch of the filesystems holding `paths`, for a quota of `limitMB`. */
export function diskWatch(paths: readonly string[], limitMB: number): DiskWatch {
  // one path per filesystem
  const devices = new Map<number, string>();
  for (const path of paths) {
    const dev = statSync(path, { throwIfNoEntry: false })?.dev;
    if (dev !== undefined && !devices.has(dev)) devices.set(dev, path);
  }
  const watched = [...devices.values()];
  const free = () => {
    let bytes = 0;
    for (const path of watched) {
      try {
        const fs = statfsSync(path);
        bytes += (fs.bfree + fs.ffree) * fs.bsize;
      } catch {
        // gone (the worktree removed meanwhile): nothing more is written there
      }
    }
    return bytes;
  };
  const limit = limitMB * 1024 * 1024;
  const before = free();
  let hit = false;
  return {
    get hit() {
      return hit;
    },
    start(stop) {
      const timer = setInterval(() => {
        if (before - free() <= limit) return;
        hit = true;
        clearInterval(timer);
        stop();
      }, EVERY_MS);
      return () => clearInterval(timer);
    },
  };
}
