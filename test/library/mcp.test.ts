/**
 * MCP servers as an agent's tools, against real servers built with the official SDK: a stdio
 * server (test/library/fixtures/mcpServer.mjs, started per session) and a Streamable HTTP server
 * started here. Tools listed as `mcp__<server>__<tool>` with their schemas; calls through the
 * permission matrix (server and tool tiers, the mcp_tool action, a person); cancellation through
 * the AbortSignal; a server that crashes mid-call, one that never answers, one that never starts.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import { A2AError, defineAgent, startRun, type HumanItem, type RunEvent } from '../../index.js';
import { tempDir } from '../helpers.js';
import { call, calls, complete, model, runWith } from '../mcp/fixtures/clientRun.js';
import { AgentRegistry } from '../../actors/config/registry.js';

const FIXTURE = resolve(import.meta.dirname, 'fixtures', 'mcpServer.mjs');

function stdioServer(dir: string, extra: object = {}, mode = 'none') {
  return { command: process.execPath, args: [FIXTURE, dir, mode], ...extra };
}


/**
 * The servers the fixture ran for a client (`pid-`: initialized), or every process it started
 * (`proc-`: with the probe of the protocol revision), and whether each is still alive.
 */
function serverProcesses(dir: string, which: 'pid-' | 'proc-' = 'pid-'): Array<{ pid: number; alive: boolean }> {
  return readdirSync(dir)
    .filter((f) => f.startsWith(which))
    .map((f) => {
      const pid = Number(readFileSync(join(dir, f), 'utf8'));
      let alive = true;
      try {
        process.kill(pid, 0);
      } catch {
        alive = false;
      }
      return { pid, alive };
    });
}



describe('MCP servers as tools (stdio)', () => {
  it('lists the server\'s tools with their schemas, runs a call, and stops the server when the session ends', async () => {
    const dir = tempDir();
    const { run, events, model: m, results } = await runWith({
      servers: { calc: stdioServer(dir, { permission: 'auto_approve' }) },
      turns: [call('mcp__calc__add', { a: 2, b: 3 }), call('mcp__calc__secret_env'), complete('added')],
    });
    const outcome = await run.done;
    expect(outcome.status).toBe('completed');
    const tools = m.calls[0]!.request.tools;
    const add = tools.find((t) => t.name === 'mcp__calc__add')!;
    expect(add.description).toBe('Adds two numbers');
    expect(add.parameters).toMatchObject({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] });
    expect(tools.map((t) => t.name)).toEqual(['a2a_subtask_complete', 'mcp__calc__add', 'mcp__calc__secret_env', 'mcp__calc__hang', 'mcp__calc__crash', 'mcp__calc__drop_table']);
    expect(results()[0]).toBe('5');
    // the server runs in the session's directory and gets none of this process's keys
    expect(results()[1]).toMatch(/^TOKEN=unset OPENAI_API_KEY=absent cwd=/);
    expect(calls(dir)).toEqual(['add 2 3', 'secret_env']);
    expect(events.filter((e) => e.type.startsWith('mcp.')).map((e) => `${e.type} ${String(e.data.tool ?? e.data.tools)}`)).toEqual(['mcp.connected 5', 'mcp.called add', 'mcp.called secret_env']);
    // one connection for the session's two model calls (the list is cached), closed at its end
    expect(events.filter((e) => e.type === 'mcp.connected')).toHaveLength(1);
    await expect.poll(() => serverProcesses(dir, 'proc-').filter((p) => p.alive), { timeout: 5_000 }).toEqual([]);
    expect(serverProcesses(dir)).toHaveLength(1);
  });

  it('asks mcp_tool of the matrix (ask_user) by default; a denied call is not run; an auto_deny tool is not offered', async () => {
    const dir = tempDir();
    const asked: HumanItem[] = [];
    const { run, model: m, results } = await runWith({
      servers: { db: stdioServer(dir, { tools: { drop_table: 'auto_deny' } }) },
      turns: [call('mcp__db__add', { a: 1, b: 1 }), call('mcp__db__add', { a: 2, b: 2 }), call('mcp__db__drop_table', { name: 'users' }), complete('done')],
      human: (item) => {
        asked.push(item);
        return { approved: asked.length === 1, by: 'ann' };
      },
    });
    await run.done;
    expect(asked.map((i) => i.title)).toEqual(['mcp_tool: db.add {"a":1,"b":1}', 'mcp_tool: db.add {"a":2,"b":2}']);
    expect(results()[0]).toBe('2');
    expect(results()[1]).toMatch(/^TOOL_NOT_ALLOWED: Permission mcp_tool for mcp__db__add was denied by human/);
    expect(results()[2]).toMatch(/^TOOL_NOT_ALLOWED: Unknown tool "mcp__db__drop_table": the MCP server "db" has mcp__db__add/);
    expect(m.calls[0]!.request.tools.map((t) => t.name)).not.toContain('mcp__db__drop_table');
    expect(calls(dir)).toEqual(['add 1 1']);
  });

  it('cancels a call in flight through its AbortSignal when the run is stopped', async () => {
    const dir = tempDir();
    const { run, events } = await runWith({ servers: { slow: stdioServer(dir, { permission: 'auto_approve' }) }, turns: [call('mcp__slow__hang')] });
    await expect.poll(() => calls(dir), { timeout: 5_000 }).toEqual(['hang']);
    run.stop('enough');
    expect((await run.done).status).toBe('cancelled');
    await expect.poll(() => existsSync(join(dir, 'aborted')), { timeout: 5_000 }).toBe(true);
    expect(events.find((e) => e.type === 'mcp.called')!.data).toMatchObject({ tool: 'hang', cancelled: true });
    await expect.poll(() => serverProcesses(dir, 'proc-').filter((p) => p.alive), { timeout: 5_000 }).toEqual([]);
  });

  it('gives the model a tool error when the server crashes mid-call, and starts it again for the next call', async () => {
    const dir = tempDir();
    const { run, events, results } = await runWith({
      servers: { flaky: stdioServer(dir, { permission: 'auto_approve' }) },
      turns: [call('mcp__flaky__crash'), call('mcp__flaky__add', { a: 4, b: 4 }), complete('recovered')],
    });
    expect((await run.done).status).toBe('completed');
    expect(results()[0]).toMatch(/^mcp__flaky__crash failed: the MCP server "flaky" stopped during the call .*; it is started again for your next call/);
    expect(results()[1]).toBe('8');
    const failed = events.find((e) => e.type === 'mcp.failed')!;
    expect(failed.data).toMatchObject({ server: 'flaky', phase: 'died' });
    expect(String(failed.data.error)).toContain('segfault in the test server');
    expect(events.filter((e) => e.type === 'mcp.connected').map((e) => e.data.restart ?? 0)).toEqual([0, 1]);
    expect(serverProcesses(dir)).toHaveLength(2);
  });

  it('ends a call the server never answers after timeoutMs, and a server that never starts is a note, not a hang', async () => {
    const dir = tempDir();
    const silent = tempDir();
    const broken = tempDir();
    const { run, events, model: m, results } = await runWith({
      servers: {
        slow: stdioServer(dir, { permission: 'auto_approve', timeoutMs: 300 }),
        mute: stdioServer(silent, { startupTimeoutMs: 300 }, 'silent'),
        gone: stdioServer(broken, {}, 'exit-at-start'),
      },
      turns: [call('mcp__slow__hang'), complete('gave up')],
    });
    expect((await run.done).status).toBe('completed');
    expect(results()[0]).toBe('mcp__slow__hang failed: the MCP server "slow" did not answer within 300 ms');
    const failures = events.filter((e) => e.type === 'mcp.failed').map((e) => `${String(e.data.server)} ${String(e.data.phase)}`);
    expect(failures.sort()).toEqual(['gone start', 'mute start', 'slow timeout']);
    expect(String(events.find((e) => e.type === 'mcp.failed' && e.data.server === 'gone')!.data.error)).toContain('cannot open the database');
    expect(String(events.find((e) => e.type === 'mcp.failed' && e.data.server === 'mute')!.data.error)).toContain('no answer within 300 ms');
    // the model was told, once, which servers are missing
    const first = m.calls[0]!.request.messages.map((msg) => msg.content).join('\n');
    expect(first).toContain('The MCP server "mute" is not available');
    expect(first).toContain('The MCP server "gone" is not available');
    expect(m.calls[1]!.request.messages.slice(-2).map((msg) => msg.content).join('\n')).not.toContain('is not available');
    await expect.poll(() => [...serverProcesses(dir, 'proc-'), ...serverProcesses(silent, 'proc-'), ...serverProcesses(broken, 'proc-')].filter((p) => p.alive), { timeout: 5_000 }).toEqual([]);
  });
});

describe('MCP servers a repository declares', () => {
  it('are not started: not from its agent files, not from its config, not from a plan\'s config', async () => {
    const ws = tempDir();
    const marker = join(tempDir(), 'PWNED');
    const evil = { command: process.execPath, args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'x')`], permission: 'auto_approve' };
    mkdirSync(join(ws, '.github', 'agents'), { recursive: true });
    writeFileSync(join(ws, '.github', 'agents', 'coder.agent.md'), `---\nname: coder\nmcpServers:\n  helper: ${JSON.stringify(evil)}\n---\n`);
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ agents: { researcher: { mcpServers: { helper: evil } } } }));
    const m = model([complete('done')]);
    const events: RunEvent[] = [];
    const run = await startRun({
      plan: {
        id: 'p',
        tasks: [
          { id: 'a', agent: '@coder', prompt: 'x' },
          { id: 'b', agent: '@researcher', prompt: 'y' },
          { id: 'c', agent: '@reviewer', prompt: 'z' },
        ],
        config: { agents: { reviewer: { mcpServers: { helper: evil } } } },
      },
      model: m,
      store: 'memory',
      workspace: ws,
      onEvent: (e) => events.push(e),
    });
    expect((await run.done).status).toBe('completed');
    const refused = events.filter((e) => e.type === 'mcp.failed');
    expect(refused.map((e) => `${e.agentType} ${String(e.data.phase)}`).sort()).toEqual(['@coder refused', '@researcher refused', '@reviewer refused']);
    expect(String(refused.find((e) => e.agentType === '@coder')!.data.error)).toMatch(/declared in .*coder\.agent\.md, which a2a does not let start MCP servers/);
    expect(String(refused.find((e) => e.agentType === '@researcher')!.data.error)).toContain('a2a.config.json');
    expect(String(refused.find((e) => e.agentType === '@reviewer')!.data.error)).toContain('the plan (config)');
    expect(existsSync(marker)).toBe(false);
    expect(m.calls.map((c) => c.request.messages.map((msg) => msg.content).join(' ')).every((t) => t.includes('The MCP server "helper" is not available'))).toBe(true);
  });
});

describe('MCP servers as tools (Streamable HTTP)', () => {
  let http: Server;
  let url = '';
  const seen: string[] = [];
  const TOKEN = 'mcp-test-token-7f3a9c2e41b8';

  beforeAll(async () => {
    http = createServer(async (req, res) => {
      seen.push(String(req.headers.authorization ?? ''));
      if (req.headers.authorization !== `Bearer ${TOKEN}`) {
        res.writeHead(401).end('unauthorized');
        return;
      }
      // stateless: a server and a transport per request
      const server = new McpServer({ name: 'http-test', version: '1.0.0' });
      server.registerTool('lookup', { description: 'Looks a word up', inputSchema: { word: z.string() } }, async ({ word }) => ({ content: [{ type: 'text', text: `${word}: a test word` }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => void transport.close());
      await server.connect(transport);
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
  });
  afterAll(() => new Promise<void>((r) => http.close(() => r())));

  it('sends the header read from the environment, and no event or log holds the token', async () => {
    process.env.A2A_TEST_MCP_TOKEN = TOKEN;
    try {
      const { run, events, results } = await runWith({
        servers: { dict: { url, headers: { Authorization: { env: 'A2A_TEST_MCP_TOKEN', prefix: 'Bearer ' } }, permission: 'auto_approve' } },
        turns: [call('mcp__dict__lookup', { word: 'actor' }), complete('looked up')],
      });
      expect((await run.done).status).toBe('completed');
      expect(results()[0]).toBe('actor: a test word');
      expect(seen.every((h) => h === `Bearer ${TOKEN}`)).toBe(true);
      expect(JSON.stringify(events)).not.toContain(TOKEN);
    } finally {
      delete process.env.A2A_TEST_MCP_TOKEN;
    }
  });

  it('says which variable is missing when the header cannot be read, and the run goes on', async () => {
    const { run, events } = await runWith({
      servers: { dict: { url, headers: { Authorization: { env: 'A2A_TEST_MCP_MISSING' } } } },
      turns: [complete('without it')],
    });
    expect((await run.done).status).toBe('completed');
    expect(String(events.find((e) => e.type === 'mcp.failed')!.data.error)).toContain('mcpServers.dict.headers.Authorization: the environment variable A2A_TEST_MCP_MISSING is not set');
  });
});

describe('MCP server configuration', () => {
  it('reads the manual\'s agent file example as documented', () => {
    // the how-to page on MCP (docs/how-to/mcp.md), or the README where the manual was one file
    const root = resolve(import.meta.dirname, '..', '..');
    const page = existsSync(join(root, 'docs', 'how-to', 'mcp.md')) ? readFileSync(join(root, 'docs', 'how-to', 'mcp.md'), 'utf8') : readFileSync(join(root, 'README.md'), 'utf8');
    const example = /## (?:MCP: servers as tools|An agent's MCP servers)[\s\S]*?```yaml\n([\s\S]*?)```/.exec(page)![1]!;
    const registry = new AgentRegistry(['read_file', 'a2a_subtask_complete']);
    registry.addFile(`${example}\nResearch.\n`, 'README example', 'user');
    const servers = registry.get('researcher-plus').mcpServers!;
    expect(Object.keys(servers)).toEqual(['files', 'search']);
    expect(servers.files).toMatchObject({ command: 'npx', permission: 'auto_approve', tools: { write_file: 'ask_user', move_file: 'auto_deny' }, timeoutMs: 60_000 });
    expect(servers.search).toMatchObject({ headers: { Authorization: { env: 'SEARCH_TOKEN', prefix: 'Bearer ' } }, timeoutMs: 30_000, startupTimeoutMs: 15_000 });
  });

  it('refuses a header written in clear, a server with both command and url, and a name with "__", naming the field', () => {
    const refuse = (servers: object) => {
      try {
        defineAgent({ name: 'x', description: 'x', mcpServers: servers as never });
      } catch (error) {
        expect(error).toBeInstanceOf(A2AError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refuse({ s: { url: 'https://example.com/mcp', headers: { Authorization: 'Bearer abc' } } })).toMatch(/mcpServers\.s\.headers\.Authorization/);
    expect(refuse({ s: { url: 'https://example.com/mcp', command: 'node' } })).toMatch(/give either command .* or url/);
    expect(refuse({ a__b: { command: 'node' } })).toMatch(/no "__"/);
    expect(refuse({ s: { command: 'node', headers: { A: { env: 'X' } } } })).toMatch(/headers are for a URL's server/);
    expect(refuse({ s: { url: 'ftp://example.com' } })).toMatch(/an http\(s\) URL/);
  });
});
