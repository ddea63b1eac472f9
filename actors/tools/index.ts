/**
 * The tool catalog: which tools exist, which ones a session gets (its agent's own list, minus the
 * spawning tools once it can no longer spawn), their JSON schemas for the model, and dispatch
 * with argument validation. Every failure is a tool error the model can read and act on.
 */
import { z } from 'zod';
import type { ToolOutcome } from '../../machines/ports.js';
import type { SessionSpec, ToolCall, ToolSpec } from '../../machines/protocol/index.js';
import { A2AError, describeIssues } from '../errors.js';
import { redactSecrets } from '../config/secrets.js';
import type { AgentDefinition } from '../config/registry.js';
import { a2aTools, SPAWNING_TOOLS } from './a2a.js';
import { codingTools } from './coding.js';
import { artifactTools } from './artifacts.js';
import type { ExternalTools, ToolContext, ToolDefinition } from './types.js';

export type { ExternalTools, IdGenerator, ToolContext, ToolDefinition } from './types.js';
export { childIds } from './types.js';

/** The names of tools from MCP servers: `mcp__<server>__<tool>`. */
export const EXTERNAL_PREFIX = 'mcp__';

export class ToolCatalog {
  readonly #tools = new Map<string, ToolDefinition<z.ZodType>>();
  readonly #specs = new Map<string, ToolSpec>();
  /** A session's tool list depends on its agent and its depth only: computed once for each (10k siblings share one). */
  readonly #allowed = new WeakMap<AgentDefinition, Map<string, string[]>>();

  constructor(tools: ReadonlyArray<ToolDefinition<z.ZodType>> = [...a2aTools, ...codingTools, ...artifactTools]) {
    for (const tool of tools) this.#tools.set(tool.name, tool);
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  /** The deepest level this session's children may reach. */
  static childDepthLimit(definition: AgentDefinition, spec: SessionSpec): number {
    const own = definition.capability.maxSubTaskDepth;
    return own === undefined ? spec.maxDepth : Math.min(spec.maxDepth, own);
  }

  /** The tools this session has: its agent's list; spawning tools only while it may spawn. */
  toolsFor(definition: AgentDefinition, spec: SessionSpec): string[] {
    let byDepth = this.#allowed.get(definition);
    if (!byDepth) this.#allowed.set(definition, (byDepth = new Map()));
    const key = `${spec.depth}/${spec.maxDepth}`;
    let names = byDepth.get(key);
    if (!names) byDepth.set(key, (names = this.#computeTools(definition, spec)));
    return names;
  }

  #computeTools(definition: AgentDefinition, spec: SessionSpec): string[] {
    const canSpawn = definition.capability.canSpawnSubTasks && spec.depth < ToolCatalog.childDepthLimit(definition, spec);
    return definition.capability.tools.filter((t) => this.#tools.has(t) && (canSpawn || !SPAWNING_TOOLS.has(t)));
  }

  spec(name: string): ToolSpec {
    let spec = this.#specs.get(name);
    if (!spec) {
      const tool = this.#tools.get(name)!;
      const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: 'input' }) as Record<string, unknown>;
      spec = { name, description: tool.description, parameters };
      this.#specs.set(name, spec);
    }
    return spec;
  }

  /** A call run in the model's step (see ToolDefinition.inline); an unknown tool only gets an error. */
  isInline(name: string): boolean {
    // an MCP server's tool asks a permission and waits on another process: a step of its own
    if (name.startsWith(EXTERNAL_PREFIX)) return false;
    const tool = this.#tools.get(name);
    return !tool || tool.inline === true;
  }

  /**
   * Whether a call may run twice with the effect of once (see ToolDefinition.idempotent): the
   * tools run in the model's step (coordination: their effects are the actor tree's, which the
   * checkpoint holds), the tools declared so (reads, a program's tool), an MCP tool its server
   * annotates so. An unknown tool only gets an error.
   */
  idempotent(name: string, spec: SessionSpec, external: ExternalTools | null): boolean {
    if (name.startsWith(EXTERNAL_PREFIX)) return external?.idempotent(name, spec) ?? true;
    const tool = this.#tools.get(name);
    return !tool || tool.inline === true || tool.idempotent === true;
  }

  specsFor(definition: AgentDefinition, spec: SessionSpec): ToolSpec[] {
    return this.toolsFor(definition, spec).map((n) => this.spec(n));
  }

  async run(call: ToolCall, definition: AgentDefinition, ctx: ToolContext): Promise<ToolOutcome> {
    if (ctx.external?.handles(call.name)) {
      if (call.argumentsError !== undefined) {
        return toolError(new A2AError('VALIDATION_ERROR', `Invalid arguments for ${call.name}: ${call.argumentsError}. Send the call again with its arguments as one complete JSON object.`));
      }
      return redacted(await ctx.external.run(call, definition, ctx));
    }
    const allowed = this.toolsFor(definition, ctx.spec);
    const tool = this.#tools.get(call.name);
    if (!tool || !allowed.includes(call.name)) {
      const why = !tool
        ? `Unknown tool "${call.name}".`
        : SPAWNING_TOOLS.has(call.name) && definition.capability.tools.includes(call.name)
          ? `"${call.name}" is not available at depth ${ctx.spec.depth}: sub-tasks of this session may not nest deeper (limit ${ToolCatalog.childDepthLimit(definition, ctx.spec)}).`
          : `"${call.name}" is not one of @${definition.capability.id}'s tools.`;
      return toolError(new A2AError('TOOL_NOT_ALLOWED', `${why} Your tools: ${allowed.join(', ') || 'none'}.`));
    }
    if (call.argumentsError !== undefined) {
      // as for arguments that fail the schema: the model reads why and may send the call again
      // (repeated failures open the session's circuit breaker)
      return toolError(
        new A2AError('VALIDATION_ERROR', `Invalid arguments for ${call.name}: ${call.argumentsError}. Send the call again with its arguments as one complete JSON object. Expected parameters: ${JSON.stringify(this.spec(call.name).parameters)}`),
      );
    }
    const parsed = tool.parameters.safeParse(call.arguments ?? {});
    if (!parsed.success) {
      return toolError(
        new A2AError(
          'VALIDATION_ERROR',
          `Invalid arguments for ${call.name}:\n${describeIssues(parsed.error.issues)}\nExpected parameters: ${JSON.stringify(this.spec(call.name).parameters)}`,
        ),
      );
    }
    try {
      return redacted(await tool.execute(parsed.data, ctx));
    } catch (error) {
      if (error instanceof A2AError) return toolError(error);
      throw error;
    }
  }
}

/**
 * What a command printed, a file held or an MCP server answered reaches the model (and the logs)
 * without the process's secrets; code that merely looks like a credential is left as it is.
 */
function redacted(outcome: ToolOutcome): ToolOutcome {
  const content = redactSecrets(outcome.content);
  return content === outcome.content ? outcome : { ...outcome, content };
}

export function toolError(error: A2AError): ToolOutcome {
  return { isError: true, content: `${error.code}: ${error.message}` };
}
