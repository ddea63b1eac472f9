/**
 * Where runs that work in a workspace of their own live (an example run on a fresh copy of its
 * repository): `a2a pause|resume|status|stop|artifacts` run from anywhere find them by id, or as
 * the latest run in progress, without `--workspace`. One small file per run in the user's config
 * directory (`runs/<runId>.json`), parsed when read; a stale or invalid entry is skipped.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { RunId } from '../../machines/protocol.js';
import { userConfigDir } from '../config.js';

const Entry = z.strictObject({ runId: RunId, workspace: z.string().min(1), at: z.number() });
type Entry = z.infer<typeof Entry>;

const dir = () => join(userConfigDir(), 'runs');

export function indexRun(runId: string, workspace: string): void {
  mkdirSync(dir(), { recursive: true });
  writeFileSync(join(dir(), `${runId}.json`), JSON.stringify({ runId, workspace, at: Date.now() } satisfies Entry));
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
