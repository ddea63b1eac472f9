/** `a2a agents`: the merged agent registry (built-in, workspace, user). */
import { resolve } from 'node:path';
import { ToolCatalog } from '../../actors/tools/index.js';
import { loadConfig, loadRegistry } from '../../adapters/config.js';

export function agentsCommand(options: { workspace?: string; json?: boolean; config?: string }, out: NodeJS.WritableStream): number {
  const workspace = resolve(options.workspace ?? process.cwd());
  const { config } = loadConfig({ workspace, ...(options.config ? { explicitFile: options.config } : {}), inspectOnly: true });
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names(), userAgents: config.agents, userAgentsSource: 'config "agents"' });
  if (options.json) {
    out.write(`${JSON.stringify(registry.list().map((a) => ({ ...a.capability, files: a.files })), null, 2)}\n`);
    return 0;
  }
  for (const a of registry.list()) {
    const c = a.capability;
    out.write(`@${c.id}  (${c.source}${c.canSpawnSubTasks ? `, spawns to depth ${c.maxSubTaskDepth ?? 'any'}` : ', no sub-tasks'})\n`);
    out.write(`  ${c.description}\n`);
    if (c.strengths.length) out.write(`  good at: ${c.strengths.join('; ')}\n`);
    if (c.weaknesses.length) out.write(`  not for: ${c.weaknesses.join('; ')}\n`);
    out.write(`  tools: ${c.tools.join(', ')}\n\n`);
  }
  return 0;
}
