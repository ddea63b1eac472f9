/**
 * Run events: one JSON object per line in a run's log, `a2a run --json` and the monitors.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { JsonObject } from './common.js';

// ---------------------------------------------------------------------------------------------
// Run events: one JSON object per line for `a2a run --json` and the monitors

/** Run events about a task and its branch, not one session (audited with their plan and task). */
export const TASK_EVENT_TYPES = [
  'task.skipped',
  'task.completed',
  'worktree.created',
  'worktree.removed',
  'branch.committed',
  'branch.merged',
  'branch.conflict',
  'branch.pushed',
  'pr.created',
  'review.requested',
  'changes.requested',
  'branch.done',
] as const;

export const RunEventType = z.enum([
  'run.started',
  'run.finished',
  'worker.deployed',
  ...TASK_EVENT_TYPES,
  'session.state',
  'subtask.spawned',
  'subtask.queued',
  'subtask.result',
  'update.queued',
  'inquiry.sent',
  'inquiry.answered',
  'model.called',
  'model.truncated',
  'tool.called',
  /** What the runtime put into a session's conversation (child results, inquiries, answers, notes): its transcript's user turns. */
  'message.injected',
  'limit.hit',
  'circuit.open',
  'permission.requested',
  'permission.forwarded',
  'permission.decided',
  'question.asked',
  'question.answered',
  'human.asked',
  'human.answered',
  'inbox.accepted',
  'budget.reached',
  'model.switched',
  'subtask.placed',
  'host.joined',
  'host.lost',
  'session.restored',
  'stuck.detected',
  'worker.reassigned',
  'worker.redirected',
  'worker.reinitialized',
  'worker.resumed',
  'run.stopped',
  'run.resumed',
  'inbox.handled',
  'workflow.state',
  'workflow.decision',
  'workflow.refused',
  'workflow.completed',
  'artifact.created',
  'artifact.updated',
  'run.paused',
  'run.unpaused',
  /** An agent's MCP server: connected (its tools listed), failed (to start, died, timed out), a tool called. */
  'mcp.connected',
  'mcp.failed',
  'mcp.called',
  /** A restored session's tool call that had started and has no recorded result: not run again, its outcome unknown. */
  'effect.in_doubt',
  'warning',
]);
export type RunEventType = z.infer<typeof RunEventType>;

export const RunEvent = z.object({
  /**
   * Unique per event. Events that state a fact once (a result, a spawn, an update, a decision)
   * carry a key of that fact (`result:w-api.2`), so that a re-emission after a resume or a
   * failover is recognised and dropped; the others get a key of their emission.
   */
  id: z.string().min(1).optional(),
  type: RunEventType,
  runId: z.string(),
  seq: z.number().int().min(0),
  ts: z.number(),
  planId: z.string().optional(),
  taskId: z.string().optional(),
  workerId: z.string().optional(),
  subTaskId: z.string().optional(),
  parentId: z.string().optional(),
  depth: z.number().int().optional(),
  agentType: z.string().optional(),
  data: JsonObject.default({}),
});
export type RunEvent = z.infer<typeof RunEvent>;

/** Audited operations about the run as a whole: they carry the plan. */
const RUN_SCOPED: ReadonlySet<string> = new Set(['run.started', 'run.finished', 'run.stopped', 'run.resumed']);
/** Audited operations about a task and its branch (not one session): they carry the plan and the task. */
const TASK_SCOPED: ReadonlySet<string> = new Set(TASK_EVENT_TYPES);

/** What each kind of audit record must carry, beyond the run id. */
export function auditFieldsOf(type: string): Array<keyof RunEvent> {
  if (RUN_SCOPED.has(type)) return ['planId'];
  if (TASK_SCOPED.has(type)) return ['planId', 'taskId'];
  return ['planId', 'taskId', 'workerId', 'subTaskId', 'parentId', 'depth', 'agentType'];
}

/**
 * A record of the audit trail (`audit.jsonl`): a run event with the full context of what it is
 * about, as the README promises: the run and plan always; a task's operation its task; a
 * session's operation (a spawn, a result, an update, a permission at any hop, a question, a
 * management act) its task, worker, sub-task, parent, depth and agent type.
 */
export const AuditRecord = RunEvent.superRefine((record, ctx) => {
  for (const field of auditFieldsOf(record.type)) {
    if (record[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a ${record.type} record must carry ${field}` });
  }
});
