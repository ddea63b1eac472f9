/**
 * What the studio tests share: the page bundled from the sources (as `npm run build` bundles it),
 * Debian's chromium driven by playwright-core (never a downloaded browser), a place for the
 * screenshots, and a run's files written by hand.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';
import { bundleOnce } from '../helpers.js';
import { chromium, type Browser } from 'playwright-core';
import { FileRunStore, type RunRecord } from '../../adapters/store/file.js';
import type { RunEvent } from '../../machines/protocol/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** How `npm run build` bundles the page (package.json's build script), for the tests that build it themselves. */
export const PAGE_BUILD: BuildOptions = { format: 'esm', target: 'es2022' };

/** The page's script, bundled from adapters/studio/page/main.ts for this test process. */
export function pageBundle(): string {
  return bundleOnce('studio-page', 'adapters/studio/page/main.ts', PAGE_BUILD);
}

/** Where the browser tests leave their screenshots (gitignored). */
export const SHOTS = join(root, 'test-results', 'studio');

export function chromiumPath(): string {
  const path = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
  if (!existsSync(path)) {
    throw new Error(`the studio's browser tests need Debian's chromium at ${path}: install it with "apt-get install -y chromium" (.ci/run does when it is missing), or set CHROMIUM_BIN`);
  }
  return path;
}

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true });
  return chromium.launch({
    executablePath: chromiumPath(),
    // as root, without a sandbox; no background traffic (this machine has no internet)
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** A run's files as a run process writes them: record, events, audit and status. */
export function writeRun(workspace: string, record: Partial<RunRecord> & { runId: string }, events: Array<Partial<RunEvent> & { type: string }>, extra: { audit?: unknown[]; status?: unknown } = {}): FileRunStore {
  const store = new FileRunStore(workspace);
  store.create({ pid: process.pid, status: 'completed', startedAt: 1_000, planId: 'p', source: 'plan.json', ...record });
  const dir = store.dir(record.runId);
  writeFileSync(join(dir, 'events.jsonl'), events.map((e, i) => `${JSON.stringify({ runId: record.runId, seq: i, ts: 1_000 + i, data: {}, ...e })}\n`).join(''));
  if (extra.audit) writeFileSync(join(dir, 'audit.jsonl'), extra.audit.map((a) => `${JSON.stringify(a)}\n`).join(''));
  if (extra.status) store.writeStatus(record.runId, extra.status);
  return store;
}
