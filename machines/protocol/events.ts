/**
 * Run events: one JSON object per line in a run's log, `a2a run --json` and the monitors.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { JsonObject } from './common.js';

// ---------------------------------------------------------------------------------------------
// Run events: one JSON object per line for `a2a run --json` and the monitors

/**
 * Every run event type, once, with what the rest is derived from: whether the audit trail keeps it
 * (`audited`) and what it is about (`about`: the run as a whole, a task and its branch, or one
 * session), which says what context an audit record of it must carry. The enum, the audited set
 * and the task events are read from this table; the data of each type is in machines/runEvents.ts,
 * keyed by these types.
 */
export const RUN_EVENT_KINDS = {
  'run.started': { audited: true, about: 'run' },
  'run.finished': { audited: true, about: 'run' },
  'worker.deployed': { audited: true, about: 'session' },
  'task.skipped': { audited: true, about: 'task' },
  'task.completed': { audited: true, about: 'task' },
  'worktree.created': { audited: true, about: 'task' },
  'worktree.removed': { audited: true, about: 'task' },
  'branch.committed': { audited: true, about: 'task' },
  'branch.merged': { audited: true, about: 'task' },
  'branch.conflict': { audited: true, about: 'task' },
  'branch.pushed': { audited: true, about: 'task' },
  'pr.created': { audited: true, about: 'task' },
  'review.requested': { audited: true, about: 'task' },
  'changes.requested': { audited: true, about: 'task' },
  'branch.done': { audited: true, about: 'task' },
  'session.state': { audited: false, about: 'session' },
  'subtask.spawned': { audited: true, about: 'session' },
  'subtask.queued': { audited: true, about: 'session' },
  'subtask.result': { audited: true, about: 'session' },
  'update.queued': { audited: true, about: 'session' },
  'inquiry.sent': { audited: true, about: 'session' },
  'inquiry.answered': { audited: true, about: 'session' },
  'model.called': { audited: false, about: 'session' },
  'model.truncated': { audited: false, about: 'session' },
  'tool.called': { audited: false, about: 'session' },
  /** What the runtime put into a session's conversation (child results, inquiries, answers, notes): its transcript's user turns. */
  'message.injected': { audited: false, about: 'session' },
  'limit.hit': { audited: true, about: 'session' },
  'circuit.open': { audited: true, about: 'session' },
  'permission.requested': { audited: true, about: 'session' },
  'permission.forwarded': { audited: true, about: 'session' },
  'permission.decided': { audited: true, about: 'session' },
  'question.asked': { audited: true, about: 'session' },
  'question.answered': { audited: true, about: 'session' },
  'human.asked': { audited: true, about: 'session' },
  'human.answered': { audited: true, about: 'session' },
  'inbox.accepted': { audited: true, about: 'session' },
  'budget.reached': { audited: true, about: 'session' },
  'model.switched': { audited: true, about: 'session' },
  'subtask.placed': { audited: false, about: 'session' },
  'host.joined': { audited: false, about: 'session' },
  'host.lost': { audited: false, about: 'session' },
  'session.restored': { audited: false, about: 'session' },
  'stuck.detected': { audited: true, about: 'session' },
  'worker.reassigned': { audited: true, about: 'session' },
  'worker.redirected': { audited: true, about: 'session' },
  'worker.reinitialized': { audited: true, about: 'session' },
  'worker.resumed': { audited: true, about: 'session' },
  'run.stopped': { audited: true, about: 'run' },
  'run.resumed': { audited: true, about: 'run' },
  'inbox.handled': { audited: false, about: 'session' },
  'workflow.state': { audited: false, about: 'session' },
  'workflow.decision': { audited: false, about: 'session' },
  'workflow.refused': { audited: false, about: 'session' },
  'workflow.completed': { audited: false, about: 'session' },
  'artifact.created': { audited: false, about: 'session' },
  'artifact.updated': { audited: false, about: 'session' },
  /** A task `a2a serve --a2a` serves, in the run it started: a change of its state, a message in (the client's) or out (its status). */
  'a2a.served': { audited: true, about: 'run' },
  /** A task a session delegated to a remote A2A agent: a change of its state on that agent's server. */
  'a2a.delegated': { audited: true, about: 'session' },
  'run.paused': { audited: false, about: 'session' },
  'run.unpaused': { audited: false, about: 'session' },
  /** An agent's MCP server: connected (its tools listed), failed (to start, died, timed out), a tool called. */
  'mcp.connected': { audited: true, about: 'session' },
  'mcp.failed': { audited: true, about: 'session' },
  'mcp.called': { audited: true, about: 'session' },
  /** An MCP server asked for input during a call (elicitation), and how it was answered (accept, decline, cancel). */
  'mcp.elicitation.asked': { audited: true, about: 'session' },
  'mcp.elicitation.answered': { audited: true, about: 'session' },
  /** A call's progress as its server reports it (at most one a second per call). */
  'mcp.progress': { audited: false, about: 'session' },
  /** A restored session's tool call that had started and has no recorded result: not run again, its outcome unknown. */
  'effect.in_doubt': { audited: true, about: 'session' },
  'warning': { audited: false, about: 'session' },
} as const satisfies Record<string, { audited: boolean; about: 'run' | 'task' | 'session' }>;

const RUN_EVENT_TYPES = Object.keys(RUN_EVENT_KINDS) as Array<keyof typeof RUN_EVENT_KINDS>;
export const RunEventType = z.enum(RUN_EVENT_TYPES as [keyof typeof RUN_EVENT_KINDS, ...Array<keyof typeof RUN_EVENT_KINDS>]);

/** Run events about a task and its branch, not one session (audited with their plan and task). */
export const TASK_EVENT_TYPES: ReadonlyArray<keyof typeof RUN_EVENT_KINDS> = RUN_EVENT_TYPES.filter((t) => RUN_EVENT_KINDS[t].about === 'task');

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

/**
 * What each kind of audit record must carry, beyond the run id: the plan for an operation about
 * the run as a whole; the plan and the task for one about a task and its branch; the whole
 * context for one about a session.
 */
export function auditFieldsOf(type: string): Array<keyof RunEvent> {
  const about = (RUN_EVENT_KINDS as Record<string, { about: string } | undefined>)[type]?.about ?? 'session';
  if (about === 'run') return ['planId'];
  if (about === 'task') return ['planId', 'taskId'];
  return ['planId', 'taskId', 'workerId', 'subTaskId', 'parentId', 'depth', 'agentType'];
}

/**
 * A record of the audit trail (`audit.jsonl`): a run event with the full context of what it is
 * about, as the docs promise: the run and plan always; a task's operation its task; a
 * session's operation (a spawn, a result, an update, a permission at any hop, a question, a
 * management act) its task, worker, sub-task, parent, depth and agent type.
 */
export const AuditRecord = RunEvent.superRefine((record, ctx) => {
  for (const field of auditFieldsOf(record.type)) {
    if (record[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: `a ${record.type} record must carry ${field}` });
  }
});
