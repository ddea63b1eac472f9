/**
 * `a2a mcp`: a2a served over MCP, driven with the official SDK's client as an editor's agent
 * would: over stdio (the CLI started as a process) and over Streamable HTTP with a token. The
 * workspace's config makes file creation ask a person, so that a run waits for an answer the
 * client gives through the `answer` tool.
 */
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mcpCommand } from '../../bin/commands/mcp.js';
import { McpRuns, serveHttp } from '../../adapters/mcp/server.js';
import { a2aBundle } from '../nats/cluster.js';
import { tempDir } from '../helpers.js';
import { textOf, waitFor, workspace, type ToolResult } from '../mcp/fixtures/serverKit.js';


const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
});

describe('a2a mcp over stdio', () => {
  it('lists its tools, starts a run, shows what waits, takes the answer and returns the result', async () => {
    const dir = workspace();
    const client = new Client({ name: 'editor', version: '1' });
    clients.push(client);
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [a2aBundle(), 'mcp', '--workspace', dir], stderr: 'pipe', env: { PATH: process.env.PATH ?? '', HOME: dir } }));
    const tools = (await client.listTools()).tools.map((t) => t.name);
    expect(tools.sort()).toEqual(['answer', 'artifacts', 'control', 'get_result', 'list_runs', 'run_status', 'start_run', 'stop_run']);
    const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;

    // bad input: a clear error, nothing started
    const bad = await call('start_run', { task: 'x', plan: { tasks: [] } });
    expect(bad.isError).toBe(true);
    expect(textOf(bad)).toContain('give exactly one of task, plan and planFile');
    const unknown = await call('start_run', { task: 'write the notes', agent: '@wizard' });
    expect(unknown.isError).toBe(true);
    expect(textOf(unknown)).toMatch(/tasks\[0\]\.agent: Unknown agent type "@wizard"\. Available types: .*@coder/);

    const started = await call('start_run', { task: 'write the notes file', agent: '@coder' });
    expect(started.isError).toBeFalsy();
    const runId = String(started.structuredContent!.runId);
    const waiting = await waitFor(async () => {
      const status = await call('run_status', { runId });
      return (status.structuredContent!.pending as unknown[]).length === 1 ? status : null;
    }, 'the permission to be pending');
    expect(textOf(waiting)).toContain('[permission] file_creation_in_worktree: NOTES.md');
    expect(textOf(waiting)).toContain('w-task @coder');

    const refused = await call('answer', { runId, id: '1', text: 'yes' });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toContain('is a permission request');
    expect(textOf(await call('answer', { runId, id: '1', approved: true }))).toMatch(/approved/);

    const result = await call('get_result', { runId, waitSeconds: 8 });
    expect(textOf(result)).toContain(`run ${runId} completed`);
    expect(textOf(result)).toContain('NOTES.md written');
    expect(readFileSync(join(dir, 'NOTES.md'), 'utf8')).toBe('written through MCP\n');
    expect(textOf(await call('list_runs'))).toContain(`${runId} completed`);
    expect(textOf(await call('artifacts', { runId }))).toBe('no artifacts');
    // the CLI sees the same run in the workspace's files
    const record = JSON.parse(readFileSync(join(dir, '.a2a', 'runs', runId, 'run.json'), 'utf8')) as { status: string };
    expect(record.status).toBe('completed');
  });
});

describe('a2a mcp over Streamable HTTP', () => {
  it('refuses requests without the token; with it, starts a run and stops it; the token is never printed', async () => {
    const dir = workspace();
    const home = tempDir();
    const before = process.env.A2A_CONFIG_HOME;
    process.env.A2A_CONFIG_HOME = home;
    let stop!: () => void;
    const until = new Promise<void>((r) => (stop = r));
    let url!: string;
    const listening = new Promise<void>((r) => {
      void mcpCommand({ http: true, workspace: dir }, { stderr: { write: (s: string) => ((printed += s), true) } as never, until, onListening: (u) => ((url = u), r()) }, 'test');
    });
    let printed = '';
    try {
      await listening;
      const token = readFileSync(join(home, 'mcp-token'), 'utf8').trim();
      expect(statSync(join(home, 'mcp-token')).mode & 0o777).toBe(0o600);
      expect(printed).toContain(`a2a MCP server on ${url}`);
      expect(printed).not.toContain(token);

      const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
      const post = (headers: Record<string, string>) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(init) });
      expect((await post({})).status).toBe(401);
      expect((await post({ authorization: 'Bearer wrong-token-of-some-length' })).status).toBe(401);
      expect((await post({ authorization: `Bearer ${token}` })).status).toBe(200);

      const client = new Client({ name: 'editor', version: '1' });
      clients.push(client);
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<ToolResult>;
      const started = await call('start_run', { plan: { id: 'long', tasks: [{ id: 'think', agent: '@researcher', prompt: 'think forever' }] } });
      const runId = String(started.structuredContent!.runId);
      await waitFor(async () => {
        const status = await call('run_status', { runId });
        return textOf(status).includes('w-think') ? status : null;
      }, 'the worker to start');
      const stopped = await call('stop_run', { runId, reason: 'enough' });
      expect(textOf(stopped)).toBe(`run ${runId} cancelled`);
      expect(textOf(await call('get_result', { runId }))).toContain(`run ${runId} cancelled`);
    } finally {
      stop();
      if (before === undefined) delete process.env.A2A_CONFIG_HOME;
      else process.env.A2A_CONFIG_HOME = before;
    }
  });
});

describe('a2a mcp refuses what a client must not do', () => {
  it('takes no plan file outside the workspace and no configuration in a plan; a malformed request or a taken port crashes nothing', async () => {
    const dir = workspace();
    const outside = tempDir();
    writeFileSync(join(outside, 'plan.json'), JSON.stringify({ id: 'p', tasks: [{ id: 'a', prompt: 'x' }] }));
    const runs = new McpRuns({ workspace: dir, notify: () => {} });
    const served = await serveHttp(runs, { token: 'a-token-of-twenty-chars', notify: () => {} });
    try {
      const client = new Client({ name: 'editor', version: '1' });
      clients.push(client);
      await client.connect(new StreamableHTTPClientTransport(new URL(served.url), { requestInit: { headers: { authorization: 'Bearer a-token-of-twenty-chars' } } }));
      const call = (args: Record<string, unknown>) => client.callTool({ name: 'start_run', arguments: args }) as Promise<ToolResult>;
      const far = await call({ planFile: join(outside, 'plan.json') });
      expect(far.isError).toBe(true);
      expect(textOf(far)).toMatch(/planFile: ".*plan\.json" is outside the workspace/);
      const up = await call({ planFile: '../plan.json' });
      expect(textOf(up)).toMatch(/is outside the workspace/);
      const configured = await call({ plan: { id: 'p', tasks: [{ id: 'a', prompt: 'x' }], config: { permissions: { auto_approve: ['command_execution'] } } } });
      expect(textOf(configured)).toMatch(/plan: "config" and "script" are not taken over MCP/);
      expect(existsSync(join(dir, '.a2a'))).toBe(false);

      // a request line no URL parser takes, with the right token and Host: a 400, and the server goes on
      const port = Number(new URL(served.url).port);
      const reply = await new Promise<string>((resolve) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(`GET http://[ HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\nAuthorization: Bearer a-token-of-twenty-chars\r\n\r\n`));
        let got = '';
        socket.on('data', (d) => (got += d.toString()));
        socket.on('close', () => resolve(got));
        socket.on('end', () => resolve(got));
      });
      expect(reply).toMatch(/^HTTP\/1\.1 400/);
      expect(textOf((await client.callTool({ name: 'list_runs', arguments: {} })) as ToolResult)).toContain('no runs');
      await expect(serveHttp(runs, { token: 'a-token-of-twenty-chars', port, notify: () => {} })).rejects.toThrow(/--port \d+: another process listens there/);
    } finally {
      await served.close();
    }
  });
});
