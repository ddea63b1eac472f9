/**
 * Safety limits for spawning (seed 000 phase 11). Every check returns an `ErrorInfo` with a
 * message the agent can act on, or null; a limit hit is a tool error, never a crash.
 * The concurrency limit is not here: extra spawns wait in the supervisor, they do not fail.
 */
import type { ErrorInfo, Limits, SessionSpec } from '../../machines/protocol/index.js';
import type { Clock } from '../../machines/ports.js';
import type { Budgets, CostLedger } from '../observation/cost.js';

const normalize = (prompt: string) => prompt.toLowerCase().replace(/\s+/g, ' ').trim();

export function checkDepth(owner: SessionSpec): ErrorInfo | null {
  const childDepth = owner.depth + 1;
  if (childDepth <= owner.maxDepth) return null;
  const context =
    owner.spawnContext === 'orchestrator'
      ? `sub-tasks of orchestrator workers may nest ${owner.limits.maxDepth} levels`
      : `sub-tasks of a standalone session may nest ${owner.limits.maxDepthStandalone} level(s)`;
  return {
    code: 'DEPTH_LIMIT_EXCEEDED',
    message: `Sub-task depth limit reached: you are at depth ${owner.depth} and a child would be at depth ${childDepth}, but ${context}. Do this part yourself, or return what you have with a2a_subtask_complete.`,
  };
}

/** A session's ancestors and itself, their prompts normalized: what its children are checked against. */
type Ancestry = Array<{ agentName: string; prompt: string }>;
const ancestryOf = (owner: SessionSpec): Ancestry => [...owner.lineage, { agentName: owner.agent.agentName, prompt: owner.prompt }].map((a) => ({ agentName: a.agentName, prompt: normalize(a.prompt) }));

/** Where in the ancestry (normalized) the same agent type with the same prompt is, or -1. */
function cycleAt(ancestry: Ancestry, agentName: string, prompt: string): number {
  let target: string | null = null;
  for (let i = 0; i < ancestry.length; i++) {
    if (ancestry[i]!.agentName !== agentName) continue;
    target ??= normalize(prompt);
    if (ancestry[i]!.prompt === target) return i;
  }
  return -1;
}

function cycleError(agentName: string, hit: number): ErrorInfo {
  return {
    code: 'CYCLE_DETECTED',
    message: `Cycle detected: @${agentName} with this same prompt is already an ancestor (depth ${hit}) of this session. Spawning it again would loop; change the prompt to a narrower part of the work, or do it yourself.`,
  };
}

/** The same agent type with the same prompt again in the ancestor chain is a cycle. */
export function checkCycle(owner: SessionSpec, child: { agentName: string; prompt: string }): ErrorInfo | null {
  const hit = cycleAt(ancestryOf(owner), child.agentName, child.prompt);
  return hit < 0 ? null : cycleError(child.agentName, hit);
}

/**
 * Totals and spawn rate per worker subtree. One budget per runtime (process); the window is a
 * queue of spawn times pruned from the front, so each check is amortised O(1).
 */
/**
 * A worker's key for budgets (spawns, cost): its run and its id. A host serves many runs, in which
 * the same worker ids recur (`w-api`): their budgets must not add up.
 */
export function workerKey(spec: { correlation: { runId: string; workerId: string } }): string {
  return `${spec.correlation.runId}.${spec.correlation.workerId}`;
}

export class SpawnBudget {
  readonly #clock: Clock;
  readonly #workers = new Map<string, { total: number; times: number[]; head: number }>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Reserves `count` spawns for the worker (`key`: workerKey), all or nothing; `workerId` names it in errors. */
  reserve(key: string, count: number, limits: Limits, workerId = key): ErrorInfo | null {
    const now = this.#clock.now();
    let entry = this.#workers.get(key);
    if (!entry) {
      entry = { total: 0, times: [], head: 0 };
      this.#workers.set(key, entry);
    }
    while (entry.head < entry.times.length && entry.times[entry.head]! <= now - 60_000) entry.head++;
    if (entry.head > 1024 && entry.head * 2 > entry.times.length) {
      entry.times = entry.times.slice(entry.head);
      entry.head = 0;
    }
    if (entry.total + count > limits.maxSubtasksPerWorker) {
      return {
        code: 'SUBTASK_LIMIT_EXCEEDED',
        message: `Sub-task limit reached: worker ${workerId} has spawned ${entry.total} of at most ${limits.maxSubtasksPerWorker} sub-tasks and this call asks for ${count} more. Work with the results you have, or do the rest yourself.`,
      };
    }
    const recent = entry.times.length - entry.head;
    if (recent + count > limits.spawnRatePerMinute) {
      return {
        code: 'RATE_LIMIT_EXCEEDED',
        message: `Spawn rate limit: worker ${workerId} spawned ${recent} sub-tasks in the last minute and the limit is ${limits.spawnRatePerMinute} per minute (this call asks for ${count}). Await the running sub-tasks before spawning more.`,
      };
    }
    entry.total += count;
    for (let i = 0; i < count; i++) entry.times.push(now);
    return null;
  }

  spawned(key: string): number {
    return this.#workers.get(key)?.total ?? 0;
  }

  /** Lets go of the workers `ended` names (by key): a host's, once no session of theirs runs there. */
  forget(ended: (key: string) => boolean): void {
    for (const key of this.#workers.keys()) if (ended(key)) this.#workers.delete(key);
  }
}

/**
 * Why `owner` may not spawn `children` now, or null: its cost budget is spent, it is as deep as
 * sub-tasks may go, a child would repeat an ancestor's task, or its spawn budget (count, rate) is
 * used up. The last check reserves the spawns, so it runs only when the others pass.
 */
export function spawnRefusal(
  owner: SessionSpec,
  children: ReadonlyArray<Pick<SessionSpec, 'prompt'> & { agent: { agentName: string } }>,
  deps: { budget: SpawnBudget; costs?: { ledger: CostLedger; budgets: Budgets } },
): ErrorInfo | null {
  const spent = deps.costs?.ledger.checkBudget(workerKey(owner), deps.costs.budgets);
  if (spent) {
    return {
      code: 'BUDGET_EXCEEDED',
      message: `Budget reached: the ${spent.scope} has spent $${spent.spentUsd.toFixed(4)} of its $${spent.limitUsd.toFixed(4)}; no new sub-tasks. Finish with what you have.`,
    };
  }
  const depth = checkDepth(owner);
  if (depth) return depth;
  // the owner's ancestry normalized once for all the children (a spawn of 10k normalized every
  // ancestor's prompt again for each child)
  const ancestry = ancestryOf(owner);
  for (const child of children) {
    const hit = cycleAt(ancestry, child.agent.agentName, child.prompt);
    if (hit >= 0) return cycleError(child.agent.agentName, hit);
  }
  return deps.budget.reserve(workerKey(owner), children.length, owner.limits, owner.correlation.workerId);
}
