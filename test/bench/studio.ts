/**
 * `npm run bench:studio`: the studio with a large run open, at 1,000 and 10,000 sub-tasks (STUDIO_N,
 * a comma-separated list). For each size, BENCH_RUNS times (default 3), a real run (the CLI in its
 * own process, scripted model) where one worker fans out N sub-tasks is watched live by a page in
 * Debian's chromium, from its first event to its end: the longest task of the page (a `longtask`
 * PerformanceObserver) and the longest gap between two frames while the run streams in. Then,
 * BENCH_RUNS times, a fresh page opens the first finished run: the time from navigation (the
 * page's clock) to the first row and to the whole tree as the run ended (every session in it,
 * every one ended in the run's header), the time to select the worker (its transcript, its
 * chart), the page's JS heap and DOM (after a garbage collection), the studio server's memory;
 * and once more on a studio just started (the run's log not read yet). Printed: a table of
 * medians, one column per size.
 *
 * STUDIO_PROFILE=1 also profiles one open per size (test/bench/studioProfile.ts) and prints where
 * the page's time went.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { startStudio } from '../../adapters/studio/server.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { bundleOnce } from '../helpers.js';
import { launchBrowser, pageBundle } from '../studio/kit.js';
import { splitProfile, splitTrace, startProfile, stopProfile } from './studioProfile.js';

const SIZES = (process.env.STUDIO_N ?? '1000,10000').split(',').map(Number);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PROFILE = process.env.STUDIO_PROFILE === '1';
if (SIZES.some((n) => !Number.isInteger(n) || n < 1) || !Number.isInteger(RUNS) || RUNS < 1) {
  console.error(`npm run bench:studio: STUDIO_N is a comma-separated list of sizes (got ${process.env.STUDIO_N}), BENCH_RUNS a whole number (got ${process.env.BENCH_RUNS})`);
  process.exit(2);
}

/** The CLI from the sources, bundled once (starts in ~0.2 s, as in the NATS tests). */
const cli = bundleOnce('a2a', 'bin/a2a.ts', { platform: 'node', format: 'esm', packages: 'external', target: 'node20', splitting: true }, 'mjs');

/** Longest task and longest frame gap of the page, from its start (installed before its script). */
const WATCH = `window.__bench = { longest: 0, longtasks: 0, gap: 0 };
new PerformanceObserver((list) => { for (const e of list.getEntries()) { __bench.longtasks++; __bench.longest = Math.max(__bench.longest, e.duration); } }).observe({ type: 'longtask', buffered: true });
{ let last = 0; const tick = (t) => { if (last) __bench.gap = Math.max(__bench.gap, t - last); last = t; requestAnimationFrame(tick); }; requestAnimationFrame(tick); }`;

// what runs in the page (this file is checked without the DOM's types)
declare const window: unknown;
declare const document: {
  querySelector(selector: string): unknown;
  querySelectorAll(selector: string): { length: number };
  getElementById(id: string): { textContent: string | null } | null;
};

/**
 * The run drawn as it ended: every session in the tree (the page's own count where it has one,
 * else its nodes) and every one of them ended in the run's header. The page's clock then, else 0.
 */
const allIn = (n: number): number => {
  const studio = (window as unknown as { a2aStudio?: { treeRows?: () => number } }).a2aStudio;
  const rows = studio?.treeRows ? studio.treeRows() : document.querySelectorAll('button[data-node]').length;
  return rows === n && document.getElementById('runhead')?.textContent?.includes(`${n}/${n} sessions ended`) ? performance.now() : 0;
};
const firstIn = (): number => (document.querySelector('[data-node]') ? performance.now() : 0);
const selectedIn = (id: string): number => (document.querySelector(`[aria-label="Transcript of ${id}"]`) && document.querySelector('#session svg.diagram') ? performance.now() : 0);

function workspace(n: number): string {
  const ws = mkdtempSync(join(tmpdir(), 'a2a-bench-studio-'));
  writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'fan', tasks: [{ id: 'fan', agent: '@architect', prompt: `split into ${n}` }] }));
  writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ limits: { maxParallelSubtasks: n, maxSubtasksPerWorker: n, spawnRatePerMinute: n }, git: { worktrees: 'off' } }));
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        {
          agent: 'architect',
          depth: 0,
          turns: [
            { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: Array.from({ length: n }, (_, i) => ({ agentType: '@coder', prompt: `part ${i}`, expectedOutput: 'done' })) } }] },
            { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children' } }] },
            { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'all parts' } }] },
          ],
        },
        { agent: 'coder', turns: [{ text: 'working on it', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'part done' } }] }] },
      ],
    }),
  );
  return ws;
}

/** `a2a run` of the workspace's plan in its own process; resolves with its exit code and run time. */
function runLive(ws: string, runId: string): { ended: Promise<{ code: number; ms: number }> } {
  const t0 = Date.now();
  const child = spawn(process.execPath, [cli, 'run', 'plan.json', '--script', 'script.json', '--run-id', runId, '--no-tree'], { cwd: ws, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return {
    ended: new Promise((resolve, reject) =>
      child.on('exit', (code) => (code === 0 ? resolve({ code, ms: Date.now() - t0 }) : reject(new Error(`the run ${runId} failed (${code}): ${err.slice(-2_000)}`)))),
    ),
  };
}

async function until(what: string, ok: () => boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`bench:studio: ${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Row {
  firstMs: number;
  fullMs: number;
  selectMs: number;
  heapMB: number;
  domNodes: number;
  elements: number;
}

/** A fresh page opens the finished run `live-1` at `url`: to its first row, to the whole tree, then selects the worker. */
async function openFinished(browser: Browser, url: string, n: number, profile: string[] | null): Promise<Row> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  try {
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    if (profile) {
      // the profiler lives in the page's renderer: the page is on the studio's origin first, so that opening the run stays in that process
      await page.goto(url);
      await startProfile(cdp);
      await browser.startTracing(page, { categories: ['devtools.timeline'] });
    }
    await page.goto(`${url}#/run/live-1`, { waitUntil: 'commit' });
    const firstMs = await (await page.waitForFunction(firstIn, undefined, { timeout: 120_000, polling: 'raf' })).jsonValue();
    const fullMs = await (await page.waitForFunction(allIn, n + 1, { timeout: 120_000, polling: 'raf' })).jsonValue();
    if (profile) {
      const cpu = await stopProfile(cdp);
      const trace = await browser.stopTracing();
      const file = join(tmpdir(), `a2a-studio-open-${n}-${process.pid}.cpuprofile`);
      writeFileSync(file, JSON.stringify(cpu));
      const js = [...splitProfile(cpu).entries()].sort((a, b) => b[1] - a[1]);
      const blink = [...splitTrace(trace).entries()].sort((a, b) => b[1] - a[1]);
      profile.push(
        `where the page's time went opening the finished ${n}-sub-task run, ${Math.round(fullMs)} ms (${file}):`,
        ...js.map(([k, v]) => `  ${k.padEnd(44)} ${v.toFixed(0).padStart(6)} ms`),
        '  of which Blink on the main thread (trace):',
        ...blink.map(([k, v]) => `    ${k.padEnd(42)} ${v.toFixed(0).padStart(6)} ms`),
      );
    }
    await cdp.send('HeapProfiler.collectGarbage');
    const metrics = Object.fromEntries(((await cdp.send('Performance.getMetrics')) as { metrics: Array<{ name: string; value: number }> }).metrics.map((m) => [m.name, m.value]));
    const elements = (await page.evaluate(`document.getElementsByTagName('*').length`)) as number;
    // select the worker: its transcript over the whole log, and its chart
    const before = (await page.evaluate('performance.now()')) as number;
    await page.locator('button[data-node="w-fan"]').click();
    const selected = await (await page.waitForFunction(selectedIn, 'w-fan', { timeout: 120_000, polling: 'raf' })).jsonValue();
    return { firstMs, fullMs, selectMs: selected - before, heapMB: (metrics.JSHeapUsedSize ?? 0) / 1048576, domNodes: metrics.Nodes ?? 0, elements };
  } finally {
    await page.close();
  }
}

async function measureSize(browser: Browser, n: number): Promise<Record<string, string>> {
  const ws = workspace(n);
  const rssBefore = process.memoryUsage().rss;
  let studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle() });
  const live: Array<{ longest: number; gap: number; longtasks: number; runMs: number }> = [];
  const rows: Row[] = [];
  const profile: string[] = [];
  let serverMB = 0;
  let cold: Row;
  let events = 0;
  let logBytes = 0;
  try {
    // live: a page follows each run from its first event to its end
    for (let i = 0; i < RUNS; i++) {
      const runId = `live-${i + 1}`;
      const run = runLive(ws, runId);
      await until(`run ${runId} to start`, () => existsSync(join(ws, '.a2a', 'runs', runId, 'events.jsonl')), 30_000);
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.addInitScript(WATCH);
      await page.goto(`${studio.url}#/run/${runId}`);
      const { ms } = await run.ended;
      await page.locator('#runhead .stat', { hasText: 'completed' }).waitFor({ timeout: 120_000 });
      await page.waitForFunction(allIn, n + 1, { timeout: 120_000, polling: 50 });
      live.push({ ...((await page.evaluate('window.__bench')) as { longest: number; gap: number; longtasks: number }), runMs: ms });
      await page.close();
    }
    // finished: fresh pages open the first run (the studio has read its log already), then once more on a studio just started
    for (let i = 0; i < RUNS; i++) rows.push(await openFinished(browser, studio.url, n, PROFILE && i === 0 ? profile : null));
    serverMB = (process.memoryUsage().rss - rssBefore) / 1048576;
    await studio.close();
    studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle() });
    cold = await openFinished(browser, studio.url, n, null);
    events = new FileRunStore(ws).events('live-1').length;
    logBytes = statSync(join(ws, '.a2a', 'runs', 'live-1', 'events.jsonl')).size;
  } finally {
    await studio.close();
    // a 10,000-sub-task run's files are 100 MB
    rmSync(ws, { recursive: true, force: true });
  }
  const med = <T>(list: T[], key: keyof T) => {
    const v = list.map((r) => Number(r[key])).sort((a, b) => a - b);
    return v[Math.floor(v.length / 2)]!;
  };
  for (const line of profile) console.log(line);
  return {
    'run (CLI, scripted, own process)': `${(med(live, 'runMs') / 1000).toFixed(1)} s`,
    'events in the log': `${events} (${(logBytes / 1048576).toFixed(1)} MB)`,
    // the longtask API reports tasks of 50 ms and more
    'live: longest task while streaming': med(live, 'longest') ? `${Math.round(med(live, 'longest'))} ms` : 'none of 50 ms',
    'live: longest gap between frames': `${Math.round(med(live, 'gap'))} ms`,
    'open: first row': `${Math.round(med(rows, 'firstMs'))} ms`,
    'open: the whole tree as the run ended': `${Math.round(med(rows, 'fullMs'))} ms`,
    'open, on a studio just started (once)': `${Math.round(cold.fullMs)} ms`,
    'select the worker (transcript + chart)': `${Math.round(med(rows, 'selectMs'))} ms`,
    'page: JS heap used (after GC)': `${med(rows, 'heapMB').toFixed(1)} MB`,
    'page: DOM nodes (after GC)': String(Math.round(med(rows, 'domNodes'))),
    'page: elements in the document': String(Math.round(med(rows, 'elements'))),
    [`studio server: RSS growth (${RUNS} runs read)`]: `${serverMB.toFixed(1)} MB`,
  };
}

const browser = await launchBrowser();
const columns: Array<Record<string, string>> = [];
try {
  for (const n of SIZES) columns.push(await measureSize(browser, n));
} finally {
  await browser.close();
}
const keys = Object.keys(columns[0]!);
const table = [[`measure (median of ${RUNS})`, ...SIZES.map((n) => `${n.toLocaleString('en')} sub-tasks`)], ...keys.map((k) => [k, ...columns.map((c) => c[k]!)])];
const widths = table[0]!.map((_, i) => Math.max(...table.map((r) => r[i]!.length)));
for (const [i, row] of table.entries()) {
  console.log(row.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join('  '));
  if (i === 0) console.log(widths.map((w) => '-'.repeat(w)).join('  '));
}
