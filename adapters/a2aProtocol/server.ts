/**
 * a2a as an Agent2Agent server (`a2a serve --a2a`): other frameworks' agents send it work with
 * the protocol, built on the SDK's server side (its request handler, its JSON-RPC and REST
 * transports on Express, v0.3 clients through its compat layer).
 *
 * One A2A task is one run of the runtime (a worker of the agent type the message's skill names,
 * with its sub-tasks), started through the library API in the served workspace, so `a2a status`,
 * `a2a inbox` and `a2a audit` see it too. The run's events become the task's: sub-tasks started
 * and workers' reports as WORKING status messages, results as artifacts, a question for a person
 * as INPUT_REQUIRED and a permission that asks the user as AUTH_REQUIRED (the client's next
 * message in the task answers it), the run's end as exactly one terminal state. CancelTask stops
 * the run (every sub-task still reports, as cancelled). Messages of one `contextId` are one
 * conversation: a new task in it starts with what the earlier ones asked and answered.
 *
 * Tasks are durable: every event is written to the task's record (records.ts) before it is sent.
 * SubscribeToTask replays a task's events from the record (all of them, or those after the
 * `Last-Event-ID` header: the `seq` in each event's metadata), then follows it live. A server
 * that restarts resumes the runs of the tasks it had not finished.
 *
 * Over 600 lines, for a reason: the SDK's three extension points for one server (the executor that
 * runs a task as a run, the request handler that keeps tasks durable, and the Express wiring)
 * share this file's task records and limits; the executor alone is half of it.
 */
import { AgentCard, StreamResponse, Task, TaskState, type Artifact, type CancelTaskRequest, type Message, type SendMessageRequest, type SubscribeToTaskRequest, type TaskStatusUpdateEvent } from '@a2a-js/sdk';
import { TaskNotFoundError, UnsupportedOperationError } from '@a2a-js/sdk/errors';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import {
  AgentEvent,
  DefaultRequestHandler,
  DefaultPushNotificationSender,
  type AgentExecutionEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  type ServerCallContext,
} from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler, type UserBuilder } from '@a2a-js/sdk/server/express';
import express, { type NextFunction, type Request, type Response } from 'express';
import { timingSafeEqual, randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { A2AServedEvent, A2AServedTask, RunEvent } from '../../machines/protocol/index.js';
import { errorText } from '../../machines/errorText.js';
import { redactText } from '../../actors/config/secrets.js';
import { recordRunEvent, startRun, type Run, type RunRequest } from '../assembly/library.js';
import { traceHeadersOf } from '../../actors/observation/tracing.js';
import { partsText, stateName, textPart } from './client.js';
import { applyPayload, callerOf, visibleTo, DurablePushStore, FileServedTasks, KvServedTasks, RecordTaskStore, SERVED_TASKS_BUCKET, taskOf, type ServedTasks } from './records.js';
import { configuration, transportStage } from '../assembly/stages.js';
import { coalesceWrites, RequestBuses } from './delivery.js';
import { isLoopback } from '../hostGuard.js';

export const JSONRPC_PATH = '/a2a/jsonrpc';
export const REST_PATH = '/a2a/rest';
export const CARD_PATH = '/.well-known/agent-card.json';
/** The skill of the organiser's SDLC workflow (seed 003): the message is its goal. */
export const WORKFLOW_SKILL = 'sdlc-workflow';

export interface A2AServeOptions {
  /** Where runs start (default: the current directory). */
  workspace?: string;
  /** 127.0.0.1 unless said otherwise; another address needs a token. */
  host?: string;
  /** 0: any free port. */
  port?: number;
  /** A bearer token every request but the card's must carry (timing-safe comparison). */
  token?: string;
  /**
   * Named clients, each with its own bearer token (`A2A_SERVE_TOKENS=alice=…,bob=…`): a task is
   * its creator's, and another client neither sees it (GetTask, ListTasks, SubscribeToTask) nor
   * changes it (SendMessage into it, CancelTask, push configs): to it the task does not exist.
   */
  clients?: Record<string, string>;
  /** The agent type of a message that names no skill (default: the config's default agent). */
  agent?: string;
  /** What every run is started with besides its task (script, model, config, nats, settings …). */
  run?: Omit<RunRequest, 'task' | 'plan' | 'target' | 'workspace' | 'resume'>;
  /** Where tasks are kept (default: files under the workspace). */
  records?: ServedTasks;
  notify?: (line: string) => void;
  version?: string;
  /** The URL the card gives (default: the address listened on). */
  publicUrl?: string;
  /** Tasks this server runs at once (not finished); one more is refused, saying so (default 32). */
  maxTasks?: number;
  /** How long a finished task's record is kept (default 7 days); older ones are removed hourly. */
  retainMs?: number;
}

/** Default of A2AServeOptions.maxTasks. */
export const MAX_TASKS = 32;
/** Default of A2AServeOptions.retainMs. */
export const RETAIN_MS = 7 * 86_400_000;
/** How often finished tasks past their keeping are looked for. */
const SWEEP_MS = 3_600_000;

const TERMINAL = new Set<TaskState>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
/** States at which an `execute` call returns (and a blocking SendMessage answers). */
const STOPS = new Set<TaskState>([...TERMINAL, TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED]);
/** The whole reply, not its first word: "ok, but do not delete anything" is no answer. */
const YES = /^\s*(y|yes|approve|approved|allow|ok|okay|accept)\s*[.!]?\s*$/i;
const NO = /^\s*(n|no|deny|denied|reject|refuse)\s*[.!]?\s*$/i;
/** Earlier tasks of a conversation a new task is told about. */
const CONVERSATION_TASKS = 10;
/** How often a running task's snapshot is written at most (its events are appended one by one). */
const SNAPSHOT_MS = 200;
/** Run event ids kept per task, to recognise what a resumed run repeats. */
const MAX_FACTS = 5_000;
/** The run events that become the task's (RuntimeExecutor.#onRunEvent's cases). */
const TURNED = new Set<RunEvent['type']>(['subtask.spawned', 'subtask.result', 'update.queued', 'human.asked', 'human.answered', 'workflow.state', 'artifact.created', 'artifact.updated', 'run.finished']);
/** Tasks that ended kept in memory for the task store (RuntimeExecutor.current); past it, the oldest goes. */
const ENDED_KEPT = 16;

function clip(text: string, max = 400): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function now(): string {
  return new Date().toISOString();
}

function agentMessage(text: string, taskId: string, contextId: string): Message {
  return { messageId: randomUUID(), contextId, taskId, role: 2, parts: [textPart(redactText(text))], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/** One task this process holds: its record, the run behind it, who listens. */
interface Held {
  /** The snapshot as last written (its `task` and `seq` lag behind `task` until the next flush). */
  record: A2AServedTask;
  /** The task as it is now. */
  task: Task;
  /**
   * The number of the task's last event. Its events are in its log, where SubscribeToTask reads
   * them: kept here too, every task held would grow by each of its events (2,004 for a task of
   * 1,000 sub-tasks) until it ends.
   */
  seq: number;
  /** The snapshot's pending write (at most one per SNAPSHOT_MS). */
  flush: NodeJS.Timeout | null;
  run: Run | null;
  /**
   * The SDK's buses of the requests on this task (a send, its follow-ups, a cancel): one per
   * request (see RequestBuses), each given every event from its request on, so that a stream
   * still open at AUTH_REQUIRED follows the task to its end while a follow-up answers it.
   */
  buses: Set<ExecutionEventBus>;
  /** Resolved when the task reaches a stop state (see STOPS). */
  waiters: Array<() => void>;
  listeners: Set<(event: A2AServedEvent) => void>;
  off: (() => void) | null;
}

/**
 * The runtime behind the protocol: the SDK's `AgentExecutor`, and what the request handler's
 * resubscribe reads. Every event goes to the record (on disk at the end of its synchronous burst,
 * before anything sends it: see ServedTasks.append), then to live listeners, then the SDK's bus.
 */
export class RuntimeExecutor implements AgentExecutor {
  readonly records: ServedTasks;
  readonly #held = new Map<string, Held>();
  /**
   * The last tasks that ended (at most ENDED_KEPT), as they ended, for the task store: the SDK
   * folds each event a request's stream carries into the task it loads from the store, and goes on
   * with those queued when the task ended after the executor let it go. Read from the record,
   * each of those loads (and the save after it) read the task's whole log: 25 ms each for a task
   * of 2,000 events, on the stream's last stretch. A task that ended does not change; the record
   * has it as it ended (#flush), and is read again once the task has left this list.
   */
  readonly #ended = new Map<string, { task: Task; owner: string | undefined }>();
  readonly #options: A2AServeOptions;
  readonly #workspace: string;
  readonly #notify: (line: string) => void;
  readonly #agents: () => string[];
  readonly #defaultAgent: string;
  /** Named clients: each task is its creator's (A2AServeOptions.clients). */
  readonly #scoped: boolean;
  /** The calls whose message named its context (contextNamed): a new task there is part of a conversation. */
  readonly #named = new WeakSet<ServerCallContext>();

  constructor(options: A2AServeOptions, agents: () => string[], defaultAgent: string) {
    this.#scoped = Object.keys(options.clients ?? {}).length > 0;
    this.#options = options;
    this.#workspace = resolve(options.workspace ?? process.cwd());
    this.#notify = options.notify ?? ((line) => void process.stderr.write(`${line}\n`));
    this.records = options.records ?? new FileServedTasks(this.#workspace, this.#notify);
    this.#agents = agents;
    this.#defaultAgent = defaultAgent;
  }

  holds(taskId: string): boolean {
    return this.#held.has(taskId);
  }

  /** Whether runs of `workspace` are this server's (a task recorded there is ours to run). */
  ownsWorkspace(workspace: string): boolean {
    return resolve(workspace) === this.#workspace;
  }

  held(taskId: string): Held | undefined {
    return this.#held.get(taskId);
  }

  /** The call's message named its context (the request handler says so before the SDK fills one in). */
  contextNamed(context: ServerCallContext): void {
    this.#named.add(context);
  }

  /** The task as the task store reads it from memory, and its creator: held, or ended a moment ago (#ended). */
  current(taskId: string): { task: Task; owner: string | undefined } | undefined {
    const held = this.#held.get(taskId);
    return held ? { task: held.task, owner: held.record.owner } : this.#ended.get(taskId);
  }

  /** Sends one event of a task: numbered, folded into the task, logged, then delivered. */
  #publish(held: Held, event: AgentExecutionEvent): void {
    // a task that ended (or that another request let go of) says nothing more: one terminal state
    if (this.#held.get(held.task.id) !== held) return;
    const seq = ++held.seq;
    if (event.kind === 'statusUpdate' || event.kind === 'artifactUpdate') event.data.metadata = { ...(event.data.metadata ?? {}), seq };
    const wire = StreamResponse.toJSON({ payload: { $case: event.kind, value: event.data } as StreamResponse['payload'] }) as Record<string, unknown>;
    const served: A2AServedEvent = { seq, at: Date.now(), event: wire };
    // the event's own objects, not its JSON read back: nothing changes them after (see sdkCopy)
    held.task = event.kind === 'task' ? structuredClone(event.data) : applyPayload(held.task, { $case: event.kind, value: event.data } as StreamResponse['payload']);
    const id = held.task.id;
    this.records.append(id, served).catch((e: unknown) => this.#notify(`a2a serve: could not log event ${seq} of task ${id}: ${errorText(e)}`));
    const state = held.task.status?.state;
    const stops = state !== undefined && STOPS.has(state);
    // the first snapshot at once: a server killed now must find the task when it starts again
    if (stops || held.record.seq === 0) this.#flush(held);
    else held.flush ??= setTimeout(() => this.#flush(held), SNAPSHOT_MS);
    for (const listener of held.listeners) listener(served);
    for (const bus of held.buses) bus.publish(event);
    if (stops) {
      for (const done of held.waiters.splice(0)) done();
      if (TERMINAL.has(state)) {
        held.buses.clear();
        held.off?.();
        this.#held.delete(id);
        this.#ended.delete(id);
        this.#ended.set(id, { task: held.task, owner: held.record.owner });
        if (this.#ended.size > ENDED_KEPT) this.#ended.delete(this.#ended.keys().next().value!);
      }
    }
  }

  /** Writes the task's snapshot now (the events are in its log already). */
  #flush(held: Held): void {
    if (held.flush) clearTimeout(held.flush);
    held.flush = null;
    held.record.task = Task.toJSON(held.task) as Record<string, unknown>;
    held.record.seq = held.seq;
    held.record.updatedAt = Date.now();
    if (held.record.facts.length > MAX_FACTS) held.record.facts.splice(0, held.record.facts.length - MAX_FACTS);
    this.records.write(held.record).catch((e: unknown) => this.#notify(`a2a serve: could not write task ${held.task.id}: ${errorText(e)}`));
  }

  #status(held: Held, state: TaskState, text: string | null, metadata?: Record<string, unknown>): void {
    const task = held.task;
    const before = task.status?.state;
    // a task that ended says nothing more (#publish), in its run's log neither
    const live = this.#held.get(task.id) === held;
    const data: TaskStatusUpdateEvent = {
      taskId: task.id,
      contextId: task.contextId,
      status: { state, message: text === null ? undefined : agentMessage(text, task.id, task.contextId), timestamp: now() },
      metadata: metadata ? { ...metadata } : undefined,
    };
    this.#publish(held, AgentEvent.statusUpdate(data));
    if (live) this.#tell(held, state, before, 'out', text);
  }

  /**
   * The task in its run's log (`a2a.served`): each change of its state, each message in (the
   * client's) and out (a status, a result), so that the studio and the monitors show it. A task
   * without a run yet (or any more) has no log to tell.
   */
  #tell(held: Held, state: TaskState, before: TaskState | undefined, direction: 'in' | 'out', text: string | null): void {
    const run = held.run;
    if (!run) return;
    const task = held.task;
    try {
      recordRunEvent(run, {
        type: 'a2a.served',
        planId: run.planId,
        data: {
          taskId: task.id,
          contextId: task.contextId,
          state: stateName(state),
          ...(before !== undefined && before !== state ? { from: stateName(before) } : {}),
          agent: held.record.agent,
          ...(held.record.owner ? { owner: held.record.owner } : {}),
          direction,
          ...(text ? { text: clip(redactText(text), 1000) } : {}),
        },
      });
    } catch (e) {
      // a run that has closed its log (it failed) takes nothing more: the task's own record has it all
      this.#notify(`a2a serve: task ${task.id}: its run did not take an event: ${errorText(e)}`);
    }
  }

  #artifact(held: Held, artifact: Omit<Artifact, 'metadata' | 'extensions' | 'description'> & { description?: string }): void {
    const task = held.task;
    if (this.#held.get(task.id) !== held) return;
    this.#publish(
      held,
      AgentEvent.artifactUpdate({
        taskId: task.id,
        contextId: task.contextId,
        artifact: { description: '', metadata: undefined, extensions: [], ...artifact },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    const state = held.task.status?.state ?? TaskState.TASK_STATE_WORKING;
    this.#tell(held, state, state, 'out', `${artifact.name ?? artifact.artifactId}: ${partsText(artifact.parts)}`);
  }

  #until(held: Held): Promise<void> {
    return new Promise((done) => held.waiters.push(done));
  }

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const found = this.#held.get(request.taskId);
    if (found) {
      // the client's message is a turn of the task: in its history, on record before it is acted on
      // (the SDK saves it through the task store, which leaves a task this process holds to it)
      if (!found.task.history.some((m) => m.messageId === request.userMessage.messageId)) {
        found.task.history.push(request.userMessage);
        this.#flush(found);
        this.#tell(found, found.task.status?.state ?? TaskState.TASK_STATE_WORKING, undefined, 'in', partsText(request.userMessage.parts));
      }
      // the client's message resumes a task that waited for it: WORKING first (the SDK ends a
      // stream whose task reads INPUT_REQUIRED, and this request's stream starts with the task)
      const state = found.task.status?.state;
      if (state === TaskState.TASK_STATE_INPUT_REQUIRED || state === TaskState.TASK_STATE_AUTH_REQUIRED) {
        this.#status(found, TaskState.TASK_STATE_WORKING, `received: ${clip(partsText(request.userMessage.parts), 200)}`);
      }
      // the protocol wants the task first on every request's stream: this request's only
      bus.publish(AgentEvent.task(structuredClone(found.task)));
      found.buses.add(bus);
      const waiting = this.#until(found);
      this.#answer(found, request.userMessage);
      await waiting;
      return;
    }
    const existing = await this.records.read(request.taskId);
    if (existing) {
      // a task this process does not hold: finished, or its run could not be resumed
      const held = this.#hold(existing.record, bus, existing.events.at(-1)?.seq);
      this.#publish(held, AgentEvent.task(structuredClone(held.task)));
      if (!TERMINAL.has(held.task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) {
        this.#status(held, TaskState.TASK_STATE_FAILED, `this server no longer holds the run behind task ${request.taskId} (${existing.record.runId ?? 'none'}); start a new task`);
      }
      held.buses.clear();
      this.#held.delete(request.taskId);
      return;
    }
    await this.#start(request, bus);
  }

  /** Holds a task from its record (`lastSeq`: its log's last event, when the record lags behind it). */
  #hold(record: A2AServedTask, bus: ExecutionEventBus | null, lastSeq = 0): Held {
    const held: Held = { record, task: taskOf(record), seq: Math.max(record.seq, lastSeq), flush: null, run: null, buses: new Set(bus ? [bus] : []), waiters: [], listeners: new Set(), off: null };
    this.#held.set(String(record.task.id), held);
    return held;
  }

  async #start(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const message = request.userMessage;
    const text = partsText(message.parts).trim();
    const skill = String(message.metadata?.skill ?? request.request.metadata?.skill ?? '').replace(/^@/, '');
    const agents = this.#agents();
    const agent = skill || this.#defaultAgent;
    const task: Task = {
      id: request.taskId,
      contextId: request.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
      artifacts: [],
      history: [message],
      metadata: { agent: `@${agent}` },
    };
    // counted before this one is held: the tasks not finished (running, or waiting for an answer)
    const inFlight = this.#held.size;
    const owner = this.#scoped ? callerOf(request.context) : undefined;
    const held = this.#hold(
      { version: 1, task: Task.toJSON(task) as Record<string, unknown>, runId: null, workspace: this.#workspace, agent, facts: [], waitingFor: null, seq: 0, updatedAt: Date.now(), ...(owner ? { owner } : {}) },
      bus,
    );
    {
      this.#publish(held, AgentEvent.task(task));
      const max = this.#options.maxTasks ?? MAX_TASKS;
      if (inFlight >= max) {
        return this.#status(held, TaskState.TASK_STATE_REJECTED, `this server runs at most ${max} tasks at once (a2a serve --max-tasks) and ${inFlight} are not finished: send it again when one has ended`);
      }
      if (!text) return this.#status(held, TaskState.TASK_STATE_REJECTED, 'the message has no text: send the task as a text part (data parts are read as JSON text)');
      if (!agents.includes(agent)) {
        return this.#status(held, TaskState.TASK_STATE_REJECTED, `unknown skill "${skill}": this server's skills are ${agents.map((a) => `"${a}"`).join(', ')} (set message.metadata.skill)`);
      }
      // only a context the client named has earlier tasks (else the SDK made a new one, and wrote
      // it into the message: every record read for nothing, each task's events included)
      const earlier = this.#named.has(request.context) ? await this.#conversation(request.contextId, request.taskId) : '';
      const prompt = earlier ? `${earlier}\n\nThe new request:\n${text}` : text;
      const waiting = this.#until(held);
      let run: Run;
      try {
        // the task as a plan file (not a task string, which would be read as a path when it names one),
        // so that the run is recorded with what started it and a restarted server can resume it
        const planFile = join(this.#workspace, '.a2a', 'a2a-protocol', 'plans', `${request.taskId}.json`);
        mkdirSync(dirname(planFile), { recursive: true });
        const workflow = agent === WORKFLOW_SKILL;
        writeFileSync(planFile, JSON.stringify(workflow ? { workflow: 'sdlc', id: 'a2a-task', goal: prompt } : { id: 'a2a-task', tasks: [{ id: 'task', prompt, agent: `@${agent}` }] }));
        // a caller that traces (W3C traceparent on its request) gets the run in its trace
        const trace = traceHeadersOf(requestHeaders(request.context.state.get('headers')));
        run = await startRun({ ...(this.#options.run ?? {}), workspace: this.#workspace, target: planFile, questions: 'human', ...(workflow ? { workflow: 'sdlc' } : {}), ...(trace ? { trace } : {}) });
      } catch (e) {
        this.#status(held, TaskState.TASK_STATE_FAILED, `the run could not start: ${errorText(e)}`);
        return;
      }
      held.record.runId = run.id;
      if (this.#held.get(request.taskId) !== held) {
        // cancelled while the run was starting: it stops at once, and the task stays as it ended
        run.stop('the A2A task was cancelled before its run started');
        return;
      }
      // the run id at once: it is what a restarted server resumes
      this.#flush(held);
      this.#bind(held, run);
      // the client's message that started the task, then its first change of state, in the run's log
      this.#tell(held, TaskState.TASK_STATE_SUBMITTED, undefined, 'in', text);
      this.#status(held, TaskState.TASK_STATE_WORKING, `run ${run.id} started: @${agent} works on it`);
      await waiting;
    }
  }

  /** What earlier tasks of the conversation asked and answered, for a new task in it. */
  async #conversation(contextId: string, taskId: string): Promise<string> {
    // the others' events are not read: a context and an id never change
    const earlier = (await this.records.all((r) => r.task.contextId === contextId && r.task.id !== taskId))
      .sort((a, b) => a.updatedAt - b.updatedAt)
      // the latest ones: a long conversation does not grow every new prompt without end
      .slice(-CONVERSATION_TASKS)
      .map(taskOf);
    if (earlier.length === 0) return '';
    const lines = earlier.map((t) => {
      const asked = partsText(t.history[0]?.parts);
      const answered = t.artifacts.map((a) => partsText(a.parts)).join('\n') || partsText(t.status?.message?.parts);
      return `- asked: ${clip(asked, 2000)}\n  answered (${TaskState[t.status?.state ?? 0]?.replace('TASK_STATE_', '').toLowerCase()}): ${clip(answered, 4000)}`;
    });
    return `Earlier in this conversation:\n${lines.join('\n')}`;
  }

  /** Turns the run's events into the task's. */
  #bind(held: Held, run: Run): void {
    held.run = run;
    const facts = new Set(held.record.facts);
    const seen = (event: RunEvent): boolean => {
      if (!event.id) return false;
      if (facts.has(event.id)) return true;
      facts.add(event.id);
      held.record.facts.push(event.id);
      // cut in one go at twice the number kept (#flush writes the last MAX_FACTS), not one id per
      // event once it is reached: that moved 5,000 ids down for each later event (the loop alone,
      // over the 11,000 events of a 1,000-sub-task run: 290 ms)
      if (held.record.facts.length > 2 * MAX_FACTS) held.record.facts.splice(0, held.record.facts.length - MAX_FACTS);
      return false;
    };
    const off = run.on((e) => {
      const event = e as RunEvent;
      // only what becomes the task's is remembered: the rest (model calls, states, the task's own
      // a2a.served) would push the facts that matter out of the last MAX_FACTS
      if (!TURNED.has(event.type) || !this.#held.has(String(held.record.task.id)) || seen(event)) return;
      try {
        this.#onRunEvent(held, event);
      } catch (error) {
        this.#notify(`a2a serve: task ${String(held.record.task.id)}: ${errorText(error)}`);
      }
    });
    held.off = off;
    run.done.catch((error: unknown) => {
      if (this.#held.has(String(held.record.task.id))) this.#status(held, TaskState.TASK_STATE_FAILED, `the run failed: ${errorText(error)}`);
    });
  }

  /** A run event of a type in TURNED as the task's: a status, an artifact, a question, its end. */
  #onRunEvent(held: Held, event: RunEvent): void {
    const d = event.data as Record<string, unknown>;
    switch (event.type) {
      case 'subtask.spawned':
        return this.#status(held, TaskState.TASK_STATE_WORKING, `${event.subTaskId} (${event.agentType ?? 'agent'}) started: ${clip(String(d.prompt ?? ''), 200)}`, { subTaskId: event.subTaskId });
      case 'subtask.result':
        // a worker's own result is the task's: it comes with the run's end
        if (!event.subTaskId || event.subTaskId === event.workerId) return;
        this.#artifact(held, { artifactId: `result-${event.subTaskId}`, name: `${event.subTaskId}: ${String(d.status)}`, parts: [textPart(redactText(String(d.output ?? '') || String(d.error ?? '')))] });
        return;
      case 'update.queued':
        // a question comes as INPUT_REQUIRED once the orchestrator hands it to a person (human.asked)
        if (d.updateType === 'progress' && d.kind !== 'question' && d.message) return this.#status(held, TaskState.TASK_STATE_WORKING, `${String(d.from)}: ${clip(String(d.message))}`);
        return;
      case 'human.asked':
        // one question at a time: a later one waits until the one shown is answered
        if (held.record.waitingFor && held.record.waitingFor.id !== String(d.id)) return;
        return this.#ask(held, { id: String(d.id), kind: d.kind === 'permission' ? 'permission' : 'question', title: String(d.title) });
      case 'human.answered': {
        if (held.record.waitingFor?.id === String(d.id)) held.record.waitingFor = null;
        const said = `${d.kind === 'permission' ? (d.approved ? 'approved' : 'denied') : 'answered'} by ${String(d.by)}${d.text ? `: ${clip(String(d.text), 200)}` : ''}`;
        // another item still waits (two sub-tasks asked at once): it is the next to show
        const next = held.record.waitingFor ? null : held.run?.pending().find((p) => p.id !== String(d.id));
        if (next) return this.#ask(held, { id: next.id, kind: next.kind, title: next.title }, `${said}. Next: `);
        return this.#status(held, TaskState.TASK_STATE_WORKING, said);
      }
      case 'workflow.state':
        return this.#status(held, TaskState.TASK_STATE_WORKING, `workflow: ${String(d.state)}${d.reason ? ` (${clip(String(d.reason), 200)})` : ''}`, { workflowState: String(d.state) });
      case 'artifact.created':
      case 'artifact.updated':
        // a new version replaces the artifact's content (same artifactId, append false)
        this.#artifact(held, { artifactId: `artifact-${String(d.artifactId)}`, name: `${String(d.artifactType)} ${String(d.artifactId)} v${String(d.version)} (${String(d.status)}, by ${String(d.producer)})`, parts: [textPart(redactText(String(d.brief ?? '')))] });
        return;
      case 'run.finished':
        return this.#finish(held, event);
    }
  }

  /** Shows the client what a person must answer: INPUT_REQUIRED for a question, AUTH_REQUIRED for a permission. */
  #ask(held: Held, item: { id: string; kind: 'permission' | 'question'; title: string }, prefix = ''): void {
    held.record.waitingFor = item;
    const ask = item.kind === 'permission' ? `${prefix}${item.title}\nAnswer yes or no (or a data part {"approved": true|false, "reason": "…"}).` : `${prefix}${item.title}`;
    this.#status(held, item.kind === 'permission' ? TaskState.TASK_STATE_AUTH_REQUIRED : TaskState.TASK_STATE_INPUT_REQUIRED, ask, { itemId: item.id, kind: item.kind });
  }

  #finish(held: Held, event: RunEvent): void {
    const d = event.data as {
      status?: string;
      summary?: {
        tasks?: Array<{ id: string; result: { status: string; output: string; error?: string } | null; note: string | null }>;
        stopReason?: string | null;
        workflow?: { status: 'completed' | 'failed' | 'stopped'; state: string; reason: string | null; completion: unknown } | null;
      };
    };
    const workflow = d.summary?.workflow;
    if (workflow) {
      if (workflow.completion) this.#artifact(held, { artifactId: 'workflow-completion', name: 'completion', parts: [textPart(redactText(JSON.stringify(workflow.completion, null, 2)))] });
      if (d.status === 'cancelled' || workflow.status === 'stopped') return this.#status(held, TaskState.TASK_STATE_CANCELED, workflow.reason ?? d.summary?.stopReason ?? 'stopped');
      if (workflow.status === 'completed') return this.#status(held, TaskState.TASK_STATE_COMPLETED, `the workflow ended in ${workflow.state}`);
      return this.#status(held, TaskState.TASK_STATE_FAILED, `the workflow ended in ${workflow.state}: ${workflow.reason ?? 'failed'}`);
    }
    const tasks = d.summary?.tasks ?? [];
    for (const t of tasks) {
      if (!t.result) continue;
      this.#artifact(held, { artifactId: `result-${t.id}`, name: 'result', parts: [textPart(redactText(t.result.output || t.result.error || ''))] });
    }
    const result = tasks[0]?.result ?? null;
    if (d.status === 'cancelled') return this.#status(held, TaskState.TASK_STATE_CANCELED, d.summary?.stopReason ?? 'cancelled');
    if (d.status === 'completed' && result && result.status !== 'failed') {
      return this.#status(held, TaskState.TASK_STATE_COMPLETED, result.status === 'partial' ? `partly done: ${result.error ?? 'see the result'}` : 'done', { resultStatus: result.status });
    }
    return this.#status(held, TaskState.TASK_STATE_FAILED, result?.error ?? tasks[0]?.note ?? d.summary?.stopReason ?? 'the run failed');
  }

  /** The client's next message in a task: the answer to what it waits for, else new instructions. */
  #answer(held: Held, message: Message): void {
    const text = partsText(message.parts).trim();
    const data = message.parts.find((p) => p.content?.$case === 'data')?.content;
    const given = data?.$case === 'data' && data.value && typeof data.value === 'object' ? (data.value as { approved?: unknown; reason?: unknown; text?: unknown }) : null;
    const run = held.run;
    if (!run) return this.#status(held, TaskState.TASK_STATE_FAILED, 'this task has no run to give the message to');
    const pending = run.pending();
    const waiting = held.record.waitingFor;
    // the item the client names (metadata.itemId, as the status that asked gave it), else the one shown
    const named = typeof message.metadata?.itemId === 'string' ? message.metadata.itemId : undefined;
    const item = pending.find((p) => p.id === (named ?? waiting?.id)) ?? (named ? undefined : pending[0]);
    if (named && !item) return this.#status(held, held.task.status?.state ?? TaskState.TASK_STATE_WORKING, `nothing waits for an answer under itemId "${clip(named, 80)}"; waiting: ${pending.map((p) => p.id).join(', ') || 'nothing'}`);
    const by = 'a2a-client';
    try {
      if (item?.kind === 'permission') {
        const approved = typeof given?.approved === 'boolean' ? given.approved : YES.test(text) ? true : NO.test(text) ? false : null;
        if (approved === null) {
          return this.#status(held, TaskState.TASK_STATE_AUTH_REQUIRED, `"${clip(text, 80)}" is not an answer to "${item.title}": answer yes or no, or send a data part {"approved": true|false}`, { itemId: item.id, kind: 'permission' });
        }
        run.answer(item.id, { approved, by, ...(typeof given?.reason === 'string' ? { reason: given.reason } : {}) });
        return;
      }
      if (item) {
        run.answer(item.id, { text: typeof given?.text === 'string' ? given.text : text, by });
        return;
      }
      if (!text) return this.#status(held, TaskState.TASK_STATE_WORKING, 'an empty message: nothing to pass on');
      const worker = run.tree().roots[0]?.id;
      run.redirect(worker?.replace(/^w-/, '') ?? 'task', text, by);
      this.#status(held, TaskState.TASK_STATE_WORKING, `passed to the worker as new instructions: ${clip(text, 200)}`);
    } catch (e) {
      this.#status(held, TaskState.TASK_STATE_WORKING, `the message could not be passed on: ${errorText(e)}`);
    }
  }

  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const held = this.#held.get(taskId);
    if (!held) return;
    held.buses.add(bus);
    const waiting = this.#until(held);
    if (held.run) held.run.stop('cancelled by the A2A client');
    else this.#status(held, TaskState.TASK_STATE_CANCELED, 'cancelled by the A2A client');
    await waiting;
  }

  /** Live events of a held task, from now on (resubscribe). */
  listen(taskId: string, listener: (event: A2AServedEvent) => void): (() => void) | null {
    const held = this.#held.get(taskId);
    if (!held) return null;
    held.listeners.add(listener);
    return () => held.listeners.delete(listener);
  }

  /** After a restart: every task not finished gets its run back (resumed), or fails saying why. */
  async recover(): Promise<{ resumed: string[]; failed: string[] }> {
    const resumed: string[] = [];
    const failed: string[] = [];
    for (const record of await this.records.all()) {
      const task = taskOf(record);
      if (TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED) || this.#held.has(task.id)) continue;
      // a task of another server of the namespace (--nats): its run is that server's to resume
      if (resolve(record.workspace) !== this.#workspace) continue;
      // its events from the log: a client that resubscribes gets them all
      const held = this.#hold(record, null, (await this.records.read(task.id))?.events.at(-1)?.seq);
      if (!record.runId) {
        this.#status(held, TaskState.TASK_STATE_FAILED, 'the server stopped before this task\'s run started');
        failed.push(task.id);
        continue;
      }
      try {
        const run = await startRun({ ...(this.#options.run ?? {}), workspace: record.workspace, resume: record.runId });
        this.#bind(held, run);
        const waiting = record.waitingFor;
        // it waited for a person: it still does (the run's gate kept the item), and says so again
        if (waiting) this.#ask(held, { id: waiting.id, kind: waiting.kind, title: waiting.title ?? 'the question asked before the restart' }, `the server restarted: run ${record.runId} resumed, and still waits: `);
        else this.#status(held, TaskState.TASK_STATE_WORKING, `the server restarted: run ${record.runId} resumed`);
        resumed.push(task.id);
      } catch (e) {
        this.#status(held, TaskState.TASK_STATE_FAILED, `the server restarted and could not resume run ${record.runId}: ${errorText(e)}`);
        failed.push(task.id);
      }
    }
    return { resumed, failed };
  }

  /**
   * Removes the records of finished tasks older than `retainMs` (their snapshot, events and push
   * configs); the number removed.
   */
  async sweep(retainMs: number): Promise<number> {
    let removed = 0;
    const before = Date.now() - retainMs;
    for (const record of await this.records.all()) {
      const task = taskOf(record);
      if (!TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED) || this.#held.has(task.id) || record.updatedAt >= before) continue;
      // a task of another server of the namespace is that server's to remove
      if (resolve(record.workspace) !== this.#workspace) continue;
      this.#ended.delete(task.id);
      await this.records.remove(task.id).catch((e: unknown) => this.#notify(`a2a serve: could not remove the record of task ${task.id}: ${errorText(e)}`));
      removed++;
    }
    return removed;
  }

  /** Stops every run this server holds (the server stops). */
  async close(): Promise<void> {
    // a run stopped this way ends its task as CANCELED (said, not lost); a server killed
    // instead resumes its tasks' runs when it starts again
    const runs = [...this.#held.values()].map((h) => h.run).filter((r): r is Run => !!r);
    for (const run of runs) run.stop('the A2A server stopped');
    await Promise.allSettled(runs.map((r) => r.done));
    for (const held of this.#held.values()) {
      held.off?.();
      if (held.flush) this.#flush(held);
    }
    this.#held.clear();
    this.#ended.clear();
  }
}

/** The SDK's request handler, with SubscribeToTask answered from the durable record. */
class RuntimeRequestHandler extends DefaultRequestHandler {
  readonly #executor: RuntimeExecutor;

  constructor(card: AgentCard, store: RecordTaskStore, executor: RuntimeExecutor, extended?: (context: ServerCallContext) => Promise<AgentCard>) {
    // kept with the task's record: a push config registered before a restart still gets its pushes
    const pushes = new DurablePushStore(executor.records);
    super(card, store, executor, new RequestBuses((id) => executor.holds(id)), pushes, new DefaultPushNotificationSender(pushes), extended);
    this.#executor = executor;
  }

  /**
   * A task another server holds (--nats: the record says which workspace runs it) is answered
   * there: a message or a cancel here would change it behind that server's back.
   */
  async #refuseForeign(taskId: string | undefined, context: ServerCallContext): Promise<void> {
    if (!taskId || this.#executor.holds(taskId)) return;
    const found = await this.#executor.records.read(taskId);
    // another client's task is not found (by the store), whichever server runs it: nothing said of it here
    if (!found || !visibleTo(found.record.owner, context) || TERMINAL.has(taskOf(found.record).status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) return;
    if (this.#executor.ownsWorkspace(found.record.workspace)) return;
    throw new UnsupportedOperationError(`task ${taskId} runs on the A2A server serving ${found.record.workspace}: send its messages and its cancel there (this server can read it: GetTask, ListTasks, SubscribeToTask)`);
  }

  /**
   * The task a new task's first message started, by the message's id: a client that sends the
   * same message again (a2a's delegation after a restore sends it with the same id) gets that
   * task, not a second one. Filled from the records on first use (a restarted server knows them).
   */
  #byMessage: Map<string, string> | null = null;

  async #startedBy(message: Message | undefined, context: ServerCallContext): Promise<string | null> {
    if (!message?.messageId || message.taskId) return null;
    if (!this.#byMessage) {
      const known = new Map<string, string>();
      for (const record of await this.#executor.records.all()) {
        const first = (taskOf(record).history ?? [])[0];
        if (first?.messageId) known.set(first.messageId, String(record.task.id));
      }
      this.#byMessage ??= known;
    }
    const id = this.#byMessage.get(message.messageId);
    if (!id) return null;
    // another client's message id is no replay of this one's
    const held = this.#executor.held(id);
    const owner = held ? held.record.owner : (await this.#executor.records.read(id))?.record.owner;
    return visibleTo(owner, context) ? id : null;
  }

  #remember(message: Message | undefined, task: Message | Task | StreamResponse | undefined): void {
    if (!message?.messageId || message.taskId || !this.#byMessage) return;
    const id = task && 'id' in task && typeof task.id === 'string' ? task.id : task && 'payload' in task && task.payload?.$case === 'task' ? task.payload.value.id : undefined;
    if (id) this.#byMessage.set(message.messageId, id);
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    if (params.message?.contextId) this.#executor.contextNamed(context);
    await this.#refuseForeign(params.message?.taskId, context);
    const started = await this.#startedBy(params.message, context);
    if (started) {
      const task = await this.getTask({ tenant: params.tenant, id: started, historyLength: undefined } as never, context);
      if (task) return task;
    }
    const result = await super.sendMessage(params, context);
    this.#remember(params.message, result);
    return result;
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    if (params.message?.contextId) this.#executor.contextNamed(context);
    await this.#refuseForeign(params.message?.taskId, context);
    const started = await this.#startedBy(params.message, context);
    if (started) {
      // the same message again: the task it started (followed from its first event while it runs)
      const task = await this.getTask({ tenant: params.tenant, id: started, historyLength: undefined } as never, context);
      if (TERMINAL.has(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)) yield { payload: { $case: 'task', value: task } } as StreamResponse;
      else yield* this.resubscribe({ tenant: params.tenant, id: started } as never, context);
      return;
    }
    let first = true;
    for await (const event of super.sendMessageStream(params, context)) {
      if (first) this.#remember(params.message, event);
      first = false;
      yield event;
    }
  }

  override async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    await this.#refuseForeign(params.id, context);
    return super.cancelTask(params, context);
  }

  override async *resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    const held = this.#executor.held(params.id);
    const read = held ? null : await this.#executor.records.read(params.id);
    if ((!held && !read) || !visibleTo(held ? held.record.owner : read!.record.owner, context)) throw new TaskNotFoundError(`no task ${params.id} on this server`);
    const snapshot = held ? structuredClone(held.task) : taskOf(read!.record);
    // the protocol follows a task that is not finished: a finished one is read with GetTask
    const state = snapshot.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED;
    if (TERMINAL.has(state)) throw new UnsupportedOperationError(`task ${params.id} has ended (${TaskState[state] ?? state}): SubscribeToTask follows a task that is not finished; read it with GetTask`);
    const headers = context.state.get('headers') as Record<string, string | string[] | undefined> | undefined;
    const header = headers?.['last-event-id'];
    const after = Number.parseInt(Array.isArray(header) ? (header[0] ?? '') : (header ?? ''), 10);
    const from = Number.isInteger(after) && after >= 0 ? after : 0;
    // live events are taken from now on, before the log is read, so that none falls between the
    // replay and the follow (one in both is sent once: by its seq)
    const live: A2AServedEvent[] = [];
    let wake: (() => void) | null = null;
    const off = this.#executor.listen(params.id, (event) => {
      live.push(event);
      wake?.();
    });
    try {
      // the events so far, from the task's log (a held task's too: its events are not kept in memory)
      const logged = held ? ((await this.#executor.records.read(params.id))?.events ?? []) : read!.events;
      yield { payload: { $case: 'task', value: snapshot } };
      let last = from;
      const ended = (e: A2AServedEvent): boolean => {
        const status = (e.event as { statusUpdate?: { status?: { state?: string } } }).statusUpdate?.status?.state;
        return status !== undefined && ['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED', 'TASK_STATE_INPUT_REQUIRED'].includes(status);
      };
      for (const e of logged) {
        if (e.seq <= last) continue;
        last = e.seq;
        // the task as it was then: the snapshot above says more
        if ('task' in e.event) continue;
        yield StreamResponse.fromJSON(e.event);
      }
      if (!off) return;
      const state = snapshot.status?.state;
      if (state !== undefined && (TERMINAL.has(state) || state === TaskState.TASK_STATE_INPUT_REQUIRED) && logged.length > 0) return;
      for (;;) {
        while (live.length) {
          const e = live.shift()!;
          // one the replay sent already (it was logged before the log was read) still ends the follow
          if (e.seq > last) {
            last = e.seq;
            yield StreamResponse.fromJSON(e.event);
          }
          if (ended(e)) return;
        }
        await new Promise<void>((done) => (wake = done));
        wake = null;
      }
    } finally {
      off?.();
    }
  }
}

/**
 * The extended card a client with a credential gets (GetExtendedAgentCard): each skill with its
 * agent's tools, strengths and weaknesses, and what this server allows (tasks at once, how long a
 * finished task is kept, whose tasks the caller sees).
 */
export function extendedCard(card: AgentCard, agents: Array<{ id: string; tools: string[]; strengths: string[]; weaknesses: string[] }>, limits: { maxTasks: number; retainDays: number }, caller: string | undefined, scoped: boolean): AgentCard {
  const byId = new Map(agents.map((a) => [a.id, a]));
  const extended = structuredClone(card);
  extended.description = `${card.description} This server runs at most ${limits.maxTasks} tasks at once and keeps a finished task ${limits.retainDays} days.${caller && scoped ? ` You are client "${caller}": you see and change your own tasks only.` : ''}`;
  extended.skills = card.skills.map((skill) => {
    const agent = byId.get(skill.id);
    if (!agent) return skill;
    const said = [agent.tools.length ? `Tools: ${agent.tools.join(', ')}.` : '', agent.strengths.length ? `Strong at: ${agent.strengths.join(', ')}.` : '', agent.weaknesses.length ? `Weak at: ${agent.weaknesses.join(', ')}.` : ''].filter(Boolean);
    return { ...skill, description: [skill.description, ...said].join(' '), tags: [...new Set(['a2a', ...agent.strengths])] };
  });
  return extended;
}

/** The agent card: one skill per agent type (the organiser's workflow too, where it exists). */
export function agentCard(options: { url: string; version: string; agents: Array<{ id: string; description: string; strengths: string[] }>; token: boolean }): AgentCard {
  const interfaces = [
    { url: `${options.url}${JSONRPC_PATH}`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
    { url: `${options.url}${REST_PATH}`, protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
  ];
  return AgentCard.fromJSON({
    name: 'a2a',
    description: 'An a2a team: a worker of the agent type the skill names, with the sub-tasks it spawns in parallel; questions and permissions come back as INPUT_REQUIRED / AUTH_REQUIRED.',
    version: options.version,
    supportedInterfaces: duplicateInterfacesForLegacy(interfaces, ['JSONRPC', 'HTTP+JSON']).map((i) => ({ ...i })),
    // the extended card (GetExtendedAgentCard) is for clients with a credential
    capabilities: { streaming: true, pushNotifications: true, ...(options.token ? { extendedAgentCard: true } : {}) },
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain'],
    skills: options.agents.map((a) => ({ id: a.id, name: `@${a.id}`, description: a.description, tags: ['a2a', ...a.strengths.slice(0, 4)], examples: [], inputModes: [], outputModes: [] })),
    ...(options.token ? { securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'the token a2a serve was started with (A2A_SERVE_TOKEN), or a named client\'s (A2A_SERVE_TOKENS)' } } }, securityRequirements: [{ schemes: { bearer: { list: [] } } }] } : {}),
  });
}

function tokenMatches(given: string | undefined, expected: string): boolean {
  if (!given?.startsWith('Bearer ')) return false;
  const a = Buffer.from(given.slice(7));
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface RunningA2AServer {
  url: string;
  card: AgentCard;
  executor: RuntimeExecutor;
  recovered: { resumed: string[]; failed: string[] };
  close(): Promise<void>;
}

/** Starts the server: reads the agents, recovers unfinished tasks, listens. */
export async function serveA2A(options: A2AServeOptions): Promise<RunningA2AServer> {
  const workspace = resolve(options.workspace ?? process.cwd());
  const host = options.host ?? '127.0.0.1';
  const guarded = !!options.token || Object.keys(options.clients ?? {}).length > 0;
  if (!guarded && !isLoopback(host)) {
    throw new Error(`listening on ${host} needs a token (set A2A_SERVE_TOKEN, or A2A_SERVE_TOKENS for named clients): without one, anyone who reaches the port could run agents in ${workspace}`);
  }
  // the agents the runs will have: the same configuration stage as a run's
  const loaded = configuration({ workspace, ...(options.run?.config ? { configFile: options.run.config } : {}), ...(options.run?.tools ? { tools: options.run.tools } : {}), ...(options.run?.agents ? { agents: options.run.agents } : {}) });
  const registry = loaded.registry;
  const served = registry.list().filter((a) => !a.remote);
  const defaultAgent = (options.agent ?? loaded.config.defaultAgent ?? 'agent').replace(/^@/, '');
  if (!registry.has(defaultAgent)) throw new Error(`--agent ${defaultAgent} is not an agent type here; known: ${registry.names().join(', ')}`);
  // with --nats the tasks live in the namespace's KV bucket, where every server of it reads them
  const nats = options.run?.nats ? await transportStage(options.run.nats, options.run.namespace ?? 'default', 'a2a-serve', options.notify ?? console.error) : null;
  const records = options.records ?? (nats ? new KvServedTasks(await nats.keyValue(SERVED_TASKS_BUCKET), options.notify ?? ((line) => void process.stderr.write(`${line}\n`))) : undefined);
  const skills = [...served.map((a) => a.capability.id), WORKFLOW_SKILL];
  const executor = new RuntimeExecutor({ ...options, workspace, ...(records ? { records } : {}) }, () => skills, defaultAgent);
  // before the first request: a message for a task being recovered must find it held
  const recovered = await executor.recover();
  // finished tasks past their keeping go, now and every hour
  const retainMs = options.retainMs ?? RETAIN_MS;
  const sweep = () => void executor.sweep(retainMs).catch((e: unknown) => (options.notify ?? console.error)(`a2a serve: removing old tasks: ${errorText(e)}`));
  sweep();
  const sweeping = setInterval(sweep, SWEEP_MS);
  sweeping.unref();
  const app = express();
  const httpServer = await new Promise<Server>((done, fail) => {
    const s = app.listen(options.port ?? 0, host, () => done(s));
    s.once('error', fail);
  });
  const address = httpServer.address() as AddressInfo;
  // on every interface (0.0.0.0, ::) the card gives an address others can use: this machine's
  // first external IPv4 address (--url says another)
  const advertised = ['0.0.0.0', '::'].includes(host) ? externalAddress() : host;
  const url = options.publicUrl ?? `http://${advertised.includes(':') ? `[${advertised}]` : advertised}:${address.port}`;
  if (!options.publicUrl && advertised !== host) (options.notify ?? console.error)(`a2a serve: listening on ${host}; the agent card gives ${url} (--url gives another address)`);
  const card = agentCard({
    url,
    version: options.version ?? '0.0.0',
    agents: [
      ...served.map((a) => a.capability),
      {
        id: WORKFLOW_SKILL,
        description: "The organiser's SDLC workflow (seed 003) on the message as its goal: plan, review, structure, parallel implementation, review, documentation, tests, merge; the artifacts come back as they are made.",
        strengths: ['workflow'],
      },
    ],
    token: guarded,
  });
  const store = new RecordTaskStore(executor.records, (id) => executor.current(id)?.task, workspace, (id) => executor.current(id)?.owner);
  const agentsInCard = served.map((a) => ({ id: a.capability.id, tools: a.capability.tools, strengths: a.capability.strengths, weaknesses: a.capability.weaknesses }));
  const limits = { maxTasks: options.maxTasks ?? MAX_TASKS, retainDays: Math.round((options.retainMs ?? RETAIN_MS) / 86_400_000) };
  const scoped = Object.keys(options.clients ?? {}).length > 0;
  const handler = new RuntimeRequestHandler(card, store, executor, async (context) => extendedCard(card, agentsInCard, limits, callerOf(context), scoped));
  // the credentials: the one token (one client), and named clients' tokens (each task its creator's)
  const credentials: Array<[string, string]> = [...(options.token ? [['a2a-client', options.token] as [string, string]] : []), ...Object.entries(options.clients ?? {})];
  const clientOf = (req: Request) => credentials.find(([, token]) => tokenMatches(req.header('authorization'), token))?.[0];
  const userBuilder: UserBuilder = async (req) => {
    const client = clientOf(req);
    return { isAuthenticated: client !== undefined, userName: client ?? 'anonymous' };
  };
  if (credentials.length === 0) {
    // without a token only loopback may talk to it: a web page that rebinds its own name to
    // 127.0.0.1 (DNS rebinding) sends its own Host, which is refused here
    const allowed = new Set([`127.0.0.1:${address.port}`, `localhost:${address.port}`, `[::1]:${address.port}`, ...(options.publicUrl ? [new URL(options.publicUrl).host] : [])]);
    app.use((req: Request, res: Response, next: NextFunction) => {
      if (allowed.has(String(req.headers.host ?? ''))) return next();
      res.status(421).json({ error: `Host "${String(req.headers.host ?? '').slice(0, 100)}" is not this server: without A2A_SERVE_TOKEN it answers only 127.0.0.1:${address.port} and localhost:${address.port}` });
    });
  }
  // the card is public (clients read it to learn how to authenticate); everything else needs the token
  app.use(CARD_PATH, legacyAgentCardRouter({ agentCardProvider: async () => card, cache: { maxAge: 0 } }));
  app.get(CARD_PATH, (_req, res) => void res.type('application/json').send(JSON.stringify(AgentCard.toJSON(card))));
  if (credentials.length > 0) {
    app.use((req: Request, res: Response, next: NextFunction) => {
      if (clientOf(req) !== undefined) return next();
      res.status(401).set('WWW-Authenticate', 'Bearer').json({ error: 'missing or wrong bearer token: send Authorization: Bearer <the token a2a serve was started with>' });
    });
  }
  app.use([JSONRPC_PATH, REST_PATH], coalesceWrites);
  app.use(JSONRPC_PATH, jsonRpcHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));
  app.use(REST_PATH, restHandler({ requestHandler: handler, userBuilder, legacyCompat: { enabled: true } }));
  return {
    url,
    card,
    executor,
    recovered,
    async close() {
      clearInterval(sweeping);
      await executor.close();
      await new Promise<void>((done) => {
        httpServer.closeAllConnections();
        httpServer.close(() => done());
      });
      await nats?.close();
    },
  };
}

/** This machine's first non-internal IPv4 address (its host name when it has none). */
function externalAddress(): string {
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return hostname();
}

/** The HTTP request headers the SDK's transports keep in a call's state, one value each. */
function requestHeaders(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!raw || typeof raw !== 'object') return out;
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) {
    const one = Array.isArray(value) ? value[0] : value;
    if (typeof one === 'string') out[key.toLowerCase()] = one;
  }
  return out;
}
