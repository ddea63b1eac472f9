/**
 * MCP servers as tools (the v2 SDK, `@modelcontextprotocol/client`, loaded only when an agent
 * lists a server; clientConnect.ts reaches a server of the 2026-07-28 revision or of an earlier
 * one). Each session of such an agent gets its own connection to each of its servers, opened
 * when it first calls its model and closed when the session ends (or the run, or the host). A
 * connection lists its tools once; they reach the model as `mcp__<server>__<tool>` with their
 * JSON schemas, and a server with resources or prompts adds tools that read them
 * (clientResources.ts). A call asks its permission (the tool's tier, else the server's, else the
 * matrix: `mcp_tool_read_only` for a tool annotated `readOnlyHint` and for reading resources and
 * prompts, `mcp_tool_destructive` for one annotated `destructiveHint`, `mcp_tool` for the rest),
 * is cancelled through the session's AbortSignal (the SDK tells the server), and is bounded by the
 * server's `timeoutMs` (time a person spends answering the server's question does not count).
 * The server's questions during a call go to people (elicitation.ts); its progress becomes
 * `mcp.progress` events, at most one a second; the call's `_meta` carries its idempotency key and,
 * when tracing is on, the W3C trace context of the tool's span. A server that does not start,
 * stops answering or dies gives the model a tool error (or a note, when its tools could not be
 * listed) and the run an `mcp.failed` event: nothing waits on it for ever.
 */
import { resolve } from 'node:path';
import type { Client, PriorDiscovery } from '@modelcontextprotocol/client';
import type { EventSink, ToolOutcome } from '../../machines/ports.js';
import type { McpServerConfig, PermissionAction, SecretRef, SessionSpec, ToolCall, ToolSpec } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import { correlationOf } from '../../actors/observation/events.js';
import { callHeaders } from '../../actors/observation/tracing.js';
import type { AgentDefinition } from '../../actors/config/registry.js';
import { redactText, secrets } from '../../actors/config/secrets.js';
import { EXTERNAL_PREFIX, type ExternalTools, type ToolContext } from '../../actors/tools/index.js';
import { errorText } from '../../machines/errorText.js';
import { fromFile } from '../model/secrets.js';
import { clip, describeStartFailure, openClient, serverKey } from './clientConnect.js';
import { CONTEXT_TOOLS, type ContextTool, outcomeOf, runContextTool } from './clientResources.js';
import { answerElicitation, shortenRefusal } from './elicitation.js';

/** Tool names the providers accept: letters, digits, "_" and "-", at most 64. */
const MAX_NAME = 64;
/** Restarts of a server that died, per session, before its tools stay unavailable. */
const MAX_RESTARTS = 2;
/** The last lines a server wrote to stderr, for the message when it fails. */
const STDERR_KEEP = 2_000;
/** The SDK's own deadline is not used (a2a's clock pauses while a person answers): the largest a timer takes. */
const NO_SDK_TIMEOUT = 2_147_483_647;
/** At most one `mcp.progress` event per call in this time. */
const PROGRESS_EVERY_MS = 1_000;

export interface McpToolsOptions {
  events: EventSink;
  /** Where `{ secret: "name" }` values are read (secrets.json). */
  secretsFile?: string;
  env?: NodeJS.ProcessEnv;
  /** Where a session without a worktree starts a command's server (the workspace). */
  workspace: string;
}

interface ListedTool {
  /** The server's own name of the tool (a context tool: its own name, `read_resource` …). */
  tool: string;
  kind: 'tool' | ContextTool;
  spec: ToolSpec;
  /** Annotated `readOnlyHint` or `idempotentHint`: a call in doubt after a restore may run again. */
  idempotent: boolean;
  /** What its server says of it: only reads (`readOnlyHint`), may destroy (`destructiveHint`). */
  readOnly: boolean;
  destructive: boolean;
}

/** Where a call's idempotency key travels to the server: the request's `_meta` (MCP's extension point, a name of a2a's own). */
export const IDEMPOTENCY_META = 'io.a2a/idempotency-key';

/**
 * A call's deadline (`timeoutMs`) that stands still while the server's question waits for a
 * person: the SDK's own timeout would run on (an earlier revision's call stays open meanwhile).
 */
class CallClock {
  #left: number;
  #since = Date.now();
  #timer: NodeJS.Timeout | null = null;
  #paused = 0;
  #over = false;

  constructor(
    ms: number,
    private readonly onTimeout: () => void,
  ) {
    this.#left = ms;
    this.#arm();
  }

  get over(): boolean {
    return this.#over;
  }

  pause(): void {
    if (this.#paused++ > 0 || !this.#timer) return;
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#left -= Date.now() - this.#since;
  }

  resume(): void {
    if (--this.#paused > 0 || this.#over) return;
    this.#arm();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#over = true;
  }

  #arm(): void {
    this.#since = Date.now();
    this.#timer = setTimeout(() => {
      this.#over = true;
      this.onTimeout();
    }, Math.max(0, this.#left));
  }
}

/** One session's connection to one server. */
class Connection {
  client: Client | null = null;
  /** Waits for what the client is still sending (see Opened.drain). */
  drain: () => Promise<void> = async () => undefined;
  /** The call in flight, settled (its cancel sent) before the connection closes. */
  inflight: Promise<unknown> | null = null;
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
  /** The call in flight (a session runs one tool at a time): the server's questions belong to it. */
  current: { ctx: ToolContext; tool: string; clock: CallClock } | null = null;

  constructor(
    readonly server: string,
    readonly config: McpServerConfig,
    readonly spec: SessionSpec,
  ) {}
}

interface SessionConnections {
  connections: Map<string, Connection>;
  unsubscribe: (() => void) | null;
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
  /** What each server turned out to speak (its revision), so that only its first connection probes. */
  readonly #verdicts = new Map<string, PriorDiscovery>();

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
      // ask_user set on the server or tool: only a person decides; unset: the matrix, by what the server says of the tool
      const action: PermissionAction = tier === 'ask_user' ? 'mcp_tool' : listed.readOnly ? 'mcp_tool_read_only' : listed.destructive ? 'mcp_tool_destructive' : 'mcp_tool';
      const answer = await ctx.permit({ action, detail, ...(tier === 'ask_user' ? { needsPerson: true } : {}) });
      if (!answer.approved) {
        return { isError: true, content: `TOOL_NOT_ALLOWED: Permission ${action} for ${call.name} was denied by ${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}. Nothing was run.` };
      }
    }
    const client = connection.client;
    if (connection.status !== 'ready' || !client) {
      return { isError: true, content: `MCP server "${connection.server}" is not available (${connection.failure ?? 'closed'}); ${call.name} was not run.` };
    }
    const deadline = new AbortController();
    const clock = new CallClock(server.timeoutMs, () => deadline.abort(new Error(`no answer within ${server.timeoutMs} ms`)));
    const progress = this.#progress(ctx.spec, base);
    connection.current = { ctx, tool: listed.tool, clock };
    try {
      const meta: Record<string, unknown> = {
        ...(ctx.idempotencyKey ? { [IDEMPOTENCY_META]: ctx.idempotencyKey } : {}),
        // the server's spans join the run's trace (W3C traceparent, SEP-414), when tracing is on
        ...callHeaders(ctx.spec.correlation.runId, ctx.spec.id),
      };
      const options = { signal: AbortSignal.any([ctx.signal, deadline.signal]), timeout: NO_SDK_TIMEOUT, onprogress: progress.update };
      const args = (call.arguments ?? {}) as Record<string, unknown>;
      const pending =
        listed.kind === 'tool'
          ? client.callTool({ name: listed.tool, arguments: args, ...(Object.keys(meta).length ? { _meta: meta } : {}) }, options).then(outcomeOf)
          : runContextTool(client, listed.kind, args, meta, options);
      connection.inflight = pending;
      const result = await pending;
      const outcome = result.isError ? { ...result, content: shortenRefusal(result.content) } : result;
      this.#emit(ctx.spec, 'mcp.called', { ...base, isError: outcome.isError, ms: Date.now() - started });
      return outcome;
    } catch (error) {
      const ms = Date.now() - started;
      if (ctx.signal.aborted) {
        this.#emit(ctx.spec, 'mcp.called', { ...base, isError: true, cancelled: true, ms });
        return { isError: true, content: `${call.name} was cancelled: the session ended while it ran` };
      }
      const text = shortenRefusal(errorText(error));
      // the transport's close has marked the connection failed (and told mcp.failed, with the
      // server's stderr) before the pending call is rejected
      const died = connection.status !== 'ready';
      const timedOut = !died && clock.over && deadline.signal.aborted;
      if (timedOut) this.#emit(ctx.spec, 'mcp.failed', { server: base.server, tool: base.tool, phase: 'timeout', error: `no answer within ${server.timeoutMs} ms` });
      this.#emit(ctx.spec, 'mcp.called', { ...base, isError: true, ms, error: clip(text, 300) });
      const why = died
        ? `the MCP server "${connection.server}" stopped during the call (${clip(text, 300)})${connection.restarts < MAX_RESTARTS ? '; it is started again for your next call' : ''}`
        : timedOut
          ? `the MCP server "${connection.server}" did not answer within ${server.timeoutMs} ms`
          : clip(text, 1_000);
      return { isError: true, content: `${call.name} failed: ${why}` };
    } finally {
      clock.stop();
      connection.current = null;
      connection.inflight = null;
      progress.flush();
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
    const connection = new Connection(name, config, spec);
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
      connection = new Connection(name, config, spec);
      held.connections.set(name, connection);
    }
    const c = connection;
    c.ready = this.#connect(spec, c, signal).finally(() => (c.ready = null));
    return c.ready;
  }

  async #connect(spec: SessionSpec, connection: Connection, signal: AbortSignal): Promise<void> {
    const { config, server } = connection;
    const started = Date.now();
    const cwd = resolve(spec.correlation.worktreePath || this.#options.workspace, config.cwd ?? '.');
    const key = serverKey(config);
    try {
      const opened = await openClient({
        config,
        cwd,
        // the server gets PATH, HOME and the like, and what its config names: not this process's keys
        env: config.command !== undefined ? this.#values(config.env ?? {}, `mcpServers.${server}.env`) : {},
        headers: config.url !== undefined ? this.#values(config.headers ?? {}, `mcpServers.${server}.headers`) : {},
        prior: this.#verdicts.get(key),
        signal,
        onStderr: (chunk) => (connection.stderr = (connection.stderr + chunk).slice(-STDERR_KEEP)),
        prepare: (client) => {
          client.onclose = () => {
            if (connection.closing || connection.status !== 'ready') return;
            this.#died(spec, connection, 'the server closed the connection');
          };
          // the server's questions during a call (2026-07-28 `input_required`, earlier `elicitation/create`)
          client.setRequestHandler('elicitation/create', async (request) => {
            const current = connection.current;
            current?.clock.pause();
            try {
              const answer = await answerElicitation(request.params as Record<string, unknown>, {
                server,
                tool: current?.tool ?? '',
                tier: config.elicitation,
                ctx: current?.ctx ?? null,
                asked: (data) => this.#emit(spec, 'mcp.elicitation.asked', data),
                answered: (data) => this.#emit(spec, 'mcp.elicitation.answered', data),
              });
              return answer as { action: 'accept'; content: Record<string, string | number | boolean | string[]> } | { action: 'decline' | 'cancel' };
            } finally {
              current?.clock.resume();
            }
          });
        },
      });
      if (opened.verdict) this.#verdicts.set(key, opened.verdict);
      const client = opened.client;
      connection.client = client;
      connection.drain = opened.drain;
      const { tools: listedTools } = await client.listTools(undefined, { timeout: config.startupTimeoutMs, signal });
      const tools: ListedTool[] = [];
      const taken = (name: string) => tools.some((t) => t.spec.name === name);
      for (const tool of listedTools) {
        if ((config.tools?.[tool.name] ?? config.permission) === 'auto_deny') continue; // never offered
        const { $schema: _ignored, ...parameters } = (tool.inputSchema ?? { type: 'object' }) as Record<string, unknown>;
        // two names that read the same once cleaned (`a.b`, `a_b`) each keep a name of their own
        let exposed = exposedName(server, tool.name);
        if (taken(exposed)) exposed = exposedName(server, tool.name, true);
        const hints = tool.annotations;
        tools.push({
          tool: tool.name,
          kind: 'tool',
          spec: { name: exposed, description: clip(tool.description ?? `${tool.name} (MCP server ${server})`, 2_000), parameters },
          idempotent: hints?.readOnlyHint === true || hints?.idempotentHint === true,
          readOnly: hints?.readOnlyHint === true,
          destructive: hints?.destructiveHint === true && hints.readOnlyHint !== true,
        });
      }
      const toolCount = tools.length;
      // what else it offers, as tools that only read (named after them; a tier in `tools` applies)
      const offers = client.getServerCapabilities() ?? {};
      for (const [which, about] of Object.entries(CONTEXT_TOOLS) as Array<[ContextTool, (typeof CONTEXT_TOOLS)[ContextTool]]>) {
        if (!offers[about.needs] || (config.tools?.[which] ?? config.permission) === 'auto_deny') continue;
        let exposed = exposedName(server, which);
        if (taken(exposed)) exposed = exposedName(server, `a2a:${which}`, true);
        tools.push({ tool: which, kind: which, spec: { name: exposed, description: about.description(server), parameters: about.parameters }, idempotent: true, readOnly: true, destructive: false });
      }
      connection.tools = new Map(tools.map((t) => [t.spec.name, t]));
      connection.status = 'ready';
      connection.failure = null;
      this.#emit(spec, 'mcp.connected', {
        server,
        tools: toolCount,
        ms: Date.now() - started,
        protocolVersion: opened.protocolVersion,
        ...(offers.resources ? { resources: true } : {}),
        ...(offers.prompts ? { prompts: true } : {}),
        ...(connection.restarts ? { restart: connection.restarts } : {}),
      });
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
      // what this process thought the server speaks may be what failed: the next start asks again
      this.#verdicts.delete(key);
      const reason = error instanceof A2AError ? clip(error.message, 600) : describeStartFailure(error, connection.stderr, config);
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

  /** A call's progress as events: the first at once, then at most one a second (the others counted in `skipped`), and the last. */
  #progress(spec: SessionSpec, base: { server: string; tool: string; callId: string }): { update(p: { progress: number; total?: number; message?: string }): void; flush(): void } {
    let last = 0;
    let held: { progress: number; total?: number; message?: string } | null = null;
    let skipped = 0;
    const send = (p: { progress: number; total?: number; message?: string }) => {
      last = Date.now();
      this.#emit(spec, 'mcp.progress', { ...base, progress: p.progress, ...(p.total !== undefined ? { total: p.total } : {}), ...(p.message ? { message: clip(p.message, 300) } : {}), ...(skipped ? { skipped } : {}) });
      held = null;
      skipped = 0;
    };
    return {
      update: (p) => {
        // one held back and now replaced by a newer one is counted, not told
        if (held) skipped++;
        if (Date.now() - last >= PROGRESS_EVERY_MS) send(p);
        else held = p;
      },
      flush: () => {
        if (held) send(held);
      },
    };
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

  #emit(spec: SessionSpec, type: 'mcp.connected' | 'mcp.failed' | 'mcp.called' | 'mcp.progress' | 'mcp.elicitation.asked' | 'mcp.elicitation.answered', data: Record<string, unknown>): void {
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
  // a call the session's end cancelled: its cancel reaches the server before the connection goes
  await connection.inflight?.catch(() => undefined);
  await connection.drain();
  await client.close().catch(() => undefined);
}
