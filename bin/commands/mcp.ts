/**
 * `a2a mcp [--http [--port N]]`: serves a2a over the Model Context Protocol, so that an editor's
 * agent can hand work to an a2a team (adapters/mcp/server.ts). On stdio (the default) stdout is
 * the protocol's: everything for a person goes to stderr. Over HTTP it listens on 127.0.0.1 and
 * takes requests with the token from A2A_MCP_TOKEN, or one it makes and writes to a file only
 * this user can read (never printed).
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { userConfigDir } from '../../adapters/config.js';
import { McpRuns, serveHttp, serveStdio } from '../../adapters/mcp/server.js';
import { secrets } from '../../actors/secrets.js';

export interface McpCommandOptions {
  http?: boolean;
  port?: number;
  workspace?: string;
}

export interface McpIo {
  stderr: NodeJS.WritableStream;
  /** Resolves when an HTTP server should stop (default: SIGINT or SIGTERM). */
  until?: Promise<void>;
  /** Told the URL once the HTTP server listens (tests). */
  onListening?: (url: string) => void;
}

export async function mcpCommand(options: McpCommandOptions, io: McpIo, version: string): Promise<number> {
  const notify = (line: string) => void io.stderr.write(`${line}\n`);
  const runs = new McpRuns({ ...(options.workspace ? { workspace: options.workspace } : {}), notify, version });
  if (!options.http) {
    const { closed } = await serveStdio(runs, { notify, version });
    await closed;
    await runs.stopAll();
    return 0;
  }
  const given = process.env.A2A_MCP_TOKEN?.trim();
  const token = given || randomBytes(24).toString('base64url');
  if (given && given.length < 16) {
    notify('a2a: A2A_MCP_TOKEN is shorter than 16 characters: use a longer, random token');
    return 2;
  }
  const served = await serveHttp(runs, { notify, version, token, ...(options.port !== undefined ? { port: options.port } : {}) });
  secrets.add('A2A_MCP_TOKEN', token);
  notify(`a2a MCP server on ${served.url} for ${runs.workspace} (Streamable HTTP; Ctrl-C stops it)`);
  if (given) {
    notify('requests need Authorization: Bearer $A2A_MCP_TOKEN');
  } else {
    // made here: kept in a file only this user can read, never printed (logs keep what is printed)
    const dir = userConfigDir();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const file = join(dir, 'mcp-token');
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    notify(`requests need Authorization: Bearer <the token in ${file}> (set A2A_MCP_TOKEN to choose it)`);
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
