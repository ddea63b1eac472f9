/**
 * `a2a artifacts` over run directories prepared by the store (and one written by `a2a run`, whose
 * agent writes an artifact through its tool).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { main } from '../../bin/cli.js';
import { ArtifactStore } from '../../actors/organiser/artifacts.js';
import { FileArtifactBackend } from '../../adapters/store/artifactFiles.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { capture, tempDir } from '../helpers.js';


/** A workspace with run `r1` holding a plan (revised once), code and a review. */
async function prepared(): Promise<string> {
  const ws = tempDir();
  const runs = new FileRunStore(ws);
  runs.create({ runId: 'r1', pid: 1, status: 'completed', startedAt: 1, planId: 'p', source: 'test' });
  const clock = new SimulatedClock();
  const store = new ArtifactStore(new FileArtifactBackend(runs.root), 'r1', clock);
  await store.create({ type: 'implementation_plan', content: '# Login v1\n- cookies', producer: 'w-plan', producerRole: 'architect' });
  clock.increment(1);
  await store.revise('implementation_plan-1', { content: '# Login v2\n- cookies\n- GitHub', producer: 'w-plan' });
  clock.increment(1);
  await store.create({ type: 'code', content: 'file: src/a.ts\nexport const a = 1;\n', producer: 'w-code', producerRole: 'coder', related: ['implementation_plan-1'] });
  clock.increment(1);
  await store.create({ type: 'review_report', content: '- [ ] a is mutable\nVerdict: needs revision', producer: 'w-sceptic', producerRole: 'sceptic', status: 'needs_revision' });
  return ws;
}

async function cli(args: string[]) {
  const c = capture();
  const code = await main(['artifacts', ...args], c.io);
  return { code, out: c.out(), err: c.err() };
}

describe('a2a artifacts', () => {
  it('should list a run\'s artifacts as a table', async () => {
    const ws = await prepared();
    const { code, out } = await cli(['r1', '--workspace', ws]);
    expect(code).toBe(0);
    expect(out).toBe(
      [
        'ID                     TYPE                 VER  STATUS          ROLE       BRIEF',
        'implementation_plan-1  implementation_plan  2    completed       architect  Plan: Login v2.',
        'code-1                 code                 1    completed       coder      Code: 1 line in 1 file: src/a.ts.',
        'review_report-1        review_report        1    needs_revision  sceptic    Review: 1 issue found; verdict: needs revision.',
        '',
      ].join('\n'),
    );
  });

  it('should take the latest run by default, filter by type and print JSON', async () => {
    const ws = await prepared();
    const { code, out } = await cli(['--type', 'code', '--json', '--workspace', ws]);
    expect(code).toBe(0);
    const listed = JSON.parse(out) as Array<{ id: string; related: string[] }>;
    expect(listed.map((a) => [a.id, a.related])).toEqual([['code-1', ['implementation_plan-1']]]);
    expect((await cli(['r1', '--type', 'documentation', '--workspace', ws])).out).toMatch(/^run r1 has no artifacts of type documentation \(files under /);
  });

  it('should print the content of the latest version or of the one asked for', async () => {
    const ws = await prepared();
    expect((await cli(['r1', '--show', 'implementation_plan-1', '--workspace', ws])).out).toBe('# Login v2\n- cookies\n- GitHub\n');
    expect((await cli(['r1', '--show', 'implementation_plan-1@1', '--workspace', ws])).out).toBe('# Login v1\n- cookies\n');
    const json = JSON.parse((await cli(['r1', '--show', 'code-1', '--json', '--workspace', ws])).out) as unknown;
    expect(json).toMatchObject({ id: 'code-1', version: 1, producer: 'w-code', content: 'file: src/a.ts\nexport const a = 1;\n' });
  });

  it('should say what is wrong and what exists, with a failing exit code', async () => {
    const ws = await prepared();
    const run = await cli(['r9', '--workspace', ws]);
    expect(run.code).toBe(2);
    expect(run.err).toBe(`a2a: no run "r9" in ${join(ws, '.a2a', 'runs')}; runs there: r1 (a run deployed over NATS: add --nats <url>)\n`);
    const artifact = await cli(['r1', '--show', 'code-4', '--workspace', ws]);
    expect(artifact.code).toBe(2);
    expect(artifact.err).toBe('a2a: no artifact "code-4" in run r1; its artifacts: code-1, implementation_plan-1, review_report-1. List them with a2a_list_artifacts or `a2a artifacts r1`\n');
    const version = await cli(['r1', '--show', 'code-1@3', '--workspace', ws]);
    expect(version.err).toBe('a2a: artifact code-1 has no version 3: its versions are 1 to 1\n');
    expect((await cli(['r1', '--show', 'code-1@x', '--workspace', ws])).err).toBe('a2a: --show "code-1@x": give an artifact id, optionally with a version: code-2 or code-2@1\n');
    const type = await cli(['r1', '--type', 'plan', '--workspace', ws]);
    expect(type.code).toBe(2);
    expect(type.err).toContain("argument 'plan' is invalid. Allowed choices are user_task, implementation_plan, pseudocode, code,");
    const none = await cli(['--workspace', tempDir()]);
    expect(none.code).toBe(2);
    expect(none.err).toMatch(/^a2a: no run in .*; name one with --run <runId>\n$/);
  });

  it('should show what the agents of an `a2a run` wrote', async () => {
    const ws = tempDir();
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'agent',
            turns: [
              { toolCalls: [{ name: 'a2a_write_artifact', arguments: { type: 'test_results', content: '      Tests  1 failed | 4 passed (5)' } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'see test_results-1' } }] },
            ],
          },
        ],
      }),
    );
    const run = capture();
    expect(await main(['run', 'test it', '--script', join(ws, 'script.json'), '--run-id', 'with-artifacts', '--workspace', ws], run.io)).toBe(0);
    const { code, out } = await cli(['with-artifacts', '--workspace', ws]);
    expect(code).toBe(0);
    expect(out).toContain('test_results-1  test_results  1    completed  agent  Tests: 4 passed, 1 failed (5 total).');
  });
});
