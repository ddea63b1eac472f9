/**
 * Where runs that work in a workspace of their own live (an example run on a fresh copy of its
 * repository): `a2a pause|resume|status|stop|artifacts` run from anywhere find them by id, or as
 * the latest run in progress, without `--workspace`. One small file per run in the user's config
 * directory (`runs/<runId>.json`), parsed when read; a stale or invalid entry is skipped. The
 * newest INDEX_KEPT are kept.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { RunId } from '../../machines/protocol/index.js';
import { userConfigDir } from '../config.js';

const Entry = z.strictObject({ runId: RunId, workspace: z.string().min(1), at: z.number() });
type Entry = z.infer<typeof Entry>;

const dir = () => join(userConfigDir(), 'runs');

/**
 * How many runs the index keeps: past it, the oldest entries go (and, first, those whose workspace
 * is gone), so that the config directory does not grow with every run ever made.
 */
export const INDEX_KEPT = 500;

export function indexRun(runId: string, workspace: string, kept = INDEX_KEPT): void {
  mkdirSync(dir(), { recursive: true });
  writeFileSync(join(dir(), `${runId}.json`), JSON.stringify({ runId, workspace, at: Date.now() } satisfies Entry));
  let count = 0;
  try {
    count = readdirSync(dir()).filter((n) => n.endsWith('.json')).length;
  } catch {
    return;
  }
  if (count <= kept) return;
  const entries = indexedRuns();
  const gone = entries.filter((e) => e.runId !== runId && !existsSync(e.workspace));
  for (const e of gone) forgetRun(e.runId);
  const left = entries.filter((e) => !gone.includes(e));
  for (const e of left.slice(kept)) if (e.runId !== runId) forgetRun(e.runId);
}

/** The indexed runs, newest first. */
export function indexedRuns(): Entry[] {
  let names: string[];
  try {
    names = readdirSync(dir()).filter((n) => n.endsWith('.json'));
  } catch {
    return [];
  }
  const entries: Entry[] = [];
  for (const name of names) {
    try {
      const parsed = Entry.safeParse(JSON.parse(readFileSync(join(dir(), name), 'utf8')));
      if (parsed.success && `${parsed.data.runId}.json` === name) entries.push(parsed.data);
    } catch {
      // unreadable: skipped
    }
  }
  return entries.sort((a, b) => b.at - a.at);
}

export function forgetRun(runId: string): void {
  rmSync(join(dir(), `${runId}.json`), { force: true });
}
