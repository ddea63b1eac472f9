/**
 * Benchmark scenarios, run through the real machines with the scripted model and no event
 * listeners. Each one runs in a fresh process (see index.ts) so that peak RSS is its own.
 */
import { RunConfig } from '../../actors/config.js';
import { nullSink } from '../../actors/events.js';
import { standaloneSpec, startStandalone } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { createRootActor } from '../../actors/scheduler.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import type { Family } from '../../actors/supervisor.js';
import { loadRegistry } from '../../adapters/config.js';
import { ScriptedModel, parseScript, type Script } from '../../adapters/model/scripted.js';
import { realClock } from '../../adapters/clock.js';
import type { SessionSpec } from '../../machines/protocol.js';

const catalog = new ToolCatalog();
const registry = loadRegistry({ workspace: process.cwd(), knownTools: catalog.names() });

/** Totals and rate are raised to N (the defaults refuse a fan-out of 1k); `parallel` is the slots. */
function setup(script: Script, n: number, parallel = n) {
  const model = new ScriptedModel(script, realClock);
  model.record = false;
  const runtime = createRuntime({ registry, clock: realClock, events: nullSink, model });
  const config = RunConfig.parse({ limits: { maxParallelSubtasks: parallel, maxSubtasksPerWorker: n, spawnRatePerMinute: n } });
  const spec = standaloneSpec('fan out', runtime, { runId: 'bench', config, workspace: process.cwd(), agent: '@agent' });
  return { runtime, spec };
}

const children = (n: number, word: string) =>
  Array.from({ length: n }, (_, i) => ({ agentType: '@agent', prompt: `${word} ${i}`, expectedOutput: 'nothing' }));

/** One parent spawns N no-op sub-tasks in one call, awaits them all, completes. */
export async function fanout(n: number, parallel = n): Promise<{ wallMs: number }> {
  const { runtime, spec } = setup(
    parseScript(
      {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: children(n, 'noop') } }] },
              { toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children' } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] },
            ],
          },
          { agent: 'agent', depth: 1, turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'noop' } }] }] },
        ],
      },
      'bench',
    ),
    n,
    parallel,
  );
  const t0 = performance.now();
  const result = await startStandalone(runtime, spec, { clock: realClock }).done;
  const wallMs = performance.now() - t0;
  if (result.status !== 'success') throw new Error(`fan-out ended ${result.status}: ${result.error}`);
  return { wallMs };
}

/** N sub-tasks that answer with text and no tool call: they sit idle, each with its watchdog armed. */
export async function idle(n: number): Promise<{ heapPerIdle: number; idle: number }> {
  const { runtime, spec } = setup(
    parseScript(
      {
        rules: [
          { agent: 'agent', depth: 0, turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: children(n, 'idle') } }] }, { text: 'waiting' }] },
          { agent: 'agent', depth: 1, turns: [{ text: 'thinking about it' }] },
        ],
      },
      'bench',
    ),
    n,
  );
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  const input = children(n, 'idle');
  gc();
  const before = process.memoryUsage().heapUsed;
  const run = startStandalone(runtime, spec, { clock: realClock });
  const family = () => {
    const session = (run.root.getSnapshot() as unknown as { family: Family }).family.members.get(spec.id)?.ref;
    const sub = (session?.getSnapshot() as { children?: Record<string, { getSnapshot(): unknown }> } | undefined)?.children?.subtasks;
    return (sub?.getSnapshot() as { family?: Family } | undefined)?.family;
  };
  const countIdle = () => {
    let count = 0;
    for (const m of family()?.members.values() ?? []) {
      const value = (m.ref?.getSnapshot() as { value?: { running?: string } } | undefined)?.value;
      if (value?.running === 'idle') count++;
    }
    return count;
  };
  for (let i = 0; i < 600 && countIdle() < n; i++) await new Promise((r) => setTimeout(r, 50));
  gc();
  const after = process.memoryUsage().heapUsed;
  const idleCount = countIdle();
  void input;
  run.stop('bench done');
  return { heapPerIdle: (after - before) / n, idle: idleCount };
}

/**
 * Latency of one spawn: from SPAWN reaching a parent's supervisor to the child running (its actor
 * created, started and its first model call requested), on a warm process. Children finish
 * between spawns, as in steady operation; the measured part is synchronous.
 */
export async function spawnLatency(samples: number): Promise<{ p50: number; p99: number }> {
  const { runtime, spec } = setup(
    { rules: [{ agent: '*', prompt: '', turns: [{ text: '', toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'ok' } }] }], reactions: [] }] },
    samples + 1,
  );
  const root = createRootActor(runtime.supervisor, { input: { owner: spec, ownerId: spec.id, maxParallel: samples + 1 }, clock: realClock });
  root.start();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const child: SessionSpec = {
      ...spec,
      id: `lat-${i}`,
      role: 'subtask',
      depth: 1,
      prompt: `latency ${i}`,
      owner: { ownerType: 'agent', ownerId: spec.id },
      lineage: [{ agentName: 'agent', prompt: spec.prompt }],
    };
    const t0 = performance.now();
    root.send({ type: 'SPAWN', requestId: child.id, specs: [child] });
    times.push(performance.now() - t0);
    await new Promise((r) => setImmediate(r));
  }
  root.stop();
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}

/**
 * Inbox throughput: N messages of mixed types arrive in batches of 100 (as update batches do) at
 * the orchestrator's inbox, journaled to the file store (every arrival appended before it can be
 * handled; handled ids committed in groups, as the checkpointer does); an owner handles each one
 * as soon as it is offered. Measures messages per second from the first arrival to the last
 * HANDLED.
 */
export async function inbox(n: number): Promise<{ perSecond: number; wallMs: number }> {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { createActor } = await import('xstate');
  const { createInboxLogic } = await import('../../actors/inbox.js');
  const { FileRunStore } = await import('../../adapters/store/file.js');
  const { QUEUE_PRIORITY } = await import('../../machines/protocol.js');
  const ws = mkdtempSync(join(tmpdir(), 'a2a-bench-inbox-'));
  const store = new FileRunStore(ws);
  store.create({ runId: 'bench', pid: process.pid, status: 'running', startedAt: Date.now(), planId: 'p', source: 'bench' });
  const journal = store.inboxJournal('bench');
  const types = ['status_update', 'permission_request', 'question', 'completion', 'error', 'idle_response'] as const;
  let handled = 0;
  let inbox: { send(e: unknown): void } | null = null;
  const ownerLogic = {
    transition: (s: unknown, e: { type: string; message?: { id: string } }) => {
      if (e.type === 'INBOX_MESSAGE') {
        handled++;
        queueMicrotask(() => inbox!.send({ type: 'HANDLED', id: e.message!.id }));
        if (handled % 1000 === 0) journal.commit();
      }
      return s;
    },
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }),
    getPersistedSnapshot: (s: unknown) => s,
  };
  const owner = createActor(ownerLogic as unknown as import('xstate').AnyActorLogic);
  owner.start();
  const actor = createActor(createInboxLogic({ clock: realClock, journal }), { parent: owner } as never);
  inbox = actor as unknown as { send(e: unknown): void };
  actor.start();
  const t0 = performance.now();
  for (let b = 0; b < n / 100; b++) {
    const messages = Array.from({ length: 100 }, (_, i) => {
      const type = types[(b * 100 + i) % types.length]!;
      return { id: `m-${b}-${i}`, type, priority: QUEUE_PRIORITY[type], timestamp: 0, runId: 'bench', planId: 'p', taskId: 't', workerId: 'w', worktreePath: '.', content: { message: 'status of the work so far' } };
    });
    actor.send({ type: 'ENQUEUE', messages });
    await new Promise((r) => setImmediate(r));
  }
  while (handled < n) await new Promise((r) => setImmediate(r));
  journal.commit();
  const wallMs = performance.now() - t0;
  const lines = store.readJournal('bench').length;
  rmSync(ws, { recursive: true, force: true });
  if (lines !== 2 * n) throw new Error(`journal holds ${lines} records, expected ${2 * n}`);
  return { perSecond: (n / wallMs) * 1000, wallMs };
}
