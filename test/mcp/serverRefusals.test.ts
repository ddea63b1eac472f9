/**
 * What `a2a mcp` refuses, over HTTP and stdio: a request without the token or with a wrong one
 * (401), one for another Host (a page that renamed itself to 127.0.0.1) or from a web page's
 * Origin (403), malformed JSON-RPC, an unknown tool or method, bad arguments. Each gets a clear
 * error, changes nothing (no run starts) and the server goes on serving. The SDKs' clients are
 * refused as such; what no SDK client sends (malformed bodies, a stranger's Host) is sent as it is.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Http } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mcpCommand } from '../../bin/commands/mcp.js';
import { McpRuns, serveHttp } from '../../adapters/mcp/server.js';
import { tempDir } from '../helpers.js';
import { closeAll, connect, httpServer, stdioCommand, textOf, TOKEN, workspace, type ToolResult } from './fixtures/serverKit.js';
import { a2aBundle } from '../nats/cluster.js';

// the CLI's bundle (stdio servers are the CLI started as a process) is built before the tests, not in the first
beforeAll(() => void a2aBundle());
afterEach(closeAll);

/** A fetch that sends another Host than the URL's (as a page does whose domain was rebound to 127.0.0.1). */
const fetchAs =
  (host: string) =>
  (url: string | URL, init?: RequestInit): Promise<Response> =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const headers: Record<string, string> = {};
      new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
      const req = request({ host: target.hostname, port: target.port, path: target.pathname, method: init?.method ?? 'GET', headers: { ...headers, host } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 500, headers: { 'content-type': String(res.headers['content-type'] ?? 'application/json') } })));
      });
      req.on('error', reject);
      req.end(typeof init?.body === 'string' ? init.body : undefined);
    });

const modern = () => new Client({ name: 'editor', version: '2' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
const startRun = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'start_run', arguments: { task: 'write the notes file', agent: '@coder' } } });
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${TOKEN}`, ...headers }, body });

describe('a2a mcp over HTTP refuses', () => {
  it('should refuse a client without the token, with a wrong one, for another Host or from a web page, and go on serving', async () => {
    const dir = workspace();
    const served = await httpServer(dir);
    const url = new URL(served.url);
    const refused = async (transport: StreamableHTTPClientTransport) => {
      const client = modern();
      const error = await client.connect(transport).then(() => null, (e: unknown) => e as Error & { data?: { status?: number; text?: string } });
      await client.close().catch(() => undefined);
      return error;
    };

    const none = await refused(new StreamableHTTPClientTransport(url));
    expect(none?.message).toMatch(/the server requires authorization \(HTTP 401\)/);
    const wrong = await refused(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: 'Bearer wrong-token-of-some-length' } } }));
    expect(wrong?.message).toMatch(/the server requires authorization \(HTTP 401\)/);
    const host = await refused(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } }, fetch: fetchAs('rebound.example:80') }));
    expect(host?.message).toMatch(/HTTP 403/);
    const origin = await refused(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${TOKEN}`, origin: 'http://evil.example' } } }));
    expect(origin?.message).toMatch(/HTTP 403/);

    // a v1 client too (its initialize)
    const v1 = new V1Client({ name: 'editor-v1', version: '1' });
    await expect(v1.connect(new V1Http(url))).rejects.toThrow(/unauthorized: send Authorization: Bearer <token>/);

    // the same start_run, as it is, with each fault: a clear refusal, no run
    const body = async (r: Response) => ({ status: r.status, message: ((await r.json()) as { error: { message: string } }).error.message });
    expect(await body(await post(served.url, startRun, { authorization: '' }))).toEqual({ status: 401, message: expect.stringMatching(/^unauthorized: send Authorization: Bearer <token>/) });
    expect(await body(await post(served.url, startRun, { authorization: `Bearer ${TOKEN.slice(0, -1)}x` }))).toMatchObject({ status: 401 });
    expect(await body(await post(served.url, startRun, { origin: 'http://evil.example' }))).toEqual({ status: 403, message: expect.stringMatching(/^requests from web pages are refused \(Origin "http:\/\/evil\.example"\)/) });
    expect(await body(await fetchAs('rebound.example')(served.url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: startRun }))).toEqual({
      status: 403,
      message: expect.stringMatching(/^this server does not answer for host "rebound\.example": connect to 127\.0\.0\.1:\d+/),
    });
    expect((await post(`${url.origin}/other`, startRun)).status).toBe(404);
    expect(existsSync(join(dir, '.a2a'))).toBe(false);

    // and it goes on serving a client that does it right
    const client = modern();
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
    expect(textOf((await client.callTool({ name: 'list_runs', arguments: {} })) as ToolResult)).toBe(`no runs in ${dir}`);
    await client.close();
  });

  it('should answer malformed JSON-RPC, an unknown tool or method and bad arguments with clear errors, and go on serving', async () => {
    const dir = workspace();
    const served = await httpServer(dir);
    const answer = async (r: Response) => ({ status: r.status, error: ((await r.json()) as { error: { code: number; message: string } }).error });
    expect(await answer(await post(served.url, '{"jsonrpc":"2.0","id":1,'))).toEqual({ status: 400, error: { code: -32700, message: 'Parse error: Invalid JSON' } });
    expect(await answer(await post(served.url, '{"hello":"there"}'))).toEqual({ status: 400, error: { code: -32600, message: 'Bad Request: the request body is not a valid JSON-RPC message' } });
    expect(await answer(await post(served.url, '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"start_run"}'))).toMatchObject({ status: 400, error: { code: -32600 } });
    expect((await post(served.url, startRun, { 'content-type': 'text/plain' })).status).toBe(415);

    for (const generation of ['v2-modern', 'v1'] as const) {
      const client = await connect(generation, { http: served.url });
      // an unknown tool: a JSON-RPC error naming it
      await expect(client.call('launch_missiles', {})).rejects.toThrow(/Tool launch_missiles not found/);
      // bad arguments: the tool's error result, naming the field and what it takes
      const bad = await client.call('start_run', { task: 42 });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/^Input validation error: Invalid arguments for tool start_run: task: Invalid input: expected string, received number/);
      const unknownAgent = await client.call('start_run', { task: 'write the notes', agent: '@wizard' });
      expect(textOf(unknownAgent)).toMatch(/tasks\[0\]\.agent: Unknown agent type "@wizard"\. Available types: .*@coder/);
      const noRun = await client.call('run_status', { runId: '../../etc' });
      expect(textOf(noRun)).toMatch(/runId: a run id/);
    }
    // an unknown method (the v2 client sends what it is given)
    const client = modern();
    await client.connect(new StreamableHTTPClientTransport(new URL(served.url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
    await expect(client.request({ method: 'a2a/launch', params: {} }, z.object({}))).rejects.toThrow(/Method not found/);
    // nothing started, and the server answers
    expect(existsSync(join(dir, '.a2a'))).toBe(false);
    expect(textOf((await client.callTool({ name: 'list_runs', arguments: {} })) as ToolResult)).toBe(`no runs in ${dir}`);
    await client.close();
  });

  it('should listen on loopback, and on another address only with a token chosen for it', async () => {
    const dir = workspace();
    const home = tempDir();
    const before = { home: process.env.A2A_CONFIG_HOME, token: process.env.A2A_MCP_TOKEN };
    process.env.A2A_CONFIG_HOME = home;
    delete process.env.A2A_MCP_TOKEN;
    let printed = '';
    const stderr = { write: (s: string) => ((printed += s), true) } as never;
    try {
      expect(await mcpCommand({ http: true, host: '0.0.0.0', workspace: dir }, { stderr }, 'test')).toBe(2);
      expect(printed).toContain('a2a: --host 0.0.0.0 is reachable from other machines: set A2A_MCP_TOKEN to a long random token for it');
      expect(existsSync(join(home, 'mcp-token'))).toBe(false);

      process.env.A2A_MCP_TOKEN = TOKEN;
      let stop!: () => void;
      const until = new Promise<void>((r) => (stop = r));
      let url = '';
      const listening = new Promise<void>((r) => void mcpCommand({ http: true, host: '0.0.0.0', workspace: dir }, { stderr, until, onListening: (u) => ((url = u), r()) }, 'test'));
      await listening;
      try {
        // every interface: the token is what stands between the network and the runs
        expect((await post(url, startRun, { authorization: '' })).status).toBe(401);
        const client = modern();
        await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } }));
        expect(textOf((await client.callTool({ name: 'list_runs', arguments: {} })) as ToolResult)).toBe(`no runs in ${dir}`);
        await client.close();
      } finally {
        stop();
      }
      expect(printed).not.toContain(TOKEN);
      // a short token is refused before anything listens
      await expect(serveHttp(new McpRuns({ workspace: dir }), { token: 'short' })).rejects.toThrow('the MCP token must be at least 16 characters');
    } finally {
      for (const [name, value] of [['A2A_CONFIG_HOME', before.home], ['A2A_MCP_TOKEN', before.token]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });
});

describe('a2a mcp over stdio refuses', () => {
  it('should answer a line that is not JSON or not JSON-RPC, or an unknown method, with errors, and go on serving', async () => {
    const dir = workspace();
    const { command, args, env } = stdioCommand(dir);
    const child = spawn(command, [...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    try {
      const replies: Array<Record<string, unknown>> = [];
      let arrived = () => {};
      createInterface({ input: child.stdout! }).on('line', (line) => {
        replies.push(JSON.parse(line) as Record<string, unknown>);
        arrived();
      });
      const reply = (n: number) => new Promise<Record<string, unknown>>((resolve) => {
        const check = () => (replies.length > n ? resolve(replies[n]!) : (arrived = check));
        check();
      });
      const send = (line: string) => child.stdin!.write(`${line}\n`);
      send('{"jsonrpc":"2.0","id":1,');
      expect(await reply(0)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32700, message: expect.stringMatching(/^Parse error: the line is not JSON/) } });
      send('{"hello":"there"}');
      expect(await reply(1)).toEqual({ jsonrpc: '2.0', id: null, error: { code: -32600, message: expect.stringMatching(/^Invalid Request: not a JSON-RPC 2\.0 message: jsonrpc: Invalid input: expected "2\.0"/) } });
      send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":"start_run"}');
      expect(await reply(2)).toEqual({ jsonrpc: '2.0', id: 3, error: { code: -32600, message: 'Invalid Request: not a JSON-RPC 2.0 message: params: Invalid input: expected object, received string' } });
      // and the next request is served
      send(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }));
      expect(await reply(3)).toMatchObject({ id: 7, result: { serverInfo: { name: 'a2a' } } });
      send('{"jsonrpc":"2.0","id":8,"method":"a2a/launch"}');
      expect(await reply(4)).toEqual({ jsonrpc: '2.0', id: 8, error: { code: -32601, message: 'Method not found' } });
      expect(child.exitCode).toBeNull();
    } finally {
      child.kill();
    }
    expect(existsSync(join(dir, '.a2a'))).toBe(false);
  });

  it('should answer the SDKs\' clients an unknown tool and bad arguments with errors, and start nothing', async () => {
    const dir = workspace();
    for (const generation of ['v2-modern', 'v1'] as const) {
      const client = await connect(generation, { stdio: dir });
      await expect(client.call('launch_missiles', {})).rejects.toThrow(/Tool launch_missiles not found/);
      const bad = await client.call('answer', { id: 5 });
      expect(textOf(bad)).toMatch(/^Input validation error: Invalid arguments for tool answer: id: Invalid input: expected string, received number/);
      expect(textOf(await client.call('list_runs'))).toBe(`no runs in ${dir}`);
    }
    expect(existsSync(join(dir, '.a2a'))).toBe(false);
  });
});
