/**
 * Resume from an older checkpoint: arrivals journaled after it are replayed into the restored
 * inbox, the sources' own re-sends are refused as duplicates, and every message id is handled
 * exactly once across both lives. Timers (deadlines, idle watchdogs, human timeouts) come back.
 */
import { SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import { RunConfig } from '../../actors/config/config.js';
import { RunEventBus } from '../../actors/observation/events.js';
import { takeCheckpoint, type Checkpoint } from '../../actors/durability/checkpoint.js';
import { orchestratorInput, startRun } from '../../actors/run.js';
import { pendingHumanItems, runStatus } from '../../actors/observation/runStatus.js';
import { createRuntime } from '../../actors/runtime.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { loadRegistry } from '../../adapters/config.js';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import { planResume } from '../../adapters/runHost.js';
import type { JournalRecord } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { Plan, RunEvent } from '../../machines/protocol/index.js';
import { flush, tempDir } from '../helpers.js';

const script = {
  rules: [
    {
      agent: 'coder',
      turns: [{ toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: 'Which queue?' } }] }, { text: 'waiting' }],
      reactions: [{ when: 'RabbitMQ', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'wired to RabbitMQ' } }] } }],
    },
    { agent: 'orchestrator', turns: [{ text: 'Use RabbitMQ.', delayMs: 400 }] },
  ],
};

/** One process's life: a runtime on the shared simulated clock, journaling into `journal`. */
function life(clock: SimulatedClock, workspace: string, journal: JournalRecord[], commit: { on: boolean }, config = RunConfig.parse({ limits: { maxParallelWorkers: 4 }, orchestrator: { questions: 'model' } })) {
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names() });
  const bus = new RunEventBus('r', clock);
  const events: RunEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const runtime = createRuntime({
    registry,
    clock,
    events: bus,
    model: new ScriptedModel(parseScript(script, 'script'), clock),
    catalog,
    journal: {
      accepted: (message, at) => journal.push({ t: 'accepted', at, message }),
      // handled lines only count once a checkpoint holds them (see FileRunStore.inboxJournal)
      handled: (id, at) => commit.on && journal.push({ t: 'handled', at, id }),
    },
  });
  return { runtime, events, config };
}

async function until(clock: SimulatedClock, done: () => boolean, maxMs = 120_000) {
  for (let t = 0; !done(); t += 50) {
    if (t > maxMs) throw new Error('not reached');
    clock.increment(50);
    await flush();
  }
}

describe('resume from a checkpoint', () => {
  it('replays what arrived after the checkpoint and handles every message id exactly once', async () => {
    const clock = new SimulatedClock();
    const workspace = tempDir();
    const journal: JournalRecord[] = [];
    const commit = { on: true };
    const plan: Plan = { id: 'p', tasks: ['a', 'b', 'c', 'd'].map((id) => ({ id, agent: '@coder', prompt: `part ${id}`, dependsOn: [] })) } as Plan;

    const one = life(clock, workspace, journal, commit);
    const input = orchestratorInput(plan, one.runtime, { runId: 'r', config: one.config, workspace });
    const first = startRun(one.runtime, input, { clock });
    // checkpoint when one question was answered and others wait
    await until(clock, () => runStatus(first.actor, 0).inbox.metrics.handled >= 1 && runStatus(first.actor, 0).inbox.queued.length >= 2);
    const checkpoint: Checkpoint = JSON.parse(JSON.stringify(takeCheckpoint(first.actor, clock.now())));
    const journalAtCheckpoint = journal.length;
    // the first life goes on: more answers, completions arrive; its handled ids are never committed
    commit.on = false;
    await until(clock, () => journal.slice(journalAtCheckpoint).some((r) => r.t === 'accepted' && r.message.type === 'completion'));
    first.actor.stop(); // killed

    const resume = planResume(checkpoint, journal);
    expect(resume.replay.map((m) => m.type)).toContain('completion');
    expect(resume.recovered).toEqual([]);

    commit.on = true;
    const two = life(clock, workspace, journal, commit);
    const second = startRun(two.runtime, { checkpoint, replay: resume.replay }, { clock });
    let summary: RunSummary | null = null;
    void second.done.then((s) => (summary = s));
    await until(clock, () => summary !== null);
    expect(summary!.status).toBe('completed');

    const accepted = journal.filter((r): r is Extract<JournalRecord, { t: 'accepted' }> => r.t === 'accepted').map((r) => r.message.id);
    const handled = journal.filter((r): r is Extract<JournalRecord, { t: 'handled' }> => r.t === 'handled').map((r) => r.id);
    expect(new Set(accepted).size).toBe(accepted.length);
    expect([...handled].sort()).toEqual([...new Set(accepted)].sort());
    // the workers restored from the checkpoint sent their updates again: refused, not handled twice
    const metrics = runStatus(second.actor, 0).inbox.metrics;
    expect(metrics.duplicates).toBeGreaterThan(0);
    expect(two.events.filter((e) => e.type === 'inbox.accepted' && e.data.replayed).length).toBe(resume.replay.length);
  });

  it('brings back a pending human question with its deadline, and the default applies on time', async () => {
    const clock = new SimulatedClock();
    const workspace = tempDir();
    const journal: JournalRecord[] = [];
    const commit = { on: true };
    const config = RunConfig.parse({ orchestrator: { questions: 'human', questionTimeoutMs: 60_000, policyAnswer: 'Use RabbitMQ (default).' } });
    const one = life(clock, workspace, journal, commit, config);
    const plan = { id: 'p', tasks: [{ id: 'a', agent: '@coder', prompt: 'part a', dependsOn: [] }] } as unknown as Plan;
    const first = startRun(one.runtime, orchestratorInput(plan, one.runtime, { runId: 'r', config, workspace }), { clock });
    await until(clock, () => pendingHumanItems(first.actor).length === 1);
    const askedAt = clock.now();
    await until(clock, () => clock.now() >= askedAt + 20_000);
    const checkpoint: Checkpoint = JSON.parse(JSON.stringify(takeCheckpoint(first.actor, clock.now())));
    expect(checkpoint.timers.some((t) => t.source === 'orchestrator/humanGate' && t.dueAt === askedAt + 60_000)).toBe(true);
    first.actor.stop();

    const two = life(clock, workspace, journal, commit, config);
    const second = startRun(two.runtime, { checkpoint, replay: planResume(checkpoint, journal).replay }, { clock });
    expect(pendingHumanItems(second.actor).map((i) => i.kind)).toEqual(['question']);
    let summary: RunSummary | null = null;
    void second.done.then((s) => (summary = s));
    await until(clock, () => summary !== null);
    const answered = two.events.find((e) => e.type === 'human.answered')!;
    expect(answered.data.by).toBe('timeout');
    // the original deadline, not a fresh 60 s from the restore
    expect(answered.ts).toBeGreaterThanOrEqual(askedAt + 60_000);
    expect(answered.ts).toBeLessThan(askedAt + 60_000 + 1_000);
    expect(summary!.conversations['a']!.at(-1)).toMatchObject({ kind: 'answer', from: 'timeout', text: 'Use RabbitMQ (default).' });
  });
});
