/**
 * The machines' diagrams in the docs (docs/reference/machines.md) are what `a2a graph <machine>
 * --format mermaid` prints: `npm run docs` rewrites the blocks between `<!-- graph:NAME -->` and
 * `<!-- /graph:NAME -->`, and test/docs/generated.test.ts fails when one differs from what the
 * command prints now. The page's model-coverage table (coverage.ts) is written by the same command
 * and checked by test/model/model.test.ts.
 */
import { join } from 'node:path';
import { machines, toMermaid } from '../../actors/graph/index.js';
import { DOCS } from './markdown.js';

/** The page that holds every machine's diagram and the coverage table. */
export const MACHINES_PAGE = join(DOCS, 'reference', 'machines.md');

export function block(name: string): string {
  return `<!-- graph:${name} -->\n\`\`\`mermaid\n${toMermaid(machines[name]!)}\`\`\`\n<!-- /graph:${name} -->`;
}

/** The text with every graph block regenerated. */
export function regenerated(text: string): string {
  return text.replace(/<!-- graph:(\w+) -->[\s\S]*?<!-- \/graph:\1 -->/g, (_all, name: string) => {
    if (!machines[name]) throw new Error(`the page names an unknown machine "${name}"`);
    return block(name);
  });
}
