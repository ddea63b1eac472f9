/**
 * Once per `vitest run`, before any test file: removes the bundles (test/helpers.ts bundleOnce)
 * that test processes killed by an earlier run could not remove themselves (a worker ended with a
 * signal never runs its exit handlers), and after the run those of its own workers. A bundle of a
 * process still running is left alone.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export default function setup(): () => void {
  clean();
  // and after the run, what its own workers left
  return clean;
}

function clean(): void {
  const dir = join(import.meta.dirname, '..', 'node_modules', '.cache', 'a2a-test');
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return; // nothing bundled yet
  }
  for (const entry of entries) {
    const pid = /-(\d+)(?:\.tmp)?(?:\.\w+)?$/.exec(entry)?.[1];
    if (pid === undefined || !alive(Number(pid))) rmSync(join(dir, entry), { recursive: true, force: true });
  }
}
