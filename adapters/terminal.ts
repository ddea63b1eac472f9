/**
 * What `a2a run` shows a human: log lines for the events worth reading, and the tree (agent,
 * status, depth, elapsed). On a terminal the tree is redrawn in place under the log; otherwise
 * the log is printed as it happens and the tree once at the end. `--json` uses neither.
 */
import type { RunSummary } from '../machines/orchestrator.machine.js';
import type { RunEvent, Usage } from '../machines/protocol/index.js';
import { decisionText, formatElapsed, oneLine, RunView, type NodeView } from '../actors/observation/runView.js';

/** Where the display writes: a stream or anything with `write`. */
export interface Output {
  write(text: string): unknown;
  columns?: number;
}

interface Palette {
  dim(s: string): string;
  green(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  bold(s: string): string;
}

function palette(enabled: boolean): Palette {
  const wrap = (open: number, close: number) => (s: string) => (enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s);
  return { dim: wrap(2, 22), green: wrap(32, 39), red: wrap(31, 39), yellow: wrap(33, 39), cyan: wrap(36, 39), bold: wrap(1, 22) };
}

function statusColour(p: Palette, status: string): string {
  if (status === 'success') return p.green(status);
  if (status === 'partial') return p.yellow(status);
  if (status === 'failed' || status === 'timeout' || status === 'cancelled') return p.red(status);
  if (status === 'idle' || status === 'paused') return p.yellow(status);
  return p.cyan(status);
}

/** An A2A task's state, coloured as a session's status is. */
function a2aState(p: Palette, state: string): string {
  if (state === 'completed') return p.green(state);
  if (state === 'failed' || state === 'canceled' || state === 'rejected') return p.red(state);
  if (state === 'input-required' || state === 'auth-required') return p.yellow(state);
  return p.cyan(state);
}

/** A log line for the events a human wants to read, or null. */
export function describeEvent(event: RunEvent, p: Palette = palette(false)): string | null {
  const who = event.subTaskId ?? '';
  const d = event.data;
  switch (event.type) {
    case 'run.started':
      return `${p.bold('▶')} run ${event.runId} · plan ${String(d.planId ?? event.planId ?? '')} · ${String(d.tasks ?? '?')} task(s)`;
    case 'worker.deployed':
      return `+ ${who} ${event.agentType} deployed for task ${event.taskId}: ${oneLine(String(d.prompt ?? ''), 70)}`;
    case 'subtask.spawned':
      return `+ ${who} ${event.agentType} spawned by ${event.parentId} (depth ${event.depth}): ${oneLine(String(d.prompt ?? ''), 60)}`;
    case 'subtask.queued':
      return p.dim(`… ${who} waits for a slot (${String(d.reason ?? '')})`);
    case 'subtask.result': {
      const status = String(d.status);
      const ok = status === 'success' || status === 'partial';
      const detail = ok ? oneLine(String(d.output ?? ''), 70) : oneLine(String(d.error ?? ''), 90);
      return `${ok ? p.green('✓') : p.red('✗')} ${who} ${statusColour(p, status)} → ${event.parentId}${detail ? `: ${detail}` : ''}`;
    }
    case 'inquiry.sent':
      return `${p.yellow('?')} ${who} is idle: inquiry ${String(d.attempt ?? '')} sent`;
    case 'inquiry.answered':
      return `${p.yellow('!')} ${who} answered the inquiry: ${oneLine(String(d.text ?? ''), 80)} (forwarded to ${event.parentId})`;
    case 'tool.called':
      if (d.name === 'a2a_send_subtask_message' || d.name === 'a2a_notify_orchestrator' || d.name === 'a2a_cancel_subtask') {
        return `→ ${who} ${String(d.name)}${d.isError ? p.red(' failed') : ''}: ${oneLine(String(d.content ?? ''), 80)}`;
      }
      if (d.isError) return `${p.red('✗')} ${who} tool ${String(d.name)} failed: ${oneLine(String(d.content ?? ''), 100)}`;
      return null;
    case 'limit.hit':
      return `${p.yellow('⚠')} ${who} limit: ${String(d.code)}: ${oneLine(String(d.message ?? ''), 100)}`;
    case 'circuit.open':
      return `${p.red('⚠')} ${who} circuit breaker open after ${String(d.failures)} failures: paused`;
    case 'task.skipped':
      return `${p.yellow('-')} task ${String(d.taskId ?? event.taskId)} skipped: ${String(d.reason ?? '')}`;
    case 'permission.requested':
      return `${p.yellow('⚑')} ${who} asks permission: ${String(d.action)} (${oneLine(String(d.detail ?? ''), 70)})`;
    case 'model.truncated':
      return `${p.yellow('⚠')} ${who}'s reply was cut off at ${d.limit ? `${String(d.limit)} tokens` : 'the output limit'} (cut ${String(d.attempt)} in a row): not used`;
    case 'permission.forwarded':
      return `${p.dim('⚑')} ${String(d.action)} for ${event.subTaskId ?? ''} passed up from ${String(d.from)} to ${String(d.to)}`;
    case 'permission.decided':
      if (d.decidedBy === 'policy' && d.approved) return null; // within the session's own level: not news
      return `${d.approved ? p.green('⚑') : p.red('⚑')} ${String(d.action ?? d.requestId)} for ${event.subTaskId ?? ''} ${decisionText(d)}${d.reason ? `: ${oneLine(String(d.reason), 80)}` : ''}`;
    case 'human.asked':
      return `${p.yellow('?')} waiting for a person: ${oneLine(String(d.title ?? ''), 90)} [${String(d.id)}]`;
    case 'question.asked':
      return `${p.yellow('?')} ${event.workerId ?? ''} asks: ${oneLine(String(d.question ?? ''), 90)}`;
    case 'question.answered':
      return `${p.green('!')} ${String(d.by)} answered ${event.workerId ?? ''}: ${oneLine(String(d.answer ?? ''), 90)}`;
    case 'stuck.detected':
      return `${p.red('⚠')} ${who} is stuck: ${oneLine(String(d.reason ?? ''), 100)}`;
    case 'worker.redirected':
      return `${p.cyan('↻')} ${event.workerId ?? ''} redirected by ${String(d.by)}: ${oneLine(String(d.instructions ?? ''), 80)}`;
    case 'worker.reassigned':
      return `${p.cyan('↻')} ${who} reassigned ${String(d.from)} → ${String(d.to)} by ${String(d.by)}`;
    case 'worker.reinitialized':
      return `${p.cyan('↻')} ${who} restarted by ${String(d.by)}`;
    case 'worker.resumed':
      return `${p.cyan('▶')} ${event.workerId ?? ''} resumed by ${String(d.by)}`;
    case 'worktree.created':
      return p.dim(`⎇ ${event.taskId ?? ''}: worktree ${String(d.worktree)} on ${String(d.branch)} from ${String(d.base)}`);
    case 'branch.committed': {
      const diff = d.diff as { changedFiles?: number; insertions?: number; deletions?: number } | undefined;
      return `⎇ ${event.taskId ?? ''}: ${d.commit ? `committed ${String(d.commit).slice(0, 8)}` : 'nothing new to commit'} · ${diff?.changedFiles ?? 0} file(s), +${diff?.insertions ?? 0} −${diff?.deletions ?? 0}`;
    }
    case 'branch.merged':
      return `${p.green('⎇')} ${event.taskId ?? ''}: merged ${String(d.branch)} into ${String(d.into)} (${String(d.commit).slice(0, 8)})`;
    case 'branch.conflict':
      return `${p.red('⎇')} ${event.taskId ?? ''}: merging into ${String(d.into)} conflicts in ${(d.conflicts as string[]).join(', ')}; ${String(d.into)} unchanged`;
    case 'branch.pushed':
      return `⎇ ${event.taskId ?? ''}: pushed ${String(d.branch)} to ${String(d.remote)}`;
    case 'pr.created':
      return `${p.green('⎇')} ${event.taskId ?? ''}: pull request #${String(d.number)} ${String(d.url)}`;
    case 'review.requested':
      return `${p.cyan('?')} ${event.taskId ?? ''}: ${String(d.reviewer)} reviews ${String(d.branch)} (${event.workerId ?? ''})`;
    case 'changes.requested':
      return `${p.yellow('↻')} ${event.taskId ?? ''}: changes requested by the ${String(d.by)} (round ${String(d.round)}): ${oneLine(String(d.feedback ?? ''), 90)}`;
    case 'branch.done':
      return d.outcome === 'merged' || d.outcome === 'abandoned' ? null : `⎇ ${event.taskId ?? ''}: branch ${String(d.outcome)}: ${oneLine(String(d.reason ?? ''), 100)}`;
    case 'budget.reached':
      return `${p.red('$')} ${who} paused: the ${String(d.scope)} budget is spent (${formatUsd(Number(d.spentUsd ?? 0))} of ${formatUsd(Number(d.limitUsd ?? 0))})`;
    case 'model.switched':
      return `${p.cyan('↻')} ${who} switched to model ${String(d.to)} by ${String(d.by)}`;
    case 'run.stopped':
      return `${p.yellow('■')} stopping: ${String(d.reason ?? '')}`;
    case 'a2a.served': {
      // a line per change of the served task's state (and the client's messages)
      const owner = d.owner ? ` (client ${String(d.owner)})` : '';
      const text = d.text ? `: ${oneLine(String(d.text), 80)}` : '';
      if (d.direction === 'in' && d.state === 'submitted' && !d.from) return `${p.cyan('⇄')} A2A task ${String(d.taskId)} received${owner} for @${String(d.agent)}${text}`;
      if (d.from) return `${p.cyan('⇄')} A2A task ${String(d.taskId)} ${String(d.from)} → ${a2aState(p, String(d.state))}${owner}${text}`;
      return d.direction === 'in' ? `${p.cyan('⇄')} A2A task ${String(d.taskId)}: the client says${text}` : null;
    }
    case 'a2a.delegated': {
      const why = d.error ? `: ${oneLine(String(d.error), 90)}` : d.message ? `: ${oneLine(String(d.message), 70)}` : '';
      return `${p.cyan('⇄')} ${who} → ${String(d.url)}: remote task ${String(d.taskId)} ${d.from ? `${String(d.from)} → ` : ''}${a2aState(p, String(d.state))}${why}`;
    }
    case 'run.resumed':
      if (d.restarted) return `${p.bold('▶')} run ${event.runId} started again: ${String(d.reason ?? '')}`;
      return `${p.bold('▶')} run ${event.runId} resumed from its checkpoint (${(d.replayed as unknown[] | undefined)?.length ?? 0} message(s) replayed from the journal)`;
    case 'workflow.state': {
      const state = String(d.state);
      if (state === 'ERROR') return `${p.red('◆')} workflow ERROR after ${String(d.from)}: ${String(d.reason ?? '')}`;
      if (state === 'PAUSED') return `${p.yellow('◆')} workflow PAUSED in ${String(d.from)}${d.by ? ` by ${String(d.by)}` : ''}`;
      if (state === 'IDLE') return `${p.yellow('◆')} workflow stopped (${String(d.code)}): ${String(d.reason ?? '')}`;
      if (state === 'COMPLETED') return `${p.green('◆')} workflow COMPLETED`;
      const roles = (d.tasks as Array<{ role: string }> | undefined)?.map((t) => t.role).join(', ');
      return `${p.cyan('◆')} workflow ${state}${d.round !== undefined ? ` (round ${String(d.round)})` : ''}${d.resumed ? ' resumed' : ''}${d.retry ? ' retried' : ''}${roles ? `: ${roles}` : ''}`;
    }
    case 'workflow.decision':
      return `${p.cyan('◇')} organiser in ${String(d.state)}: ${String(d.action)}${d.nextState ? ` → ${String(d.nextState)}` : ''} — ${oneLine(String(d.reasoning ?? ''), 90)}`;
    case 'workflow.refused':
      return `${p.yellow('◇')} refused (${String(d.code)}): ${String(d.reason ?? '')}`;
    case 'workflow.completed':
      return `${p.green('◇')} ${d.stepsCompleted} steps, ${d.artifactsCreated} artifacts, ${(d.filesModified as unknown[] | undefined)?.length ?? 0} files, ${d.linesOfCode} lines of code, issues found ${d.issuesFound} / fixed ${d.issuesFixed}`;
    case 'artifact.created':
    case 'artifact.updated':
      return `${p.dim('▣')} ${String(d.artifactId)} v${String(d.version)} ${event.type === 'artifact.created' ? 'created' : 'revised'} by ${String(d.producerRole)} [${String(d.status)}]: ${oneLine(String(d.brief ?? ''), 70)}`;
    case 'run.paused':
      return `${p.yellow('‖')} run paused by ${String(d.by ?? '?')}: agents finish their current model call, then wait`;
    case 'run.unpaused':
      return `${p.bold('▶')} run resumed by ${String(d.by ?? '?')}`;
    case 'warning':
      return `${p.yellow('⚠')} ${who ? `${who} ` : ''}${String(d.message ?? '')}`;
    case 'mcp.connected':
      return `${p.dim('⇄')} ${who} MCP server ${String(d.server)}: ${String(d.tools)} tool(s)${d.restart ? ` (restart ${String(d.restart)})` : ''}`;
    case 'mcp.failed':
      return `${p.yellow('⚠')} ${who} MCP server ${String(d.server)} ${d.phase === 'start' ? 'did not start' : d.phase === 'timeout' ? 'did not answer' : 'stopped'}: ${String(d.error ?? '')}`;
    case 'run.finished':
      return `${p.bold('■')} run ${event.runId} ${statusColour(p, String(d.status))}`;
    default:
      return null;
  }
}

function nodeLine(view: RunView, node: NodeView, prefix: string, now: number, p: Palette, extra?: (node: NodeView) => string): string {
  const elapsed = formatElapsed((node.endedAt ?? now) - node.startedAt);
  const label = node.taskId && node.depth === 0 ? `${node.taskId} (${node.id})` : node.id;
  const note = node.note ? `  ${p.dim(oneLine(node.note, 50))}` : '';
  const cost = view.subtreeCost(node.id);
  const usd = cost > 0 ? `  ${p.dim(formatUsd(cost))}` : '';
  const more = extra ? extra(node) : '';
  return `${prefix}${p.bold(label)}  ${node.agentType}  ${statusColour(p, node.status)}${more ? `  ${more}` : ''}  d${node.depth}  ${p.dim(elapsed)}${usd}  ${p.dim(oneLine(node.prompt, 40))}${note}`;
}

export const formatUsd = (usd: number) => (usd >= 1 ? `$${usd.toFixed(2)}` : `$${usd.toFixed(4)}`);

/** The tree as lines; `extra` adds a column after each node's status (`a2a monitor`: its host). */
export function renderTree(view: RunView, now: number, p: Palette = palette(false), extra?: (node: NodeView) => string): string[] {
  const head = `${view.standalone ? 'run (standalone)' : 'orchestrator'}  ${statusColour(p, view.status)}  ${p.dim(formatElapsed((view.finishedAt ?? now) - (view.startedAt ?? now)))}${view.costUsd > 0 ? `  ${p.dim(formatUsd(view.costUsd))}` : ''}`;
  return [head, ...view.walk().map(({ node, prefix }) => nodeLine(view, node, prefix, now, p, extra))];
}

export interface RunDisplay {
  onEvent(event: RunEvent): void;
  finish(): void;
  /** Stop redrawing (a prompt is on the screen) and start again. */
  pause?(): void;
  resume?(): void;
}

/**
 * Where each session runs, from the placement events of a run across hosts (`--nats`): shown
 * after each node's status. A run in one process has none and shows none.
 */
function placements() {
  const hosts = new Map<string, string>();
  return {
    note(event: RunEvent) {
      if ((event.type === 'subtask.placed' || event.type === 'session.restored') && event.subTaskId && typeof event.data.host === 'string') hosts.set(event.subTaskId, event.data.host);
    },
    column: (node: NodeView) => {
      const host = hosts.get(node.id);
      return host ? `@${host}` : '';
    },
  };
}

/** Log lines as they happen; the tree once at the end. */
export function logDisplay(out: Output, options: { colour?: boolean } = {}): RunDisplay & { view: RunView } {
  const p = palette(options.colour ?? false);
  const view = new RunView();
  const placed = placements();
  return {
    view,
    onEvent(event) {
      view.apply(event);
      placed.note(event);
      const line = describeEvent(event, p);
      if (line) out.write(`${line}\n`);
    },
    finish() {
      out.write(`\n${renderTree(view, Date.now(), p, placed.column).join('\n')}\n`);
    },
  };
}

const ANSI = /\x1b\[[0-9;]*m/y;

/** Characters a line shows (colour codes take no room). */
export function visibleLength(line: string): number {
  return line.replace(/\x1b\[[0-9;]*m/g, '').length;
}

/**
 * The line cut to `width` shown characters, ending in `…` when cut; colour codes are kept whole
 * (and closed). A redrawn line must never wrap: the cursor moves up by lines, not by rows.
 */
export function fitLine(line: string, width: number): string {
  if (visibleLength(line) <= width) return line;
  let out = '';
  let shown = 0;
  for (let i = 0; i < line.length; ) {
    ANSI.lastIndex = i;
    const code = ANSI.exec(line);
    if (code) {
      out += code[0];
      i += code[0].length;
      continue;
    }
    if (shown === width - 1) break;
    out += line[i];
    shown++;
    i++;
  }
  return `${out}…${out.includes('\x1b[') ? '\x1b[0m' : ''}`;
}

/** Whether `out` can redraw the tree in place (a terminal that understands cursor moves, wide enough). */
export function canRedraw(out: Output & { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  return out.isTTY === true && env.TERM !== 'dumb' && (out.columns === undefined || out.columns >= 60);
}

/** The tree redrawn in place (10 times a second) under the scrolling log. */
export function liveDisplay(out: Output, options: { colour?: boolean } = {}): RunDisplay & { view: RunView } {
  const p = palette(options.colour ?? true);
  const view = new RunView();
  const placed = placements();
  let pending: string[] = [];
  let height = 0;
  const draw = () => {
    // one column short of the width: a line filling the last column wraps on some terminals
    const width = (out.columns ?? 120) - 1;
    const tree = renderTree(view, Date.now(), p, placed.column).map((line) => fitLine(line, width));
    const clear = height > 0 ? `\x1b[${height}F\x1b[J` : '';
    out.write(`${clear}${pending.map((l) => `${l}\n`).join('')}${tree.join('\n')}\n`);
    pending = [];
    height = tree.length;
  };
  let paused = false;
  const timer = setInterval(() => paused || draw(), 100);
  timer.unref();
  return {
    view,
    onEvent(event) {
      view.apply(event);
      placed.note(event);
      const line = describeEvent(event, p);
      if (line) pending.push(line);
    },
    finish() {
      clearInterval(timer);
      paused = false;
      draw();
    },
    pause() {
      if (paused) return;
      draw();
      paused = true;
      height = 0; // the prompt goes under the tree; the next draw starts below it
    },
    resume() {
      paused = false;
    },
  };
}

export function renderSummary(summary: RunSummary, p: Palette = palette(false)): string {
  const lines: string[] = [];
  lines.push(`\n${p.bold(`Run ${summary.runId}: ${summary.status}`)}${summary.stopReason ? ` (${summary.stopReason})` : ''}`);
  for (const t of summary.tasks) {
    const r = t.result;
    lines.push(`\n${p.bold(`## ${t.id}`)} ${t.agentType}: ${statusColour(p, t.state)}${r ? ` (${r.status})` : ''}${t.note ? ` — ${t.note}` : ''}`);
    if (r?.diffStats) {
      const d = r.diffStats;
      lines.push(p.dim(`changes: ${d.changedFiles} file(s), +${d.insertions} −${d.deletions}${d.files?.length ? `: ${d.files.slice(0, 8).join(', ')}${d.files.length > 8 ? ', …' : ''}` : ''}`));
    }
    if (r?.error) lines.push(p.dim(`error: ${r.error}`));
    if (r?.output) lines.push(r.output);
  }
  const w = summary.workflow;
  if (w) {
    lines.push(`\n${p.bold('## workflow')} ${w.state}: ${w.status}${w.reason ? ` — ${w.reason}` : ''}`);
    const c = w.completion;
    if (c) {
      lines.push(`time ${formatElapsed(c.totalTimeMs)} · ${c.stepsCompleted} steps · ${c.artifactsCreated} artifacts · ${c.linesOfCode} lines of code · issues found ${c.issuesFound}, fixed ${c.issuesFixed}`);
      if (c.filesModified.length) lines.push(`files modified: ${c.filesModified.join(', ')}`);
    }
  } else if (summary.workflow === null) {
    lines.push(`\n${p.bold('## workflow')} did not end`);
  }
  lines.push(p.dim(`\n${usageLine(summary.usage)}`));
  return `${lines.join('\n')}\n`;
}

/** A run's model usage in one line: calls, tokens, the prompt cache's hit rate (the share of input read from it), cost. */
export function usageLine(u: Usage): string {
  const cache = u.cacheReadTokens || u.cacheWriteTokens ? ` · cache hits ${u.inputTokens ? Math.round((100 * (u.cacheReadTokens ?? 0)) / u.inputTokens) : 0}% (read ${u.cacheReadTokens ?? 0}, written ${u.cacheWriteTokens ?? 0})` : '';
  return `model calls: ${u.modelCalls} · tokens in ${u.inputTokens} · out ${u.outputTokens}${cache}${u.costUsd ? ` · cost ${formatUsd(u.costUsd)}` : ''}`;
}

export { palette };
