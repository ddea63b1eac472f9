/**
 * What `a2a serve --a2a` keeps of the tasks it serves, in two parts per task:
 * - its events, numbered from 1, in an append-only log: each appended before it is sent (the
 *   file store writes the events of a synchronous burst together at its end, before a later
 *   microtask can send them), so a client that reconnects, or a server that restarts, finds
 *   every event a client may have seen;
 * - a snapshot (the protocol's Task, the run behind it, what it waits for), written now and then
 *   (server.ts: at most every 200 ms, and at once when the task stops or ends), with the number of
 *   the last event folded into it. Reading a task folds the events after that number in, so a
 *   snapshot that lags loses nothing.
 * A task of 2,000 events costs a few dozen appends (one a burst) and a few dozen snapshots, instead
 * of 2,000 rewrites of a growing record.
 *
 * Files: `<workspace>/.a2a/a2a-protocol/tasks/<taskId>.json` and `<taskId>.events.jsonl`; with
 * `--nats`, the namespace's KV bucket (`t.<taskId>` and `e.<taskId>.<seq>`). Everything read back
 * is checked with its schema (machines/protocol/); what fails is reported and left out, never
 * half-used.
 *
 * `RecordTaskStore` is the SDK's TaskStore over these: GetTask and ListTasks read them (a task the
 * server holds, or one that has just ended, is read from memory). The runtime writes the tasks it
 * runs itself; the SDK's own writes are kept only for the others.
 */
import { StreamResponse, Task, TaskPushNotificationConfig, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { resolveUserScope, type PushNotificationStore, type ServerCallContext, type TaskStore } from '@a2a-js/sdk/server';
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { A2AServedEvent, A2AServedTask, A2AProtocolId } from '../../machines/protocol/index.js';
import { inlineIssues } from '../../actors/errors.js';
import { stateJson } from '../../actors/config/secrets.js';
import type { KeyValue } from '../../machines/ports.js';

/** A task as read back: its snapshot with every logged event folded in, and the events. */
export interface ServedRead {
  record: A2AServedTask;
  events: A2AServedEvent[];
}

/** Where served tasks are kept. */
export interface ServedTasks {
  read(taskId: string): Promise<ServedRead | null>;
  /**
   * Appends one event to the task's log, in order. The file store writes the events of one
   * synchronous burst together, in a microtask queued by the burst's first append: before any
   * code that runs after the caller's in a later microtask (an SDK stream sends an event only
   * after awaiting), so an event is on disk before a client can have seen it.
   */
  append(taskId: string, event: A2AServedEvent): Promise<void>;
  /** Writes the task's snapshot. */
  write(record: A2AServedTask): Promise<void>;
  /**
   * Every readable task, events folded in (unreadable ones are reported and left out); with
   * `match`, those whose snapshot it takes (asked of the snapshot as written, before its events
   * are read: only what an event never changes, such as the task's id or context).
   */
  all(match?: (snapshot: A2AServedTask) => boolean): Promise<A2AServedTask[]>;
  /** Removes a task: its snapshot, its events, its push-notification configs. */
  remove(taskId: string): Promise<void>;
  /** The push-notification configs registered for a task (see DurablePushStore). */
  readPush(taskId: string): Promise<StoredPush[]>;
  writePush(taskId: string, entries: StoredPush[]): Promise<void>;
}

/** A push-notification config as kept: who registered it, over which protocol version, the config. */
export interface StoredPush {
  owner: string;
  wireVersion: string;
  config: Record<string, unknown>;
}

/** Push configs read back: entries of the right shape only (a hand-edited file cannot break a task). */
function pushEntries(value: unknown): StoredPush[] {
  if (!Array.isArray(value)) return [];
  return value.filter(
    (e): e is StoredPush => !!e && typeof e === 'object' && typeof (e as StoredPush).owner === 'string' && typeof (e as StoredPush).wireVersion === 'string' && !!(e as StoredPush).config && typeof (e as StoredPush).config === 'object',
  );
}

/**
 * The SDK's push-notification store over the served records: a config registered for a task
 * survives a restart of the server (the SDK keeps them in memory only), scoped by who registered
 * it as the SDK's own store scopes them.
 */
export class DurablePushStore implements PushNotificationStore {
  readonly #records: ServedTasks;
  readonly #chains = new Map<string, Promise<unknown>>();

  constructor(records: ServedTasks) {
    this.#records = records;
  }

  /** One change at a time per task: two registrations at once must not lose one. */
  #change(taskId: string, change: (entries: StoredPush[]) => StoredPush[]): Promise<void> {
    const next = (this.#chains.get(taskId) ?? Promise.resolve()).then(async () => this.#records.writePush(taskId, change(await this.#records.readPush(taskId))));
    const settled = next.catch(() => undefined);
    this.#chains.set(taskId, settled);
    void settled.then(() => this.#chains.get(taskId) === settled && this.#chains.delete(taskId));
    return next;
  }

  async save(taskId: string, context: ServerCallContext, config: TaskPushNotificationConfig): Promise<void> {
    if (!config.id) config.id = randomUUID();
    const owner = resolveUserScope(context);
    const entry: StoredPush = { owner, wireVersion: context.requestedVersion || '0.3', config: TaskPushNotificationConfig.toJSON(config) as Record<string, unknown> };
    await this.#change(taskId, (entries) => [...entries.filter((e) => !(e.owner === owner && e.config.id === config.id)), entry]);
  }

  async load(taskId: string, context: ServerCallContext): Promise<TaskPushNotificationConfig[]> {
    return (await this.loadWithMetadata(taskId, context)).map((e) => e.config);
  }

  async loadWithMetadata(taskId: string, context: ServerCallContext): Promise<Array<{ config: TaskPushNotificationConfig; wireVersion: string }>> {
    await this.#chains.get(taskId);
    const owner = resolveUserScope(context);
    return (await this.#records.readPush(taskId)).filter((e) => e.owner === owner).map((e) => ({ config: TaskPushNotificationConfig.fromJSON(e.config), wireVersion: e.wireVersion }));
  }

  async delete(taskId: string, context: ServerCallContext, configId: string = taskId): Promise<void> {
    const owner = resolveUserScope(context);
    await this.#change(taskId, (entries) => entries.filter((e) => !(e.owner === owner && e.config.id === configId)));
  }
}

/** Folds one logged event (its JSON, as the log holds it) into a task: when a task is read back. */
export function applyEvent(task: Task, wire: Record<string, unknown>): Task {
  return applyPayload(task, StreamResponse.fromJSON(wire).payload);
}

/**
 * Folds one event into a task (status, history, artifacts), as the protocol's task evolves: as
 * events are sent (the event's own objects, which nothing changes after) and when a task is read
 * back. An artifact update replaces the artifact (or, `append`, makes a new one with the parts
 * added): the task's messages and artifacts are never changed in place (see sdkCopy).
 */
export function applyPayload(task: Task, payload: StreamResponse['payload']): Task {
  if (!payload) return task;
  if (payload.$case === 'task') return payload.value;
  if (payload.$case === 'statusUpdate' && payload.value.status) {
    task.status = payload.value.status;
    if (payload.value.status.message) pushHistory(task, payload.value.status.message);
  } else if (payload.$case === 'artifactUpdate' && payload.value.artifact) {
    const artifact = payload.value.artifact;
    const at = artifactAt(task.artifacts, artifact.artifactId);
    if (at < 0) {
      artifactIndex.get(task.artifacts)?.set(artifact.artifactId, task.artifacts.length);
      task.artifacts.push(artifact);
    } else if (payload.value.append) task.artifacts[at] = { ...task.artifacts[at]!, parts: [...task.artifacts[at]!.parts, ...artifact.parts] };
    else task.artifacts[at] = artifact;
  }
  return task;
}

/**
 * Where each artifact of a list is, by id, for applyPayload: a task of 1,000 sub-tasks looked for
 * each new result among all those before it (500,000 comparisons of ids, 80 ms of its 2.8 s
 * served). Kept by the list (a task read back or replaced has a list, and an index, of its own);
 * the lists folded into are changed here only (the SDK gets copies: sdkCopy), and one whose
 * length no longer matches its index is indexed again.
 */
const artifactIndex = new WeakMap<Task['artifacts'], Map<string, number>>();

function artifactAt(artifacts: Task['artifacts'], id: string): number {
  let index = artifactIndex.get(artifacts);
  const at = index?.get(id);
  if (!index || index.size !== artifacts.length || (at !== undefined && artifacts[at]?.artifactId !== id)) {
    index = new Map(artifacts.map((a, i) => [a.artifactId, i]));
    artifactIndex.set(artifacts, index);
    return index.get(id) ?? -1;
  }
  return at ?? -1;
}

/** The agent's messages kept in a task's history (the client's are all kept); the log has every one. */
export const HISTORY_AGENT_MESSAGES = 50;

function pushHistory(task: Task, message: Task['history'][number]): void {
  task.history.push(message);
  let agents = 0;
  for (const m of task.history) if (m.role !== 1) agents++;
  if (agents <= HISTORY_AGENT_MESSAGES) return;
  // drop the oldest agent messages beyond the limit
  let drop = agents - HISTORY_AGENT_MESSAGES;
  task.history = task.history.filter((m) => m.role === 1 || drop-- <= 0);
}

function fold(record: A2AServedTask, events: A2AServedEvent[]): A2AServedTask {
  const later = events.filter((e) => e.seq > record.seq);
  if (later.length === 0) return record;
  let task = Task.fromJSON(record.task);
  for (const e of later) task = applyEvent(task, e.event);
  return { ...record, task: Task.toJSON(task) as Record<string, unknown>, seq: later.at(-1)!.seq };
}

function checked<T>(schema: { safeParse(v: unknown): { success: true; data: T } | { success: false; error: { issues: Parameters<typeof inlineIssues>[0] } } }, value: unknown, where: string, warn: (line: string) => void): T | null {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  warn(`${where}: ${inlineIssues(parsed.error.issues)}; left out`);
  return null;
}

/** Lines of one task's log waiting for the end of their burst (FileServedTasks.append). */
interface PendingLines {
  file: string;
  lines: string[];
  written: Promise<void>;
  settle: (error?: unknown) => void;
}

export class FileServedTasks implements ServedTasks {
  readonly dir: string;
  readonly #warn: (line: string) => void;
  /**
   * Events appended in the current synchronous burst, by task, written with one append per task
   * at its end. A sub-task fan-out sends its events in bursts (1,000 statuses at once when the
   * sub-tasks start, then tens at a time as they end): a task of 1,000 sub-tasks made 2,004
   * appends (each an open, a write, a close, and a mkdir) in 19 bursts, 120 ms of its 2.8 s served.
   */
  readonly #pending = new Map<string, PendingLines>();
  #scheduled = false;
  /** The directory is made once (and again if it went: see #appendLines). */
  #dirMade = false;
  /**
   * Each task's push configs as this process last read or wrote them: the SDK asks for them at
   * every event it sends (to push it), and looking at the disk each time (the id checked, a stat)
   * was 40 ms of a task of 1,000 sub-tasks. A workspace's file store is one server's (it alone
   * resumes the tasks' runs; servers share tasks through NATS, KvServedTasks), so what this
   * process wrote is what the file holds. Removing a task forgets its entry.
   */
  readonly #push = new Map<string, StoredPush[]>();

  constructor(workspace: string, warn: (line: string) => void) {
    this.dir = join(workspace, '.a2a', 'a2a-protocol', 'tasks');
    this.#warn = warn;
  }

  #file(taskId: string, suffix = '.json'): string {
    // ids come from clients: only names that cannot leave the directory
    const ok = A2AProtocolId.safeParse(taskId);
    if (!ok.success) throw new Error(`task id "${taskId.slice(0, 80)}" is not allowed: ${ok.error.issues[0]?.message}`);
    return join(this.dir, `${taskId}${suffix}`);
  }

  #snapshot(file: string): A2AServedTask | null {
    let data: unknown;
    try {
      data = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      this.#warn(`${file}: not valid JSON; this task is left out`);
      return null;
    }
    return checked(A2AServedTask, data, `${file}: not a served task record`, this.#warn);
  }

  #events(taskId: string): A2AServedEvent[] {
    const file = this.#file(taskId, '.events.jsonl');
    if (!existsSync(file)) return [];
    const out: A2AServedEvent[] = [];
    const lines = readFileSync(file, 'utf8').split('\n');
    lines.forEach((line, i) => {
      if (!line) return;
      let data: unknown;
      try {
        data = JSON.parse(line);
      } catch {
        // a line cut by a kill in the middle of a write: only the last can be
        if (i < lines.length - 1 && lines.slice(i + 1).some(Boolean)) this.#warn(`${file}:${i + 1}: not valid JSON; left out`);
        return;
      }
      const event = checked(A2AServedEvent, data, `${file}:${i + 1}`, this.#warn);
      if (event) out.push(event);
    });
    return out;
  }

  /** Writes a task's pending lines now (before it is read, its snapshot written, or it is removed). */
  #writePending(taskId: string): void {
    const batch = this.#pending.get(taskId);
    if (!batch) return;
    this.#pending.delete(taskId);
    try {
      this.#appendLines(batch.file, batch.lines.join(''));
      batch.settle();
    } catch (error) {
      batch.settle(error);
    }
  }

  #appendLines(file: string, text: string): void {
    if (!this.#dirMade) {
      mkdirSync(this.dir, { recursive: true });
      this.#dirMade = true;
    }
    try {
      appendFileSync(file, text);
    } catch (error) {
      // the directory was removed under the server (a workspace cleaned): made again
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(this.dir, { recursive: true });
      appendFileSync(file, text);
    }
  }

  async read(taskId: string): Promise<ServedRead | null> {
    if (!A2AProtocolId.safeParse(taskId).success) return null;
    this.#writePending(taskId);
    const file = this.#file(taskId);
    if (!existsSync(file)) return null;
    const record = this.#snapshot(file);
    if (!record) return null;
    const events = this.#events(taskId);
    return { record: fold(record, events), events };
  }

  append(taskId: string, event: A2AServedEvent): Promise<void> {
    let batch = this.#pending.get(taskId);
    if (!batch) {
      let file: string;
      try {
        file = this.#file(taskId, '.events.jsonl');
      } catch (error) {
        return Promise.reject(error);
      }
      let settle!: (error?: unknown) => void;
      const written = new Promise<void>((resolve, reject) => (settle = (error) => (error === undefined ? resolve() : reject(error))));
      batch = { file, lines: [], written, settle };
      this.#pending.set(taskId, batch);
      if (!this.#scheduled) {
        this.#scheduled = true;
        queueMicrotask(() => {
          this.#scheduled = false;
          for (const id of [...this.#pending.keys()]) this.#writePending(id);
        });
      }
    }
    // serialized now: the line is the event as it was appended
    batch.lines.push(`${stateJson(event)}\n`);
    return batch.written;
  }

  async write(record: A2AServedTask): Promise<void> {
    const file = this.#file(String(record.task.id));
    // the log first: a snapshot never counts events (its seq) the log does not hold yet
    this.#writePending(String(record.task.id));
    mkdirSync(this.dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    // what a client sent may hold a key: the known secrets are replaced, as in every record
    writeFileSync(tmp, stateJson(record));
    renameSync(tmp, file);
  }

  async remove(taskId: string): Promise<void> {
    this.#writePending(taskId);
    this.#push.delete(taskId);
    for (const suffix of ['.json', '.events.jsonl', '.push']) rmSync(this.#file(taskId, suffix), { force: true });
  }

  async readPush(taskId: string): Promise<StoredPush[]> {
    const known = this.#push.get(taskId);
    if (known) return [...known];
    const file = this.#file(taskId, '.push');
    let entries: StoredPush[] = [];
    if (existsSync(file)) {
      try {
        entries = pushEntries(JSON.parse(readFileSync(file, 'utf8')));
      } catch {
        this.#warn(`${file}: not valid JSON; no push-notification config of task ${taskId} is read from it`);
      }
    }
    this.#push.set(taskId, entries);
    return [...entries];
  }

  async writePush(taskId: string, entries: StoredPush[]): Promise<void> {
    const file = this.#file(taskId, '.push');
    this.#push.set(taskId, [...entries]);
    mkdirSync(this.dir, { recursive: true });
    if (entries.length === 0) return rmSync(file, { force: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(entries));
    renameSync(tmp, file);
  }

  async all(match?: (snapshot: A2AServedTask) => boolean): Promise<A2AServedTask[]> {
    for (const id of [...this.#pending.keys()]) this.#writePending(id);
    if (!existsSync(this.dir)) return [];
    const out: A2AServedTask[] = [];
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.json')) continue;
      const record = this.#snapshot(join(this.dir, name));
      if (record && (!match || match(record))) out.push(fold(record, this.#events(String(record.task.id))));
    }
    return out;
  }
}

/** The KV bucket of served tasks with `--nats` (`a2a_<ns>_protocol_tasks`). */
export const SERVED_TASKS_BUCKET = 'protocol_tasks';

/**
 * Served tasks in a key-value bucket (JetStream KV with `--nats`): every server of a namespace
 * reads the same tasks. A task's writes go out in the order they were made (one chain per task),
 * each a copy taken when it was made.
 */
export class KvServedTasks implements ServedTasks {
  readonly #kv: KeyValue;
  readonly #warn: (line: string) => void;
  readonly #chains = new Map<string, Promise<void>>();

  constructor(kv: KeyValue, warn: (line: string) => void) {
    this.#kv = kv;
    this.#warn = warn;
  }

  #ok(taskId: string): boolean {
    return A2AProtocolId.safeParse(taskId).success;
  }

  #queue(taskId: string, key: string, value: unknown): Promise<void> {
    // redacted and copied now: the task goes on changing while the write waits its turn
    const copy: unknown = JSON.parse(stateJson(value));
    const next = (this.#chains.get(taskId) ?? Promise.resolve()).then(() => this.#kv.put(key, copy)).then(() => undefined);
    const settled = next.catch(() => undefined);
    this.#chains.set(taskId, settled);
    void settled.then(() => this.#chains.get(taskId) === settled && this.#chains.delete(taskId));
    return next;
  }

  async #events(taskId: string): Promise<A2AServedEvent[]> {
    const out: A2AServedEvent[] = [];
    for (const key of await this.#kv.keys(`e.${taskId}.`)) {
      const found = await this.#kv.get(key);
      const event = found ? checked(A2AServedEvent, found.value, `served task event ${key} in the KV bucket`, this.#warn) : null;
      if (event) out.push(event);
    }
    return out.sort((a, b) => a.seq - b.seq);
  }

  async read(taskId: string): Promise<ServedRead | null> {
    if (!this.#ok(taskId)) return null;
    await this.#chains.get(taskId);
    const found = await this.#kv.get(`t.${taskId}`);
    const record = found ? checked(A2AServedTask, found.value, `served task t.${taskId} in the KV bucket`, this.#warn) : null;
    if (!record) return null;
    const events = await this.#events(taskId);
    return { record: fold(record, events), events };
  }

  append(taskId: string, event: A2AServedEvent): Promise<void> {
    if (!this.#ok(taskId)) return Promise.reject(new Error(`task id "${taskId.slice(0, 80)}" is not allowed`));
    return this.#queue(taskId, `e.${taskId}.${event.seq}`, event);
  }

  write(record: A2AServedTask): Promise<void> {
    const taskId = String(record.task.id);
    if (!this.#ok(taskId)) return Promise.reject(new Error(`task id "${taskId.slice(0, 80)}" is not allowed`));
    return this.#queue(taskId, `t.${taskId}`, record);
  }

  async remove(taskId: string): Promise<void> {
    if (!this.#ok(taskId)) return;
    await this.#chains.get(taskId);
    await this.#kv.delete(`t.${taskId}`);
    await this.#kv.delete(`p.${taskId}`);
    await this.#kv.deleteUnder(`e.${taskId}.`);
  }

  async readPush(taskId: string): Promise<StoredPush[]> {
    if (!this.#ok(taskId)) return [];
    return pushEntries((await this.#kv.get(`p.${taskId}`))?.value);
  }

  async writePush(taskId: string, entries: StoredPush[]): Promise<void> {
    if (!this.#ok(taskId)) throw new Error(`task id "${taskId.slice(0, 80)}" is not allowed`);
    if (entries.length === 0) await this.#kv.delete(`p.${taskId}`);
    else await this.#kv.put(`p.${taskId}`, entries);
  }

  async all(match?: (snapshot: A2AServedTask) => boolean): Promise<A2AServedTask[]> {
    await Promise.all(this.#chains.values());
    const out: A2AServedTask[] = [];
    for (const key of await this.#kv.keys('t.')) {
      const found = await this.#kv.get(key);
      const record = found ? checked(A2AServedTask, found.value, `served task ${key} in the KV bucket`, this.#warn) : null;
      if (record && (!match || match(record))) out.push(fold(record, await this.#events(String(record.task.id))));
    }
    return out;
  }
}

export function taskOf(record: A2AServedTask): Task {
  return Task.fromJSON(record.task);
}

const DEFAULT_PAGE = 50;
const MAX_PAGE = 100;

/** The client a call comes from (its credential's name), or undefined without named clients. */
export function callerOf(context: ServerCallContext | undefined): string | undefined {
  const user = context?.user;
  return user?.isAuthenticated ? user.userName : undefined;
}

/** Whether a task created by `owner` is the caller's to see: tasks without an owner are everyone's. */
export function visibleTo(owner: string | undefined, context: ServerCallContext | undefined): boolean {
  return owner === undefined || owner === callerOf(context);
}

/** The SDK's TaskStore over the served records (GetTask, ListTasks, and the SDK's bookkeeping). */
export class RecordTaskStore implements TaskStore {
  readonly #records: ServedTasks;
  /** A task the runtime holds and writes itself (its live Task, or as it ended a moment ago), or undefined. */
  readonly #held: (taskId: string) => Task | undefined;
  readonly #workspace: string;
  /** The client that created a held task (named clients), or undefined. */
  readonly #heldOwner: (taskId: string) => string | undefined;

  constructor(records: ServedTasks, held: (taskId: string) => Task | undefined, workspace: string, heldOwner: (taskId: string) => string | undefined = () => undefined) {
    this.#records = records;
    this.#held = held;
    this.#workspace = workspace;
    this.#heldOwner = heldOwner;
  }

  async save(task: Task, context: ServerCallContext): Promise<void> {
    if (this.#held(task.id)) return;
    const existing = (await this.#records.read(task.id))?.record;
    // another client's task is not this caller's to write (the SDK saves only what it loaded)
    if (existing && !visibleTo(existing.owner, context)) return;
    await this.#records.write({
      version: 1,
      task: Task.toJSON(task) as Record<string, unknown>,
      runId: existing?.runId ?? null,
      workspace: existing?.workspace ?? this.#workspace,
      agent: existing?.agent ?? '',
      facts: existing?.facts ?? [],
      waitingFor: existing?.waitingFor ?? null,
      seq: existing?.seq ?? 0,
      updatedAt: Date.now(),
      ...(existing?.owner ? { owner: existing.owner } : {}),
    });
  }

  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const held = this.#held(taskId);
    if (held) return visibleTo(this.#heldOwner(taskId), context) ? sdkCopy(held) : undefined;
    const found = await this.#records.read(taskId);
    // another client's task does not exist for this caller: it can neither read nor change it
    return found && visibleTo(found.record.owner, context) ? taskOf(found.record) : undefined;
  }

  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : null;
    const all = (await this.#records.all())
      .filter((r) => visibleTo(r.owner, context))
      .map((r) => this.#held(String(r.task.id)) ?? taskOf(r))
      .filter((t) => !params.contextId || t.contextId === params.contextId)
      .filter((t) => !params.status || t.status?.state === params.status)
      .filter((t) => after === null || (t.status?.timestamp ? Date.parse(t.status.timestamp) > after : false))
      // newest first, as the protocol asks
      .sort((a, b) => (b.status?.timestamp ?? '').localeCompare(a.status?.timestamp ?? '') || b.id.localeCompare(a.id));
    const size = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE, 1), MAX_PAGE);
    const start = params.pageToken ? Number.parseInt(params.pageToken, 10) : 0;
    const offset = Number.isInteger(start) && start >= 0 ? start : 0;
    const page = all.slice(offset, offset + size).map((t) => withHistory(t, params.historyLength));
    return { tasks: page, nextPageToken: offset + size < all.length ? String(offset + size) : '', pageSize: size, totalSize: all.length };
  }
}

/**
 * A held task as the SDK may change it: a copy of the task, its status, metadata and lists, the
 * messages and artifacts in the lists shared. The SDK loads the task on every event a request's
 * stream carries (its ResultManager folds the event in and saves; save leaves a held task alone)
 * and replaces what it changes (status, metadata, history, an artifact), never changing a message
 * or an artifact in place but to append a chunk to one, which this server never sends (an
 * artifact update here is the whole artifact, append false); the executor replaces them too
 * (applyPayload). A deep copy (structuredClone) per event made a task of 1,000 sub-tasks cost 3.4 s
 * of its 6.2 s served (2,004 events, each copying up to 1,000 artifacts); this copies pointers.
 */
function sdkCopy(task: Task): Task {
  return {
    ...task,
    status: task.status ? { ...task.status } : task.status,
    history: [...task.history],
    artifacts: [...task.artifacts],
    metadata: task.metadata ? { ...task.metadata } : task.metadata,
  };
}

function withHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength <= 0 ? [] : task.history.slice(-historyLength) };
}
