/**
 * The documentation site as a reader gets it: built once, as `npm run docs:build` builds it (the
 * generated pages, the API reference from index.ts, VitePress), from a copy of docs/ in a
 * temporary directory; every internal link and anchor of the built HTML resolved; then opened in
 * Debian's chromium (playwright-core, never a downloaded browser): the home page, the navigation,
 * the sidebar, the local search and the machines' diagrams, with no console error and no request
 * that fails. Nothing is fetched from the network. Screenshots go to test-results/docs/.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { chromiumPath } from '../studio/kit.js';
import { ROOT } from './markdown.js';
import { buildSite, serveStatic, type BuiltSite } from './site.js';

const SHOTS = join(ROOT, 'test-results', 'docs');

let site: BuiltSite;
let server: Awaited<ReturnType<typeof serveStatic>>;
let browser: Browser;
let page: Page | null = null;
let problems: string[] = [];

beforeAll(async () => {
  // generation (TypeDoc) and the build: 10-20 s on 2 cores, several times that beside the suite
  site = await buildSite(join(tempDir('a2a-docs-site-'), 'site'));
  process.stdout.write(`docs site: generated in ${(site.ms.generate / 1000).toFixed(1)} s, built in ${(site.ms.build / 1000).toFixed(1)} s\n`);
  server = await serveStatic(site.dist);
  mkdirSync(SHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

afterEach(async () => {
  await page?.close().catch(() => undefined);
  page = null;
});

/** A new page that records every console error, uncaught error and failed request. */
async function open(path: string): Promise<Page> {
  problems = [];
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(8_000);
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} (${r.failure()?.errorText ?? ''})`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
  });
  await page.goto(`${server.url}${path}`);
  return page;
}

/** A page's title, without the header anchor VitePress puts in it. */
const heading = async (p: Page) => (await p.locator('.vp-doc h1').first().innerText()).replace(/\u200b/g, '').trim();

function htmlFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.html'))
    .map((f) => join(dir, f));
}

describe('the documentation site', () => {
  it('should build every page: guides, how-tos, references and the API from index.ts', () => {
    const pages = htmlFiles(site.dist).map((f) => relative(site.dist, f));
    for (const expected of ['index.html', 'guide/first-run.html', 'guide/durability.html', 'how-to/cluster.html', 'how-to/security.html', 'reference/cli.html', 'reference/configuration.html', 'reference/events.html', 'reference/tools.html', 'reference/errors.html', 'reference/machines.html', 'reference/api/index.html', 'reference/api/functions/startRun.html', 'reference/api/classes/A2AError.html']) {
      expect(pages, site.log).toContain(expected);
    }
    expect(readFileSync(join(site.dist, 'a2a.config.schema.json'), 'utf8')).toContain('"maxDepth"');
  });

  it('should resolve every internal link and anchor of the built pages', () => {
    const files = htmlFiles(site.dist);
    const ids = new Map<string, Set<string>>();
    const idsOf = (file: string) => {
      let found = ids.get(file);
      if (!found) ids.set(file, (found = new Set([...readFileSync(file, 'utf8').matchAll(/\sid="([^"]+)"/g)].map((m) => decodeURIComponent(m[1]!)))));
      return found;
    };
    const broken: string[] = [];
    let checked = 0;
    for (const file of files) {
      const html = readFileSync(file, 'utf8');
      for (const m of html.matchAll(/<(?:a|link)\s[^>]*href="([^"]+)"|<(?:img|script)\s[^>]*src="([^"]+)"/g)) {
        const target = (m[1] ?? m[2]!).replace(/&amp;/g, '&');
        if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
        checked++;
        const [path = '', anchor] = target.split('#') as [string, string | undefined];
        let resolved = path === '' ? file : path.startsWith('/') ? join(site.dist, path) : resolve(dirname(file), path);
        if (path.endsWith('/')) resolved = join(resolved, 'index.html');
        const candidates = [resolved, `${resolved}.html`];
        const found = candidates.find((c) => {
          try {
            return readFileSync(c) && true;
          } catch {
            return false;
          }
        });
        const where = `${relative(site.dist, file)}: ${target}`;
        if (!found) broken.push(`${where}: no such file`);
        else if (anchor && found.endsWith('.html') && !idsOf(found).has(decodeURIComponent(anchor))) broken.push(`${where}: no element #${anchor}`);
      }
    }
    expect(broken).toEqual([]);
    expect(checked).toBeGreaterThan(1_000);
  });

  it('should open the home page and follow the navigation and the sidebar, with no console error', async () => {
    const p = await open('/');
    await expect(p.locator('.VPHero .name').innerText()).resolves.toBe('a2a');
    await p.screenshot({ path: join(SHOTS, 'home.png') });
    await p.locator('.VPNavBarMenuLink', { hasText: 'Guide' }).click();
    await p.waitForURL(/\/guide\/first-run/);
    await expect.poll(() => heading(p)).toBe('First run');
    await p.locator('.VPSidebar a', { hasText: 'Durability' }).first().click();
    await p.waitForURL(/\/guide\/durability/);
    await expect.poll(() => heading(p)).toBe('Durability');
    await p.locator('.VPNavBarMenuLink', { hasText: 'Reference' }).click();
    await p.waitForURL(/\/reference\/cli/);
    await expect.poll(() => heading(p)).toBe('The a2a command');
    // an anchor of a generated page, followed from the table at its top
    await p.locator('.vp-doc table a', { hasText: 'a2a config validate' }).click();
    await p.waitForURL(/#a2a-config-validate$/);
    // the API reference (TypeDoc's pages), from the guide that links it
    await p.locator('.VPSidebar a', { hasText: 'Use it from code' }).first().click();
    await p.waitForURL(/\/guide\/library/);
    await p.locator('.vp-doc a', { hasText: 'the API reference' }).click();
    await p.waitForURL(/\/reference\/api\//);
    await p.locator('.vp-doc a', { hasText: 'startRun' }).first().waitFor();
    expect(problems).toEqual([]);
  });

  it('should find a page with the local search', async () => {
    const p = await open('/guide/first-run.html');
    await p.locator('.VPNavBarSearch button').click();
    const input = p.locator('.VPLocalSearchBox input');
    await input.fill('idempotency key');
    const results = p.locator('.VPLocalSearchBox .result');
    await results.first().waitFor();
    await expect.poll(() => results.first().innerText()).toMatch(/idempotency/i);
    await p.screenshot({ path: join(SHOTS, 'search.png') });
    await input.press('Enter');
    await p.waitForURL(/idempotency/);
    await expect(p.locator('.vp-doc h1').first().isVisible()).resolves.toBe(true);
    expect(problems).toEqual([]);
  });

  it('should draw every machine\'s diagram from its chart', async () => {
    const p = await open('/reference/machines.html');
    const diagrams = p.locator('.a2a-diagram svg');
    // Mermaid draws the seven in the page one after another: a second or two, several times that
    // on a loaded machine (8 s was passed once beside the rest of the suite); the poll ends as soon
    // as all seven are there
    await expect.poll(() => diagrams.count(), { timeout: 25_000 }).toBe(7);
    await expect(p.locator('.a2a-diagram').first().getAttribute('data-source')).resolves.toMatch(/^stateDiagram-v2\n/);
    await p.screenshot({ path: join(SHOTS, 'machines.png') });
    expect(problems).toEqual([]);
  });
});
