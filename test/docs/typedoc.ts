/**
 * The API reference: TypeDoc's Markdown (typedoc-plugin-markdown) of the package's entry point,
 * index.ts, written into the site by `npm run docs:build` (never committed: it is made from the
 * declarations in seconds). Only index.ts and what it imports are read (docs/.vitepress/
 * tsconfig.api.json), without type-checking (`npm run typecheck` does that).
 *
 * One fix-up: a type exported as `export type { ErrorCode }` whose name is also a zod schema's
 * (`const ErrorCode = z.enum(…)`; `type ErrorCode = z.infer<typeof ErrorCode>`) came out twice,
 * once as the schema's type (`ZodEnum<…>`). The schema's is dropped, and the type is shown as
 * what `z.infer`/`z.input` resolve to (the fields a user writes), not as `z.infer<typeof X>`.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Application, Converter, ReflectionKind, type Context, type DeclarationReflection, type SomeType } from 'typedoc';
import ts from 'typescript';
import { ROOT } from './markdown.js';

export async function writeApiPages(out: string): Promise<number> {
  rmSync(out, { recursive: true, force: true });
  const app = await Application.bootstrapWithPlugins({
    entryPoints: [join(ROOT, 'index.ts')],
    tsconfig: join(ROOT, 'docs', '.vitepress', 'tsconfig.api.json'),
    plugin: ['typedoc-plugin-markdown'],
    out,
    readme: 'none',
    name: 'a2a',
    skipErrorChecking: true,
    excludeExternals: true,
    excludePrivate: true,
    excludeInternal: true,
    // no git remote to link sources to (TypeDoc says so at Warn): "Defined in: file:line" as text
    logLevel: 'Error',
    // typedoc-plugin-markdown, for VitePress
    entryFileName: 'index',
    hidePageHeader: true,
    hideBreadcrumbs: true,
    useCodeBlocks: true,
    parametersFormat: 'table',
    interfacePropertiesFormat: 'table',
    classPropertiesFormat: 'table',
    typeAliasPropertiesFormat: 'table',
    enumMembersFormat: 'table',
    propertyMembersFormat: 'table',
    typeDeclarationFormat: 'table',
    indexFormat: 'table',
    sanitizeComments: true,
  } as Record<string, unknown>);
  fixZodTypes(app);
  const project = await app.convert();
  if (!project || app.logger.hasErrors()) throw new Error('TypeDoc could not convert index.ts (its errors are above)');
  await app.generateOutputs(project);
  if (app.logger.hasErrors()) throw new Error('TypeDoc could not write the API pages (its errors are above)');
  return Object.keys(project.reflections).length;
}

/** See the file's comment. */
function fixZodTypes(app: Application): void {
  // converted after the declaration's event: the alias's type is replaced once the project is built
  const resolved = new Map<DeclarationReflection, SomeType>();
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (context: Context, reflection: DeclarationReflection) => {
    if (reflection.kind !== ReflectionKind.TypeAlias) return;
    const declaration = context.getSymbolFromReflection(reflection)?.declarations?.find((d): d is ts.TypeAliasDeclaration => ts.isTypeAliasDeclaration(d));
    if (declaration && isZodInferred(declaration)) resolved.set(reflection, context.converter.convertType(context.withScope(reflection), context.checker.getTypeAtLocation(declaration.name)));
  });
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context: Context) => {
    const drop: DeclarationReflection[] = [];
    for (const reflection of Object.values(context.project.reflections)) {
      if (!reflection.kindOf(ReflectionKind.TypeAlias)) continue;
      const alias = reflection as DeclarationReflection;
      // the schema's own type (ZodObject<…>, ZodEnum<…>) beside the real alias of the same name
      if (alias.type?.type === 'reference' && /^Zod[A-Z]/.test(alias.type.name) && duplicateExists(context, alias)) drop.push(alias);
    }
    for (const alias of drop) context.project.removeReflection(alias);
    for (const [alias, type] of resolved) alias.type = type;
    resolved.clear();
  });
}

function duplicateExists(context: Context, alias: DeclarationReflection): boolean {
  return Object.values(context.project.reflections).some((r) => r !== alias && r.name === alias.name && r.kindOf(ReflectionKind.TypeAlias) && r.parent === alias.parent);
}

/** `type X = z.infer<typeof X>` (or z.input, z.output). */
function isZodInferred(declaration: ts.TypeAliasDeclaration): boolean {
  const node = declaration.type;
  if (!ts.isTypeReferenceNode(node)) return false;
  const name = node.typeName.getText();
  return /^(z\.)?(infer|input|output)$/.test(name);
}
