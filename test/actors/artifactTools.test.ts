/**
 * The artifact tools through the tool catalog, as a session calls them: the producer is the
 * session, arguments are checked by their schemas, and every failure is a tool error the model can
 * read (never a crash of the session).
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { artifactStores, ArtifactStore } from '../../actors/organiser/artifacts.js';
import { defaultGate as gate } from '../../actors/people/permissions.js';
import { ToolCatalog, type ToolContext } from '../../actors/tools/index.js';
import { FileArtifactBackend } from '../../adapters/store/artifactFiles.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { harness, tempDir } from '../helpers.js';

describe('artifact tools', () => {
  const h = harness({ script: { rules: [] } });
  const catalog = new ToolCatalog();
  const worker = h.standalone('x').spec;
  const root = tempDir('a2a-artifact-tools-');
  const clock = new SimulatedClock();
  const stores = artifactStores(new FileArtifactBackend(root), clock);

  const context = (spec: SessionSpec, artifacts: ToolContext['artifacts'] = stores): ToolContext => ({
    spec,
    worktree: h.workspace,
    signal: new AbortController().signal,
    permit: (ask) => gate(spec, ask),
    locks: h.runtime.locks,
    registry: h.registry,
    family: null,
    updates: [],
    ids: h.runtime.ids,
    clock: h.clock,
    commands: null,
    artifacts,
  });
  let calls = 0;
  const call = (agent: string, name: string, args: unknown, ctx = context(worker)) => catalog.run({ id: `c${++calls}`, name, arguments: args as Record<string, unknown> }, h.registry.get(agent), ctx);
  const json = (content: string) => JSON.parse(content) as unknown;

  it('should write an artifact as the calling session, revise it, read any version and list them', async () => {
    const as = (agentName: string, id: string): SessionSpec => ({ ...worker, id, agent: { raw: `@${agentName}`, backend: 'default', agentName }, correlation: { ...worker.correlation, runId: 'tools-1' } });
    const architect = as('architect', 'w-plan');
    const coder = as('coder', 'w-code.1');
    const written = await call('architect', 'a2a_write_artifact', { type: 'implementation_plan', content: '# Login\n- cookies\n- GitHub' }, context(architect));
    expect(written.isError).toBe(false);
    expect(json(written.content)).toEqual({ id: 'implementation_plan-1', version: 1, status: 'completed', brief: 'Plan: Login.' });
    clock.increment(10);

    const code = await call('coder', 'a2a_write_artifact', { type: 'code', content: 'file: src/a.ts\nlet a = 1;', related: ['implementation_plan-1'], files: ['src/b.ts'] }, context(coder));
    expect(json(code.content)).toMatchObject({ id: 'code-1', version: 1 });
    const revised = await call('coder', 'a2a_write_artifact', { type: 'code', content: 'file: src/a.ts\nlet a = 2;', reviseId: 'code-1', status: 'in_progress' }, context(coder));
    expect(json(revised.content)).toMatchObject({ id: 'code-1', version: 2, status: 'in_progress' });

    const latest = await call('code-sceptic', 'a2a_read_artifact', { id: 'code-1' }, context(architect));
    expect(latest.content).toBe('code-1 version 2 of 2 (code, in_progress) by w-code.1; files: src/b.ts, src/a.ts\n\nfile: src/a.ts\nlet a = 2;');
    const first = await call('code-sceptic', 'a2a_read_artifact', { id: 'code-1', version: 1 }, context(architect));
    expect(first.content).toMatch(/^code-1 version 1 of 2 .*\n\nfile: src\/a\.ts\nlet a = 1;$/);

    const listed = await call('reviewer', 'a2a_list_artifacts', {}, context(architect));
    expect(json(listed.content)).toEqual([
      { id: 'implementation_plan-1', type: 'implementation_plan', version: 1, status: 'completed', producerRole: 'architect', brief: 'Plan: Login.' },
      { id: 'code-1', type: 'code', version: 2, status: 'in_progress', producerRole: 'coder', brief: 'Code: 1 line in 2 files: src/b.ts, src/a.ts.' },
    ]);
    expect(json((await call('reviewer', 'a2a_list_artifacts', { producerRole: 'coder', status: 'in_progress' }, context(architect))).content)).toHaveLength(1);
    expect(json((await call('reviewer', 'a2a_list_artifacts', { type: 'review_report' }, context(architect))).content)).toEqual([]);
    // what the store holds: the session as producer, its agent as role
    expect(await stores('tools-1').get('code-1')).toMatchObject({ producer: 'w-code.1', producerRole: 'coder', related: ['implementation_plan-1'] });
  });

  it('should take the producer role from a workflow role when the session has one', async () => {
    const spec = { ...worker, id: 'w-s', workflowRole: 'sceptic', correlation: { ...worker.correlation, runId: 'tools-2' } } as SessionSpec;
    await call('code-sceptic', 'a2a_write_artifact', { type: 'review_report', content: '- [ ] x\nVerdict: approved' }, context(spec));
    expect(await stores('tools-2').get('review_report-1')).toMatchObject({ producer: 'w-s', producerRole: 'sceptic', summary: { brief: 'Review: 1 issue found; verdict: approved.' } });
  });

  it('should name the argument that is wrong', async () => {
    const bad = await call('coder', 'a2a_write_artifact', { type: 'plan', content: '' });
    expect(bad.isError).toBe(true);
    expect(bad.content).toMatch(/^VALIDATION_ERROR: Invalid arguments for a2a_write_artifact:\n  - type: Invalid option: expected one of "user_task"\|"implementation_plan"/);
    expect(bad.content).toContain('\n  - content: Too small');
    const version = await call('coder', 'a2a_read_artifact', { id: 'code-1', version: 0 });
    expect(version.content).toMatch(/^VALIDATION_ERROR: Invalid arguments for a2a_read_artifact:\n  - version: Too small/);
    const id = await call('coder', 'a2a_read_artifact', { id: '../x' });
    expect(id.content).toMatch(/^VALIDATION_ERROR: Invalid arguments for a2a_read_artifact:\n  - id: an artifact id: "<type>-<n>", e.g. "code-3"/);
  });

  it('should answer unknown artifacts, a revision of another type and a missing store with errors the model can act on', async () => {
    const spec = { ...worker, correlation: { ...worker.correlation, runId: 'tools-3' } };
    await call('coder', 'a2a_write_artifact', { type: 'code', content: 'x' }, context(spec));
    const unknown = await call('coder', 'a2a_read_artifact', { id: 'code-7' }, context(spec));
    expect(unknown).toEqual({ isError: true, content: 'ARTIFACT_NOT_FOUND: no artifact "code-7" in run tools-3; its artifacts: code-1. List them with a2a_list_artifacts or `a2a artifacts tools-3`' });
    const retype = await call('coder', 'a2a_write_artifact', { type: 'documentation', content: 'y', reviseId: 'code-1' }, context(spec));
    expect(retype.content).toBe('VALIDATION_ERROR: type: code-1 is a code artifact; a revision keeps its type (give type "code", or leave out reviseId for a new artifact)');
    const related = await call('coder', 'a2a_write_artifact', { type: 'code', content: 'y', related: ['implementation_plan-1'] }, context(spec));
    expect(related.content).toBe('ARTIFACT_NOT_FOUND: related: no artifact implementation_plan-1 in run tools-3; its artifacts: code-1');
    const none = await call('coder', 'a2a_list_artifacts', {}, context(spec, null));
    expect(none).toEqual({
      isError: true,
      content: `CONFIGURATION_INVALID: this run has no artifact store: artifacts of run tools-3 cannot be written or read here; report your result with a2a_subtask_complete instead`,
    });
  });

  it('should be tools of the built-in agents that produce or review work, and not of the researcher', () => {
    for (const agent of ['agent', 'architect', 'coder', 'code-sceptic', 'documentation-writer', 'debugger', 'reviewer']) {
      expect(catalog.toolsFor(h.registry.get(agent), worker), agent).toEqual(expect.arrayContaining(['a2a_write_artifact', 'a2a_read_artifact', 'a2a_list_artifacts']));
    }
    expect(catalog.toolsFor(h.registry.get('researcher'), worker)).not.toContain('a2a_write_artifact');
  });

  it('should keep one store per run, and a bounded number of them', () => {
    const per = artifactStores(new FileArtifactBackend(root), new SimulatedClock(), { keep: 2 });
    const a = per('run-a');
    expect(per('run-a')).toBe(a);
    expect(a).toBeInstanceOf(ArtifactStore);
    per('run-b');
    per('run-c');
    expect(per('run-a')).not.toBe(a);
  });
});
