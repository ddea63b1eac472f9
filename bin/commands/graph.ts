/** `a2a graph <machine> [--format mermaid|json|paths]`: a machine's graph, as the tests see it. */
import { A2AError } from '../../actors/errors.js';
import { chartModels, describePath, generatePaths, machines, toGraphJson, toMermaid } from '../../actors/graph/index.js';
import { GRAPH_FORMATS } from './graphNames.js';

export function graphCommand(name: string, options: { format?: string }, out: NodeJS.WritableStream): number {
  const machine = machines[name];
  if (!machine) {
    throw new A2AError('NOT_FOUND', `unknown machine "${name}". Machines: ${Object.keys(machines).join(', ')}`);
  }
  const format = options.format ?? 'mermaid';
  switch (format) {
    case 'mermaid':
      out.write(toMermaid(machine));
      return 0;
    case 'json':
      out.write(`${JSON.stringify(toGraphJson(machine), null, 2)}\n`);
      return 0;
    case 'paths': {
      const model = chartModels.find((m) => m.name === name)!;
      const { shortest, simple, edges, vertices } = generatePaths(model);
      out.write(`# ${name}: ${vertices} vertices; ${shortest.length} shortest paths, ${simple.length} simple paths, ${edges.length} edge paths\n`);
      out.write(`# (the model-based tests run all of them; shown: the shortest path to every vertex)\n`);
      for (const p of shortest) out.write(`${describePath(p)}\n`);
      return 0;
    }
    default:
      throw new A2AError('VALIDATION_ERROR', `unknown format "${format}". Formats: ${GRAPH_FORMATS.join(', ')}`);
  }
}
