/**
 * The MCP client (adapters/mcp/client.ts) against servers built with the official SDKs, of both
 * protocol generations, over both transports: a v2-SDK server (the 2026-07-28 revision: no
 * `initialize`, questions by `input_required`) and a v1-SDK server (earlier revisions:
 * `initialize`, `elicitation/create` pushed during the call), each over stdio and Streamable HTTP
 * (test/mcp/fixtures/clientServers.mjs, clientHttp.ts). The same conversation runs against each:
 * the revision agreed, tools and what their annotations ask, resources and prompts, progress,
 * the call's `_meta`, a server's question answered by a person (a wrong answer asked again, a
 * decline), a question whose form MCP does not allow, an unknown tool, and a cancel the server sees.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, startRun, type RunEvent } from '../../index.js';
import { tempDir } from '../helpers.js';
import { startHttp, type TestHttpServer } from './fixtures/clientHttp.js';
import { call, calls, complete, model, runWith } from './fixtures/clientRun.js';

const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'clientServers.mjs');

const transports: Array<{ name: string; kind: 'v1' | 'v2'; http: boolean; revision: RegExp }> = [
  { name: 'v2-SDK server over stdio', kind: 'v2', http: false, revision: /^2026-07-28$/ },
  { name: 'v1-SDK server over stdio', kind: 'v1', http: false, revision: /^2025-/ },
  { name: 'v2-SDK server over Streamable HTTP', kind: 'v2', http: true, revision: /^2026-07-28$/ },
  { name: 'v1-SDK server over Streamable HTTP', kind: 'v1', http: true, revision: /^2025-/ },
];

describe.each(transports)('the MCP client with a $name', ({ kind, http, revision }) => {
  let server: TestHttpServer | null = null;
  beforeAll(async () => {
    if (http) server = await startHttp(kind);
  });
  afterAll(async () => {
    await server?.close();
  });
  const config = (dir: string, extra: object = {}) => (http ? { url: server!.url(dir), ...extra } : { command: process.execPath, args: [FIXTURE, kind, dir], ...extra });

  it('agrees on the revision, and asks permissions by what the server says of its tools; reads its resources and prompts; reports progress', async () => {
    const dir = tempDir();
    const { run, events, asked, model: m, results } = await runWith({
      servers: { db: config(dir) },
      turns: [
        call('mcp__db__add', { a: 2, b: 3 }),
        call('mcp__db__drop_table', { name: 'users' }),
        call('mcp__db__touch'),
        call('mcp__db__list_resources'),
        call('mcp__db__read_resource', { uri: 'notes://readme' }),
        call('mcp__db__list_prompts'),
        call('mcp__db__get_prompt', { name: 'review', arguments: { file: 'a.ts' } }),
        call('mcp__db__slow', { steps: 3 }),
        call('mcp__db__nope'),
        complete('done'),
      ],
      human: (item) => ({ approved: !item.title.includes('touch'), by: 'ann' }),
    });
    expect((await run.done).status).toBe('completed');
    const connected = events.find((e) => e.type === 'mcp.connected')!;
    expect(String(connected.data.protocolVersion)).toMatch(revision);
    expect(connected.data).toMatchObject({ tools: 9, resources: true, prompts: true });
    const names = m.calls[0]!.request.tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['mcp__db__add', 'mcp__db__drop_table', 'mcp__db__list_resources', 'mcp__db__read_resource', 'mcp__db__list_prompts', 'mcp__db__get_prompt']));
    // read-only (add, resources, prompts): nobody asked; destructive and unannotated: a person
    expect(asked.map((i) => i.title)).toEqual(['mcp_tool_destructive: db.drop_table {"name":"users"}', 'mcp_tool: db.touch {}']);
    const r = results();
    expect(r[0]).toBe(`5 (${kind === 'v2' ? 'v2 modern' : 'v1'})`);
    expect(r[1]).toBe('dropped users');
    expect(r[2]).toMatch(/^TOOL_NOT_ALLOWED: Permission mcp_tool for mcp__db__touch was denied by human/);
    expect(r[3]).toBe('notes://readme — The read-me (text/plain): What this server is');
    expect(r[4]).toMatch(/^read me \(v/);
    expect(r[5]).toBe('review(file): Reviews a file');
    expect(r[6]).toMatch(/^user: Review a\.ts carefully/);
    expect(r[7]).toBe('did 3 steps');
    expect(r[8]).toMatch(/^TOOL_NOT_ALLOWED: Unknown tool "mcp__db__nope": the MCP server "db" has mcp__db__add, /);
    expect(calls(dir)).toEqual(['add 2 3', 'drop_table users']);
    // progress: the first at once, then at most one a second (the ones between counted in `skipped`),
    // and the last one held back told when the call ends. (The SDK drops a notification that arrives
    // in the same read as the call's result, so the very last step may not be seen under load.)
    const progress = events.filter((e) => e.type === 'mcp.progress').map((e) => e.data);
    expect(progress[0]).toMatchObject({ server: 'db', tool: 'slow', progress: 1, total: 3, message: 'step 1' });
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.map((p) => p.progress)).toEqual([...progress.map((p) => p.progress as number)].sort());
    expect(progress.reduce((n, p) => n + 1 + Number(p.skipped ?? 0), 0)).toBe(progress.at(-1)!.progress);
  });

  it('puts the server\'s question to a person, asks again when the answer does not fit its form, and sends a decline back', async () => {
    const dir = tempDir();
    const answers = ['{"city": 3}', 'Lisbon'];
    const { run, events, asked, results } = await runWith({
      servers: { trips: config(dir, { permission: 'auto_approve' }) },
      turns: [call('mcp__trips__book'), call('mcp__trips__confirm'), call('mcp__trips__ask_bad'), complete('booked')],
      human: (item) => (item.title.includes('Go ahead') ? { approved: false, by: 'ann' } : { approved: true, text: answers.shift()!, by: 'ann' }),
    });
    expect((await run.done).status).toBe('completed');
    expect(asked.map((i) => i.request?.action)).toEqual(['mcp_elicitation', 'mcp_elicitation', 'mcp_elicitation']);
    expect(asked[0]!.request!.elicitation).toMatchObject({ server: 'trips', tool: 'book', message: 'Where should the stay be booked?' });
    expect(asked[0]!.title).toContain('"city": string (required, Where to); "nights": integer (optional, default 2)');
    expect(asked[1]!.title).toContain('[your last answer: "city" must be a string, not 3]');
    const r = results();
    // the field left out gets the server's default
    expect(r[0]).toBe('booked: accept {"city":"Lisbon","nights":2}');
    expect(r[1]).toBe('confirm: decline');
    // a form MCP does not allow is refused before anyone sees it, and the model is told why
    expect(r[2]).toMatch(/a2a could not put to anyone.*requestedSchema\.properties\.address/);
    expect(asked).toHaveLength(3);
    expect(calls(dir)).toEqual(['book accept {"city":"Lisbon","nights":2}']);
    const answered = events.filter((e) => e.type === 'mcp.elicitation.answered').map((e) => `${String(e.data.tool)} ${String(e.data.action)} ${String(e.data.by)}`);
    expect(answered).toEqual(['book accept human', 'confirm decline human']);
    expect(events.filter((e) => e.type === 'mcp.elicitation.asked').map((e) => e.data.attempt ?? 1)).toEqual([1, 2, 1]);
    // the MCP event names the content's fields, not their values (what the person typed is in human.answered, as any answer)
    expect(events.find((e) => e.type === 'mcp.elicitation.answered')!.data.fields).toEqual(['city', 'nights']);
  });

  it('cancels a call in flight when the run stops, and the server sees the cancel', async () => {
    const dir = tempDir();
    const { run, events } = await runWith({ servers: { slow: config(dir, { permission: 'auto_approve' }) }, turns: [call('mcp__slow__hang')] });
    await expect.poll(() => calls(dir), { timeout: 5_000 }).toEqual(['hang']);
    run.stop('enough');
    expect((await run.done).status).toBe('cancelled');
    await expect.poll(() => existsSync(join(dir, 'aborted')), { timeout: 5_000 }).toBe(true);
    expect(events.find((e) => e.type === 'mcp.called')!.data).toMatchObject({ tool: 'hang', cancelled: true });
  });

  it('sends the call\'s idempotency key in _meta, and no trace context while tracing is off', async () => {
    const dir = tempDir();
    const { run } = await runWith({ servers: { m: config(dir, { permission: 'auto_approve' }) }, turns: [call('mcp__m__meta'), complete('ok')] });
    expect((await run.done).status).toBe('completed');
    const meta = JSON.parse(readFileSync(join(dir, 'meta-meta'), 'utf8')) as Record<string, unknown>;
    expect(String(meta['io.a2a/idempotency-key'])).toMatch(/\S/);
    // tracing is off: no trace context (test/mcp/clientTrace.test.ts has it on)
    expect(meta.traceparent).toBeUndefined();
  });
});

describe('the protocol revision of an MCP server', () => {
  const server = (kind: 'v1' | 'v2', dir: string, extra: object = {}) => ({ command: process.execPath, args: [FIXTURE, kind, dir], permission: 'auto_approve', ...extra });
  const procs = (dir: string) => readdirSync(dir).filter((f) => f.startsWith('proc-')).length;

  it('is asked once per server in a run: the probe\'s extra process is paid by the first session only', async () => {
    const dir = tempDir();
    const m = model([], [{ prompt: '', turns: [call('mcp__db__add', { a: 1, b: 2 }), complete('added')] }]);
    const events: RunEvent[] = [];
    const run = await startRun({
      plan: { id: 'p', tasks: [{ id: 'a', prompt: 'one' }, { id: 'b', prompt: 'two', dependsOn: ['a'] }, { id: 'c', prompt: 'three', dependsOn: ['b'] }] },
      agent: '@toolsmith',
      agents: [defineAgent({ name: 'toolsmith', description: 'Uses MCP tools', tools: ['a2a_subtask_complete'], mcpServers: { db: server('v2', dir) } as never })],
      model: m,
      store: 'memory',
      workspace: tempDir(),
      onEvent: (e) => events.push(e),
    });
    expect((await run.done).status).toBe('completed');
    expect(events.filter((e) => e.type === 'mcp.connected').map((e) => e.data.protocolVersion)).toEqual(['2026-07-28', '2026-07-28', '2026-07-28']);
    // three sessions, one probe
    expect(procs(dir)).toBe(4);
  });

  it('may be pinned: `legacy` talks `initialize` to a 2026 server (questions still reach a person), `2026-07-28` refuses an earlier server, saying so', async () => {
    const dir = tempDir();
    const { run, events, results } = await runWith({
      servers: { new: server('v2', dir, { protocol: 'legacy' }), old: server('v1', tempDir(), { protocol: '2026-07-28' }) },
      turns: [call('mcp__new__book'), complete('done')],
      human: () => ({ approved: true, text: 'Braga', by: 'ann' }),
    });
    expect((await run.done).status).toBe('completed');
    expect(String(events.find((e) => e.type === 'mcp.connected')!.data.protocolVersion)).toMatch(/^2025-/);
    expect(results()[0]).toBe('booked: accept {"city":"Braga","nights":2}');
    const failed = events.find((e) => e.type === 'mcp.failed')!;
    expect(failed.data).toMatchObject({ server: 'old', phase: 'start' });
    expect(String(failed.data.error)).toMatch(/could not be started or reached: .*2026-07-28/);
    // the pinned server was started once (no probe of its own), and never initialized
    expect(procs(dir)).toBe(1);
  });
});
