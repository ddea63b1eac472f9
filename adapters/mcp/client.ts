/**
 * MCP servers as tools (the official `@modelcontextprotocol/sdk`, loaded only when an agent lists
 * a server). Each session of such an agent gets its own connection to each of its servers, opened
 * when it first calls its model and closed when the session ends (or the run, or the host). A
 * connection lists its tools once; they reach the model as `mcp__<server>__<tool>` with their
 * JSON schemas. A call asks its permission (the tool's tier, else the server's, else the
 * `mcp_tool` action of the matrix), is cancelled through the session's AbortSignal, and is
 * bounded by the server's `timeoutMs`. A server that does not start, stops answering or dies gives
 * the model a tool error (or a note, when its tools could not be listed) and the run an
 * `mcp.failed` event: nothing waits on it for ever.
 */
import { resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { EventSink, ToolOutcome } from '../../machines/ports.js';
import type { McpServerConfig, SecretRef, SessionSpec, ToolCall, ToolSpec } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import { correlationOf } from '../../actors/observation/events.js';
import type { AgentDefinition } from '../../actors/config/registry.js';
import { redactText, secrets } from '../../actors/config/secrets.js';
import { EXTERNAL_PREFIX, type ExternalTools, type ToolContext } from '../../actors/tools/index.js';
import { errorText } from '../../machines/errorText.js';
import { fromFile } from '../model/secrets.js';

/** Tool names the providers accept: letters, digits, "_" and "-", at most 64. */
const MAX_NAME = 64;
/** What of a tool's result the model gets at most (the rest is cut, and said). */
const MAX_RESULT_CHARS = 100_000;
/** Restarts of a server that died, per session, before its tools stay unavailable. */
const MAX_RESTARTS = 2;
/** The SDK's McpError code for a request that got no answer in time (ErrorCode.RequestTimeout). */
const REQUEST_TIMEOUT = -32001;
/** The last lines a server wrote to stderr, for the message when it fails. */
const STDERR_KEEP = 2_000;

export interface McpToolsOptions {
  events: EventSink;
  /** Where `{ secret: "name" }` values are read (secrets.json). */
  secretsFile?: string;
  env?: NodeJS.ProcessEnv;
  /** Where a session without a worktree starts a command's server (the workspace). */
  workspace: string;
}

interface ListedTool {
  /** The server's own name of the tool. */
  tool: string;
  spec: ToolSpec;
  /** Annotated `readOnlyHint` or `idempotentHint`: a call in doubt after a restore may run again. */
  idempotent: boolean;
}

/** Where a call's idempotency key travels to the server: the request's `_meta` (MCP's extension point, a name of a2a's own). */
export const IDEMPOTENCY_META = 'io.a2a/idempotency-key';

/** One session's connection to one server. */
class Connection {
  client: Client | null = null;
  /** The exposed name → the server's tool. */
  tools = new Map<string, ListedTool>();
  status: 'connecting' | 'ready' | 'failed' | 'closed' = 'connecting';
  failure: string | null = null;
  restarts = 0;
  stderr = '';
  ready: Promise<void> | null = null;
  /** Closing on purpose: the transport's close is not a death. */
  closing = false;
  /** Its start was abandoned (the step aborted): started again on the next call. */
  aborted = false;
  told = false;

  constructor(
    readonly server: string,
    readonly config: McpServerConfig,
  ) {}
}

interface SessionConnections {
  connections: Map<string, Connection>;
  unsubscribe: (() => void) | null;
}

type Sdk = {
  Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client;
  StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport;
  getDefaultEnvironment: typeof import('@modelcontextprotocol/sdk/client/stdio.js').getDefaultEnvironment;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport;
};

let sdk: Promise<Sdk> | null = null;
function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]).then(([client, stdio, http]) => ({
    Client: client.Client,
    StdioClientTransport: stdio.StdioClientTransport,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
  }));
  return sdk;
}

/** `mcp__<server>__<tool>`, made of the characters providers accept, at most 64 long. */
export function exposedName(server: string, tool: string, hashed = false): string {
  const clean = tool.replace(/[^A-Za-z0-9_-]/g, '_');
  const name = `${EXTERNAL_PREFIX}${server}__${clean}`;
  if (name.length <= MAX_NAME && !hashed) return name;
  // long names keep their start and a hash of the whole, so that two never collide
  let hash = 0;
  for (const c of tool) hash = (hash * 31 + c.charCodeAt(0)) | 0;
  const tail = `_${(hash >>> 0).toString(36)}`;
  return `${name.slice(0, MAX_NAME - tail.length)}${tail}`;
}

export class McpTools implements ExternalTools {
  readonly #sessions = new Map<string, SessionConnections>();
  readonly #options: McpToolsOptions;

  constructor(options: McpToolsOptions) {
    this.#options = options;
  }

  handles(name: string): boolean {
    return name.startsWith(EXTERNAL_PREFIX);
  }

  /** Sessions with open connections (tests, status). */
  get sessions(): number {
    return this.#sessions.size;
  }

  async toolsFor(
    spec: SessionSpec,
    definition: AgentDefinition,
    signal: AbortSignal,
    session?: { subscribe(observer: { complete?(): void; error?(e: unknown): void }): { unsubscribe(): void } },
  ): Promise<{ tools: ToolSpec[]; notes: string[] }> {
    const servers = definition.mcpServers ?? {};
    const held = this.#session(spec, session);
    const tools: ToolSpec[] = [];
    const notes: string[] = [];
    // another agent now (a reassignment): the connections it does not list are closed
    for (const [name, connection] of held.connections) {
      if (servers[name] !== connection.config) {
        held.connections.delete(name);
        void close(connection);
      }
    }
    const declared = definition.mcpDeclaredIn;
    if (declared && !declared.trusted) {
      for (const name of Object.keys(servers)) this.#refuse(spec, held, name, servers[name]!, declared.where);
    } else {
      await Promise.all(Object.keys(servers).map((name) => this.#ready(spec, held, name, servers[name]!, signal)));
    }
    for (const name of Object.keys(servers)) {
      const connection = held.connections.get(name)!;
      if (connection.status === 'ready') {
        for (const listed of connection.tools.values()) tools.push(listed.spec);
      } else if (!connection.told) {
        connection.told = true;
        notes.push(`[a2a] The MCP server "${name}" is not available (${connection.failure ?? 'closed'}): its tools (mcp__${name}__…) are missing. Go on without them, or report the problem.`);
      }
    }
    return { tools, notes };
  }

  idempotent(name: string, spec: SessionSpec): boolean {
    for (const connection of this.#sessions.get(this.#key(spec))?.connections.values() ?? []) {
      const listed = connection.tools.get(name);
      if (listed) return listed.idempotent;
    }
    // not listed (its server is down or it does not exist): it only gets an error
    return true;
  }

  async run(call: ToolCall, definition: AgentDefinition, ctx: ToolContext): Promise<ToolOutcome> {
    const started = Date.now();
    const found = this.#find(call.name, definition, ctx.spec);
    if ('error' in found) return { isError: true, content: found.error };
    const { connection, listed, server } = found;
    const tier = server.tools?.[listed.tool] ?? server.permission;
    const detail = clip(`${connection.server}.${listed.tool} ${JSON.stringify(call.arguments ?? {})}`, 500);
    const base = { server: connection.server, tool: listed.tool, callId: call.id };
    // (an auto_deny tool is never listed, so #find never finds one)
    if (tier !== 'auto_approve') {
      // ask_user set on the server or tool: only a person decides; unset: the matrix's mcp_tool
      const answer = await ctx.permit({ action: 'mcp_tool', detail, ...(tier === 'ask_user' ? { needsPerson: true } : {}) });
      if (!answer.approved) {
        return { isError: true, content: `TOOL_NOT_ALLOWED: Permission mcp_tool for ${call.name} was denied by ${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}. Nothing was run.` };
      }
    }
    if (connection.status !== 'ready' || !connection.client) {
      return { isError: true, content: `MCP server "${connection.server}" is not available (${connection.failure ?? 'closed'}); ${call.name} was not run.` };
    }
    try {
      const meta = ctx.idempotencyKey ? { _meta: { [IDEMPOTENCY_META]: ctx.idempotencyKey } } : {};
      const result = await connection.client.callTool({ name: listed.tool, arguments: (call.arguments ?? {}) as Record<string, unknown>, ...meta }, undefined, {
        signal: ctx.signal,
        timeout: server.timeoutMs,
      });
      const outcome = outcomeOf(result as CallResult);
      this.#emit(ctx.spec, 'mcp.called', { ...base, isError: outcome.isError, ms: Date.now() - started });
      return outcome;
    } catch (error) {
      const ms = Date.now() - started;
      if (ctx.signal.aborted) {
        this.#emit(ctx.spec, 'mcp.called', { ...base, isError: true, cancelled: true, ms });
        return { isError: true, content: `${call.name} was cancelled: the session ended while it ran` };
      }
      const text = errorText(error);
      // the transport's close has marked the connection failed (and told mcp.failed, with the
      // server's stderr) before the pending call is rejected
      const died = connection.status !== 'ready';
      const timedOut = !died && (error as { code?: unknown }).code === REQUEST_TIMEOUT;
      if (timedOut) this.#emit(ctx.spec, 'mcp.failed', { server: base.server, tool: base.tool, phase: 'timeout', error: `no answer within ${server.timeoutMs} ms` });
      this.#emit(ctx.spec, 'mcp.called', { ...base, isError: true, ms, error: clip(text, 300) });
      const why = died
        ? `the MCP server "${connection.server}" stopped during the call (${clip(text, 300)})${connection.restarts < MAX_RESTARTS ? '; it is started again for your next call' : ''}`
        : timedOut
          ? `the MCP server "${connection.server}" did not answer within ${server.timeoutMs} ms`
          : clip(text, 1_000);
      return { isError: true, content: `${call.name} failed: ${why}` };
    }
  }

  async closeAll(): Promise<void> {
    const keys = [...this.#sessions.keys()];
    await Promise.all(keys.map((key) => this.#release(key)));
  }

  #key(spec: SessionSpec): string {
    return `${spec.correlation.runId}/${spec.id}`;
  }

  #session(spec: SessionSpec, session?: { subscribe(observer: { complete?(): void; error?(e: unknown): void }): { unsubscribe(): void } }): SessionConnections {
    const key = this.#key(spec);
    let held = this.#sessions.get(key);
    if (!held) {
      held = { connections: new Map(), unsubscribe: null };
      this.#sessions.set(key, held);
      if (session) {
        // the session's end (done, cancelled, stopped by its parent or host) closes its connections
        const subscription = session.subscribe({ complete: () => void this.#release(key), error: () => void this.#release(key) });
        held.unsubscribe = () => subscription.unsubscribe();
      }
    }
    return held;
  }

  async #release(key: string): Promise<void> {
    const held = this.#sessions.get(key);
    if (!held) return;
    this.#sessions.delete(key);
    held.unsubscribe?.();
    await Promise.all([...held.connections.values()].map((c) => close(c)));
  }

  #find(name: string, definition: AgentDefinition, spec: SessionSpec): { connection: Connection; listed: ListedTool; server: McpServerConfig } | { error: string } {
    const held = this.#sessions.get(this.#key(spec));
    const servers = definition.mcpServers ?? {};
    for (const [serverName, connection] of held?.connections ?? []) {
      const listed = connection.tools.get(name);
      if (listed && servers[serverName]) return { connection, listed, server: servers[serverName] };
    }
    const named = Object.keys(servers).find((s) => name.startsWith(`${EXTERNAL_PREFIX}${s}__`));
    if (!named) {
      return { error: `TOOL_NOT_ALLOWED: Unknown tool "${name}": @${definition.capability.id} has ${Object.keys(servers).length ? `the MCP servers ${Object.keys(servers).join(', ')}` : 'no MCP servers'}.` };
    }
    const connection = held?.connections.get(named);
    if (!connection || connection.status !== 'ready') return { error: `MCP server "${named}" is not available (${connection?.failure ?? 'not connected'}); ${name} was not run.` };
    return { error: `TOOL_NOT_ALLOWED: Unknown tool "${name}": the MCP server "${named}" has ${[...connection.tools.keys()].join(', ') || 'no tools'}.` };
  }

  /**
   * A server declared where the user does not own the file (a repository's agent file or config,
   * a plan's config): not started, since it would run a command outside the sandbox, or send the
   * environment's secrets to a URL the repository chose. Said once to the model and the run.
   */
  #refuse(spec: SessionSpec, held: SessionConnections, name: string, config: McpServerConfig, where: string): void {
    if (held.connections.has(name)) return;
    const connection = new Connection(name, config);
    connection.status = 'failed';
    connection.restarts = MAX_RESTARTS;
    connection.failure = `declared in ${where}, which a2a does not let start MCP servers: a server runs a command outside the sandbox or gets secrets, so it must come from your own config (~/.config/a2a: agents/*.agent.md or config.json) or from code (defineAgent)`;
    held.connections.set(name, connection);
    this.#emit(spec, 'mcp.failed', { server: name, phase: 'refused', error: connection.failure });
  }

  /** Connects (or reconnects after a death) and lists the tools; never rejects. */
  async #ready(spec: SessionSpec, held: SessionConnections, name: string, config: McpServerConfig, signal: AbortSignal): Promise<void> {
    let connection = held.connections.get(name);
    if (connection?.status === 'ready' || (connection?.status === 'failed' && connection.restarts >= MAX_RESTARTS) || connection?.status === 'closed') return;
    if (connection?.ready) return connection.ready;
    if (connection?.aborted) connection.aborted = false;
    if (connection?.status === 'failed') {
      connection.restarts++;
      connection.status = 'connecting';
      connection.told = false;
    }
    if (!connection) {
      connection = new Connection(name, config);
      held.connections.set(name, connection);
    }
    const c = connection;
    c.ready = this.#connect(spec, c, signal).finally(() => (c.ready = null));
    return c.ready;
  }

  async #connect(spec: SessionSpec, connection: Connection, signal: AbortSignal): Promise<void> {
    const { config, server } = connection;
    const started = Date.now();
    try {
      const { Client, StdioClientTransport, getDefaultEnvironment, StreamableHTTPClientTransport } = await loadSdk();
      const client = new Client({ name: 'a2a', version: '1' });
      let transport;
      if (config.command !== undefined) {
        const cwd = resolve(spec.correlation.worktreePath || this.#options.workspace, config.cwd ?? '.');
        // the server gets PATH, HOME and the like, and what its config names: not this process's keys
        const env = { ...getDefaultEnvironment(), ...this.#values(config.env ?? {}, `mcpServers.${server}.env`) };
        const stdio = new StdioClientTransport({ command: config.command, args: config.args ?? [], env, cwd, stderr: 'pipe' });
        stdio.stderr?.on('data', (chunk: Buffer) => {
          connection.stderr = (connection.stderr + chunk.toString('utf8')).slice(-STDERR_KEEP);
        });
        transport = stdio;
      } else {
        const headers = this.#values(config.headers ?? {}, `mcpServers.${server}.headers`);
        transport = new StreamableHTTPClientTransport(new URL(config.url!), { requestInit: { headers } });
      }
      transport.onclose = () => {
        if (connection.closing || connection.status !== 'ready') return;
        this.#died(spec, connection, 'the server closed the connection');
      };
      await client.connect(transport, { timeout: config.startupTimeoutMs, signal });
      connection.client = client;
      const tools: ListedTool[] = [];
      for (let cursor: string | undefined, pages = 0; pages < 20; pages++) {
        const page = await client.listTools(cursor ? { cursor } : {}, { timeout: config.startupTimeoutMs, signal });
        for (const tool of page.tools) {
          if ((config.tools?.[tool.name] ?? config.permission) === 'auto_deny') continue; // never offered
          const { $schema: _ignored, ...parameters } = (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>;
          // two names that read the same once cleaned (`a.b`, `a_b`) each keep a name of their own
          let exposed = exposedName(server, tool.name);
          if (tools.some((t) => t.spec.name === exposed)) exposed = exposedName(server, tool.name, true);
          const hints = tool.annotations as { readOnlyHint?: boolean; idempotentHint?: boolean } | undefined;
          tools.push({
            tool: tool.name,
            spec: { name: exposed, description: clip(tool.description ?? `${tool.name} (MCP server ${server})`, 2_000), parameters },
            idempotent: hints?.readOnlyHint === true || hints?.idempotentHint === true,
          });
        }
        cursor = page.nextCursor;
        if (!cursor) break;
      }
      connection.tools = new Map(tools.map((t) => [t.spec.name, t]));
      connection.status = 'ready';
      connection.failure = null;
      this.#emit(spec, 'mcp.connected', { server, tools: tools.length, ms: Date.now() - started, ...(connection.restarts ? { restart: connection.restarts } : {}) });
    } catch (error) {
      if (signal.aborted) {
        // the step was replaced or the session ended while the server started: not its failure,
        // so the next model call starts it afresh (and uses up none of its restarts)
        connection.status = 'failed';
        await close(connection);
        connection.status = 'connecting';
        connection.closing = false;
        connection.aborted = true;
        return;
      }
      const reason = describeStartFailure(error, connection, config);
      connection.status = 'failed';
      connection.failure = reason;
      // a server that did not start is not tried again in this session (each try would cost its startup timeout)
      connection.restarts = MAX_RESTARTS;
      await close(connection);
      connection.closing = false;
      this.#emit(spec, 'mcp.failed', { server, phase: 'start', error: reason });
    }
  }

  #died(spec: SessionSpec, connection: Connection, why: string): void {
    if (connection.status === 'failed' || connection.status === 'closed') return;
    connection.status = 'failed';
    const tail = connection.stderr.trim().split('\n').slice(-3).join(' | ');
    connection.failure = clip(`${why}${tail ? ` (stderr: ${tail})` : ''}`, 600);
    connection.told = connection.restarts < MAX_RESTARTS; // restarted on the next call: nothing to tell yet
    void close(connection).then(() => (connection.closing = false));
    this.#emit(spec, 'mcp.failed', { server: connection.server, phase: 'died', error: connection.failure });
  }

  /** The values of env or headers: plain strings, or read from the environment or the secrets file (and then redacted everywhere). */
  #values(entries: Record<string, string | SecretRef>, where: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [key, value] of Object.entries(entries)) {
      if (typeof value === 'string') {
        out[key] = value;
        continue;
      }
      const found = 'env' in value ? (this.#options.env ?? process.env)[value.env]?.trim() : this.#options.secretsFile ? fromFile(value.secret, this.#options.secretsFile) : undefined;
      if (!found) {
        const source = 'env' in value ? `the environment variable ${value.env}` : `"${value.secret}" in ${this.#options.secretsFile ?? 'the secrets file (none is configured)'}`;
        throw new A2AError('CONFIGURATION_INVALID', `${where}.${key}: ${source} is not set`, { where: `${where}.${key}` });
      }
      secrets.add('env' in value ? value.env : `mcp-${value.secret}`, found);
      out[key] = `${value.prefix ?? ''}${found}`;
    }
    return out;
  }

  #emit(spec: SessionSpec, type: 'mcp.connected' | 'mcp.failed' | 'mcp.called', data: Record<string, unknown>): void {
    if (this.#options.events.listening === false) return;
    this.#options.events.emit({ type, ...correlationOf(spec), data: type === 'mcp.failed' ? { ...data, error: redactText(String(data.error ?? '')) } : data });
  }
}

async function close(connection: Connection): Promise<void> {
  const client = connection.client;
  connection.client = null;
  if (connection.status !== 'failed') connection.status = 'closed';
  if (!client) return;
  connection.closing = true;
  await client.close().catch(() => undefined);
}

function describeStartFailure(error: unknown, connection: Connection, config: McpServerConfig): string {
  const text = errorText(error);
  const tail = connection.stderr.trim().split('\n').slice(-3).join(' | ');
  const what = config.command !== undefined ? `"${[config.command, ...(config.args ?? [])].join(' ')}"` : config.url!;
  const why = (error as { code?: unknown }).code === REQUEST_TIMEOUT ? `no answer within ${config.startupTimeoutMs} ms` : text;
  return clip(`${what} could not be started or reached: ${why}${tail ? ` (stderr: ${tail})` : ''}`, 600);
}

interface CallResult {
  content?: Array<{ type: string; text?: string; mimeType?: string; resource?: { uri?: string; text?: string } }>;
  structuredContent?: unknown;
  isError?: boolean;
}

function outcomeOf(result: CallResult): ToolOutcome {
  const parts: string[] = [];
  for (const item of result.content ?? []) {
    if (item.type === 'text') parts.push(item.text ?? '');
    else if (item.type === 'resource') parts.push(item.resource?.text ?? `[resource ${item.resource?.uri ?? ''}]`);
    else parts.push(`[${item.type}${item.mimeType ? ` ${item.mimeType}` : ''} content, not shown]`);
  }
  if (parts.length === 0 && result.structuredContent !== undefined) parts.push(JSON.stringify(result.structuredContent));
  const content = parts.join('\n');
  return { isError: result.isError === true, content: content.length > MAX_RESULT_CHARS ? `${content.slice(0, MAX_RESULT_CHARS)}\n[… ${content.length - MAX_RESULT_CHARS} characters cut]` : content };
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
