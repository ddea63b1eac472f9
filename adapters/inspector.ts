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
import { redactSecrets } from '../actors/secrets.js';

export interface InspectorConnection {
  inspect: Observer<InspectionEvent>;
  /** Waits for queued events to go out, then closes the connection. */
  close(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Actor snapshots reference their machines (cycles): stringify safely, to a bounded depth. */
const stringify = configure({ maximumDepth: 10 });

/**
 * The transport for @statelyai/inspect's inspector. The package's own WebSocket adapter keeps
 * reconnecting every 5 s after a failed connection, even after `stop()`, so a run pointed at an
 * inspector that is not there would never exit; this one connects once and closes for good.
 */
class WebSocketTransport {
  readonly #socket: WebSocket;
  readonly opened: Promise<boolean>;

  constructor(url: string, timeoutMs: number) {
    this.#socket = new WebSocket(url);
    this.#socket.on('error', () => {});
    this.opened = new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.#socket.once('open', () => (clearTimeout(timer), resolve(true)));
      this.#socket.once('close', () => (clearTimeout(timer), resolve(false)));
    });
  }

  send(event: unknown): void {
    // snapshots hold prompts, tool arguments and results: the process's secrets are redacted
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(redactSecrets(stringify(event) ?? 'null'));
  }

  async close(): Promise<void> {
    for (let i = 0; i < 200 && this.#socket.bufferedAmount > 0; i++) await sleep(10);
    this.#socket.close();
    if (this.#socket.readyState !== WebSocket.CLOSED) await new Promise((r) => this.#socket.once('close', r));
  }
}

/**
 * Connects to an inspector relay (`a2a inspect`) and waits until the connection is open, so that
 * no early event (the root actor's creation) is lost. Resolves null when nothing answers at `url`
 * within `timeoutMs`.
 */
export async function connectInspector(url: string, timeoutMs = 3000): Promise<InspectorConnection | null> {
  const transport = new WebSocketTransport(url, timeoutMs);
  if (!(await transport.opened)) {
    await transport.close();
    return null;
  }
  const inspector = createInspector({ send: (event) => transport.send(event) });
  return {
    inspect: inspector.inspect,
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
