/**
 * A run's Agent2Agent tasks, rebuilt from its events alone (`a2a.served`, `a2a.delegated`), so
 * that the studio's A2A view and `a2a monitor` show the same thing:
 *
 * - served: the task an A2A client gave `a2a serve --a2a` that started this run: its ids, state,
 *   the client that owns it (named clients), the agent type, and its messages in (the client's)
 *   and out (statuses, results);
 * - delegated: each task a session of the run sent to a remote A2A agent: which session, which
 *   agent URL, the remote task's id and context, its state on that server, its last message, and
 *   why a2a gave it up (cancelled with its session, a broken stream).
 *
 * Pure (no I/O, no DOM): the page bundles it, the monitor folds NATS events into it.
 */
import type { RunEvent } from '../../machines/protocol/index.js';

/** A message of a served task: the client's (`in`) or the server's (`out`). */
export interface A2AMessage {
  ts: number;
  direction: 'in' | 'out';
  /** The task's state when it was said. */
  state: string;
  text: string;
}

export interface ServedTaskView {
  taskId: string;
  contextId: string;
  state: string;
  agent: string;
  /** The named client that owns it, or null (one token, or none). */
  owner: string | null;
  runId: string;
  firstAt: number;
  updatedAt: number;
  /** Its states in order, each once per change (`submitted`, `working`, `input-required`, …). */
  states: string[];
  /** The latest MESSAGES_KEPT messages, oldest first. */
  messages: A2AMessage[];
  /** Messages left out at the front (past MESSAGES_KEPT). */
  dropped: number;
}

export interface DelegatedTaskView {
  taskId: string;
  contextId: string;
  url: string;
  /** The session that delegated it (a sub-task whose agent is a remote A2A agent). */
  sessionId: string;
  agentType: string;
  parentId: string | null;
  state: string;
  states: string[];
  /** The remote agent's last status text. */
  message: string;
  /** Why a2a gave the remote task up, when it did. */
  error: string | null;
  firstAt: number;
  updatedAt: number;
}

/** A task's change of state, as the monitor prints it. */
export interface A2AChange {
  kind: 'served' | 'delegated';
  taskId: string;
  from: string | null;
  to: string;
}

/** Messages kept per served task (a long conversation keeps its newest ones). */
export const MESSAGES_KEPT = 200;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export class A2AView {
  /** Served tasks by task id, in the order they appeared. */
  readonly served = new Map<string, ServedTaskView>();
  /** Delegated tasks by `<url> <taskId>` (two servers may use the same task id), in order. */
  readonly delegated = new Map<string, DelegatedTaskView>();
  /** The latest delegated task of each session. */
  readonly #bySession = new Map<string, DelegatedTaskView>();

  /** Folds one event in; returns the change of a task's state it made, if any. */
  apply(event: RunEvent): A2AChange | null {
    if (event.type === 'a2a.served') return this.#served(event);
    if (event.type === 'a2a.delegated') return this.#delegated(event);
    return null;
  }

  /** The remote task a session delegated (the latest, when it sent more than one). */
  delegatedBy(sessionId: string): DelegatedTaskView | undefined {
    return this.#bySession.get(sessionId);
  }

  get size(): number {
    return this.served.size + this.delegated.size;
  }

  #served(event: RunEvent): A2AChange | null {
    const d = event.data;
    const taskId = str(d.taskId);
    if (!taskId) return null;
    const state = str(d.state) || 'unknown';
    let task = this.served.get(taskId);
    const before = task?.state ?? null;
    if (!task) {
      task = { taskId, contextId: str(d.contextId), state, agent: str(d.agent), owner: str(d.owner) || null, runId: event.runId, firstAt: event.ts, updatedAt: event.ts, states: [], messages: [], dropped: 0 };
      this.served.set(taskId, task);
    }
    task.updatedAt = event.ts;
    if (str(d.owner)) task.owner = str(d.owner);
    if (str(d.contextId)) task.contextId = str(d.contextId);
    const text = str(d.text);
    if (text && (d.direction === 'in' || d.direction === 'out')) {
      task.messages.push({ ts: event.ts, direction: d.direction, state, text });
      if (task.messages.length > MESSAGES_KEPT) {
        task.messages.shift();
        task.dropped++;
      }
    }
    return this.#move(task, 'served', before, state);
  }

  #delegated(event: RunEvent): A2AChange | null {
    const d = event.data;
    const taskId = str(d.taskId);
    const url = str(d.url);
    if (!taskId) return null;
    const state = str(d.state) || 'unknown';
    const key = `${url} ${taskId}`;
    let task = this.delegated.get(key);
    const before = task?.state ?? null;
    if (!task) {
      task = {
        taskId,
        contextId: str(d.contextId),
        url,
        sessionId: event.subTaskId ?? '',
        agentType: event.agentType ?? '',
        parentId: event.parentId ?? null,
        state,
        states: [],
        message: '',
        error: null,
        firstAt: event.ts,
        updatedAt: event.ts,
      };
      this.delegated.set(key, task);
    }
    this.#bySession.set(task.sessionId, task);
    task.updatedAt = event.ts;
    if (str(d.message)) task.message = str(d.message);
    if (str(d.error)) task.error = str(d.error);
    return this.#move(task, 'delegated', before, state);
  }

  #move(task: ServedTaskView | DelegatedTaskView, kind: A2AChange['kind'], before: string | null, state: string): A2AChange | null {
    if (before === state && task.states.length > 0) return null;
    task.state = state;
    task.states.push(state);
    return { kind, taskId: task.taskId, from: before, to: state };
  }
}
