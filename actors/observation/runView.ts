/**
 * The live tree of a run, rebuilt from run events alone (so that the CLI, `a2a monitor` and any
 * other subscriber draw the same tree): one node per worker and sub-task with its agent type,
 * status, depth, timing and the last notable thing that happened to it.
 */
import type { ResultStatus, RunEvent } from '../../machines/protocol/index.js';
import type { SessionStateName } from '../../machines/session.js';

/** Where a node stands: its session's state while it runs, its result's status once it ended. */
export type NodeStatus = SessionStateName | ResultStatus;
/** Where a run stands: starting until its first event, running, then how it ended. */
export type RunViewStatus = 'starting' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface NodeView {
  id: string;
  parentId: string;
  taskId: string | undefined;
  agentType: string;
  depth: number;
  status: NodeStatus;
  prompt: string;
  startedAt: number;
  endedAt: number | null;
  /** The last notable thing: an inquiry, an answer, an error. */
  note: string | null;
  children: string[];
  /** USD of its own model calls (priced models only). */
  costUsd: number;
}

const FINAL = new Set(['success', 'partial', 'failed', 'timeout', 'cancelled']);

/**
 * How a permission was decided, said the same way everywhere (the tree, the transcript, the
 * terminal's lines, the audit): "approved by human root (studio)", "denied by parent w-api",
 * "approved by orchestrator", "denied: nobody answered in time".
 */
export function decisionText(d: { approved?: unknown; decidedBy?: unknown; decider?: unknown }): string {
  const verdict = d.approved === true ? 'approved' : 'denied';
  const by = typeof d.decidedBy === 'string' && d.decidedBy ? d.decidedBy : 'unknown';
  const who = typeof d.decider === 'string' && d.decider && d.decider !== by ? d.decider : '';
  if (by === 'timeout') return `${verdict}: nobody answered in time${who ? ` (waiting at ${who})` : ''}`;
  return `${verdict} by ${by}${who ? ` ${who}` : ''}`;
}

/** Whose permission a `permission.*` event is about: its requester (a parent's decision names it in its data). */
export function permissionRequester(event: RunEvent): string | undefined {
  const requester = event.data.requesterId;
  return typeof requester === 'string' ? requester : event.subTaskId;
}

/** Deeper than any real tree (depth ≤ 8 below a worker), shallow enough for any recursion. */
const MAX_LEVELS = 32;

export class RunView {
  readonly nodes = new Map<string, NodeView>();
  /** How far below a root each node hangs. */
  readonly #level = new Map<string, number>();
  readonly roots: string[] = [];
  startedAt: number | null = null;
  finishedAt: number | null = null;
  status: RunViewStatus = 'starting';
  skipped: Array<{ taskId: string; reason: string }> = [];
  /** USD of every model call in the run. */
  costUsd = 0;
  /** A session run without an orchestrator (`a2a run --standalone`). */
  standalone = false;
  /** Counts the nodes added: a drawing of the tree's shape (the studio's rows) is current while it is unchanged. */
  shape = 0;

  apply(event: RunEvent): void {
    this.startedAt ??= event.ts;
    const id = event.subTaskId;
    switch (event.type) {
      case 'run.started':
        this.status = 'running';
        this.standalone = event.data.standalone === true;
        return;
      case 'run.finished':
        this.status = (event.data.status ?? 'completed') as RunViewStatus;
        this.finishedAt = event.ts;
        return;
      case 'task.skipped':
        this.skipped.push({ taskId: String(event.taskId ?? event.data.taskId), reason: String(event.data.reason ?? '') });
        return;
      case 'worker.deployed':
      case 'subtask.spawned': {
        if (!id || this.nodes.has(id)) return;
        // a tree is at most 9 levels deep (limits.maxDepth ≤ 8): events that would nest deeper
        // (forged, or relayed from a misbehaving host) are not drawn
        const level = event.parentId && this.#level.has(event.parentId) ? this.#level.get(event.parentId)! + 1 : 0;
        if (level > MAX_LEVELS) return;
        this.#level.set(id, level);
        this.nodes.set(id, {
          id,
          parentId: event.parentId ?? 'orchestrator',
          taskId: event.taskId,
          agentType: event.agentType ?? '?',
          depth: event.depth ?? 0,
          status: 'running',
          prompt: String(event.data.prompt ?? ''),
          startedAt: event.ts,
          endedAt: null,
          note: null,
          children: [],
          costUsd: 0,
        });
        {
          const parent = event.parentId ? this.nodes.get(event.parentId) : undefined;
          if (parent) parent.children.push(id);
          else this.roots.push(id);
          this.shape++;
        }
        return;
      }
    }
    const node = id ? this.nodes.get(id) : undefined;
    if (!node) return;
    if (event.type.startsWith('permission.') || event.type === 'human.asked') return this.#permission(event, node);
    switch (event.type) {
      case 'subtask.queued':
        node.status = 'pending';
        break;
      case 'session.state':
        if (!FINAL.has(node.status)) node.status = String(event.data.state) as NodeStatus;
        break;
      case 'subtask.result':
        node.status = String(event.data.status) as NodeStatus;
        node.endedAt = event.ts;
        if (event.data.error) node.note = String(event.data.error);
        break;
      case 'inquiry.sent':
        node.note = `idle → inquiry ${String(event.data.attempt ?? '')}`.trim();
        break;
      case 'inquiry.answered':
        node.note = `answered: ${oneLine(String(event.data.text ?? ''), 60)}`;
        break;
      case 'circuit.open':
        node.note = `circuit open after ${String(event.data.failures)} failures`;
        break;
      case 'budget.reached':
        node.note = `budget reached: $${Number(event.data.spentUsd ?? 0).toFixed(4)} of $${Number(event.data.limitUsd ?? 0).toFixed(4)}`;
        break;
      case 'model.switched':
        node.note = `model → ${String(event.data.to)}`;
        break;
      case 'model.called':
        node.costUsd += Number(event.data.costUsd ?? 0);
        this.costUsd += Number(event.data.costUsd ?? 0);
        break;
    }
  }

  /** Where a permission request stands, on its requester's line: asked, waiting at a parent or a person, decided. */
  #permission(event: RunEvent, about: NodeView): void {
    const d = event.data;
    // a decision by a parent is that parent's event: the note goes to the requester
    const node = typeof d.requesterId === 'string' ? (this.nodes.get(d.requesterId) ?? about) : about;
    const action = String(d.action ?? 'permission');
    switch (event.type) {
      case 'permission.requested':
        node.note = `asks permission: ${action}`;
        break;
      case 'permission.forwarded':
        node.note = `${action}: waiting at ${String(d.to)}`;
        break;
      case 'human.asked':
        if (d.kind === 'permission') node.note = `${oneLine(String(d.title ?? action), 40)}: waiting for a person`;
        break;
      case 'permission.decided':
        node.note = `${action} ${decisionText(d)}`;
        break;
    }
  }

  /** A node's cost with its whole subtree (iterative: a tree built from hostile events may be deep or cyclic). */
  subtreeCost(id: string): number {
    let sum = 0;
    const seen = new Set<string>();
    const stack = [id];
    while (stack.length > 0) {
      const node = this.nodes.get(stack.pop()!);
      if (!node || seen.has(node.id)) continue;
      seen.add(node.id);
      sum += node.costUsd;
      stack.push(...node.children);
    }
    return sum;
  }

  /** Depth-first order with the tree prefix for each line (iterative, each node once). */
  walk(): Array<{ node: NodeView; prefix: string }> {
    const out: Array<{ node: NodeView; prefix: string }> = [];
    const seen = new Set<string>();
    const stack: Array<{ id: string; lead: string; last: boolean; top: boolean }> = [];
    for (let i = this.roots.length - 1; i >= 0; i--) stack.push({ id: this.roots[i]!, lead: '', last: i === this.roots.length - 1, top: true });
    while (stack.length > 0) {
      const { id, lead, last, top } = stack.pop()!;
      const node = this.nodes.get(id);
      if (!node || seen.has(id)) continue;
      seen.add(id);
      out.push({ node, prefix: top ? (last ? '└─ ' : '├─ ') : `${lead}${last ? '└─ ' : '├─ '}` });
      const next = top ? (last ? '   ' : '│  ') : `${lead}${last ? '   ' : '│  '}`;
      for (let i = node.children.length - 1; i >= 0; i--) stack.push({ id: node.children[i]!, lead: next, last: i === node.children.length - 1, top: false });
    }
    return out;
  }
}

export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function formatElapsed(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const m = Math.floor(ms / 60_000);
  return `${m}m${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}s`;
}
