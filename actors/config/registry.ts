/**
 * The agent registry: agent definitions are Markdown files with YAML frontmatter (capabilities)
 * whose body is the system prompt. Layers, later wins field by field: built-in → workspace
 * (`.github/agents/*.agent.md`, `.github/agents/registry-overrides.md`) → user config.
 * Reading files is the caller's job (adapters/config.ts); this module parses and merges text.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AgentBackend, McpServerConfig, McpServerName, PreferredModels, RemoteAgentConfig, type AgentCapability, type ParsedAgentType } from '../../machines/protocol/index.js';
import { A2AError, describeIssues } from '../errors.js';
import { errorText } from '../../machines/errorText.js';

export interface AgentDefinition {
  capability: AgentCapability;
  /** The Markdown body: the agent's own system prompt. */
  systemPrompt: string;
  /** Files that contributed to this definition, for error messages. */
  files: string[];
  /** The MCP servers whose tools its sessions get (`mcp__<server>__<tool>`). */
  mcpServers?: Record<string, McpServerConfig>;
  /**
   * Where its MCP servers were declared, and whether that place may start commands outside the
   * sandbox and send secrets: the user's own config and code may; a repository's files (its agent
   * files, its config, a plan's config) may not, since cloning one and running a2a would run them.
   */
  mcpDeclaredIn?: { where: string; trusted: boolean };
  /**
   * A remote A2A agent (`remote:` in its file): its sessions send their task to that server
   * (adapters/a2aProtocol/delegate.ts) instead of calling a model. `trusted` as for MCP servers:
   * only the user's own config and code may send a token from the environment or the secrets file.
   */
  remote?: RemoteAgentConfig & { declaredIn: { where: string; trusted: boolean } };
}

/** The tools of a remote A2A agent's sessions, unless its file lists others. */
export const REMOTE_AGENT_TOOLS: ReadonlyArray<string> = ['a2a_remote_task', 'a2a_notify_orchestrator', 'a2a_subtask_complete'];

/** Frontmatter of an agent file; every field optional so that a later layer can override a few. */
export const AgentFrontmatter = z.strictObject({
  name: z.string().regex(/^[a-z][a-z0-9-]*$/, 'lowercase letters, digits and "-", starting with a letter'),
  description: z.string().min(1).optional(),
  strengths: z.array(z.string()).optional(),
  weaknesses: z.array(z.string()).optional(),
  preferredModels: PreferredModels.optional(),
  canSpawnSubTasks: z.boolean().optional(),
  maxSubTaskDepth: z.number().int().min(0).max(8).optional(),
  tools: z.array(z.string()).optional(),
  /** MCP servers by name: `{ files: { command: "npx", args: [...] }, search: { url: "...", headers: {...} } }`. */
  mcpServers: z
    .record(z.string(), McpServerConfig)
    .superRefine((servers, ctx) => {
      for (const name of Object.keys(servers)) {
        const checked = McpServerName.safeParse(name);
        if (!checked.success) ctx.addIssue({ code: 'custom', path: [name], message: `"${name}" is not a server name: ${checked.error.issues[0]?.message ?? 'invalid'} (at most 32 characters)` });
      }
    })
    .optional(),
  /** A remote A2A agent: `{ url, token?: { env } | { secret }, timeoutMs? }`. */
  remote: RemoteAgentConfig.optional(),
});
export type AgentFrontmatter = z.infer<typeof AgentFrontmatter>;

export type AgentPatch = Omit<AgentFrontmatter, 'name'> & { systemPrompt?: string };

const FRONTMATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/;

/** Splits `---\nyaml\n---\nbody`; throws a CONFIGURATION_INVALID naming the file when malformed. */
export function splitFrontmatter(text: string, file: string): { data: unknown; body: string } {
  const match = FRONTMATTER.exec(text);
  if (!match) {
    throw new A2AError('CONFIGURATION_INVALID', `${file}: expected YAML frontmatter between "---" lines at the top of the file`, {
      where: file,
    });
  }
  try {
    return { data: parseYaml(match[1]!) ?? {}, body: match[2]!.trim() };
  } catch (cause) {
    const reason = errorText(cause);
    throw new A2AError('CONFIGURATION_INVALID', `${file}: the frontmatter is not valid YAML: ${reason}`, { where: file, cause });
  }
}

export function parseAgentFile(text: string, file: string): { frontmatter: AgentFrontmatter; body: string } {
  const { data, body } = splitFrontmatter(text, file);
  const parsed = AgentFrontmatter.safeParse(data);
  if (!parsed.success) {
    throw new A2AError(
      'CONFIGURATION_INVALID',
      `${file}: invalid agent definition:\n${describeIssues(parsed.error.issues)}\nAllowed fields: ${Object.keys(AgentFrontmatter.shape).join(', ')}`,
      { where: file },
    );
  }
  return { frontmatter: parsed.data, body };
}

/** An agent defined in code (the library's `defineAgent`): the fields of an agent file, its body as `systemPrompt`. */
export const AgentInput = AgentFrontmatter.extend({ systemPrompt: z.string().optional() });
export type AgentInput = z.input<typeof AgentInput>;

/**
 * Checks an agent defined in code the way an agent file is checked (the same fields and limits;
 * its tools are checked against the run's tools when the run starts) and returns it frozen.
 */
export function defineAgent(input: AgentInput): Readonly<z.output<typeof AgentInput>> {
  const parsed = AgentInput.safeParse(input);
  if (!parsed.success) {
    const name = typeof (input as { name?: unknown })?.name === 'string' ? ` "${(input as { name: string }).name}"` : '';
    throw new A2AError(
      'CONFIGURATION_INVALID',
      `defineAgent${name}: invalid agent definition:\n${describeIssues(parsed.error.issues)}\nAllowed fields: ${Object.keys(AgentInput.shape).join(', ')}`,
      { where: 'defineAgent' },
    );
  }
  return Object.freeze(parsed.data);
}

const BACKEND_ALIASES: Record<string, z.infer<typeof AgentBackend>> = {
  claude: 'claude',
  anthropic: 'claude',
  openai: 'openai',
  scripted: 'scripted',
};

/**
 * `@coder`, `coder` → default backend; `claude:reviewer`, `openai:architect` → that backend.
 * Parsed once, at spawn time; a child never inherits its parent's type.
 */
export function parseAgentType(raw: string): ParsedAgentType {
  const text = raw.trim();
  const colon = text.indexOf(':');
  const prefix = colon >= 0 ? text.slice(0, colon).toLowerCase() : null;
  const name = (colon >= 0 ? text.slice(colon + 1) : text).replace(/^@/, '').toLowerCase();
  if (prefix !== null && !(prefix in BACKEND_ALIASES)) {
    throw new A2AError(
      'UNKNOWN_AGENT_TYPE',
      `Unknown backend "${prefix}" in agent type "${raw}". Allowed prefixes: ${Object.keys(BACKEND_ALIASES).join(', ')}, or none (e.g. "@coder").`,
    );
  }
  if (!/^[a-z][a-z0-9-]*$/.test(name)) {
    throw new A2AError(
      'UNKNOWN_AGENT_TYPE',
      `Agent type "${raw}" is not well formed: expected "@name", "name" or "backend:name" with a lowercase name.`,
    );
  }
  return { raw: text, backend: prefix === null ? 'default' : BACKEND_ALIASES[prefix]!, agentName: name };
}

export class AgentRegistry {
  readonly #agents = new Map<string, AgentDefinition>();
  readonly #knownTools: ReadonlySet<string>;
  /** Parsed agent types by the string written; parsed types are immutable, so siblings share one. */
  readonly #parsed = new Map<string, ParsedAgentType>();

  constructor(knownTools: Iterable<string>) {
    this.#knownTools = new Set(knownTools);
  }

  /** Adds or patches an agent; a new agent must end up with a description. */
  apply(name: string, patch: AgentPatch, source: AgentCapability['source'], file: string): void {
    const existing = this.#agents.get(name);
    const unknownTools = (patch.tools ?? []).filter((t) => !this.#knownTools.has(t));
    if (unknownTools.length > 0) {
      throw new A2AError(
        'CONFIGURATION_INVALID',
        `${file}: agent "${name}" lists unknown tools: ${unknownTools.join(', ')}. Known tools: ${[...this.#knownTools].sort().join(', ')}`,
        { where: file },
      );
    }
    const description = patch.description ?? existing?.capability.description;
    if (!description) {
      throw new A2AError('CONFIGURATION_INVALID', `${file}: agent "${name}" needs a description (frontmatter field "description")`, {
        where: file,
      });
    }
    const capability: AgentCapability = {
      id: name,
      name,
      description,
      strengths: patch.strengths ?? existing?.capability.strengths ?? [],
      weaknesses: patch.weaknesses ?? existing?.capability.weaknesses ?? [],
      canSpawnSubTasks: patch.canSpawnSubTasks ?? existing?.capability.canSpawnSubTasks ?? false,
      tools: patch.tools ?? existing?.capability.tools ?? (patch.remote ? [...REMOTE_AGENT_TOOLS] : []),
      source,
    };
    const preferredModels = patch.preferredModels ?? existing?.capability.preferredModels;
    if (preferredModels) capability.preferredModels = preferredModels;
    const maxSubTaskDepth = patch.maxSubTaskDepth ?? existing?.capability.maxSubTaskDepth;
    if (maxSubTaskDepth !== undefined) capability.maxSubTaskDepth = maxSubTaskDepth;
    const mcpServers = patch.mcpServers ?? existing?.mcpServers;
    const mcpDeclaredIn = patch.mcpServers !== undefined ? { where: file, trusted: source !== 'workspace' } : existing?.mcpDeclaredIn;
    this.#agents.set(name, {
      capability,
      systemPrompt: patch.systemPrompt?.trim() ? patch.systemPrompt.trim() : (existing?.systemPrompt ?? ''),
      files: [...(existing?.files ?? []), file],
      ...(mcpServers && Object.keys(mcpServers).length ? { mcpServers, ...(mcpDeclaredIn ? { mcpDeclaredIn } : {}) } : {}),
      ...(patch.remote ? { remote: { ...patch.remote, declaredIn: { where: file, trusted: source !== 'workspace' } } } : existing?.remote ? { remote: existing.remote } : {}),
    });
  }

  /** Adds agents defined in code (checked again here: a plain object may not have gone through defineAgent). */
  addDefined(agents: ReadonlyArray<AgentInput>): void {
    for (const input of agents) {
      const { name, ...patch } = defineAgent(input);
      this.apply(name, patch, 'user', `defineAgent("${name}")`);
    }
  }

  /** Loads one agent Markdown file (`*.agent.md`). */
  addFile(text: string, file: string, source: AgentCapability['source']): void {
    const { frontmatter, body } = parseAgentFile(text, file);
    const { name, ...rest } = frontmatter;
    this.apply(name, { ...rest, systemPrompt: body }, source, file);
  }

  /**
   * Loads an overrides document: frontmatter `agents: { <name>: { <fields> } }` (the workspace's
   * `registry-overrides.md`, or the user config's `agents` section).
   */
  addOverrides(agents: unknown, file: string, source: AgentCapability['source']): void {
    const Overrides = z.record(z.string(), AgentFrontmatter.omit({ name: true }).extend({ systemPrompt: z.string().optional() }));
    const parsed = Overrides.safeParse(agents ?? {});
    if (!parsed.success) {
      throw new A2AError('CONFIGURATION_INVALID', `${file}: invalid agent overrides:\n${describeIssues(parsed.error.issues)}`, {
        where: file,
      });
    }
    for (const [name, patch] of Object.entries(parsed.data)) this.apply(name, patch, source, file);
  }

  /** Marks an agent's MCP servers as declared in `where`, a place that may not start them (see AgentDefinition.mcpDeclaredIn). */
  distrustMcp(name: string, where: string): void {
    const found = this.#agents.get(name);
    if (found?.mcpServers) found.mcpDeclaredIn = { where, trusted: false };
    if (found?.remote) found.remote = { ...found.remote, declaredIn: { where, trusted: false } };
  }

  has(name: string): boolean {
    return this.#agents.has(name);
  }

  names(): string[] {
    return [...this.#agents.keys()].sort();
  }

  list(): AgentDefinition[] {
    return this.names().map((n) => this.#agents.get(n)!);
  }

  /** The definition for a registry key; unknown names fail with the list of available types. */
  get(name: string): AgentDefinition {
    const found = this.#agents.get(name);
    if (!found) {
      throw new A2AError('UNKNOWN_AGENT_TYPE', `Unknown agent type "${name}". Available types: ${this.names().map((n) => `@${n}`).join(', ')}`);
    }
    return found;
  }

  /** Parses and validates an agent type string (`@coder`, `claude:reviewer`). */
  resolve(raw: string): { parsed: ParsedAgentType; definition: AgentDefinition } {
    let parsed = this.#parsed.get(raw);
    if (!parsed) {
      parsed = parseAgentType(raw);
      if (this.#parsed.size < 1000) this.#parsed.set(raw, parsed);
    }
    if (!this.#agents.has(parsed.agentName)) {
      throw new A2AError(
        'UNKNOWN_AGENT_TYPE',
        `Unknown agent type "${raw}". Available types: ${this.names().map((n) => `@${n}`).join(', ')} (optionally prefixed with a backend: claude:, openai:)`,
      );
    }
    return { parsed, definition: this.#agents.get(parsed.agentName)! };
  }
}
