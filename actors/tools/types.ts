/** What a tool is, and what it may use while it runs. */
import type { z } from 'zod';
import type { Clock, CommandRunner, EventSink, FamilyView, PermissionAnswer, PermissionAsk, ToolOutcome } from '../../machines/ports.js';
import type { SessionSpec, TaskUpdate, ToolCall, ToolSpec } from '../../machines/protocol/index.js';
import type { AgentDefinition, AgentRegistry } from '../config/registry.js';
import type { ArtifactStore } from '../organiser/artifacts.js';

/**
 * Ids for new sub-tasks: `<parentId>.<n>`, numbered per parent. Unique by construction across
 * processes and hosts (a parent's id is unique in its run, and only the process running the parent
 * numbers its children), deterministic (a session restored on another host, re-running the tool
 * that spawned, gets the same ids, so the spawn is recognised as a duplicate), and readable (the
 * id says whose child it is).
 */
export interface IdGenerator {
  child(parent: Pick<SessionSpec, 'id' | 'correlation'>): string;
  /** Notes an id already in use (a restored child), so that `child` never hands it out again. */
  observe(child: Pick<SessionSpec, 'id' | 'correlation'>): void;
  /**
   * Lets go of the counters of the parents `ended` names (by wire id, `<runId>.<session id>`):
   * sessions that will spawn nothing more here (a host's tree that finished).
   */
  forget?(ended: (parent: string) => boolean): void;
}

export type { PermissionAnswer, PermissionAsk } from '../../machines/ports.js';

/** A session actor as a tool may watch it (ToolContext.session). */
export interface WatchedSession {
  subscribe(observer: { complete?(): void; error?(e: unknown): void }): { unsubscribe(): void };
  getSnapshot(): { status: string };
}

/** Files sibling sub-tasks declared (`targetFiles`) and hold while they run. */
export interface FileLocks {
  /** The session holding `file` in `worktree`, if another than `sessionId`. */
  heldBy(worktree: string, file: string, sessionId: string): string | null;
}

/**
 * Tools that come from outside the catalog, per session: an agent's MCP servers
 * (adapters/mcp/client.ts). Their names start with `mcp__`; they are listed when a session first
 * calls its model and run like any tool (permission, signal, tool errors).
 */
export interface ExternalTools {
  /** True for a name this provider runs (`mcp__…`), known or not. */
  handles(name: string): boolean;
  /**
   * The tools the session has from its agent's servers (connecting on first use, then from the
   * cache), and notes for the model about servers that could not be reached (each told once).
   * `session`, when given, is watched: its end closes its connections.
   */
  toolsFor(spec: SessionSpec, definition: AgentDefinition, signal: AbortSignal, session?: { subscribe(observer: { complete?(): void; error?(e: unknown): void }): { unsubscribe(): void } }): Promise<{ tools: ToolSpec[]; notes: string[] }>;
  run(call: ToolCall, definition: AgentDefinition, ctx: ToolContext): Promise<ToolOutcome>;
  /**
   * Whether a call of this tool may run twice with the effect of once (an MCP tool annotated
   * `readOnlyHint` or `idempotentHint`): after a restore, such a call in doubt runs again.
   */
  idempotent(name: string, spec: SessionSpec): boolean;
  /** Closes every connection (the run or the host ends). */
  closeAll(): Promise<void>;
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
  /** Status updates dropped before it (the mailbox holds at most 100). */
  dropped?: number;
  ids: IdGenerator;
  clock: Clock;
  /** Runs run_command's commands (the sandbox); null: commands are refused. */
  commands: CommandRunner | null;
  /** The artifact store of a run (seed 003); absent or null: the artifact tools say there is none. */
  artifacts?: ((runId: string) => ArtifactStore) | null;
  /** Tools from the agent's MCP servers (absent: an `mcp__` call is an unknown tool). */
  external?: ExternalTools | null;
  /**
   * The calling session, to watch for its end: a tool that leaves something open past its call
   * (a delegated A2A task waiting for the parent's answer) closes it when the session ends
   * (`status` done or error), not when it is only stopped (`stopped`: a copy its host let go).
   */
  session?: WatchedSession;
  /** The run's events, for what a tool tells about its session (absent: nobody listens). */
  events?: EventSink;
  /**
   * The call's key outside the run: the same for this call across restores and hosts (run,
   * session, call id). Given to custom tools and MCP servers, so that a repeat can be recognised.
   */
  idempotencyKey?: string;
}

export interface ToolDefinition<S extends z.ZodType> {
  name: string;
  description: string;
  parameters: S;
  /**
   * Runs in the model's step, right after the reply, without a step of its own: it never asks a
   * permission, does no slow I/O and needs nothing the chart does between calls (the `a2a_*`
   * coordination tools).
   */
  inline?: boolean;
  /**
   * Running it twice has the effect of running it once (it only reads, or it sets a state): a call
   * in doubt after a restore runs again, and its steps are not recorded in the effect journal.
   */
  idempotent?: boolean;
  execute(args: z.output<S>, ctx: ToolContext): ToolOutcome | Promise<ToolOutcome>;
}

export function childIds(): IdGenerator {
  // per run and parent: a host serves several runs, in which the same worker ids recur
  const counters = new Map<string, number>();
  return {
    child(parent) {
      const key = `${parent.correlation.runId}.${parent.id}`;
      const n = counters.get(key) ?? 1;
      counters.set(key, n + 1);
      return `${parent.id}.${n}`;
    },
    observe(child) {
      const dot = child.id.lastIndexOf('.');
      const n = Number(child.id.slice(dot + 1));
      if (dot <= 0 || !Number.isInteger(n) || n < 1) return;
      const key = `${child.correlation.runId}.${child.id.slice(0, dot)}`;
      counters.set(key, Math.max(counters.get(key) ?? 1, n + 1));
    },
    forget(ended) {
      for (const key of counters.keys()) if (ended(key)) counters.delete(key);
    },
  };
}
