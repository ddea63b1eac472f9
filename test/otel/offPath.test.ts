/**
 * Tracing off costs nothing because nothing of it is loaded: `a2a run` and `startRun` without
 * `--otel` or OTEL_* variables, each in a process of its own from the sources (tsx: a module is a
 * file), with a loader hook that writes down every module loaded (ESM's load hook, and
 * CommonJS's cache at exit). No `@opentelemetry/*` package, none of adapters/otel/ but the
 * settings it is decided by (options.ts, which reads the flags and the variables and loads
 * nothing), and not the span builder (actors/observation/spans.ts). The same run with spans
 * exported loads them all: the check sees what it looks for.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { startReceiver, type Receiver } from './receiver.js';

/** Registered by `--import` before anything else: every module loaded is a line of $LOADED_LIST. */
const RECORDER = `
import { register, createRequire } from 'node:module';
import { appendFileSync } from 'node:fs';
const file = process.env.LOADED_LIST;
const hooks = "import { appendFileSync } from 'node:fs'; let file; export function initialize(d) { file = d.file; } export async function load(url, context, next) { appendFileSync(file, url + '\\\\n'); return next(url, context); }";
register('data:text/javascript,' + encodeURIComponent(hooks), { data: { file } });
const cache = createRequire(process.cwd() + '/').cache;
process.on('exit', () => appendFileSync(file, Object.keys(cache).map((p) => 'file://' + p + '\\n').join('')));
`;

const root = resolve('.');

/** Runs node with the recorder in a fresh workspace; the modules it loaded (URLs) and its output. */
async function loaded(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ modules: string[]; code: number; out: string }> {
  const ws = tempDir('a2a-offpath-');
  const list = join(ws, 'loaded.txt');
  // no OTEL_* variable of the test's own environment may turn tracing on
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OTEL_')));
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', `data:text/javascript,${encodeURIComponent(RECORDER)}`, ...args], {
    cwd: root,
    env: { ...clean, ...env, LOADED_LIST: list, A2A_WS: ws },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number>((r) => child.on('exit', (c) => r(c ?? -1)));
  if (!existsSync(list)) throw new Error(`node ${args.join(' ')} recorded no module (exit ${code}): ${out}`);
  return { modules: readFileSync(list, 'utf8').split('\n').filter(Boolean), code, out };
}

/** What tracing is made of, of the modules in a list: what must not be loaded while it is off. */
function tracingModules(modules: string[]): string[] {
  const ours = (path: string) => `file://${root}/${path}`;
  const out = new Set<string>();
  for (const url of modules) {
    if (url.includes('/node_modules/@opentelemetry/')) out.add(url.replace(/^.*\/node_modules\/(@opentelemetry\/[^/]+)\/.*$/, '$1'));
    else if (url.startsWith(ours('adapters/otel/')) && url !== ours('adapters/otel/options.ts')) out.add(url.slice(ours('').length));
    else if (url === ours('actors/observation/spans.ts')) out.add('actors/observation/spans.ts');
  }
  return [...out].sort();
}

const LIBRARY_RUN = (otel: string) => `
const { startRun } = await import(${JSON.stringify(`file://${root}/index.ts`)});
const run = await startRun({ task: 'Say hello.', workspace: process.env.A2A_WS, store: 'memory', notify: () => {}, ${otel} });
const { status } = await run.done;
console.log('status', status);
process.exit(status === 'completed' ? 0 : 1);
`;

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rx.close();
});

describe('tracing off', () => {
  it('startRun loads no OpenTelemetry package, no exporter and no span builder; with spans exported it loads them', async () => {
    const [off, on] = await Promise.all([
      loaded(['--input-type=module', '-e', LIBRARY_RUN('')]),
      loaded(['--input-type=module', '-e', LIBRARY_RUN(`otel: ${JSON.stringify(rx.url)}`)]),
    ]);
    expect(off.code, off.out).toBe(0);
    expect(on.code, on.out).toBe(0);
    // the recorder saw the run's modules (the check can see a module)
    expect(off.modules.some((u) => u.endsWith('/actors/observation/tracing.ts'))).toBe(true);
    expect(tracingModules(off.modules)).toEqual([]);
    expect(tracingModules(on.modules)).toEqual(expect.arrayContaining(['@opentelemetry/api', '@opentelemetry/sdk-trace', 'actors/observation/spans.ts', 'adapters/otel/offThread.ts', 'adapters/otel/recordSpans.ts', 'adapters/otel/sdk.ts']));
  }, 20_000);

  it('a2a run loads none of it either', async () => {
    const off = await loaded(['bin/a2a.ts', 'run', 'Say hello.', '--no-tree', '--workspace', tempDir('a2a-offpath-cli-')]);
    expect(off.code, off.out).toBe(0);
    expect(off.modules.some((u) => u.endsWith('/bin/cli.ts'))).toBe(true);
    expect(tracingModules(off.modules)).toEqual([]);
  }, 20_000);
});
