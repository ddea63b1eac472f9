/**
 * The organiser's context holds summaries, never contents: its size follows the number of
 * artifacts, not their size; its decisions are parsed with their schemas.
 */
import { describe, expect, it } from 'vitest';
import { ArtifactStore, parseTestCounts } from '../../actors/organiser/artifacts.js';
import { createDecide, organiserPrompt } from '../../actors/organiser/organiser.js';
import { MemoryEffectJournal } from '../../actors/durability/effects.js';
import { FileArtifactBackend } from '../../adapters/store/artifactFiles.js';
import type { OrganiserView } from '../../machines/sdlcWorkflow.machine.js';
import type { Model } from '../../machines/ports.js';
import { createActor, toPromise } from 'xstate';
import { tempDir } from '../helpers.js';

const clock = { now: () => 1_000, setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms), clearTimeout: (t: unknown) => clearTimeout(t as NodeJS.Timeout) };

function view(artifacts: OrganiserView['artifacts']): OrganiserView {
  return {
    userTask: 'build it',
    workflowState: 'CODE_REVIEW',
    round: 1,
    artifacts,
    stepArtifacts: artifacts.map((a) => a.id),
    agentStatuses: [],
    todoList: [],
    workflowHistory: ['PLANNING'],
    rounds: { planRevisions: 0, maxPlanRevisions: 2, fixRounds: 0, maxFixRounds: 3 },
    allowed: ['DOCUMENTATION', 'CODE_FIXING', 'TESTING'],
    refused: null,
    distribute: null,
  };
}

const code = (lines: number) => Array.from({ length: lines }, (_, i) => `export const value${i} = ${i}; // line ${i} of the module`).join('\n');

describe('the organiser', () => {
  it('should see the same context for a 40-line and a 4,000-line code artifact (summaries only)', async () => {
    const sizes: number[] = [];
    for (const lines of [40, 4_000]) {
      const store = new ArtifactStore(new FileArtifactBackend(tempDir('a2a-org-')), 'r1', clock as never);
      await store.create({ type: 'code', content: `// File: src/values.js\n${code(lines)}`, producer: 'w-implement-1', producerRole: 'primaryCoder', files: ['src/values.js'] });
      const prompt = organiserPrompt(view(await store.organiserView()));
      expect(prompt).not.toMatch(/value39 = 39/);
      sizes.push(prompt.length);
    }
    // the line count in the brief differs by a few characters; the content (≈ 220 KB) never enters
    expect(Math.abs(sizes[1]! - sizes[0]!)).toBeLessThan(20);
  });

  it('should refuse a decision that does not match its schema, naming the field', async () => {
    const model: Model = { id: 'm', call: async () => ({ text: '', toolCalls: [{ id: 'c1', name: 'workflow_decision', arguments: { action: 'celebrate', reasoning: 'done' } }], usage: { inputTokens: 1, outputTokens: 1 }, stopReason: 'tool_use' }) } as unknown as Model;
    const actor = createActor(createDecide({ model, clock: clock as never }), { input: { ...view([]), runId: 'r1' } });
    actor.start();
    await expect(toPromise(actor)).rejects.toThrow(/workflow_decision is invalid: action: .*approve.*request_revision/);
  });

  it('should not pay twice for a decision a pause interrupted: the call goes on, and the resumed phase takes its reply', async () => {
    let calls = 0;
    let answer!: () => void;
    const model: Model = {
      id: 'm',
      call: (_request: unknown, { signal }: { signal: AbortSignal }) => {
        calls++;
        return new Promise((resolve, reject) => {
          signal.addEventListener('abort', () => reject(new Error('aborted')));
          answer = () => resolve({ text: '', toolCalls: [{ id: 'c1', name: 'workflow_decision', arguments: { action: 'approve', reasoning: 'fine' } }], usage: { inputTokens: 3, outputTokens: 2 }, stopReason: 'tool_use' });
        });
      },
    } as unknown as Model;
    const told: unknown[] = [];
    const decide = createDecide({ model, clock: clock as never, events: { emit: (e: unknown) => void told.push(e), listening: true } as never });
    const input = { ...view([]), runId: 'r1' };
    // the deciding phase's invoke, stopped by a pause while its call is under way
    const first = createActor(decide, { input });
    first.start();
    await Promise.resolve();
    first.stop();
    // resumed: the phase asks the same question again
    const second = createActor(decide, { input });
    second.start();
    answer();
    const output = await toPromise(second);
    expect(output.decision).toMatchObject({ action: 'approve' });
    expect(calls).toBe(1);
    // one priced call, told once
    expect(told.filter((e) => (e as { type: string }).type === 'model.called')).toHaveLength(1);
  });

  it('should give back a decision an earlier life of the run received (the effect journal), without asking again', async () => {
    let calls = 0;
    const model: Model = {
      id: 'm',
      call: async () => {
        calls++;
        return { text: '', toolCalls: [{ id: 'c1', name: 'workflow_decision', arguments: { action: 'approve', reasoning: 'fine' } }], usage: { inputTokens: 1, outputTokens: 1 }, stopReason: 'tool_use' };
      },
    } as unknown as Model;
    const journal = new MemoryEffectJournal();
    const effects = { journal: (runId: string) => (runId === 'r1' ? journal : null), inDoubt: 'report' as const };
    const input = { ...view([]), runId: 'r1' };
    const first = createActor(createDecide({ model, clock: clock as never, effects }), { input });
    first.start();
    await toPromise(first);
    expect(calls).toBe(1);
    // the process stopped before its checkpoint: the next life, reading the same journal, asks the same question
    const second = createActor(createDecide({ model, clock: clock as never, effects }), { input });
    second.start();
    expect((await toPromise(second)).decision).toMatchObject({ action: 'approve' });
    expect(calls).toBe(1);
  });

  it('should read test results as failed when a suite failed to run, and take the last summary', () => {
    const failed = (text: string) => parseTestCounts(text)?.failed;
    expect(failed('Test Suites: 1 failed, 1 total\nTests:       10 passed, 10 total')).toBe(1);
    expect(failed(' Test Files  1 failed | 1 passed (2)\n      Tests  5 passed (5)')).toBe(1);
    expect(failed('Fixed 3 failed tests. Now: 12 passed, 0 failed')).toBe(0);
    expect(failed('first run: 1 passed, 2 failed\nafter the fix: 3 passed, 0 failed')).toBe(0);
    expect(failed('# pass 2\n# fail 1')).toBe(1);
  });

  it('should bound the prompt in size, not only in count: 100 verbose artifacts stay under 16k tokens', () => {
    const verbose = Array.from({ length: 100 }, (_, i) => ({
      id: `code-${i + 1}`,
      type: 'code' as const,
      version: 1,
      status: 'completed',
      producerRole: 'secondaryCoder',
      brief: 'x'.repeat(400),
      keyPoints: Array.from({ length: 5 }, () => 'y'.repeat(300)),
      filesAffectedCount: 200,
    }));
    const prompt = organiserPrompt({ ...view(verbose), userTask: 'z'.repeat(20_000), agentStatuses: Array.from({ length: 500 }, (_, i) => ({ role: 'r', taskId: `t${i}`, status: 'working' })) });
    expect(prompt.length / 4).toBeLessThan(16_000);
    expect(prompt).toContain('code-100 v1 code [completed] by secondaryCoder: ' + 'x'.repeat(400) + ' (');
  });
});
