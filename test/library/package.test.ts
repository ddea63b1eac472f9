/**
 * The package as a user gets it: built from these sources, packed with `npm pack` (so the `files`
 * list, `exports` and the declarations are what is tested), installed from the tarball into an
 * empty project, and every program of the docs (the README's and docs/**: `<!-- example: name.ts
 * -->` blocks, test/docs/markdown.ts) type-checked with `tsc --strict` (the package's
 * declarations included: skipLibCheck off) and run with node.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { buildSync } from 'esbuild';
import { PAGE_BUILD } from '../studio/kit.js';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { docExamples } from '../docs/markdown.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { startReceiver } from '../otel/receiver.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');

const examples = docExamples();

/**
 * The input types as a user writes against them (type-checked with the examples, never run): a
 * script, a plan and settings as the docs write them (defaults left out) compile, a misspelt key
 * or a value of the wrong kind does not (each `@ts-expect-error` fails the check when its line
 * compiles), and the tree's statuses are unions.
 */
const INPUTS = {
  name: 'inputs.ts',
  code: `import { scriptedModel, startRun, type PlanInput, type RunTree, type ScriptInput, type Settings } from 'a2a';

const script: ScriptInput = { rules: [{ prompt: 'hello', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'hi' } }] }] }] };
const plan: PlanInput = { tasks: [{ id: 'greet', prompt: 'say hi' }, { id: 'after', prompt: 'then this' }] };
const settings: Settings = { git: { onComplete: 'keep' }, limits: { maxDepth: 2 } };

export async function asDocumented(): Promise<RunTree['status']> {
  const run = await startRun({ plan, settings, model: scriptedModel(script), store: 'memory' });
  await run.done;
  const node = run.tree().roots[0];
  if (node) {
    const ended: 'success' | 'partial' | 'failed' | 'timeout' | 'cancelled' | 'other' = node.status === 'success' || node.status === 'failed' ? node.status : 'other';
    void ended;
  }
  const status: 'starting' | 'running' | 'completed' | 'failed' | 'cancelled' = run.tree().status;
  return status;
}

export function misspelt(): void {
  // @ts-expect-error: "rulez" is no field of a script
  scriptedModel({ rulez: [] });
  // @ts-expect-error: a plan is an object with tasks
  void startRun({ plan: 42 });
  // @ts-expect-error: "limitz" is no setting
  void startRun({ task: 'x', settings: { limitz: {} } });
  // @ts-expect-error: a task needs its prompt
  const noPrompt: PlanInput = { tasks: [{ id: 'greet' }] };
  void noPrompt;
  // @ts-expect-error: onComplete is one of merge, pr, review, keep
  const wrongValue: Settings = { git: { onComplete: 'push' } };
  void wrongValue;
  // @ts-expect-error: a node's status is a session state or a result status
  const unknownStatus: RunTree['roots'][number]['status'] = 'sleeping';
  void unknownStatus;
}
`,
};
let project = '';
let nats: NatsServer | null = null;
let tscOutput = '';
let tarballFiles: string[] = [];

/** True when dist/ holds a build with declarations that is newer than every source file it is built from. */
function builtIsFresh(): boolean {
  const built = join(ROOT, 'dist', 'index.d.ts');
  if (!existsSync(built) || !existsSync(join(ROOT, 'dist', 'index.js'))) return false;
  const builtAt = statSync(built).mtimeMs;
  const newest = (dir: string): number =>
    readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return Math.max(max, newest(path));
      return entry.name.endsWith('.ts') || entry.name === 'tsconfig.json' || entry.name === 'tsconfig.build.json' ? Math.max(max, statSync(path).mtimeMs) : max;
    }, 0);
  const sources = Math.max(statSync(join(ROOT, 'index.ts')).mtimeMs, statSync(join(ROOT, 'tsconfig.build.json')).mtimeMs, ...['machines', 'actors', 'adapters', 'bin'].map((d) => newest(join(ROOT, d))));
  return sources < builtAt;
}

function npm(args: string[], cwd: string): string {
  const result = spawnSync('npm', args, { cwd, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' } });
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

beforeAll(async () => {
  const work = tempDir('a2a-pack-');
  // built into a staging copy, never into dist/: other tests may be running the CLI from there
  const stage = join(work, 'stage');
  mkdirSync(stage);
  // the build `npm ci` made (its prepare script), when no source is newer; else a fresh one, made
  // here (a full type-checking build takes two cores for ~10 s: not paid on CI)
  if (builtIsFresh()) cpSync(join(ROOT, 'dist'), join(stage, 'dist'), { recursive: true });
  else {
    execFileSync(process.execPath, [TSC, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(stage, 'dist')], { cwd: ROOT, stdio: 'pipe' });
    // the studio's page, as `npm run build` bundles it
    buildSync({ entryPoints: [join(ROOT, 'adapters/studio/page/main.ts')], bundle: true, ...PAGE_BUILD, minify: true, outfile: join(stage, 'dist/adapters/studio/page.js'), logLevel: 'error' });
  }
  for (const entry of ['package.json', 'README.md']) cpSync(join(ROOT, entry), join(stage, entry));
  cpSync(join(ROOT, 'actors', 'agents'), join(stage, 'actors', 'agents'), { recursive: true });
  const packed = JSON.parse(npm(['pack', '--ignore-scripts', '--json', '--pack-destination', work], stage)) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarballFiles = packed[0]!.files.map((f) => f.path);
  project = join(work, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'uses-a2a', version: '1.0.0', private: true, type: 'module' }));
  const typesNode = (JSON.parse(readFileSync(join(ROOT, 'node_modules', '@types', 'node', 'package.json'), 'utf8')) as { version: string }).version;
  // from the npm cache `npm ci` filled: the same versions the lock file holds; --engine-strict:
  // every dependency a user installs with the package must declare this Node (package.json's
  // engines says which the package runs on)
  npm(['install', join(work, packed[0]!.filename), `@types/node@${typesNode}`, '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--engine-strict'], project);
  for (const { name, code } of examples) writeFileSync(join(project, name), code);
  writeFileSync(join(project, INPUTS.name), INPUTS.code);
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: false, types: ['node'], outDir: 'out' },
      files: [...examples.map((e) => e.name), INPUTS.name],
    }),
  );
  const tsc = spawnSync(process.execPath, [TSC, '-p', project], { cwd: project, encoding: 'utf8' });
  tscOutput = `${tsc.stdout}${tsc.stderr}`.trim();
  nats = await startNatsServer();
  // 25-50 s on 2 cores beside the suite; a build of stale sources (never on a fresh checkout,
  // whose npm ci built dist/) and a loaded machine can take four times that
}, 240_000);

afterAll(async () => {
  await nats?.stop();
});

function runExample(name: string): string {
  const result = spawnSync(process.execPath, [join(project, 'out', name.replace(/\.ts$/, '.js'))], {
    cwd: project,
    encoding: 'utf8',
    timeout: 9_000,
    env: { ...process.env, NATS_URL: nats!.url },
  });
  if (result.status !== 0) throw new Error(`${name} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

describe('the packed package', () => {
  it('holds the entry point, its declarations and the built-in agents, and no sources or tests', () => {
    expect(tarballFiles).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/bin/a2a.js', 'dist/adapters/studio/page.js', 'actors/agents/coder.agent.md', 'package.json', 'README.md']));
    expect(tarballFiles.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
    expect(tarballFiles.filter((f) => f.startsWith('dist/test/') || f.startsWith('test/'))).toEqual([]);
  });

  it('type-checks every example of the docs with tsc --strict, the package declarations included; the input types refuse misspelt keys', () => {
    expect(examples.map((e) => e.name)).toEqual(['first-program.ts', 'run-task.ts', 'human.ts', 'own-model.ts', 'hosts.ts']);
    expect(tscOutput).toBe('');
  });

  it('runs the README\'s program and prints what the README shows', () => {
    const documented = examples.filter((e) => e.output !== null);
    expect(documented.map((e) => e.name)).toEqual(['first-program.ts']);
    for (const { name, output } of documented) {
      const printed = runExample(name).trim().split('\n').sort();
      expect(printed, name).toEqual(output!.trim().split('\n').sort());
    }
  });

  it('exports exactly the documented names', async () => {
    const script = "import('a2a').then((m) => console.log(JSON.stringify(Object.keys(m).sort())))";
    const keys = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' })) as string[];
    expect(keys).toEqual(['A2AError', 'anthropicModel', 'defineAgent', 'defineTool', 'isA2AError', 'openaiModel', 'scriptedModel', 'startHost', 'startRun', 'traceIdOf', 'z']);
    // deep imports are closed: only the entry point is public
    const deep = spawnSync(process.execPath, ['--input-type=module', '-e', "import('a2a/dist/actors/run.js')"], { cwd: project, encoding: 'utf8' });
    expect(deep.stderr).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  it('runs run-task.ts: a tool and an agent defined in code, the events watched, the tree read', () => {
    const out = runExample('run-task.ts');
    expect(out).toContain('w-task called weather');
    expect(out).toContain('completed Sunny in Paris. 2 model calls');
    expect(out).toContain('w-task @forecaster success');
    expect(readdirSync(project)).not.toContain('.a2a'); // the memory store writes nothing
  });

  it('runs human.ts: the permission reaches the program, which approves it', () => {
    const out = runExample('human.ts');
    expect(out).toContain('permission: command_execution: deploy api to production');
    expect(out).toContain('completed api is live');
  });

  it('runs own-model.ts: a Model written by the program', () => {
    expect(runExample('own-model.ts')).toContain('completed echo: Say hello');
  });

  it('runs hosts.ts: a host in the same process serves the run over a real nats-server', () => {
    expect(runExample('hosts.ts')).toContain('completed summarised on a host');
  });

  it('exports a run\'s spans from the installed package (its export thread finds the exporter there)', async () => {
    const rx = await startReceiver();
    try {
      const script = "import { startRun, traceIdOf } from 'a2a'; const run = await startRun({ task: 'Say hello.', store: 'memory', notify: () => {} }); await run.done; console.log(traceIdOf(run.id));";
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: project, env: { ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: rx.url } });
      let out = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((r) => child.on('exit', r));
      expect(code, out).toBe(0);
      const traceId = out.trim().split('\n').at(-1)!;
      expect(rx.spans.filter((s) => s.traceId === traceId).map((s) => s.name), `${out}\n${rx.spans.length} spans`).toEqual(expect.arrayContaining(['invoke_agent orchestrator', 'task task', 'chat scripted']));
    } finally {
      await rx.close();
    }
  });

  it('serves the studio from the installed package: the page and its script, behind the token', async () => {
    const child = spawn(process.execPath, [join(project, 'node_modules', 'a2a', 'dist', 'bin', 'a2a.js'), 'studio', '--port', '0'], { cwd: project, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /open (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]+)/.exec(out);
          if (m) resolve(m[1]!);
        });
        child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
        child.on('exit', (code) => reject(new Error(`a2a studio exited ${code}: ${out}`)));
      });
      // the URL's token is exchanged for the page's cookie, which the page and its script are read with
      const opened = await fetch(url, { redirect: 'manual' });
      expect(opened.status).toBe(303);
      const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]!;
      const base = url.replace(/\?token=.*/, '');
      const page = await fetch(base, { headers: { cookie } });
      expect(page.status).toBe(200);
      const script = await fetch(`${base}page.js`, { headers: { cookie } });
      expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
      expect((await script.text()).length).toBeGreaterThan(10_000);
      expect((await fetch(url.replace(/\?token=.*/, 'api/runs'))).status).toBe(401);
    } finally {
      child.kill('SIGTERM');
    }
  });
});
