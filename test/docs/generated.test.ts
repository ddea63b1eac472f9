/**
 * The reference pages generated from the code (test/docs/generate.ts) are committed; each test
 * here regenerates one in memory and fails when the committed page differs, naming the command
 * that writes it. The machines' diagrams are also parsed with Mermaid's own parser.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Window } from 'happy-dom';
import { beforeAll, describe, expect, it } from 'vitest';
import { machines, toMermaid } from '../../actors/graph/index.js';
import { main } from '../../bin/cli.js';
import { MACHINES_PAGE, regenerated } from './graphs.js';
import { cliProgram, generatedFiles, staleFiles, type Cli, type GeneratedFile } from './generate.js';
import { tempDir } from '../helpers.js';

const STALE = 'is stale: run `npm run docs` and commit what it writes';

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

  it('should keep the machines page\'s diagrams in step with the machines', () => {
    const text = readFileSync(MACHINES_PAGE, 'utf8');
    for (const name of Object.keys(machines)) expect(text, name).toContain(`<!-- graph:${name} -->`);
    expect(regenerated(text) === text, `docs/reference/machines.md ${STALE}`).toBe(true);
  });
});

describe('reference pages generated from the code', () => {
  let files: GeneratedFile[] = [];
  let cli: Cli;
  beforeAll(async () => {
    files = await generatedFiles();
    cli = await cliProgram();
  });

  it('should have every generated page committed as the code makes it now', () => {
    expect(files.map((f) => f.path).sort()).toEqual(['public/a2a.config.schema.json', 'reference/cli.md', 'reference/configuration.md', 'reference/errors.md', 'reference/events.md', 'reference/permissions.md', 'reference/tools.md']);
    expect(staleFiles(files).map((path) => `docs/${path} ${STALE}`)).toEqual([]);
  });

  it('should document every command and option of the CLI', () => {
    const page = files.find((f) => f.path === 'reference/cli.md')!.content;
    for (const command of cli.program.commands) {
      const leaves = command.commands.length ? command.commands.map((c) => `${command.name()} ${c.name()}`) : [command.name()];
      for (const name of leaves) expect(page).toContain(`## a2a ${name}\n`);
    }
    expect(page).toContain('| `--max-depth <n>` | deepest sub-task level |');
    expect(page).toContain('a2a run --workflow sdlc "a URL shortener with tests"');
  });

  it('should document the tools\' arguments as the model sees them, and the configuration with its comments', () => {
    const tools = files.find((f) => f.path === 'reference/tools.md')!.content;
    expect(tools).toContain('| `subtasks[].agentType` | string, not empty | yes |');
    expect(tools).toContain('| `ids` | array of string (each not empty) (at least 1) | yes |');
    const schema = JSON.parse(files.find((f) => f.path === 'public/a2a.config.schema.json')!.content) as { properties: Record<string, { properties?: Record<string, { description?: string; default?: unknown }> }> };
    expect(schema.properties.limits!.properties!.maxDepth).toMatchObject({ default: 2, description: expect.stringContaining('Deepest sub-task level') });
    expect(schema.properties.git!.properties!.onComplete!.description).toContain('merge its branch');
  });

  it('should tell a page that differs from what the code makes, and a page that is missing', () => {
    const docs = tempDir('a2a-docs-stale-');
    for (const f of files) {
      mkdirSync(dirname(join(docs, f.path)), { recursive: true });
      writeFileSync(join(docs, f.path), f.content);
    }
    expect(staleFiles(files, docs)).toEqual([]);
    // as if bin/cli.ts had renamed a flag since the page was written
    const cliPage = join(docs, 'reference', 'cli.md');
    writeFileSync(cliPage, readFileSync(cliPage, 'utf8').replace('`--max-depth <n>`', '`--depth <n>`'));
    rmSync(join(docs, 'reference', 'errors.md'));
    expect(staleFiles(files, docs)).toEqual(['reference/cli.md', 'reference/errors.md']);
  });
});
