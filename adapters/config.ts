/**
 * Reads configuration from disk: the run config layers, the agent registry layers and scripts.
 * Every file is parsed and validated; errors name the file and the field.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { A2AError } from '../actors/errors.js';
import { AgentRegistry, splitFrontmatter } from '../actors/config/registry.js';
import { parseConfig, type ConfigLayer, type RunConfig } from '../actors/config/config.js';
import { buildPolicy, parsePermissionsMarkdown, type PermissionPolicy, type PermissionsLayer } from '../actors/people/permissions.js';
import { parseScript, type Script } from './model/scripted.js';

/** The package root (holds package.json), from source or from dist/. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && existsSync(join(dir, 'actors', 'agents'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the a2a package root (package.json next to actors/agents)');
    dir = parent;
  }
}

/** Reads a JSON or YAML file into a value; a parse error names the file. */
export function readStructured(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw new A2AError('CONFIGURATION_INVALID', `cannot read ${file}: ${(cause as Error).message}`, { where: file, cause });
  }
  const yaml = /\.ya?ml$/i.test(file);
  try {
    return yaml ? parseYaml(text) : JSON.parse(text);
  } catch (cause) {
    const message = yaml ? (cause as Error).message : jsonSyntax(text, (cause as Error).message);
    throw new A2AError('CONFIGURATION_INVALID', `${file} is not valid ${yaml ? 'YAML' : 'JSON'}: ${message}`, { where: file, cause });
  }
}

/**
 * A JSON syntax error as `line L, column C: reason`, with that line and a caret under the place;
 * V8 gives an offset, and for some errors the whole text, which is not repeated here.
 */
export function jsonSyntax(text: string, raw: string): string {
  const reason = raw.replace(/, ".*" is not valid JSON$/s, '').replace(/ in JSON at position \d+.*$/s, '').replace(/^Unexpected end of JSON input$/, 'unexpected end of the file');
  const at = /at position (\d+)/.exec(raw);
  const offset = at ? Number(at[1]) : /Unexpected end of JSON input/.test(raw) ? text.length : null;
  if (offset === null) return reason;
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  const shown = (text.split('\n')[line - 1] ?? '').replace(/\t/g, ' ');
  const start = Math.max(0, column - 60);
  const excerpt = shown.slice(start, start + 100);
  return `line ${line}, column ${column}: ${reason}\n  ${excerpt}\n  ${' '.repeat(Math.max(0, column - 1 - start))}^`;
}

function asLayer(value: unknown, file: string): ConfigLayer {
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new A2AError('CONFIGURATION_INVALID', `${file}: expected an object at the top level`, { where: file });
  }
  return value as ConfigLayer;
}

const CONFIG_NAMES = ['a2a.config.json', 'a2a.config.yaml', 'a2a.config.yml'];

/** The workspace's config file (`a2a.config.json`, `.yaml`, `.yml`, first found), or null. */
export function workspaceConfigFile(workspace: string): string | null {
  return firstExisting(workspace, CONFIG_NAMES);
}

export function userConfigDir(): string {
  return process.env.A2A_CONFIG_HOME ?? join(process.env.XDG_CONFIG_HOME ?? join(homedir(), '.config'), 'a2a');
}

function firstExisting(dir: string, names: string[]): string | null {
  for (const name of names) {
    const file = join(dir, name);
    if (existsSync(file)) return file;
  }
  return null;
}

export interface LoadedConfig {
  config: RunConfig;
  /** The permission matrix: defaults → permissions.md → each layer's `permissions`. */
  policy: PermissionPolicy;
  /** Files read, in layer order. */
  files: string[];
  /** Each layer as read, in order: which one set a field, for messages about the merged config. */
  layers: Array<{ source: string; data: ConfigLayer }>;
  /** Directory each layer's relative paths resolve against (for `model.script`). */
  scriptBase: string | null;
}

/**
 * Loads: defaults → workspace `a2a.config.{json,yaml}` (or `explicitFile`) → user config →
 * extra layers (the plan's config, CLI flags). `workspaceLayer` stands for the workspace file's
 * content (`a2a config import` checks an edit before it writes it).
 */
export function loadConfig(options: {
  workspace: string;
  explicitFile?: string;
  workspaceLayer?: { file: string; data: ConfigLayer };
  extra?: Array<{ source: string; data: ConfigLayer; base?: string }>;
  /**
   * Read to be looked at or carried elsewhere (`a2a config`, `a2a agents`), not to run with: no
   * credential is sent, so a repository's file may name where they would go.
   */
  inspectOnly?: boolean;
}): LoadedConfig {
  const layers: Array<{ source: string; data: ConfigLayer; base: string | null }> = [];
  const permissionLayers: Array<{ source: string; layer: PermissionsLayer }> = [];
  const permissionsFile = join(options.workspace, '.github', 'agents', 'orchestrator', 'permissions.md');
  if (existsSync(permissionsFile)) {
    const parsed = parsePermissionsMarkdown(readFileSync(permissionsFile, 'utf8'), permissionsFile);
    permissionLayers.push({ source: permissionsFile, layer: parsed.layer });
    // its Limits section is the lowest layer of the run's limits: config files and flags override it
    if (Object.keys(parsed.limits).length > 0) layers.push({ source: `${permissionsFile} (Limits)`, data: { limits: parsed.limits }, base: null });
  }
  const workspaceFile = options.workspaceLayer?.file ?? (options.explicitFile ? resolve(options.explicitFile) : firstExisting(options.workspace, CONFIG_NAMES));
  if (options.workspaceLayer) {
    layers.push({ source: workspaceFile!, data: asLayer(options.workspaceLayer.data, workspaceFile!), base: dirname(workspaceFile!) });
  } else if (options.explicitFile && !existsSync(workspaceFile!)) {
    throw new A2AError('CONFIGURATION_INVALID', `config file not found: ${workspaceFile}`);
  } else if (workspaceFile) {
    layers.push({ source: workspaceFile, data: asLayer(readStructured(workspaceFile), workspaceFile), base: dirname(workspaceFile) });
  }
  const userFile = firstExisting(userConfigDir(), ['config.json', 'config.yaml', 'config.yml']);
  if (userFile) layers.push({ source: userFile, data: asLayer(readStructured(userFile), userFile), base: dirname(userFile) });
  for (const extra of options.extra ?? []) layers.push({ source: extra.source, data: extra.data, base: extra.base ?? null });
  const config = parseConfig(layers);
  if (!options.inspectOnly) for (const l of layers) refuseSecretDestinations(l.source, l.data);
  for (const l of layers) {
    const layer = (l.data as { permissions?: PermissionsLayer }).permissions;
    if (layer) permissionLayers.push({ source: l.source, layer });
  }
  const policy = buildPolicy(permissionLayers);
  const scriptLayer = [...layers].reverse().find((l) => (l.data.model as { script?: unknown } | undefined)?.script !== undefined);
  return {
    config,
    policy,
    files: layers.map((l) => l.source),
    layers: layers.map(({ source, data }) => ({ source, data })),
    scriptBase: scriptLayer?.base ?? null,
  };
}

/**
 * The agent registry: built-in agents → workspace `.github/agents/*.agent.md` and
 * `registry-overrides.md` → user `agents/*.agent.md` and the user config's `agents` section.
 */
export function loadRegistry(options: {
  workspace: string;
  knownTools: Iterable<string>;
  userAgents?: unknown;
  userAgentsSource?: string;
  /** The config layers `userAgents` was merged from: the last one that sets an agent's MCP servers says whether they may start. */
  layers?: Array<{ source: string; data: ConfigLayer }>;
}): AgentRegistry {
  const registry = new AgentRegistry(options.knownTools);
  const addDir = (dir: string, source: 'builtin' | 'workspace' | 'user') => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.agent.md')).sort()) {
      const file = join(dir, name);
      registry.addFile(readFileSync(file, 'utf8'), file, source);
    }
  };
  addDir(join(packageRoot(), 'actors', 'agents'), 'builtin');
  const workspaceAgents = join(options.workspace, '.github', 'agents');
  addDir(workspaceAgents, 'workspace');
  const overrides = join(workspaceAgents, 'registry-overrides.md');
  if (existsSync(overrides)) {
    const { data } = splitFrontmatter(readFileSync(overrides, 'utf8'), overrides);
    registry.addOverrides((data as { agents?: unknown }).agents, overrides, 'workspace');
  }
  addDir(join(userConfigDir(), 'agents'), 'user');
  if (options.userAgents !== undefined) registry.addOverrides(options.userAgents, options.userAgentsSource ?? 'user config', 'user');
  // MCP servers from a config layer the user does not own (the workspace's file, a plan's config)
  const declared = new Map<string, string>();
  for (const layer of options.layers ?? []) {
    const agents = layer.data.agents;
    if (!agents || typeof agents !== 'object') continue;
    for (const [name, patch] of Object.entries(agents as Record<string, unknown>)) {
      if (patch && typeof patch === 'object' && 'mcpServers' in patch) declared.set(name, layer.source);
    }
  }
  for (const [name, source] of declared) if (!trustedSource(source)) registry.distrustMcp(name, source);
  return registry;
}

/** The layers the user owns: their config directory, and settings given in code. */
export const CODE_SETTINGS = 'settings (code)';
function trustedSource(source: string): boolean {
  return source === CODE_SETTINGS || source.startsWith(`${userConfigDir()}/`);
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

/**
 * A layer the user does not own (the workspace's config, a plan's or workflow's config) may not
 * choose where a credential is sent: a model profile's `baseURL` gets the provider's API key, and
 * `git.github.apiUrl` the GitHub token. A repository that set them could read the keys of whoever
 * runs it. Loopback addresses (a local model server, a stub) are allowed from anywhere.
 */
function refuseSecretDestinations(source: string, data: ConfigLayer): void {
  if (trustedSource(source) || source === 'command-line flags') return;
  const refuse = (field: string, url: unknown) => {
    let host = '';
    try {
      host = new URL(String(url)).hostname;
    } catch {
      return; // not a URL: the schema says so
    }
    if (LOOPBACK.has(host)) return;
    throw new A2AError(
      'CONFIGURATION_INVALID',
      `${source}: ${field}: ${String(url)} would receive your credentials, and this file is not yours to trust with them (a repository's or a plan's). Set it in your own config (${join(userConfigDir(), 'config.json')}) or in code; loopback addresses are allowed here`,
      { where: field },
    );
  };
  const profiles = (data.models as { profiles?: Record<string, { baseURL?: unknown }> } | undefined)?.profiles ?? {};
  for (const [name, profile] of Object.entries(profiles)) if (profile && profile.baseURL !== undefined) refuse(`models.profiles.${name}.baseURL`, profile.baseURL);
  const apiUrl = (data.git as { github?: { apiUrl?: unknown } } | undefined)?.github?.apiUrl;
  if (apiUrl !== undefined) refuse('git.github.apiUrl', apiUrl);
}

export function loadScript(file: string): Script {
  return parseScript(readStructured(file), file);
}
