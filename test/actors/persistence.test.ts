import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { RunConfig } from '../../actors/config.js';
import { RunEventBus } from '../../actors/events.js';
import { orchestratorInput, startRun } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { createRootActor } from '../../actors/scheduler.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { loadRegistry } from '../../adapters/config.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { RunEvent } from '../../machines/protocol.js';
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

function world() {
  const clock = new SimulatedClock();
  const catalog = new ToolCatalog();
  const workspace = tempDir();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const events: RunEvent[] = [];
  const bus = new RunEventBus('persist', clock);
  bus.subscribe((e) => events.push(e));
  const model = new ScriptedModel(script, clock);
  const runtime = createRuntime({ registry, clock, events: bus, model, catalog });
  return { clock, runtime, events, model, workspace };
}

describe('persistence', () => {
  it('should restore a running tree from its persisted snapshot and finish it with every result', async () => {
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
    // the fast child is done, the slow one is mid model call
    expect(a.events.filter((e) => e.type === 'subtask.result').map((e) => e.subTaskId)).toEqual(['st-1']);
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
      ['st-2', 'slow done'],
      ['w-design', 'combined'],
    ]);
    expect(b.model.calls.map((c) => c.sessionId)).toEqual(['st-2', 'w-design']);
    // new ids continue after the restored ones
    expect(b.runtime.ids.next('st')).toBe('st-3');
  });
});
