/**
 * Reaching one MCP server with the v2 SDK (`@modelcontextprotocol/client`, loaded only when an
 * agent lists a server): the transport (a command over stdio, a URL over Streamable HTTP) and the
 * protocol revision. By default the client asks the server which revisions it speaks
 * (`server/discover`, 2026-07-28: no `initialize`, no session) and falls back to the `initialize`
 * handshake of the earlier revisions when it does not answer as a 2026 server; the verdict is kept
 * per server for this process, so that only a server's first connection pays the probe (over stdio
 * the SDK probes on a short-lived second process, so that a server which exits on an unknown
 * request does not cost the real one). A server's config may pin the revision (`protocol`).
 */
import type { Client, PriorDiscovery, Transport } from '@modelcontextprotocol/client';
import type { McpServerConfig } from '../../machines/protocol/index.js';
import { errorText } from '../../machines/errorText.js';

type Sdk = {
  Client: typeof import('@modelcontextprotocol/client').Client;
  StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/client').StreamableHTTPClientTransport;
  StdioClientTransport: typeof import('@modelcontextprotocol/client/stdio').StdioClientTransport;
  getDefaultEnvironment: typeof import('@modelcontextprotocol/client/stdio').getDefaultEnvironment;
};

let sdk: Promise<Sdk> | null = null;
function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([import('@modelcontextprotocol/client'), import('@modelcontextprotocol/client/stdio')]).then(([client, stdio]) => ({
    Client: client.Client,
    StreamableHTTPClientTransport: client.StreamableHTTPClientTransport,
    StdioClientTransport: stdio.StdioClientTransport,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
  }));
  return sdk;
}

/** The revisions of a2a's answers to a server's questions: form mode only (a2a opens no browser for URL mode). */
const CAPABILITIES = { elicitation: { form: {} } };
/** The longest the probe may take over stdio before the server is taken for an earlier revision. */
const PROBE_MAX_MS = 5_000;
/** Pages of a list a server may send (the SDK walks them); past that the list is refused, not cut. */
const LIST_MAX_PAGES = 50;

export interface OpenOptions {
  config: McpServerConfig;
  /** A command's server: where it starts, and its whole environment beyond the defaults (PATH, HOME …). */
  cwd: string;
  env: Record<string, string>;
  /** A URL's server: the headers of every request. */
  headers: Record<string, string>;
  /** What this process learned of the server before (its revision), to skip the probe. */
  prior: PriorDiscovery | undefined;
  signal: AbortSignal;
  onStderr(chunk: string): void;
  /** Set up the client before it connects (its handler of the server's questions). */
  prepare(client: Client): void;
}

export interface Opened {
  client: Client;
  /**
   * Waits (a second at most) for what the client is still sending: a cancel of a call the session
   * ended is sent after the call gave up; closing the connection first would cut it off (HTTP).
   */
  drain(): Promise<void>;
  /** The revision agreed: `2026-07-28`, or an earlier one after `initialize`. */
  protocolVersion: string;
  /** What to remember for the next connection to the same server. */
  verdict: PriorDiscovery | undefined;
}

/** A key of what identifies a server for the verdict cache: its command line (the same in every worktree), or its URL. */
export function serverKey(config: McpServerConfig): string {
  return config.command !== undefined ? JSON.stringify(['stdio', config.command, config.args ?? []]) : JSON.stringify(['http', config.url]);
}

/** Thrown when the server did not answer within `startupTimeoutMs`. */
export class StartTimeout extends Error {}

/**
 * Starts (or reaches) the server and agrees on a revision, within `startupTimeoutMs`. Rejects with
 * the SDK's error, or StartTimeout; the client is closed then.
 */
export async function openClient(o: OpenOptions): Promise<Opened> {
  const { Client, StdioClientTransport, getDefaultEnvironment, StreamableHTTPClientTransport } = await loadSdk();
  const { config } = o;
  const mode = config.protocol === 'legacy' ? 'legacy' : config.protocol === '2026-07-28' ? { pin: '2026-07-28' } : 'auto';
  const client = new Client(
    { name: 'a2a', version: '1' },
    {
      capabilities: CAPABILITIES,
      // over stdio a server silent to the probe is taken for an earlier revision (then `initialize`
      // must fit in the rest of the deadline); over HTTP silence is an outage, and the deadline is the start's
      versionNegotiation: { mode, probe: { timeoutMs: config.command !== undefined ? Math.min(PROBE_MAX_MS, Math.max(100, Math.floor(config.startupTimeoutMs / 2))) : config.startupTimeoutMs } },
      listMaxPages: LIST_MAX_PAGES,
    },
  );
  o.prepare(client);
  let transport;
  if (config.command !== undefined) {
    const stdio = new StdioClientTransport({ command: config.command, args: config.args ?? [], env: { ...getDefaultEnvironment(), ...o.env }, cwd: o.cwd, stderr: 'pipe' });
    stdio.stderr?.on('data', (chunk: Buffer) => o.onStderr(chunk.toString('utf8')));
    transport = stdio;
  } else {
    transport = new StreamableHTTPClientTransport(new URL(config.url!), { requestInit: { headers: o.headers } });
  }
  const sending = new Set<Promise<void>>();
  const wire: Transport = transport;
  const send = wire.send.bind(wire);
  wire.send = (message, options) => {
    const sent = send(message, options);
    sending.add(sent);
    void sent.catch(() => undefined).finally(() => sending.delete(sent));
    return sent;
  };
  // one deadline for the whole start (the probe, the fallback handshake, the process's start)
  const deadline = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    deadline.abort(new StartTimeout(`no answer within ${config.startupTimeoutMs} ms`));
  }, config.startupTimeoutMs);
  try {
    await client.connect(transport, { timeout: config.startupTimeoutMs, signal: AbortSignal.any([o.signal, deadline.signal]), ...(o.prior && config.protocol === 'auto' ? { prior: o.prior } : {}) });
  } catch (error) {
    await client.close().catch(() => undefined);
    throw timedOut ? new StartTimeout(`no answer within ${config.startupTimeoutMs} ms`) : error;
  } finally {
    clearTimeout(timer);
  }
  const era = client.getProtocolEra();
  const discover = client.getDiscoverResult();
  const drain = async () => {
    if (sending.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...sending]), new Promise<void>((r) => (timer = setTimeout(r, 1_000)))]);
    clearTimeout(timer);
  };
  return {
    client,
    drain,
    protocolVersion: client.getNegotiatedProtocolVersion() ?? 'unknown',
    verdict: era === 'modern' && discover ? { kind: 'modern', discover } : era === 'legacy' ? { kind: 'legacy' } : undefined,
  };
}

/** A start that failed, for the model and the run: what was started, why, and its last stderr lines. */
export function describeStartFailure(error: unknown, stderr: string, config: McpServerConfig): string {
  const tail = stderr.trim().split('\n').slice(-3).join(' | ');
  const what = config.command !== undefined ? `"${[config.command, ...(config.args ?? [])].join(' ')}"` : config.url!;
  const why = error instanceof StartTimeout ? error.message : errorText(error);
  return clip(`${what} could not be started or reached: ${why}${tail ? ` (stderr: ${tail})` : ''}`, 600);
}

export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
