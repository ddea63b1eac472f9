/**
 * JSON Schema (as `z.toJSONSchema` makes it from the zod schemas) said in Markdown: a field's type
 * in words, and an object's fields flattened into table rows (`git.github.repo`, records as
 * `profiles.<name>.model`, array items as `subtasks[].prompt`), each with its comment.
 */
export type Json = Record<string, unknown>;

export interface FieldRow {
  path: string;
  type: string;
  required: boolean;
  default: unknown;
  description: string;
}

const SAFE = Number.MAX_SAFE_INTEGER;

const code = (value: unknown) => `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``;

/** A schema's type in words: `integer 0–8`, `one of \`a\`, \`b\``, `array of string`. */
export function typeText(schema: Json): string {
  if (Array.isArray(schema.anyOf)) return (schema.anyOf as Json[]).map(typeText).join(' or ');
  if (Array.isArray(schema.oneOf)) return (schema.oneOf as Json[]).map(typeText).join(' or ');
  if (schema.const !== undefined) return code(schema.const);
  if (Array.isArray(schema.enum)) {
    if (schema.enum.length === 1) return code(schema.enum[0]);
    return schema.enum.length > 20 ? `one of ${schema.enum.length} names` : `one of ${(schema.enum as unknown[]).map(code).join(', ')}`;
  }
  const type = schema.type;
  if (Array.isArray(type)) return type.join(' or ');
  switch (type) {
    case 'string': {
      const parts: string[] = [schema.format === 'uri' ? 'URL' : 'string'];
      const min = schema.minLength as number | undefined;
      const max = schema.maxLength as number | undefined;
      if (max !== undefined) parts.push(`${min ?? 0}–${max} characters`);
      else if (min !== undefined && min > 1) parts.push(`at least ${min} characters`);
      else if (min === 1) parts.push('not empty');
      return parts.join(', ');
    }
    case 'integer':
    case 'number':
      return `${type}${range(schema)}`;
    case 'boolean':
      return 'boolean';
    case 'null':
      return '`null`';
    case 'array': {
      const items = schema.items as Json | undefined;
      const bounds = schema.minItems || schema.maxItems ? ` (${schema.minItems ? `at least ${String(schema.minItems)}` : ''}${schema.minItems && schema.maxItems ? ', ' : ''}${schema.maxItems ? `at most ${String(schema.maxItems)}` : ''})` : '';
      const each = items ? (isObject(items) ? 'objects' : typeText(items)) : 'anything';
      return `array of ${each.includes(',') ? `${each.split(',')[0]} (each ${each.slice(each.indexOf(',') + 1).trim()})` : each}${bounds}`;
    }
    case 'object':
      if (isRecord(schema)) return `map of names to ${typeText(schema.additionalProperties as Json)}`;
      return 'object';
    default:
      return 'anything';
  }
}

function range(schema: Json): string {
  const min = schema.minimum as number | undefined;
  const exclusiveMin = schema.exclusiveMinimum as number | undefined;
  const max = schema.maximum as number | undefined;
  const upper = max !== undefined && max < SAFE ? max : undefined;
  if (exclusiveMin === 0 && upper === undefined) return ' > 0';
  const lower = min !== undefined && min > -SAFE ? min : undefined;
  if (lower !== undefined && upper !== undefined) return ` ${lower}–${upper}`;
  if (lower !== undefined) return ` ≥ ${lower}`;
  if (exclusiveMin !== undefined) return ` > ${exclusiveMin}${upper !== undefined ? `, ≤ ${upper}` : ''}`;
  if (upper !== undefined) return ` ≤ ${upper}`;
  return '';
}

const isObject = (schema: Json) => schema.type === 'object' && typeof schema.properties === 'object';
const isRecord = (schema: Json) => schema.type === 'object' && !schema.properties && typeof schema.additionalProperties === 'object';

/**
 * The rows of an object schema's fields, depth first: an object field is a row, then its own
 * fields; a record's values are `<name>`; array items `[]`; a union's object member is expanded.
 */
export function fieldRows(schema: Json, prefix = '', describe: (path: string[]) => string | undefined = () => undefined, at: string[] = []): FieldRow[] {
  const rows: FieldRow[] = [];
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  const required = new Set((schema.required ?? []) as string[]);
  for (const [key, field] of Object.entries(properties)) {
    const path = `${prefix}${key}`;
    const where = [...at, key];
    rows.push({ path, type: typeText(field), required: required.has(key), default: field.default, description: (field.description as string | undefined) ?? describe(where) ?? '' });
    rows.push(...nested(field, path, describe, where));
  }
  return rows;
}

function nested(field: Json, path: string, describe: (path: string[]) => string | undefined, at: string[]): FieldRow[] {
  if (isObject(field)) return fieldRows(field, `${path}.`, describe, at);
  if (isRecord(field)) {
    const value = field.additionalProperties as Json;
    return [...(isObject(value) ? fieldRows(value, `${path}.<name>.`, describe, [...at, '*']) : []), ...unionMembers(value, `${path}.<name>`, describe, [...at, '*'])];
  }
  if (field.type === 'array' && field.items && isObject(field.items as Json)) return fieldRows(field.items as Json, `${path}[].`, describe, [...at, '[]']);
  return unionMembers(field, path, describe, at);
}

function unionMembers(field: Json, path: string, describe: (path: string[]) => string | undefined, at: string[]): FieldRow[] {
  const members = (field.anyOf ?? field.oneOf) as Json[] | undefined;
  if (!members) return [];
  return members.flatMap((m) => (isObject(m) ? fieldRows(m, `${path}.`, describe, at) : []));
}

/** Sets `description` on every field of a schema that has a comment (for editors' hovers). */
export function describeSchema(schema: Json, describe: (path: string[]) => string | undefined, at: string[] = []): void {
  const properties = (schema.properties ?? {}) as Record<string, Json>;
  for (const [key, field] of Object.entries(properties)) {
    const text = describe([...at, key]);
    if (text && !field.description) field.description = text;
    visitNested(field, describe, [...at, key]);
  }
}

function visitNested(field: Json, describe: (path: string[]) => string | undefined, at: string[]): void {
  if (isObject(field)) describeSchema(field, describe, at);
  else if (isRecord(field)) visitNested(field.additionalProperties as Json, describe, [...at, '*']);
  else if (field.type === 'array' && field.items) visitNested(field.items as Json, describe, [...at, '[]']);
  for (const member of ((field.anyOf ?? field.oneOf) as Json[] | undefined) ?? []) visitNested(member, describe, at);
}

/**
 * Text from the code (a description, a doc comment) as Markdown: a bare `<name>` outside code
 * becomes code (VitePress would read it as an HTML tag, GitHub would drop it).
 */
export function mdText(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replace(/<([^<>\s`]+)>/g, '`<$1>`')))
    .join('');
}

/** A Markdown table cell: pipes escaped, newlines folded, tags quoted. */
export const cell = (text: string) => mdText(text).replace(/\|/g, '\\|').replace(/\n+/g, ' ');

/** A default value for a table: `2`, `"@agent"`, blank when none. */
export function defaultText(value: unknown): string {
  if (value === undefined) return '';
  if (typeof value === 'object' && value !== null && Object.keys(value).length === 0) return '';
  const text = JSON.stringify(value);
  return text.length > 60 ? `\`${text.slice(0, 57)}…\`` : `\`${text}\``;
}

/** Rows as a Markdown table (without the default column when no row has one). */
export function table(rows: FieldRow[], options: { required?: boolean } = {}): string {
  const withDefault = rows.some((r) => defaultText(r.default) !== '');
  const columns: Array<[string, (r: FieldRow) => string]> = [
    [options.required ? 'field' : 'key', (r) => `\`${r.path}\``],
    ['type', (r) => cell(r.type)],
    ...(options.required ? [['required', (r: FieldRow) => (r.required ? 'yes' : '')] as [string, (r: FieldRow) => string]] : []),
    ...(withDefault ? [['default', (r: FieldRow) => cell(defaultText(r.default))] as [string, (r: FieldRow) => string]] : []),
    ['what it is for', (r) => cell(r.description)],
  ];
  return [`| ${columns.map(([h]) => h).join(' | ')} |`, `|${columns.map(() => '---|').join('')}`, ...rows.map((r) => `| ${columns.map(([, f]) => f(r)).join(' | ')} |`)].join('\n');
}
