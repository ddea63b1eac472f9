/**
 * What a running orchestrator looks like from outside: its tasks and their workers' states, the
 * inbox (depth, metrics, what waits in which order), the items waiting for a person, and the
 * conversation with each worker. Read from the actors' snapshots; `a2a status`, `a2a inbox` and
 * the control channel use it.
 */
import type { AnyActorRef } from 'xstate';
import type { ConversationEntry, TaskState } from '../../machines/orchestrator.machine.js';
import type { HumanItem, QueueMessage, SessionSpec } from '../../machines/protocol/index.js';
import { sessionStateName } from '../../machines/session.js';
import { pendingItems } from '../people/humanGate.js';
import { queuedInOrder, type InboxMetrics, type InboxState } from '../people/inbox.js';

export interface RunStatus {
  runId: string;
  planId: string;
  state: string;
  savedAt: number;
  tasks: Array<{ id: string; state: TaskState; agentType: string; workerId: string; session: string | null }>;
  inbox: {
    metrics: InboxMetrics;
    inFlight: QueueSummary | null;
    queued: QueueSummary[];
  };
  pending: HumanItem[];
  conversations: Record<string, ConversationEntry[]>;
  /** A workflow run (seed 003's status bar): its state, the agents working, the artifacts so far. */
  workflow?: {
    state: string;
    step: string | null;
    round: number;
    activeAgents: Array<{ taskId: string; role: string; workerId: string }>;
    artifacts: number;
    error: string | null;
    ended: { status: string; reason: string | null } | null;
  };
  /** `a2a pause`: who paused the run, and when. */
  paused?: { by: string; at: number } | null;
}

export interface QueueSummary {
  id: string;
  type: QueueMessage['type'];
  priority: QueueMessage['priority'];
  taskId: string;
  subTaskId?: string;
}

interface OrchestratorSnapshot {
  value: unknown;
  context: {
    runId: string;
    planId: string;
    order: string[];
    tasks: Record<string, { id: string; state: TaskState; spec: SessionSpec }>;
    conversations: Record<string, ConversationEntry[]>;
  };
  children: Record<string, AnyActorRef | undefined>;
}

const summarize = (m: QueueMessage): QueueSummary => ({
  id: m.id,
  type: m.type,
  priority: m.priority,
  taskId: m.taskId,
  ...(m.subTaskId ? { subTaskId: m.subTaskId } : {}),
});

function stateName(value: unknown): string {
  if (typeof value === 'string') return value;
  return Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${k}.${stateName(v)}`)
    .join(',');
}

/** The state a worker session is in, from the workers supervisor. */
export function workerState(root: AnyActorRef, workerId: string): string | null {
  const workers = (root.getSnapshot() as OrchestratorSnapshot).children.workers;
  const family = (workers?.getSnapshot() as { family?: { members: Map<string, { ref: AnyActorRef | null; state: string }> } } | undefined)?.family;
  const member = family?.members.get(workerId);
  if (!member) return null;
  if (!member.ref) return member.state;
  const snapshot = member.ref.getSnapshot() as { value?: unknown; status: string; remote?: { host: string | null } };
  // a worker that runs on a host: its stand-in here knows where, not the session's state
  if (snapshot.remote) return snapshot.remote.host ? `on ${snapshot.remote.host}` : 'waiting for a host';
  return snapshot.status === 'active' ? sessionStateName(snapshot.value) : String(snapshot.value);
}

export function pendingHumanItems(root: AnyActorRef): HumanItem[] {
  const gate = (root.getSnapshot() as OrchestratorSnapshot).children.humanGate;
  return gate ? pendingItems(gate.getSnapshot()) : [];
}

export function runStatus(root: AnyActorRef, now: number): RunStatus {
  const snapshot = root.getSnapshot() as OrchestratorSnapshot;
  const c = snapshot.context;
  const inbox = (snapshot.children.inbox?.getSnapshot() as { inbox?: InboxState } | undefined)?.inbox;
  return {
    runId: c.runId,
    planId: c.planId,
    state: stateName(snapshot.value),
    savedAt: now,
    tasks: c.order.map((id) => {
      const t = c.tasks[id]!;
      return { id, state: t.state, agentType: t.spec.agent.raw, workerId: t.spec.id, session: t.state === 'running' ? workerState(root, t.spec.id) : null };
    }),
    inbox: {
      metrics: inbox ? { ...inbox.metrics } : { accepted: 0, duplicates: 0, handled: 0, depth: 0, maxDepth: 0, waitTotalMs: 0, waitMaxMs: 0, processTotalMs: 0, processMaxMs: 0 },
      inFlight: inbox?.inFlight ? summarize(inbox.inFlight.message) : null,
      queued: inbox ? queuedInOrder(inbox).map(summarize) : [],
    },
    pending: pendingHumanItems(root),
    conversations: c.conversations,
    ...workflowStatus(snapshot),
  };
}

interface WorkflowSnapshot {
  value: unknown;
  context: { history: string[]; step: { state: string | null; round: number; tasks: Record<string, { role: string } | null> }; artifacts: unknown[]; error: { reason: string } | null };
}

function workflowStatus(snapshot: OrchestratorSnapshot): Pick<RunStatus, 'workflow'> {
  const child = snapshot.children.workflow;
  const ended = (snapshot.context as { workflow?: { ended: { status: string; reason: string | null } | null } | null }).workflow?.ended ?? null;
  if (!child) return {};
  const w = child.getSnapshot() as WorkflowSnapshot;
  const c = w.context;
  const tasks = snapshot.context.tasks;
  return {
    workflow: {
      state: c.history.at(-1) ?? 'IDLE',
      step: c.step.state,
      round: c.step.round,
      activeAgents: Object.keys(c.step.tasks)
        .filter((id) => tasks[id] && !['succeeded', 'failed', 'skipped', 'cancelled'].includes(tasks[id]!.state))
        .map((id) => ({ taskId: id, role: tasks[id]!.spec.workflowRole ?? '?', workerId: tasks[id]!.spec.id })),
      artifacts: c.artifacts.length,
      error: c.error?.reason ?? null,
      ended: ended ? { status: ended.status, reason: ended.reason } : null,
    },
  };
}
