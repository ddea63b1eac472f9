/**
 * `a2a mcp [--http [--port N] [--host H]]`: serves a2a over the Model Context Protocol, so that an
 * editor's agent can hand work to an a2a team (adapters/mcp/server.ts). On stdio (the default)
 * stdout is the protocol's: everything for a person goes to stderr. Over HTTP it listens on
 * 127.0.0.1 and takes requests with the token from A2A_MCP_TOKEN, or one it makes and writes to a
 * file only this user can read (never printed). Another address than loopback needs
 * A2A_MCP_TOKEN: a token chosen for it, not the one kept for local clients.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { userConfigDir } from '../../adapters/config.js';
import { McpRuns, serveHttp, serveStdio } from '../../adapters/mcp/server.js';
import { isLoopback } from '../../adapters/hostGuard.js';
import { secrets } from '../../actors/config/secrets.js';

export interface McpCommandOptions {
  http?: boolean;
  port?: number;
  /** The interface to listen on over HTTP (default 127.0.0.1). */
  host?: string;
  workspace?: string;
}

export interface McpIo {
  stderr: NodeJS.WritableStream;
  /** Resolves when an HTTP server should stop (default: SIGINT or SIGTERM). */
  until?: Promise<void>;
  /** Told the URL once the HTTP server listens (tests). */
  onListening?: (url: string) => void;
}

/**
 * The token in `file` when only this user can read it (so a client configured once keeps
 * working, and two servers share it); else a new one, written to a new file with mode 600 and
 * moved into place, so that no other user can read it at any moment.
 */
function storedToken(file: string): string {
  try {
    const found = statSync(file);
    const text = readFileSync(file, 'utf8').trim();
    if ((found.mode & 0o077) === 0 && found.uid === process.getuid?.() && text.length >= 16) return text;
  } catch {
    // none yet
  }
  const token = randomBytes(24).toString('base64url');
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(tmp, file);
  return token;
}

export async function mcpCommand(options: McpCommandOptions, io: McpIo, version: string): Promise<number> {
  const notify = (line: string) => void io.stderr.write(`${line}\n`);
  const runs = new McpRuns({ ...(options.workspace ? { workspace: options.workspace } : {}), notify, version });
  if (!options.http) {
    const { closed } = await serveStdio(runs, { notify, version });
    // an editor stops its servers with SIGTERM: the runs are cancelled and recorded as such
    const signalled = new Promise<void>((done) => {
      process.once('SIGTERM', done);
      process.once('SIGINT', done);
    });
    await Promise.race([closed, signalled, ...(io.until ? [io.until] : [])]);
    await runs.stopAll();
    return 0;
  }
  const given = process.env.A2A_MCP_TOKEN?.trim();
  if (given && given.length < 16) {
    notify('a2a: A2A_MCP_TOKEN is shorter than 16 characters: use a longer, random token');
    return 2;
  }
  const host = options.host ?? '127.0.0.1';
  if (!isLoopback(host) && !given) {
    notify(`a2a: --host ${host} is reachable from other machines: set A2A_MCP_TOKEN to a long random token for it (without one, a2a mcp --http listens on loopback only)`);
    return 2;
  }
  const tokenFile = join(userConfigDir(), 'mcp-token');
  const token = given || storedToken(tokenFile);
  const served = await serveHttp(runs, { notify, version, token, host, ...(options.port !== undefined ? { port: options.port } : {}) });
  secrets.add('A2A_MCP_TOKEN', token);
  notify(`a2a MCP server on ${served.url} for ${runs.workspace} (Streamable HTTP: MCP 2026-07-28, and earlier revisions statelessly; Ctrl-C stops it)`);
  if (given) {
    notify('requests need Authorization: Bearer $A2A_MCP_TOKEN');
  } else {
    notify(`requests need Authorization: Bearer <the token in ${tokenFile} (mode 600)> (set A2A_MCP_TOKEN to choose it)`);
  }
  io.onListening?.(served.url);
  await (io.until ??
    new Promise<void>((done) => {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    }));
  await runs.stopAll();
  await served.close();
  return 0;
}
