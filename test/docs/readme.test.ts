import { readFileSync } from 'node:fs';
import { Window } from 'happy-dom';
import { describe, expect, it } from 'vitest';
import { machines, toMermaid } from '../../actors/graph/index.js';
import { main } from '../../bin/cli.js';
import { README, regenerated } from './readme.js';

describe('machine diagrams', () => {
  it('should parse every diagram `a2a graph` prints with Mermaid\'s own parser', async () => {
    // mermaid sanitises labels with DOMPurify, which wants a DOM
    const window = new Window();
    Object.assign(globalThis, { window, document: window.document });
    try {
      const { default: mermaid } = await import('mermaid');
      for (const [name, machine] of Object.entries(machines)) {
        await expect(mermaid.parse(toMermaid(machine)), name).resolves.toMatchObject({ diagramType: 'stateDiagram' });
      }
      await expect(mermaid.parse('stateDiagram-v2\n  state a {\n')).rejects.toThrow(/Parse error/);
    } finally {
      // the files of a worker share its globals: with a `window`, the OpenAI SDK refuses to start
      delete (globalThis as { window?: unknown }).window;
      delete (globalThis as { document?: unknown }).document;
      await window.happyDOM.close();
    }
  });

  it('should print the orchestrator as a stateDiagram-v2', async () => {
    let out = '';
    const io = { stdout: { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream, stderr: process.stderr };
    expect(await main(['graph', 'orchestrator', '--format', 'mermaid'], io)).toBe(0);
    expect(out.split('\n').slice(0, 3)).toEqual(['stateDiagram-v2', '  [*] --> running', '  state running {']);
    expect(out).toContain('running --> stopping : STOP');
  });

  it('should keep the README\'s diagrams in step with the machines (run `npm run docs` to update them)', () => {
    const text = readFileSync(README, 'utf8');
    for (const name of Object.keys(machines)) expect(text, name).toContain(`<!-- graph:${name} -->`);
    expect(regenerated(text)).toBe(text);
  });
});
