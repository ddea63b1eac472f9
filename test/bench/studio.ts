/**
 * `npm run bench:studio`: the studio with a large run open. A real run (the CLI, scripted model)
 * where one worker fans out N sub-tasks (default 1,000; STUDIO_N) is written to a temp workspace;
 * then, BENCH_RUNS times (default 3), a fresh page in Debian's chromium opens the run and waits
 * until every node of the tree is drawn. Printed: the run's log, the time from navigation to the
 * full tree, to the first node, the page's JS heap and DOM size, and the server's memory.
 */
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../bin/cli.js';
import { startStudio } from '../../adapters/studio/server.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { launchBrowser, pageBundle } from '../studio/kit.js';

const N = Number(process.env.STUDIO_N ?? 1_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

const ws = mkdtempSync(join(tmpdir(), 'a2a-bench-studio-'));
writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'fan', tasks: [{ id: 'fan', agent: '@architect', prompt: `split into ${N}` }] }));
writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ limits: { maxParallelSubtasks: N, maxSubtasksPerWorker: N, spawnRatePerMinute: N }, git: { worktrees: 'off' } }));
writeFileSync(
  join(ws, 'script.json'),
  JSON.stringify({
    rules: [
      {
        agent: 'architect',
        depth: 0,
        turns: [
          { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: Array.from({ length: N }, (_, i) => ({ agentType: '@coder', prompt: `part ${i}`, expectedOutput: 'done' })) } }] },
          { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children' } }] },
          { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'all parts' } }] },
        ],
      },
      { agent: 'coder', turns: [{ text: 'working on it', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'part done' } }] }] },
    ],
  }),
);

const t0 = Date.now();
const sink = { write: () => true } as unknown as NodeJS.WritableStream;
const code = await main(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'big', '--no-tree'], { stdout: sink, stderr: process.stderr } as never);
if (code !== 0) throw new Error(`the ${N}-sub-task run failed (${code})`);
const runMs = Date.now() - t0;
const events = new FileRunStore(ws).events('big').length;
const logBytes = statSync(join(ws, '.a2a', 'runs', 'big', 'events.jsonl')).size;

const rssBefore = process.memoryUsage().rss;
const studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle() });
const browser = await launchBrowser();
const rows: Array<Record<string, number>> = [];
try {
  for (let i = 0; i < RUNS; i++) {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Performance.enable');
    const start = Date.now();
    await page.goto(`${studio.url}#/run/big`);
    await page.locator('button[data-node]').first().waitFor({ timeout: 60_000 });
    const firstMs = Date.now() - start;
    await page.waitForFunction(`document.querySelectorAll('button[data-node]').length === ${N + 1}`, undefined, { timeout: 60_000, polling: 20 });
    const fullMs = Date.now() - start;
    const metrics = Object.fromEntries(((await cdp.send('Performance.getMetrics')) as { metrics: Array<{ name: string; value: number }> }).metrics.map((m) => [m.name, m.value]));
    // select the worker: its transcript over the whole log, and its chart
    const t1 = Date.now();
    await page.locator('button[data-node="w-fan"]').click();
    await page.locator('[aria-label="Transcript of w-fan"]').waitFor({ timeout: 60_000 });
    const selectMs = Date.now() - t1;
    rows.push({ firstMs, fullMs, selectMs, heapMB: (metrics.JSHeapUsedSize ?? 0) / 1048576, domNodes: metrics.Nodes ?? 0 });
    await page.close();
  }
} finally {
  await browser.close();
  await studio.close();
}
const serverMB = (process.memoryUsage().rss - rssBefore) / 1048576;
const median = (key: string) => {
  const v = rows.map((r) => r[key]!).sort((a, b) => a - b);
  return v[Math.floor(v.length / 2)]!;
};
const table = [
  ['measure', 'value'],
  ['sub-tasks', String(N)],
  ['run (CLI, scripted)', `${(runMs / 1000).toFixed(1)} s`],
  ['events in the log', `${events} (${(logBytes / 1048576).toFixed(1)} MB)`],
  [`page: first node (median of ${RUNS})`, `${Math.round(median('firstMs'))} ms`],
  [`page: all ${N + 1} nodes drawn`, `${Math.round(median('fullMs'))} ms`],
  ['page: select the worker (transcript + chart)', `${Math.round(median('selectMs'))} ms`],
  ['page: JS heap used', `${median('heapMB').toFixed(1)} MB`],
  ['page: DOM nodes', String(Math.round(median('domNodes')))],
  ['studio server: RSS growth', `${serverMB.toFixed(1)} MB`],
];
const width = Math.max(...table.map((r) => r[0]!.length));
for (const [i, [k, v]] of table.entries()) {
  console.log(`${k!.padEnd(width)}  ${v}`);
  if (i === 0) console.log(`${'-'.repeat(width)}  ${'-'.repeat(12)}`);
}
