/**
 * What keeps a run durable and reachable while it runs in this process, on the file store:
 *
 * - `Checkpointer`: after the actor tree changes, writes `checkpoint.json` (the tree and its
 *   timers), then commits the inbox journal's handled ids, then `status.json`. Writes run from a
 *   timer, between event-processing runs, so the snapshot is consistent; they are throttled by
 *   their own cost (at most ~10% of the time is spent writing).
 * - `ControlServer`: requests other processes leave in `control/` (`a2a inbox approve`,
 *   `a2a redirect` ...) are validated against the live run and turned into orchestrator events;
 *   each gets a reply file saying what happened or what was wrong.
 * - `planResume`: what a resumed run must replay from the journal (arrivals after the last
 *   checkpoint) and which handled lines the journal lacks (killed between the two writes).
 */
import { existsSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnyActorRef } from 'xstate';
import type { WorkerManagementEvent } from '../machines/orchestrator.machine.js';
import { ControlRequest, type HumanAnswer, type OrchestratorPolicy, type QueueMessage } from '../machines/protocol/index.js';
import { A2AError } from '../actors/errors.js';
import { stateJson, toJson } from '../actors/config/secrets.js';
import { takeCheckpoint, type Checkpoint } from '../actors/durability/checkpoint.js';
import { pendingHumanItems, runStatus, workerState } from '../actors/observation/runStatus.js';
import type { AgentRegistry } from '../actors/config/registry.js';
import type { PauseGates } from '../actors/people/pause.js';
import type { ProfileCatalog } from '../actors/runtime.js';
import type { SessionSpec } from '../machines/protocol/index.js';
import type { FileRunStore, JournalRecord } from './store/file.js';

// ---------------------------------------------------------------------------------------------
// Checkpoints

export class Checkpointer {
  #dirty = true;
  #timer: NodeJS.Timeout | null = null;
  #lastCostMs = 0;
  #stopped = false;
  #unsubscribe: (() => void) | null = null;
  /** Checkpoints written, and the time they took (for the closing note and `a2a status`). */
  readonly stats = { writes: 0, totalMs: 0, maxMs: 0, bytes: 0 };

  constructor(
    private readonly root: AnyActorRef,
    private readonly store: FileRunStore,
    private readonly runId: string,
    private readonly journal: { commit(): void; pendingHandled(): number },
    private readonly options: { minIntervalMs?: number; onError?: (error: Error) => void; beforeWrite?: () => void; afterWrite?: () => void } = {},
  ) {}

  start(): void {
    const subscription = this.root.system.inspect((event) => {
      if (event.type === '@xstate.snapshot') this.#mark();
    });
    this.#unsubscribe = () => subscription.unsubscribe();
    this.#mark();
  }

  #mark(): void {
    this.#dirty = true;
    if (this.#timer || this.#stopped) return;
    const delay = Math.max(this.options.minIntervalMs ?? 50, this.#lastCostMs * 10);
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.flush();
    }, delay);
  }

  /** Writes a checkpoint now (if anything changed), then the journal's handled ids and the status. */
  flush(): void {
    if (!this.#dirty && this.journal.pendingHandled() === 0) return;
    const started = performance.now();
    try {
      const checkpoint = takeCheckpoint(this.root, Date.now());
      // the logs first: they then hold everything this checkpoint holds (kill -9 loses nothing from them)
      this.options.beforeWrite?.();
      const text = JSON.stringify(checkpoint);
      this.store.writeCheckpoint(this.runId, checkpoint);
      this.journal.commit();
      this.options.afterWrite?.();
      this.store.writeStatus(this.runId, { ...runStatus(this.root, Date.now()), checkpoints: { ...this.stats } });
      this.#dirty = false;
      this.stats.bytes = text.length;
    } catch (error) {
      this.options.onError?.(error as Error);
    }
    const cost = performance.now() - started;
    this.#lastCostMs = cost;
    this.stats.writes++;
    this.stats.totalMs += cost;
    this.stats.maxMs = Math.max(this.stats.maxMs, cost);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#unsubscribe?.();
  }
}

// ---------------------------------------------------------------------------------------------
// Resume

export interface ResumePlan {
  /** Accepted (journaled) after the checkpoint was taken: into the inbox again. */
  replay: QueueMessage[];
  /** Handled according to the checkpoint, missing from the journal. */
  recovered: string[];
}

interface PersistedInboxView {
  queued: QueueMessage[];
  seen: string[];
  inFlight: QueueMessage | null;
}

/** The inbox's persisted state inside a checkpoint of the orchestrator. */
export function checkpointInbox(checkpoint: Checkpoint): PersistedInboxView {
  const children = (checkpoint.snapshot as unknown as { children?: Record<string, { snapshot?: unknown }> }).children;
  const inbox = children?.inbox?.snapshot as PersistedInboxView | undefined;
  if (!inbox || !Array.isArray(inbox.seen)) throw new A2AError('VALIDATION_ERROR', 'the checkpoint holds no inbox: it is not a checkpoint of an orchestrated run');
  return inbox;
}

export function planResume(checkpoint: Checkpoint, journal: JournalRecord[]): ResumePlan {
  const inbox = checkpointInbox(checkpoint);
  const seen = new Set(inbox.seen);
  const open = new Set([...inbox.queued.map((m) => m.id), ...(inbox.inFlight ? [inbox.inFlight.id] : [])]);
  const journalHandled = new Set<string>();
  const replay: QueueMessage[] = [];
  const replayed = new Set<string>();
  for (const record of journal) {
    if (record.t === 'handled') journalHandled.add(record.id);
    else if (!seen.has(record.message.id) && !replayed.has(record.message.id)) {
      replay.push(record.message);
      replayed.add(record.message.id);
    }
  }
  const recovered = inbox.seen.filter((id) => !open.has(id) && !journalHandled.has(id));
  return { replay, recovered };
}

// ---------------------------------------------------------------------------------------------
// Control requests

export { ControlRequest };

export type ControlReply = { ok: true; message: string } | { ok: false; error: string };

interface OrchestratorView {
  context: { tasks: Record<string, { state: string; spec: SessionSpec }>; order: string[]; policy: OrchestratorPolicy };
}

/** Validates a request against the live run and sends the events it stands for. */
export function handleControl(
  root: AnyActorRef,
  runtime: { registry: AgentRegistry; profiles?: ProfileCatalog | null; pauses?: PauseGates },
  request: ControlRequest,
  hooks: ControlHooks = {},
): ControlReply {
  const { registry } = runtime;
  const snapshot = root.getSnapshot() as OrchestratorView & { status: string };
  if (snapshot.status !== 'active') return { ok: false, error: 'the run has already ended' };
  const { tasks, order } = snapshot.context;
  const task = (taskId: string): ControlReply | null => {
    const t = tasks[taskId];
    if (!t) return { ok: false, error: `no task "${taskId}" in this run; tasks: ${order.join(', ')}` };
    if (t.state !== 'running') return { ok: false, error: `task "${taskId}" is ${t.state}; only a running task's worker can be managed` };
    return null;
  };
  switch (request.command) {
    case 'answer': {
      const items = pendingHumanItems(root);
      const index = /^\d+$/.test(request.id) ? Number(request.id) - 1 : -1;
      const item = items.find((i) => i.id === request.id) ?? (index >= 0 ? items[index] : undefined);
      if (!item) {
        return {
          ok: false,
          error: `nothing pending with id "${request.id}"${items.length ? `; pending: ${items.map((i, n) => `${n + 1}. ${i.id}`).join(', ')}` : '; nothing is pending'}`,
        };
      }
      const elicitation = item.kind === 'permission' && item.request?.elicitation !== undefined;
      if (item.kind === 'permission' && request.approved === undefined && !(elicitation && request.text?.trim())) {
        return { ok: false, error: `${item.id} is a permission request (${item.title}): approve or deny it` };
      }
      if (item.kind === 'question' && !request.text?.trim()) {
        return { ok: false, error: `${item.id} is a question (${item.title}): answer it with text, e.g. a2a inbox answer ${item.id} "use PostgreSQL"` };
      }
      const answer: HumanAnswer = {
        by: request.by,
        ...(request.approved !== undefined ? { approved: request.approved } : {}),
        ...(request.text ? { text: request.text } : {}),
        ...(request.reason ? { reason: request.reason } : {}),
      };
      root.send({ type: 'HUMAN_ANSWER', id: item.id, answer });
      const what = item.kind === 'permission' && request.approved !== undefined ? (request.approved ? 'approved' : 'denied') : 'answered';
      return { ok: true, message: `${item.id} ${what} (${item.title})` };
    }
    case 'approve_all': {
      // an MCP server's question wants an answer of its own, not a blanket approval
      const items = pendingHumanItems(root).filter((i) => i.kind === 'permission' && !i.request?.elicitation);
      if (items.length === 0) return { ok: false, error: 'no permission request is pending' };
      for (const item of items) {
        root.send({ type: 'HUMAN_ANSWER', id: item.id, answer: { approved: true, by: request.by, ...(request.reason ? { reason: request.reason } : {}) } });
      }
      return { ok: true, message: `approved ${items.length}: ${items.map((i) => i.title).join('; ')}` };
    }
    case 'reassign': {
      const refused = task(request.taskId);
      if (refused) return refused;
      if (snapshot.context.policy.permissions.matrix.agent_reassignment === 'auto_deny') {
        return { ok: false, error: 'agent_reassignment is auto_deny in the permission matrix' };
      }
      let agent;
      try {
        agent = registry.resolve(request.agent).parsed;
      } catch (error) {
        return { ok: false, error: (error as Error).message };
      }
      const from = tasks[request.taskId]!.spec.agent.raw;
      if (from === agent.raw) return { ok: false, error: `task "${request.taskId}" already runs as ${from}` };
      const event: WorkerManagementEvent = { type: 'REASSIGN_WORKER', taskId: request.taskId, agent, by: request.by };
      root.send(event);
      const tier = snapshot.context.policy.permissions.matrix.agent_reassignment;
      return {
        ok: true,
        message:
          tier === 'auto_approve'
            ? `task "${request.taskId}": ${from} → ${agent.raw} (conversation kept)`
            : `task "${request.taskId}": ${from} → ${agent.raw} is agent_reassignment, which asks a person: approve it with a2a inbox approve`,
      };
    }
    case 'redirect':
    case 'reinitialize': {
      const refused = task(request.taskId);
      if (refused) return refused;
      const type = request.command === 'redirect' ? 'REDIRECT_WORKER' : 'REINITIALIZE_WORKER';
      root.send({ type, taskId: request.taskId, instructions: request.instructions, by: request.by } satisfies WorkerManagementEvent);
      return {
        ok: true,
        message: request.command === 'redirect' ? `task "${request.taskId}" redirected (conversation kept)` : `task "${request.taskId}" restarted with new instructions`,
      };
    }
    case 'switch_model': {
      const refused = task(request.taskId);
      if (refused) return refused;
      const profiles = runtime.profiles;
      if (!profiles) return { ok: false, error: 'no model profiles are configured (the models section of the configuration)' };
      const names = profiles.names();
      if (!names.includes(request.profile)) return { ok: false, error: `no model profile "${request.profile}"; profiles: ${names.join(', ')}` };
      const spec = tasks[request.taskId]!.spec;
      const current = profiles.current(spec);
      if (current === request.profile) return { ok: false, error: `task "${request.taskId}" already runs on ${current}` };
      const expensive = profiles.moreExpensive(spec, request.profile);
      const action = expensive ? 'model_switch_expensive' : 'model_switch_same_tier';
      const tier = snapshot.context.policy.permissions.matrix[action];
      if (tier === 'auto_deny') return { ok: false, error: `${action} is auto_deny in the permission matrix` };
      root.send({ type: 'SWITCH_MODEL_WORKER', taskId: request.taskId, profile: request.profile, expensive, by: request.by } satisfies WorkerManagementEvent);
      return {
        ok: true,
        message:
          tier === 'auto_approve'
            ? `task "${request.taskId}": ${current} → ${request.profile} from its next model call (conversation kept, summarized if it does not fit)`
            : `task "${request.taskId}": ${current} → ${request.profile} is ${action}, which asks a person: approve it with a2a inbox approve`,
      };
    }
    case 'resume': {
      const refused = task(request.taskId);
      if (refused) return refused;
      const t = tasks[request.taskId]!;
      const state = workerState(root, t.spec.id);
      if (state !== 'paused') return { ok: false, error: `worker ${t.spec.id} is ${state ?? 'unknown'}, not paused: resume wakes a worker its circuit breaker paused` };
      root.send({ type: 'RESUME_WORKER', taskId: request.taskId, by: request.by } satisfies WorkerManagementEvent);
      return { ok: true, message: `worker ${t.spec.id} resumed` };
    }
    case 'pause':
    case 'unpause':
    case 'retry':
      return controlRun(root, runtime, request, hooks);
  }
}

/** The workflow child of a workflow run, as far as these commands need it. */
function workflowOf(root: AnyActorRef): { value: unknown; refusals: number; lastState: string; workerFailed: boolean } | null {
  const child = (root.getSnapshot() as { children: Record<string, AnyActorRef | undefined> }).children.workflow;
  if (!child) return null;
  const snap = child.getSnapshot() as { value: unknown; context: { refusals: number; history: string[]; error: { cause: string } | null } };
  return { value: snap.value, refusals: snap.context.refusals, lastState: snap.context.history.at(-1) ?? 'IDLE', workerFailed: snap.context.error?.cause === 'task' };
}

/**
 * pause / unpause / retry of the whole run. A workflow run's workflow takes the command or
 * refuses it (INVALID_STATE_TRANSITION: nothing changes); the agents' gate follows pause and
 * unpause; a plain run has only the gate.
 */
function controlRun(
  root: AnyActorRef,
  runtime: { pauses?: PauseGates },
  request: Extract<ControlRequest, { command: 'pause' | 'unpause' | 'retry' }>,
  hooks: ControlHooks,
): ControlReply {
  const gate = runtime.pauses?.gate((root.getSnapshot() as { context: { runId: string } }).context.runId);
  const ended = (root.getSnapshot() as { context: { workflow: { ended: unknown } | null } }).context.workflow?.ended;
  const before = ended ? null : workflowOf(root);
  const type = request.command === 'pause' ? 'PAUSE' : request.command === 'unpause' ? 'RESUME' : 'RETRY';
  if (before) {
    root.send({ type: 'WORKFLOW_COMMAND', command: { type, by: request.by } });
    const after = workflowOf(root)!;
    if (after.refusals > before.refusals) {
      const hint =
        type === 'RETRY'
          ? ' (retry runs again a step that failed: the workflow must be in ERROR)'
          : type === 'RESUME' && before.workerFailed
            ? ' (a worker of the step failed, and resuming would fail it again: a2a retry runs the step again)'
            : '';
      return { ok: false, error: `INVALID_STATE_TRANSITION: ${type} is not allowed while the workflow is ${before.lastState}${hint}` };
    }
  } else if (request.command === 'retry') {
    return { ok: false, error: `INVALID_STATE_TRANSITION: retry needs a workflow in ERROR; this run ${ended ? 'has a workflow that ended' : 'has no workflow'}` };
  }
  const now = Date.now();
  if (request.command === 'pause') {
    const closed = gate?.close(request.by, now) ?? false;
    if (!before && !closed) return { ok: false, error: `WORKFLOW_PAUSED: the run is already paused (by ${gate?.paused?.by ?? '?'})` };
    hooks.onPause?.(gate?.paused ?? { by: request.by, at: now }, request.by);
    return { ok: true, message: before ? 'paused: the workflow starts no new step; agents finish their current model call and wait (a2a resume)' : 'paused: agents finish their current model call and wait (a2a resume)' };
  }
  if (request.command === 'unpause') {
    const opened = gate?.open() ?? false;
    if (!before && !opened) return { ok: false, error: 'INVALID_STATE_TRANSITION: the run is not paused' };
    hooks.onPause?.(null, request.by);
    return { ok: true, message: before ? `resumed: the workflow goes on in ${workflowOf(root)?.lastState ?? '?'}` : 'resumed: agents go on' };
  }
  return { ok: true, message: `retrying: the workflow runs ${workflowOf(root)?.lastState ?? 'the failed step'} again` };
}

/** What the run's process does when a control request changes the run (persist the pause). */
export interface ControlHooks {
  onPause?(paused: { by: string; at: number } | null, by: string): void;
}

/** Serves control requests: polls `control/` (cheap, and works on every file system). */
export class ControlServer {
  #timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly dir: string,
    private readonly handle: (request: ControlRequest) => ControlReply,
    private readonly pollMs = 150,
  ) {}

  start(): void {
    this.#timer = setInterval(() => this.poll(), this.pollMs);
  }

  poll(): void {
    if (!existsSync(this.dir)) return;
    for (const name of readdirSync(this.dir).filter((n) => n.startsWith('req-') && n.endsWith('.json')).sort()) {
      const file = join(this.dir, name);
      let reply: ControlReply;
      try {
        const parsed = ControlRequest.safeParse(JSON.parse(readFileSync(file, 'utf8')));
        reply = parsed.success
          ? this.handle(parsed.data)
          : { ok: false, error: `invalid request: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`).join('; ')}` };
      } catch (error) {
        reply = { ok: false, error: `cannot process the request: ${(error as Error).message}` };
      }
      const out = join(this.dir, `res-${name.slice(4)}`);
      writeFileSync(`${out}.tmp`, toJson(reply));
      renameSync(`${out}.tmp`, out);
      unlinkSync(file);
    }
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }
}

/** Whether a process of this pid runs (a run's record names the process that runs it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Emergency stop of a run in progress on this machine (`a2a stop`, the studio's Stop): signals the
 * run's process (SIGINT, as Ctrl-C would), which cancels the whole tree; every worker and sub-task
 * still reports `cancelled`. A run whose process is gone is marked crashed. Returns what was done.
 */
export function stopRunProcess(store: FileRunStore, runId: string): string {
  const record = store.read(runId);
  if (record.status !== 'running') {
    throw new A2AError('INVALID_STATE_TRANSITION', `run ${record.runId} is not running (it is ${record.status})`);
  }
  if (!alive(record.pid)) {
    store.update(record.runId, { status: 'crashed', finishedAt: Date.now() });
    throw new A2AError('NOT_FOUND', `run ${record.runId} has no live process (pid ${record.pid}); marked crashed`);
  }
  process.kill(record.pid, 'SIGINT');
  return `stop requested for run ${record.runId} (pid ${record.pid}): every worker and sub-task is being cancelled`;
}

/** Sends a request to the process running `runId` and waits for its reply. */
export async function sendControl(store: FileRunStore, runId: string, request: ControlRequest, timeoutMs = 10_000): Promise<ControlReply> {
  const record = store.read(runId);
  if (record.status !== 'running') throw new A2AError('INVALID_STATE_TRANSITION', `run ${runId} is ${record.status}, not running`);
  if (!alive(record.pid)) {
    throw new A2AError('NOT_FOUND', `run ${runId} has no live process (pid ${record.pid}); continue it with: a2a run --resume ${runId}`);
  }
  const dir = store.controlDir(runId);
  const name = `${Date.now().toString(36)}-${process.pid}-${Math.random().toString(36).slice(2, 8)}.json`;
  const tmp = join(dir, `tmp-${name}`);
  writeFileSync(tmp, stateJson(request));
  renameSync(tmp, join(dir, `req-${name}`));
  const reply = join(dir, `res-${name}`);
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(reply)) {
      const value = JSON.parse(readFileSync(reply, 'utf8')) as ControlReply;
      unlinkSync(reply);
      return value;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    unlinkSync(join(dir, `req-${name}`));
  } catch {
    // it was picked up after all; its reply will be left behind
  }
  throw new A2AError('AGENT_TIMEOUT', `run ${runId} (pid ${record.pid}) did not answer within ${timeoutMs} ms`);
}
