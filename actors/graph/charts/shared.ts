/**
 * What the chart models share: inert doubles for children, the invariant failure, a session spec for the session charts, and the events of a child ending.
 */
import type { EventObject, Snapshot } from 'xstate';
import { RunConfig } from '../../config/config.js';
import type { SessionSpec } from '../../../machines/protocol/index.js';
import type { StepView } from '../paths.js';

/** A child that does nothing: what it would send are path steps. */
export const inert = {
  transition: (s: Snapshot<undefined>) => s,
  getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }) as Snapshot<undefined>,
  getPersistedSnapshot: (s: Snapshot<undefined>) => s,
};

export function fail(step: StepView, message: string): never {
  throw new Error(`invariant broken after ${step.event.type} (${JSON.stringify(step.before.value)} → ${JSON.stringify(step.after.value)}): ${message}`);
}

// two model calls per session (enough to wait for children, and to reach the turn limit);
// two failed tool calls open the breaker
export const { limits, idle } = RunConfig.parse({ limits: { maxTurns: 2, circuitBreakerThreshold: 2, stuckRepeatLimit: 2, stuckStepLimit: 3 } });

export function sessionSpec(role: 'worker' | 'subtask'): SessionSpec {
  const depth = role === 'worker' ? 0 : 1;
  return {
    id: role === 'worker' ? 'w-model' : 'st-model',
    role,
    agent: { raw: '@architect', backend: 'default', agentName: 'architect' },
    prompt: 'design it',
    expectedOutput: 'a design',
    depth,
    maxDepth: 2,
    spawnContext: 'orchestrator',
    owner: role === 'worker' ? { ownerType: 'orchestrator', ownerId: 'orchestrator' } : { ownerType: 'worker', ownerId: 'w-parent' },
    correlation: { runId: 'r', planId: 'p', taskId: 't', workerId: 'w-model', worktreePath: '.', depth },
    lineage: [],
    limits,
    idle,
    permissions: { level: ['file_edits_in_worktree', 'subtask_spawning'], forSubtasks: true },
  };
}

/** XState's done and error events of a child, as a path step. */
export const done = (id: string, output: unknown = undefined): { type: `xstate.done.actor.${string}`; actorId: string; output: unknown } => ({ type: `xstate.done.actor.${id}`, actorId: id, output });
export const failed = (id: string): { type: `xstate.error.actor.${string}`; actorId: string; error: unknown } => ({ type: `xstate.error.actor.${id}`, actorId: id, error: new Error(`${id} failed`) });

/**
 * A sample event for a chart: one of the machine's own events, typed (a renamed event or a changed
 * payload no longer compiles), or one of XState's delayed, done and error events.
 */
export type Sample<E extends EventObject> =
  | E
  | { type: `xstate.after.${string}` }
  | { type: `xstate.done.actor.${string}`; actorId: string; output?: unknown }
  | { type: `xstate.error.actor.${string}`; actorId: string; error: unknown };
