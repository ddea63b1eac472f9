/** The tools of a process: a2a's own, and those a program adds in code (checked once, here). */
import type { z } from 'zod';
import type { AgentInput } from '../../actors/config/registry.js';
import type { Script } from '../model/scripted.js';
import { A2AError } from '../../actors/errors.js';
import type { ToolDefinition } from '../../actors/tools/index.js';
import { a2aTools } from '../../actors/tools/a2a.js';
import { codingTools } from '../../actors/tools/coding.js';
import { artifactTools } from '../../actors/tools/artifacts.js';
import { remoteAgentTool, type RemoteToolOptions } from '../a2aProtocol/delegate.js';

/** What a program gives a run or a host in code, beside the files and config it reads. */
export interface CodeInputs {
  /** Agents defined in code (defineAgent), over the built-in, workspace and user agents. */
  agents?: ReadonlyArray<AgentInput>;
  /** Tools added in code (defineTool); agents list them by name. */
  tools?: ReadonlyArray<ToolDefinition<z.ZodType>>;
  /** A script for the scripted model, given in code. */
  scriptData?: Script;
  /** Lines for a person (warnings); default: stderr. */
  notify?: (line: string) => void;
}


export function builtinTools(options: RemoteToolOptions = {}): ToolDefinition<z.ZodType>[] {
  return [...a2aTools, ...codingTools, ...artifactTools, remoteAgentTool(options)] as ToolDefinition<z.ZodType>[];
}

/** A program's tools: each made with defineTool, and no name twice or taken from a2a's own. */
export function checkedTools(tools: ReadonlyArray<ToolDefinition<z.ZodType>>): ToolDefinition<z.ZodType>[] {
  if (!Array.isArray(tools)) throw new A2AError('CONFIGURATION_INVALID', 'tools: give a list of tools made with defineTool', { where: 'tools' });
  const own = new Set(builtinTools().map((t) => t.name));
  const seen = new Set<string>();
  for (const tool of tools) {
    if (typeof tool?.execute !== 'function' || typeof tool.name !== 'string') {
      throw new A2AError('CONFIGURATION_INVALID', 'tools: every tool must be made with defineTool({ name, description, parameters, run })', { where: 'tools' });
    }
    if (own.has(tool.name)) throw new A2AError('CONFIGURATION_INVALID', `tools: "${tool.name}" is the name of a built-in tool; give yours another name`, { where: 'tools' });
    if (seen.has(tool.name)) throw new A2AError('CONFIGURATION_INVALID', `tools: "${tool.name}" is given twice`, { where: 'tools' });
    seen.add(tool.name);
  }
  return [...tools];
}
