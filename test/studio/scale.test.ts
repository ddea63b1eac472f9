/**
 * The studio with a large run, in a browser (Debian's chromium, playwright-core): a run of 3,000
 * sub-tasks written by hand as events (kit.ts `writeRun`). The tree holds far fewer rows in the
 * DOM than the run has sessions, and stays a tree (levels, places among siblings, one tab stop);
 * scrolling to its end shows the last session; the keyboard reaches it and selects it (its
 * transcript shown); a worker folds and opens; an event appended to the log while the page is
 * open changes that session's row in place. How fast is `npm run bench:studio`'s to say.
 */
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startStudio, type RunningStudio } from '../../adapters/studio/server.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { launchBrowser, pageBundle, SHOTS, writeRun } from './kit.js';

const N = 3_000;
let browser: Browser;
let studio: RunningStudio | null = null;
let page: Page | null = null;
const errors: string[] = [];

beforeAll(async () => {
  browser = await launchBrowser();
  pageBundle();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await page?.close().catch(() => undefined);
  page = null;
  await studio?.close();
  studio = null;
  expect(errors.splice(0), 'errors in the page').toEqual([]);
});

/** A running run: worker w-big and its N sub-tasks, every other one ended; the log's path. */
function bigRun(): { ws: string; log: string } {
  const ws = tempDir('a2a-studio-scale-');
  const events: Array<Partial<RunEvent> & { type: string }> = [
    { type: 'run.started', data: { planId: 'p', tasks: 1, source: 'plan.json' } },
    { type: 'worker.deployed', subTaskId: 'w-big', taskId: 'big', agentType: '@architect', depth: 0, data: { prompt: `split into ${N}` } },
  ];
  for (let i = 1; i <= N; i++) events.push({ type: 'subtask.spawned', subTaskId: `w-big.${i}`, parentId: 'w-big', taskId: 'big', agentType: '@coder', depth: 1, data: { prompt: `part ${i} of the work` } });
  for (let i = 1; i <= N; i += 2) events.push({ type: 'subtask.result', subTaskId: `w-big.${i}`, taskId: 'big', data: { status: 'success', output: `part ${i} done` } });
  writeRun(ws, { runId: 'big', status: 'running' }, events);
  return { ws, log: join(ws, '.a2a', 'runs', 'big', 'events.jsonl') };
}

async function open(ws: string, hash: string): Promise<Page> {
  studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle(), pollMs: 50 });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(5_000);
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${studio.url}${hash}`);
  return page;
}

const rows = (p: Page) => p.locator('[role=tree] [role=treeitem]');
const focused = (p: Page) => p.evaluate<string | undefined>('document.activeElement?.dataset?.node');
/** Is the row of `id` within the tree's visible box? */
const inView = (p: Page, id: string) =>
  p.evaluate<boolean>(`(() => {
    const row = document.getElementById(${JSON.stringify(`row-${id}`)});
    if (!row) return false;
    const box = document.getElementById('vtree').getBoundingClientRect();
    const r = row.getBoundingClientRect();
    return r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
  })()`);

describe('a2a studio with a run of 3,000 sessions', () => {
  it('draws only the rows in view, scrolls to the last session, reaches and selects it by keyboard, and updates its row in place', async () => {
    const { ws, log } = bigRun();
    const p = await open(ws, '#/run/big');
    const first = p.locator('[role=treeitem][aria-label^="w-big.1,"]');
    await first.waitFor();
    // a tree of N + 1 rows, each telling where it is; the DOM holds a window of them
    expect(await first.getAttribute('aria-level')).toBe('2');
    expect(await first.getAttribute('aria-setsize')).toBe(String(N));
    expect(await first.getAttribute('aria-posinset')).toBe('1');
    expect(await p.locator('[role=treeitem][aria-label^="w-big,"]').getAttribute('aria-expanded')).toBe('true');
    expect(await rows(p).count()).toBeLessThan(100);
    expect(await p.locator('#vtree').evaluate((el) => el.scrollHeight)).toBeGreaterThan(N * 10);
    await p.screenshot({ path: join(SHOTS, 'scale-tree.png') });

    // scrolled to its end: the last session is drawn and in view, still a window of rows
    await p.locator('#vtree').evaluate((el) => (el.scrollTop = el.scrollHeight));
    await p.locator(`button[data-node="w-big.${N}"]`).waitFor();
    expect(await inView(p, `w-big.${N}`)).toBe(true);
    expect(await p.locator(`[role=treeitem][aria-label^="w-big.${N},"]`).getAttribute('aria-posinset')).toBe(String(N));
    expect(await rows(p).count()).toBeLessThan(100);
    expect(await p.locator('button[data-node="w-big.1"]').count()).toBe(0);

    // by keyboard: back to the top, one tab stop, End reaches the last session and Enter selects it
    await p.locator('#vtree').evaluate((el) => (el.scrollTop = 0));
    await p.locator('button[data-node="w-big"]').focus();
    expect(await p.locator('[role=tree] button[data-node][tabindex="0"]').count()).toBe(1);
    await p.keyboard.press('ArrowDown');
    await p.keyboard.press('ArrowDown');
    expect(await focused(p)).toBe('w-big.2');
    await p.keyboard.press('End');
    expect(await focused(p)).toBe(`w-big.${N}`);
    expect(await inView(p, `w-big.${N}`)).toBe(true);
    await p.keyboard.press('ArrowUp');
    expect(await focused(p)).toBe(`w-big.${N - 1}`);
    await p.keyboard.press('ArrowDown');
    await p.keyboard.press('Enter');
    const transcript = p.locator(`[aria-label="Transcript of w-big.${N}"]`);
    await transcript.waitFor();
    expect(await transcript.textContent()).toContain(`part ${N} of the work`);
    expect(await p.locator(`[role=treeitem][aria-label^="w-big.${N},"]`).getAttribute('aria-selected')).toBe('true');
    expect(p.url()).toContain(`#/run/big/tree/w-big.${N}`);

    // the run goes on: the session ends while it is shown, its row and its view change in place, the focus stays
    const row = p.locator(`[role=treeitem][aria-label^="w-big.${N},"]`);
    expect(await row.getAttribute('aria-label')).toContain('running');
    const button = await p.locator(`button[data-node="w-big.${N}"]`).elementHandle();
    appendFileSync(log, `${JSON.stringify({ runId: 'big', seq: 99_999, ts: 99_999, type: 'subtask.result', subTaskId: `w-big.${N}`, taskId: 'big', data: { status: 'failed', output: '', error: 'the last part broke' } })}\n`);
    await expect.poll(() => row.getAttribute('aria-label')).toContain('failed');
    expect(await row.locator('.s-failed').textContent()).toBe('failed');
    expect(await row.locator('.note').textContent()).toBe('the last part broke');
    expect(await button!.evaluate((el) => el.isConnected && el.ownerDocument.activeElement === el)).toBe(true);
    await expect.poll(() => transcript.textContent()).toContain('error: the last part broke');
    await p.screenshot({ path: join(SHOTS, 'scale-end.png') });

    // Home, then Left folds the worker (its 3,000 rows gone), Right opens it again
    await p.keyboard.press('Home');
    expect(await focused(p)).toBe('w-big');
    await p.keyboard.press('ArrowLeft');
    await expect.poll(() => rows(p).count()).toBe(1);
    expect(await p.locator('[role=treeitem][aria-label^="w-big,"]').getAttribute('aria-expanded')).toBe('false');
    await p.keyboard.press('ArrowRight');
    await expect.poll(() => p.locator('[role=treeitem][aria-label^="w-big,"]').getAttribute('aria-expanded')).toBe('true');
    await p.keyboard.press('ArrowRight');
    expect(await focused(p)).toBe('w-big.1');
    await p.keyboard.press('ArrowLeft');
    expect(await focused(p)).toBe('w-big');
  });

  it('opens a link to a session deep in the tree with its row in view', async () => {
    const { ws } = bigRun();
    const p = await open(ws, `#/run/big/tree/w-big.${N - 100}`);
    await p.locator(`[aria-label="Transcript of w-big.${N - 100}"]`).waitFor();
    await p.locator(`button[data-node="w-big.${N - 100}"]`).waitFor();
    expect(await inView(p, `w-big.${N - 100}`)).toBe(true);
    expect(await p.locator(`[role=treeitem][aria-label^="w-big.${N - 100},"]`).getAttribute('aria-selected')).toBe('true');
  });
});
