/**
 * `a2a config validate | export | import`: the workflow's roles and the model profiles, checked as
 * a run would load them, carried to another workspace as a portable document
 * (actors/config/configDocument.ts), and merged into the workspace's config file.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { Document, isMap, parseDocument, stringify as stringifyYaml } from 'yaml';
import type { ConfigLayer } from '../../actors/config/config.js';
import { applyEdits, exportDocument, importEdits, parseConfigDocument, type ConfigEdit } from '../../actors/config/configDocument.js';
import { A2AError, isA2AError } from '../../actors/errors.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { checkWorkflow, layerSource, type ValidationResult, type WorkflowCheck } from '../../actors/organiser/workflowRoles.js';
import { loadConfig, loadRegistry, readStructured, workspaceConfigFile, type LoadedConfig } from '../../adapters/config.js';
import type { RunIo } from './run.js';

export interface ConfigOptions {
  workspace?: string;
  config?: string;
  json?: boolean;
  format?: 'json' | 'yaml';
  out?: string;
  dryRun?: boolean;
}

interface Checked {
  files: string[];
  /** Null when the configuration did not even load (the errors say why). */
  loaded: LoadedConfig | null;
  check: WorkflowCheck | null;
  result: ValidationResult;
}

/** An error's message as one line per problem (`file: field: what`), as ValidationResult wants. */
function errorLines(message: string): string[] {
  const [head = '', ...rest] = message.split('\n');
  const items = rest.filter((l) => l.startsWith('  - ')).map((l) => l.slice(4));
  if (items.length === 0) return [message];
  const source = head.replace(/:?\s*invalid [a-z ]*configuration:?$/, '').replace(/:$/, '');
  return items.map((item) => (source ? `${source}: ${item}` : item));
}

/** Loads every layer a run would, then the registry, then checks the workflow's references. */
function check(workspace: string, load: () => LoadedConfig): Checked {
  const failed = (error: unknown): Checked => {
    if (!isA2AError(error)) throw error;
    return { files: [], loaded: null, check: null, result: { isValid: false, errors: errorLines(error.message), warnings: [] } };
  };
  let loaded: LoadedConfig;
  try {
    loaded = load();
  } catch (error) {
    return failed(error);
  }
  let registry: ReturnType<typeof loadRegistry>;
  try {
    registry = loadRegistry({ workspace, knownTools: new ToolCatalog().names(), userAgents: loaded.config.agents, userAgentsSource: 'config "agents"' });
  } catch (error) {
    return { ...failed(error), files: loaded.files };
  }
  const workflow = checkWorkflow(loaded.config, registry, (path) => layerSource(loaded.layers, path));
  return { files: loaded.files, loaded, check: workflow, result: workflow.result };
}

/** `inspectOnly`: for export, which carries the config elsewhere; validate says what a run would refuse. */
function loadAsRun(options: ConfigOptions, inspectOnly = false): { workspace: string; checked: Checked } {
  const workspace = resolve(options.workspace ?? process.cwd());
  return { workspace, checked: check(workspace, () => loadConfig({ workspace, ...(options.config ? { explicitFile: options.config } : {}), inspectOnly })) };
}

const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
const bullets = (lines: string[]) => lines.map((l) => `  - ${l.replace(/\n/g, '\n    ')}`).join('\n');

export function configValidateCommand(options: ConfigOptions, io: RunIo): number {
  const { checked } = loadAsRun(options);
  const { result } = checked;
  if (options.json) {
    io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return result.isValid ? 0 : 1;
  }
  const out: string[] = [];
  if (checked.loaded) out.push(`Configuration: ${checked.files.length ? checked.files.join(' + ') : 'defaults (no config file)'}`);
  if (checked.check && Object.keys(checked.check.roles).length) {
    const rows: Array<[string, string, string]> = Object.entries(checked.check.roles).map(([role, r]) => [role, r.agent, r.profile]);
    rows.push(['organiser', '', checked.check.organiserProfile]);
    const w0 = Math.max(...rows.map((r) => r[0].length));
    const w1 = Math.max(...rows.map((r) => r[1].length));
    out.push('Roles (role, agent, profile):');
    for (const [role, agent, profile] of rows) out.push(`  ${role.padEnd(w0)}  ${agent.padEnd(w1)}  ${profile}`);
  }
  out.push(result.isValid ? `Valid${result.warnings.length ? ` (${plural(result.warnings.length, 'warning')})` : ''}` : `Invalid: ${plural(result.errors.length, 'error')}, ${plural(result.warnings.length, 'warning')}`);
  if (result.errors.length) out.push(`Errors:\n${bullets(result.errors)}`);
  if (result.warnings.length) out.push(`Warnings:\n${bullets(result.warnings)}`);
  io.stdout.write(`${out.join('\n')}\n`);
  return result.isValid ? 0 : 1;
}

/** Writes `text` to `file` through a temporary file and a rename: a reader never sees half of it. */
function writeAtomically(file: string, text: string): void {
  const mode = existsSync(file) ? statSync(file).mode & 0o777 : 0o644;
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  try {
    writeFileSync(tmp, text, { mode });
    renameSync(tmp, file);
  } catch (cause) {
    rmSync(tmp, { force: true });
    throw new A2AError('CONFIGURATION_INVALID', `cannot write ${file}: ${(cause as Error).message}`, { where: file, cause });
  }
}

export function configExportCommand(options: ConfigOptions, io: RunIo): number {
  const { checked } = loadAsRun(options, true);
  if (!checked.result.isValid || !checked.check || !checked.loaded) {
    throw new A2AError('CONFIGURATION_INVALID', `the configuration is not valid; nothing was exported (a2a config validate says the same):\n${bullets(checked.result.errors)}`);
  }
  const { document, notes } = exportDocument(checked.loaded.config, checked.check.roles, checked.check.organiserProfile);
  const format = options.format ?? (options.out && /\.ya?ml$/i.test(options.out) ? 'yaml' : 'json');
  const text = format === 'yaml' ? stringifyYaml(document) : `${JSON.stringify(document, null, 2)}\n`;
  for (const note of notes) io.stderr.write(`a2a: note: ${note}\n`);
  if (options.out) {
    const file = resolve(options.out);
    writeAtomically(file, text);
    const roles = Object.keys(document.workflow?.roles ?? {}).length;
    const profiles = Object.keys(document.models?.profiles ?? {}).length;
    io.stdout.write(`Exported ${plural(roles, 'role')} and ${plural(profiles, 'profile')} to ${file}\n`);
  } else {
    io.stdout.write(text);
  }
  return 0;
}

/** The edits made to a YAML document, so that comments and the layout of other sections stay. */
function editYaml(text: string | null, file: string, edits: ConfigEdit[]): { text: string; data: ConfigLayer } {
  const doc = text === null ? new Document({}) : parseDocument(text);
  if (doc.errors.length) throw new A2AError('CONFIGURATION_INVALID', `${file} is not valid YAML: ${doc.errors[0]!.message}`, { where: file });
  if (doc.contents !== null && !isMap(doc.contents)) throw new A2AError('CONFIGURATION_INVALID', `${file}: expected an object at the top level`, { where: file });
  for (const { path, value } of edits) {
    for (let i = 1; i < path.length; i++) {
      const prefix = path.slice(0, i);
      if (!isMap(doc.getIn(prefix, true))) doc.setIn(prefix, doc.createNode({}));
    }
    doc.setIn(path, doc.createNode(value));
  }
  return { text: doc.toString(), data: (doc.toJS() as ConfigLayer | null) ?? {} };
}

export function configImportCommand(file: string, options: ConfigOptions, io: RunIo): number {
  const workspace = resolve(options.workspace ?? process.cwd());
  const source = resolve(file);
  if (!existsSync(source)) throw new A2AError('VALIDATION_ERROR', `document not found: ${source}`, { where: source });
  const edits = importEdits(parseConfigDocument(readStructured(source), source));
  const target = workspaceConfigFile(workspace) ?? join(workspace, 'a2a.config.json');
  const current = existsSync(target) ? readFileSync(target, 'utf8') : null;
  let next: { text: string; data: ConfigLayer };
  if (/\.ya?ml$/i.test(target)) {
    next = editYaml(current, target, edits);
  } else {
    const data = current === null ? {} : readStructured(target);
    if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new A2AError('CONFIGURATION_INVALID', `${target}: expected an object at the top level`, { where: target });
    const edited = applyEdits(data as ConfigLayer, edits);
    next = { text: `${JSON.stringify(edited, null, 2)}\n`, data: edited };
  }
  // the edited file is checked with every other layer, as a run would load it, before it is written
  const { result } = check(workspace, () => loadConfig({ workspace, workspaceLayer: { file: target, data: next.data }, inspectOnly: true }));
  if (!result.isValid) {
    throw new A2AError('CONFIGURATION_INVALID', `${source}: the configuration would be invalid after importing it; ${target} was not changed:\n${bullets(result.errors)}`, {
      where: source,
    });
  }
  for (const warning of result.warnings) io.stderr.write(`a2a: warning: ${warning}\n`);
  if (options.dryRun) {
    io.stdout.write(next.text);
    io.stderr.write(`a2a: dry run: ${target} was not ${current === null ? 'created' : 'changed'}\n`);
    return 0;
  }
  writeAtomically(target, next.text);
  io.stdout.write(`Imported ${source} into ${target} (${edits.length === 1 ? '1 entry' : `${edits.length} entries`} set)\n`);
  return 0;
}
