/**
 * The artifact store: one contract run against both backends (files under a run's directory, and
 * a key-value bucket of the in-process transport), then what only one of them shows, then the
 * summaries and the sanitizing, which are pure.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { ArtifactStore, MAX_ARTIFACT_BYTES, sanitizeArtifactContent, summarizeArtifact, type NewArtifact } from '../../actors/organiser/artifacts.js';
import { isA2AError } from '../../actors/errors.js';
import { secrets } from '../../actors/config/secrets.js';
import { FileArtifactBackend } from '../../adapters/store/artifactFiles.js';
import { KvArtifactBackend } from '../../adapters/store/artifactKv.js';
import { createMemoryTransport } from '../../adapters/transport/memory.js';
import type { ArtifactBackend, KeyValue } from '../../machines/ports.js';
import { tempDir } from '../helpers.js';

interface Fixture {
  /** A new backend over the same storage (another process's view of it). */
  backend(): ArtifactBackend;
  /** Overwrites the stored record of `id` with `value` (a hand edit, a foreign writer). */
  corrupt(runId: string, id: string, value: unknown): Promise<void>;
}

const RUN = 'run-1';
const plan: NewArtifact = { type: 'implementation_plan', content: '# OAuth login\n- providers: GitHub, Google\n- tokens in httpOnly cookies', producer: 'w-design', producerRole: 'architect' };
const code = (content: string, producer = 'w-code'): NewArtifact => ({ type: 'code', content, producer, producerRole: 'coder' });

async function failure(promise: Promise<unknown>): Promise<Error & { code?: string; where?: string }> {
  const outcome = await promise.then(
    () => null,
    (error: unknown) => error as Error,
  );
  if (!outcome) throw new Error('expected a failure');
  return outcome;
}

function artifactContract(name: string, setup: () => Fixture) {
  describe(`ArtifactStore over ${name}`, () => {
    const make = (options: { cacheSize?: number } = {}) => {
      const fixture = setup();
      const clock = new SimulatedClock();
      clock.set(1_000);
      return { fixture, clock, store: new ArtifactStore(fixture.backend(), RUN, clock, options) };
    };

    it('should number ids per type and keep version 1 with its summary', async () => {
      const { store } = make();
      const p = await store.create(plan);
      const c1 = await store.create(code('file: src/a.ts\nexport const a = 1;'));
      const c2 = await store.create({ ...code('file: src/b.ts\nexport const b = 2;'), status: 'in_progress', related: [p.id], files: ['README.md'] });
      expect([p.id, c1.id, c2.id]).toEqual(['implementation_plan-1', 'code-1', 'code-2']);
      expect(c2).toMatchObject({ runId: RUN, type: 'code', status: 'in_progress', version: 1, producer: 'w-code', producerRole: 'coder', related: ['implementation_plan-1'], reviewedBy: [], archived: false, createdAt: 1_000 });
      expect(c2.summary.filesAffected).toEqual(['README.md', 'src/b.ts']);
      expect(p.status).toBe('completed');
      expect(await store.get('code-2')).toEqual(c2);
      expect((await store.read('code-1')).content).toBe('file: src/a.ts\nexport const a = 1;');
    });

    it('should complete a write its writer stopped between content and record: no invisible id, no orphan version, told once', async () => {
      const { fixture, clock } = make();
      const told: Array<[string, string, number]> = [];
      const onChange = (meta: { id: string; version: number }, change: string) => void told.push([meta.id, change, meta.version]);
      const writer = new ArtifactStore(fixture.backend(), RUN, clock, { onChange });
      const first = await writer.create(plan);
      // a writer killed after each content write, before its record's: the same writes, by hand
      const killed = fixture.backend();
      const created = { ...first, id: 'implementation_plan-2', producer: 'w-killed', summary: { ...first.summary, brief: 'the second plan' } };
      expect(await killed.createContent(RUN, created.id, 1, { id: created.id, version: 1, content: '# plan two', producer: 'w-killed', at: 1_000, record: created })).toBe(true);
      const revised = { ...first, version: 2, producer: 'w-killed', size: 9 };
      expect(await killed.createContent(RUN, first.id, 2, { id: first.id, version: 2, content: '# plan v2', producer: 'w-killed', at: 1_000, record: revised })).toBe(true);
      // the next reader (another process) completes both records, and says so once
      const reader = new ArtifactStore(fixture.backend(), RUN, clock, { onChange });
      expect((await reader.get('implementation_plan-2')).version).toBe(1);
      expect((await reader.get(first.id)).version).toBe(2);
      expect((await reader.list()).map((m) => [m.id, m.version])).toEqual([
        ['implementation_plan-1', 2],
        ['implementation_plan-2', 1],
      ]);
      expect((await reader.read(first.id)).content).toBe('# plan v2');
      expect((await writer.read('implementation_plan-2')).content).toBe('# plan two');
      expect(told.sort()).toEqual([
        ['implementation_plan-1', 'created', 1],
        ['implementation_plan-1', 'updated', 2],
        ['implementation_plan-2', 'created', 1],
      ]);
      // and the next create takes the next free number
      expect((await writer.create(plan)).id).toBe('implementation_plan-3');
    });

    it('should keep every version readable after a revision', async () => {
      const { store, clock } = make();
      await store.create(code('v1 body'));
      await store.setStatus('code-1', 'needs_revision');
      clock.increment(500);
      const revised = await store.revise('code-1', { content: 'v2 body\nmore', producer: 'w-fix' });
      expect(revised).toMatchObject({ version: 2, status: 'completed', producer: 'w-fix', producerRole: 'coder', createdAt: 1_000, modifiedAt: 1_500, size: 12 });
      expect((await store.read('code-1', 1)).content).toBe('v1 body');
      expect(await store.read('code-1')).toMatchObject({ version: 2, content: 'v2 body\nmore', producer: 'w-fix', at: 1_500 });
      const third = await store.revise('code-1', { content: 'v3', producer: 'w-fix', producerRole: 'debugger', status: 'in_progress', related: [] });
      expect(third).toMatchObject({ version: 3, status: 'in_progress', producerRole: 'debugger' });
      await expect(store.read('code-1', 4)).rejects.toThrow('artifact code-1 has no version 4: its versions are 1 to 3');
    });

    it('should change statuses and note each reviewer once', async () => {
      const { store } = make();
      await store.create(plan);
      expect((await store.setStatus('implementation_plan-1', 'approved')).status).toBe('approved');
      await store.addReviewer('implementation_plan-1', 'w-sceptic');
      const meta = await store.addReviewer('implementation_plan-1', 'w-sceptic');
      expect(meta.reviewedBy).toEqual(['w-sceptic']);
      expect((await store.get('implementation_plan-1')).reviewedBy).toEqual(['w-sceptic']);
    });

    it('should list by type, producer, role and status, in the order of creation', async () => {
      const { store, clock } = make();
      await store.create(plan);
      clock.increment(1);
      await store.create(code('a', 'w-one'));
      clock.increment(1);
      await store.create({ ...code('b', 'w-two'), status: 'in_progress' });
      clock.increment(1);
      await store.create({ type: 'review_report', content: '- [ ] a is wrong', producer: 'w-sceptic', producerRole: 'code-sceptic', related: ['code-1'] });
      const ids = async (q: Parameters<ArtifactStore['list']>[0]) => (await store.list(q)).map((m) => m.id);
      expect(await ids({})).toEqual(['implementation_plan-1', 'code-1', 'code-2', 'review_report-1']);
      expect(await ids({ type: 'code' })).toEqual(['code-1', 'code-2']);
      expect(await ids({ producer: 'w-two' })).toEqual(['code-2']);
      expect(await ids({ producerRole: 'code-sceptic' })).toEqual(['review_report-1']);
      expect(await ids({ status: 'in_progress' })).toEqual(['code-2']);
      expect(await ids({ type: 'code', status: 'completed' })).toEqual(['code-1']);
      await expect(store.list({ type: 'plan' as never })).rejects.toThrow(/invalid artifact query: type: /);
    });

    it('should archive what has not changed for a while, out of the organiser\'s view but readable', async () => {
      const { store, clock } = make();
      await store.create(plan);
      clock.increment(1);
      await store.create(code('old code'));
      clock.increment(60_000);
      await store.setStatus('code-1', 'approved'); // a change: not old any more
      clock.increment(1_000);
      expect(await store.archive(30_000)).toEqual(['implementation_plan-1']);
      expect(await store.archive(30_000)).toEqual([]);
      expect((await store.list()).map((m) => m.id)).toEqual(['code-1']);
      expect((await store.list({ includeArchived: true })).map((m) => [m.id, m.archived])).toEqual([
        ['implementation_plan-1', true],
        ['code-1', false],
      ]);
      expect((await store.organiserView()).map((a) => a.id)).toEqual(['code-1']);
      expect((await store.read('implementation_plan-1')).content).toContain('# OAuth login');
      // a revision brings it back
      expect((await store.revise('implementation_plan-1', { content: '# OAuth login v2', producer: 'w-design' })).archived).toBe(false);
    });

    it('should give the organiser summaries only, the newest max', async () => {
      const { store, clock } = make();
      await store.create(plan);
      for (const n of [1, 2, 3]) {
        clock.increment(1);
        await store.create(code(`file: src/f${n}.ts\nline one\nline two`));
      }
      const view = await store.organiserView(2);
      expect(view).toEqual([
        { id: 'code-2', type: 'code', version: 1, status: 'completed', producerRole: 'coder', brief: 'Code: 2 lines in 1 file: src/f2.ts.', keyPoints: ['src/f2.ts'], filesAffectedCount: 1, metrics: { linesOfCode: 2 } },
        { id: 'code-3', type: 'code', version: 1, status: 'completed', producerRole: 'coder', brief: 'Code: 2 lines in 1 file: src/f3.ts.', keyPoints: ['src/f3.ts'], filesAffectedCount: 1, metrics: { linesOfCode: 2 } },
      ]);
      expect(JSON.stringify(await store.organiserView())).not.toContain('line one');
    });

    it('should load contents lazily through an LRU cache', async () => {
      const { fixture } = make();
      const writer = new ArtifactStore(fixture.backend(), RUN, new SimulatedClock());
      for (const c of ['a', 'b', 'c']) await writer.create(code(c));
      const reader = new ArtifactStore(fixture.backend(), RUN, new SimulatedClock(), { cacheSize: 2 });
      expect(reader.cacheStats).toEqual({ hits: 0, misses: 0, size: 0 });
      await reader.read('code-1'); // miss
      await reader.read('code-1'); // hit
      await reader.read('code-2', 1); // miss
      await reader.read('code-3'); // miss: code-1 is evicted, the least recently used
      await reader.read('code-2'); // hit
      await reader.read('code-1'); // miss
      expect(reader.cacheStats).toEqual({ hits: 2, misses: 4, size: 2 });
    });

    it('should say which id is unknown, which ids there are and how to list them', async () => {
      const { store } = make();
      const empty = await failure(store.get('code-9'));
      expect(empty.message).toMatchInlineSnapshot(`"no artifact "code-9" in run run-1; it has none yet. List them with a2a_list_artifacts or \`a2a artifacts run-1\`"`);
      await store.create(plan);
      await store.create(code('x'));
      const e = await failure(store.read('code-9'));
      expect(isA2AError(e, 'ARTIFACT_NOT_FOUND')).toBe(true);
      expect(e.message).toMatchInlineSnapshot(`"no artifact "code-9" in run run-1; its artifacts: code-1, implementation_plan-1. List them with a2a_list_artifacts or \`a2a artifacts run-1\`"`);
      expect((await failure(store.get('../../etc/passwd'))).message).toMatch(/^"..\/..\/etc\/passwd" is not an artifact id: ids are "<type>-<n>"/);
      expect((await failure(store.create({ ...code('y'), related: ['plan-1' as never, 'review_report-4'] }))).message).toMatch(/invalid artifact: related\[0\]: an artifact id/);
      expect((await failure(store.create({ ...code('y'), related: ['review_report-4'] }))).message).toBe(
        'related: no artifact review_report-4 in run run-1; its artifacts: code-1, implementation_plan-1',
      );
    });

    it('should refuse bad arguments naming the field', async () => {
      const { store } = make();
      const e = await failure(store.create({ ...plan, producerRole: 'x'.repeat(65) }));
      expect(isA2AError(e, 'VALIDATION_ERROR')).toBe(true);
      expect(e.message).toMatch(/^invalid artifact: producerRole: /);
      expect(e.where).toBe('producerRole');
      expect((await failure(store.create({ ...plan, content: '\u0000\u0001 ' }))).message).toBe('artifact content is empty (after control characters were removed)');
      expect((await failure(store.setStatus('implementation_plan-1', 'done' as never))).message).toMatch(/^invalid status: /);
    });

    it('should give distinct ids to two stores creating at once over the same storage', async () => {
      const { fixture } = make();
      const a = new ArtifactStore(fixture.backend(), RUN, new SimulatedClock());
      const b = new ArtifactStore(fixture.backend(), RUN, new SimulatedClock());
      const created = await Promise.all(Array.from({ length: 8 }, (_, i) => [a.create(code(`a${i}`)), b.create(code(`b${i}`))]).flat());
      const ids = created.map((m) => m.id);
      expect(new Set(ids).size).toBe(16);
      expect([...ids].sort((x, y) => Number(x.slice(5)) - Number(y.slice(5)))).toEqual(Array.from({ length: 16 }, (_, i) => `code-${i + 1}`));
      // each id holds what its creator wrote
      for (const m of created) expect((await b.read(m.id)).producer).toBe('w-code');
      expect((await a.list()).length).toBe(16);
    });

    it('should give distinct versions to two revisions at once, the highest being the latest', async () => {
      const { fixture } = make();
      const a = new ArtifactStore(fixture.backend(), RUN, new SimulatedClock());
      const b = new ArtifactStore(fixture.backend(), RUN, new SimulatedClock());
      await a.create(code('v1'));
      await Promise.all([a.revise('code-1', { content: 'from a', producer: 'w-a' }), b.revise('code-1', { content: 'from b', producer: 'w-b' }), a.setStatus('code-1', 'approved')]);
      const meta = await b.get('code-1');
      expect(meta.version).toBe(3);
      const contents = [(await a.read('code-1', 2)).content, (await a.read('code-1', 3)).content].sort();
      expect(contents).toEqual(['from a', 'from b']);
      expect(meta.producer).toBe((await b.read('code-1', 3)).producer);
    });

    it('should name the record and the field when a stored record is not valid', async () => {
      const { fixture, store } = make();
      const meta = await store.create(plan);
      await fixture.corrupt(RUN, meta.id, { ...meta, status: 'done' });
      const e = await failure(store.get(meta.id));
      expect(isA2AError(e, 'VALIDATION_ERROR')).toBe(true);
      expect(e.message).toMatch(/implementation_plan-1.* is not a valid artifact record: status: /);
      await expect(store.list()).rejects.toThrow(/is not a valid artifact record: status: /);
      await fixture.corrupt(RUN, meta.id, { ...meta, id: 'code-7' });
      expect((await failure(store.get(meta.id))).message).toMatch(/is not a valid artifact record: it holds code-7 of run run-1, not implementation_plan-1 of run run-1/);
    });

    it('should sanitize the content before it is stored and summarized', async () => {
      secrets.add('TEST_ARTIFACT_TOKEN', 'artifact-secret-4d9f2c7e');
      const { store } = make();
      const meta = await store.create({ type: 'error_report', content: 'login failed with artifact-secret-4d9f2c7e\r\n\u001b[31mred\u001b[0m\u0007', producer: 'w-x', producerRole: 'debugger' });
      expect(meta.summary.brief).toBe('login failed with [redacted:TEST_ARTIFACT_TOKEN]');
      expect((await store.read(meta.id)).content).toBe('login failed with [redacted:TEST_ARTIFACT_TOKEN]\nred');
    });
  });
}

artifactContract('files', () => {
  const root = tempDir('a2a-artifacts-');
  return {
    backend: () => new FileArtifactBackend(root),
    corrupt: async (runId, id, value) => {
      const dir = join(root, runId, 'artifacts', id);
      writeFileSync(join(dir, 'meta.1.json'), JSON.stringify(value));
      // the newest revision is the one read: make sure only the corrupted one is there
      for (let r = 2; existsSync(join(dir, `meta.${r}.json`)); r++) writeFileSync(join(dir, `meta.${r}.json`), JSON.stringify(value));
    },
  };
});

artifactContract('a memory-transport KV bucket', () => {
  const transport = createMemoryTransport();
  let kv: Promise<KeyValue> | null = null;
  const bucket = () => (kv ??= transport.keyValue('artifacts'));
  return {
    backend: () => new KvArtifactBackend(bucket),
    corrupt: async (runId, id, value) => void (await (await bucket()).put(`${runId}.meta.${id}`, value)),
  };
});

describe('FileArtifactBackend', () => {
  it('should lay artifacts out under the run\'s directory, one file per record revision and per version', async () => {
    const root = tempDir('a2a-artifacts-');
    const store = new ArtifactStore(new FileArtifactBackend(root), RUN, new SimulatedClock());
    await store.create(code('x'));
    await store.setStatus('code-1', 'approved');
    const dir = join(root, RUN, 'artifacts', 'code-1');
    expect(JSON.parse(readFileSync(join(dir, 'meta.2.json'), 'utf8'))).toMatchObject({ id: 'code-1', status: 'approved' });
    expect(JSON.parse(readFileSync(join(dir, 'v1.json'), 'utf8'))).toMatchObject({ id: 'code-1', version: 1, content: 'x' });
  });

  it('should name the file when a record is not JSON', async () => {
    const root = tempDir('a2a-artifacts-');
    const store = new ArtifactStore(new FileArtifactBackend(root), RUN, new SimulatedClock());
    await store.create(code('x'));
    writeFileSync(join(root, RUN, 'artifacts', 'code-1', 'v1.json'), '{"id": "code-1", ');
    const fresh = new ArtifactStore(new FileArtifactBackend(root), RUN, new SimulatedClock());
    await expect(fresh.read('code-1')).rejects.toThrow(`${join(root, RUN, 'artifacts', 'code-1', 'v1.json')} is not a valid artifact record: it is not JSON`);
  });
});

describe('KvArtifactBackend', () => {
  it('should refuse a value larger than the bucket holds, naming the artifact and the limit', async () => {
    const transport = createMemoryTransport();
    const store = new ArtifactStore(new KvArtifactBackend(await transport.keyValue('artifacts'), { maxValueBytes: 1_000 }), RUN, new SimulatedClock());
    const e = await failure(store.create(code('x'.repeat(2_000))));
    expect(isA2AError(e, 'VALIDATION_ERROR')).toBe(true);
    expect(e.message).toMatch(/^code-1 version 1 is 2\d{3} bytes as JSON, more than a value of KV bucket artifacts may hold \(1000 bytes; the NATS server's max_payload\)/);
  });

  it('should read through a read-only bucket and refuse to write through it', async () => {
    const transport = createMemoryTransport();
    await new ArtifactStore(new KvArtifactBackend(await transport.keyValue('artifacts')), RUN, new SimulatedClock()).create(plan);
    const reader = new ArtifactStore(new KvArtifactBackend(await transport.readKeyValue('artifacts')), RUN, new SimulatedClock());
    expect((await reader.list()).map((m) => m.id)).toEqual(['implementation_plan-1']);
    await expect(reader.create(plan)).rejects.toThrow(/KV bucket artifacts is open read-only here/);
  });
});

describe('summarizeArtifact', () => {
  it('should summarize a plan by its heading and bullet points', () => {
    const s = summarizeArtifact('implementation_plan', '# OAuth login\n\nIntro text.\n- one\n- two\n* three\n1. four\n2. five\n3. six\n');
    expect(s).toEqual({ brief: 'Plan: OAuth login.', keyPoints: ['one', 'two', 'three', 'four', 'five'], filesAffected: [] });
  });

  it('should find the files of a structure', () => {
    const s = summarizeArtifact('pseudocode', '## src/auth.ts\nfunction login()\n## src/token.ts\nfile: src/cookies.ts\n**File:** src/db.ts\n## Notes', ['src/extra.ts']);
    expect(s.filesAffected).toEqual(['src/extra.ts', 'src/auth.ts', 'src/token.ts', 'src/cookies.ts', 'src/db.ts']);
    expect(s.brief).toBe('Structure of 5 files: src/extra.ts, src/auth.ts, src/token.ts and 2 more.');
    expect(s.keyPoints).toHaveLength(5);
  });

  it('should count the lines of code and name the files', () => {
    const s = summarizeArtifact('code', '// file: src/a.ts\n```ts\nexport const a = 1;\n\nexport const b = 2;\n```\n');
    expect(s).toEqual({ brief: 'Code: 2 lines in 1 file: src/a.ts.', keyPoints: ['src/a.ts'], filesAffected: ['src/a.ts'], metrics: { linesOfCode: 2 } });
  });

  it('should count the issues of a review and find its verdict', () => {
    const review = ['# Review of code-1', 'Issue: tokens are logged', '- [ ] no CSRF check', '- [x] tests pass', '- **Critical**: SQL injection in login', '1. Bug: off by one', 'Verdict: needs revision'].join('\n');
    const s = summarizeArtifact('review_report', review);
    expect(s.metrics).toEqual({ issuesFound: 4 });
    expect(s.brief).toBe('Review: 4 issues found; verdict: needs revision.');
    expect(s.keyPoints).toEqual(['Issue: tokens are logged', 'no CSRF check', 'Critical: SQL injection in login', 'Bug: off by one']);
    expect(summarizeArtifact('review_report', 'All good, LGTM.').brief).toBe('Review: 0 issues found; verdict: approved.');
    expect(summarizeArtifact('review_report', 'Changes requested: see below.\nissue: x').brief).toBe('Review: 1 issue found; verdict: needs revision.');
  });

  it('should take a document\'s title and sections', () => {
    const s = summarizeArtifact('documentation', '# Login guide\n## Setup\ntext\n## Providers\n### GitHub\n');
    expect(s).toEqual({ brief: 'Documentation: Login guide.', keyPoints: ['Setup', 'Providers', 'GitHub'], filesAffected: [] });
  });

  it.each([
    ['vitest', ' ✓ test/a.test.ts (3 tests) 5ms\n × test/b.test.ts > login > rejects a bad token\n\n Test Files  1 failed | 1 passed (2)\n      Tests  1 failed | 11 passed | 2 skipped (14)\n', { passed: 11, failed: 1, total: 14 }],
    ['jest', 'FAIL src/b.test.js\n  ● login › rejects\n\nTests:       2 failed, 5 passed, 7 total\nTest Suites: 1 failed, 1 passed, 2 total\n', { passed: 5, failed: 2, total: 7 }],
    ['node:test', 'TAP version 13\nnot ok 2 - rejects a bad token\n1..3\n# tests 3\n# suites 0\n# pass 2\n# fail 1\n# cancelled 0\n', { passed: 2, failed: 1, total: 3 }],
    ['node:test spec', '✖ rejects a bad token (1.2ms)\nℹ tests 4\nℹ pass 4\nℹ fail 0\n', { passed: 4, failed: 0, total: 4 }],
    ['mocha', '  login\n    ✓ accepts\n    1) rejects\n\n  6 passing (12ms)\n  1 failing\n  2 pending\n', { passed: 6, failed: 1, total: 9 }],
    ['bare', 'ran the suite: 3 passed, 0 failed', { passed: 3, failed: 0, total: 3 }],
  ])('should parse %s test results', (_runner, output, expected) => {
    const s = summarizeArtifact('test_results', output);
    expect(s.metrics).toEqual({ testsCount: expected.total, testsFailed: expected.failed });
    expect(s.brief).toMatch(new RegExp(`^Tests: ${expected.passed} passed, ${expected.failed} failed`));
  });

  it('should list failing tests as key points', () => {
    const s = summarizeArtifact('test_results', ' × login > rejects a bad token\n × login > expires\n      Tests  2 failed | 1 passed (3)\n');
    expect(s.keyPoints).toEqual(['login > rejects a bad token', 'login > expires']);
    expect(s.brief).toBe('Tests: 1 passed, 2 failed (3 total).');
  });

  it('should keep the brief to two sentences and 400 characters, and at most five key points', () => {
    const s = summarizeArtifact('error_report', `One. Two! Three? Four.\n${Array.from({ length: 9 }, (_, i) => `- point ${i} ${'x'.repeat(400)}`).join('\n')}`);
    expect(s.brief).toBe('One. Two!');
    expect(s.keyPoints).toHaveLength(5);
    expect(s.keyPoints.every((p) => p.length <= 300)).toBe(true);
    expect(summarizeArtifact('user_task', 'y'.repeat(1_000)).brief).toHaveLength(400);
    expect(summarizeArtifact('error_report', 'TypeError: x is undefined\n    at f (a.js:1:1)').brief).toBe('TypeError: x is undefined');
  });
});

describe('sanitizeArtifactContent', () => {
  it('should redact known secrets and self-naming tokens, and leave code that only looks like one', () => {
    secrets.add('TEST_SANITIZE_KEY', 'sanitize-secret-91b3e0aa');
    const out = sanitizeArtifactContent('key sanitize-secret-91b3e0aa\nconst gh = "ghp_abcdefghijklmnopqrstuvwxyz0123";\nconst token = getToken();\npassword: process.env.DB_PASSWORD');
    expect(out).toBe('key [redacted:TEST_SANITIZE_KEY]\nconst gh = "[redacted]";\nconst token = getToken();\npassword: process.env.DB_PASSWORD');
  });

  it('should remove control characters and terminal escapes but tab and newline, and normalise line ends', () => {
    expect(sanitizeArtifactContent('a\tb\r\nc\rd\u0000e\u0008f\u001b[1;32mg\u001b[0m\u007f\u202eh\u001b]0;title\u0007i')).toBe('a\tb\nc\nd' + 'efghi');
  });

  it('should refuse content over the size limit', () => {
    const e = (() => {
      try {
        sanitizeArtifactContent('é'.repeat(MAX_ARTIFACT_BYTES / 2 + 1));
        return null;
      } catch (error) {
        return error as Error;
      }
    })();
    expect(isA2AError(e, 'VALIDATION_ERROR')).toBe(true);
    expect(e!.message).toMatch(/^artifact content is 1\.00 MiB; the limit is 1\.00 MiB: write large outputs/);
    expect(sanitizeArtifactContent('x'.repeat(MAX_ARTIFACT_BYTES))).toHaveLength(MAX_ARTIFACT_BYTES);
  });
});
