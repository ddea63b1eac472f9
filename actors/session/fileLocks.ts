/**
 * File coordination for sub-tasks that share a worktree: the files a sub-task declares
 * (`targetFiles`) are held by it while it runs; a sibling's write to a held file is refused
 * with the holder's name, so nothing is silently overwritten.
 */
import { relative, resolve } from 'node:path';
import type { FileLocks } from '../tools/types.js';

export type LockOutcome = { ok: true } | { ok: false; conflicts: Array<{ file: string; holder: string }> };

export class FileLockTable implements FileLocks {
  readonly #holders = new Map<string, string>();
  readonly #byOwner = new Map<string, string[]>();

  static key(worktree: string, file: string): string {
    return `${resolve(worktree)}\0${relative(resolve(worktree), resolve(worktree, file))}`;
  }

  /** Takes all the files for `owner`, or none of them. */
  acquire(worktree: string, files: string[], owner: string): LockOutcome {
    const keys = files.map((f) => FileLockTable.key(worktree, f));
    const conflicts = keys
      .map((k, i) => ({ file: files[i]!, holder: this.#holders.get(k) }))
      .filter((c): c is { file: string; holder: string } => c.holder !== undefined && c.holder !== owner);
    if (conflicts.length > 0) return { ok: false, conflicts };
    for (const k of keys) this.#holders.set(k, owner);
    this.#byOwner.set(owner, [...(this.#byOwner.get(owner) ?? []), ...keys]);
    return { ok: true };
  }

  release(owner: string): void {
    for (const k of this.#byOwner.get(owner) ?? []) if (this.#holders.get(k) === owner) this.#holders.delete(k);
    this.#byOwner.delete(owner);
  }

  heldBy(worktree: string, file: string, sessionId: string): string | null {
    const holder = this.#holders.get(FileLockTable.key(worktree, file));
    return holder !== undefined && holder !== sessionId ? holder : null;
  }
}
