/**
 * Limits and timings that travel with every session (so that a remote host enforces the same ones).
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { Correlation, OwnerContext, ParsedAgentType, SessionId } from './common.js';
import { PermissionAction } from './permissions.js';

// ---------------------------------------------------------------------------------------------
// Limits and timings that travel with every session (so a remote host enforces the same ones)

export const Limits = z.strictObject({
  /** Deepest sub-task level under an orchestrator-deployed worker (worker = 0). */
  maxDepth: z.number().int().min(0).max(8).default(2),
  /** Deepest level for a standalone session (`a2a run --standalone`). */
  maxDepthStandalone: z.number().int().min(0).max(8).default(1),
  /** Children of one parent running at once; further spawns wait for a slot in their supervisor's queue. */
  maxParallelSubtasks: z.number().int().min(1).default(5),
  /** Sub-tasks a worker's whole subtree may spawn in total. */
  maxSubtasksPerWorker: z.number().int().min(0).default(10),
  /** Spawns per minute within one worker's subtree. */
  spawnRatePerMinute: z.number().int().min(1).default(20),
  /** Workers the orchestrator runs at once. */
  maxParallelWorkers: z.number().int().min(1).default(4),
  /** Model calls one session may make before it is failed. */
  maxTurns: z.number().int().min(1).default(40),
  /** Consecutive failed tool calls that open the circuit breaker (worker pauses, sub-task fails). */
  circuitBreakerThreshold: z.number().int().min(1).default(5),
  /** Deadline for a whole sub-task; none by default. */
  subtaskTimeoutMs: z.number().int().positive().optional(),
  /** Default wait of `a2a_await_subtasks` and blocking spawns when the agent gives none. */
  awaitTimeoutMs: z.number().int().positive().default(600_000),
  /** Health: the same tool call (name and arguments) this many times in a row is being stuck. */
  stuckRepeatLimit: z.number().int().min(2).default(3),
  /** Health: this many tool calls in a row without progress (each failed or repeated) is being stuck. */
  stuckStepLimit: z.number().int().min(2).default(8),
});
export type Limits = z.infer<typeof Limits>;

export const IdleConfig = z.strictObject({
  idleThresholdMs: z.number().int().min(0).default(30_000),
  inquiryDelayMs: z.number().int().min(0).default(5_000),
  inquiryTimeoutMs: z.number().int().min(1).default(60_000),
  /** Inquiries answered without progress before the session is ended with a partial result. */
  maxInquiries: z.number().int().min(1).default(3),
});
export type IdleConfig = z.infer<typeof IdleConfig>;

/** Everything a host needs to run one agent session (worker or sub-task). Serializable. */
export const SessionSpec = z.object({
  id: SessionId,
  role: z.enum(['worker', 'subtask']),
  agent: ParsedAgentType,
  prompt: z.string(),
  expectedOutput: z.string(),
  model: z.string().optional(),
  depth: z.number().int().min(0),
  /** Effective deepest level for this session's descendants. */
  maxDepth: z.number().int().min(0),
  spawnContext: z.enum(['orchestrator', 'agent']),
  owner: OwnerContext,
  correlation: Correlation,
  /** Ancestors from the root down (not including this session), for cycle detection. */
  lineage: z.array(z.object({ agentName: z.string(), prompt: z.string() })),
  targetFiles: z.array(z.string()).optional(),
  /** The kind of work, for model assignment; children inherit it unless they name their own. */
  taskType: z.string().optional(),
  /** The SDLC workflow role this worker plays (architect, sceptic …): its artifacts' producer role. */
  workflowRole: z.string().max(64).optional(),
  timeoutMs: z.number().int().positive().optional(),
  limits: Limits,
  idle: IdleConfig,
  permissions: z.object({
    /** Actions this session may do without asking anyone. */
    level: z.array(PermissionAction),
    /** What its sub-tasks may do on their own (`true`: all of this session's level). */
    forSubtasks: z.union([z.literal(true), z.array(PermissionAction)]),
  }),
});
export type SessionSpec = z.infer<typeof SessionSpec>;
