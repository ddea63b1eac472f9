/**
 * Data of any shape from outside, error codes, agent types, and the identity every message carries: what every boundary shares.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// Data of any shape that comes from outside

/** How deep free-form data may nest: deeper would overflow JSON.stringify when a checkpoint is written. */
export const MAX_JSON_DEPTH = 64;

function withinDepth(value: unknown, limit: number): boolean {
  // iterative, so that a hostile nesting cannot overflow the stack here either
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth >= limit) return false;
    for (const child of Object.values(v as Record<string, unknown>)) stack.push([child, depth + 1]);
  }
  return true;
}

/** Free-form JSON (tool arguments, result metadata, queue message content), nested at most MAX_JSON_DEPTH levels. */
export const JsonValue = z.unknown().refine((v) => withinDepth(v, MAX_JSON_DEPTH), `nested more than ${MAX_JSON_DEPTH} levels deep`);
export const JsonObject = z.record(z.string(), z.unknown()).refine((v) => withinDepth(v, MAX_JSON_DEPTH), `nested more than ${MAX_JSON_DEPTH} levels deep`);

// ---------------------------------------------------------------------------------------------
// Errors

/** Closed set of error codes (seed 003 appendix J plus the runtime's own). */
export const ErrorCode = z.enum([
  'AGENT_SPAWN_FAILED',
  'AGENT_TIMEOUT',
  'AGENT_ERROR',
  'VALIDATION_ERROR',
  'RATE_LIMIT_EXCEEDED',
  'INVALID_STATE_TRANSITION',
  'CONFIGURATION_INVALID',
  'WORKFLOW_PAUSED',
  'WORKFLOW_STOPPED',
  'UNKNOWN_AGENT_TYPE',
  'DEPTH_LIMIT_EXCEEDED',
  'SUBTASK_LIMIT_EXCEEDED',
  'CYCLE_DETECTED',
  'TOOL_NOT_ALLOWED',
  'MODEL_MISBEHAVIOUR',
  'NOT_FOUND',
  'BUDGET_EXCEEDED',
  'ARTIFACT_NOT_FOUND',
  /** The provider refused the request: the conversation does not fit the model's context window. */
  'CONTEXT_OVERFLOW',
]);
export type ErrorCode = z.infer<typeof ErrorCode>;

export const ErrorInfo = z.object({
  code: ErrorCode,
  message: z.string(),
});
export type ErrorInfo = z.infer<typeof ErrorInfo>;

// ---------------------------------------------------------------------------------------------
// Agents

/** Backends an agent type may name: `claude:reviewer`, `openai:architect`; `@coder` uses the default. */
export const AgentBackend = z.enum(['default', 'claude', 'openai', 'scripted']);
export type AgentBackend = z.infer<typeof AgentBackend>;

/** A registry key: it names NATS subjects (`a2a.<ns>.spawn.<agentName>`), so nothing else is allowed. */
export const AgentName = z.string().max(64).regex(/^[a-z][a-z0-9-]*$/, 'lowercase letters, digits and "-", starting with a letter');

export const ParsedAgentType = z.strictObject({
  /** What the caller wrote, e.g. `claude:reviewer`. */
  raw: z.string().min(1).max(200),
  backend: AgentBackend,
  /** Registry key, e.g. `reviewer`. */
  agentName: AgentName,
});
export type ParsedAgentType = z.infer<typeof ParsedAgentType>;

export const PreferredModels = z.object({
  default: z.string(),
  byTaskType: z.record(z.string(), z.string()).optional(),
});

/** Seed 000 `IAgentCapability`: what an agent is good at, so that others know whom to ask. */
export const AgentCapability = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  strengths: z.array(z.string()),
  weaknesses: z.array(z.string()),
  preferredModels: PreferredModels.optional(),
  canSpawnSubTasks: z.boolean(),
  maxSubTaskDepth: z.number().int().min(0).optional(),
  tools: z.array(z.string()),
  source: z.enum(['builtin', 'workspace', 'user']),
});
export type AgentCapability = z.infer<typeof AgentCapability>;

// ---------------------------------------------------------------------------------------------
// Identity and correlation

/**
 * Seed 001 `IOwnerContext`: who receives a session's results and updates. The seed's
 * `sessionUri` (a link to an editor's chat session, gap G3) is left out: a session here is named
 * by its id within its run, which every event and record carries, and nothing would read a URI.
 */
export const OwnerContext = z.object({
  ownerType: z.enum(['orchestrator', 'worker', 'agent']),
  ownerId: z.string(),
});
export type OwnerContext = z.infer<typeof OwnerContext>;

/**
 * A run id (`r-20261122-050634-1f2e3d4c`): no dots, so that `<runId>.<sessionId>` (a remote
 * session's key on the wire) is unambiguous.
 */
export const RunId = z.string().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'letters, digits, "_" and "-", starting with a letter or digit');

/**
 * A session id: a worker is `w-<taskId>` (task ids have no dots), a sub-task is its parent's id,
 * a dot and a number (`w-api.2`, `w-api.2.1`). Unique by construction within a run, whichever
 * process or host spawned it, and it names NATS subjects and keys: nothing else is allowed.
 */
export const SessionId = z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9_-]*(\.[0-9]+)*$/, 'a worker id (letters, digits, "_", "-") followed by ".<n>" per sub-task level');

/** Correlation ids carried by every message and event. */
export const Correlation = z.object({
  runId: RunId,
  planId: z.string(),
  taskId: z.string(),
  workerId: z.string(),
  worktreePath: z.string(),
  subTaskId: z.string().optional(),
  parentId: z.string().optional(),
  depth: z.number().int().min(0),
  /**
   * With --nats: the box the run's process reads (actors/distribution/runBoxes.ts), where its
   * sessions' hosts send the run's events and what has no other owner. Set on the spawns the run
   * makes, and copied to every sub-task's.
   */
  runBox: z.string().regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, "_" and "-"').optional(),
});
export type Correlation = z.infer<typeof Correlation>;
