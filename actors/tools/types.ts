/** What a tool is, and what it may use while it runs. */
import type { z } from 'zod';
import type { Clock, FamilyView, PermissionAnswer, PermissionAsk, ToolOutcome } from '../../machines/ports.js';
import type { SessionSpec, TaskUpdate } from '../../machines/protocol.js';
import type { AgentRegistry } from '../registry.js';

/** Ids for new sub-tasks; deterministic per runtime so that runs and tests are reproducible. */
export interface IdGenerator {
  next(prefix: string): string;
  /** Notes an id already in use (a restored child), so that `next` never hands it out again. */
  observe(id: string): void;
}

export type { PermissionAnswer, PermissionAsk } from '../../machines/ports.js';

/** Files sibling sub-tasks declared (`targetFiles`) and hold while they run. */
export interface FileLocks {
  /** The session holding `file` in `worktree`, if another than `sessionId`. */
  heldBy(worktree: string, file: string, sessionId: string): string | null;
}

export interface ToolContext {
  spec: SessionSpec;
  /** The directory the session's file and command tools are confined to. */
  worktree: string;
  /** Aborted when the session ends or is cancelled while the tool runs. */
  signal: AbortSignal;
  /** Resolves once the action is decided (by policy, a parent, the orchestrator or a human). */
  permit(ask: PermissionAsk): Promise<PermissionAnswer>;
  locks: FileLocks;
  registry: AgentRegistry;
  /** The calling session's children (null before its supervisor exists). */
  family: FamilyView | null;
  /** The update batch the session holds. */
  updates: TaskUpdate[];
  ids: IdGenerator;
  clock: Clock;
}

export interface ToolDefinition<S extends z.ZodType> {
  name: string;
  description: string;
  parameters: S;
  execute(args: z.output<S>, ctx: ToolContext): ToolOutcome | Promise<ToolOutcome>;
}

export function sequentialIds(start = 1): IdGenerator {
  const counters = new Map<string, number>();
  return {
    next(prefix) {
      const n = counters.get(prefix) ?? start;
      counters.set(prefix, n + 1);
      return `${prefix}-${n}`;
    },
    observe(id) {
      const match = /^(.*)-(\d+)$/.exec(id);
      if (!match) return;
      const [, prefix, n] = match;
      counters.set(prefix!, Math.max(counters.get(prefix!) ?? start, Number(n) + 1));
    },
  };
}
