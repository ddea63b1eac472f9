/**
 * What the seed 004 tests share (test/nats/seed004.test.ts, and security.test.ts with the
 * example server configuration): an external agent written from the spec's JSON examples as a
 * plain NATS client, the gateway started through its command in this process, and the owner's
 * side of a remote session (what a parent's supervisor runs) to see a task's updates and result.
 */
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createActor, type AnyActorRef, type AnyEventObject } from 'xstate';
import { gatewayCommand, type GatewayCommandOptions } from '../../bin/commands/gateway.js';
import { RunConfig } from '../../actors/config/config.js';
import { recordingParent } from '../../actors/graph/paths.js';
import { createRemoteSessionLogic, ensureQueues } from '../../actors/distribution/remote.js';
import { realClock } from '../../adapters/clock.js';
import type { Seed004Gateway } from '../../adapters/seed004/gateway.js';
import type { Transport } from '../../machines/ports.js';
import type { SessionSpec, SubTaskResult, TaskUpdate } from '../../machines/protocol/index.js';
import { parseEnvelope, Seed004Message } from '../../machines/seed004.js';

/** Registers what a test must undo (run in reverse order after it). */
export type Track = (cleanup: () => Promise<unknown>) => void;

/** Polls until `probe` gives a value (real time), failing with `what` after `ms`. */
export async function waitUntil<T>(what: string, probe: () => T | undefined | null | false, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export type Wire = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
export interface Received {
  message: Wire;
  at: number;
}

/**
 * A seed 004 coding agent: it hears `agent.<id>` and `agent.all`, and speaks on its own
 * `orchestrator.messages.<id>` (`send`), or wherever a test says (`sendOn`).
 */
export class SeedAgent {
  readonly inbox: Received[] = [];
  #nc: NatsConnection | null = null;
  #beat: ReturnType<typeof setInterval> | null = null;
  #startedAt = Date.now();
  current = 0;

  constructor(
    readonly id: string,
    readonly prefix: string,
    readonly options: { max: number; heartbeatMs?: number; onMessage?: (message: Wire, agent: SeedAgent) => void },
    readonly track: Track,
  ) {}

  /** Connects (as `auth`'s user, if given) and listens to its two subjects. */
  async start(url: string, auth: { user: string; pass: string } | null = null): Promise<this> {
    this.#nc = await connect({ servers: url, name: `agent-${this.id}`, ...(auth ?? {}) });
    const callback = (error: Error | null, msg: { string(): string }) => {
      if (error) return;
      const message = JSON.parse(msg.string()) as Wire;
      this.inbox.push({ message, at: Date.now() });
      this.options.onMessage?.(message, this);
    };
    this.#nc.subscribe(`${this.prefix}.agent.${this.id}`, { callback });
    this.#nc.subscribe(`${this.prefix}.agent.all`, { callback });
    await this.#nc.flush();
    this.track(() => this.close());
    return this;
  }

  /** Its own subject: where it speaks. */
  get subject(): string {
    return `${this.prefix}.orchestrator.messages.${this.id}`;
  }

  envelope(type: string, payload: Wire, extra: Wire = {}): Wire {
    return { message_id: randomUUID(), sender_id: this.id, recipient_id: 'orchestrator', message_type: type, payload, timestamp: new Date().toISOString(), ...extra };
  }

  send(message: Wire | string): Wire | string {
    return this.sendOn(this.subject, message);
  }

  sendOn(subject: string, message: Wire | string): Wire | string {
    this.#nc!.publish(subject, typeof message === 'string' ? message : JSON.stringify(message));
    return message;
  }

  /** Everything sent so far has reached the server (and whatever it forwards it to, in order). */
  async flush(): Promise<void> {
    await this.#nc!.flush();
  }

  registration(): Wire {
    return this.envelope('registration', {
      agent_id: this.id,
      agent_type: 'coding_agent',
      capabilities: ['implementation', 'refactoring', 'bug_fix', 'feature', 'optimization', 'test_generation'],
      max_concurrent_tasks: this.options.max,
      version: '0.1.0',
    });
  }

  register(): Wire {
    return this.send(this.registration()) as Wire;
  }

  heartbeat(): void {
    this.send(
      this.envelope('heartbeat', {
        agent_id: this.id,
        timestamp: new Date().toISOString(),
        current_tasks: this.current,
        available_capacity: this.options.max - this.current,
        status: 'healthy',
        uptime: Math.round((Date.now() - this.#startedAt) / 1000),
      }),
    );
  }

  startHeartbeats(everyMs = this.options.heartbeatMs ?? 333): void {
    this.heartbeat();
    this.#beat = setInterval(() => this.heartbeat(), everyMs);
  }

  stopHeartbeats(): void {
    if (this.#beat) clearInterval(this.#beat);
    this.#beat = null;
  }

  ack(task: Wire, status: 'accepted' | 'rejected', reason?: string): void {
    if (status === 'accepted') this.current += 1;
    this.send(this.envelope('acknowledgment', { task_id: task.payload.task_id, status, ...(reason ? { reason } : {}) }, { correlation_id: task.message_id }));
  }

  progress(taskId: string, progress: number, message: string): void {
    this.send(this.envelope('progress', { task_id: taskId, progress, message, timestamp: new Date().toISOString() }));
  }

  /** Asks for clarification; returns the query's message id. */
  ask(taskId: string, question: string, options: string[]): string {
    const query = this.envelope('query', {
      query_type: 'clarification',
      task_id: taskId,
      question,
      context: { file: 'api/views.py', line: 42, code_snippet: 'def get_data(request):' },
      suggested_options: options,
      urgency: 'high',
    });
    this.send(query);
    return query.message_id as string;
  }

  /** The spec's example task_result for `taskId`, from this agent (not sent). */
  result(taskId: string, overrides: Wire = {}): Wire {
    return this.envelope('task_result', {
      task_id: taskId,
      status: 'completed',
      result_type: 'success',
      files_modified: ['api/views.py'],
      files_created: ['api/tests/test_views.py'],
      files_deleted: [],
      tests_added: ['test_views.py::test_get_data_json'],
      issues_created: [],
      pull_request_url: 'https://github.com/org/repo/pull/123',
      commit_hash: 'abc123def456',
      error_message: null,
      warnings: ['Consider refactoring large function at line 150'],
      execution_time: 45.67,
      metrics: { lines_added: 250, lines_removed: 50, test_coverage: 85.5, complexity_reduced: true },
      ...overrides,
    });
  }

  complete(taskId: string): Wire {
    this.current = Math.max(0, this.current - 1);
    return this.send(this.result(taskId)) as Wire;
  }

  received(type: string, where: (m: Wire) => boolean = () => true): Wire[] {
    return this.inbox.filter((r) => r.message.message_type === type && where(r.message)).map((r) => r.message);
  }

  waitFor(what: string, type: string, where: (m: Wire) => boolean = () => true, ms?: number): Promise<Wire> {
    return waitUntil(`${this.id} to receive ${what}`, () => this.received(type, where)[0], ms);
  }

  async close(): Promise<void> {
    this.stopHeartbeats();
    await this.#nc?.close();
    this.#nc = null;
  }
}

/** Every message the gateway sends is a valid seed 004 message. */
export function expectValid(message: Wire): Seed004Message {
  const parsed = parseEnvelope(message);
  if (!parsed.ok) throw new Error(`the gateway sent an invalid ${String(message.message_type)}: ${parsed.problem}`);
  return parsed.message;
}

export function captureIo() {
  let out = '';
  let err = '';
  return {
    io: { stdout: { write: (s: string) => ((out += s), true) }, stderr: { write: (s: string) => ((err += s), true) } } as unknown as { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
    out: () => out,
    err: () => err,
  };
}

/**
 * `a2a gateway` in this process, serving @coder with `coding_agent`s. `env` (credentials) is in
 * the process's environment while the command connects, as it would be in its own process.
 */
export async function startGateway(o: { url: string; ns: string; track: Track; options?: Partial<GatewayCommandOptions>; env?: Record<string, string | undefined> }) {
  let release!: () => void;
  const until = new Promise<void>((r) => (release = r));
  const c = captureIo();
  let gateway: Seed004Gateway | null = null;
  let failed: unknown = null;
  const setEnv = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  const saved = Object.fromEntries(Object.keys(o.env ?? {}).map((k) => [k, process.env[k]]));
  setEnv(o.env ?? {});
  const done = gatewayCommand(
    { nats: o.url, serve: 'coder=coding_agent', namespace: o.ns, id: `gw-${o.ns}`, drain: 200, ...o.options },
    { ...c.io, until, onStarted: (g) => (gateway = g) },
  ).catch((error: unknown) => {
    failed = error;
    return -1;
  });
  try {
    await waitUntil('the gateway to start', () => {
      if (failed) throw failed;
      return gateway;
    });
  } finally {
    setEnv(saved);
  }
  let stopped = false;
  const stop = async () => {
    if (stopped) return 0;
    stopped = true;
    release();
    return done;
  };
  o.track(stop);
  return { gateway: gateway! as Seed004Gateway, out: c.out, err: c.err, stop, prefix: `a2a.${o.ns}.swarm` };
}

export function specFor(ns: string, id: string, prompt = 'Add a GET /data endpoint to api/views.py'): SessionSpec {
  const { limits, idle } = RunConfig.parse({});
  return {
    id,
    role: 'subtask',
    agent: { raw: '@coder', backend: 'default', agentName: 'coder' },
    prompt,
    expectedOutput: 'the endpoint\nits tests pass',
    depth: 1,
    maxDepth: 2,
    spawnContext: 'agent',
    owner: { ownerType: 'worker', ownerId: 'w-owner' },
    correlation: { runId: `run-${ns}`, planId: 'plan', taskId: 'api', workerId: 'w-owner', worktreePath: '.', depth: 1 },
    lineage: [],
    taskType: 'code',
    limits,
    idle,
    permissions: { level: [], forSubtasks: true },
  };
}

/** The owner's side of a remote session on `transport` (what a parent's supervisor runs): its updates and result. */
export async function ownerOf(o: { transport: Transport; ns: string; spec: SessionSpec; track: Track; box?: string }) {
  const { transport, ns, spec } = o;
  await ensureQueues(transport, ns);
  const received: AnyEventObject[] = [];
  const parent = createActor(recordingParent(received) as never, { input: undefined }) as unknown as AnyActorRef;
  parent.start();
  const logic = createRemoteSessionLogic({ transport, ns, process: `owner-${ns}`, ...(o.box ? { box: o.box } : {}), clock: realClock, events: { emit: () => undefined } });
  const session = createActor(logic, { parent, input: { spec } }) as unknown as AnyActorRef;
  session.start();
  o.track(async () => session.stop());
  const snapshot = () => session.getSnapshot() as { status: string; output: SubTaskResult };
  return {
    session,
    updates: () => received.filter((e) => e.type === 'SUBTASK_UPDATE').map((e) => (e as unknown as { update: TaskUpdate }).update),
    done: () => snapshot().status === 'done',
    result: () => waitUntil(`the result of ${spec.id}`, () => snapshot().status === 'done' && snapshot().output, 15_000),
  };
}

export async function registered(gateway: Seed004Gateway, ...ids: string[]) {
  await waitUntil(`${ids.join(', ')} to register`, () => ids.every((id) => gateway.agents().some((a) => a.id === id)));
}
