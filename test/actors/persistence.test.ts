import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { RunConfig } from '../../actors/config/config.js';
import { busStartOf, RunEventBus, type BusStart } from '../../actors/observation/events.js';
import { orchestratorInput, startRun } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { createRootActor } from '../../actors/scheduler.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { loadRegistry } from '../../adapters/config.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { flush, tempDir } from '../helpers.js';

const script = parseScript(
  {
    rules: [
      {
        agent: 'architect',
        depth: 0,
        turns: [
          {
            toolCalls: [
              {
                name: 'a2a_spawn_parallel_subtasks',
                arguments: { subtasks: ['fast', 'slow'].map((p) => ({ agentType: '@coder', prompt: p, expectedOutput: 'x' })) },
              },
            ],
          },
          { text: 'waiting' },
        ],
        reactions: [
          { when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'combined' } }] } },
          { when: 'still running', turn: { text: 'got one' } },
        ],
      },
      { agent: 'coder', prompt: 'fast', turns: [{ delayMs: 100, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'fast done' } }] }] },
      { agent: 'coder', prompt: 'slow', turns: [{ delayMs: 5000, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'slow done' } }] }] },
    ],
  },
  'test',
);

function world(start?: BusStart) {
  const clock = new SimulatedClock();
  const catalog = new ToolCatalog();
  const workspace = tempDir();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const events: RunEvent[] = [];
  const bus = new RunEventBus('persist', clock, start);
  bus.subscribe((e) => events.push(e));
  const model = new ScriptedModel(script, clock);
  const runtime = createRuntime({ registry, clock, events: bus, model, catalog });
  return { clock, runtime, events, model, workspace };
}

/** A run of the plan until its fast child is done and its slow one is mid model call. */
async function untilFastChildDone() {
  const a = world();
  const input = orchestratorInput(
    { id: 'p', tasks: [{ id: 'design', agent: '@architect', prompt: 'design', dependsOn: [] }] },
    a.runtime,
    { runId: 'persist', config: RunConfig.parse({}), workspace: a.workspace },
  );
  const run = startRun(a.runtime, input, { clock: a.clock });
  for (let i = 0; i < 20; i++) {
    a.clock.increment(10);
    await flush();
  }
  return { a, run };
}

describe('persistence', () => {
  it('should restore a running tree from its persisted snapshot and finish it with every result', async () => {
    const { a, run } = await untilFastChildDone();
    // the fast child is done, the slow one is mid model call
    expect(a.events.filter((e) => e.type === 'subtask.result').map((e) => e.subTaskId)).toEqual(['w-design.1']);
    const persisted = JSON.parse(JSON.stringify(run.actor.getPersistedSnapshot()));
    run.actor.stop();

    const b = world();
    const restored = createRootActor(b.runtime.orchestrator, { snapshot: persisted, clock: b.clock, id: 'orchestrator' });
    let summary: RunSummary | null = null;
    restored.subscribe((s) => {
      if (s.status === 'done') summary = s.output as RunSummary;
    });
    restored.start();
    for (let i = 0; i < 200 && !summary; i++) {
      b.clock.increment(50);
      await flush();
    }
    expect(summary).toMatchObject({ status: 'completed', tasks: [{ id: 'design', result: { output: 'combined' } }] });
    // only the slow child finished after the restore; the fast one was not run again
    expect(b.events.filter((e) => e.type === 'subtask.result').map((e) => [e.subTaskId, e.data.output])).toEqual([
      ['w-design.2', 'slow done'],
      ['w-design', 'combined'],
    ]);
    expect(b.model.calls.map((c) => c.sessionId)).toEqual(['w-design.2', 'w-design']);
    // new ids continue after the restored ones
    expect(b.runtime.ids.child({ id: 'w-design', correlation: { runId: 'persist' } as never })).toBe('w-design.3');
  });

  it('should drop what a restored run emits again: one result per session in the log, one sequence across lives', async () => {
    const { a, run } = await untilFastChildDone();
    // the checkpoint holds the fast child's result only; then the slow one finishes and its
    // result is logged, and the process dies before the next checkpoint
    const persisted = JSON.parse(JSON.stringify(run.actor.getPersistedSnapshot()));
    for (let i = 0; i < 120; i++) {
      a.clock.increment(50);
      await flush();
    }
    expect(a.events.filter((e) => e.type === 'subtask.result').map((e) => e.subTaskId)).toEqual(['w-design.1', 'w-design.2', 'w-design']);
    run.actor.stop();
    const logged = a.events.filter((e) => e.subTaskId !== 'w-design' || e.type !== 'subtask.result');

    // the resumed life starts from the log: its sequence, and the facts it holds
    const b = world(busStartOf(logged));
    const restored = createRootActor(b.runtime.orchestrator, { snapshot: persisted, clock: b.clock, id: 'orchestrator' });
    let done = false;
    restored.subscribe((s) => {
      if (s.status === 'done') done = true;
    });
    restored.start();
    for (let i = 0; i < 200 && !done; i++) {
      b.clock.increment(50);
      await flush();
    }
    expect(done).toBe(true);
    // the slow child ran again after the restore, and settled again: that result was dropped
    expect(b.model.calls.map((c) => c.sessionId)).toEqual(['w-design.2', 'w-design']);
    const log = [...logged, ...b.events];
    for (const id of ['w-design.1', 'w-design.2', 'w-design']) {
      expect(log.filter((e) => e.type === 'subtask.result' && e.subTaskId === id), id).toHaveLength(1);
      expect(log.filter((e) => e.type === 'update.queued' && e.data.from === id && e.data.updateType === 'completed'), id).toHaveLength(1);
    }
    const seqs = log.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(new Set(log.map((e) => e.id)).size).toBe(log.length);
  });
});
