/**
 * Tools a program adds in code (the library's `defineTool`): a name, a zod schema and a run
 * function. They are offered to the agents that list them, their arguments are validated like a
 * built-in tool's, and every call asks its permission action of the session's level, then the
 * parent, the orchestrator's matrix and a person, like `run_command` does.
 */
import { z } from 'zod';
import { PermissionAction, type ToolOutcome } from '../../machines/protocol/index.js';
import { A2AError, describeIssues } from '../errors.js';
import type { ToolDefinition } from './types.js';

/** What a program's tool is given when it runs. */
export interface CustomToolContext {
  /** Aborted when the session is cancelled or ends while the tool runs: stop, and return or throw. */
  signal: AbortSignal;
  /** The session's worktree (the directory its file tools are confined to). */
  worktree: string;
  runId: string;
  /** The calling session (`w-login.2`) and its agent type (`@coder`). */
  sessionId: string;
  agentType: string;
  depth: number;
  /**
   * This call's key, the same if the call is made again after a restore (run, session, call id):
   * pass it on to the service you call (an `Idempotency-Key` header), or check it before acting,
   * so that a repeat is recognised. A call that had started when the process stopped, with no
   * recorded result, is not made again unless the tool is `idempotent` (see docs/guide/durability.md, "Durable effects").
   */
  idempotencyKey: string;
}

export interface CustomTool<S extends z.ZodType = z.ZodType> {
  /** Letters, digits, "_" and "-" (at most 64, not starting with `a2a_` or `mcp__`). */
  name: string;
  /** What the model reads to decide when to call it. */
  description: string;
  /** Its arguments: a zod 4 object schema (sent to the model as JSON Schema). */
  parameters: S;
  /**
   * The permission action a call asks (`custom_tool` unless said: auto_approve by default), or
   * `false` for a tool that only reads and never asks. A denied call is not run.
   */
  permission?: PermissionAction | false;
  /**
   * Running it twice has the effect of running it once (it reads, or sets a state): a call in
   * flight when the process stopped runs again on resume. Default false: such a call is reported
   * to the model as "outcome unknown", never repeated behind its back.
   */
  idempotent?: boolean;
  /** A line for whoever decides (default: the tool's name and its arguments). */
  describe?(args: z.output<S>): string;
  /** The result the model reads: text, or `{ content, isError }`. Throwing is a tool error too. */
  run(args: z.output<S>, context: CustomToolContext): string | { content: string; isError?: boolean } | Promise<string | { content: string; isError?: boolean }>;
}

export const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const CustomToolShape = z.strictObject({
  name: z
    .string()
    .regex(TOOL_NAME, 'letters, digits, "_" and "-", 1 to 64 characters')
    .refine((n) => !n.startsWith('a2a_') && !n.startsWith('mcp__'), 'names starting with "a2a_" or "mcp__" are a2a\'s own'),
  description: z.string().trim().min(1, 'say what the tool does: the model decides from it'),
  parameters: z.custom<z.ZodType>((v) => v instanceof z.ZodType || (typeof v === 'object' && v !== null && '_zod' in v), 'a zod 4 schema'),
  permission: z.union([PermissionAction, z.literal(false)]).optional(),
  idempotent: z.boolean().optional(),
  describe: z.custom<(args: unknown) => string>((v) => typeof v === 'function', 'a function').optional(),
  run: z.custom<CustomTool['run']>((v) => typeof v === 'function', 'a function (args, { signal, idempotencyKey, … }) => result'),
});

/** The most of a call's arguments a permission request shows. */
const DETAIL_CHARS = 500;

/**
 * Checks a program's tool and makes it a catalog tool. Bad input throws a CONFIGURATION_INVALID
 * naming the field; the JSON Schema is made here, so a schema zod cannot express fails now.
 */
export function defineTool<S extends z.ZodType>(tool: CustomTool<S>): ToolDefinition<S> {
  const checked = CustomToolShape.safeParse(tool);
  if (!checked.success) {
    const name = typeof (tool as { name?: unknown })?.name === 'string' ? ` "${(tool as { name: string }).name}"` : '';
    throw new A2AError('CONFIGURATION_INVALID', `defineTool${name}: invalid tool:\n${describeIssues(checked.error.issues)}\nA tool is { name, description, parameters: z.object({…}), run(args, { signal }) }.`, { where: 'defineTool' });
  }
  let schema: Record<string, unknown>;
  try {
    schema = z.toJSONSchema(tool.parameters, { io: 'input' }) as Record<string, unknown>;
  } catch (error) {
    throw new A2AError('CONFIGURATION_INVALID', `defineTool "${tool.name}": its parameters cannot be sent to a model as JSON Schema: ${(error as Error).message}`, { where: 'parameters' });
  }
  if (schema.type !== 'object') {
    throw new A2AError('CONFIGURATION_INVALID', `defineTool "${tool.name}": parameters must be a z.object({…}) (models take named arguments), got a schema of type ${JSON.stringify(schema.type ?? 'unknown')}`, { where: 'parameters' });
  }
  const action = tool.permission === undefined ? 'custom_tool' : tool.permission;
  return {
    name: tool.name,
    description: tool.description,
    parameters: tool.parameters,
    ...(tool.idempotent ? { idempotent: true } : {}),
    async execute(args, ctx): Promise<ToolOutcome> {
      if (action !== false) {
        const detail = clip(tool.describe ? safeDescribe(tool, args) : `${tool.name} ${JSON.stringify(args)}`);
        const answer = await ctx.permit({ action, detail });
        if (!answer.approved) {
          throw new A2AError('TOOL_NOT_ALLOWED', `Permission ${action} for ${tool.name} was denied by ${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}. Nothing was run.`);
        }
      }
      if (ctx.signal.aborted) return { isError: true, content: `${tool.name} was not run: the session was cancelled while its permission was asked` };
      const context: CustomToolContext = {
        signal: ctx.signal,
        worktree: ctx.worktree,
        runId: ctx.spec.correlation.runId,
        sessionId: ctx.spec.id,
        agentType: ctx.spec.agent.raw,
        depth: ctx.spec.depth,
        idempotencyKey: ctx.idempotencyKey ?? `a2a:${ctx.spec.correlation.runId}:${ctx.spec.id}`,
      };
      try {
        const result = await tool.run(args, context);
        return outcomeOf(tool.name, result);
      } catch (error) {
        if (error instanceof A2AError) throw error;
        // the program's error reaches the model as a tool error, never as a crashed session
        return { isError: true, content: `${tool.name} failed: ${error instanceof Error ? error.message : String(error)}` };
      }
    },
  };
}

function safeDescribe<S extends z.ZodType>(tool: CustomTool<S>, args: z.output<S>): string {
  try {
    return String(tool.describe!(args));
  } catch (error) {
    return `${tool.name} ${JSON.stringify(args)} (its describe() threw: ${(error as Error).message})`;
  }
}

function clip(text: string): string {
  return text.length <= DETAIL_CHARS ? text : `${text.slice(0, DETAIL_CHARS)}… (${text.length} characters)`;
}

const ResultShape = z.union([z.string(), z.strictObject({ content: z.string(), isError: z.boolean().optional() })]);

function outcomeOf(name: string, result: unknown): ToolOutcome {
  const parsed = ResultShape.safeParse(result);
  if (!parsed.success) {
    return { isError: true, content: `${name} returned something that is not a result: expected a string or { content: string, isError?: boolean }:\n${describeIssues(parsed.error.issues)}` };
  }
  return typeof parsed.data === 'string' ? { content: parsed.data, isError: false } : { content: parsed.data.content, isError: parsed.data.isError === true };
}
