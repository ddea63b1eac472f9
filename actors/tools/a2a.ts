/**
 * The A2A tools (seed 001 §2.1 plus check/send/cancel of seed 002). Each has a zod schema for its
 * arguments; executing one returns what the model sees and, where the session machine must act
 * (spawn, await, complete, notify, …), an effect. Tools decide; the machine does.
 */
import { z } from 'zod';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { A2AError } from '../errors.js';
import { childPermissions } from '../people/permissions.js';
import { MAILBOX_LIMIT } from '../session/family.js';
import type { ToolContext, ToolDefinition } from './types.js';
import { errorText } from '../../machines/errorText.js';

const AgentTypeArg = z.string().min(1).describe('Agent type, e.g. "@coder", "@reviewer", "claude:architect". See a2a_list_agents.');
const SubtaskArgs = z.object({
  agentType: AgentTypeArg,
  prompt: z.string().min(1).describe('What the sub-task must do; it sees only this, so include the context it needs.'),
  expectedOutput: z.string().min(1).describe('What you expect back (format and content).'),
  model: z.string().min(1).optional().describe('Model profile (or model name) for this sub-task, instead of the one its agent type is assigned.'),
  taskType: z.string().min(1).optional().describe('The kind of work (e.g. "code", "review"); models may be assigned per task type. Default: yours.'),
  targetFiles: z.array(z.string().min(1)).optional().describe('Files the sub-task will change, so that siblings do not collide.'),
});

/** What all children of one session share; computed once per parent (a fan-out may be 10k wide). */
const sharedByParent = new WeakMap<SessionSpec, Pick<SessionSpec, 'owner' | 'lineage' | 'permissions'>>();
function shared(spec: SessionSpec): Pick<SessionSpec, 'owner' | 'lineage' | 'permissions'> {
  let found = sharedByParent.get(spec);
  if (!found) {
    found = {
      owner: { ownerType: spec.spawnContext === 'orchestrator' ? 'worker' : 'agent', ownerId: spec.id },
      lineage: [...spec.lineage, { agentName: spec.agent.agentName, prompt: spec.prompt }],
      permissions: childPermissions(spec.permissions),
    };
    sharedByParent.set(spec, found);
  }
  return found;
}

/**
 * A child's correlation, written out field by field: V8 gives an object made with a spread and
 * more fields (`{ ...c, subTaskId }`) a hidden class of its own past the first few, about 300
 * bytes each, and a fan-out makes one per child.
 */
function childCorrelation(c: SessionSpec['correlation'], subTaskId: string, parentId: string, depth: number): SessionSpec['correlation'] {
  return { runId: c.runId, planId: c.planId, taskId: c.taskId, workerId: c.workerId, worktreePath: c.worktreePath, subTaskId, parentId, depth, ...(c.runBox ? { runBox: c.runBox } : {}) };
}

/** Builds the child's session spec; the agent type is parsed and validated here, once. */
export function childSpec(ctx: ToolContext, args: z.infer<typeof SubtaskArgs>): SessionSpec {
  const { spec, registry } = ctx;
  const { parsed } = registry.resolve(args.agentType);
  const caller = registry.get(spec.agent.agentName).capability;
  if (caller.maxSubTaskDepth !== undefined && spec.depth + 1 > caller.maxSubTaskDepth) {
    throw new A2AError(
      'DEPTH_LIMIT_EXCEEDED',
      `@${caller.id} may spawn sub-tasks down to depth ${caller.maxSubTaskDepth} (its maxSubTaskDepth); a child of yours would be at depth ${spec.depth + 1}.`,
    );
  }
  const id = ctx.ids.child(spec);
  return {
    id,
    role: 'subtask',
    agent: parsed,
    prompt: args.prompt,
    expectedOutput: args.expectedOutput,
    ...(args.model ? { model: args.model } : {}),
    depth: spec.depth + 1,
    maxDepth: spec.maxDepth,
    spawnContext: spec.spawnContext,
    ...shared(spec),
    correlation: childCorrelation(spec.correlation, id, spec.id, spec.depth + 1),
    ...(args.targetFiles ? { targetFiles: args.targetFiles } : {}),
    ...(args.taskType ? { taskType: args.taskType } : spec.taskType ? { taskType: spec.taskType } : {}),
    ...(spec.limits.subtaskTimeoutMs ? { timeoutMs: spec.limits.subtaskTimeoutMs } : {}),
    limits: spec.limits,
    idle: spec.idle,
  };
}

function requireChildren(ctx: ToolContext, ids: string[]): void {
  const family = ctx.family;
  const unknown = ids.filter((id) => !family?.has(id));
  if (unknown.length > 0) {
    const known = family?.ids() ?? [];
    throw new A2AError(
      'NOT_FOUND',
      `Unknown sub-task id(s): ${unknown.join(', ')}. ${known.length ? `Your sub-tasks: ${known.join(', ')}` : 'You have not spawned any sub-task.'}`,
    );
  }
}

const listAgents: ToolDefinition<z.ZodObject<{}>> = {
  name: 'a2a_list_agents',
  inline: true,
  description: 'List the agent types you can delegate to, with what each is good and bad at.',
  parameters: z.object({}),
  execute: (_args, ctx) => ({
    isError: false,
    content: JSON.stringify(
      ctx.registry.list().map((a) => ({
        type: `@${a.capability.id}`,
        description: a.capability.description,
        strengths: a.capability.strengths,
        weaknesses: a.capability.weaknesses,
        canSpawnSubTasks: a.capability.canSpawnSubTasks,
      })),
    ),
  }),
};

const SpawnSubtaskArgs = SubtaskArgs.extend({
  blocking: z.boolean().default(true).describe('Wait for the result (default) or return the id at once.'),
  timeoutMs: z.number().int().positive().optional().describe('How long a blocking spawn waits before returning what there is.'),
});
const spawnSubtask: ToolDefinition<typeof SpawnSubtaskArgs> = {
  name: 'a2a_spawn_subtask',
  inline: true,
  description:
    'Spawn one sub-task with its own agent type. With blocking (default true) you get its result as this tool result; with blocking false you get its id at once and the result arrives as an update.',
  parameters: SpawnSubtaskArgs,
  execute: (args, ctx) => {
    const spec = childSpec(ctx, args);
    return {
      isError: false,
      content: '',
      effect: {
        kind: 'spawn',
        requestId: spec.id,
        specs: [spec],
        blocking: args.blocking,
        timeoutMs: args.timeoutMs ?? ctx.spec.limits.awaitTimeoutMs,
      },
    };
  },
};

const ParallelArgs = z.object({
  subtasks: z.array(SubtaskArgs).min(1).describe('The sub-tasks to start now, each with its own agent type.'),
});
const spawnParallel: ToolDefinition<typeof ParallelArgs> = {
  name: 'a2a_spawn_parallel_subtasks',
  inline: true,
  description:
    'Spawn several sub-tasks at once and return their ids immediately. You keep working; each result arrives as an update before your next step, one by one as they finish. Use a2a_await_subtasks to wait explicitly.',
  parameters: ParallelArgs,
  execute: (args, ctx) => {
    const problems: string[] = [];
    const specs: SessionSpec[] = [];
    args.subtasks.forEach((s, i) => {
      try {
        specs.push(childSpec(ctx, s));
      } catch (e) {
        problems.push(`subtasks[${i}]: ${errorText(e)}`);
      }
    });
    if (problems.length > 0) {
      throw new A2AError('VALIDATION_ERROR', `Nothing was spawned:\n${problems.join('\n')}`);
    }
    return {
      isError: false,
      content: '',
      effect: { kind: 'spawn', requestId: specs.map((s) => s.id).join(','), specs, blocking: false, timeoutMs: ctx.spec.limits.awaitTimeoutMs },
    };
  },
};

const AwaitArgs = z.object({
  ids: z.array(z.string().min(1)).min(1).describe('Sub-task ids to wait for.'),
  timeoutMs: z.number().int().positive().optional().describe('Stop waiting after this long and return the results so far.'),
});
const awaitSubtasks: ToolDefinition<typeof AwaitArgs> = {
  name: 'a2a_await_subtasks',
  inline: true,
  description:
    'Wait until the given sub-tasks have finished (or the timeout passes) and return their results; those still running are listed. Finished results are cached: calling this again for a finished id returns its result at once.',
  parameters: AwaitArgs,
  execute: (args, ctx) => {
    requireChildren(ctx, args.ids);
    return { isError: false, content: '', effect: { kind: 'await', ids: args.ids, timeoutMs: args.timeoutMs ?? ctx.spec.limits.awaitTimeoutMs } };
  },
};

const CheckArgs = z.object({
  subTaskIds: z.array(z.string().min(1)).min(1).optional().describe('Only these sub-tasks\' updates (their ids); all of them when omitted.'),
});
const checkUpdates: ToolDefinition<typeof CheckArgs> = {
  name: 'a2a_check_updates',
  idempotent: true,
  description:
    'Return the updates from your sub-tasks that arrived since your last step (results, questions, idle answers), without waiting. Give subTaskIds to see only those sub-tasks\' updates; the others arrive with a later step.',
  parameters: CheckArgs,
  execute: (args, ctx) => {
    const live = ctx.family?.live() ?? 0;
    const only = args.subTaskIds ? new Set(args.subTaskIds) : null;
    if (only) {
      const unknown = [...only].filter((id) => !ctx.family?.has(id));
      if (unknown.length > 0) {
        return { isError: true, content: `${unknown.join(', ')} ${unknown.length === 1 ? 'is not one of your sub-tasks' : 'are not your sub-tasks'}; yours: ${ctx.family?.ids().join(', ') || 'none'}` };
      }
    }
    const updates = only ? ctx.updates.filter((u) => only.has(u.subTaskId)) : ctx.updates;
    if (updates.length === 0) {
      return { isError: false, content: JSON.stringify({ updates: [], stillRunning: live }) };
    }
    // acknowledging the batch tells what was dropped before it: said here, or never
    const dropped = ctx.dropped ? { droppedStatusUpdates: ctx.dropped, note: `${ctx.dropped} older status update(s) were dropped: at most ${MAILBOX_LIMIT} wait for you` } : {};
    return { isError: false, content: JSON.stringify({ updates, stillRunning: live, ...dropped }), effect: { kind: 'ackUpdates', ...(only ? { subTaskIds: [...only] } : {}) } };
  },
};

const NotifyArgs = z.object({
  type: z.enum(['status', 'question', 'error']).describe('status: progress report; question: you need an answer; error: something went wrong.'),
  message: z.string().min(1),
});
const notify: ToolDefinition<typeof NotifyArgs> = {
  name: 'a2a_notify_orchestrator',
  inline: true,
  description: 'Send a status report, a question or an error report to whoever owns your task (your parent, or the orchestrator for a worker). Answers arrive as messages.',
  parameters: NotifyArgs,
  execute: (args, ctx) => ({
    isError: false,
    content: `Delivered to ${ctx.spec.owner.ownerId}.${args.type === 'question' ? ' The answer will arrive as a message; continue with what you can meanwhile.' : ''}`,
    effect: { kind: 'notify', notification: args.type, message: args.message },
  }),
};

const CompleteArgs = z.object({
  status: z.enum(['success', 'partial', 'failed']).default('success'),
  output: z.string().describe('Your result, in the form that was expected.'),
  outputFile: z.string().optional().describe('A file that holds the result, if you wrote one.'),
  metadata: z.record(z.string(), z.unknown()).optional(),
  error: z.string().optional().describe('What went wrong, for partial or failed.'),
});
const complete: ToolDefinition<typeof CompleteArgs> = {
  name: 'a2a_subtask_complete',
  inline: true,
  description: 'Finish your task and report its result to whoever owns it. This ends your session.',
  parameters: CompleteArgs,
  execute: (args) => ({
    isError: false,
    content: 'Result delivered.',
    effect: {
      kind: 'complete',
      status: args.status,
      output: args.output,
      ...(args.outputFile ? { outputFile: args.outputFile } : {}),
      ...(args.metadata ? { metadata: args.metadata } : {}),
      ...(args.error ? { error: args.error } : {}),
    },
  }),
};

const SendArgs = z.object({
  subTaskId: z.string().min(1),
  message: z.string().min(1).describe('An answer to its question, more information, or new instructions.'),
});
const sendMessage: ToolDefinition<typeof SendArgs> = {
  name: 'a2a_send_subtask_message',
  inline: true,
  description: 'Send a message to one of your running sub-tasks (answer its question, unblock it after an idle inquiry). It wakes up with your message.',
  parameters: SendArgs,
  execute: (args, ctx) => {
    requireChildren(ctx, [args.subTaskId]);
    if (ctx.family?.status(args.subTaskId) === 'settled') {
      throw new A2AError('INVALID_STATE_TRANSITION', `Sub-task ${args.subTaskId} has already finished; its result: ${JSON.stringify(ctx.family.result(args.subTaskId))}`);
    }
    return { isError: false, content: `Message sent to ${args.subTaskId}.`, effect: { kind: 'message', to: args.subTaskId, text: args.message } };
  },
};

const CancelArgs = z.object({
  ids: z.array(z.string().min(1)).min(1),
  reason: z.string().min(1),
});
const cancel: ToolDefinition<typeof CancelArgs> = {
  name: 'a2a_cancel_subtask',
  inline: true,
  description: 'Cancel running sub-tasks. Each still reports a result (cancelled) as an update.',
  parameters: CancelArgs,
  execute: (args, ctx) => {
    requireChildren(ctx, args.ids);
    return { isError: false, content: `Cancelling ${args.ids.join(', ')}.`, effect: { kind: 'cancel', ids: args.ids, reason: args.reason } };
  },
};

/** Tools that only make sense for a session that may still spawn children. */
export const SPAWNING_TOOLS: ReadonlySet<string> = new Set([
  'a2a_spawn_subtask',
  'a2a_spawn_parallel_subtasks',
  'a2a_await_subtasks',
  'a2a_send_subtask_message',
  'a2a_cancel_subtask',
]);

export const a2aTools: ReadonlyArray<ToolDefinition<z.ZodType>> = [
  listAgents,
  spawnSubtask,
  spawnParallel,
  awaitSubtasks,
  checkUpdates,
  notify,
  complete,
  sendMessage,
  cancel,
] as unknown as ReadonlyArray<ToolDefinition<z.ZodType>>;
