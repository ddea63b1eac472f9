/**
 * An MCP server's questions (elicitation) answered by people. A server asks during a call: on the
 * 2026-07-28 revision by answering `input_required` (the SDK asks the same handler, then calls
 * again with the answers), on earlier ones by sending `elicitation/create` while the call runs.
 * Either way the question becomes an `mcp_elicitation` permission request of the calling session,
 * which goes the way every permission goes (the session's level, its parents', the orchestrator's
 * matrix, then a person in the run's inbox: `a2a inbox`, the terminal, the studio, a program's
 * `human` handler). A person answers with the content (JSON, or the one value a one-field form
 * asks for) or declines; the content is checked against the schema the server sent, and asked
 * again (twice at most) when it does not fit. Approved without a person (auto_approve, a parent's
 * level) it is accepted with the defaults the server proposes, or goes to a person when the form
 * has a required field without one. Nobody answering in time declines it (the inbox's timeout).
 */
import type { ElicitationAsk, PermissionAnswer, PermissionTier } from '../../machines/protocol/index.js';
import type { ToolContext } from '../../actors/tools/index.js';
import { clip } from './clientConnect.js';

/** What the server gets back (MCP's ElicitResult). */
export type ElicitAnswer = { action: 'accept'; content: Record<string, unknown> } | { action: 'decline' | 'cancel' };

/** Asks of a person per question: the first, and two more when an answer does not fit the schema. */
const MAX_ASKS = 3;

type Property = { type?: unknown; enum?: unknown; oneOf?: unknown; anyOf?: unknown; items?: unknown; default?: unknown; minimum?: unknown; maximum?: unknown; minLength?: unknown; maxLength?: unknown; format?: unknown; title?: unknown; description?: unknown };

/**
 * Why a requested schema is not one a2a can put to a person (MCP's restricted form: an object of
 * primitive properties: string, number, integer, boolean, enum, multi-select), or null.
 */
export function schemaProblem(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'requestedSchema is not an object';
  const s = schema as { type?: unknown; properties?: unknown; required?: unknown };
  if (s.type !== 'object') return `requestedSchema.type must be "object", not ${JSON.stringify(s.type)}`;
  if (typeof s.properties !== 'object' || s.properties === null || Array.isArray(s.properties)) return 'requestedSchema.properties must be an object';
  for (const [name, raw] of Object.entries(s.properties)) {
    const p = raw as Property;
    if (typeof p !== 'object' || p === null) return `requestedSchema.properties.${name} is not a schema`;
    const enumValues = p.enum ?? (Array.isArray(p.oneOf) ? p.oneOf.map((o) => (o as { const?: unknown }).const) : undefined);
    if (enumValues !== undefined && (!Array.isArray(enumValues) || !enumValues.every((v) => typeof v === 'string'))) return `requestedSchema.properties.${name}: an enum must list strings`;
    if (p.type === 'array') {
      const items = p.items as Property | undefined;
      const options = items?.enum ?? (Array.isArray(items?.anyOf) ? (items.anyOf as Array<{ const?: unknown }>).map((o) => o.const) : undefined);
      if (!Array.isArray(options) || !options.every((v) => typeof v === 'string')) return `requestedSchema.properties.${name}: an array must be a multi-select of string options`;
      continue;
    }
    if (!['string', 'number', 'integer', 'boolean'].includes(String(p.type))) {
      return `requestedSchema.properties.${name}.type must be string, number, integer or boolean (MCP's elicitation forms are flat), not ${JSON.stringify(p.type)}`;
    }
  }
  if (s.required !== undefined && (!Array.isArray(s.required) || !s.required.every((r) => typeof r === 'string' && r in (s.properties as object)))) {
    return 'requestedSchema.required must list names of its properties';
  }
  return null;
}

function properties(schema: Record<string, unknown>): Array<[string, Property, boolean]> {
  const props = (schema.properties ?? {}) as Record<string, Property>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  return Object.entries(props).map(([name, p]) => [name, p, required.has(name)]);
}

function options(p: Property): string[] | undefined {
  if (Array.isArray(p.enum)) return p.enum as string[];
  if (Array.isArray(p.oneOf)) return (p.oneOf as Array<{ const: string }>).map((o) => o.const);
  return undefined;
}

/** One line for a person: what to answer, field by field. */
export function describeSchema(schema: Record<string, unknown>): string {
  const fields = properties(schema).map(([name, p, required]) => {
    const choice = options(p);
    const type = choice ? choice.map((c) => JSON.stringify(c)).join('|') : p.type === 'array' ? `list of ${(options((p.items ?? {}) as Property) ?? []).join('|')}` : String(p.type);
    const extra = [required ? 'required' : 'optional', p.default !== undefined ? `default ${JSON.stringify(p.default)}` : '', typeof p.description === 'string' ? clip(p.description, 120) : ''].filter(Boolean).join(', ');
    return `"${name}": ${type} (${extra})`;
  });
  return fields.length ? `{ ${fields.join('; ')} }` : '{} (nothing to fill in: approve or decline)';
}

/** The content of the defaults the server proposes, or null when a required field has none. */
export function defaultsOf(schema: Record<string, unknown>): Record<string, unknown> | null {
  const content: Record<string, unknown> = {};
  for (const [name, p, required] of properties(schema)) {
    if (p.default !== undefined) content[name] = p.default;
    else if (required) return null;
  }
  return content;
}

/** Why content does not fit the schema (naming the field and what is allowed), or null. */
export function contentProblem(content: Record<string, unknown>, schema: Record<string, unknown>): string | null {
  const listed = properties(schema);
  const known = new Set(listed.map(([name]) => name));
  for (const key of Object.keys(content)) if (!known.has(key)) return `"${key}" is not a field of this form (fields: ${[...known].join(', ') || 'none'})`;
  for (const [name, p, required] of listed) {
    const value = content[name];
    if (value === undefined) {
      if (required) return `"${name}" is required`;
      continue;
    }
    const choice = options(p);
    if (choice) {
      if (typeof value !== 'string' || !choice.includes(value)) return `"${name}" must be one of ${choice.map((c) => JSON.stringify(c)).join(', ')}, not ${JSON.stringify(value)}`;
    } else if (p.type === 'array') {
      const allowed = options((p.items ?? {}) as Property) ?? [];
      if (!Array.isArray(value) || !value.every((v) => typeof v === 'string' && allowed.includes(v))) return `"${name}" must be a list of ${allowed.map((c) => JSON.stringify(c)).join(', ')}`;
    } else if (p.type === 'string') {
      if (typeof value !== 'string') return `"${name}" must be a string, not ${JSON.stringify(value)}`;
      if (typeof p.minLength === 'number' && value.length < p.minLength) return `"${name}" must have at least ${p.minLength} characters`;
      if (typeof p.maxLength === 'number' && value.length > p.maxLength) return `"${name}" must have at most ${p.maxLength} characters`;
      if (p.format === 'email' && !/^[^@\s]+@[^@\s]+$/.test(value)) return `"${name}" must be an email address`;
    } else if (p.type === 'number' || p.type === 'integer') {
      if (typeof value !== 'number' || !Number.isFinite(value) || (p.type === 'integer' && !Number.isInteger(value))) return `"${name}" must be ${p.type === 'integer' ? 'a whole number' : 'a number'}, not ${JSON.stringify(value)}`;
      if (typeof p.minimum === 'number' && value < p.minimum) return `"${name}" must be at least ${p.minimum}`;
      if (typeof p.maximum === 'number' && value > p.maximum) return `"${name}" must be at most ${p.maximum}`;
    } else if (p.type === 'boolean' && typeof value !== 'boolean') {
      return `"${name}" must be true or false, not ${JSON.stringify(value)}`;
    }
  }
  return null;
}

/**
 * What a person wrote, as content: a JSON object, or for a form of one field (or one required
 * field) its value alone (`Lisbon`, `3`, `yes`); nothing: the defaults. The fields left out get
 * the defaults the server proposes; the whole is checked against the schema.
 */
export function parseAnswer(text: string | undefined, schema: Record<string, unknown>): { content: Record<string, unknown> } | { error: string } {
  const trimmed = (text ?? '').trim();
  let content: Record<string, unknown>;
  if (!trimmed) {
    const defaults = defaultsOf(schema);
    if (!defaults) return { error: `the answer is empty and the form has required fields without a default: ${describeSchema(schema)}` };
    content = defaults;
  } else if (trimmed.startsWith('{') || trimmed.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { error: 'the answer is not a JSON object' };
      content = parsed as Record<string, unknown>;
    } catch (error) {
      return { error: `the answer is not valid JSON (${(error as Error).message})` };
    }
  } else {
    const fields = properties(schema);
    const target = fields.length === 1 ? fields[0] : fields.filter(([, , required]) => required).length === 1 ? fields.find(([, , required]) => required) : undefined;
    if (!target) return { error: `give the answer as a JSON object: ${describeSchema(schema)}` };
    const [name, p] = target;
    content = { [name]: coerce(trimmed, p) };
  }
  for (const [name, p] of properties(schema)) if (content[name] === undefined && p.default !== undefined) content[name] = p.default;
  const problem = contentProblem(content, schema);
  return problem ? { error: problem } : { content };
}

function coerce(text: string, p: Property): unknown {
  if (p.type === 'number' || p.type === 'integer') return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
  if (p.type === 'boolean') return /^(y|yes|true)$/i.test(text) ? true : /^(n|no|false)$/i.test(text) ? false : text;
  if (p.type === 'array') return text.split(',').map((t) => t.trim()).filter(Boolean);
  return text;
}

export interface ElicitationContext {
  server: string;
  tool: string;
  /** The server's own tier for its questions (config `elicitation`), over the matrix. */
  tier: PermissionTier | undefined;
  /** The call that asks; none: the question came outside a call, and is declined. */
  ctx: ToolContext | null;
  asked(data: Record<string, unknown>): void;
  answered(data: Record<string, unknown>): void;
}

/**
 * The SDK's refusal of a server's question whose form MCP does not allow (it checks the request
 * before a2a sees it, and says so in a long dump of schema errors), told in one line; other text as it is.
 */
export function shortenRefusal(text: string): string {
  const at = text.indexOf('Invalid elicitation request');
  if (at < 0) return text;
  const paths = [...text.slice(at).matchAll(/"path":\s*\[([^\]]*)\]/g)].map((m) => m[1]!.replace(/[\s"]/g, '').split(',').filter(Boolean).join('.'));
  const where = paths.sort((a, b) => b.length - a.length)[0];
  return `${text.slice(0, at)}the MCP server asked a question a2a could not put to anyone: its form is not one MCP allows${where ? ` (at ${where})` : ''}; nobody was asked`;
}

/** Answers one question of a server: asks who the policy says, checks the answer, tells the run. */
export async function answerElicitation(params: { message?: unknown; requestedSchema?: unknown; mode?: unknown }, e: ElicitationContext): Promise<ElicitAnswer> {
  const base = { server: e.server, tool: e.tool };
  const done = (answer: ElicitAnswer, by: string, reason?: string): ElicitAnswer => {
    e.answered({ ...base, action: answer.action, by, ...(reason ? { reason: clip(reason, 500) } : {}), ...(answer.action === 'accept' ? { fields: Object.keys(answer.content) } : {}) });
    return answer;
  };
  const message = typeof params.message === 'string' ? params.message : '';
  if (params.mode === 'url') return done({ action: 'decline' }, 'a2a', 'a2a answers form questions only, not URL-mode elicitation');
  const problem = schemaProblem(params.requestedSchema);
  const schema = (problem ? {} : params.requestedSchema) as Record<string, unknown>;
  e.asked({ ...base, message: clip(message, 2_000), requestedSchema: problem ? {} : schema, ...(e.tier ? { tier: e.tier } : {}) });
  if (problem) return done({ action: 'decline' }, 'a2a', `the server's question cannot be put to anyone: ${problem}`);
  if (!e.ctx) return done({ action: 'decline' }, 'a2a', 'the server asked outside a tool call, where nobody can answer');
  if (e.tier === 'auto_deny') return done({ action: 'decline' }, 'policy', `elicitation is auto_deny for the MCP server "${e.server}"`);
  const defaults = defaultsOf(schema);
  if (e.tier === 'auto_approve' && defaults) return done({ action: 'accept', content: defaults }, 'policy', 'the server\'s defaults (elicitation is auto_approve for this server)');
  const ask: ElicitationAsk = { server: e.server, tool: e.tool, message: clip(message, 2_000), requestedSchema: schema };
  // a person is needed when the server's tier says so, or when only a person can give the content
  let needsPerson = e.tier === 'ask_user' || e.tier === 'auto_approve';
  let escalated = false;
  let fault = '';
  for (let attempt = 1; attempt <= MAX_ASKS; attempt++) {
    // what was wrong with the last answer first: a list or a title shows the start of it
    const detail = `${e.server}.${e.tool} asks: ${clip(message, 500)}${fault ? ` [your last answer: ${fault}]` : ''} — answer ${describeSchema(schema)}`;
    let answer: PermissionAnswer;
    try {
      answer = await e.ctx.permit({ action: 'mcp_elicitation', detail, elicitation: ask, ...(needsPerson ? { needsPerson: true } : {}) });
    } catch {
      // the session ended (or the call was cancelled) while it waited
      return done({ action: 'cancel' }, 'a2a', 'the call ended while the question waited');
    }
    if (!answer.approved) {
      const by = answer.decidedBy === 'timeout' ? 'timeout' : answer.decidedBy;
      return done({ action: 'decline' }, by, answer.reason ?? (answer.decidedBy === 'timeout' ? 'nobody answered in time' : `declined by ${answer.decidedBy}`));
    }
    if (answer.decidedBy !== 'human') {
      // approved by a level or the matrix: the server's defaults, when they fill the form
      if (defaults) return done({ action: 'accept', content: defaults }, answer.decidedBy, 'the server\'s defaults');
      if (escalated) return done({ action: 'decline' }, 'a2a', 'approved without a person, and the form has required fields without a default');
      escalated = true;
      needsPerson = true;
      attempt--;
      continue;
    }
    const parsed = parseAnswer(answer.text, schema);
    if ('content' in parsed) return done({ action: 'accept', content: parsed.content }, 'human');
    fault = parsed.error;
    e.asked({ ...base, message: clip(message, 2_000), requestedSchema: schema, attempt: attempt + 1 });
  }
  return done({ action: 'decline' }, 'a2a', `no answer fitted the form after ${MAX_ASKS} tries (the last: ${fault})`);
}
