/**
 * What `a2a serve --a2a` keeps of the tasks it serves: one record per task (the protocol's Task,
 * the run behind it, the A2A events sent so far, numbered), under
 * `<workspace>/.a2a/a2a-protocol/tasks/<taskId>.json`, written atomically after every event, so
 * that a client that reconnects, or a server that restarts, finds all of it. Every record read
 * back is checked with its schema (machines/protocol.ts); one that fails is reported and skipped,
 * never half-used.
 *
 * `RecordTaskStore` is the SDK's TaskStore over these records: GetTask and ListTasks read them.
 * The runtime writes the tasks it runs itself (server.ts, in the order of its events); the SDK's
 * own writes are kept only for tasks the runtime does not hold (one that failed before a run
 * started).
 */
import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { A2AServedTask, A2AProtocolId } from '../../machines/protocol.js';
import { inlineIssues } from '../../actors/errors.js';
import { stateJson } from '../../actors/secrets.js';
import type { KeyValue } from '../../machines/ports.js';

/** Where served tasks are kept. */
export interface ServedTasks {
  read(taskId: string): Promise<A2AServedTask | null>;
  write(record: A2AServedTask): Promise<void>;
  /** Every readable record (unreadable ones are reported through `warn` and left out). */
  all(): Promise<A2AServedTask[]>;
}

export class FileServedTasks implements ServedTasks {
  readonly dir: string;
  readonly #warn: (line: string) => void;

  constructor(workspace: string, warn: (line: string) => void) {
    this.dir = join(workspace, '.a2a', 'a2a-protocol', 'tasks');
    this.#warn = warn;
  }

  #file(taskId: string): string {
    // ids come from clients: only names that cannot leave the directory
    const checked = A2AProtocolId.safeParse(taskId);
    if (!checked.success) throw new Error(`task id "${taskId.slice(0, 80)}" is not allowed: ${checked.error.issues[0]?.message}`);
    return join(this.dir, `${taskId}.json`);
  }

  #parse(text: string, file: string): A2AServedTask | null {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      this.#warn(`${file}: not valid JSON; this task is left out`);
      return null;
    }
    const parsed = A2AServedTask.safeParse(data);
    if (!parsed.success) {
      this.#warn(`${file}: not a served task record (${inlineIssues(parsed.error.issues)}); it is left out`);
      return null;
    }
    return parsed.data;
  }

  async read(taskId: string): Promise<A2AServedTask | null> {
    if (!A2AProtocolId.safeParse(taskId).success) return null;
    const file = this.#file(taskId);
    if (!existsSync(file)) return null;
    return this.#parse(readFileSync(file, 'utf8'), file);
  }

  async write(record: A2AServedTask): Promise<void> {
    const file = this.#file(String(record.task.id));
    mkdirSync(this.dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    // what a client sent may hold a key: the known secrets are replaced, as in every record
    writeFileSync(tmp, stateJson(record));
    renameSync(tmp, file);
  }

  async all(): Promise<A2AServedTask[]> {
    if (!existsSync(this.dir)) return [];
    const out: A2AServedTask[] = [];
    for (const name of readdirSync(this.dir)) {
      if (!name.endsWith('.json')) continue;
      const file = join(this.dir, name);
      const found = this.#parse(readFileSync(file, 'utf8'), file);
      if (found) out.push(found);
    }
    return out;
  }
}

/** The KV bucket of served tasks with `--nats` (`a2a_<ns>_protocol_tasks`). */
export const SERVED_TASKS_BUCKET = 'protocol_tasks';

/**
 * Served tasks in a key-value bucket (JetStream KV with `--nats`): every server of a namespace
 * reads the same tasks. Writes of one task go out in the order they were made (one chain per
 * task), each a copy taken when it was made.
 */
export class KvServedTasks implements ServedTasks {
  readonly #kv: KeyValue;
  readonly #warn: (line: string) => void;
  readonly #chains = new Map<string, Promise<void>>();

  constructor(kv: KeyValue, warn: (line: string) => void) {
    this.#kv = kv;
    this.#warn = warn;
  }

  #key(taskId: string): string | null {
    return A2AProtocolId.safeParse(taskId).success ? `t.${taskId}` : null;
  }

  #parse(value: unknown, key: string): A2AServedTask | null {
    const parsed = A2AServedTask.safeParse(value);
    if (parsed.success) return parsed.data;
    this.#warn(`served task ${key} in the KV bucket: not a served task record (${inlineIssues(parsed.error.issues)}); it is left out`);
    return null;
  }

  async read(taskId: string): Promise<A2AServedTask | null> {
    const key = this.#key(taskId);
    if (!key) return null;
    await this.#chains.get(taskId);
    const found = await this.#kv.get(key);
    return found ? this.#parse(found.value, key) : null;
  }

  write(record: A2AServedTask): Promise<void> {
    const taskId = String(record.task.id);
    const key = this.#key(taskId);
    if (!key) return Promise.reject(new Error(`task id "${taskId.slice(0, 80)}" is not allowed`));
    // redacted and copied now: the record goes on changing while the write waits its turn
    const copy: unknown = JSON.parse(stateJson(record));
    const next = (this.#chains.get(taskId) ?? Promise.resolve()).then(() => this.#kv.put(key, copy)).then(() => undefined);
    const settled = next.catch(() => undefined);
    this.#chains.set(taskId, settled);
    void settled.then(() => this.#chains.get(taskId) === settled && this.#chains.delete(taskId));
    return next;
  }

  async all(): Promise<A2AServedTask[]> {
    await Promise.all(this.#chains.values());
    const out: A2AServedTask[] = [];
    for (const key of await this.#kv.keys('t.')) {
      const found = await this.#kv.get(key);
      const parsed = found ? this.#parse(found.value, key) : null;
      if (parsed) out.push(parsed);
    }
    return out;
  }
}

export function taskOf(record: A2AServedTask): Task {
  return Task.fromJSON(record.task);
}

const DEFAULT_PAGE = 50;
const MAX_PAGE = 100;

/** The SDK's TaskStore over the served records (GetTask, ListTasks, and the SDK's bookkeeping). */
export class RecordTaskStore implements TaskStore {
  readonly #records: ServedTasks;
  /** Tasks the runtime writes itself (it holds their run): the SDK's copies of them are not kept. */
  readonly #owned: (taskId: string) => boolean;
  readonly #workspace: string;

  constructor(records: ServedTasks, owned: (taskId: string) => boolean, workspace: string) {
    this.#records = records;
    this.#owned = owned;
    this.#workspace = workspace;
  }

  async save(task: Task, _context: ServerCallContext): Promise<void> {
    if (this.#owned(task.id)) return;
    const existing = await this.#records.read(task.id);
    await this.#records.write({
      version: 1,
      task: Task.toJSON(task) as Record<string, unknown>,
      runId: existing?.runId ?? null,
      workspace: existing?.workspace ?? this.#workspace,
      agent: existing?.agent ?? '',
      facts: existing?.facts ?? [],
      waitingFor: existing?.waitingFor ?? null,
      events: existing?.events ?? [],
      updatedAt: Date.now(),
    });
  }

  async load(taskId: string, _context: ServerCallContext): Promise<Task | undefined> {
    const found = await this.#records.read(taskId);
    return found ? taskOf(found) : undefined;
  }

  async list(params: ListTasksRequest, _context: ServerCallContext): Promise<ListTasksResponse> {
    const after = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : null;
    const all = (await this.#records.all())
      .map(taskOf)
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

function withHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined) return task;
  return { ...task, history: historyLength <= 0 ? [] : task.history.slice(-historyLength) };
}
