/**
 * Long runs as MCP tasks: the Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) of the
 * 2026-07-28 revision. A client that declares the extension in a request's capabilities gets
 * `start_run` answered with a task handle (`resultType: "task"`) whose id is the run's; it follows
 * the run with `tasks/get` (working; input_required with the run's permissions and questions as
 * elicitation requests; completed with the tool result get_result gives; cancelled; failed when
 * a2a itself broke), answers those with `tasks/update`, and stops the run with `tasks/cancel`.
 *
 * The v2 server SDK (2.4) has no task runtime: it serves `tasks/get` and `tasks/cancel` on the
 * 2026-07-28 era only to handlers registered with explicit schemas (the extension reuses those two
 * names), `tasks/update` like any custom method, and forwards a tool's `resultType: "task"`
 * unchanged. The tasks are the runs of McpRuns (in memory: a restarted server knows none).
 */
import { inlineIssues } from '../../actors/errors.js';
import { CLIENT_CAPABILITIES_META_KEY, MissingRequiredClientCapabilityError, ProtocolError, ProtocolErrorCode, type McpServer, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { HumanItem } from '../../machines/protocol/index.js';
import { redactText } from '../../actors/config/secrets.js';
import { errorText } from '../../machines/errorText.js';
import { endedReply, progressLine, type HeldRun, type McpRuns } from './serverRuns.js';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** How often a client should poll `tasks/get` (ms): a run's steps take seconds. */
export const TASK_POLL_MS = 1_000;
const By = 'mcp';

/** Whether the request's client declared the Tasks extension (in the 2026-07-28 `_meta` envelope). */
export function declaresTasks(ctx: ServerContext): boolean {
  // the SDK's type of the envelope is empty ({}): its keys are read as the wire names them
  const envelope = ctx.mcpReq.envelope as Record<string, unknown> | undefined;
  const capabilities = envelope?.[CLIENT_CAPABILITIES_META_KEY] as { extensions?: Record<string, unknown> } | undefined;
  return capabilities?.extensions?.[TASKS_EXTENSION] !== undefined;
}

function requireTasks(ctx: ServerContext, method: string): void {
  if (declaresTasks(ctx)) return;
  throw new MissingRequiredClientCapabilityError(
    { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
    `${method} needs the Tasks extension: declare "${TASKS_EXTENSION}" under extensions in the client's capabilities`,
  );
}

/** The run behind a task, or the JSON-RPC error the extension prescribes for an unknown task (-32602). */
function heldTask(runs: McpRuns, taskId: string): HeldRun {
  const held = runs.local(taskId);
  if (!held?.task) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Failed to retrieve task: no task "${taskId.slice(0, 128)}" on this server (a task is a run start_run started as one here; list_runs lists every run of the workspace)`);
  return held;
}

/** A person's item as the elicitation request that asks for its answer (the key is the item's id). */
function inputRequestOf(runId: string, item: HumanItem) {
  const where = `a2a run ${runId}, task ${item.taskId}${item.agentType ? ` (${item.agentType})` : ''}`;
  return item.kind === 'permission'
    ? {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: redactText(`${where} asks permission: ${item.title}`),
          requestedSchema: {
            type: 'object',
            properties: { approved: { type: 'boolean', title: 'Allow it', description: 'true allows it, false denies it' }, reason: { type: 'string', title: 'Why (optional)' } },
            required: ['approved'],
          },
        },
      }
    : {
        method: 'elicitation/create',
        params: {
          mode: 'form',
          message: redactText(`${where} asks: ${item.question ?? item.title}`),
          requestedSchema: { type: 'object', properties: { text: { type: 'string', title: 'Answer' } }, required: ['text'] },
        },
      };
}

/** The task's state now, as `tasks/get` answers it (the extension's DetailedTask). */
export function detailedTask(runId: string, held: HeldRun): Record<string, unknown> {
  const task = held.task!;
  const base = { taskId: runId, createdAt: new Date(task.createdAt).toISOString(), lastUpdatedAt: new Date(task.updatedAt).toISOString(), ttlMs: null, pollIntervalMs: TASK_POLL_MS };
  if (held.error) return { ...base, status: 'failed', statusMessage: redactText(`run ${runId} failed inside a2a: ${held.error}`), error: { code: ProtocolErrorCode.InternalError, message: redactText(held.error) } };
  if (held.outcome?.status === 'cancelled') return { ...base, status: 'cancelled', statusMessage: `run ${runId} cancelled` };
  const ended = endedReply(runId, held);
  // a run that failed is the tool's failure (isError), not the protocol's: the task completes
  if (ended) return { ...base, status: 'completed', statusMessage: `run ${runId} ${held.outcome!.status}`, result: { ...ended, ...(held.outcome!.status === 'failed' ? { isError: true } : {}) } };
  const pending = held.run.pending();
  const statusMessage = redactText(progressLine(held.run));
  if (pending.length) return { ...base, status: 'input_required', statusMessage, inputRequests: Object.fromEntries(pending.map((item) => [item.id, inputRequestOf(runId, item)])) };
  return { ...base, status: 'working', statusMessage };
}

/** `start_run`'s answer for a client with the extension: the task, as it is the moment it exists. */
export function createTaskResult(runs: McpRuns, runId: string): Record<string, unknown> {
  const { result: _none, inputRequests: _later, error: _neither, ...task } = detailedTask(runId, heldTask(runs, runId));
  return { resultType: 'task', ...task };
}

/** An elicitation's answer in `tasks/update` (MCP's ElicitResult). */
const ElicitAnswer = z.object({ action: z.enum(['accept', 'decline', 'cancel']), content: z.record(z.string(), z.unknown()).optional() });
const PermissionContent = z.object({ approved: z.boolean(), reason: z.string().optional() });
const QuestionContent = z.object({ text: z.string() });


/** `tasks/get`, `tasks/update` and `tasks/cancel` on `server` (a 2026-07-28 instance). */
export function registerTaskMethods(server: McpServer, runs: McpRuns): void {
  const TaskParams = z.looseObject({ taskId: z.string().min(1) });

  server.server.setRequestHandler('tasks/get', { params: TaskParams }, async ({ taskId }, ctx) => {
    requireTasks(ctx, 'tasks/get');
    return detailedTask(taskId, heldTask(runs, taskId));
  });

  server.server.setRequestHandler('tasks/update', { params: TaskParams }, async ({ taskId }, ctx) => {
    requireTasks(ctx, 'tasks/update');
    const held = heldTask(runs, taskId);
    if (ctx.mcpReq.droppedInputResponseKeys?.length) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `inputResponses: ${ctx.mcpReq.droppedInputResponseKeys.map((k) => `"${k.slice(0, 64)}"`).join(', ')} not an elicitation answer ({ "action": "accept" | "decline" | "cancel", "content": {…} }); nothing was answered`);
    const pending = new Map((held.outcome || held.error ? [] : held.run.pending()).map((item) => [item.id, item]));
    // every answer is checked before any is given: a bad one changes nothing
    const answers: Array<{ id: string; approved?: boolean; text?: string; reason?: string }> = [];
    for (const [key, value] of Object.entries(ctx.mcpReq.inputResponses ?? {})) {
      const item = pending.get(key);
      // the extension: answers to keys not outstanding (answered already, never asked) are ignored
      if (!item) continue;
      const answer = ElicitAnswer.safeParse(value);
      if (!answer.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `inputResponses.${key}: ${inlineIssues(answer.error.issues)} (an elicitation's answer: { "action": "accept" | "decline" | "cancel", "content"?: {…} }); nothing was answered`);
      // cancel: the person dismissed it, and a question declined has no answer: it stays waiting
      if (answer.data.action === 'cancel' || (answer.data.action === 'decline' && item.kind === 'question')) continue;
      if (answer.data.action === 'decline') {
        answers.push({ id: key, approved: false, reason: 'declined through MCP' });
        continue;
      }
      const content = (item.kind === 'permission' ? PermissionContent : QuestionContent).safeParse(answer.data.content ?? {});
      if (!content.success) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `inputResponses.${key}.content: ${inlineIssues(content.error.issues)} (${item.kind === 'permission' ? 'a permission takes { "approved": true | false, "reason"?: "…" }' : 'a question takes { "text": "…" }'}); nothing was answered`);
      answers.push({ id: key, ...content.data });
    }
    for (const answer of answers) {
      try {
        held.run.control({ command: 'answer', by: By, ...answer });
      } catch (error) {
        // answered meanwhile (by a person, a timeout, another client): say so rather than drop it
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, redactText(`inputResponses.${answer.id}: ${errorText(error)}`));
      }
    }
    return {};
  });

  server.server.setRequestHandler('tasks/cancel', { params: TaskParams }, async ({ taskId }, ctx) => {
    requireTasks(ctx, 'tasks/cancel');
    const held = heldTask(runs, taskId);
    // acknowledged at once; tasks/get shows "cancelled" once every worker has reported
    if (!held.outcome && !held.error) held.run.stop('cancelled through MCP (tasks/cancel)');
    return {};
  });
}
