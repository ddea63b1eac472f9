/**
 * a2a as a library: the package's one entry point (`import { startRun } from 'a2a'`). Everything a
 * program needs to run a team of agents from code is exported here, and nothing else: the modules
 * behind it may move, these names stay. The CLI (bin/) is built on the same functions.
 */

// Running: a plan, a task or a workflow; a host that serves agent types over NATS
export { startRun } from './adapters/assembly/library.js';
export type { Run, RunTree, TreeNode, Answer } from './adapters/assembly/library.js';
export type { RunRequest, RunOptions, RunOutcome, RunUsage, HumanHandler } from './adapters/assembly/run.js';
export type { HandlerAnswer } from './adapters/humanPrompt.js';
export { startHost } from './adapters/assembly/host.js';
export type { HostOptions, RunningHost } from './adapters/assembly/host.js';

// Agents and tools defined in code
export { defineAgent } from './actors/config/registry.js';
export type { AgentInput } from './actors/config/registry.js';
export { defineTool } from './actors/tools/custom.js';
export type { CustomTool, CustomToolContext } from './actors/tools/custom.js';
export type { ToolDefinition } from './actors/tools/types.js';

// Models: the port, and the three adapters
export { scriptedModel, openaiModel, anthropicModel } from './adapters/assembly/library.js';
export type { Model, ModelRequest } from './machines/ports.js';
export type { ProviderOptions } from './adapters/model/wire.js';
export type { Script, ScriptInput } from './adapters/model/scripted.js';
export type { Settings } from './actors/config/config.js';

// What a run says and is made of
export type {
  RunEvent,
  Plan,
  PlanInput,
  SubTaskResult,
  HumanItem,
  HumanAnswer,
  PermissionAction,
  PermissionTier,
  ControlRequest,
  ModelReply,
  ChatMessage,
  ToolCall,
  ToolSpec,
  ErrorCode,
} from './machines/protocol/index.js';
export type { RunSummary } from './machines/orchestrator.machine.js';
export type { TypedRunEvent, RunEventData } from './machines/runEvents.js';

// Errors: one class, a closed set of codes
export { A2AError, isA2AError } from './actors/errors.js';

// Traces: the trace id a run's spans have (derived from its run id, unless the run continues a
// caller's trace), to link a run to its trace in a tracing backend
export { traceIdOf } from './actors/observation/tracing.js';

// zod 4, as the tools' schemas need it (the same copy a2a validates with)
export { z } from 'zod';
