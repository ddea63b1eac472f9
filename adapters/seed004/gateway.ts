/**
 * The seed 004 gateway: external agents written to the "Orchestrator Integration Specification
 * for Coding Agent" work inside a2a runs. It is the registry of those agents and the wire to them;
 * each task runs as an `externalTask` session (machines/externalTask.machine.ts) on a `Host`
 * (bin/commands/gateway.ts), so that an a2a run whose plan spawns `@coder` has the task done by a
 * registered `coding_agent`.
 *
 * Subjects (core NATS, `<prefix>` defaults to `a2a.<ns>.swarm`), the spec's routing with one change:
 *   `<prefix>.orchestrator.messages.<agent_id>`  one agent → orchestrator (registration, heartbeat, acknowledgment, …)
 *   `<prefix>.agent.<agent_id>`                  orchestrator → one agent (task, cancel, response, query, status_request, error)
 *   `<prefix>.agent.all`                         orchestrator → every agent (status_request broadcast)
 * The spec has every agent publish on one `<prefix>.orchestrator.messages`, where a message's
 * `sender_id` is only what its author wrote: any agent could speak as another (report a result for
 * its task, cancel it by an error). On its own subject, the server's permissions say who speaks
 * (examples/nats/server.conf lets each agent's user publish on its subject only), and the gateway
 * refuses a message whose `sender_id` or `payload.agent_id` is not that subject's agent
 * (`E_IDENTITY_MISMATCH`). The shared subject is refused with an error naming the agent's own
 * (`E_SHARED_SUBJECT`), unless `sharedSubject` opts in to the spec's way, identities unverified.
 *
 * - **Registry**: `registration` adds (or refreshes) an agent with its type, capabilities and
 *   `max_concurrent_tasks`; heartbeats (every 30 s by default, nothing is answered) keep it alive
 *   and report its load. An agent silent for 3 heartbeat intervals is unresponsive: the tasks it
 *   holds are reassigned, and it gets no new ones until it is heard from again.
 * - **Load balancing**: a task goes to the registered agent of the served type whose capabilities
 *   include the task's type and that has the most available capacity (its maximum minus the larger
 *   of what it reported and what this gateway gave it); agents that rejected the task are never
 *   asked again, agents that did not answer only when no other can take it.
 * - **Routing**: what an agent says about a task (`acknowledgment`, `progress`, `query`,
 *   `task_result`, `error`, `collaboration_request`) goes to that task's session, only if the task
 *   is assigned to that agent; `response`s and `status_response`s settle the request they
 *   correlate to (`requestStatus`, `queryCapabilities`). A `collaboration_request` is also passed
 *   to a registered agent of the `target_agent_type` it names (the one with the most room), with
 *   `requester_id` and correlated to the request; with none connected the requester gets an
 *   `E_NO_COLLABORATOR` error. Either way the task's owner is told.
 * - **Validation**: every message is parsed with the seed 004 schemas first. An invalid one (not
 *   JSON, a missing field, a wrong enum, an unknown task, a task of another agent, another agent's
 *   identity) changes nothing and is answered with an `error` (`system_error`, a code such as
 *   `E_INVALID_MESSAGE`, a message naming the field and what is allowed, correlated to the bad
 *   message) on `agent.<id>` of the agent whose subject it came on (on the shared subject: of its
 *   `sender_id`), or not at all when the sender cannot be told. An `error` is never answered with
 *   an error.
 * - **Replays**: a message whose `message_id` this gateway already handled from the same agent is
 *   dropped without effect (one log line the first time it comes again; replays.ts).
 *
 * One gateway per prefix: messages for a recipient other than `orchestrator` or this gateway's
 * id are left alone (another orchestrator's).
 *
 * Over 600 lines, for a reason: one class, `Seed004Gateway`, whose registry, task assignments and
 * pending requests every handler reads and changes; its handlers follow the spec's message list,
 * one case each, in the spec's order.
 */
import { randomUUID } from 'node:crypto';
import { fromCallback, type AnyActorLogic } from 'xstate';
import type { Clock, EventSink, Transport, TransportSubscription } from '../../machines/ports.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import {
  createExternalTaskMachine,
  DEFAULT_EXTERNAL_TASK_CONFIG,
  type ExternalTaskConfig,
  type WireCommand,
  type WireReply,
} from '../../machines/externalTask.machine.js';
import {
  AgentId,
  envelopeOf,
  parseEnvelope,
  PROTOCOL_VERSION,
  taskFromSpec,
  taskTypeOf,
  unsupportedVersion,
  type MessageOf,
  type MessageType,
  type PayloadOf,
  type Seed004Message,
  type TaskType,
} from '../../machines/seed004.js';
import { correlationOf } from '../../actors/observation/events.js';
import { wireId } from '../../actors/distribution/remote.js';
import { ReplayGuard, type ReplayGuardOptions } from './replays.js';
import { errorText } from '../../machines/errorText.js';

export const DEFAULT_AGENT_HEARTBEAT_MS = 30_000;

export interface GatewayOptions {
  transport: Transport;
  ns: string;
  /** Subject prefix of the seed 004 routing (default `a2a.<ns>.swarm`). */
  prefix?: string;
  /** This orchestrator's id on the wire (`sender_id` of what it sends); default `orchestrator`. */
  id?: string;
  /** a2a agent name → the seed 004 `agent_type` that does its tasks (`coder` → `coding_agent`). */
  serve: Record<string, string>;
  clock: Clock;
  /** Run events (warnings about a session's task: rejections, reassignments). */
  events?: EventSink;
  /** One line per registry change, task assignment and rejected message (no payloads, no secrets). */
  log?: (line: string) => void;
  /** The agents' heartbeat interval; silent for 3 of them is unresponsive. */
  heartbeatMs?: number;
  /** Timings of each task (ack timeout, task timeout, attempts, backoff). */
  task?: Partial<ExternalTaskConfig>;
  /** a2a task types (`code`, `tests` …) → the spec's task types; the default guesses, else `implementation`. */
  taskTypes?: Record<string, TaskType>;
  /** Default wait for a status or capabilities response. */
  requestTimeoutMs?: number;
  /**
   * Also accept messages on the spec's shared `<prefix>.orchestrator.messages`, taking their
   * `sender_id` on trust: any client that may publish there can speak as any agent. Off by
   * default (they are refused with an error naming the agent's own subject); for agents that
   * cannot be changed, on a server where only trusted agents may publish there.
   */
  sharedSubject?: boolean;
  /** Warnings (the shared subject's unverified identities); default: `log`. */
  warn?: (line: string) => void;
  /** How many handled message ids are kept to recognise replays. */
  replays?: ReplayGuardOptions;
}

/** What the gateway knows of a registered agent. */
export interface AgentRecord {
  id: string;
  type: string;
  capabilities: string[];
  maxConcurrent: number;
  version: string | null;
  registeredAt: number;
  lastSeen: number;
  /** Missed 3 heartbeats (until heard from again). */
  unresponsive: boolean;
  /** From its last heartbeat or status response. */
  reported: { currentTasks: number | null; availableCapacity: number | null; status: string | null; uptime: number | null };
  /** Tasks this gateway gave it (offered or working), by task id. */
  assigned: Set<string>;
  /** When it was last given a task (ties go to the one that waited longest). */
  lastOfferAt: number;
}

export interface AgentView {
  id: string;
  type: string;
  capabilities: string[];
  maxConcurrent: number;
  assigned: string[];
  availableCapacity: number;
  responsive: boolean;
  lastSeen: number;
  status: string | null;
}

interface Route {
  spec: SessionSpec;
  serveType: string | undefined;
  taskType: TaskType;
  sendBack: (event: WireReply) => void;
  /** The agent the task is offered to or with. */
  agentId: string | null;
}

interface Waiter {
  route: Route;
  exclude: string[];
  avoid: string[];
}

interface Pending {
  agentId: string;
  kind: 'status' | 'capabilities';
  resolve: (payload: unknown) => void;
  reject: (error: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export type StatusResponse = PayloadOf<'status_response'>;
export type CapabilitiesResponse = Extract<PayloadOf<'response'>, { query_type: 'capabilities' }>;

/** Messages only an orchestrator sends: an agent sending one is confused. */
const ORCHESTRATOR_ONLY = new Set<MessageType>(['task', 'cancel', 'status_request']);
const UNHEALTHY = /^(unhealthy|error|failed|offline|draining|stopping)$/i;

export class Seed004Gateway {
  readonly prefix: string;
  readonly id: string;
  readonly #o: GatewayOptions;
  readonly #heartbeatMs: number;
  readonly #agents = new Map<string, AgentRecord>();
  readonly #routes = new Map<string, Route>();
  /** Tasks waiting for an agent, oldest first. */
  readonly #waiters = new Map<string, Waiter>();
  readonly #pending = new Map<string, Pending>();
  readonly #replays: ReplayGuard;
  #subscriptions: TransportSubscription[] = [];
  #monitor: ReturnType<typeof setInterval> | null = null;
  /** The session logic the host runs: the external-task machine wired to this gateway. */
  readonly logic: AnyActorLogic;

  constructor(options: GatewayOptions) {
    this.#o = options;
    this.prefix = options.prefix ?? `a2a.${options.ns}.swarm`;
    this.id = options.id ?? 'orchestrator';
    this.#heartbeatMs = options.heartbeatMs ?? DEFAULT_AGENT_HEARTBEAT_MS;
    this.#replays = new ReplayGuard(options.replays);
    const machine = createExternalTaskMachine({ ...DEFAULT_EXTERNAL_TASK_CONFIG, ...options.task });
    this.logic = machine.provide({ actors: { agentWire: this.#wireLogic() as never } });
  }

  get subjects() {
    const shared = `${this.prefix}.orchestrator.messages`;
    return {
      /** Where agent `id` speaks: a subject of its own, so that the server's permissions say who speaks. */
      from: (id: string) => `${shared}.${id}`,
      /** Every agent's own subject (what the gateway listens to). */
      fromAny: `${shared}.*`,
      /** The spec's one subject for all agents: it names no one. */
      shared,
      agent: (id: string) => `${this.prefix}.agent.${id}`,
      all: `${this.prefix}.agent.all`,
    };
  }

  async start(): Promise<void> {
    const { fromAny, shared } = this.subjects;
    this.#subscriptions.push(await this.#o.transport.subscribe(fromAny, (message) => this.#onAgentSubject(message.subject, message.data)));
    if (this.#o.sharedSubject) {
      this.#subscriptions.push(await this.#o.transport.subscribe(shared, (message) => this.#onMessage(message.data, null)));
      (this.#o.warn ?? this.#log.bind(this))(
        `messages on ${shared} are accepted with their sender_id unverified: any client that may publish there can speak as any agent (report results, errors, cancel its tasks); agents should publish on ${shared}.<agent_id>`,
      );
    } else {
      try {
        // only to tell an agent written to the spec where to speak instead
        this.#subscriptions.push(await this.#o.transport.subscribe(shared, (message) => this.#onSharedSubject(message.data)));
      } catch (error) {
        // a server that lets no agent publish there need not let the gateway listen either
        this.#log(`not listening on ${shared} (${errorText(error)}): an agent publishing there gets no answer`);
      }
    }
    const every = Math.max(20, Math.min(1_000, Math.floor(this.#heartbeatMs / 2)));
    this.#monitor = setInterval(() => this.#checkLiveness(), every);
  }

  async stop(): Promise<void> {
    if (this.#monitor) clearInterval(this.#monitor);
    this.#monitor = null;
    for (const subscription of this.#subscriptions.splice(0)) await subscription.unsubscribe();
    for (const [id, p] of this.#pending) {
      clearTimeout(p.timer);
      p.reject(new Error(`the gateway stopped before ${p.agentId} answered`));
      this.#pending.delete(id);
    }
  }

  /** The registered agents, with their load as the gateway sees it. */
  agents(): AgentView[] {
    return [...this.#agents.values()].map((a) => ({
      id: a.id,
      type: a.type,
      capabilities: a.capabilities,
      maxConcurrent: a.maxConcurrent,
      assigned: [...a.assigned],
      availableCapacity: this.#capacity(a),
      responsive: !a.unresponsive,
      lastSeen: a.lastSeen,
      status: a.reported.status,
    }));
  }

  /** Asks an agent for its status (`status_request`); resolves with its `status_response`. */
  requestStatus(agentId: string, options: { includeTaskDetails?: boolean; timeoutMs?: number } = {}): Promise<StatusResponse> {
    return this.#request(agentId, 'status', options.timeoutMs, (messageId) =>
      this.#envelope('status_request', agentId, { include_task_details: options.includeTaskDetails ?? true }, { messageId }),
    ) as Promise<StatusResponse>;
  }

  /** Asks an agent what it can do (`query`, `capabilities`); resolves with its `response`. */
  queryCapabilities(agentId: string, options: { requiredCapabilities?: string[]; taskContext?: Record<string, unknown>; timeoutMs?: number } = {}): Promise<CapabilitiesResponse> {
    return this.#request(agentId, 'capabilities', options.timeoutMs, (messageId) =>
      this.#envelope(
        'query',
        agentId,
        { query_type: 'capabilities', required_capabilities: options.requiredCapabilities ?? [], task_context: options.taskContext ?? {} },
        { messageId },
      ),
    ) as Promise<CapabilitiesResponse>;
  }

  /** Asks every agent on `agent.all` for its status; the answers refresh the registry's load. */
  async broadcastStatusRequest(): Promise<string> {
    const message = this.#envelope('status_request', 'all', { include_task_details: false });
    await this.#o.transport.publish(this.subjects.all, message);
    return message.message_id;
  }

  // -- the wire of one task ---------------------------------------------------------------------

  #wireLogic() {
    return fromCallback<WireCommand, { spec: SessionSpec }>(({ input, sendBack, receive }) => {
      const spec = input.spec;
      const route: Route = {
        spec,
        serveType: this.#o.serve[spec.agent.agentName],
        taskType: taskTypeOf(spec, this.#o.taskTypes),
        sendBack: (event) => sendBack(event),
        agentId: null,
      };
      this.#routes.set(wireId(spec), route);
      receive((command) => this.#onCommand(route, command));
      sendBack({ type: 'WIRE_READY', at: this.#now() });
      return () => {
        // the session ended (or stopped here, to be restored elsewhere): nothing more is routed to it
        if (this.#routes.get(wireId(spec)) === route) this.#routes.delete(wireId(spec));
        this.#waiters.delete(wireId(spec));
        this.#release(wireId(spec));
        this.#dispatch();
      };
    });
  }

  #onCommand(route: Route, command: WireCommand): void {
    const taskId = wireId(route.spec);
    switch (command.type) {
      case 'FIND_AGENT':
        this.#waiters.delete(taskId);
        this.#waiters.set(taskId, { route, exclude: command.exclude, avoid: command.avoid });
        this.#dispatch();
        break;
      case 'OFFER': {
        route.agentId = command.agentId;
        const agent = this.#agents.get(command.agentId);
        if (agent) {
          agent.assigned.add(taskId);
          agent.lastOfferAt = this.#now();
        }
        const task = taskFromSpec(route.spec, { agentId: command.agentId, type: route.taskType, deadlineAt: command.deadlineAt });
        this.#log(`task ${taskId} (${route.spec.agent.raw}, ${task.type}) offered to ${command.agentId} (attempt ${command.attempt})`);
        this.#send(command.agentId, this.#envelope('task', command.agentId, task, { messageId: command.messageId }));
        break;
      }
      case 'ANSWER':
        this.#send(
          command.agentId,
          this.#envelope(
            'response',
            command.agentId,
            { query_type: 'clarification', task_id: taskId, answer: command.text, additional_context: `answered by ${command.from}` },
            { correlationId: command.queryId },
          ),
        );
        break;
      case 'CANCEL_TASK':
        this.#log(`task ${taskId} cancelled on ${command.agentId}: ${command.reason}`);
        if (command.reason.startsWith('reassigned')) this.#warn(route.spec, `${command.agentId}: ${command.reason.replace(/^reassigned: /, '')}; ${taskId} is reassigned`);
        this.#send(command.agentId, this.#envelope('cancel', command.agentId, { task_id: taskId, reason: command.reason }));
        this.#release(taskId, command.agentId);
        if (route.agentId === command.agentId) route.agentId = null;
        this.#dispatch();
        break;
      case 'ASSIGNED':
        route.agentId = command.agentId;
        this.#agents.get(command.agentId)?.assigned.add(taskId);
        break;
    }
  }

  // -- choosing agents ----------------------------------------------------------------------------

  #capacity(agent: AgentRecord): number {
    const r = agent.reported;
    const load = Math.max(agent.assigned.size, r.currentTasks ?? 0, r.availableCapacity === null ? 0 : agent.maxConcurrent - r.availableCapacity);
    return Math.max(0, agent.maxConcurrent - load);
  }

  #eligible(agent: AgentRecord, waiter: Waiter): boolean {
    const { route } = waiter;
    if (agent.unresponsive || agent.type !== route.serveType || waiter.exclude.includes(agent.id)) return false;
    if (agent.reported.status && UNHEALTHY.test(agent.reported.status)) return false;
    if (agent.capabilities.length > 0 && !agent.capabilities.includes(route.taskType)) return false;
    return this.#capacity(agent) > 0;
  }

  /** Gives waiting tasks (oldest first) to the least loaded eligible agents. */
  #dispatch(): void {
    for (const [taskId, waiter] of [...this.#waiters]) {
      const candidates = [...this.#agents.values()].filter((a) => this.#eligible(a, waiter));
      if (candidates.length === 0) continue;
      const preferred = candidates.filter((a) => !waiter.avoid.includes(a.id));
      const pool = preferred.length > 0 ? preferred : candidates;
      pool.sort((a, b) => this.#capacity(b) - this.#capacity(a) || a.assigned.size - b.assigned.size || a.lastOfferAt - b.lastOfferAt || a.id.localeCompare(b.id));
      const agent = pool[0]!;
      this.#waiters.delete(taskId);
      // reserved now, so that the next waiter sees it taken
      agent.assigned.add(taskId);
      agent.lastOfferAt = this.#now();
      waiter.route.sendBack({ type: 'AGENT_FOUND', agentId: agent.id, at: this.#now() });
    }
  }

  /** The agent (or whichever holds it) no longer holds the task. */
  #release(taskId: string, agentId?: string): void {
    for (const agent of this.#agents.values()) {
      if (agentId && agent.id !== agentId) continue;
      agent.assigned.delete(taskId);
    }
  }

  #checkLiveness(): void {
    const now = this.#now();
    for (const agent of this.#agents.values()) {
      if (agent.unresponsive || now - agent.lastSeen <= 3 * this.#heartbeatMs) continue;
      agent.unresponsive = true;
      const tasks = [...this.#routes.values()].filter((r) => r.agentId === agent.id);
      this.#log(`agent ${agent.id} is unresponsive (silent for ${now - agent.lastSeen} ms)${tasks.length ? `: reassigning ${tasks.map((r) => r.spec.id).join(', ')}` : ''}`);
      for (const route of tasks) route.sendBack({ type: 'AGENT_LOST', agentId: agent.id, at: now });
    }
  }

  #seen(agent: AgentRecord): void {
    agent.lastSeen = this.#now();
    if (agent.unresponsive) {
      agent.unresponsive = false;
      this.#log(`agent ${agent.id} is responsive again`);
    }
  }

  // -- inbound ------------------------------------------------------------------------------------

  /** A message on `<prefix>.orchestrator.messages.<agent>`: that agent speaks. */
  #onAgentSubject(subject: string, data: unknown): void {
    const speaker = subject.slice(this.subjects.shared.length + 1);
    if (!AgentId.safeParse(speaker).success) {
      // no agent.<id> subject to answer on
      this.#log(`dropped a message on ${subject}: "${speaker}" is not an agent id (letters, digits, "_" and "-")`);
      return;
    }
    this.#onMessage(data, speaker);
  }

  /** A message on the shared subject without the opt-in: refused, with where to speak instead. */
  #onSharedSubject(data: unknown): void {
    const parsed = parseEnvelope(data);
    const sender = parsed.ok ? parsed.message.sender_id : parsed.senderId;
    const messageId = parsed.ok ? parsed.message.message_id : parsed.messageId;
    const type = parsed.ok ? parsed.message.message_type : parsed.messageType;
    const own = this.subjects.from(sender ?? '<agent_id>');
    const text = `${this.subjects.shared} names no agent, so nothing said there is accepted: publish on your own subject, ${own}`;
    // The reply goes to the sender_id it claims, unverified: all that reaches that agent is where to speak.
    if (type === 'error') this.#log(`dropped an error message on ${this.subjects.shared} from ${sender ?? 'an unknown sender'}: publish on ${own}`);
    else this.#reject(sender, messageId, 'E_SHARED_SUBJECT', text, `Publish every message on ${own}`);
  }

  /**
   * A message from `speaker` (the agent of the subject it came on), or from whoever its
   * `sender_id` names when it came on the shared subject (`speaker` null, with the opt-in).
   */
  #onMessage(data: unknown, speaker: string | null): void {
    const parsed = parseEnvelope(data);
    if (!parsed.ok) {
      // an invalid error report is not answered either (no error ping-pong)
      if (parsed.messageType === 'error') {
        this.#log(`dropped an invalid error message from ${speaker ?? parsed.senderId ?? 'an unknown sender'}: ${parsed.problem}`);
        return;
      }
      this.#reject(speaker ?? parsed.senderId, parsed.messageId, 'E_INVALID_MESSAGE', `invalid message: ${parsed.problem}`, 'Fix the message to match the seed 004 schema and send it again');
      return;
    }
    const message = parsed.message;
    if (message.recipient_id !== 'orchestrator' && message.recipient_id !== this.id) return;
    if (speaker !== null) {
      const mismatch = this.#impersonation(message, speaker);
      if (mismatch) {
        if (message.message_type === 'error') this.#log(`dropped an error message on ${this.subjects.from(speaker)}: ${mismatch}`);
        else this.#reject(speaker, message.message_id, 'E_IDENTITY_MISMATCH', mismatch, `Speak only as yourself: "${speaker}"`);
        return;
      }
    }
    const sender = message.sender_id;
    // after the identity check: only the agent itself can use up its message ids
    const seen = this.#replays.check(sender, message.message_id);
    if (seen !== 'new') {
      if (seen === 'replay') this.#log(`replay dropped: ${message.message_type} ${message.message_id} from ${sender} was already handled`);
      return;
    }
    const reject = (code: string, text: string, suggested?: string, taskId?: string) => this.#reject(sender, message.message_id, code, text, suggested, taskId);
    if (ORCHESTRATOR_ONLY.has(message.message_type)) {
      reject('E_UNEXPECTED_MESSAGE', `message_type "${message.message_type}" is sent by the orchestrator to agents, not to it`);
      return;
    }
    if (message.message_type === 'registration') {
      this.#register(message);
      return;
    }
    const agent = this.#agents.get(sender);
    if (!agent) {
      if (message.message_type === 'error') {
        this.#log(`error from unregistered ${sender}: ${message.payload.error_code}: ${message.payload.error_message}`);
        return;
      }
      reject('E_NOT_REGISTERED', `sender_id "${sender}" is not a registered agent`, 'Send a registration message first');
      return;
    }
    this.#seen(agent);
    switch (message.message_type) {
      case 'heartbeat': {
        if (message.payload.agent_id !== sender) {
          reject('E_INVALID_MESSAGE', `invalid message: payload.agent_id: must be the sender_id "${sender}" (got "${message.payload.agent_id}")`);
          return;
        }
        const p = message.payload;
        agent.reported = {
          currentTasks: p.current_tasks ?? agent.reported.currentTasks,
          availableCapacity: p.available_capacity ?? agent.reported.availableCapacity,
          status: p.status ?? agent.reported.status,
          uptime: p.uptime ?? agent.reported.uptime,
        };
        this.#dispatch();
        return;
      }
      case 'status_response': {
        const p = message.payload;
        agent.reported = {
          currentTasks: p.current_tasks.length,
          availableCapacity: p.available_capacity ?? agent.reported.availableCapacity,
          status: agent.reported.status,
          uptime: p.uptime ?? agent.reported.uptime,
        };
        if (message.correlation_id && !this.#settle(message.correlation_id, sender, 'status', message.payload)) {
          reject('E_UNKNOWN_CORRELATION', `correlation_id "${message.correlation_id}" matches no status_request sent to ${sender}`);
        }
        this.#dispatch();
        return;
      }
      case 'response': {
        if (message.payload.query_type !== 'capabilities') {
          reject('E_UNEXPECTED_MESSAGE', 'payload.query_type: agents answer "capabilities" queries; clarification responses are sent by the orchestrator');
          return;
        }
        const p = message.payload;
        if (p.available_capacity !== null && p.available_capacity !== undefined) agent.reported.availableCapacity = p.available_capacity;
        if (p.current_load !== null && p.current_load !== undefined) agent.reported.currentTasks = p.current_load;
        if (!message.correlation_id || !this.#settle(message.correlation_id, sender, 'capabilities', p)) {
          reject('E_UNKNOWN_CORRELATION', `correlation_id ${message.correlation_id ? `"${message.correlation_id}"` : '(missing)'} matches no capabilities query sent to ${sender}`);
        }
        this.#dispatch();
        return;
      }
      case 'query':
        if (message.payload.query_type !== 'clarification') {
          reject('E_UNSUPPORTED', 'payload.query_type: the orchestrator answers "clarification" queries only');
          return;
        }
        this.#toTask(message, message.payload.task_id, (at) => ({
          type: 'AGENT_QUERY',
          agentId: sender,
          messageId: message.message_id,
          question: (message.payload as { question: string }).question,
          options: (message.payload as { suggested_options?: string[] | null }).suggested_options ?? [],
          at,
        }));
        return;
      case 'acknowledgment': {
        const p = message.payload;
        this.#toTask(message, p.task_id, (at) => {
          if (p.status === 'rejected') {
            this.#log(`task ${p.task_id} rejected by ${sender}${p.reason ? `: ${p.reason}` : ''}`);
            const route = this.#routes.get(p.task_id);
            if (route) this.#warn(route.spec, `${sender} rejected ${p.task_id}${p.reason ? ` (${p.reason})` : ''}`);
            this.#release(p.task_id, sender);
            queueMicrotask(() => this.#dispatch());
          } else {
            this.#log(`task ${p.task_id} accepted by ${sender}`);
          }
          return { type: 'AGENT_ACK', agentId: sender, accepted: p.status === 'accepted', ...(p.reason ? { reason: p.reason } : {}), at };
        });
        return;
      }
      case 'progress': {
        const p = message.payload;
        this.#toTask(message, p.task_id, (at) => ({ type: 'AGENT_PROGRESS', agentId: sender, progress: p.progress, message: p.message ?? '', at }));
        return;
      }
      case 'collaboration_request': {
        const p = message.payload;
        this.#toTask(message, p.task_id, (at) => {
          const wanted = `${p.collaboration_type}${p.target_agent_type ? ` by a ${p.target_agent_type}` : ''}`;
          const target = p.target_agent_type ? this.#collaborator(p.target_agent_type, sender) : null;
          if (target) {
            // to the agent it names, as from this orchestrator, with who asked and correlated to the request
            this.#send(target.id, this.#envelope('collaboration_request', target.id, { ...p, requester_id: sender }, { correlationId: message.message_id }));
            this.#log(`collaboration request from ${sender} about ${p.task_id} (${wanted}) passed to ${target.id}`);
            return { type: 'AGENT_PROGRESS', agentId: sender, progress: null, message: `asks for ${wanted}: passed to ${target.id}`, at };
          }
          const why = p.target_agent_type ? `no ${p.target_agent_type} agent is connected` : 'it names no target_agent_type';
          this.#reject(sender, message.message_id, 'E_NO_COLLABORATOR', `collaboration request not passed on: ${why}; the task's owner was told`, 'Go on without it, or name a target_agent_type that is registered', p.task_id);
          return { type: 'AGENT_PROGRESS', agentId: sender, progress: null, message: `asks for ${wanted}: ${why}, so it is passed on as a note`, at };
        });
        return;
      }
      case 'task_result': {
        const p = message.payload;
        this.#toTask(message, p.task_id, (at) => {
          this.#log(`task ${p.task_id} ${p.status} by ${sender}`);
          this.#release(p.task_id, sender);
          // its own count drops too, until its next heartbeat says so
          if (agent.reported.currentTasks) agent.reported.currentTasks -= 1;
          if (agent.reported.availableCapacity !== null) agent.reported.availableCapacity = Math.min(agent.maxConcurrent, agent.reported.availableCapacity + 1);
          queueMicrotask(() => this.#dispatch());
          return { type: 'AGENT_RESULT', agentId: sender, payload: p, at };
        });
        return;
      }
      case 'error': {
        const p = message.payload;
        if (message.correlation_id && this.#pending.has(message.correlation_id)) {
          const pending = this.#pending.get(message.correlation_id)!;
          if (pending.agentId === sender) {
            this.#pending.delete(message.correlation_id);
            clearTimeout(pending.timer);
            pending.reject(new Error(`${sender} answered with an error: ${p.error_code}: ${p.error_message}`));
            return;
          }
        }
        const route = p.task_id ? this.#routes.get(p.task_id) : undefined;
        if (!p.task_id || !route || route.agentId !== sender) {
          this.#log(`error from ${sender}${p.task_id ? ` about task ${p.task_id}` : ''}: ${p.error_type} ${p.error_code}: ${p.error_message}`);
          return;
        }
        this.#log(`task ${p.task_id} on ${sender}: ${p.error_type} ${p.error_code}${p.recoverable ? ' (recoverable)' : ''}`);
        route.sendBack({ type: 'AGENT_ERROR', agentId: sender, code: p.error_code, message: p.error_message, recoverable: p.recoverable === true, at: this.#now() });
        return;
      }
    }
  }

  /** What in a message claims another identity than `speaker`'s, or null. */
  #impersonation(message: Seed004Message, speaker: string): string | null {
    const where = `the agent whose subject ${this.subjects.from(speaker)} it came on`;
    if (message.sender_id !== speaker) return `sender_id: must be "${speaker}", ${where} (got "${message.sender_id}")`;
    // the messages that name their agent again in the payload
    if (message.message_type === 'registration' || message.message_type === 'heartbeat' || message.message_type === 'status_response') {
      if (message.payload.agent_id !== speaker) return `payload.agent_id: must be "${speaker}", ${where} (got "${message.payload.agent_id}")`;
    }
    return null;
  }

  #register(message: MessageOf<'registration'>): void {
    const p = message.payload;
    if (p.agent_id !== message.sender_id) {
      this.#reject(message.sender_id, message.message_id, 'E_INVALID_MESSAGE', `invalid message: payload.agent_id: must be the sender_id "${message.sender_id}" (got "${p.agent_id}")`);
      return;
    }
    const version = unsupportedVersion(p.version);
    if (version) {
      // not registered: it would misread what is sent to it
      this.#reject(message.sender_id, message.message_id, 'E_UNSUPPORTED_VERSION', version, `Register with a version of protocol ${PROTOCOL_VERSION} (major ${PROTOCOL_VERSION.split('.')[0]})`);
      return;
    }
    const now = this.#now();
    const before = this.#agents.get(p.agent_id);
    const record: AgentRecord = {
      id: p.agent_id,
      type: p.agent_type,
      capabilities: p.capabilities,
      maxConcurrent: p.max_concurrent_tasks,
      version: p.version ?? null,
      registeredAt: before?.registeredAt ?? now,
      lastSeen: now,
      unresponsive: false,
      reported: { currentTasks: null, availableCapacity: null, status: null, uptime: null },
      assigned: before?.assigned ?? new Set(),
      lastOfferAt: before?.lastOfferAt ?? 0,
    };
    this.#agents.set(record.id, record);
    const serves = Object.entries(this.#o.serve).filter(([, type]) => type === record.type).map(([name]) => `@${name}`);
    this.#log(
      `agent ${record.id} ${before ? 're-registered' : 'registered'}: ${record.type}, max ${record.maxConcurrent} task(s)${record.capabilities.length ? `, ${record.capabilities.join(', ')}` : ''}${serves.length ? ` (serves ${serves.join(', ')})` : ' (no served a2a agent maps to its type)'}`,
    );
    this.#dispatch();
  }

  /** Routes a message about a task to its session, if the task is the sender's. */
  #toTask(message: Seed004Message, taskId: string, event: (at: number) => WireReply): void {
    const route = this.#routes.get(taskId);
    if (!route) {
      this.#reject(message.sender_id, message.message_id, 'E_UNKNOWN_TASK', `payload.task_id: "${taskId}" is not a task in progress here`, 'Check the task_id; a finished or cancelled task takes no more messages', taskId);
      return;
    }
    if (route.agentId !== message.sender_id) {
      this.#reject(message.sender_id, message.message_id, 'E_NOT_ASSIGNED', `payload.task_id: task "${taskId}" is not assigned to ${message.sender_id}`, 'Only the agent a task was sent to reports on it', taskId);
      return;
    }
    route.sendBack(event(this.#now()));
  }

  // -- requests -----------------------------------------------------------------------------------

  #request(agentId: string, kind: Pending['kind'], timeoutMs: number | undefined, build: (messageId: string) => Seed004Message): Promise<unknown> {
    if (!this.#agents.has(agentId)) return Promise.reject(new Error(`no registered agent "${agentId}"; registered: ${[...this.#agents.keys()].join(', ') || 'none'}`));
    const messageId = randomUUID();
    const wait = timeoutMs ?? this.#o.requestTimeoutMs ?? 10_000;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(messageId);
        reject(new Error(`${agentId} did not answer the ${kind === 'status' ? 'status request' : 'capabilities query'} within ${wait} ms`));
      }, wait);
      this.#pending.set(messageId, { agentId, kind, resolve, reject, timer });
      this.#o.transport.publish(this.subjects.agent(agentId), build(messageId)).catch((error: unknown) => {
        clearTimeout(timer);
        this.#pending.delete(messageId);
        reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  #settle(correlationId: string, agentId: string, kind: Pending['kind'], payload: unknown): boolean {
    const pending = this.#pending.get(correlationId);
    if (!pending || pending.agentId !== agentId || pending.kind !== kind) return false;
    this.#pending.delete(correlationId);
    clearTimeout(pending.timer);
    pending.resolve(payload);
    return true;
  }

  // -- outbound -----------------------------------------------------------------------------------

  #envelope<T extends MessageType>(type: T, recipient: string, payload: PayloadOf<T>, options: { messageId?: string; correlationId?: string | null } = {}): MessageOf<T> {
    return envelopeOf(type, { messageId: options.messageId ?? randomUUID(), senderId: this.id, recipientId: recipient, at: this.#now(), correlationId: options.correlationId ?? null }, payload);
  }

  /** The registered, responsive agent of `type` (not `requester`) with the most room, for a collaboration request. */
  #collaborator(type: string, requester: string): AgentRecord | null {
    let best: AgentRecord | null = null;
    for (const agent of this.#agents.values()) {
      if (agent.type !== type || agent.unresponsive || agent.id === requester) continue;
      if (!best || this.#capacity(agent) > this.#capacity(best)) best = agent;
    }
    return best;
  }

  #send(agentId: string, message: Seed004Message): void {
    this.#o.transport.publish(this.subjects.agent(agentId), message).catch((error: unknown) => {
      this.#log(`could not send ${message.message_type} to ${agentId}: ${errorText(error)}`);
    });
  }

  /** The `error` reply to a message that is refused; nowhere when the sender cannot be told. */
  #reject(senderId: string | null, messageId: string | null, code: string, text: string, suggested?: string, taskId?: string): void {
    this.#log(`refused a message from ${senderId ?? 'an unknown sender'}${messageId ? ` (${messageId})` : ''}: ${code}: ${text}`);
    if (!senderId) return;
    this.#send(
      senderId,
      this.#envelope(
        'error',
        senderId,
        {
          error_type: 'system_error',
          error_code: code,
          error_message: text,
          recoverable: true,
          ...(taskId ? { task_id: taskId } : {}),
          ...(suggested ? { suggested_action: suggested } : {}),
        },
        { correlationId: messageId },
      ),
    );
  }

  #warn(spec: SessionSpec, message: string): void {
    this.#o.events?.emit({ type: 'warning', ...correlationOf(spec), data: { message } });
  }

  #log(line: string): void {
    this.#o.log?.(line);
  }

  #now(): number {
    return this.#o.clock.now();
  }
}
