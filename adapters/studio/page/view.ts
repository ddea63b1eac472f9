/**
 * What the studio's page knows of one run, rebuilt from its events alone: the tree of
 * actors/observation/runView.ts (the one `a2a run` and `a2a monitor` draw) plus, per session, its model, its
 * host and its badges (waiting for permission or an answer, idle inquiry, model switched, stuck,
 * paused); the transcript of a session (read from an index of each session's events, not from the
 * whole log: a 10,000-session run has 70,000); the workflow's state and the organiser's decisions; its
 * A2A tasks (the one it serves, those its sessions delegated: actors/observation/a2aView.ts). Pure
 * (no DOM), so that it is tested without a browser.
 */
import type { RunEvent } from '../../../machines/protocol/index.js';
import { decisionText, permissionRequester, RunView, type NodeView } from '../../../actors/observation/runView.js';
import { A2AView } from '../../../actors/observation/a2aView.js';

export type Badge = 'permission' | 'question' | 'inquiry' | 'model' | 'stuck' | 'paused';

export interface SessionExtra {
  /** The profile it was given (at its start, or by a model switch). */
  model: string | null;
  /** The model that answered its last call (the provider's name), and the profile that came from: every session has one once it called. */
  answeredBy: string | null;
  answeredProfile: string | null;
  host: string | null;
  badges: Set<Badge>;
  /** The pending permission requests of this session (request ids). */
  asking: Set<string>;
}

export interface TranscriptEntry {
  kind: 'task' | 'assistant' | 'tool' | 'injected' | 'result' | 'permission' | 'question' | 'inquiry' | 'management' | 'state' | 'a2a';
  ts: number;
  title: string;
  text: string;
  calls?: Array<{ id: string; name: string; arguments: string }>;
  error?: boolean;
}

export interface WorkflowView {
  state: string | null;
  round: number | null;
  decisions: Array<{ ts: number; state: string; action: string; nextState: string | null; reasoning: string }>;
  refused: Array<{ ts: number; code: string; reason: string }>;
  completed: Record<string, unknown> | null;
  artifacts: Array<{ ts: number; artifactId: string; artifactType: string; version: number; status: string; producerRole: string; brief: string }>;
}

const FINAL = new Set(['success', 'partial', 'failed', 'timeout', 'cancelled']);

export class StudioRun {
  readonly view = new RunView();
  /** Its A2A tasks: the one it serves, and those its sessions delegated. */
  readonly a2a = new A2AView();
  readonly events: RunEvent[] = [];
  /** Log indices received, in order (a reconnect must neither lose nor repeat one). */
  readonly indices: number[] = [];
  readonly extras = new Map<string, SessionExtra>();
  budgets: { runUsd?: number; workerUsd?: number } = {};
  /** The trace its spans went to (a run traced with --otel says so in run.started). */
  traceId: string | null = null;
  paused = false;
  workflow: WorkflowView | null = null;
  /** Permission and question items asked of a person, by id, until answered. */
  readonly asked = new Map<string, RunEvent>();
  /** Where in `events` each session's events are (its own, and those naming it as the requester): a transcript reads those alone. */
  readonly #bySession = new Map<string, number[]>();

  /** Applies the event at `index` of the log; an index already seen is ignored (returns false). */
  apply(index: number, event: RunEvent): boolean {
    if (this.indices.length > 0 && index <= this.indices[this.indices.length - 1]!) return false;
    this.indices.push(index);
    this.events.push(event);
    this.#index(event, this.events.length - 1);
    this.view.apply(event);
    this.a2a.apply(event);
    this.#extra(event);
    return true;
  }

  #index(event: RunEvent, at: number): void {
    const own = event.subTaskId;
    const requester = event.data?.requesterId;
    for (const id of [own, typeof requester === 'string' && requester !== own ? requester : undefined]) {
      if (!id) continue;
      const list = this.#bySession.get(id);
      if (list) list.push(at);
      else this.#bySession.set(id, [at]);
    }
  }

  /** A session's events (its own, and those naming it as the requester), in order. */
  eventsOf(id: string): RunEvent[] {
    return (this.#bySession.get(id) ?? []).map((at) => this.events[at]!);
  }

  /** How many events a session has: what it shows changes only when this does (or its node does). */
  eventCountOf(id: string): number {
    return this.#bySession.get(id)?.length ?? 0;
  }

  extra(id: string): SessionExtra {
    let e = this.extras.get(id);
    if (!e) this.extras.set(id, (e = { model: null, answeredBy: null, answeredProfile: null, host: null, badges: new Set(), asking: new Set() }));
    return e;
  }

  #extra(event: RunEvent): void {
    const d = event.data as Record<string, unknown>;
    const id = event.subTaskId;
    switch (event.type) {
      case 'run.started':
        if (d.budgets && typeof d.budgets === 'object') this.budgets = d.budgets as { runUsd?: number; workerUsd?: number };
        if (typeof d.traceId === 'string') this.traceId = d.traceId;
        return;
      case 'run.paused':
        this.paused = true;
        return;
      case 'run.unpaused':
      case 'run.finished':
        this.paused = false;
        return;
      case 'workflow.state':
      case 'workflow.decision':
      case 'workflow.refused':
      case 'workflow.completed':
      case 'artifact.created':
      case 'artifact.updated':
        return this.#workflow(event);
      case 'human.asked':
        this.asked.set(String(d.id), event);
        if (typeof d.requesterId === 'string') this.extra(d.requesterId).badges.add(d.kind === 'question' ? 'question' : 'permission');
        return;
      case 'human.answered': {
        const item = this.asked.get(String(d.id));
        this.asked.delete(String(d.id));
        const requester = item?.data.requesterId;
        if (typeof requester === 'string' && d.kind === 'question') this.extra(requester).badges.delete('question');
        return;
      }
    }
    if (!id) return;
    const x = this.extra(id);
    switch (event.type) {
      case 'worker.deployed':
      case 'subtask.spawned':
        if (typeof d.model === 'string') x.model = d.model;
        break;
      case 'subtask.placed':
      case 'session.restored':
        x.host = String(d.host);
        break;
      case 'permission.requested':
        x.asking.add(String(d.requestId));
        x.badges.add('permission');
        break;
      case 'permission.decided': {
        const requester = typeof d.requesterId === 'string' ? this.extra(d.requesterId) : x;
        requester.asking.delete(String(d.requestId));
        if (requester.asking.size === 0) requester.badges.delete('permission');
        break;
      }
      case 'inquiry.sent':
        x.badges.add('inquiry');
        break;
      case 'inquiry.answered':
        x.badges.delete('inquiry');
        break;
      case 'model.called':
        if (typeof d.model === 'string') x.answeredBy = d.model;
        if (typeof d.profile === 'string') x.answeredProfile = d.profile;
        break;
      case 'model.switched':
        x.model = String(d.to);
        x.badges.add('model');
        break;
      case 'stuck.detected':
        x.badges.add('stuck');
        break;
      case 'worker.redirected':
      case 'worker.reinitialized':
      case 'worker.resumed':
      case 'worker.reassigned':
        x.badges.delete('stuck');
        break;
      case 'session.state':
        if (d.state === 'paused') x.badges.add('paused');
        else x.badges.delete('paused');
        break;
      case 'subtask.result':
        for (const b of ['permission', 'question', 'inquiry', 'stuck', 'paused'] as const) x.badges.delete(b);
        x.asking.clear();
        break;
    }
  }

  #workflow(event: RunEvent): void {
    const d = event.data as Record<string, unknown>;
    const w = (this.workflow ??= { state: null, round: null, decisions: [], refused: [], completed: null, artifacts: [] });
    switch (event.type) {
      case 'workflow.state':
        w.state = String(d.state);
        if (typeof d.round === 'number') w.round = d.round;
        break;
      case 'workflow.decision':
        w.decisions.push({ ts: event.ts, state: String(d.state), action: String(d.action), nextState: typeof d.nextState === 'string' ? d.nextState : null, reasoning: String(d.reasoning ?? '') });
        break;
      case 'workflow.refused':
        w.refused.push({ ts: event.ts, code: String(d.code ?? ''), reason: String(d.reason ?? '') });
        break;
      case 'workflow.completed':
        w.completed = d;
        break;
      default:
        w.artifacts.push({
          ts: event.ts,
          artifactId: String(d.artifactId),
          artifactType: String(d.artifactType),
          version: Number(d.version),
          status: String(d.status),
          producerRole: String(d.producerRole),
          brief: String(d.brief ?? ''),
        });
    }
  }

  /** The run's badges on one session, with the run's pause. */
  badgesOf(node: NodeView): Badge[] {
    const own = [...(this.extras.get(node.id)?.badges ?? [])];
    if (this.paused && !FINAL.has(node.status) && !own.includes('paused')) own.push('paused');
    return own;
  }

  /** The session's state on its chart: the live state, or the final state its result means. */
  chartState(node: NodeView): string {
    switch (node.status) {
      case 'success':
      case 'partial':
        return 'completed';
      case 'timeout':
        return 'timedOut';
      case 'failed':
      case 'cancelled':
        return node.status;
      case 'pending':
        return 'idle';
      default:
        return node.status;
    }
  }

  /** What a session saw and did, in order: its task, model replies with their tool calls, tool results, what was injected, permissions, its result. */
  transcript(id: string): TranscriptEntry[] {
    const out: TranscriptEntry[] = [];
    for (const e of this.eventsOf(id)) {
      const d = e.data as Record<string, unknown>;
      switch (e.type) {
        case 'worker.deployed':
        case 'subtask.spawned':
          out.push({ kind: 'task', ts: e.ts, title: `task for ${e.agentType ?? '?'}${typeof d.model === 'string' ? ` on ${d.model}` : ''}`, text: `${String(d.prompt ?? '')}${d.expectedOutput ? `\n\nexpected: ${String(d.expectedOutput)}` : ''}` });
          break;
        case 'model.called': {
          const calls = Array.isArray(d.calls) ? (d.calls as TranscriptEntry['calls']) : ((d.toolCalls as string[] | undefined) ?? []).map((name, i) => ({ id: String(i), name, arguments: '' }));
          const usage = `${Number(d.inputTokens ?? 0)} in / ${Number(d.outputTokens ?? 0)} out${typeof d.costUsd === 'number' ? ` · $${d.costUsd.toFixed(4)}` : ''}`;
          out.push({ kind: 'assistant', ts: e.ts, title: `model${d.turn !== undefined ? ` turn ${String(d.turn)}` : ''} · ${usage}${d.discarded ? ' · discarded' : ''}`, text: String(d.text ?? d.reason ?? ''), ...(calls && calls.length ? { calls } : {}) });
          break;
        }
        case 'tool.called':
          out.push({ kind: 'tool', ts: e.ts, title: `${String(d.name)} → ${d.isError ? 'error' : 'result'}`, text: String(d.content ?? ''), error: d.isError === true });
          break;
        case 'message.injected':
          out.push({ kind: 'injected', ts: e.ts, title: 'injected by the runtime', text: String(d.text ?? '') });
          break;
        case 'permission.requested':
        case 'permission.forwarded':
        case 'permission.decided':
        case 'human.asked':
        case 'human.answered':
          if (e.type === 'human.answered' && d.kind !== 'permission') break;
          out.push({ kind: 'permission', ts: e.ts, title: e.type, text: permissionLine(e) });
          break;
        case 'question.asked':
        case 'question.answered':
          out.push({ kind: 'question', ts: e.ts, title: e.type, text: String(d.question ?? d.answer ?? '') });
          break;
        case 'inquiry.sent':
        case 'inquiry.answered':
          out.push({ kind: 'inquiry', ts: e.ts, title: e.type, text: e.type === 'inquiry.sent' ? `idle: inquiry ${String(d.attempt ?? '')}` : String(d.text ?? '') });
          break;
        case 'worker.redirected':
        case 'worker.reinitialized':
        case 'worker.resumed':
        case 'worker.reassigned':
        case 'model.switched':
        case 'stuck.detected':
          out.push({ kind: 'management', ts: e.ts, title: e.type, text: managementLine(e) });
          break;
        case 'a2a.delegated':
          out.push({ kind: 'a2a', ts: e.ts, title: `remote task ${String(d.taskId)} at ${String(d.url)}: ${d.from ? `${String(d.from)} → ` : ''}${String(d.state)}`, text: String(d.error ?? d.message ?? ''), error: d.state === 'failed' || d.state === 'rejected' || (d.state === 'canceled' && Boolean(d.error)) });
          break;
        case 'subtask.result':
          out.push({ kind: 'result', ts: e.ts, title: `result: ${String(d.status)} (${String(d.how ?? '')})`, text: `${String(d.output ?? '')}${d.error ? `\nerror: ${String(d.error)}` : ''}`, error: !['success', 'partial'].includes(String(d.status)) });
          break;
      }
    }
    return out;
  }

  /** The permission history of a session (what it asked and how each was decided), in order. */
  permissions(id: string): RunEvent[] {
    // every hop and the decision too: a hop and an orchestrator's or person's decision name the
    // requester as the event's session, a parent's decision in its data
    return this.eventsOf(id).filter((e) => e.type.startsWith('permission.') && permissionRequester(e) === id);
  }

  /** A worker with its whole subtree's cost, for the budgets. */
  workerCosts(): Array<{ id: string; taskId: string | undefined; costUsd: number }> {
    return this.view.roots.map((id) => ({ id, taskId: this.view.nodes.get(id)?.taskId, costUsd: this.view.subtreeCost(id) }));
  }
}

/** The status class (`s-…`) an A2A task's state is drawn with: as a session's result of the same meaning. */
export function a2aStateClass(state: string): string {
  if (state === 'completed') return 's-success';
  if (state === 'failed' || state === 'rejected' || state === 'canceled') return 's-failed';
  if (state === 'input-required' || state === 'auth-required') return 's-partial';
  return 's-running';
}

export function permissionLine(e: RunEvent): string {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case 'permission.requested':
      return `asks ${String(d.action)}: ${String(d.detail ?? '')}`;
    case 'permission.forwarded':
      return `${String(d.action)} passed up from ${String(d.from)} to ${String(d.to)} (hop ${String(d.hop)})`;
    case 'permission.decided':
      return `${String(d.action ?? 'permission')} ${decisionText(d)}${d.reason ? `: ${String(d.reason)}` : ''}`;
    case 'human.asked':
      return `asked a person: ${String(d.title)} (default after ${Math.round(Number(d.timeoutMs ?? 0) / 1000)} s: ${(d.onTimeout as { text?: string } | undefined)?.text ?? ''})`;
    case 'human.answered':
      return `${String(d.by)} ${d.approved ? 'approved' : 'denied'}: ${String(d.title)}${d.reason ? ` (${String(d.reason)})` : ''}`;
    default:
      return e.type;
  }
}

function managementLine(e: RunEvent): string {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case 'worker.redirected':
      return `redirected by ${String(d.by)}: ${String(d.instructions)}`;
    case 'worker.reassigned':
      return `reassigned ${String(d.from)} → ${String(d.to)} by ${String(d.by)}`;
    case 'model.switched':
      return `model ${String(d.from ?? '?')} → ${String(d.to)} by ${String(d.by)}`;
    case 'stuck.detected':
      return `stuck: ${String(d.reason)}`;
    default:
      return `${e.type.split('.')[1]} by ${String(d.by ?? '?')}`;
  }
}
