import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { RunConfig } from '../../actors/config/config.js';
import { checkCycle, checkDepth, SpawnBudget } from '../../actors/session/limits.js';
import type { SessionSpec } from '../../machines/protocol/index.js';

const { limits, idle } = RunConfig.parse({});
const spec = (over: Partial<SessionSpec> = {}): SessionSpec => ({
  id: 's',
  role: 'subtask',
  agent: { raw: '@coder', backend: 'default', agentName: 'coder' },
  prompt: 'write the parser',
  expectedOutput: 'code',
  depth: 1,
  maxDepth: 2,
  spawnContext: 'orchestrator',
  owner: { ownerType: 'worker', ownerId: 'w' },
  correlation: { runId: 'r', planId: 'p', taskId: 't', workerId: 'w', worktreePath: '.', depth: 1 },
  lineage: [{ agentName: 'architect', prompt: 'design the parser' }],
  limits,
  idle,
  permissions: { level: ['file_edits_in_worktree'], forSubtasks: true },
  ...over,
});

describe('limits', () => {
  it('should allow children down to the depth limit and refuse deeper ones with the reason', () => {
    expect(checkDepth(spec({ depth: 1 }))).toBeNull();
    expect(checkDepth(spec({ depth: 2 }))?.message).toMatchInlineSnapshot(
      `"Sub-task depth limit reached: you are at depth 2 and a child would be at depth 3, but sub-tasks of orchestrator workers may nest 2 levels. Do this part yourself, or return what you have with a2a_subtask_complete."`,
    );
    expect(checkDepth(spec({ depth: 1, maxDepth: 1, spawnContext: 'agent' }))?.message).toContain('standalone session may nest 1 level');
  });

  it('should detect the same agent type with the same prompt in the ancestor chain', () => {
    expect(checkCycle(spec(), { agentName: 'architect', prompt: 'Design  the PARSER' })?.code).toBe('CYCLE_DETECTED');
    expect(checkCycle(spec(), { agentName: 'coder', prompt: 'write the parser' })?.code).toBe('CYCLE_DETECTED');
    expect(checkCycle(spec(), { agentName: 'coder', prompt: 'write the lexer' })).toBeNull();
    expect(checkCycle(spec(), { agentName: 'reviewer', prompt: 'design the parser' })).toBeNull();
  });

  it('should cap spawns per worker in total and per minute, all or nothing', () => {
    const clock = new SimulatedClock();
    const budget = new SpawnBudget(clock);
    const l = { ...limits, maxSubtasksPerWorker: 5, spawnRatePerMinute: 3 };
    expect(budget.reserve('w', 3, l)).toBeNull();
    expect(budget.reserve('w', 1, l)?.code).toBe('RATE_LIMIT_EXCEEDED');
    clock.increment(60_001);
    expect(budget.reserve('w', 2, l)).toBeNull();
    expect(budget.reserve('w', 1, l)?.message).toMatch(/worker w has spawned 5 of at most 5 sub-tasks/);
    expect(budget.reserve('other', 3, l)).toBeNull(); // per worker
    expect(budget.spawned('w')).toBe(5);
  });
});
