/**
 * The portable roles-and-profiles document of `a2a config export` and `import` (seed 003
 * `exportConfiguration` / `importConfiguration`): `{ version: 1, workflow, models }`. It carries
 * the workflow section and the profiles with their assignment, never a key: profiles name their
 * provider, whose key is read from the environment or the secrets file where the document lands.
 * Pure: reading and writing files is bin/commands/config.ts.
 */
import { z } from 'zod';
import { STANDARD_ROLES, WorkflowConfig, type ConfigLayer, type RunConfig } from './config.js';
import { A2AError, describeIssues } from '../errors.js';
import { ModelsConfig, Profile } from './profiles.js';
import { secrets } from './secrets.js';
import type { EffectiveRole } from '../organiser/workflowRoles.js';

/** The document version this a2a writes and reads; a later one may mean fields it would drop. */
export const CONFIG_DOCUMENT_VERSION = 1;

const DocumentModels = ModelsConfig.pick({ profiles: true, default: true, assign: true });

export const ConfigDocument = z.strictObject({
  version: z.literal(CONFIG_DOCUMENT_VERSION),
  workflow: WorkflowConfig.optional(),
  models: DocumentModels.optional(),
});
export type ConfigDocument = z.infer<typeof ConfigDocument>;

/** Keys allowed where zod found an unknown one, so that the message lists them. */
function allowedKeys(path: ReadonlyArray<PropertyKey>): string[] | undefined {
  const p = path.map(String).join('.');
  if (p === '') return Object.keys(ConfigDocument.shape);
  if (p === 'workflow') return Object.keys(WorkflowConfig.shape);
  if (p === 'workflow.organiser') return ['profile'];
  if (/^workflow\.roles\.[^.]+$/.test(p)) return ['agent', 'profile', 'description'];
  if (p === 'models') return Object.keys(DocumentModels.shape);
  if (/^models\.profiles\.[^.]+$/.test(p)) return Object.keys(Profile.shape);
  if (p === 'models.assign') return ['agents', 'taskTypes', 'backends'];
  if (p === 'models.assign.backends') return ['claude', 'openai'];
  return undefined;
}

/** The sections of a document as written (defaults not applied), for merging into a config file. */
export interface DocumentSections {
  workflow?: ConfigLayer;
  models?: ConfigLayer;
}

/** Validates a document read from `file`; errors name the file, the field and what is allowed. */
export function parseConfigDocument(raw: unknown, file: string): DocumentSections {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new A2AError('VALIDATION_ERROR', `${file}: expected an object { "version": ${CONFIG_DOCUMENT_VERSION}, "workflow": …, "models": … }`, { where: file });
  }
  const version = (raw as { version?: unknown }).version;
  // the version first: a later document's new fields would otherwise read as typos
  if (version !== CONFIG_DOCUMENT_VERSION) {
    const got = version === undefined ? 'missing' : JSON.stringify(version);
    throw new A2AError('VALIDATION_ERROR', `${file}: version: ${got} is not a version this a2a reads (supported: ${CONFIG_DOCUMENT_VERSION})`, { where: `${file}: version` });
  }
  const parsed = ConfigDocument.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => {
      const allowed = issue.code === 'unrecognized_keys' ? allowedKeys(issue.path) : undefined;
      return { path: issue.path, message: allowed ? `${issue.message} (allowed: ${allowed.join(', ')})` : issue.message };
    });
    throw new A2AError('VALIDATION_ERROR', `${file}: invalid configuration document:\n${describeIssues(issues)}`, { where: file });
  }
  const { workflow, models } = raw as DocumentSections;
  if (workflow === undefined && models === undefined) {
    throw new A2AError('VALIDATION_ERROR', `${file}: the document has neither a "workflow" nor a "models" section: nothing to import`, { where: file });
  }
  return { ...(workflow !== undefined ? { workflow } : {}), ...(models !== undefined ? { models } : {}) };
}

/** One change to a config file: set `path` to `value` (the nodes on the way are created). */
export interface ConfigEdit {
  path: string[];
  value: unknown;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What importing the document changes. Each role, profile and assignment it holds replaces the
 * one of the same name (whole: a profile is never half one provider, half another); the document's
 * other workflow fields and `models.default` replace theirs; everything else in the file stays.
 */
export function importEdits(sections: DocumentSections): ConfigEdit[] {
  const edits: ConfigEdit[] = [];
  const byName = (path: string[], value: unknown) => {
    if (isPlainObject(value)) for (const [name, v] of Object.entries(value)) edits.push({ path: [...path, name], value: v });
    else edits.push({ path, value });
  };
  for (const [key, value] of Object.entries(sections.workflow ?? {})) {
    if (key === 'roles') byName(['workflow', 'roles'], value);
    else edits.push({ path: ['workflow', key], value });
  }
  for (const [key, value] of Object.entries(sections.models ?? {})) {
    if (key === 'profiles') byName(['models', 'profiles'], value);
    else if (key === 'assign' && isPlainObject(value)) for (const [kind, map] of Object.entries(value)) byName(['models', 'assign', kind], map);
    else edits.push({ path: ['models', key], value });
  }
  return edits;
}

/** `data` with the edits made (a copy; a scalar in the way of a path is replaced by an object). */
export function applyEdits(data: ConfigLayer, edits: ConfigEdit[]): ConfigLayer {
  const out = structuredClone(data);
  for (const { path, value } of edits) {
    let node: Record<string, unknown> = out;
    for (const key of path.slice(0, -1)) {
      if (!isPlainObject(node[key])) node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
    node[path.at(-1)!] = structuredClone(value);
  }
  return out;
}

/** A base URL without what could be a credential: user and password, and query parameters named like one. */
function portableUrl(url: string): { url: string; dropped: boolean } {
  const u = new URL(url);
  let dropped = u.username !== '' || u.password !== '';
  u.username = '';
  u.password = '';
  for (const name of [...u.searchParams.keys()]) {
    if (/key|token|secret|passw|auth|sig|credential/i.test(name)) {
      u.searchParams.delete(name);
      dropped = true;
    }
  }
  return { url: dropped ? u.toString() : url, dropped };
}

export interface ExportedDocument {
  document: ConfigDocument;
  /** What was left out or replaced, one line each, naming the field (never the value). */
  notes: string[];
}

/**
 * The document of a validated configuration: every standard role with its agent and profile, the
 * custom roles, the rest of the workflow section, and the profiles with `default` and `assign`.
 */
export function exportDocument(config: RunConfig, roles: Record<string, EffectiveRole>, organiserProfile: string): ExportedDocument {
  const notes: string[] = [];
  const ordered = [...STANDARD_ROLES.filter((r) => roles[r]), ...Object.keys(roles).filter((r) => !roles[r]!.standard).sort()];
  const workflow = {
    roles: Object.fromEntries(
      ordered.map((r) => {
        const { agent, profile, description } = roles[r]!;
        return [r, { agent, profile, ...(description !== undefined ? { description } : {}) }];
      }),
    ),
    organiser: { profile: organiserProfile },
    reviewers: config.workflow.reviewers,
    maxPlanRevisions: config.workflow.maxPlanRevisions,
    maxFixRounds: config.workflow.maxFixRounds,
    secondaryCoders: config.workflow.secondaryCoders,
    maxWaits: config.workflow.maxWaits,
    ...(config.workflow.testCommand !== undefined ? { testCommand: config.workflow.testCommand } : {}),
  };
  // only the fields a profile has (the schema is strict: a key field cannot be configured), and
  // no credential in a URL
  const profiles = Object.fromEntries(
    Object.entries(config.models.profiles).map(([name, profile]) => {
      const copy: Profile = { ...Profile.parse(profile) };
      if (copy.baseURL !== undefined) {
        const { url, dropped } = portableUrl(copy.baseURL);
        if (dropped) notes.push(`models.profiles.${name}.baseURL: credentials in the URL were left out`);
        copy.baseURL = url;
      }
      return [name, copy];
    }),
  );
  const models = {
    profiles,
    ...(config.models.default !== undefined ? { default: config.models.default } : {}),
    ...(config.models.assign !== undefined ? { assign: config.models.assign } : {}),
  };
  const document: ConfigDocument = { version: CONFIG_DOCUMENT_VERSION, workflow: WorkflowConfig.parse(workflow), models: DocumentModels.parse(models) };
  // the last guard: any value the process knows as a secret, or shaped like a credential, becomes a marker
  const redacted = secrets.deep(document, 'records');
  if (JSON.stringify(redacted) !== JSON.stringify(document)) notes.push('a value that is (or looks like) a secret was replaced by a [redacted] marker');
  return { document: redacted, notes };
}
