/**
 * `a2a mcp --http`: the MCP server over Streamable HTTP, on `node:http`. The SDK's entry
 * (`createMcpHandler`) is web-standard (Request in, Response out) and stateless: each request is
 * served by a fresh instance from the factory, over the runs they share. It serves the 2026-07-28
 * revision (no `initialize`, no session id) and, for clients of earlier revisions, the 2025
 * handshake the stateless way (their GET and DELETE get 405).
 *
 * In front of it, in this order: the Host and Origin checks of the studio (adapters/hostGuard.ts:
 * a web page, even one that rebinds its domain to 127.0.0.1, reaches nothing: 403), then the bearer
 * token (compared in constant time: 401), then the path (/mcp). Bound to 127.0.0.1 unless told
 * otherwise; the command refuses another address without a token chosen for it.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { createMcpHandler, type McpServer } from '@modelcontextprotocol/server';
import { A2AError } from '../../actors/errors.js';
import { redactText } from '../../actors/config/secrets.js';
import { errorText } from '../../machines/errorText.js';
import { hostNamesServer, ownOrigin } from '../hostGuard.js';
import type { McpServeOptions } from './serverRuns.js';

export interface McpHttpOptions extends McpServeOptions {
  /** 0 or absent: a free port. */
  port?: number;
  /** The interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Every request must carry `Authorization: Bearer <token>` (at least 16 characters). */
  token: string;
}

export interface McpHttpServer {
  server: Server;
  url: string;
  close(): Promise<void>;
}

/** A refusal before any MCP: JSON-RPC's error shape (no request id is known yet), so that clients show the message. */
function refuse(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message } }));
}

/** The Node request as the web Request the SDK's entry takes (the body streamed, cancelled when the client goes). */
function webRequest(req: IncomingMessage, url: URL, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (typeof value === 'string') headers.set(name, value);
    else if (Array.isArray(value)) for (const v of value) headers.append(name, v);
  }
  const body = req.method === 'GET' || req.method === 'HEAD' ? undefined : (Readable.toWeb(req) as ReadableStream<Uint8Array>);
  return new Request(url, { method: req.method ?? 'GET', headers, signal, ...(body ? { body, duplex: 'half' } : {}) } as RequestInit);
}

/** The SDK's Response onto the Node one, streamed (an SSE stream as it is written). */
async function send(response: Response, res: ServerResponse): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => (headers[name] = value));
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const reader = response.body.getReader();
  res.on('close', () => void reader.cancel().catch(() => undefined));
  for (;;) {
    const { done, value } = await reader.read();
    // the client went away: what is left is for nobody
    if (done || res.destroyed) break;
    res.write(value);
  }
  if (!res.destroyed) res.end();
}

/**
 * Serves the instances `factory` makes (one per request, of the request's era) over Streamable
 * HTTP on `host` (127.0.0.1) at /mcp, each request with `Authorization: Bearer <token>`; anything
 * else is refused before it reaches MCP.
 */
export async function serveMcpHttp(factory: (era: 'legacy' | 'modern') => McpServer, options: McpHttpOptions): Promise<McpHttpServer> {
  if (options.token.length < 16) throw new Error('the MCP token must be at least 16 characters');
  const host = options.host ?? '127.0.0.1';
  const expected = Buffer.from(`Bearer ${options.token}`);
  const authorized = (req: IncomingMessage) => {
    const given = Buffer.from(String(req.headers.authorization ?? ''));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const handler = createMcpHandler(({ era }) => factory(era), {
    // each refusal is answered to its client too; here it is told to the person who runs the server
    onerror: (error) => options.notify?.(`a2a mcp: ${redactText(errorText(error))}`),
  });
  let port = 0;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (!hostNamesServer(req.headers.host, host, port)) {
      refuse(res, 403, `this server does not answer for host "${String(req.headers.host ?? '').slice(0, 100)}": connect to ${host}:${port} (a web page that renamed itself to reach it is refused)`);
      return;
    }
    if (!ownOrigin(req.headers.origin, req.headers.host)) {
      refuse(res, 403, `requests from web pages are refused (Origin "${String(req.headers.origin).slice(0, 100)}"): an MCP client sends no Origin`);
      return;
    }
    if (!authorized(req)) {
      refuse(res, 401, 'unauthorized: send Authorization: Bearer <token> (a2a mcp printed where it is)', { 'www-authenticate': 'Bearer' });
      return;
    }
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    if (url.pathname !== '/mcp') {
      refuse(res, 404, 'the MCP endpoint is /mcp');
      return;
    }
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    await send(await handler.fetch(webRequest(req, url, gone.signal)), res);
  };

  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      // a malformed request is that request's problem, never the server's (its runs go on)
      if (!res.headersSent) refuse(res, 400, `bad request: ${redactText(errorText(error))}`);
      else res.destroy();
    });
  });
  http.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((ok, fail) => {
    http.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        error.code === 'EADDRINUSE' || error.code === 'EACCES' || error.code === 'EADDRNOTAVAIL'
          ? new A2AError('VALIDATION_ERROR', `--port ${options.port ?? 0}: ${error.code === 'EADDRINUSE' ? 'another process listens there' : error.code === 'EACCES' ? 'not allowed to listen there' : `${host} is not an address of this machine`}; choose another port, or leave --port out for a free one`, { where: '--port' })
          : error,
      ),
    );
    http.listen(options.port ?? 0, host, () => ok());
  });
  port = (http.address() as { port: number }).port;
  // after listening, an error of the server is told, not thrown into the process
  http.on('error', (error) => options.notify?.(`a2a: the MCP HTTP server: ${errorText(error)}`));
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    server: http,
    url: `http://${shown}:${port}/mcp`,
    // clients keep connections open (keep-alive, event streams): closing does not wait for them
    close: async () => {
      await handler.close().catch(() => undefined);
      await new Promise<void>((done) => {
        http.close(() => done());
        http.closeAllConnections();
      });
    },
  };
}
