/**
 * A recorded model reply is given back only for the input it answered: a session restored
 * elsewhere can get its messages in another order, and a reply to other input must not be
 * replayed (it would answer the wrong thing, and the session would never see what it was sent).
 */
import { describe, expect, it } from 'vitest';
import { RunConfig } from '../../actors/config/config.js';
import { RunEventBus } from '../../actors/observation/events.js';
import { MemoryEffectJournal, modelStepKey } from '../../actors/durability/effects.js';
import { standaloneSpec, startStandalone } from '../../actors/run.js';
import { createRuntime } from '../../actors/runtime.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { realClock } from '../../adapters/clock.js';
import { loadRegistry } from '../../adapters/config.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';

async function runWith(recordedInput: string | undefined): Promise<{ output: string; warnings: string[]; modelCalls: number }> {
  const workspace = tempDir();
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const events: RunEvent[] = [];
  const bus = new RunEventBus('replay', realClock);
  bus.subscribe((e) => events.push(e));
  const script = parseScript({ rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'answered now' } }] }] }] }, 'script');
  const journal = new MemoryEffectJournal();
  const runtime = createRuntime({ registry, clock: realClock, events: bus, model: new ScriptedModel(script, realClock), catalog, effects: { journal: () => journal, inDoubt: 'report' } });
  const spec = standaloneSpec('build it', runtime, { runId: 'replay', config: RunConfig.parse({}), workspace, agent: '@coder' });
  // what an earlier life recorded for the first model step
  await journal.write({
    t: 'reply',
    s: spec.id,
    k: modelStepKey(0, 1),
    agent: 'coder',
    out: {
      injected: [],
      reply: { text: '', toolCalls: [{ id: 'old-1', name: 'a2a_subtask_complete', arguments: { output: 'answered before' } }], usage: { inputTokens: 1, outputTokens: 1 } },
      consumedInbox: 0,
      consumedUpTo: null,
    },
    ...(recordedInput !== undefined ? { in: recordedInput } : {}),
  });
  const result = await startStandalone(runtime, spec, { clock: realClock }).done;
  return {
    output: result.output,
    warnings: events.filter((e) => e.type === 'warning').map((e) => String(e.data.message)),
    modelCalls: events.filter((e) => e.type === 'model.called' && !String(e.data.replyId ?? '').includes(':m0.1:')).length,
  };
}

describe('replaying a recorded model reply', () => {
  it('gives it back when it answered other input only if nothing says so (records written before the digest)', async () => {
    const { output } = await runWith(undefined);
    expect(output).toBe('answered before');
  });

  it('asks the model again when the recorded reply answered other input, with a warning naming the step', async () => {
    const { output, warnings } = await runWith('0123456789abcdef');
    expect(output).toBe('answered now');
    expect(warnings.some((w) => /recorded reply to .* model step m0\.1 answered other input/.test(w))).toBe(true);
  });
});
