/**
 * The stages every a2a process is assembled from, in the order they run, each a function with a
 * typed result: configuration (settings in layers, the tool catalog, the agent registry), models
 * (adapters/assembly/models.ts), transport (NATS, when asked for), sandbox and external tools (the
 * command runner, the MCP servers). A run (run.ts: `a2a run`, the library, `a2a serve`, `a2a mcp`)
 * and a host (host.ts: `a2a host`, `startHost`) compose the same stages, as do `a2a gateway`
 * (transport) and `a2a serve` (configuration, to list the agents its runs will have, and
 * transport); what each adds (a run's store, log and orchestrator, a host's queues and
 * heartbeats) is in its own file.
 */
import { resolve } from 'node:path';
import type { EventSink } from '../../machines/ports.js';
import type { ConfigLayer, RunConfig } from '../../actors/config/config.js';
import type { PermissionPolicy } from '../../actors/people/permissions.js';
import type { AgentRegistry } from '../../actors/config/registry.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { loadConfig, loadRegistry } from '../config.js';
import { McpTools } from '../mcp/client.js';
import type { NatsConnectedTransport } from '../transport/nats.js';
import { secretsFileOf } from './models.js';
import { natsCredentials, warnIfUnauthenticated } from './nats.js';
import { commandRunnerFor } from './sandbox.js';
import { builtinTools, checkedTools, type CodeInputs } from './tools.js';

/** What the configuration stage reads: the workspace, an explicit file, layers above the files, and a program's own tools and agents. */
export interface ConfigurationInput extends Pick<CodeInputs, 'tools' | 'agents'> {
  workspace: string;
  /** An explicit config file (--config): its layer wins over the files found. */
  configFile?: string;
  /** Layers above the files (a plan's config, a program's settings, the flags), later wins. */
  extra?: Array<{ source: string; data: ConfigLayer; base?: string }>;
}

/** The process's settings, the tools its agents may name, and its agents. */
export interface Configured {
  workspace: string;
  config: RunConfig;
  /** The permission matrix. */
  policy: PermissionPolicy;
  /** Where each setting came from (errors name the file and field). */
  layers: Array<{ source: string; data: ConfigLayer }>;
  /** The directory a config file's `model.script` is relative to. */
  scriptBase: string | null;
  catalog: ToolCatalog;
  registry: AgentRegistry;
}

/** Stage 1, configuration: the settings in layers, then the tool catalog, then the agent registry (which checks the agents' tools against it). */
export function configuration(input: ConfigurationInput): Configured {
  const workspace = resolve(input.workspace);
  const loaded = loadConfig({ workspace, ...(input.configFile ? { explicitFile: input.configFile } : {}), ...(input.extra ? { extra: input.extra } : {}) });
  const { config, policy } = loaded;
  const catalog = new ToolCatalog([...builtinTools({ secretsFile: secretsFileOf(config, workspace) }), ...checkedTools(input.tools ?? [])]);
  const registry = loadRegistry({ workspace, knownTools: catalog.names(), userAgents: config.agents, userAgentsSource: 'config "agents"', layers: loaded.layers });
  if (input.agents?.length) registry.addDefined(input.agents);
  return { workspace, config, policy, layers: loaded.layers, scriptBase: loaded.scriptBase, catalog, registry };
}

/** Stage 3, transport: a NATS connection with the credentials of the environment, and the one warning about a server without them. */
export async function transportStage(servers: string, ns: string, name: string, notify: (line: string) => void): Promise<NatsConnectedTransport> {
  // the NATS client is loaded only by a process that uses it
  const { connectNats } = await import('../transport/nats.js');
  const transport = await connectNats({ servers, namespace: ns, name, ...natsCredentials(), onWarning: (line) => notify(`a2a: warning: NATS: ${line}`) });
  warnIfUnauthenticated(transport, servers, notify);
  return transport;
}

/** What the agents' commands and external tools run with. */
export interface ExternalTools {
  /** The sandbox's command runner, and the warning when none could be used (said by the caller, where it logs). */
  commands: ReturnType<typeof commandRunnerFor>;
  /** The agents' MCP servers: connected per session when first used, closed with `closeAll`. */
  mcp: McpTools;
}

/** Stage 4, sandbox and external tools. */
export function externalTools(config: RunConfig, workspace: string, events: EventSink): ExternalTools {
  return {
    commands: commandRunnerFor(config.sandbox),
    mcp: new McpTools({ events, secretsFile: secretsFileOf(config, workspace), workspace }),
  };
}
