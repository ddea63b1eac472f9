/**
 * The Stately inspector. `a2a run --inspect [ws-url]` sends every actor, event and snapshot of
 * the run through @statelyai/inspect's WebSocket inspector; `a2a inspect` runs the relay it
 * talks to and serves a page that embeds the Stately inspector UI (https://stately.ai/inspect),
 * so that a browser shows the run live.
 *
 * The relay is ours rather than @statelyai/inspect's `createInspectorServer`, which listens on
 * every interface: inspection events carry whole conversations, so ours binds to loopback unless
 * told otherwise.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createInspector } from '@statelyai/inspect';
import { configure } from 'safe-stable-stringify';
import type { InspectionEvent, Observer } from 'xstate';
import { WebSocket, WebSocketServer } from 'ws';
import { redactSecrets } from '../actors/config/secrets.js';

export interface InspectorConnection {
  inspect: Observer<InspectionEvent>;
  /** Whether the inspector answered when the run started (if not, it is tried again in the background). */
  readonly connected: boolean;
  /** Waits for queued events to go out, then closes the connection and stops reconnecting. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Actor snapshots reference their machines (cycles): stringify safely, to a bounded depth. */
const stringify = configure({ maximumDepth: 10 });

/** Reconnection backoff: from 250 ms, doubling, at most 5 s between attempts. */
const RETRY_MIN_MS = 250;
const RETRY_MAX_MS = 5_000;
/**
 * What is kept for an inspector that is not (or no longer) connected, in bytes: the actors (the
 * tree, sent again on every connection so that a relay started late or restarted shows it whole)
 * and the other events since the connection was lost (the oldest dropped first).
 */
export const INSPECTOR_BUFFER = { treeBytes: 32 * 1024 * 1024, pendingBytes: 16 * 1024 * 1024 };

/** The inspection event's actor ids, qualified by run: XState numbers actors per process (`x:0`…), and runs share a relay. */
function qualify(event: Record<string, unknown>, runId: string): Record<string, unknown> {
  const out = { ...event };
  for (const key of ['sessionId', 'parentId', 'rootId', 'sourceId'] as const) {
    if (typeof out[key] === 'string') out[key] = `${runId}/${out[key] as string}`;
  }
  return out;
}

/**
 * The transport for @statelyai/inspect's inspector. The package's own WebSocket adapter keeps
 * reconnecting every 5 s after a failed connection, even after `stop()`, so a run pointed at an
 * inspector that is not there would never exit. This one reconnects with backoff until it is
 * closed, and sends a new connection the actors it knows and the events it could not send
 * (bounded: INSPECTOR_BUFFER), so that an inspector started after the run, or restarted during
 * it, still shows the whole tree.
 */
class WebSocketTransport {
  readonly #url: string;
  #socket: WebSocket | null = null;
  #open = false;
  #closed = false;
  #attempt = 0;
  #timer: NodeJS.Timeout | null = null;
  readonly #tree: string[] = [];
  #treeBytes = 0;
  #pending: string[] = [];
  #pendingHead = 0;
  #pendingBytes = 0;
  /** Events not kept because a buffer was full. */
  dropped = 0;

  constructor(url: string) {
    this.#url = url;
  }

  /** Connects; resolves whether it opened within `timeoutMs` (it keeps trying in the background if not). */
  start(timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#connect((opened) => {
        clearTimeout(timer);
        resolve(opened);
      });
    });
  }

  #connect(first?: (opened: boolean) => void): void {
    if (this.#closed) return;
    const socket = new WebSocket(this.#url);
    this.#socket = socket;
    socket.on('error', () => {});
    socket.once('open', () => {
      this.#open = true;
      this.#attempt = 0;
      // a new connection (a relay started late, or restarted): the tree first, then what waited
      for (const message of this.#tree) socket.send(message);
      for (let i = this.#pendingHead; i < this.#pending.length; i++) socket.send(this.#pending[i]!);
      this.#pending = [];
      this.#pendingHead = 0;
      this.#pendingBytes = 0;
      first?.(true);
    });
    socket.once('close', () => {
      const wasOpen = this.#open;
      this.#open = false;
      if (!wasOpen) first?.(false);
      if (this.#closed) return;
      const delay = Math.min(RETRY_MIN_MS * 2 ** this.#attempt++, RETRY_MAX_MS);
      this.#timer = setTimeout(() => this.#connect(), delay);
      this.#timer.unref();
    });
  }

  send(event: unknown, runId: string): void {
    if (this.#closed) return;
    const qualified = event && typeof event === 'object' ? qualify(event as Record<string, unknown>, runId) : event;
    // snapshots hold prompts, tool arguments and results: the process's secrets are redacted
    const message = redactSecrets(stringify(qualified) ?? 'null');
    const isActor = (event as { type?: unknown } | null)?.type === '@xstate.actor';
    if (isActor) {
      if (this.#treeBytes + message.length <= INSPECTOR_BUFFER.treeBytes) {
        this.#tree.push(message);
        this.#treeBytes += message.length;
      } else {
        this.dropped++;
      }
    }
    if (this.#open && this.#socket?.readyState === WebSocket.OPEN) {
      this.#socket.send(message);
      return;
    }
    if (isActor) return; // kept with the tree, sent with it
    this.#pending.push(message);
    this.#pendingBytes += message.length;
    while (this.#pendingBytes > INSPECTOR_BUFFER.pendingBytes && this.#pendingHead < this.#pending.length) {
      this.#pendingBytes -= this.#pending[this.#pendingHead++]!.length;
      this.dropped++;
    }
    if (this.#pendingHead > 1024 && this.#pendingHead * 2 > this.#pending.length) {
      this.#pending = this.#pending.slice(this.#pendingHead);
      this.#pendingHead = 0;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    const socket = this.#socket;
    if (!socket) return;
    for (let i = 0; i < 200 && this.#open && socket.bufferedAmount > 0; i++) await sleep(10);
    socket.close();
    if (socket.readyState !== WebSocket.CLOSED) await new Promise((r) => socket.once('close', r));
  }
}

/**
 * Connects to an inspector relay (`a2a inspect`), waiting up to `timeoutMs` for it so that no
 * early event (the root actor's creation) is late. One that does not answer yet is tried again
 * in the background until the run ends; either way every actor id it is sent is qualified by
 * `runId`.
 */
export async function connectInspector(url: string, options: { runId: string; timeoutMs?: number }): Promise<InspectorConnection> {
  const transport = new WebSocketTransport(url);
  const connected = await transport.start(options.timeoutMs ?? 3000);
  const inspector = createInspector({ send: (event) => transport.send(event, options.runId) });
  return {
    inspect: inspector.inspect,
    connected,
    async close() {
      // the inspector converts events on a timer: let those run, then let the socket drain
      await sleep(50);
      await transport.close();
    },
  };
}

const page = (wsUrl: string, inspectorUrl: string) => `<!doctype html>
<html><head><meta charset="utf-8"><title>a2a · Stately inspector</title>
<style>html,body,iframe{margin:0;border:0;width:100%;height:100%}</style></head>
<body><iframe id="inspector" src="${inspectorUrl}"></iframe>
<script>
  // The inspector UI says when it is ready; until then events wait here.
  const frame = document.getElementById('inspector');
  const waiting = [];
  let ready = false;
  addEventListener('message', (m) => {
    if (m.data && m.data.type === '@statelyai.connected') {
      ready = true;
      waiting.splice(0).forEach((e) => frame.contentWindow.postMessage(e, '*'));
    }
  });
  const socket = new WebSocket(${JSON.stringify(wsUrl)});
  socket.onmessage = (m) => {
    const event = JSON.parse(m.data);
    if (ready) frame.contentWindow.postMessage(event, '*');
    else waiting.push(event);
  };
</script></body></html>`;

export interface InspectorServer {
  /** Where a browser opens the inspector. */
  pageUrl: string;
  /** What `a2a run --inspect` connects to. */
  wsUrl: string;
  close(): Promise<void>;
}

/**
 * A relay between runs and browsers: whatever one WebSocket client sends, the others receive
 * (the last `keep` events are replayed to a client that connects late).
 */
export async function startInspectorServer(options: { host?: string; port?: number; inspectorUrl?: string; keep?: number } = {}): Promise<InspectorServer> {
  const host = options.host ?? '127.0.0.1';
  const keep = options.keep ?? 10_000;
  const recent: string[] = [];
  let wsUrl = '';
  const http: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page(wsUrl, options.inspectorUrl ?? 'https://stately.ai/inspect'));
  });
  const wss = new WebSocketServer({ server: http });
  wss.on('connection', (socket) => {
    for (const message of recent) socket.send(message);
    socket.on('message', (data) => {
      const message = data.toString();
      recent.push(message);
      if (recent.length > keep) recent.shift();
      for (const client of wss.clients) if (client !== socket && client.readyState === WebSocket.OPEN) client.send(message);
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.port ?? 8080, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  wsUrl = `ws://${shown}:${port}`;
  return {
    pageUrl: `http://${shown}:${port}`,
    wsUrl,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => http.close(() => resolve()));
      }),
  };
}
