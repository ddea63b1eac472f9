/**
 * Test harness: the real runtime (machines, supervisor, agent loop, tools, registry) with the
 * scripted model on xstate's SimulatedClock, collecting every run event.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync, type BuildOptions } from 'esbuild';
import { SimulatedClock } from 'xstate';
import { RunConfig, type ConfigLayer } from '../actors/config/config.js';
import { RunEventBus } from '../actors/observation/events.js';
import { orchestratorInput, standaloneSpec, startRun, startStandalone } from '../actors/run.js';
import { createRuntime } from '../actors/runtime.js';
import { ToolCatalog } from '../actors/tools/index.js';
import { loadRegistry } from '../adapters/config.js';
import { parseScript, ScriptedModel } from '../adapters/model/scripted.js';
import type { Plan, RunEvent } from '../machines/protocol/index.js';
import type { Transport } from '../machines/ports.js';
import { CostLedger, type Budgets } from '../actors/observation/cost.js';
import type { ModelResolver } from '../actors/session/agentLoop.js';
import { bubblewrapRunner } from '../adapters/sandbox/index.js';
import type { CommandRunner } from '../machines/ports.js';

const bundles = new Map<string, string>();

/**
 * `entry` (a path from the package root) bundled with esbuild once per test process, into
 * node_modules/.cache/a2a-test/<name>-<pid>/ (under the package root, so that packages resolve as
 * from the sources), removed when the process exits (and by test/globalSetup.ts when a killed
 * process could not). Returns the entry's file, `<name>.<extension>`. With `splitting`, what the
 * sources import lazily (`await import(...)`) stays in chunks loaded on demand, as in dist/: a
 * single file would hoist every SDK's import to its top, and each process started from it would
 * load them all (0.8 s).
 */
export function bundleOnce(name: string, entry: string, options: BuildOptions, extension = 'js'): string {
  const known = bundles.get(name);
  if (known) return known;
  const root = join(dirname(fileURLToPath(import.meta.url)), '..');
  const dir = join(root, 'node_modules', '.cache', 'a2a-test', `${name}-${process.pid}`);
  const building = `${dir}.tmp`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  buildSync({ entryPoints: { [name]: join(root, entry) }, bundle: true, logLevel: 'error', ...options, outdir: building, outExtension: { '.js': `.${extension}` } });
  rmSync(dir, { recursive: true, force: true });
  renameSync(building, dir);
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, `${name}.${extension}`);
  bundles.set(name, out);
  return out;
}

export function tempDir(prefix = 'a2a-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Lets promise continuations run (model replies, tool results). */
export async function flush(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await new Promise<void>((r) => setImmediate(r));
}

export function harness(options: {
  script: unknown;
  config?: ConfigLayer;
  workspace?: string;
  /** Tools do real I/O (files, commands): let real time pass between simulated steps. */
  io?: boolean;
  /** Prices (USD per million tokens, by model name: the scripted model is `scripted`) and budgets. */
  costs?: { prices: Record<string, { inputPerMTok: number; outputPerMTok: number }>; budgets: Budgets };
  /** Model resolution by session (profiles); default: the scripted model for everyone. */
  resolve?: (model: ScriptedModel) => ModelResolver;
  /** What runs run_command's commands: the bubblewrap sandbox, as in a real run, unless given. */
  commands?: CommandRunner;
}) {
  const clock = new SimulatedClock();
  const workspace = options.workspace ?? tempDir();
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const model = new ScriptedModel(parseScript(options.script, 'test script'), clock);
  const bus = new RunEventBus('test-run', clock);
  const events: RunEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const ledger = new CostLedger(options.costs?.prices);
  const runtime = createRuntime({
    registry,
    clock,
    events: bus,
    model: options.resolve ? options.resolve(model) : model,
    orchestratorModel: model,
    catalog,
    commands: options.commands ?? bubblewrapRunner(),
    ...(options.costs ? { costs: { ledger, budgets: options.costs.budgets } } : {}),
  });
  const config = RunConfig.parse(options.config ?? {});

  /** Advances simulated time in steps, letting async work run in between. */
  async function advance(ms: number, step = 10): Promise<void> {
    await flush();
    for (let t = 0; t < ms; t += step) {
      clock.increment(Math.min(step, ms - t));
      await flush();
    }
  }

  /** Advances until `done()` holds, or fails after `maxMs` of simulated time. */
  async function until(done: () => boolean, maxMs = 600_000, step = 50): Promise<void> {
    await flush();
    for (let t = 0; !done(); t += step) {
      if (t > maxMs) throw new Error(`condition not reached within ${maxMs} ms of simulated time`);
      clock.increment(step);
      await flush();
      if (options.io) await new Promise((r) => setTimeout(r, 1));
    }
  }

  function run(plan: Plan | { id?: string; tasks: Array<{ id: string; prompt: string; agent?: string; dependsOn?: string[] }> }) {
    const input = orchestratorInput(
      { id: 'plan', ...plan, tasks: plan.tasks.map((t) => ({ dependsOn: [], ...t })) } as Plan,
      runtime,
      { runId: 'test-run', config, workspace },
    );
    const handle = startRun(runtime, input, { clock });
    let summary: Awaited<typeof handle.done> | null = null;
    void handle.done.then((s) => (summary = s));
    return { ...handle, summary: () => summary };
  }

  function standalone(prompt: string, agent = '@agent') {
    const spec = standaloneSpec(prompt, runtime, { runId: 'test-run', config, workspace, agent });
    const handle = startStandalone(runtime, spec, { clock });
    let result: Awaited<typeof handle.done> | null = null;
    void handle.done.then((r) => (result = r));
    return { ...handle, spec, result: () => result };
  }

  const of = (type: RunEvent['type'], subTaskId?: string) =>
    events.filter((e) => e.type === type && (subTaskId === undefined || e.subTaskId === subTaskId));

  return { clock, workspace, registry, model, events, runtime, config, advance, until, run, standalone, of, ledger };
}

export type Harness = ReturnType<typeof harness>;

// ---------------------------------------------------------------------------------------------
// Script fragments shared by the tests

/** A turn that completes the session with `output`. */
export const complete = (output: string, delayMs?: number) => ({
  ...(delayMs ? { delayMs } : {}),
  toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output } }],
});

/** A turn that spawns the given children in parallel. */
export const spawnParallel = (children: Array<{ agentType?: string; prompt: string }>, extra: object = {}) => ({
  ...extra,
  toolCalls: [
    {
      name: 'a2a_spawn_parallel_subtasks',
      arguments: { subtasks: children.map((c) => ({ agentType: c.agentType ?? '@agent', prompt: c.prompt, expectedOutput: 'x' })) },
    },
  ],
});

/** An io for `main([...])` that keeps what it writes (a terminal with `tty`); `stop()` resolves its `until`. */
export function capture(tty = false) {
  let out = '';
  let err = '';
  let stop: () => void = () => {};
  const until = new Promise<void>((r) => (stop = r));
  const terminal = tty ? { isTTY: true, columns: 140 } : {};
  return {
    io: { stdout: { write: (s: string) => ((out += s), true), ...terminal }, stderr: { write: (s: string) => ((err += s), true) }, until } as never,
    out: () => out,
    err: () => err,
    stop: () => stop(),
  };
}

/**
 * A transport that is `base` with some methods replaced (a fault, a counter): every other method
 * is `base`'s own, called on it (the in-process transport keeps private state).
 */
export function transportWith<T extends object>(base: Transport, overrides: Partial<Transport> & T): Transport & T {
  const forwarded = {} as Record<string, unknown>;
  for (const name of ['publish', 'subscribe', 'request', 'respond', 'ensureQueue', 'enqueue', 'consume', 'keyValue', 'readKeyValue', 'close'] as const) {
    forwarded[name] = (...args: unknown[]) => (base[name] as (...a: unknown[]) => unknown).apply(base, args);
  }
  return { ...(forwarded as unknown as Transport), kind: base.kind, ...overrides };
}

