/**
 * Sub-tasks: what a session is asked to do, the updates that reach its parent (seed 002), and the orchestrator's queue (seed 000/001).
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { JsonObject, JsonValue, OwnerContext, ParsedAgentType } from './common.js';

// ---------------------------------------------------------------------------------------------
// Sub-tasks

export const Usage = z.object({
  /** Every input token billed, cache reads and writes included. */
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  /** The part of inputTokens read from the provider's prompt cache, and the part written to it. */
  cacheReadTokens: z.number().int().min(0).optional(),
  cacheWriteTokens: z.number().int().min(0).optional(),
  modelCalls: z.number().int().min(0),
  /** USD, from the price table (absent: no priced call). */
  costUsd: z.number().min(0).optional(),
});
export type Usage = z.infer<typeof Usage>;

export const DiffStats = z.object({
  changedFiles: z.number().int().min(0),
  insertions: z.number().int().min(0),
  deletions: z.number().int().min(0),
  /** The changed files (paths relative to the worktree). */
  files: z.array(z.string()).optional(),
});
export type DiffStats = z.infer<typeof DiffStats>;

export const SubTaskStatus = z.enum(['pending', 'running', 'completed', 'failed', 'cancelled']);

export const ResultStatus = z.enum(['success', 'partial', 'failed', 'timeout', 'cancelled']);
export type ResultStatus = z.infer<typeof ResultStatus>;

/** Seed 000/001 `ISubTaskResult`, plus `cancelled` and usage: exactly one per spawned child. */
export const SubTaskResult = z.object({
  taskId: z.string(),
  status: ResultStatus,
  output: z.string(),
  outputFile: z.string().optional(),
  metadata: JsonObject.optional(),
  error: z.string().optional(),
  usage: Usage.optional(),
  diffStats: DiffStats.optional(),
  /** True when the runtime synthesised the result because the child never reported one. */
  fallback: z.boolean().optional(),
});
export type SubTaskResult = z.infer<typeof SubTaskResult>;

/** Seed 000/001 `ISubTask`. */
export const SubTask = z.object({
  id: z.string(),
  parentWorkerId: z.string(),
  parentTaskId: z.string(),
  planId: z.string(),
  worktreePath: z.string(),
  agentType: z.string(),
  parsedAgentType: ParsedAgentType,
  prompt: z.string(),
  expectedOutput: z.string(),
  model: z.string().optional(),
  depth: z.number().int().min(0),
  targetFiles: z.array(z.string()).optional(),
  status: SubTaskStatus,
  result: SubTaskResult.optional(),
  createdAt: z.number(),
  completedAt: z.number().optional(),
  owner: OwnerContext,
});
export type SubTask = z.infer<typeof SubTask>;

// ---------------------------------------------------------------------------------------------
// Updates that reach a parent (seed 002 `ITaskUpdate`)

/** `stuck` is reported by the session itself when its health check trips. */
export const NotificationKind = z.enum(['status', 'question', 'error', 'stuck']);
export type NotificationKind = z.infer<typeof NotificationKind>;

export const TaskUpdate = z.object({
  id: z.string(),
  type: z.enum(['completed', 'failed', 'idle', 'idle_response', 'progress']),
  subTaskId: z.string(),
  /** The owner the update is for. */
  parentId: z.string(),
  agentType: z.string(),
  prompt: z.string().optional(),
  result: SubTaskResult.optional(),
  /** For `progress` updates that carry a notification (`a2a_notify_orchestrator`). */
  kind: NotificationKind.optional(),
  message: z.string().optional(),
  timestamp: z.number(),
});
export type TaskUpdate = z.infer<typeof TaskUpdate>;

// ---------------------------------------------------------------------------------------------
// Orchestrator queue (seed 000/001 `IOrchestratorQueueMessage`)

export const QueueMessageType = z.enum([
  'status_update',
  'permission_request',
  'question',
  'completion',
  'error',
  'answer',
  'idle_response',
]);
export type QueueMessageType = z.infer<typeof QueueMessageType>;

export const Priority = z.enum(['critical', 'high', 'normal', 'low']);

export const QueueMessage = z.object({
  id: z.string(),
  timestamp: z.number(),
  priority: Priority,
  runId: z.string(),
  planId: z.string(),
  taskId: z.string(),
  workerId: z.string(),
  worktreePath: z.string(),
  subTaskId: z.string().optional(),
  parentAgentId: z.string().optional(),
  depth: z.number().int().min(0).optional(),
  owner: OwnerContext.optional(),
  type: QueueMessageType,
  content: JsonValue,
});
export type QueueMessage = z.infer<typeof QueueMessage>;

/** The inbox order of seed 000: permission_request > completion > question > status_update. */
export const QUEUE_PRIORITY: Record<QueueMessageType, z.infer<typeof Priority>> = {
  permission_request: 'critical',
  completion: 'high',
  error: 'high',
  question: 'normal',
  idle_response: 'normal',
  answer: 'normal',
  status_update: 'low',
};
