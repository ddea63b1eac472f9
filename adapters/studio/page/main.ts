/**
 * The studio's page (bundled into page.js by `npm run build`; no framework). Routes:
 *   #/                      the runs of the workspace
 *   #/run/<id>[/<tab>]      a run: tree (and the selected session), inbox, audit, cost, workflow, A2A, events
 *   #/nats                  the namespace's hosts and live runs (with --nats); a run opens as #/run/<id>,
 *                           which the server reads over the run's control subject when it has no files of it
 * A run's events arrive over server-sent events from the run's log, each with its index (up to a
 * thousand a message); after a reconnect the stream resumes after the last index received, so
 * nothing is lost or repeated.
 * Every change goes through the server's control endpoint (the run's control directory, as
 * `a2a inbox` uses): the page never holds state of its own that the CLI could contradict.
 *
 * Over 600 lines, for a reason: the page is one bundle with no framework, and every view renders
 * from the one open run (`RunPage`) and is redrawn by one `render`, which morphs the DOM in place
 * (morph.ts); the views follow the routes' order (runs, run: tree, session, chart, inbox, audit,
 * cost, workflow; NATS), then the actions. The tree draws only the rows in view (tree.ts), and the
 * session is drawn again only when it changed, so that a run of 10,000 sessions stays fast
 * (`npm run bench:studio`).
 */
import type { HumanItem, RunEvent } from '../../../machines/protocol/index.js';
import type { GraphJson } from '../../../actors/graph/render.js';
import type { RunStatus } from '../../../actors/observation/runStatus.js';
import type { RunRecord as FileRunRecord } from '../../store/file.js';
import type { RunListEntry } from '../feed.js';
import type { NodeView } from '../../../actors/observation/runView.js';
import { formatElapsed } from '../../../actors/observation/runView.js';
import { describeEvent } from '../../terminal.js';
import type { MonitorSnapshot, TreeNode } from '../../monitor.js';
import { StudioRun, a2aStateClass, permissionLine, type Badge, type SessionExtra } from './view.js';
import { Timeline, queueOf, trailOf } from './timeline.js';
import { chartSvg } from './diagram.js';
import { esc } from './esc.js';
import { spanIdOf } from '../../../actors/observation/traceIds.js';
import { morph } from './morph.js';
import { readStream, type StreamMessage } from './stream.js';
import { flatten, type TreeRow } from './rows.js';
import { VirtualTree } from './tree.js';

interface Info {
  workspace: string;
  user: string;
  inspectorUrl: string;
  /** Something listens at inspectorUrl (asked again each time a run opens). */
  inspectorListening: boolean;
  /** The tracing backend's page of a trace: a template with {traceId} and {spanId} (--trace-url), or null. */
  traceUrl: string | null;
  nats: { servers: string; namespace: string } | null;
}
type RunEntry = RunListEntry;
type PendingItem = HumanItem;
type Status = RunStatus;
type RunRecord = Omit<FileRunRecord, 'summary'>;

const $main = document.getElementById('main')!;
const $conn = document.getElementById('conn')!;
const $toast = document.getElementById('toast')!;

const usd = (n: number) => `$${n.toFixed(n > 0 && n < 0.01 ? 4 : 2)}`;
const time = (ts: number) => new Date(ts).toLocaleTimeString();

async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers: { 'x-a2a-studio': '1', ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const value = (await res.json().catch(() => ({ ok: false, error: `${res.status} ${res.statusText}` }))) as T & { ok?: boolean; error?: string };
  if (!res.ok) throw new Error(value.error ?? `${res.status} ${res.statusText}`);
  return value;
}

function toast(text: string, bad = false): void {
  const div = document.createElement('div');
  div.textContent = text;
  if (bad) div.className = 'bad';
  $toast.append(div);
  setTimeout(() => div.remove(), bad ? 8_000 : 4_000);
}

function connection(state: 'live' | 'down' | 'idle', text: string): void {
  $conn.className = `conn ${state === 'idle' ? '' : state}`;
  $conn.textContent = text;
}

// ---------------------------------------------------------------------------------------------
// state

let info: Info | null = null;
let charts: Record<string, GraphJson> | null = null;
let closeStream: (() => void) | null = null;
let refreshTimer: number | null = null;

interface RunPage {
  runId: string;
  /** The run as the views draw it: `live`, or `live` as it was at event `at` (the time slider). */
  run: StudioRun;
  /** Everything received of the run. */
  live: StudioRun;
  /** The event the slider is on (an index into what was received), null when following the run live. */
  at: number | null;
  timeline: Timeline;
  status: Status | null;
  record: RunRecord | null;
  tab: string;
  selected: string | null;
  auditFilter: { actor: string; action: string; decision: string };
  dirty: boolean;
  /** The last log index received: a reconnect resumes after it. */
  last: number;
  reconnects: number;
  /** Stop was clicked once: the next click (within 10 s) confirms it. */
  stopArmedAt: number;
  /** The run's artifacts (the workflow view), read when that view opens. */
  artifacts: Array<Record<string, unknown>> | null;
}
let page: RunPage | null = null;

/** For tests and the curious: what the page received of the open run. */
(window as unknown as { a2aStudio: unknown }).a2aStudio = {
  received: () => page?.live.indices.slice() ?? [],
  seqs: () => page?.live.events.map((e) => e.seq) ?? [],
  reconnects: () => page?.reconnects ?? 0,
  /** The tree's rows (every session not folded away) and how many of them are in the DOM. */
  treeRows: () => tree.size,
  treeDrawn: () => tree.drawn,
};

// ---------------------------------------------------------------------------------------------
// routing

function route(): void {
  const [path = '', query = ''] = location.hash.replace(/^#\/?/, '').split('?');
  const parts = path.split('/').map(decodeURIComponent);
  // #/run/<id>/<tab>/<session>?at=<event>: the run as it was at that event
  const at = /^\d+$/.test(new URLSearchParams(query).get('at') ?? '') ? Number(new URLSearchParams(query).get('at')) : null;
  if (parts[0] === 'run' && parts[1] && page?.runId === parts[1] && closeStream) {
    // another view of the open run: its stream goes on
    page.tab = parts[2] ?? 'tree';
    page.selected = parts[3] ?? page.selected;
    page.at = at;
    render(true);
    return;
  }
  closeStream?.();
  closeStream = null;
  if (refreshTimer) clearInterval(refreshTimer);
  refreshTimer = null;
  if (parts[0] === 'run' && parts[1]) return openRun(parts[1], parts[2] ?? 'tree', parts[3] ?? null, at);
  if (parts[0] === 'nats') return openNats();
  page = null;
  void showRuns();
}

async function showRuns(): Promise<void> {
  const draw = async () => {
    try {
      const runs = await api<RunEntry[]>('/api/runs');
      connection('idle', 'up to date');
      $main.innerHTML = `<h1 style="font-size:18px">Runs</h1>
        ${runs.length === 0 ? `<p class="dim">no run in ${esc(info?.workspace)} yet: start one with <code>a2a run &lt;plan&gt;</code></p>` : ''}
        <table aria-label="Runs"><thead><tr><th>run</th><th>status</th><th>plan</th><th>started</th><th>duration</th><th>sessions</th><th>failed</th><th>waiting</th><th>cost</th></tr></thead><tbody>
        ${runs
          .map(
            (r) => `<tr><td><a href="#/run/${encodeURIComponent(r.runId)}">${esc(r.runId)}</a><div class="dim" style="font-size:11px">${esc(r.source)}</div></td>
            <td class="s-${esc(r.status)}">${esc(r.status)}${r.paused ? ' (paused)' : ''}</td><td>${esc(r.planId)}</td><td>${esc(new Date(r.startedAt).toLocaleString())}</td>
            <td>${formatElapsed((r.finishedAt ?? Date.now()) - r.startedAt)}</td><td>${r.ended}/${r.sessions}</td><td>${r.failed}</td><td>${r.pending}</td><td>${usd(r.costUsd)}</td></tr>`,
          )
          .join('')}
        </tbody></table>`;
    } catch (error) {
      connection('down', 'server unreachable');
      $main.innerHTML = `<p class="bad">${esc((error as Error).message)}</p>`;
    }
  };
  await draw();
  refreshTimer = window.setInterval(() => void draw(), 2_000);
}

// ---------------------------------------------------------------------------------------------
// a run

function openRun(runId: string, tab: string, selected: string | null, at: number | null): void {
  const same = page?.runId === runId;
  if (!same || !page) {
    const live = new StudioRun();
    tree.reset();
    page = { runId, run: live, live, at, timeline: new Timeline(live), status: null, record: null, tab, selected, auditFilter: { actor: '', action: '', decision: '' }, dirty: true, last: -1, reconnects: 0, stopArmedAt: 0, artifacts: null };
  } else {
    page.tab = tab;
    page.selected = selected;
    page.at = at;
  }
  const p = page;
  // is an inspector listening now? (the link to it is shown only then)
  void api<Info>('/api/info')
    .then((fresh) => {
      info = fresh;
      if (page === p) render(false);
    })
    .catch(() => undefined);
  $main.innerHTML = `<div id="runhead"></div><div class="tabs" role="tablist" aria-label="Run views" id="tabs"></div><div id="body"></div>`;
  connect(p);
  render(true);
}

/** The run's event stream; reopened after `after` whenever it drops (the server restarted, the network blinked). */
function connect(p: RunPage): void {
  let reading: AbortController | null = null;
  let retry: number | null = null;
  let closed = false;
  /** The first files of a stream come after what the log held when it opened. */
  let caughtUp = false;
  const received = (m: StreamMessage) => {
    if (m.event === 'runs') {
      // up to 1,000 events a message (batch=1): a 10,000-session run is 70,000 events
      const { first, events } = JSON.parse(m.data) as { first: number; events: RunEvent[] };
      let applied = false;
      for (let k = 0; k < events.length; k++) {
        if (!p.live.apply(first + k, events[k]!)) continue;
        p.last = first + k;
        applied = true;
      }
      if (applied) schedule();
    } else if (m.event === 'files') {
      const files = JSON.parse(m.data) as { status?: Status | null; record?: RunRecord | null };
      if (files.status) p.status = files.status;
      if (files.record) p.record = files.record;
      // what the log held when the stream opened is drawn at once, not 120 ms later
      schedule(caughtUp ? 120 : 0);
      caughtUp = true;
    }
  };
  const open = () => {
    caughtUp = false;
    const signal = (reading = new AbortController()).signal;
    readStream(`/api/runs/${encodeURIComponent(p.runId)}/stream?after=${p.last}&batch=1`, signal, () => connection('live', 'live'), received)
      .then(() => {
        throw new Error('the server ended the stream');
      })
      .catch((error: unknown) => {
        if (closed) return;
        // a fresh stream from the last index received
        connection('down', 'reconnecting…');
        p.reconnects++;
        console.info(`a2a studio: stream of ${p.runId} dropped after index ${p.last} (${(error as Error).message}); reconnecting (${p.reconnects})`);
        retry = window.setTimeout(open, 500);
      });
  };
  open();
  closeStream = () => {
    closed = true;
    if (retry) clearTimeout(retry);
    reading?.abort();
  };
}

/** A render is due (the time it is due at, and its timer), events having arrived. */
let scheduled: { at: number; timer: number } | null = null;
/** Renders `delay` ms from now, or sooner if a render is due sooner: events arriving in a burst are drawn once. */
function schedule(delay = 120): void {
  if (!page) return;
  page.dirty = true;
  const at = performance.now() + delay;
  if (scheduled && scheduled.at <= at) return;
  if (scheduled) clearTimeout(scheduled.timer);
  scheduled = {
    at,
    timer: window.setTimeout(() => {
      scheduled = null;
      render(false);
    }, delay),
  };
}

const TABS: Array<[string, string]> = [
  ['tree', 'Tree'],
  ['inbox', 'Inbox'],
  ['audit', 'Audit'],
  ['cost', 'Cost'],
  ['workflow', 'Workflow'],
  ['a2a', 'A2A'],
  ['events', 'Events'],
];

/** Is the slider on an event before the last one received? */
const inPast = (p: RunPage): boolean => p.at !== null && p.at < p.live.events.length - 1;

/** The link that opens the studio on this view of the run at event `at`. */
const linkAt = (p: RunPage, at: number, tab = p.tab) =>
  `#/run/${encodeURIComponent(p.runId)}/${tab}${p.selected && tab === 'tree' ? `/${encodeURIComponent(p.selected)}` : ''}?at=${at}`;

/** One event as a line a person reads: the terminal's line, else its type, session and what it says. */
function eventLine(e: RunEvent): string {
  const told = describeEvent(e);
  if (told) return told;
  const fields = Object.entries(e.data ?? {})
    .filter(([, v]) => v !== null && v !== undefined && typeof v !== 'object')
    .slice(0, 4)
    .map(([k, v]) => `${k} ${String(v).slice(0, 60)}`);
  return `${e.type}${e.subTaskId ? ` · ${e.subTaskId}` : ''}${fields.length ? `: ${fields.join(', ')}` : ''}`;
}

/** The time slider: every event of the run received so far, the one shown, and the way back to live. */
function timeBar(p: RunPage, past: boolean): string {
  const count = p.live.events.length;
  if (count === 0) return '';
  const at = past ? p.at! : count - 1;
  const e = p.live.events[at]!;
  const where = `event ${at + 1} of ${count} · ${time(e.ts)} · ${eventLine(e)}`;
  return `<div class="timebar" role="group" aria-label="Time travel">
    <button data-time="back" aria-label="One event back" title="One event back ([)" ${at === 0 ? 'disabled' : ''}>◀</button>
    <input type="range" id="time" min="0" max="${count - 1}" value="${at}" aria-label="Event shown" aria-valuetext="${esc(where)}">
    <button data-time="forward" aria-label="One event forward" title="One event forward (])" ${past ? '' : 'disabled'}>▶</button>
    <span class="when ${past ? 'past' : ''}">${past ? esc(where) : `live · ${count} events`}</span>
    ${past ? `<button data-time="live" class="primary" title="Follow the run live (L)">Back to live</button><a href="${esc(linkAt(p, at))}" aria-label="Link to the run at event ${at + 1}">link</a>` : ''}
  </div>`;
}

/** Moves the slider to `at` (null: live); the address follows, so that it can be shared. */
function travel(p: RunPage, at: number | null): void {
  const last = p.live.events.length - 1;
  p.at = at === null || at >= last ? null : Math.max(0, at);
  history.replaceState(null, '', p.at === null ? linkAt(p, 0).replace(/\?at=\d+$/, '') : linkAt(p, p.at));
  render(true);
}

function render(full: boolean): void {
  const p = page;
  if (!p) return;
  const head = document.getElementById('runhead');
  const tabs = document.getElementById('tabs');
  const body = document.getElementById('body');
  if (!head || !tabs || !body) return;
  const past = inPast(p);
  p.run = past ? p.timeline.at(p.at!) : p.live;
  const v = p.run.view;
  // in the past, the run's files (which hold only the present) say nothing: the log alone does
  const status = past ? v.status : (p.record?.status ?? v.status);
  const running = status === 'running';
  const nodes = [...v.nodes.values()];
  const ended = nodes.filter((n) => n.endedAt !== null).length;
  const pending = past ? p.run.asked.size : p.status && running ? p.status.pending.length : 0;
  const paused = past ? p.run.paused : Boolean(p.record?.paused) || p.run.paused;
  const budget = p.run.budgets.runUsd;
  const until = past ? p.run.events[p.run.events.length - 1]!.ts : ((p.record?.finishedAt ?? v.finishedAt) || Date.now());
  morph(head, `<div class="runhead">
    <h1>${esc(p.runId)}</h1>
    <span class="stat s-${esc(status)}" aria-label="status">${esc(status)}${paused && running ? ' · paused' : ''}</span>
    <span class="stat">${formatElapsed(until - (v.startedAt ?? p.record?.startedAt ?? Date.now()))}</span>
    <span class="stat">${ended}/${nodes.length} sessions ended</span>
    <span class="stat">${usd(v.costUsd)}${budget ? ` of ${usd(budget)}` : ''}</span>
    <span class="stat">${pending} waiting for a person</span>
    ${traceLink(p.runId, p.run.traceId, 'orchestrator', 'stat')}
    <span class="row" style="margin-left:auto">
      ${running && !past ? (paused ? `<button data-act="unpause" class="primary">Resume run</button>` : `<button data-act="pause">Pause run</button>`) : ''}
      ${running && !past ? (Date.now() - p.stopArmedAt < 10_000 ? `<button data-act="stop" class="danger" aria-label="Confirm: stop the run now">Confirm stop</button>` : `<button data-act="stop" class="danger" aria-label="Stop the run: cancels every worker and sub-task">Stop run</button>`) : ''}
    </span></div>${timeBar(p, past)}`);
  const slider = document.getElementById('time') as HTMLInputElement | null;
  // the attribute is only the slider's start: once moved, its value is a property
  if (slider && slider.value !== slider.getAttribute('value')) slider.value = slider.getAttribute('value')!;
  const a2a = p.run.a2a.size;
  morph(tabs, TABS.map(([id, label]) => `<button role="tab" id="tab-${id}" aria-controls="body" aria-selected="${p.tab === id}" data-tab="${id}">${id === 'inbox' && pending ? `${label} (${pending})` : id === 'a2a' && a2a ? `${label} (${a2a})` : label}</button>`).join(''));
  // a form being filled in is left alone until it is sent (morph() would keep it, but nothing in it needs the news)
  const active = document.activeElement;
  const typing = active instanceof HTMLInputElement || active instanceof HTMLTextAreaElement || active instanceof HTMLSelectElement;
  if (!full && typing && body.contains(active)) return;
  body.setAttribute('role', 'tabpanel');
  body.setAttribute('aria-labelledby', `tab-${p.tab}`);
  switch (p.tab) {
    case 'inbox':
      morph(body, inboxView(p));
      break;
    case 'audit':
      if (full) morph(body, auditShell(p));
      void loadAudit(p);
      break;
    case 'cost':
      morph(body, costView(p));
      break;
    case 'workflow':
      morph(body, workflowView(p));
      if (full) void loadArtifacts(p);
      break;
    case 'a2a':
      morph(body, a2aView(p));
      break;
    case 'events':
      morph(body, eventsView(p));
      break;
    default: {
      morph(body, treeView(p));
      const host = document.getElementById('vtree');
      if (host) tree.draw(host, rowsOf(p), p.selected);
      drawSession(p);
    }
  }
  p.dirty = false;
  centreCharts();
}

/** Scrolls each diagram to its current state when that changed (a person's own scrolling is left alone otherwise). */
const centred = new WeakMap<Element, string>();
function centreCharts(): void {
  for (const box of document.querySelectorAll<HTMLElement>('.chartbox')) {
    const active = box.querySelector<SVGGraphicsElement>('.st.active');
    const id = active?.dataset.state ?? '';
    // morph() keeps the box's element while it is drawn: what it was centred on is remembered with it
    if (!active || centred.get(box) === id) continue;
    centred.set(box, id);
    const r = active.getBBox();
    box.scrollLeft = Math.max(0, r.x + r.width / 2 - box.clientWidth / 2);
    box.scrollTop = Math.max(0, r.y + r.height / 2 - box.clientHeight / 2);
  }
}

// ---------------------------------------------------------------------------------------------
// tree and session

const BADGE_TEXT: Record<Badge, string> = { permission: 'waiting for permission', question: 'waiting for an answer', inquiry: 'idle: inquiry', model: 'model switched', stuck: 'stuck', paused: 'paused' };

/**
 * A link to a trace in the tracing backend (--trace-url), at a session's first span: the run's
 * trace id is in its log, a session's span id derives from the run and the session. Without a
 * template, the trace id alone (to paste into the backend's search).
 */
function traceLink(runId: string, traceId: string | null, sessionId: string, cls = ''): string {
  if (!traceId) return '';
  const spanId = spanIdOf(runId, sessionId);
  const label = sessionId === 'orchestrator' ? 'the run' : sessionId;
  if (!info?.traceUrl) return `<span class="${cls} dim" title="trace of ${esc(label)} (a2a studio --trace-url links it to your tracing backend)">trace ${esc(traceId.slice(0, 8))}…</span>`;
  const href = info.traceUrl.replaceAll('{traceId}', traceId).replaceAll('{spanId}', spanId);
  return `<a class="${cls}" href="${esc(href)}" target="_blank" rel="noopener" aria-label="Trace of ${esc(label)} in the tracing backend">trace ${esc(traceId.slice(0, 8))}…</a>`;
}

/** A session's model: its profile, and the model that answered its last call (a session on the default profile has one too). */
function modelChip(x: SessionExtra | undefined): string {
  const profile = x?.model ?? x?.answeredProfile;
  const name = x?.answeredBy;
  if (!profile && !name) return '';
  const text = profile && name && name !== profile ? `${profile} · ${name}` : (profile ?? name)!;
  return `<span class="chip" title="model${profile ? ` profile ${profile}` : ''}${name ? `, answered by ${name}` : ''}">${esc(text)}</span>`;
}

/** One row of the tree: what its button shows, and its name for assistive technology. */
function treeRow(p: RunPage, row: TreeRow): { html: string; label: string } {
  const v = p.run.view;
  const n = v.nodes.get(row.id)!;
  const x = p.run.extras.get(n.id);
  const badges = p.run.badgesOf(n);
  const duration = formatElapsed((n.endedAt ?? v.finishedAt ?? Date.now()) - n.startedAt);
  // a session that delegated to a remote A2A agent: its remote task and where that stands
  const remote = p.run.a2a.delegatedBy(n.id);
  const label = `${n.id}, ${n.agentType}, ${n.status}${badges.length ? `, ${badges.map((b) => BADGE_TEXT[b]).join(', ')}` : ''}${remote ? `, remote task ${remote.taskId} ${remote.state}` : ''}`;
  const html = `<span class="id">${esc(n.id)}</span><span class="chip">${esc(n.agentType)}</span>${modelChip(x)}<span class="s-${esc(n.status)}">${esc(n.status)}</span><span class="chip" title="depth">d${n.depth}</span>${x?.host ? `<span class="chip" title="host">@${esc(x.host)}</span>` : ''}${
    remote ? `<span class="chip remote" title="remote A2A task at ${esc(remote.url)}">⇄ <span class="${a2aStateClass(remote.state)}">${esc(remote.state)}</span> ${esc(remote.taskId.slice(0, 8))}</span>` : ''
  }<span class="dim">${duration}</span>${n.costUsd ? `<span class="dim">${usd(n.costUsd)}</span>` : ''}${badges.map((b) => `<span class="badge b-${b}">${BADGE_TEXT[b]}</span>`).join('')}${n.note ? `<span class="dim note" title="${esc(n.note)}">${esc(n.note)}</span>` : ''}`;
  return { html, label };
}

/** The tree (rows drawn by `tree`, test/bench/studio.ts measures it at 10,000 sessions) and the selected session. */
const tree = new VirtualTree(
  (row) => treeRow(page!, row),
  () => render(false),
);

/** The rows of the run shown, flattened again only when a node was added or a row folded. */
let flat: { view: unknown; shape: number; foldings: number; rows: TreeRow[] } | null = null;
function rowsOf(p: RunPage): TreeRow[] {
  const v = p.run.view;
  if (flat?.view !== v || flat.shape !== v.shape || flat.foldings !== tree.foldings) flat = { view: v, shape: v.shape, foldings: tree.foldings, rows: flatten(v, tree.folded) };
  return flat.rows;
}

/** The tree tab's frame: the tree and the session are drawn into it by code of their own (`data-own`). */
function treeView(p: RunPage): string {
  const v = p.run.view;
  const box = v.roots.length ? `<div class="vtree" id="vtree" role="tree" aria-label="Sub-task tree" data-own></div>` : `<p class="dim">no worker deployed yet</p>`;
  return `<div class="cols"><section class="panel" aria-label="Tree">${box}${v.skipped.length ? `<p class="dim">skipped: ${v.skipped.map((s) => `${esc(s.taskId)} (${esc(s.reason)})`).join(', ')}</p>` : ''}</section>
    <section class="panel" aria-label="Session" id="session" data-own></section></div>`;
}

/** The selected session, drawn again only when something of it changed (its events, its state, what the page knows around it). */
let sessionDrawn: { el: Element; key: string } | null = null;
function drawSession(p: RunPage): void {
  const el = document.getElementById('session');
  if (!el) return;
  const n = p.selected ? p.run.view.nodes.get(p.selected) : undefined;
  const task = n ? p.status?.tasks.find((t) => t.workerId === n.id || t.id === n.taskId) : undefined;
  const key = n
    ? [p.run === p.live ? 'live' : `at ${p.at}`, n.id, p.run.eventCountOf(n.id), n.status, n.endedAt, p.record?.status ?? p.run.view.status, task?.id, info?.inspectorListening, Boolean(charts)].join('|')
    : 'none';
  if (sessionDrawn?.el === el && sessionDrawn.key === key) return;
  morph(el, n ? sessionView(p, n) : '<p class="dim">select a worker or sub-task to see its transcript, permissions and statechart</p>');
  sessionDrawn = { el, key };
}

function sessionView(p: RunPage, n: NodeView): string {
  const worker = n.depth === 0 && p.run.view.roots.includes(n.id);
  const task = worker ? p.status?.tasks.find((t) => t.workerId === n.id || t.id === n.taskId) : undefined;
  const running = (p.record?.status ?? p.run.view.status) === 'running';
  const transcript = p.run.transcript(n.id);
  const perms = p.run.permissions(n.id);
  const chart = charts?.[worker ? 'worker' : 'subtask'];
  const manage =
    worker && task && running && !inPast(p)
      ? `<h3>Manage ${esc(task.id)}</h3>
      <div class="row"><label for="m-redirect">Redirect</label><input id="m-redirect" size="32" placeholder="new instructions" aria-label="Instructions to redirect ${esc(task.id)} with"><button data-act="redirect" data-task="${esc(task.id)}">Redirect</button></div>
      <div class="row"><label for="m-reassign">Reassign to</label><input id="m-reassign" size="16" placeholder="@debugger" aria-label="Agent type to reassign ${esc(task.id)} to"><button data-act="reassign" data-task="${esc(task.id)}">Reassign</button></div>
      <div class="row"><label for="m-model">Model profile</label><input id="m-model" size="16" placeholder="smart" aria-label="Model profile for ${esc(task.id)}"><button data-act="switch_model" data-task="${esc(task.id)}">Change model</button></div>
      <div class="row"><button data-act="resume" data-task="${esc(task.id)}">Resume worker</button><label for="m-reinit" class="sr">Instructions to start over with</label><input id="m-reinit" size="24" placeholder="start over with…"><button data-act="reinitialize" data-task="${esc(task.id)}">Start over</button></div>`
      : '';
  return `<h2 style="font-size:16px;margin:4px 0">${esc(n.id)} <span class="chip">${esc(n.agentType)}</span> <span class="s-${esc(n.status)}">${esc(n.status)}</span></h2>
    <p class="dim" style="margin:0 0 6px">parent ${esc(n.parentId)} · depth ${n.depth}${n.taskId ? ` · task ${esc(n.taskId)}` : ''} ·
      ${p.run.traceId ? `${traceLink(p.runId, p.run.traceId, n.id)} · ` : ''}${info?.inspectorListening ? `<a href="${esc(info.inspectorUrl)}" target="_blank" rel="noopener" aria-label="Open in the Stately inspector (the run started with --inspect)">open in the Stately inspector</a>` : '<span class="dim" title="nothing listens at the inspector\'s address">to watch it in the Stately inspector: <code>a2a inspect</code>, and the run with <code>--inspect</code></span>'}</p>
    ${manage}
    ${remoteTaskView(p, n)}
    <h3>Transcript</h3><div class="transcript" aria-label="Transcript of ${esc(n.id)}">${transcript
      .map(
        (t) => `<div class="msg ${t.kind}${t.error ? ' error' : ''}"><header>${time(t.ts)} · ${esc(t.title)}</header>${folded(t.text)}${(t.calls ?? [])
          .map((c) => `<div class="call">→ ${esc(c.name)}(${folded(c.arguments)})</div>`)
          .join('')}</div>`,
      )
      .join('')}</div>
    <h3>Permissions</h3>${perms.length ? `<ul>${perms.map((e) => `<li>${time(e.ts)} ${esc(permissionLine(e))}</li>`).join('')}</ul>` : '<p class="dim">none asked</p>'}
    <h3>Statechart <span class="dim" style="font-weight:normal">(${worker ? 'worker' : 'subtask'}, now in ${esc(p.run.chartState(n))})</span></h3>
    ${chart ? `<div class="chartbox">${chartSvg(chart, { current: p.run.chartState(n), trail: trailOf(p.run, n) }, `${worker ? 'worker' : 'subtask'} ${n.id}`)}</div>` : '<p class="dim">loading…</p>'}`;
}

/** A long text of a transcript: its beginning, and the rest folded (a click away, never cut). */
function folded(text: string): string {
  const SHOWN = 1_200;
  if (text.length <= SHOWN + 300) return esc(text);
  return `${esc(text.slice(0, SHOWN))}<details class="more"><summary>${(text.length - SHOWN).toLocaleString('en')} more characters</summary>${esc(text.slice(SHOWN))}</details>`;
}

/** A delegating session's remote A2A task: where it is, where it stands, what its agent said last. */
function remoteTaskView(p: RunPage, n: NodeView): string {
  const t = p.run.a2a.delegatedBy(n.id);
  if (!t) return '';
  return `<h3>Remote A2A task</h3><dl class="remote" aria-label="Remote A2A task of ${esc(n.id)}">
      <dt>agent</dt><dd>${esc(t.url)}</dd>
      <dt>task</dt><dd>${esc(t.taskId)} <span class="dim">context ${esc(t.contextId)}</span></dd>
      <dt>state</dt><dd><span class="${a2aStateClass(t.state)}">${esc(t.state)}</span> <span class="dim">${esc(t.states.join(' → '))}</span></dd>
      ${t.message ? `<dt>its agent said</dt><dd>${esc(t.message)}</dd>` : ''}
      ${t.error ? `<dt>given up</dt><dd class="bad">${esc(t.error)}</dd>` : ''}
    </dl>`;
}

/** The run's events as lines, each a link to the run as it was then; the slider's event marked. */
function eventsView(p: RunPage): string {
  const events = p.live.events;
  const at = inPast(p) ? p.at! : events.length - 1;
  const from = Math.max(0, Math.min(at - 500, events.length - 1000));
  const lines = events.slice(from, from + 1000).map((e, i) => {
    const k = from + i;
    return `<a href="${esc(linkAt(p, k, 'events'))}" class="ev${k === at ? ' here' : ''}${k > at ? ' later' : ''}"${k === at ? ' aria-current="true"' : ''}>${esc(`${String(k + 1).padStart(5)}  ${time(e.ts)}  ${eventLine(e)}`)}</a>`;
  });
  return `<div class="panel events" aria-label="Events" tabindex="0">${from > 0 ? `<div class="dim">${from} earlier events (move the slider to see them)</div>` : ''}${lines.join('')}</div>`;
}

// ---------------------------------------------------------------------------------------------
// inbox and queue

/** The inbox as it was at the slider's event, told by the log: the people's open items and the orchestrator's queue, read only. */
function pastInboxView(p: RunPage): string {
  const items = [...p.run.asked.values()];
  const queued = queueOf(p.run.events);
  return `<p class="past-note">the run as it was at event ${p.at! + 1}: nothing here can be answered (<button data-time="live">back to live</button>)</p>
    <section class="panel" aria-label="Waiting for a person"><h2 style="font-size:16px;margin:0">Waiting for a person (${items.length})</h2>
      ${items.length ? `<ul>${items.map((e) => `<li><span class="chip">${esc(e.data.kind)}</span> ${esc(e.data.title)} <span class="dim">from ${esc(e.data.requesterId ?? e.subTaskId)} · asked ${time(e.ts)} · id ${esc(e.data.id)}</span></li>`).join('')}</ul>` : '<p class="dim">nothing waited for a person</p>'}
    </section>
    <section class="panel" aria-label="Orchestrator inbox" style="margin-top:12px"><h2 style="font-size:16px;margin:0 0 6px">Orchestrator inbox</h2>
      ${queued.length ? `<table aria-label="Queued messages"><thead><tr><th>priority</th><th>type</th><th>task</th><th>from</th><th>id</th></tr></thead><tbody>${queued.map((q) => `<tr><td>${esc(q.priority)}</td><td>${esc(q.type)}</td><td>${esc(q.taskId)}</td><td>${esc(q.subTaskId ?? '')}</td><td class="dim">${esc(q.id)}</td></tr>`).join('')}</tbody></table>` : '<p class="dim">empty</p>'}
    </section>`;
}

/**
 * An MCP server's question (elicitation): its message, the fields it wants, a box for the answer (a
 * JSON object of those fields, or the one value when it wants one) and Decline. Approving without
 * an answer is not offered: the server gets what was typed, checked against its schema by the run.
 */
function elicitationForm(i: PendingItem, n: number): string {
  const ask = i.request!.elicitation!;
  const props = (ask.requestedSchema as { properties?: Record<string, { type?: string; description?: string; enum?: unknown[] }>; required?: string[] }).properties ?? {};
  const required = new Set((ask.requestedSchema as { required?: string[] }).required ?? []);
  const fields = Object.entries(props).map(([name, f]) => `<code>${esc(name)}</code>${required.has(name) ? '*' : ''} <span class="dim">${esc(f.enum ? f.enum.join(' | ') : (f.type ?? ''))}${f.description ? ` · ${esc(f.description)}` : ''}</span>`);
  return `<span class="elicit"><b>${esc(ask.server)}</b> asks: ${esc(ask.message)}${fields.length ? `<br><span class="dim">wants</span> ${fields.join(', ')}` : ''}</span>
    <label class="sr" for="answer-${esc(i.id)}">Answer to item ${n}: ${esc(ask.message)}</label><input id="answer-${esc(i.id)}" size="30" placeholder="${esc(Object.keys(props).length === 1 ? 'the value' : `{${Object.keys(props).map((k) => `"${k}": …`).join(', ')}}`)}">
    <button class="primary" data-act="elicit" data-id="${esc(i.id)}" aria-label="Send the answer to ${esc(ask.server)}">Answer</button>
    <button class="danger" data-act="deny" data-id="${esc(i.id)}" aria-label="Decline ${esc(ask.server)}'s question">Decline</button>`;
}

function inboxView(p: RunPage): string {
  if (inPast(p)) return pastInboxView(p);
  const status = p.status;
  const running = (p.record?.status ?? p.run.view.status) === 'running';
  if (!status) return '<p class="dim">the run has written no status yet</p>';
  const items = running ? [...status.pending] : [];
  // permissions before questions (a session is blocked on each), then the one whose default applies soonest
  const rank = (i: PendingItem) => (i.kind === 'permission' ? 0 : 1);
  items.sort((a, b) => rank(a) - rank(b) || a.askedAt + a.timeoutMs - (b.askedAt + b.timeoutMs));
  const groups = new Map<string, PendingItem[]>();
  for (const i of items) {
    const key = `${i.planId ?? p.record?.planId ?? ''}\u0000${i.taskId}`;
    groups.set(key, [...(groups.get(key) ?? []), i]);
  }
  const position = (i: PendingItem) => status.pending.findIndex((x) => x.id === i.id) + 1;
  const permissions = items.filter((i) => i.kind === 'permission').length;
  const left = (i: PendingItem) => {
    const ms = i.askedAt + i.timeoutMs - Date.now();
    return ms > 0 ? `${formatElapsed(ms)} left, then ${i.onTimeout.text}` : `default applies: ${i.onTimeout.text}`;
  };
  const queued = [...(status.inbox.inFlight ? [{ ...status.inbox.inFlight, handling: true }] : []), ...status.inbox.queued.map((q) => ({ ...q, handling: false }))];
  return `<section class="panel" aria-label="Waiting for a person">
      <div class="row"><h2 style="font-size:16px;margin:0">Waiting for a person (${items.length})</h2>
      ${permissions > 1 ? `<button data-act="approve_all" class="primary">Approve all ${permissions} permissions</button>` : ''}</div>
      ${items.length === 0 ? '<p class="dim">nothing waits for a person</p>' : ''}
      ${[...groups.entries()]
        .map(([key, list]) => {
          const [plan, taskId] = key.split('\u0000');
          return `<div class="group"><h3>plan ${esc(plan)} · task ${esc(taskId)}</h3>${list
            .map((i) => {
              const n = position(i);
              return `<div class="item" data-item="${esc(i.id)}"><span class="chip">${esc(i.kind)}</span><span class="title">${esc(i.title)}<br><span class="dim">from ${esc(i.requesterId)} · ${esc(left(i))} · id ${esc(i.id)}</span></span>
              ${
                i.request?.elicitation
                  ? elicitationForm(i, n)
                  : i.kind === 'permission'
                  ? `<label class="sr" for="why-${esc(i.id)}">Reason for item ${n}</label><input id="why-${esc(i.id)}" size="14" placeholder="reason (optional)">
                   <button class="primary" data-act="approve" data-id="${esc(i.id)}" aria-label="Approve: ${esc(i.title)}">Approve</button>
                   <button class="danger" data-act="deny" data-id="${esc(i.id)}" aria-label="Deny: ${esc(i.title)}">Deny</button>`
                  : `<label class="sr" for="answer-${esc(i.id)}">Answer to: ${esc(i.title)}</label><input id="answer-${esc(i.id)}" size="28" placeholder="your answer">
                   <button class="primary" data-act="answer" data-id="${esc(i.id)}" aria-label="Send the answer to: ${esc(i.title)}">Answer</button>`
              }</div>`;
            })
            .join('')}</div>`;
        })
        .join('')}
    </section>
    <section class="panel" aria-label="Orchestrator inbox" style="margin-top:12px"><h2 style="font-size:16px;margin:0 0 6px">Orchestrator inbox</h2>
      <p class="dim">depth ${status.inbox.metrics.depth} · accepted ${status.inbox.metrics.accepted} · handled ${status.inbox.metrics.handled}</p>
      ${queued.length ? `<table aria-label="Queued messages"><thead><tr><th></th><th>priority</th><th>type</th><th>task</th><th>from</th><th>id</th></tr></thead><tbody>${queued.map((q) => `<tr><td>${q.handling ? 'handling' : 'queued'}</td><td>${esc(q.priority)}</td><td>${esc(q.type)}</td><td>${esc(q.taskId)}</td><td>${esc(q.subTaskId ?? '')}</td><td class="dim">${esc(q.id)}</td></tr>`).join('')}</tbody></table>` : '<p class="dim">empty</p>'}
    </section>`;
}

// ---------------------------------------------------------------------------------------------
// audit, cost, workflow

function auditShell(p: RunPage): string {
  const f = p.auditFilter;
  const q = (format: string) => `/api/runs/${encodeURIComponent(p.runId)}/audit?format=${format}${filterQuery(p)}`;
  return `<section class="panel" aria-label="Audit trail"><form class="row" id="audit-form">
      <label for="f-actor">Actor</label><input id="f-actor" value="${esc(f.actor)}" size="14" placeholder="w-api.1">
      <label for="f-action">Action</label><input id="f-action" value="${esc(f.action)}" size="18" placeholder="permission.decided">
      <label for="f-decision">Decision</label><select id="f-decision"><option value="">any</option><option value="approved" ${f.decision === 'approved' ? 'selected' : ''}>approved</option><option value="denied" ${f.decision === 'denied' ? 'selected' : ''}>denied</option></select>
      <button type="submit">Filter</button>
      <a href="${esc(q('json'))}" download>Export JSON</a> <a href="${esc(q('md'))}" download>Export Markdown</a>
    </form><div id="audit-rows"><p class="dim">loading…</p></div></section>`;
}

/** The audit filters as query parameters, each with its leading `&`. */
const filterQuery = (p: RunPage) =>
  Object.entries(p.auditFilter)
    .filter(([, v]) => v)
    .map(([k, v]) => `&${k}=${encodeURIComponent(v)}`)
    .join('');

let auditLoading = false;
/** Asked again while loading (new filters): loaded again once the load in progress ends. */
let auditAgain = false;
async function loadAudit(p: RunPage): Promise<void> {
  if (auditLoading) {
    auditAgain = true;
    return;
  }
  auditLoading = true;
  auditAgain = false;
  try {
    const rows = await api<RunEvent[]>(`/api/runs/${encodeURIComponent(p.runId)}/audit?${filterQuery(p).slice(1)}`);
    const el = document.getElementById('audit-rows');
    if (!el || page !== p || p.tab !== 'audit') return;
    el.innerHTML = `<p class="dim">${rows.length} record(s)</p><table aria-label="Audit records"><thead><tr><th>time</th><th>operation</th><th>session</th><th>task</th><th>what</th></tr></thead><tbody>${rows
      .map((r) => `<tr><td>${time(r.ts)}</td><td>${esc(r.type)}</td><td>${esc(r.subTaskId ?? '')}</td><td>${esc(r.taskId ?? '')}</td><td>${esc(describeEvent(r) ?? (r.type.startsWith('permission.') || r.type.startsWith('human.') ? permissionLine(r) : JSON.stringify(r.data).slice(0, 200)))}</td></tr>`)
      .join('')}</tbody></table>`;
  } catch (error) {
    toast((error as Error).message, true);
  } finally {
    auditLoading = false;
    if (auditAgain && page === p && p.tab === 'audit') {
      void loadAudit(p);
    }
  }
}

function costView(p: RunPage): string {
  const v = p.run.view;
  const b = p.run.budgets;
  const bar = (spent: number, limit: number | undefined) => (limit ? `<span class="bar${spent >= limit ? ' over' : ''}" role="img" aria-label="${usd(spent)} of ${usd(limit)}"><span style="width:${Math.min(100, (spent / limit) * 100).toFixed(1)}%"></span></span> ${usd(spent)} of ${usd(limit)}` : usd(spent));
  const sessions = [...v.nodes.values()].filter((n) => n.costUsd > 0).sort((a, c) => c.costUsd - a.costUsd);
  return `<section class="panel" aria-label="Cost"><h2 style="font-size:16px;margin:0 0 6px">Cost</h2>
    <p>run: ${bar(v.costUsd, b.runUsd)}${b.runUsd ? '' : ' <span class="dim">(no run budget set: models.budgets.runUsd)</span>'}</p>
    <h3>Workers (with their sub-tasks)</h3><table aria-label="Cost per worker"><thead><tr><th>worker</th><th>task</th><th>spent</th></tr></thead><tbody>
    ${p.run.workerCosts().map((w) => `<tr><td>${esc(w.id)}</td><td>${esc(w.taskId ?? '')}</td><td>${bar(w.costUsd, b.workerUsd)}</td></tr>`).join('')}</tbody></table>
    <h3>Sessions (own model calls)</h3>${sessions.length ? `<table aria-label="Cost per session"><thead><tr><th>session</th><th>agent</th><th>spent</th></tr></thead><tbody>${sessions
      .slice(0, 200)
      .map((n) => `<tr><td>${esc(n.id)}</td><td>${esc(n.agentType)}</td><td>${usd(n.costUsd)}</td></tr>`)
      .join('')}</tbody></table>${sessions.length > 200 ? `<p class="dim">and ${sessions.length - 200} more</p>` : ''}` : '<p class="dim">no priced model call yet (the scripted model costs nothing; price a profile to see spending)</p>'}</section>`;
}

async function loadArtifacts(p: RunPage): Promise<void> {
  try {
    p.artifacts = await api<Array<Record<string, unknown>>>(`/api/runs/${encodeURIComponent(p.runId)}/artifacts`);
    if (page === p && p.tab === 'workflow') render(false);
  } catch (error) {
    toast((error as Error).message, true);
  }
}

function workflowView(p: RunPage): string {
  const w = p.run.workflow;
  const s = inPast(p) ? undefined : p.status?.workflow;
  if (!w && !s) return '<p class="dim">this run is not a workflow (a2a run --workflow sdlc "&lt;goal&gt;" runs one)</p>';
  const state = w?.state ?? s?.state ?? 'IDLE';
  const chart = charts?.sdlcWorkflow;
  const artifacts = p.artifacts;
  return `<div class="cols"><section class="panel" aria-label="Workflow state"><h2 style="font-size:16px;margin:0">Workflow: ${esc(state)}${w?.round != null ? ` (round ${w.round})` : ''}</h2>
      ${s ? `<p class="dim">active agents: ${s.activeAgents.map((a) => `${esc(a.role)} (${esc(a.workerId)})`).join(', ') || 'none'}${s.error ? ` · error: ${esc(s.error)}` : ''}</p>` : ''}
      ${chart ? `<div class="chartbox">${chartSvg(chart, { current: state, trail: p.run.events.filter((e) => e.type === 'workflow.state').map((e) => String(e.data.state)) }, 'sdlc workflow')}</div>` : ''}</section>
    <section class="panel" aria-label="Artifacts and decisions"><h3>Artifacts</h3>
      ${artifacts && artifacts.length ? `<table aria-label="Artifacts"><thead><tr><th>artifact</th><th>version</th><th>status</th><th>by</th><th>summary</th></tr></thead><tbody>${artifacts.map((a) => `<tr><td>${esc(a.id)}</td><td>v${esc(a.version)}</td><td>${esc(a.status)}</td><td>${esc(a.producerRole ?? a.producer)}</td><td>${esc((a.summary as { brief?: string } | undefined)?.brief ?? '')}</td></tr>`).join('')}</tbody></table>` : w?.artifacts.length ? `<ul>${w.artifacts.map((a) => `<li>${esc(a.artifactId)} v${a.version} [${esc(a.status)}] by ${esc(a.producerRole)}: ${esc(a.brief)}</li>`).join('')}</ul>` : '<p class="dim">none yet</p>'}
      <h3>Organiser's decisions</h3>${w?.decisions.length ? `<ol>${w.decisions.map((d) => `<li>${time(d.ts)} in ${esc(d.state)}: <b>${esc(d.action)}</b>${d.nextState ? ` → ${esc(d.nextState)}` : ''}<br><span class="dim">${esc(d.reasoning)}</span></li>`).join('')}</ol>` : '<p class="dim">none yet</p>'}
      ${w?.refused.length ? `<h3>Refused</h3><ul>${w.refused.map((r) => `<li>${esc(r.code)}: ${esc(r.reason)}</li>`).join('')}</ul>` : ''}</section></div>`;
}

// ---------------------------------------------------------------------------------------------
// A2A: the task this run serves, and the tasks its sessions delegated

function a2aView(p: RunPage): string {
  const { served, delegated } = p.run.a2a;
  const runLink = (id: string) => `<a href="#/run/${encodeURIComponent(p.runId)}/tree/${encodeURIComponent(id)}">${esc(id)}</a>`;
  const servedRows = [...served.values()];
  const delegatedRows = [...delegated.values()];
  return `<section class="panel" aria-label="A2A tasks">
    <h2 style="font-size:16px;margin:0 0 6px">Served to an A2A client</h2>
    ${
      servedRows.length
        ? `<table aria-label="Served A2A tasks"><thead><tr><th>task</th><th>context</th><th>state</th><th>client</th><th>agent</th><th>run</th><th>messages</th></tr></thead><tbody>${servedRows
            .map(
              (t) => `<tr data-a2a-task="${esc(t.taskId)}"><td>${esc(t.taskId)}</td><td>${esc(t.contextId)}</td><td class="${a2aStateClass(t.state)}">${esc(t.state)}</td><td>${esc(t.owner ?? '–')}</td><td>@${esc(t.agent)}</td><td>${esc(t.runId)}</td><td>${t.messages.length + t.dropped}</td></tr>`,
            )
            .join('')}</tbody></table>
          ${servedRows
            .map(
              (t) => `<h3>Messages of task ${esc(t.taskId)} <span class="dim" style="font-weight:normal">${esc(t.states.join(' → '))}</span></h3>
              <ol class="a2a-messages" aria-label="Messages of A2A task ${esc(t.taskId)}">${t.dropped ? `<li class="dim">${t.dropped} earlier message(s) not shown</li>` : ''}${t.messages
                .map((m) => `<li class="${m.direction}"><span class="dim">${time(m.ts)} · ${m.direction === 'in' ? 'client →' : '← a2a'} · ${esc(m.state)}</span> ${esc(m.text)}</li>`)
                .join('')}</ol>`,
            )
            .join('')}`
        : '<p class="dim">this run serves no A2A task (a2a serve --a2a starts one run per task it is sent)</p>'
    }
    <h2 style="font-size:16px;margin:12px 0 6px">Delegated to remote A2A agents</h2>
    ${
      delegatedRows.length
        ? `<table aria-label="Delegated A2A tasks"><thead><tr><th>session</th><th>agent URL</th><th>remote task</th><th>context</th><th>state</th><th>last word</th></tr></thead><tbody>${delegatedRows
            .map(
              (t) => `<tr data-remote-task="${esc(t.taskId)}"><td>${runLink(t.sessionId)} <span class="chip">${esc(t.agentType)}</span></td><td>${esc(t.url)}</td><td>${esc(t.taskId)}</td><td>${esc(t.contextId)}</td><td class="${a2aStateClass(t.state)}">${esc(t.state)}</td><td>${t.error ? `<span class="bad">${esc(t.error)}</span>` : esc(t.message)}</td></tr>`,
            )
            .join('')}</tbody></table>`
        : '<p class="dim">no session of this run delegated to a remote A2A agent (an agent file with <code>remote:</code> makes one)</p>'
    }</section>`;
}

// ---------------------------------------------------------------------------------------------
// the namespace (NATS)

function openNats(): void {
  page = null;
  if (!info?.nats) {
    $main.innerHTML = '<p class="dim">this studio was started without --nats: start it with <code>a2a studio --nats nats://127.0.0.1:4222</code> to see a namespace</p>';
    return;
  }
  $main.innerHTML = '<p class="dim">waiting for the namespace…</p>';
  const source = new EventSource('/api/nats/stream');
  source.addEventListener('open', () => connection('live', 'live'));
  source.addEventListener('error', () => connection('down', 'reconnecting…'));
  source.addEventListener('nats', (m) => drawNats(JSON.parse((m as MessageEvent).data as string) as MonitorSnapshot));
  closeStream = () => source.close();
}

function drawNats(s: MonitorSnapshot): void {
  const node = (n: TreeNode): string => `<li role="treeitem" aria-label="${esc(`${n.id} on ${n.host ?? '?'}, ${n.status}`)}"><span class="id">${esc(n.id)}</span> <span class="chip">${esc(n.agentType)}</span> <span class="s-${esc(n.status)}">${esc(n.status)}</span> <span class="chip">@${esc(n.host ?? '?')}${n.placed ? '' : ' (local)'}</span>${n.remoteTask ? ` <span class="chip" title="remote A2A task at ${esc(n.remoteTask.url)}">⇄ <span class="${a2aStateClass(n.remoteTask.state)}">${esc(n.remoteTask.state)}</span> ${esc(n.remoteTask.taskId.slice(0, 8))}</span>` : ''}${n.restored ? ` <span class="badge b-model">restored ${n.restored}×</span>` : ''} <span class="dim">${formatElapsed(n.elapsedMs)}</span>${n.children.length ? `<ul class="tree" role="group">${n.children.map(node).join('')}</ul>` : ''}</li>`;
  $main.innerHTML = `<h1 style="font-size:18px">Namespace ${esc(info?.nats?.namespace)} <span class="dim" style="font-size:13px">${esc(info?.nats?.servers)}</span></h1>
    <section class="panel" aria-label="Hosts"><h2 style="font-size:16px;margin:0 0 6px">Hosts (${s.metrics.hosts.alive} alive, ${s.metrics.hosts.lost} lost)</h2>
    <table aria-label="Hosts"><thead><tr><th>host</th><th>state</th><th>agents</th><th>load</th><th>last heartbeat</th><th>memory</th></tr></thead><tbody>
    ${s.hosts.map((h) => `<tr data-host="${esc(h.id)}"><td>${esc(h.id)}</td><td class="${h.alive ? 's-success' : 's-failed'}">${esc(h.state)}</td><td>${esc(h.agents.join(', '))}</td><td>${h.running}/${h.capacity}</td><td>${formatElapsed(h.lastSeenMs)} ago</td><td>${h.memory ? `${Math.round(h.memory.rss / 1048576)} MB` : ''}</td></tr>`).join('')}
    </tbody></table></section>
    <section class="panel" aria-label="Live runs" style="margin-top:12px"><h2 style="font-size:16px;margin:0 0 6px">Runs</h2>
    ${s.runs.length ? s.runs.map((r) => `<h3><a href="#/run/${encodeURIComponent(r.runId)}" aria-label="Open run ${esc(r.runId)}">${esc(r.runId)}</a> <span class="s-${esc(r.status)}">${esc(r.status)}</span> <span class="dim">${r.sessions} sessions · processes ${esc(r.processes.join(', '))}</span></h3>${(r.a2a?.served ?? []).map((t) => `<p class="a2a-served" aria-label="A2A task ${esc(t.taskId)} of ${esc(r.runId)}">⇄ A2A task ${esc(t.taskId)} <span class="${a2aStateClass(t.state)}">${esc(t.state)}</span>${t.owner ? ` · client ${esc(t.owner)}` : ''} · @${esc(t.agent)}</p>`).join('')}<ul class="tree" role="tree" aria-label="Tree of ${esc(r.runId)}">${r.tree.map(node).join('')}</ul>`).join('') : '<p class="dim">no run heard yet</p>'}
    <p class="dim">completion ${s.metrics.completionRate === null ? '–' : `${Math.round(s.metrics.completionRate * 100)}%`} · sessions ${s.metrics.sessions.spawned} spawned, ${s.metrics.sessions.running} running · queue latency p50 ${s.metrics.queueLatencyMs.p50 ?? '–'} ms · invalid messages ${s.invalidMessages}</p></section>`;
}

// ---------------------------------------------------------------------------------------------
// actions (one listener for the whole page: the views are redrawn as events arrive)

document.addEventListener('click', (e) => {
  const target = (e.target as HTMLElement).closest<HTMLElement>('button[data-tab], button[data-node], button[data-act], button[data-time]');
  if (!target || !page) return;
  const p = page;
  if (target.dataset.time) {
    const now = inPast(p) ? p.at! : p.live.events.length - 1;
    travel(p, target.dataset.time === 'live' ? null : now + (target.dataset.time === 'back' ? -1 : 1));
    return;
  }
  if (target.dataset.tab) {
    location.hash = inPast(p) ? linkAt(p, p.at!, target.dataset.tab) : `#/run/${encodeURIComponent(p.runId)}/${target.dataset.tab}${p.selected && target.dataset.tab === 'tree' ? `/${encodeURIComponent(p.selected)}` : ''}`;
    return;
  }
  if (target.dataset.node) {
    p.selected = target.dataset.node;
    history.replaceState(null, '', inPast(p) ? linkAt(p, p.at!, 'tree') : `#/run/${encodeURIComponent(p.runId)}/tree/${encodeURIComponent(p.selected)}`);
    render(false);
    document.getElementById(`node-${p.selected}`)?.focus();
    return;
  }
  void act(p, target);
});

// the slider, dragged or stepped with its arrow keys
document.addEventListener('input', (e) => {
  const slider = e.target as HTMLInputElement;
  if (slider.id !== 'time' || !page) return;
  travel(page, Number(slider.value));
});

// [ and ] step through the run's events, L goes back to live (not while typing)
document.addEventListener('keydown', (e) => {
  const p = page;
  const t = e.target as HTMLElement;
  if (!p || e.ctrlKey || e.metaKey || e.altKey || t instanceof HTMLTextAreaElement || (t instanceof HTMLInputElement && t.type !== 'range') || t instanceof HTMLSelectElement) return;
  const now = inPast(p) ? p.at! : p.live.events.length - 1;
  if (e.key === '[') travel(p, now - 1);
  else if (e.key === ']') travel(p, now + 1);
  else if (e.key === 'l' || e.key === 'L') travel(p, null);
  else return;
  e.preventDefault();
  document.getElementById('time')?.focus();
});

document.addEventListener('submit', (e) => {
  if ((e.target as HTMLElement).id !== 'audit-form' || !page) return;
  e.preventDefault();
  const value = (id: string) => (document.getElementById(id) as HTMLInputElement | HTMLSelectElement | null)?.value.trim() ?? '';
  page.auditFilter = { actor: value('f-actor'), action: value('f-action'), decision: value('f-decision') };
  render(true);
});

async function act(p: RunPage, button: HTMLElement): Promise<void> {
  const act = button.dataset.act!;
  const input = (id: string) => (document.getElementById(id) as HTMLInputElement | null)?.value.trim() ?? '';
  let body: Record<string, unknown>;
  switch (act) {
    case 'approve':
    case 'deny': {
      const reason = input(`why-${button.dataset.id}`);
      body = { command: 'answer', id: button.dataset.id, approved: act === 'approve', ...(reason ? { reason } : {}) };
      break;
    }
    case 'answer':
      body = { command: 'answer', id: button.dataset.id, text: input(`answer-${button.dataset.id}`) };
      break;
    case 'elicit':
      body = { command: 'answer', id: button.dataset.id, approved: true, text: input(`answer-${button.dataset.id}`) };
      break;
    case 'approve_all':
    case 'pause':
    case 'unpause':
      body = { command: act };
      break;
    case 'stop':
      if (Date.now() - p.stopArmedAt >= 10_000) {
        p.stopArmedAt = Date.now();
        render(false);
        document.querySelector<HTMLButtonElement>('button[data-act="stop"]')?.focus();
        return;
      }
      p.stopArmedAt = 0;
      body = { command: 'stop' };
      break;
    case 'redirect':
      body = { command: 'redirect', taskId: button.dataset.task, instructions: input('m-redirect') };
      break;
    case 'reassign':
      body = { command: 'reassign', taskId: button.dataset.task, agent: input('m-reassign') };
      break;
    case 'switch_model':
      body = { command: 'switch_model', taskId: button.dataset.task, profile: input('m-model') };
      break;
    case 'reinitialize':
      body = { command: 'reinitialize', taskId: button.dataset.task, instructions: input('m-reinit') };
      break;
    case 'resume':
      body = { command: 'resume', taskId: button.dataset.task };
      break;
    default:
      return;
  }
  button.setAttribute('disabled', '');
  try {
    const reply = await api<{ ok: boolean; message: string }>(`/api/runs/${encodeURIComponent(p.runId)}/control`, { method: 'POST', body });
    toast(reply.message);
  } catch (error) {
    toast((error as Error).message, true);
  } finally {
    button.removeAttribute('disabled');
    render(true);
  }
}

// ---------------------------------------------------------------------------------------------

async function start(): Promise<void> {
  try {
    [info, charts] = await Promise.all([api<Info>('/api/info'), api<Record<string, GraphJson>>('/api/charts')]);
  } catch (error) {
    connection('down', 'no access');
    $main.innerHTML = `<p>${esc((error as Error).message)}</p>`;
    return;
  }
  document.getElementById('where')!.textContent = info.workspace;
  if (info.nats) document.getElementById('nav-nats')!.hidden = false;
  window.addEventListener('hashchange', route);
  route();
  // durations and time left age even when nothing arrives
  window.setInterval(() => {
    if (page && !inPast(page) && (page.record?.status ?? page.live.view.status) === 'running' && (page.tab === 'tree' || page.tab === 'inbox')) render(false);
  }, 1_000);
}

void start();
