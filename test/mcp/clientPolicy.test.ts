/**
 * Who decides for an MCP server's tools and questions: the tools' annotations under the matrix
 * (`mcp_tool_read_only`, `mcp_tool_destructive`), a tier in the server's config over both; the
 * server's questions (`mcp_elicitation`) under the server's tier, the matrix, a parent's level, a
 * person (through the code handler and through the control path `a2a inbox` uses), and the
 * timeout. What may run again after a crash (`readOnlyHint`, `idempotentHint`). Against SDK-built
 * servers of both generations over stdio (test/mcp/fixtures/clientServers.mjs).
 */
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defineAgent, startRun, type RunEvent } from '../../index.js';
import { McpTools } from '../../adapters/mcp/client.js';
import { McpServerConfig, type SessionSpec } from '../../machines/protocol/index.js';
import type { AgentDefinition } from '../../actors/config/registry.js';
import { tempDir } from '../helpers.js';
import { call, calls, complete, model, runWith } from './fixtures/clientRun.js';

const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'clientServers.mjs');
const answeredBy = (events: RunEvent[]) => events.filter((e) => e.type === 'mcp.elicitation.answered').map((e) => `${String(e.data.tool)} ${String(e.data.action)} ${String(e.data.by)}`);

describe.each(['v2', 'v1'] as const)('MCP tool permissions and annotations (%s-SDK server, stdio)', (kind) => {
  const server = (dir: string, extra: object = {}) => ({ command: process.execPath, args: [FIXTURE, kind, dir], ...extra });

  it('lets the matrix turn the annotations\' defaults around, and a tier in the server\'s config wins over both', async () => {
    const dir = tempDir();
    const { run, asked, results } = await runWith({
      servers: { db: server(dir, { tools: { touch: 'auto_approve', drop_table: 'auto_deny' } }), ro: server(tempDir(), { tools: { add: 'ask_user' } }) },
      settings: { permissions: { auto_approve: ['mcp_tool_destructive'], ask_user: ['mcp_tool_read_only'] } },
      turns: [call('mcp__db__add', { a: 1, b: 1 }), call('mcp__db__touch'), call('mcp__db__read_resource', { uri: 'notes://readme' }), call('mcp__ro__add', { a: 2, b: 2 }), call('mcp__db__drop_table', { name: 'x' }), complete('done')],
      human: () => ({ approved: true, by: 'ann' }),
    });
    expect((await run.done).status).toBe('completed');
    // read-only now asks (the matrix), touch does not (its own tier); add on "ro" is ask_user in config: a person, as mcp_tool
    expect(asked.map((i) => i.title)).toEqual(['mcp_tool_read_only: db.add {"a":1,"b":1}', 'mcp_tool_read_only: db.read_resource {"uri":"notes://readme"}', 'mcp_tool: ro.add {"a":2,"b":2}']);
    expect(results()[4]).toMatch(/^TOOL_NOT_ALLOWED: Unknown tool "mcp__db__drop_table"/);
    expect(calls(dir)).toEqual(['add 1 1', 'touch']);
  });

  it('keeps what may run again after a crash: readOnlyHint and idempotentHint tools, resources and prompts; not the others', async () => {
    const tools = new McpTools({ events: { emit: () => undefined }, workspace: tempDir() });
    const spec = { id: 'w1', depth: 0, agent: { raw: '@x' }, owner: { ownerId: 'orchestrator' }, correlation: { runId: 'r1', worktreePath: '' } } as unknown as SessionSpec;
    const definition = { capability: { id: '@x' }, mcpServers: { db: McpServerConfig.parse(server(tempDir())) } } as unknown as AgentDefinition;
    try {
      const { tools: listed } = await tools.toolsFor(spec, definition, new AbortController().signal);
      expect(listed.map((t) => t.name)).toContain('mcp__db__hang');
      const again = (name: string) => tools.idempotent(name, spec);
      expect([again('mcp__db__add'), again('mcp__db__touch'), again('mcp__db__slow'), again('mcp__db__read_resource'), again('mcp__db__get_prompt')]).toEqual([true, true, true, true, true]);
      expect([again('mcp__db__drop_table'), again('mcp__db__book'), again('mcp__db__hang')]).toEqual([false, false, false]);
    } finally {
      await tools.closeAll();
    }
  });
});

describe.each(['v2', 'v1'] as const)('an MCP server\'s questions under the policy (%s-SDK server, stdio)', (kind) => {
  const server = (dir: string, extra: object = {}) => ({ command: process.execPath, args: [FIXTURE, kind, dir], permission: 'auto_approve', ...extra });

  it('declines when nobody answers in time, and says so', async () => {
    const dir = tempDir();
    const { run, events, asked, results } = await runWith({
      servers: { trips: server(dir) },
      settings: { permissions: { ask_user_timeout_ms: 300, ask_user_default: 'approve' } },
      turns: [call('mcp__trips__book'), complete('done')],
      human: () => undefined,
    });
    expect((await run.done).status).toBe('completed');
    expect(asked).toHaveLength(1);
    // even where the matrix approves what nobody answers, a question is declined: there is no answer to give
    expect(asked[0]!.onTimeout).toEqual({ approved: false, text: 'declined by default: nobody answered' });
    expect(results()[0]).toBe('booked: decline');
    const answered = events.find((e) => e.type === 'mcp.elicitation.answered')!;
    expect(answered.data).toMatchObject({ action: 'decline', by: 'timeout' });
    expect(String(answered.data.reason)).toMatch(/nobody answered/);
  });

  it('follows the server\'s tier: auto_deny declines unasked; auto_approve takes the defaults, or asks a person for what has none', async () => {
    const { run, events, asked, results } = await runWith({
      servers: { no: server(tempDir(), { elicitation: 'auto_deny' }), yes: server(tempDir(), { elicitation: 'auto_approve' }) },
      turns: [call('mcp__no__confirm'), call('mcp__yes__confirm'), call('mcp__yes__book'), complete('done')],
      human: () => ({ approved: true, text: '{"city":"Porto","nights":3}', by: 'ann' }),
    });
    expect((await run.done).status).toBe('completed');
    expect(results().slice(0, 3)).toEqual(['confirm: decline', 'confirm: accept {"confirm":true}', 'booked: accept {"city":"Porto","nights":3}']);
    expect(asked.map((i) => i.request?.elicitation?.tool)).toEqual(['book']);
    expect(asked[0]!.request!.needsPerson).toBe(true);
    expect(answeredBy(events)).toEqual(['confirm decline policy', 'confirm accept policy', 'book accept human']);
  });

  it('is answered through the control path `a2a inbox answer` takes, and `approve --all` leaves it to its own answer', async () => {
    const dir = tempDir();
    const { run, events, results } = await runWith({ servers: { trips: server(dir) }, turns: [call('mcp__trips__book'), complete('done')] });
    await expect.poll(() => run.pending().length, { timeout: 8_000 }).toBe(1);
    const [item] = run.pending();
    expect(item!.request!.elicitation!.message).toBe('Where should the stay be booked?');
    expect(() => run.approveAll('ann')).toThrow(/no permission request is pending/);
    expect(() => run.answer(item!.id, { by: 'ann' })).toThrow(/approve or deny it/);
    expect(run.answer(item!.id, { text: 'Faro', by: 'ann' })).toMatch(/answered/);
    expect((await run.done).status).toBe('completed');
    expect(results()[0]).toBe('booked: accept {"city":"Faro","nights":2}');
    expect(answeredBy(events)).toEqual(['book accept human']);
  });

  it('declines after three answers that do not fit its form, saying why', async () => {
    const { run, events, asked, results } = await runWith({
      servers: { trips: server(tempDir()) },
      turns: [call('mcp__trips__book'), complete('done')],
      human: () => ({ approved: true, text: '{"city": 3}', by: 'ann' }),
    });
    expect((await run.done).status).toBe('completed');
    expect(asked).toHaveLength(3);
    expect(results()[0]).toBe('booked: decline');
    const answered = events.find((e) => e.type === 'mcp.elicitation.answered')!;
    expect(answered.data).toMatchObject({ action: 'decline', by: 'a2a' });
    expect(String(answered.data.reason)).toBe('no answer fitted the form after 3 tries (the last: "city" must be a string, not 3)');
  });

  it('is cancelled when the run stops while it waits', async () => {
    const dir = tempDir();
    const { run, events } = await runWith({ servers: { trips: server(dir) }, turns: [call('mcp__trips__book')], human: () => undefined });
    await expect.poll(() => run.pending().length, { timeout: 8_000 }).toBe(1);
    run.stop('enough');
    expect((await run.done).status).toBe('cancelled');
    await expect.poll(() => answeredBy(events), { timeout: 5_000 }).toEqual(['book cancel a2a']);
  });

  it('is answered by the parent\'s level for a sub-task, as a permission is, and goes on to a person for what only a person can fill in', async () => {
    const dir = tempDir();
    const script = model([], [
      { depth: 1, turns: [call('mcp__trips__confirm'), call('mcp__trips__book'), complete('confirmed')] },
      { depth: 0, turns: [call('a2a_spawn_subtask', { agentType: '@toolsmith', prompt: 'confirm the trip', expectedOutput: 'the answer' }), complete('done')] },
    ]);
    const events: RunEvent[] = [];
    const asked: unknown[] = [];
    const run = await startRun({
      task: 'book a trip through a sub-task',
      agent: '@toolsmith',
      agents: [defineAgent({ name: 'toolsmith', description: 'Uses MCP tools', tools: ['a2a_subtask_complete', 'a2a_spawn_subtask'], canSpawnSubTasks: true, mcpServers: { trips: server(dir) } as never })],
      model: script,
      store: 'memory',
      workspace: tempDir(),
      settings: { permissions: { auto_approve: ['mcp_elicitation'], auto_approve_for_subtasks: ['file_edits_in_worktree'] } } as never,
      onEvent: (e) => events.push(e),
      human: (item) => {
        asked.push(item);
        return { approved: true, text: 'Porto', by: 'ann' };
      },
    });
    expect((await run.done).status).toBe('completed');
    // the parent's level answers with the server's defaults; a form with a required field and no
    // default needs content only a person can give, so it goes on to one
    expect(answeredBy(events)).toEqual(['confirm accept parent', 'book accept human']);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ request: { action: 'mcp_elicitation', needsPerson: true, via: [expect.stringMatching(/\.1$/), expect.any(String)] } });
    const decided = events.find((e) => e.type === 'permission.decided' && (e.data as { action?: string }).action === 'mcp_elicitation');
    expect(decided).toBeDefined();
  });
});
