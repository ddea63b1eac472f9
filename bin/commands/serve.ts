/**
 * `a2a serve --a2a`: the runtime as an Agent2Agent server (adapters/a2aProtocol/server.ts). It
 * listens on 127.0.0.1; a token (A2A_SERVE_TOKEN, at least 16 characters) makes every request
 * but the card's carry `Authorization: Bearer <token>`, and is required on any other address.
 */
import { secrets } from '../../actors/config/secrets.js';
import { errorText } from '../../machines/errorText.js';
import { exportSettings } from '../../adapters/assembly/tracing.js';

export interface ServeCommandOptions {
  a2a?: boolean;
  port?: number;
  host?: string;
  workspace?: string;
  agent?: string;
  script?: string;
  model?: string;
  config?: string;
  nats?: string;
  namespace?: string;
  url?: string;
  otel?: string;
  otelContent?: boolean;
  maxTasks?: number;
  retainDays?: number;
}

export interface ServeIo {
  stderr: NodeJS.WritableStream;
  /** Resolves when the server should stop (default: SIGINT or SIGTERM). */
  until?: Promise<void>;
  onListening?: (url: string) => void;
}

export async function serveCommand(options: ServeCommandOptions, io: ServeIo, version: string): Promise<number> {
  const notify = (line: string) => void io.stderr.write(`${line}\n`);
  if (!options.a2a) {
    notify('a2a serve: say which protocol to serve: --a2a (the Agent2Agent protocol). For MCP, use a2a mcp.');
    return 2;
  }
  const token = process.env.A2A_SERVE_TOKEN?.trim() || undefined;
  if (token && token.length < 16) {
    notify('a2a serve: A2A_SERVE_TOKEN is shorter than 16 characters: use a longer, random token');
    return 2;
  }
  if (token) secrets.add('A2A_SERVE_TOKEN', token);
  // named clients, each with its own token: a task is its creator's (no other client sees or changes it)
  const clients: Record<string, string> = {};
  for (const entry of (process.env.A2A_SERVE_TOKENS ?? '').split(',').map((e) => e.trim()).filter(Boolean)) {
    const at = entry.indexOf('=');
    const name = at > 0 ? entry.slice(0, at) : '';
    const value = at > 0 ? entry.slice(at + 1) : '';
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name) || clients[name] !== undefined || name === 'a2a-client') {
      notify(`a2a serve: A2A_SERVE_TOKENS: each entry is <client>=<token>, the client a name of letters, digits, "_", "." or "-" given once (not a2a-client, the name of A2A_SERVE_TOKEN's client); got an entry naming "${name.slice(0, 64)}"`);
      return 2;
    }
    if (value.length < 16) {
      notify(`a2a serve: A2A_SERVE_TOKENS: the token of client "${name}" is shorter than 16 characters: use a longer, random token`);
      return 2;
    }
    clients[name] = value;
    secrets.add(`A2A_SERVE_TOKENS:${name}`, value);
  }
  // tracing settings (--otel, OTEL_* variables) are checked now, not at each task's run
  try {
    exportSettings(options.otel ? { otel: options.otel } : {});
  } catch (error) {
    notify(`a2a serve: ${errorText(error)}`);
    return 2;
  }
  // the SDK and Express are loaded only for this command
  const { serveA2A } = await import('../../adapters/a2aProtocol/server.js');
  let server;
  try {
    server = await serveA2A({
      version,
      notify,
      ...(options.workspace ? { workspace: options.workspace } : {}),
      ...(options.host ? { host: options.host } : {}),
      ...(options.port !== undefined ? { port: options.port } : {}),
      ...(options.agent ? { agent: options.agent } : {}),
      ...(options.url ? { publicUrl: options.url } : {}),
      ...(token ? { token } : {}),
      ...(Object.keys(clients).length > 0 ? { clients } : {}),
      ...(options.maxTasks !== undefined ? { maxTasks: options.maxTasks } : {}),
      ...(options.retainDays !== undefined ? { retainMs: options.retainDays * 86_400_000 } : {}),
      run: {
        ...(options.script ? { script: options.script } : {}),
        ...(options.model ? { model: options.model } : {}),
        ...(options.config ? { config: options.config } : {}),
        ...(options.nats ? { nats: options.nats } : {}),
        ...(options.namespace ? { namespace: options.namespace } : {}),
        ...(options.otel ? { otel: options.otel } : {}),
        ...(options.otelContent ? { otelContent: true } : {}),
      },
    });
  } catch (e) {
    notify(`a2a serve: ${errorText(e)}`);
    return 2;
  }
  const skills = server.card.skills.map((s) => s.id).join(', ');
  notify(`a2a A2A server on ${server.url} (card: ${server.url}/.well-known/agent-card.json; JSON-RPC /a2a/jsonrpc, REST /a2a/rest; v1.0 and v0.3)`);
  const named = Object.keys(clients);
  const guard = named.length > 0 ? `; requests need a client's bearer token (${named.join(', ')}${token ? ', or A2A_SERVE_TOKEN' : ''}): each sees and changes only its own tasks` : token ? '; requests need Authorization: Bearer $A2A_SERVE_TOKEN' : '; no token (loopback only): set A2A_SERVE_TOKEN (or A2A_SERVE_TOKENS for named clients) to require one';
  notify(`skills: ${skills}${guard}`);
  if (server.recovered.resumed.length || server.recovered.failed.length) {
    notify(`unfinished tasks: ${server.recovered.resumed.length} resumed${server.recovered.failed.length ? `, ${server.recovered.failed.length} failed (${server.recovered.failed.join(', ')})` : ''}`);
  }
  io.onListening?.(server.url);
  await (io.until ??
    new Promise<void>((done) => {
      process.once('SIGINT', done);
      process.once('SIGTERM', done);
    }));
  await server.close();
  return 0;
}
