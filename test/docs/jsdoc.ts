/**
 * The doc comments of the zod schemas, read from their source: a field's `/** … *\/` above it in a
 * `z.strictObject({ … })` says what it is for, and the reference pages (and the configuration's
 * JSON Schema, for editors) show it. zod keeps no comments at run time, so the source is parsed
 * (TypeScript's parser only: no type-checking) and each comment is keyed by its schema's name and
 * the path of object keys to it: `Limits␀maxDepth`, `RunConfig␀git␀onComplete`. Where a field's
 * value is another named schema (`limits: Limits.prefault({})`, `...Usage`), an alias says so, so
 * that `RunConfig␀limits␀maxDepth` finds `Limits␀maxDepth`. Record values are `*`, array items
 * `[]`; an enum's members `=VALUE`.
 */
import { readFileSync } from 'node:fs';
import ts from 'typescript';

const SEP = '\0';

export class SchemaDocs {
  readonly #docs = new Map<string, string>();
  readonly #aliases = new Map<string, string[]>();

  constructor(files: string[]) {
    for (const file of files) this.#read(file);
  }

  /** The comment of the field at `path` (a schema's name, then keys), through aliases. */
  lookup(path: string[], seen = new Set<string>()): string | undefined {
    const key = path.join(SEP);
    const direct = this.#docs.get(key);
    if (direct) return direct;
    if (seen.has(key)) return undefined;
    seen.add(key);
    for (let i = path.length; i >= 1; i--) {
      for (const name of this.#aliases.get(path.slice(0, i).join(SEP)) ?? []) {
        const found = this.lookup([name, ...path.slice(i)], seen);
        if (found) return found;
      }
    }
    return undefined;
  }

  #read(file: string): void {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    for (const statement of source.statements) {
      if (!ts.isVariableStatement(statement)) continue;
      for (const declaration of statement.declarationList.declarations) {
        if (!ts.isIdentifier(declaration.name) || !declaration.initializer) continue;
        const name = declaration.name.text;
        const doc = docOf(statement);
        if (doc) this.#docs.set(name, doc);
        this.#value(declaration.initializer, [name], source);
      }
    }
  }

  #alias(path: string[], name: string): void {
    const key = path.join(SEP);
    this.#aliases.set(key, [...(this.#aliases.get(key) ?? []), name]);
  }

  #object(node: ts.ObjectLiteralExpression, path: string[], source: ts.SourceFile): void {
    for (const property of node.properties) {
      if (ts.isSpreadAssignment(property)) {
        this.#value(property.expression, path, source);
        continue;
      }
      const key = property.name && (ts.isIdentifier(property.name) || ts.isStringLiteral(property.name) ? property.name.text : undefined);
      if (!key) continue;
      const doc = docOf(property);
      if (doc) this.#docs.set([...path, key].join(SEP), doc);
      if (ts.isPropertyAssignment(property)) this.#value(property.initializer, [...path, key], source);
      else if (ts.isShorthandPropertyAssignment(property)) this.#alias([...path, key], key);
    }
  }

  #value(node: ts.Expression, path: string[], source: ts.SourceFile): void {
    if (ts.isIdentifier(node)) {
      if (node.text !== 'z') this.#alias(path, node.text);
    } else if (ts.isObjectLiteralExpression(node)) {
      this.#object(node, path, source);
    } else if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node)) {
      this.#value(node.expression, path, source);
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const method = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isIdentifier(callee) ? callee.text : '';
      const args = node.arguments;
      if (method === 'record') {
        if (args[1]) this.#value(args[1], [...path, '*'], source);
      } else if (method === 'array') {
        if (args[0]) this.#value(args[0], [...path, '[]'], source);
      } else if (method === 'enum' && args[0] && ts.isArrayLiteralExpression(args[0])) {
        for (const element of args[0].elements) {
          if (!ts.isStringLiteral(element)) continue;
          const doc = leadingDoc(element, source);
          if (doc) this.#docs.set([...path].join(SEP) + `=${element.text}`, doc);
        }
      } else {
        // z.object({…}), z.union([…]), a helper's data({…}), and every chained call down to its root
        for (const arg of args) {
          if (ts.isArrayLiteralExpression(arg)) for (const element of arg.elements) this.#value(element, path, source);
          else if (ts.isObjectLiteralExpression(arg) || ts.isCallExpression(arg) || (ts.isIdentifier(arg) && method !== 'prefault' && method !== 'default')) this.#value(arg, path, source);
        }
      }
      if (ts.isPropertyAccessExpression(callee) && method !== 'record' && method !== 'array' && method !== 'enum') this.#value(callee.expression, path, source);
    }
  }
}

/** The text of a node's last JSDoc comment, on one line. */
function docOf(node: ts.Node): string | undefined {
  const docs = (node as { jsDoc?: ts.JSDoc[] }).jsDoc;
  const last = docs?.at(-1);
  const text = last ? ts.getTextOfJSDocComment(last.comment) : undefined;
  return text ? oneLine(text) : undefined;
}

/** A `/** … *\/` comment right before a node that is no declaration (an enum's member). */
function leadingDoc(node: ts.Node, source: ts.SourceFile): string | undefined {
  const ranges = ts.getLeadingCommentRanges(source.text, node.pos) ?? [];
  const last = ranges.at(-1);
  if (!last) return undefined;
  const text = source.text.slice(last.pos, last.end);
  if (!text.startsWith('/**')) return undefined;
  return oneLine(text.replace(/^\/\*\*|\*\/$/g, '').replace(/^\s*\*\s?/gm, ''));
}

const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
