/**
 * The documentation site as its tests use it: built once from a copy of docs/ (so that a test
 * never writes into the sources, and the generated pages of the copy are the code's of now), then
 * served from its output over loopback, as any static host would serve it.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { DOCS, ROOT } from './markdown.js';

export interface BuiltSite {
  /** The copy of docs/ it was built from. */
  docs: string;
  /** VitePress's output. */
  dist: string;
  /** What the build printed (for a failure's message). */
  log: string;
  /** How long the generation and the build took (ms). */
  ms: { generate: number; build: number };
}

function run(args: string[], cwd: string, timeoutMs: number): Promise<string> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolveRun(out);
      else reject(new Error(`${args.slice(1).join(' ')} ${signal ? `was killed (${signal}) after ${timeoutMs} ms` : `exited ${code}`}:\n${out}`));
    });
  });
}

/**
 * docs/ copied into `work` (with the project's node_modules linked beside it, where the config and
 * the theme resolve `vitepress` and `vue`), its generated pages, API reference and Mermaid bundle
 * written by test/docs/generate.ts (as `npm run docs:build` writes them), then built by VitePress.
 */
export async function buildSite(work: string, timeoutMs = 150_000): Promise<BuiltSite> {
  const docs = join(work, 'docs');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'), 'dir');
  cpSync(DOCS, docs, { recursive: true, filter: (src) => !/[\\/]\.vitepress[\\/](cache|dist)$/.test(src) && !src.endsWith(`${sep}reference${sep}api`) && !src.endsWith(`${sep}public${sep}mermaid`) });
  const tsx = join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  const vitepress = join(ROOT, 'node_modules', 'vitepress', 'bin', 'vitepress.js');
  let t = Date.now();
  let log = await run([tsx, join(ROOT, 'test', 'docs', 'generate.ts'), '--site', '--no-coverage', '--docs', docs], ROOT, timeoutMs);
  const generate = Date.now() - t;
  t = Date.now();
  log += await run([vitepress, 'build', docs], work, timeoutMs);
  return { docs, dist: join(docs, '.vitepress', 'dist'), log, ms: { generate, build: Date.now() - t } };
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** A static server of `dir` on a free loopback port: `/x` serves x, x.html or x/index.html; anything else 404. */
export async function serveStatic(dir: string): Promise<{ url: string; close(): Promise<void>; misses: string[] }> {
  const root = resolve(dir);
  const misses: string[] = [];
  const server: Server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://docs.invalid').pathname);
    const file = [path, `${path}.html`, join(path, 'index.html')].map((p) => normalize(join(root, p))).find((f) => f.startsWith(root) && existsSync(f) && statSync(f).isFile());
    if (!file) {
      misses.push(path);
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
    res.end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    misses,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
