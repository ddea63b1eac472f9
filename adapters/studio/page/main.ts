/**
 * The studio's page (bundled into page.js by `npm run build`; no framework). Routes:
 *   #/                      the runs of the workspace
 *   #/run/<id>[/<tab>]      a run: tree (and the selected session), inbox, audit, cost, workflow, events
 *   #/nats                  the namespace's hosts and live runs (with --nats)
 * A run's events arrive over server-sent events from the run's log, each with its index; after a
 * reconnect the stream resumes after the last index received, so nothing is lost or repeated.
 * Every change goes through the server's control endpoint (the run's control directory, as
 * `a2a inbox` uses): the page never holds state of its own that the CLI could contradict.
 *
 * Over 600 lines, for a reason: the page is one bundle with no framework, and every view renders
 * from the one open run (`RunPage`) and is redrawn by one `render`, which morphs the DOM in place;
 * the views follow the routes' order (runs, run: tree, session, chart, inbox, audit, cost,
 * workflow; NATS), then the actions.
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
import { StudioRun, permissionLine, type Badge } from './view.js';

interface Info {
  workspace: string;
  user: string;
  inspectorUrl: string;
  nats: { servers: string; namespace: string } | null;
}
type RunEntry = RunListEntry;
type PendingItem = HumanItem;
type Status = RunStatus;
type RunRecord = Omit<FileRunRecord, 'summary'>;

const $main = document.getElementById('main')!;
const $conn = document.getElementById('conn')!;
const $toast = document.getElementById('toast')!;

const esc = (v: unknown) => String(v ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
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
  run: StudioRun;
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
  received: () => page?.run.indices.slice() ?? [],
  seqs: () => page?.run.events.map((e) => e.seq) ?? [],
  reconnects: () => page?.reconnects ?? 0,
};

// ---------------------------------------------------------------------------------------------
// routing

function route(): void {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'run' && parts[1] && page?.runId === parts[1] && closeStream) {
    // another view of the open run: its stream goes on
    page.tab = parts[2] ?? 'tree';
    page.selected = parts[3] ?? page.selected;
    render(true);
    return;
  }
  closeStream?.();
  closeStream = null;
  if (refreshTimer) clearInterval(refreshTimer);
  refreshTimer = null;
  if (parts[0] === 'run' && parts[1]) return openRun(parts[1], parts[2] ?? 'tree', parts[3] ?? null);
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

function openRun(runId: string, tab: string, selected: string | null): void {
  const same = page?.runId === runId;
  if (!same || !page) {
    page = { runId, run: new StudioRun(), status: null, record: null, tab, selected, auditFilter: { actor: '', action: '', decision: '' }, dirty: true, last: -1, reconnects: 0, stopArmedAt: 0, artifacts: null };
  } else {
    page.tab = tab;
    page.selected = selected;
  }
  const p = page;
  $main.innerHTML = `<div id="runhead"></div><div class="tabs" role="tablist" aria-label="Run views" id="tabs"></div><div id="body"></div>`;
  connect(p);
  render(true);
}

/** The run's event stream; reopened after `after` whenever it drops (the server restarted, the network blinked). */
function connect(p: RunPage): void {
  let source: EventSource | null = null;
  let retry: number | null = null;
  let closed = false;
  const open = () => {
    source = new EventSource(`/api/runs/${encodeURIComponent(p.runId)}/stream?after=${p.last}`);
    source.addEventListener('open', () => connection('live', 'live'));
    source.addEventListener('run', (m) => {
      const index = Number((m as MessageEvent).lastEventId);
      const event = JSON.parse((m as MessageEvent).data as string) as RunEvent;
      if (p.run.apply(index, event)) {
        p.last = index;
        schedule();
      }
    });
    source.addEventListener('files', (m) => {
      const files = JSON.parse((m as MessageEvent).data as string) as { status?: Status | null; record?: RunRecord | null };
      if (files.status) p.status = files.status;
      if (files.record) p.record = files.record;
      schedule();
    });
    source.addEventListener('error', () => {
      if (closed) return;
      connection('down', 'reconnecting…');
      // a fresh stream from the last index received (EventSource's own retry would resend the first URL's `after`)
      source?.close();
      p.reconnects++;
      console.info(`a2a studio: stream of ${p.runId} dropped after index ${p.last}; reconnecting (${p.reconnects})`);
      retry = window.setTimeout(open, 500);
    });
  };
  open();
  closeStream = () => {
    closed = true;
    if (retry) clearTimeout(retry);
    source?.close();
  };
}

let scheduled = false;
function schedule(): void {
  if (!page) return;
  page.dirty = true;
  if (scheduled) return;
  scheduled = true;
  setTimeout(() => {
    scheduled = false;
    render(false);
  }, 120);
}

const TABS: Array<[string, string]> = [
  ['tree', 'Tree'],
  ['inbox', 'Inbox'],
  ['audit', 'Audit'],
  ['cost', 'Cost'],
  ['workflow', 'Workflow'],
  ['events', 'Events'],
];

function render(full: boolean): void {
  const p = page;
  if (!p) return;
  const head = document.getElementById('runhead');
  const tabs = document.getElementById('tabs');
  const body = document.getElementById('body');
  if (!head || !tabs || !body) return;
  const v = p.run.view;
  const status = p.record?.status ?? v.status;
  const running = status === 'running';
  const nodes = [...v.nodes.values()];
  const ended = nodes.filter((n) => n.endedAt !== null).length;
  const pending = p.status && running ? p.status.pending.length : 0;
  const paused = Boolean(p.record?.paused) || p.run.paused;
  const budget = p.run.budgets.runUsd;
  morph(head, `<div class="runhead">
    <h1>${esc(p.runId)}</h1>
    <span class="stat s-${esc(status)}" aria-label="status">${esc(status)}${paused && running ? ' · paused' : ''}</span>
    <span class="stat">${formatElapsed(((p.record?.finishedAt ?? v.finishedAt) || Date.now()) - (v.startedAt ?? p.record?.startedAt ?? Date.now()))}</span>
    <span class="stat">${ended}/${nodes.length} sessions ended</span>
    <span class="stat">${usd(v.costUsd)}${budget ? ` of ${usd(budget)}` : ''}</span>
    <span class="stat">${pending} waiting for a person</span>
    <span class="row" style="margin-left:auto">
      ${running ? (paused ? `<button data-act="unpause" class="primary">Resume run</button>` : `<button data-act="pause">Pause run</button>`) : ''}
      ${running ? (Date.now() - p.stopArmedAt < 10_000 ? `<button data-act="stop" class="danger" aria-label="Confirm: stop the run now">Confirm stop</button>` : `<button data-act="stop" class="danger" aria-label="Stop the run: cancels every worker and sub-task">Stop run</button>`) : ''}
    </span></div>`);
  morph(tabs, TABS.map(([id, label]) => `<button role="tab" id="tab-${id}" aria-controls="body" aria-selected="${p.tab === id}" data-tab="${id}">${id === 'inbox' && pending ? `${label} (${pending})` : label}</button>`).join(''));
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
    case 'events':
      morph(body, `<div class="panel events" aria-label="Events" tabindex="0">${p.run.events
        .slice(-1000)
        .map((e) => esc(`${time(e.ts)}  ${describeEvent(e) ?? e.type}`))
        .join('\n')}</div>`);
      break;
    default:
      morph(body, treeView(p));
  }
  p.dirty = false;
}

/**
 * Brings `el`'s content to `html` in place. The views are redrawn as events arrive (several a
 * second in a busy run): replacing them would swap a button out from under a click in progress
 * (pressed on one element, released on its replacement: no click), drop the focus and what was
 * typed. Nodes that stay (same kind, same id) keep their identity; only what differs changes.
 */
function morph(el: Element, html: string): void {
  const template = document.createElement('template');
  template.innerHTML = html;
  sync(el, template.content);
}

function sync(into: Node, like: Node): void {
  const have = [...into.childNodes];
  const want = [...like.childNodes];
  for (let i = 0; i < want.length; i++) {
    const w = want[i]!;
    const h = have[i];
    if (!h) {
      into.appendChild(w);
      continue;
    }
    if (h.nodeType !== w.nodeType || h.nodeName !== w.nodeName || (h instanceof Element && h.id !== (w as Element).id)) {
      into.replaceChild(w, h);
      continue;
    }
    if (!(h instanceof Element)) {
      if (h.nodeValue !== w.nodeValue) h.nodeValue = w.nodeValue;
      continue;
    }
    const we = w as Element;
    for (const a of [...h.attributes]) {
      // a <details> the person opened stays open
      if (!we.hasAttribute(a.name) && !(a.name === 'open' && h.nodeName === 'DETAILS')) h.removeAttribute(a.name);
    }
    for (const a of [...we.attributes]) if (h.getAttribute(a.name) !== a.value) h.setAttribute(a.name, a.value);
    sync(h, we);
  }
  for (let i = have.length - 1; i >= want.length; i--) into.removeChild(have[i]!);
}

// ---------------------------------------------------------------------------------------------
// tree and session

const BADGE_TEXT: Record<Badge, string> = { permission: 'waiting for permission', question: 'waiting for an answer', inquiry: 'idle: inquiry', model: 'model switched', stuck: 'stuck', paused: 'paused' };

function treeView(p: RunPage): string {
  const v = p.run.view;
  const now = Date.now();
  const item = (n: NodeView): string => {
    const x = p.run.extras.get(n.id);
    const badges = p.run.badgesOf(n);
    const duration = formatElapsed((n.endedAt ?? v.finishedAt ?? now) - n.startedAt);
    const label = `${n.id}, ${n.agentType}, ${n.status}${badges.length ? `, ${badges.map((b) => BADGE_TEXT[b]).join(', ')}` : ''}`;
    const children = n.children.map((c) => v.nodes.get(c)).filter((c): c is NodeView => Boolean(c));
    return `<li role="treeitem" aria-expanded="${children.length ? 'true' : 'false'}" aria-label="${esc(label)}">
      <button class="node" id="node-${esc(n.id)}" data-node="${esc(n.id)}" aria-current="${p.selected === n.id}">
        <span class="id">${esc(n.id)}</span><span class="chip">${esc(n.agentType)}</span>
        ${x?.model ? `<span class="chip" title="model">${esc(x.model)}</span>` : ''}
        <span class="s-${esc(n.status)}">${esc(n.status)}</span>
        <span class="chip" title="depth">d${n.depth}</span>
        ${x?.host ? `<span class="chip" title="host">@${esc(x.host)}</span>` : ''}
        <span class="dim">${duration}</span>${n.costUsd ? `<span class="dim">${usd(n.costUsd)}</span>` : ''}
        ${badges.map((b) => `<span class="badge b-${b}">${BADGE_TEXT[b]}</span>`).join('')}
        ${n.note ? `<span class="dim" style="font-size:12px">${esc(n.note)}</span>` : ''}
      </button>
      ${children.length ? `<ul class="tree" role="group">${children.map(item).join('')}</ul>` : ''}
    </li>`;
  };
  const roots = v.roots.map((id) => v.nodes.get(id)).filter((n): n is NodeView => Boolean(n));
  const tree = roots.length ? `<ul class="tree" role="tree" aria-label="Sub-task tree">${roots.map(item).join('')}</ul>` : `<p class="dim">no worker deployed yet</p>`;
  const selected = p.selected ? v.nodes.get(p.selected) : undefined;
  return `<div class="cols"><section class="panel" aria-label="Tree">${tree}${v.skipped.length ? `<p class="dim">skipped: ${v.skipped.map((s) => `${esc(s.taskId)} (${esc(s.reason)})`).join(', ')}</p>` : ''}</section>
    <section class="panel" aria-label="Session" id="session">${selected ? sessionView(p, selected) : '<p class="dim">select a worker or sub-task to see its transcript, permissions and statechart</p>'}</section></div>`;
}

function sessionView(p: RunPage, n: NodeView): string {
  const worker = n.depth === 0 && p.run.view.roots.includes(n.id);
  const task = worker ? p.status?.tasks.find((t) => t.workerId === n.id || t.id === n.taskId) : undefined;
  const running = (p.record?.status ?? p.run.view.status) === 'running';
  const transcript = p.run.transcript(n.id);
  const perms = p.run.permissions(n.id);
  const chart = charts?.[worker ? 'worker' : 'subtask'];
  const manage =
    worker && task && running
      ? `<h3>Manage ${esc(task.id)}</h3>
      <div class="row"><label for="m-redirect">Redirect</label><input id="m-redirect" size="32" placeholder="new instructions" aria-label="Instructions to redirect ${esc(task.id)} with"><button data-act="redirect" data-task="${esc(task.id)}">Redirect</button></div>
      <div class="row"><label for="m-reassign">Reassign to</label><input id="m-reassign" size="16" placeholder="@debugger" aria-label="Agent type to reassign ${esc(task.id)} to"><button data-act="reassign" data-task="${esc(task.id)}">Reassign</button></div>
      <div class="row"><label for="m-model">Model profile</label><input id="m-model" size="16" placeholder="smart" aria-label="Model profile for ${esc(task.id)}"><button data-act="switch_model" data-task="${esc(task.id)}">Change model</button></div>
      <div class="row"><button data-act="resume" data-task="${esc(task.id)}">Resume worker</button><label for="m-reinit" class="sr">Instructions to start over with</label><input id="m-reinit" size="24" placeholder="start over with…"><button data-act="reinitialize" data-task="${esc(task.id)}">Start over</button></div>`
      : '';
  return `<h2 style="font-size:16px;margin:4px 0">${esc(n.id)} <span class="chip">${esc(n.agentType)}</span> <span class="s-${esc(n.status)}">${esc(n.status)}</span></h2>
    <p class="dim" style="margin:0 0 6px">parent ${esc(n.parentId)} · depth ${n.depth}${n.taskId ? ` · task ${esc(n.taskId)}` : ''} ·
      <a href="${esc(info?.inspectorUrl ?? '')}" target="_blank" rel="noopener" aria-label="Open in the Stately inspector (run a2a inspect, and the run with --inspect)">open in the Stately inspector</a></p>
    ${manage}
    <h3>Transcript</h3><div class="transcript" aria-label="Transcript of ${esc(n.id)}">${transcript
      .map(
        (t) => `<div class="msg ${t.kind}${t.error ? ' error' : ''}"><header>${time(t.ts)} · ${esc(t.title)}</header>${esc(t.text)}${(t.calls ?? [])
          .map((c) => `<div class="call">→ ${esc(c.name)}(${esc(c.arguments)})</div>`)
          .join('')}</div>`,
      )
      .join('')}</div>
    <h3>Permissions</h3>${perms.length ? `<ul>${perms.map((e) => `<li>${time(e.ts)} ${esc(permissionLine(e))}</li>`).join('')}</ul>` : '<p class="dim">none asked</p>'}
    <h3>Statechart <span class="dim" style="font-weight:normal">(${worker ? 'worker' : 'subtask'}, now in ${esc(p.run.chartState(n))})</span></h3>
    ${chart ? chartView(chart, p.run.chartState(n)) : '<p class="dim">loading…</p>'}`;
}

/** A statechart as nested boxes (compound states hold their children), each with its transitions; the current state and its ancestors marked. */
function chartView(chart: GraphJson, current: string): string {
  const byParent = new Map<string | null, GraphJson['states']>();
  for (const s of chart.states) byParent.set(s.parent, [...(byParent.get(s.parent) ?? []), s]);
  const key = (id: string) => id.split('.').pop()!;
  const activeId = chart.states.find((s) => s.parent !== null && key(s.id) === current)?.id ?? null;
  const onPath = new Set<string>();
  for (let id = activeId; id; ) {
    onPath.add(id);
    id = chart.states.find((s) => s.id === id)?.parent ?? null;
  }
  const box = (s: GraphJson['states'][number]): string => {
    const trs = chart.transitions.filter((t) => t.source === s.id);
    const cls = s.id === activeId ? 'st active' : onPath.has(s.id) ? 'st on-path' : 'st';
    const children = byParent.get(s.id) ?? [];
    const transitions = trs.map((t) => `<div class="tr">${esc(t.event.replace(/^xstate\.after\.(\d+)\..*$/, 'after $1 ms'))} → ${esc(t.targets.map(key).join(', ') || '(self)')}${t.guard ? ` [${esc(t.guard)}]` : ''}</div>`).join('');
    const name = `${esc(key(s.id))}${s.type === 'final' ? ' ◉' : ''}`;
    // a compound state off the current path is folded (a keyboard-reachable <details>): the picture stays readable
    if (children.length && !onPath.has(s.id)) {
      return `<details class="${cls}"><summary class="name">${name} <span class="dim">(${children.length} states)</span></summary>${transitions}${children.map(box).join('')}</details>`;
    }
    return `<div class="${cls}" ${s.id === activeId ? 'aria-current="step"' : ''}><div class="name">${name}</div>${transitions}${children.map(box).join('')}</div>`;
  };
  const root = chart.states.find((s) => s.parent === null);
  return `<div class="chart" aria-label="Statechart ${esc(chart.machine)}">${root ? (byParent.get(root.id) ?? []).map(box).join('') : ''}</div>`;
}

// ---------------------------------------------------------------------------------------------
// inbox and queue

function inboxView(p: RunPage): string {
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
                i.kind === 'permission'
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
async function loadAudit(p: RunPage): Promise<void> {
  if (auditLoading) return;
  auditLoading = true;
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
  const s = p.status?.workflow;
  if (!w && !s) return '<p class="dim">this run is not a workflow (a2a run --workflow sdlc "&lt;goal&gt;" runs one)</p>';
  const state = w?.state ?? s?.state ?? 'IDLE';
  const chart = charts?.sdlcWorkflow;
  const artifacts = p.artifacts;
  return `<div class="cols"><section class="panel" aria-label="Workflow state"><h2 style="font-size:16px;margin:0">Workflow: ${esc(state)}${w?.round != null ? ` (round ${w.round})` : ''}</h2>
      ${s ? `<p class="dim">active agents: ${s.activeAgents.map((a) => `${esc(a.role)} (${esc(a.workerId)})`).join(', ') || 'none'}${s.error ? ` · error: ${esc(s.error)}` : ''}</p>` : ''}
      ${chart ? chartView(chart, state) : ''}</section>
    <section class="panel" aria-label="Artifacts and decisions"><h3>Artifacts</h3>
      ${artifacts && artifacts.length ? `<table aria-label="Artifacts"><thead><tr><th>artifact</th><th>version</th><th>status</th><th>by</th><th>summary</th></tr></thead><tbody>${artifacts.map((a) => `<tr><td>${esc(a.id)}</td><td>v${esc(a.version)}</td><td>${esc(a.status)}</td><td>${esc(a.producerRole ?? a.producer)}</td><td>${esc((a.summary as { brief?: string } | undefined)?.brief ?? '')}</td></tr>`).join('')}</tbody></table>` : w?.artifacts.length ? `<ul>${w.artifacts.map((a) => `<li>${esc(a.artifactId)} v${a.version} [${esc(a.status)}] by ${esc(a.producerRole)}: ${esc(a.brief)}</li>`).join('')}</ul>` : '<p class="dim">none yet</p>'}
      <h3>Organiser's decisions</h3>${w?.decisions.length ? `<ol>${w.decisions.map((d) => `<li>${time(d.ts)} in ${esc(d.state)}: <b>${esc(d.action)}</b>${d.nextState ? ` → ${esc(d.nextState)}` : ''}<br><span class="dim">${esc(d.reasoning)}</span></li>`).join('')}</ol>` : '<p class="dim">none yet</p>'}
      ${w?.refused.length ? `<h3>Refused</h3><ul>${w.refused.map((r) => `<li>${esc(r.code)}: ${esc(r.reason)}</li>`).join('')}</ul>` : ''}</section></div>`;
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
  const node = (n: TreeNode): string => `<li role="treeitem" aria-label="${esc(`${n.id} on ${n.host ?? '?'}, ${n.status}`)}"><span class="id">${esc(n.id)}</span> <span class="chip">${esc(n.agentType)}</span> <span class="s-${esc(n.status)}">${esc(n.status)}</span> <span class="chip">@${esc(n.host ?? '?')}${n.placed ? '' : ' (local)'}</span>${n.restored ? ` <span class="badge b-model">restored ${n.restored}×</span>` : ''} <span class="dim">${formatElapsed(n.elapsedMs)}</span>${n.children.length ? `<ul class="tree" role="group">${n.children.map(node).join('')}</ul>` : ''}</li>`;
  $main.innerHTML = `<h1 style="font-size:18px">Namespace ${esc(info?.nats?.namespace)} <span class="dim" style="font-size:13px">${esc(info?.nats?.servers)}</span></h1>
    <section class="panel" aria-label="Hosts"><h2 style="font-size:16px;margin:0 0 6px">Hosts (${s.metrics.hosts.alive} alive, ${s.metrics.hosts.lost} lost)</h2>
    <table aria-label="Hosts"><thead><tr><th>host</th><th>state</th><th>agents</th><th>load</th><th>last heartbeat</th><th>memory</th></tr></thead><tbody>
    ${s.hosts.map((h) => `<tr data-host="${esc(h.id)}"><td>${esc(h.id)}</td><td class="${h.alive ? 's-success' : 's-failed'}">${esc(h.state)}</td><td>${esc(h.agents.join(', '))}</td><td>${h.running}/${h.capacity}</td><td>${formatElapsed(h.lastSeenMs)} ago</td><td>${h.memory ? `${Math.round(h.memory.rss / 1048576)} MB` : ''}</td></tr>`).join('')}
    </tbody></table></section>
    <section class="panel" aria-label="Live runs" style="margin-top:12px"><h2 style="font-size:16px;margin:0 0 6px">Runs</h2>
    ${s.runs.length ? s.runs.map((r) => `<h3>${esc(r.runId)} <span class="s-${esc(r.status)}">${esc(r.status)}</span> <span class="dim">${r.sessions} sessions · processes ${esc(r.processes.join(', '))}</span></h3><ul class="tree" role="tree" aria-label="Tree of ${esc(r.runId)}">${r.tree.map(node).join('')}</ul>`).join('') : '<p class="dim">no run heard yet</p>'}
    <p class="dim">completion ${s.metrics.completionRate === null ? '–' : `${Math.round(s.metrics.completionRate * 100)}%`} · sessions ${s.metrics.sessions.spawned} spawned, ${s.metrics.sessions.running} running · queue latency p50 ${s.metrics.queueLatencyMs.p50 ?? '–'} ms · invalid messages ${s.invalidMessages}</p></section>`;
}

// ---------------------------------------------------------------------------------------------
// actions (one listener for the whole page: the views are redrawn as events arrive)

document.addEventListener('click', (e) => {
  const target = (e.target as HTMLElement).closest<HTMLElement>('button[data-tab], button[data-node], button[data-act]');
  if (!target || !page) return;
  const p = page;
  if (target.dataset.tab) {
    location.hash = `#/run/${encodeURIComponent(p.runId)}/${target.dataset.tab}${p.selected && target.dataset.tab === 'tree' ? `/${encodeURIComponent(p.selected)}` : ''}`;
    return;
  }
  if (target.dataset.node) {
    p.selected = target.dataset.node;
    history.replaceState(null, '', `#/run/${encodeURIComponent(p.runId)}/tree/${encodeURIComponent(p.selected)}`);
    render(false);
    document.getElementById(`node-${p.selected}`)?.focus();
    return;
  }
  void act(p, target);
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
    if (page && (page.record?.status ?? page.run.view.status) === 'running' && (page.tab === 'tree' || page.tab === 'inbox')) render(false);
  }, 1_000);
}

void start();
