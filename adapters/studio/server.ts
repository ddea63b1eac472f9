/**
 * `a2a studio`: a web page to watch and steer the runs of a workspace (and, with NATS, the live
 * runs and hosts of a namespace). The server is `node:http` with no framework: a dozen routes,
 * each parsed with its schema from machines/protocol/.
 *
 * What it serves:
 *   GET  /                         the page (adapters/studio/page, bundled by `npm run build`)
 *   GET  /page.js                  its script
 *   GET  /api/info                 the workspace, the NATS namespace, the inspector's address and whether it listens
 *   GET  /api/runs                 the runs: status, duration, cost, counts
 *   GET  /api/runs/<id>            a run's record and status (tasks, inbox, pending items, workflow)
 *   GET  /api/runs/<id>/stream     its events (server-sent events), from `after` / Last-Event-ID, then live;
 *                                  `batch=1` (the page's) puts up to 1,000 events in a message
 *   GET  /api/runs/<id>/audit      its audit trail, filtered (actor, action, decision), JSON or Markdown
 *   GET  /api/runs/<id>/artifacts  its artifacts with their versions and summaries
 *   GET  /api/charts               every statechart (states and transitions), to draw a session's
 *   POST /api/runs/<id>/control    a control request (approve, deny, answer, approve_all, pause,
 *                                  unpause, redirect, reassign, switch_model, resume, reinitialize),
 *                                  through the run's control directory as `a2a inbox` sends it, or
 *                                  {"command":"stop"} as `a2a stop` does
 *   GET  /api/nats/stream          the namespace's hosts and runs (server-sent events), with --nats
 *
 * A run that is not in the workspace nor indexed, with --nats, is looked for on the namespace: the
 * same routes then read it and change it through its process's control subject
 * (adapters/studio/natsRun.ts, adapters/transport/runControl.ts) instead of its files.
 *
 * Security (like Jupyter): bound to 127.0.0.1 by default; a random token, printed in the URL at
 * start, is required on every request, compared in constant time. The URL's `?token=` is taken
 * once, to open the page: it is exchanged for a cookie (`HttpOnly; SameSite=Strict`, named after
 * the port, holding an HMAC of the token rather than the token) and the browser is sent to the
 * same address without it, so that the token leaves the address bar, the history and every later
 * request; no API takes the token in a URL (a program sends `Authorization: Bearer`). The cookie
 * is never sent by another site's request (SameSite=Strict); besides, a state-changing request
 * must be a JSON POST carrying the `x-a2a-studio` header or the bearer token (which a cross-site
 * form cannot send and a cross-site script cannot without a CORS preflight, which is never
 * granted), and an `Origin` other than the page's own is refused. The Host header must name this
 * server (against DNS rebinding). A studio restarted with the same token accepts the same cookie.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { userInfo } from 'node:os';
import { fileURLToPath } from 'node:url';
import { ControlRequest, RunEvent, StudioAuditQuery, StudioStop, StudioStreamQuery } from '../../machines/protocol/index.js';
import { A2AError, isA2AError } from '../../actors/errors.js';
import { isAudited, renderAuditMarkdown } from '../../actors/durability/audit.js';
import { machines, toGraphJson } from '../../actors/graph/index.js';
import { ArtifactStore } from '../../actors/organiser/artifacts.js';
import { redactText } from '../../actors/config/secrets.js';
import { realClock } from '../clock.js';
import { FileRunStore, type RunRecord } from '../store/file.js';
import { FileArtifactBackend } from '../store/artifactFiles.js';
import { indexedRuns } from '../store/runIndex.js';
import { sendControl, stopRunProcess } from '../runHost.js';
import { hostNamesServer, ownOrigin } from '../hostGuard.js';
import { RunFeed, summarize, type FeedListener, type RunListEntry } from './feed.js';
import { NatsRunFeed } from './natsRun.js';
import { errorText } from '../../machines/errorText.js';
import { studioPage } from './page/html.js';
import type { NatsWatch } from './nats.js';

export interface StudioOptions {
  /** The workspace whose runs are shown (its `.a2a/runs`), plus the runs indexed with a workspace of their own. */
  workspace: string;
  /** Also list runs indexed in the user's config directory (example runs on their own repository); default true. */
  indexed?: boolean;
  host?: string;
  /** 0 (default): a free port. */
  port?: number;
  /** The access token; default 24 random bytes, hex. */
  token?: string;
  /** Who the page's changes are made by in the audit (default: A2A_USER or the OS user, plus " (studio)"). */
  user?: string;
  /** The page's script; default the one `npm run build` bundles next to this module. */
  pageScript?: string;
  /** The Stately inspector page a session links to (`a2a inspect`); default http://127.0.0.1:8080. */
  inspectorUrl?: string;
  /**
   * The tracing backend's page of a trace, as a template: an http(s) URL with `{traceId}` and
   * optionally `{spanId}` (Jaeger: `http://127.0.0.1:16686/trace/{traceId}?uiFind={spanId}`). A run
   * traced with --otel then links to its trace, and each session to its first span.
   */
  traceUrl?: string;
  /** The namespace's live view (`--nats`). */
  nats?: NatsWatch;
  /** Feeds poll their logs this often (ms); default 150. */
  pollMs?: number;
}

export interface RunningStudio {
  /** The page's address, token included. */
  url: string;
  port: number;
  host: string;
  token: string;
  /** Ends every page's event stream (they reconnect and catch up): for tests of reconnection. */
  dropStreams(): void;
  close(): Promise<void>;
}

/** Where `npm run build` puts the page's bundle: dist/adapters/studio/page.js. */
export function defaultPageScript(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, 'page.js');
  if (existsSync(beside)) return beside;
  // run from the sources (tsx): the package's built copy
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    const built = join(dir, 'dist', 'adapters', 'studio', 'page.js');
    if (existsSync(join(dir, 'package.json')) && existsSync(built)) return built;
  }
  throw new A2AError('NOT_FOUND', `the studio page is not built (no page.js beside ${here} or in dist/): run npm run build`);
}

const SSE_KEEPALIVE_MS = 15_000;
/** Events a message of a batched stream (`?batch=1`, the page's) holds at most, and a backlog's slice: one write each. */
const STREAM_BATCH = 1_000;
const STREAM_SLICE = 4_000;

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const STATUS_OF_CODE: Record<string, number> = { VALIDATION_ERROR: 400, NOT_FOUND: 404, INVALID_STATE_TRANSITION: 409, WORKFLOW_PAUSED: 409, AGENT_TIMEOUT: 504, AGENT_ERROR: 502 };

/** What a page's stream reads of a run: its log followed from its files (RunFeed) or over NATS (NatsRunFeed). */
interface StreamFeed {
  readonly events: readonly RunEvent[];
  poll(): unknown;
  status(): unknown;
  record(): unknown;
  subscribe(listener: FeedListener): () => void;
}

/** Checks a trace URL template: http(s), with {traceId}; an error names the option and what is allowed. */
export function checkTraceUrl(template: string): string {
  let url: URL | null = null;
  try {
    url = new URL(template.replaceAll('{traceId}', '0').replaceAll('{spanId}', '0'));
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || !template.includes('{traceId}')) {
    throw new A2AError('VALIDATION_ERROR', `--trace-url (A2A_TRACE_URL) "${template.slice(0, 200)}" is not a trace URL template: give an http(s) URL with {traceId} where the trace id goes (and {spanId} where a span's may), e.g. http://127.0.0.1:16686/trace/{traceId}?uiFind={spanId}`);
  }
  return template;
}

export async function startStudio(options: StudioOptions): Promise<RunningStudio> {
  const traceUrl = options.traceUrl !== undefined ? checkTraceUrl(options.traceUrl) : null;
  const host = options.host ?? '127.0.0.1';
  const token = options.token ?? randomBytes(24).toString('hex');
  const tokenBytes = Buffer.from(token);
  const script = readFileSync(options.pageScript ?? defaultPageScript());
  const user = options.user ?? `${process.env.A2A_USER ?? safeUser()} (studio)`;
  const inspectorUrl = options.inspectorUrl ?? 'http://127.0.0.1:8080';
  /** Whether something listens at the inspector's address (a TCP connect of 300 ms at most, known for 2 s): a link to nothing is not shown. */
  let inspectorSeen = { at: 0, listening: false };
  const inspectorListening = async (): Promise<boolean> => {
    if (Date.now() - inspectorSeen.at < 2_000) return inspectorSeen.listening;
    let address: URL;
    try {
      address = new URL(inspectorUrl);
    } catch {
      return false;
    }
    const listening = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: address.hostname.replace(/^\[|\]$/g, ''), port: Number(address.port || (address.protocol === 'https:' ? 443 : 80)) });
      const done = (ok: boolean) => {
        socket.destroy();
        resolve(ok);
      };
      socket.setTimeout(300, () => done(false));
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
    });
    inspectorSeen = { at: Date.now(), listening };
    return listening;
  };
  const home = new FileRunStore(options.workspace);
  const feeds = new Map<string, RunFeed>();
  /** Runs of the NATS namespace read over their control subject, each opened once (its whole log read). */
  const remotes = new Map<string, { feed: NatsRunFeed; opened: Promise<void> }>();
  const streams = new Set<ServerResponse>();
  /** List summaries, kept while a run's log and status are unchanged. */
  const summaries = new Map<string, { key: string; entry: RunListEntry }>();
  let port = 0;

  /** The indexed runs that live in a workspace of their own (an example's fresh repository). */
  const indexed = () => (options.indexed === false ? [] : indexedRuns());

  /** Where run `runId` is: the workspace, else the index (a run id names one run). */
  function locate(runId: string): { store: FileRunStore; workspace: string } | null {
    if (existsSync(join(home.dir(runId), 'run.json'))) return { store: home, workspace: options.workspace };
    const entry = indexed().find((e) => e.runId === runId);
    if (!entry) return null;
    const store = new FileRunStore(entry.workspace);
    return existsSync(join(store.dir(runId), 'run.json')) ? { store, workspace: entry.workspace } : null;
  }

  /** The run's feed, made on first use (and again if the run is found in another store). */
  function feedOf(runId: string, store: FileRunStore): RunFeed {
    let feed = feeds.get(runId);
    if (!feed || feed.store.root !== store.root) {
      feed = new RunFeed(store, runId, options.pollMs);
      feeds.set(runId, feed);
    }
    return feed;
  }

  const notHere = (runId: string) => `no run "${runId}" in ${home.root}${options.indexed !== false ? ' or among the indexed runs' : ''}`;

  function runOf(runId: string): { store: FileRunStore; workspace: string; feed: RunFeed } {
    const found = locate(runId);
    if (!found) throw new HttpError(404, notHere(runId));
    return { ...found, feed: feedOf(runId, found.store) };
  }

  /**
   * A NATS run's feed brought up to date, waiting 1 s at most: a run whose process just ended
   * does not answer, and from the studio's account the server says so only at the timeout.
   */
  async function fresh(feed: NatsRunFeed): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([feed.sync(), new Promise<void>((resolve) => (timer = setTimeout(resolve, 1_000)))]);
    clearTimeout(timer);
  }

  /** The run: its files, else (with --nats) its process on the namespace, read over its control subject. */
  async function anyRun(runId: string): Promise<{ local: { store: FileRunStore; workspace: string; feed: RunFeed } } | { nats: NatsRunFeed }> {
    const found = locate(runId);
    if (found) return { local: { ...found, feed: feedOf(runId, found.store) } };
    const watch = options.nats;
    if (!watch) throw new HttpError(404, notHere(runId));
    const before = remotes.get(runId);
    let entry = before;
    // a run read to its end is shown as it was read, unless it was heard from since (resumed): then read again
    if (!entry || (entry.feed.ended && watch.lastHeard(runId) > entry.feed.endedAt)) {
      const feed = new NatsRunFeed(watch, runId, Math.max(options.pollMs ?? 150, 250));
      entry = { feed, opened: feed.open() };
      remotes.set(runId, entry);
    }
    try {
      await entry.opened;
    } catch (error) {
      entry.feed.close();
      if (remotes.get(runId) === entry) {
        if (before?.feed.ended) remotes.set(runId, before);
        else remotes.delete(runId);
      }
      if (before?.feed.ended) return { nats: before.feed };
      throw new HttpError(404, `${notHere(runId)}, and no process of namespace "${watch.namespace}" answers for it on NATS (${errorText(error)})`);
    }
    return { nats: entry.feed };
  }

  /** Every run, each record read once: the workspace's, then the indexed ones elsewhere. */
  function listRuns(): RunListEntry[] {
    const records = new Map<string, { store: FileRunStore; workspace: string; record: RunRecord }>();
    for (const record of safeList(home)) records.set(record.runId, { store: home, workspace: options.workspace, record });
    for (const entry of indexed()) {
      if (records.has(entry.runId)) continue;
      const store = new FileRunStore(entry.workspace);
      try {
        records.set(entry.runId, { store, workspace: entry.workspace, record: store.read(entry.runId) });
      } catch {
        // gone with its workspace
      }
    }
    const out: RunListEntry[] = [];
    for (const [runId, { store, workspace, record }] of records) {
      const feed = feedOf(runId, store);
      feed.poll();
      const status = feed.status();
      const key = `${feed.events.length}:${record.status}:${JSON.stringify(record.paused ?? null)}:${(status as { savedAt?: number } | null)?.savedAt ?? 0}`;
      const cached = summaries.get(runId);
      if (cached?.key === key) out.push(cached.entry);
      else {
        const entry = summarize(record, workspace, feed.events, status);
        summaries.set(runId, { key, entry });
        out.push(entry);
      }
    }
    return out.sort((a, b) => b.startedAt - a.startedAt);
  }

  // ------------------------------------------------------------------------------------------
  // requests

  const equal = (given: string, expected: Buffer) => {
    const bytes = Buffer.from(given);
    return bytes.length === expected.length && timingSafeEqual(bytes, expected);
  };
  /** The page's credential: an HMAC of the token (the cookie never holds the token itself). */
  const cookieBytes = Buffer.from(createHmac('sha256', token).update('a2a studio page').digest('hex'));
  // cookies are not told apart by port: two studios on one host each keep their own
  const cookieName = () => `a2a_studio_${port}`;

  function cookieOf(req: IncomingMessage): string | undefined {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const at = part.indexOf('=');
      if (at > 0 && part.slice(0, at).trim() === cookieName()) return part.slice(at + 1).trim();
    }
    return undefined;
  }

  /** A bearer token in the header (a program), or the page's cookie. */
  function authorized(req: IncomingMessage): boolean {
    const header = req.headers.authorization;
    if (header?.startsWith('Bearer ')) return equal(header.slice(7), tokenBytes);
    const cookie = cookieOf(req);
    return cookie !== undefined && equal(cookie, cookieBytes);
  }

  /** `/?token=…`: the token exchanged for the page's cookie, and the browser sent to the address without it. */
  function exchange(url: URL, res: ServerResponse): void {
    url.searchParams.delete('token');
    const rest = url.searchParams.toString();
    res.writeHead(303, {
      location: `${url.pathname}${rest ? `?${rest}` : ''}`,
      'set-cookie': `${cookieName()}=${cookieBytes.toString()}; HttpOnly; SameSite=Strict; Path=/`,
      'cache-control': 'no-store',
      ...SECURITY_HEADERS,
    });
    res.end();
  }

  /** The Host header names this server (a DNS-rebinding page's Host names its own domain; adapters/hostGuard.ts). */
  function rightHost(req: IncomingMessage): boolean {
    return hostNamesServer(req.headers.host, host, port);
  }

  function json(res: ServerResponse, status: number, value: unknown): void {
    const body = JSON.stringify(value);
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS });
    res.end(body);
  }

  async function readBody(req: IncomingMessage): Promise<unknown> {
    const type = req.headers['content-type'] ?? '';
    if (!type.startsWith('application/json')) throw new HttpError(415, `a change is a JSON request: content-type must be application/json, got "${type || 'none'}"`);
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > 64 * 1024) throw new HttpError(413, 'request body over 64 KiB');
      chunks.push(chunk as Buffer);
    }
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new HttpError(400, 'the request body is not valid JSON');
    }
  }

  function query<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } } }, url: URL): T {
    const parsed = schema.safeParse(Object.fromEntries(url.searchParams));
    if (!parsed.success) throw new HttpError(400, parsed.error.issues.map((i) => `${i.path.join('.') || '(query)'}: ${i.message}`).join('; '));
    return parsed.data;
  }

  async function control(runId: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const origin = req.headers.origin;
    if (origin && !ownOrigin(origin, req.headers.host)) throw new HttpError(403, `a change must come from the studio's own page, not from ${origin}`);
    const header = req.headers.authorization;
    if (!header?.startsWith('Bearer ') && req.headers['x-a2a-studio'] === undefined) throw new HttpError(403, 'a change must carry the token in its Authorization header (Bearer), or come from the studio\'s page (its x-a2a-studio header)');
    const body = await readBody(req);
    const run = await anyRun(runId);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new HttpError(400, 'the request body must be a JSON object with a "command"');
    if ((body as { command?: unknown }).command === 'stop') {
      const stop = StudioStop.safeParse(body);
      if (!stop.success) throw new HttpError(400, stop.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; '));
      if ('local' in run) {
        json(res, 200, { ok: true, message: stopRunProcess(run.local.store, runId) });
        return;
      }
      const reply = await run.nats.control({ command: 'stop', by: user });
      json(res, reply.ok ? 200 : 409, reply);
      return;
    }
    if ('by' in body) throw new HttpError(400, 'by: set by the studio (who runs it), not by the page');
    const parsed = ControlRequest.safeParse({ ...body, by: user });
    if (!parsed.success) {
      const commands = ['answer', 'approve_all', 'pause', 'unpause', 'retry', 'redirect', 'reassign', 'reinitialize', 'resume', 'switch_model', 'stop'];
      throw new HttpError(400, `${parsed.error.issues.map((i) => `${i.path.join('.') || '(body)'}: ${i.message}`).join('; ')} (commands: ${commands.join(', ')})`);
    }
    const reply = 'local' in run ? await sendControl(run.local.store, runId, parsed.data) : await run.nats.control(parsed.data);
    json(res, reply.ok ? 200 : 409, reply.ok ? reply : { ok: false, error: reply.error });
  }

  function stream(feed: StreamFeed, req: IncomingMessage, res: ServerResponse, url: URL): void {
    const q = query(StudioStreamQuery, url);
    const last = req.headers['last-event-id'];
    const lastId = typeof last === 'string' && /^\d+$/.test(last) ? Number(last) : undefined;
    // the later of the two: a reconnecting EventSource sends Last-Event-ID with the URL it first used
    let next = Math.max(q.after ?? -1, lastId ?? -1) + 1;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no', ...SECURITY_HEADERS });
    res.write('retry: 1000\n\n');
    /** Writes `events[from..to)` not sent yet (`first` is the index of `events[0]`); false when the socket's buffer is full. */
    const send = (events: readonly RunEvent[], first: number, to = events.length): boolean => {
      const from = Math.max(0, next - first);
      if (from >= to) return true;
      let chunk = '';
      if (q.batch === '1') {
        for (let i = from; i < to; i += STREAM_BATCH) {
          const end = Math.min(to, i + STREAM_BATCH);
          const json: string[] = [];
          for (let k = i; k < end; k++) json.push(JSON.stringify(events[k]));
          chunk += `id: ${first + end - 1}\nevent: runs\ndata: {"first":${first + i},"events":[${json.join(',')}]}\n\n`;
        }
      } else {
        for (let k = from; k < to; k++) chunk += `id: ${first + k}\nevent: run\ndata: ${JSON.stringify(events[k])}\n\n`;
      }
      next = first + to;
      return res.write(chunk);
    };
    let unsubscribe = () => {};
    let keepAlive: NodeJS.Timeout | undefined;
    const gone = () => res.destroyed || res.writableEnded;
    streams.add(res);
    res.on('close', () => {
      clearInterval(keepAlive);
      unsubscribe();
      streams.delete(res);
    });
    // what the page has not seen yet, in slices (the first bytes leave at once, a page that reads
    // slowly holds back the rest instead of the server holding all of it), then the current
    // files, then live; the log read meanwhile is in feed.events, so nothing falls between
    feed.poll();
    const backlog = () => {
      if (gone()) return;
      if (next < feed.events.length) {
        const written = send(feed.events, 0, Math.min(feed.events.length, next + STREAM_SLICE));
        if (!written) res.once('drain', backlog);
        else setImmediate(backlog);
        return;
      }
      res.write(`event: files\ndata: ${JSON.stringify({ status: feed.status(), record: feed.record() })}\n\n`);
      unsubscribe = feed.subscribe({
        events: (events, first) => void send(events, first),
        files: (changed) => res.write(`event: files\ndata: ${JSON.stringify(changed)}\n\n`),
      });
      keepAlive = setInterval(() => res.write(': keep-alive\n\n'), SSE_KEEPALIVE_MS);
    };
    backlog();
  }

  function natsStream(res: ServerResponse): void {
    const watch = options.nats;
    if (!watch) throw new HttpError(404, 'this studio was started without --nats: there is no namespace to show');
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', ...SECURITY_HEADERS });
    res.write('retry: 1000\n\n');
    const stop = watch.subscribe((snapshot) => res.write(`event: nats\ndata: ${JSON.stringify(snapshot)}\n\n`));
    streams.add(res);
    res.on('close', () => {
      stop();
      streams.delete(res);
    });
  }

  async function audit(runId: string, res: ServerResponse, url: URL): Promise<void> {
    const run = await anyRun(runId);
    const q = query(StudioAuditQuery, url);
    const records: RunEvent[] = [];
    if ('local' in run) {
      for (const line of run.local.store.logLines(runId, 'audit')) {
        const parsed = RunEvent.safeParse(line);
        if (parsed.success && matches(parsed.data, q)) records.push(parsed.data);
      }
    } else {
      // the audit trail is the log's audited events (what the run's audit.jsonl holds)
      await fresh(run.nats);
      for (const e of run.nats.events) if (isAudited(e) && matches(e, q)) records.push(e);
    }
    if (q.format === 'md') {
      res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8', 'content-disposition': `attachment; filename="${runId}-audit.md"`, ...SECURITY_HEADERS });
      res.end(renderAuditMarkdown(runId, records));
      return;
    }
    if (q.format === 'json') {
      res.writeHead(200, { 'content-type': 'application/x-ndjson; charset=utf-8', 'content-disposition': `attachment; filename="${runId}-audit.jsonl"`, ...SECURITY_HEADERS });
      res.end(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
      return;
    }
    json(res, 200, records);
  }

  async function artifacts(runId: string, res: ServerResponse): Promise<void> {
    const run = await anyRun(runId);
    if ('nats' in run) return json(res, 200, await run.nats.artifacts());
    const { store } = run.local;
    const artifactStore = new ArtifactStore(new FileArtifactBackend(store.root), runId, realClock);
    json(res, 200, await artifactStore.list({ includeArchived: true }));
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://studio.invalid');
    if (!rightHost(req)) throw new HttpError(421, `this server does not answer for host "${req.headers.host ?? ''}"`);
    const path = url.pathname;
    const method = req.method ?? 'GET';
    const given = url.searchParams.get('token');
    if (given !== null) {
      if (method === 'GET' && (path === '/' || path === '/index.html') && equal(given, tokenBytes)) return exchange(url, res);
      if (path === '/' || path === '/index.html') throw new HttpError(401, 'missing or wrong token: open the URL `a2a studio` printed (it ends with ?token=…)');
      throw new HttpError(401, 'the token is taken in the URL only to open the page (/?token=…, then kept in a cookie): an API request carries it in its Authorization header (Bearer)');
    }
    if (!authorized(req)) throw new HttpError(401, 'missing or wrong token: open the URL `a2a studio` printed (it ends with ?token=…)');
    const run = /^\/api\/runs\/([^/]+)(?:\/(stream|audit|artifacts|control))?$/.exec(path);
    if (method === 'POST') {
      if (run && run[2] === 'control') return control(decodeURIComponent(run[1]!), req, res);
      throw new HttpError(404, `no ${method} ${path}`);
    }
    if (method !== 'GET') throw new HttpError(405, `${method} is not allowed: the studio answers GET, and POST for changes`);
    if (path === '/' || path === '/index.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS });
      res.end(studioPage());
      return;
    }
    if (path === '/page.js') {
      res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store', ...SECURITY_HEADERS });
      res.end(script);
      return;
    }
    if (path === '/api/info') {
      return json(res, 200, {
        workspace: options.workspace,
        user,
        inspectorUrl,
        inspectorListening: await inspectorListening(),
        traceUrl,
        nats: options.nats ? { servers: options.nats.servers, namespace: options.nats.namespace } : null,
      });
    }
    if (path === '/api/runs') return json(res, 200, listRuns());
    if (path === '/api/charts') return json(res, 200, Object.fromEntries(Object.entries(machines).map(([name, m]) => [name, toGraphJson(m)])));
    if (path === '/api/nats/stream') return natsStream(res);
    if (run) {
      const runId = decodeURIComponent(run[1]!);
      if (!/^[A-Za-z0-9._-]+$/.test(runId)) throw new HttpError(400, `invalid run id "${runId}": use letters, digits, ".", "_" and "-"`);
      switch (run[2]) {
        case 'stream': {
          const run = await anyRun(runId);
          return stream('local' in run ? run.local.feed : run.nats, req, res, url);
        }
        case 'audit':
          return audit(runId, res, url);
        case 'artifacts':
          return artifacts(runId, res);
        case undefined: {
          const run = await anyRun(runId);
          if ('nats' in run) {
            await fresh(run.nats);
            const record = run.nats.record();
            return json(res, 200, { record, status: run.nats.status(), workspace: record?.invocation?.workspace ?? null, invalidLines: run.nats.invalid, nats: { namespace: options.nats!.namespace, reachable: run.nats.reachable } });
          }
          const { feed, workspace } = run.local;
          return json(res, 200, { record: feed.record(), status: feed.status(), workspace, invalidLines: feed.invalid });
        }
      }
    }
    throw new HttpError(404, `no ${path} here`);
  }

  const server: Server = createServer((req, res) => {
    route(req, res).catch((error: unknown) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      const status = error instanceof HttpError ? error.status : isA2AError(error) ? (STATUS_OF_CODE[error.code] ?? 500) : 500;
      const message = redactText(error instanceof Error ? error.message : String(error));
      json(res, status, { ok: false, error: message, ...(isA2AError(error) ? { code: error.code } : {}) });
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shown}:${port}/?token=${token}`,
    port,
    host,
    token,
    dropStreams() {
      for (const s of streams) s.destroy();
      streams.clear();
    },
    async close() {
      for (const s of streams) s.destroy();
      streams.clear();
      for (const f of feeds.values()) f.close();
      for (const r of remotes.values()) r.feed.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
};

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return 'studio';
  }
}

function safeList(store: FileRunStore) {
  try {
    return store.list();
  } catch {
    return [];
  }
}

/** An audit record against the page's filters. */
export function matches(record: RunEvent, q: { actor?: string | undefined; action?: string | undefined; decision?: 'approved' | 'denied' | undefined }): boolean {
  const d = record.data as Record<string, unknown>;
  if (q.actor) {
    const who = [record.subTaskId, record.workerId, record.taskId, record.parentId, d.decider, d.by, d.requesterId, d.from].filter((v): v is string => typeof v === 'string');
    if (!who.includes(q.actor)) return false;
  }
  if (q.action && record.type !== q.action && d.action !== q.action) return false;
  if (q.decision) {
    if (typeof d.approved !== 'boolean') return false;
    if ((q.decision === 'approved') !== d.approved) return false;
  }
  return true;
}
