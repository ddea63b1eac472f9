/**
 * Port and actor-contract *types* (no code). Machines use these to type what they invoke;
 * `actors/` implements the actors, `adapters/` implements the ports, `bin/` wires them.
 */
import type {
  ArtifactContent,
  ArtifactMeta,
  ChatMessage,
  DiffStats,
  HumanAnswer,
  HumanItem,
  QueueMessage,
  ModelReply,
  ParsedAgentType,
  PermissionAction,
  PermissionDecision,
  PermissionRequest,
  ResultStatus,
  RunEvent,
  SessionSpec,
  SpawnOutcome,
  SubTaskResult,
  TaskUpdate,
  ToolCall,
  ToolSpec,
  UpdateBatch,
  WatchOutcome,
  NotificationKind,
} from './protocol/index.js';

// ---------------------------------------------------------------------------------------------
// Ports

/** Time for every timer and timestamp; `SimulatedClock` from xstate satisfies it in tests. */
export interface Clock {
  now(): number;
  setTimeout(fn: (...args: unknown[]) => void, timeout: number): unknown;
  clearTimeout(id: unknown): void;
}

export interface ModelRequest {
  system: string;
  messages: ChatMessage[];
  tools: ToolSpec[];
  agentType: ParsedAgentType;
  sessionId: string;
  depth: number;
  /** Explicit model override (`--model`, the spawn tool's `model`). */
  model?: string;
  /** This call's output limit, over the profile's (a reply cut by the limit is asked again with more). */
  maxTokens?: number;
}

/** One model call with tools. Implementations: scripted (default), openai, anthropic. */
export interface Model {
  readonly id: string;
  /** The provider's name of the model (`gpt-4.1`), which calls are priced by; absent: the id. */
  readonly modelName?: string;
  /** Who serves it, for traces (`gen_ai.provider.name`: `openai`, `anthropic`, …); absent: the id. */
  readonly provider?: string;
  /**
   * True when the adapter already validated the reply where it entered the process (it parsed the
   * provider's wire format, or built the reply itself); otherwise the agent loop validates it.
   */
  readonly validatesReplies?: boolean;
  /** The output limit the adapter sends when the profile sets none (Anthropic requires one); absent: the model's own. */
  readonly defaultMaxTokens?: number;
  call(request: ModelRequest, options: { signal: AbortSignal }): Promise<ModelReply>;
}

/** Where run events go: the CLI's live tree and `--json`, the event log, monitors. */
export interface EventSink {
  emit(event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): void;
  /** False when nobody listens, so that producers can skip building events. */
  readonly listening?: boolean;
}

/** What a branch changed: files, and lines added and removed (DiffStats, with the files always listed). */
export type DiffSummary = DiffStats & { files: string[] };

export type MergeOutcome = { merged: true; commit: string } | { merged: false; conflicts: string[] };

/** Git for worktrees and the completion workflow (adapters/git.ts implements it with simple-git). */
export interface Git {
  /** The top directory of the repository `dir` is in, or null when it is in none. */
  repositoryRoot(dir: string): Promise<string | null>;
  /** Throws a clear error (commit, stash or discard) when the repository has uncommitted changes. */
  assertClean(repo: string): Promise<void>;
  currentBranch(repo: string): Promise<string>;
  /** A new worktree at `path` on a new `branch` from `base`. */
  createWorktree(repo: string, options: { path: string; branch: string; base: string }): Promise<void>;
  removeWorktree(repo: string, path: string, options?: { deleteBranch?: string }): Promise<void>;
  /** Changes of the worktree (committed and not) against `base`. */
  diffSummary(worktree: string, base: string): Promise<DiffSummary>;
  /** Commits everything in the worktree; null when there was nothing to commit. */
  commitAll(worktree: string, message: string): Promise<string | null>;
  /** Merges `branch` into `into` in `repo`; on conflict the base is left exactly as it was. */
  merge(repo: string, options: { branch: string; into: string; message: string }): Promise<MergeOutcome>;
  push(repo: string, options: { remote: string; branch: string }): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Transport between actor systems (adapters/transport/memory.ts, adapters/transport/nats.ts)

/** A message on a subject. `data` is JSON-serializable; `headers` are string pairs. */
export interface TransportMessage {
  subject: string;
  data: unknown;
  headers: Record<string, string>;
}

/** A message taken from a durable queue: it is redelivered until acknowledged. */
export interface DurableMessage extends TransportMessage {
  /** The id it was enqueued with (duplicates of it within the dedup window were dropped). */
  msgId: string;
  /** How many times it has been delivered (1 the first time). */
  deliveries: number;
  /** Done with it: it is never delivered again. */
  ack(): Promise<void>;
  /** Not now: deliver it again (after `delayMs`), to this or another consumer. */
  nak(delayMs?: number): Promise<void>;
  /** Still working on it: restarts its ack timer. */
  working(): Promise<void>;
}

export interface TransportSubscription {
  unsubscribe(): Promise<void>;
}

export interface DurableConsumer {
  /** Stops taking messages; those in flight are left unacknowledged (redelivered elsewhere). */
  stop(): Promise<void>;
  /** Messages for this consumer not yet acknowledged (not delivered yet, or delivered and not acked). */
  pending(): Promise<number>;
  /**
   * Stops it and removes it from the server (nobody will read it again: a run that ended). What it
   * had not acknowledged stays queued (a work queue keeps it) for a consumer made later.
   */
  remove(): Promise<void>;
}

/** A key-value bucket (actor snapshots, registrations). */
export interface KeyValue {
  get(key: string): Promise<{ value: unknown; revision: number } | null>;
  /** Returns the new revision. */
  put(key: string, value: unknown): Promise<number>;
  /** Compare-and-set: writes only if the key is at `revision` (0: absent); returns the new revision, or null when it is not. */
  update(key: string, value: unknown, revision: number): Promise<number | null>;
  delete(key: string): Promise<void>;
  /**
   * Removes every key that starts with `prefix` (which ends with "."): over NATS one purge of the
   * bucket's subjects under it, whatever their number.
   */
  deleteUnder(prefix: string): Promise<void>;
  keys(prefix?: string): Promise<string[]>;
}

/**
 * Read access to a key-value bucket and nothing else: it never creates the bucket (a missing one
 * reads as empty) and, over NATS, needs no consumer (a user allowed only this cannot have anything
 * delivered anywhere; see `Transport.readKeyValue`).
 */
export type KeyValueReader = Pick<KeyValue, 'get' | 'keys'>;

/**
 * Messages between actor systems. Core messaging (publish, subscribe with optional queue groups,
 * request/reply) is at most once; durable queues are at least once with explicit acks and
 * de-duplication by message id, and survive restarts of the server (NATS: JetStream streams and
 * consumers; memory: in-process).
 */
export interface Transport {
  readonly kind: 'memory' | 'nats';
  publish(subject: string, data: unknown, headers?: Record<string, string>): Promise<void>;
  /** `subject` may end in `>` or contain `*`. With `queue`, each message goes to one member of the group. */
  subscribe(subject: string, handler: (message: TransportMessage) => void, options?: { queue?: string }): Promise<TransportSubscription>;
  request(subject: string, data: unknown, options: { timeoutMs: number; headers?: Record<string, string> }): Promise<TransportMessage>;
  /** Answers a request received through `subscribe`. */
  respond(request: TransportMessage, data: unknown): Promise<void>;
  /**
   * Creates (or checks) a durable queue holding `subjects` (with wildcards). `workQueue`: a
   * message is removed once acknowledged by any consumer; otherwise it is kept for `maxAgeMs`.
   */
  ensureQueue(name: string, options: { subjects: string[]; workQueue: boolean; maxAgeMs?: number; duplicateWindowMs?: number }): Promise<void>;
  /** Appends to the durable queue that holds `subject`; a `msgId` seen within the window is dropped. Resolves once stored. */
  enqueue(subject: string, data: unknown, options: { msgId: string; headers?: Record<string, string> }): Promise<{ duplicate: boolean }>;
  /**
   * Consumes a durable queue with a named consumer (consumers with the same name share the
   * messages: each goes to one of them). `filter` narrows it to subjects; a message not acked
   * within `ackWaitMs` is delivered again; at most `maxInFlight` are unacknowledged at once.
   */
  consume(
    queue: string,
    options: {
      consumer: string;
      filter?: string;
      ackWaitMs: number;
      maxInFlight: number;
      /** Removes the consumer (not its messages) after this long without anyone consuming (per-session consumers). */
      inactiveMs?: number;
      /**
       * Reads the consumer without making or changing it (another process's box: a user may have
       * the right to read it and not to make it); NOT_FOUND when it does not exist.
       */
      join?: boolean;
    },
    handler: (message: DurableMessage) => void | Promise<void>,
  ): Promise<DurableConsumer>;
  keyValue(bucket: string): Promise<KeyValue>;
  /**
   * Reads a bucket without writing to it or creating it. Over NATS: keys from a stream info
   * request filtered on the bucket's subjects, values by direct get (or message get) of a key's
   * last subject; no consumer, so a read-only role needs no right to create one (a consumer's
   * deliver subject could point at any subject).
   */
  readKeyValue(bucket: string): Promise<KeyValueReader>;
  close(): Promise<void>;
}

/** A record read back from an artifact backend: not yet parsed (the store parses it), and where it lives. */
export interface StoredRecord {
  value: unknown;
  /** Compare-and-set token: pass it to `writeMeta` to change this record. */
  revision: number;
  /** Where it is (a file path, `bucket/key`), for the message when it is not a valid record. */
  key: string;
}

/**
 * Where the artifact store (actors/organiser/artifacts.ts) keeps its records: per run, per artifact, one
 * record (`ArtifactMeta`, changed by compare-and-set) and one content per version (`ArtifactContent`,
 * written once). Two operations are atomic, so that processes on one disk or on several hosts
 * share a store without a lock: `createContent` (create-if-absent: it claims a new id or a new
 * version) and `writeMeta` at a revision. Implementations: adapters/store/artifactFiles.ts (files
 * under the run's directory), adapters/store/artifactKv.ts (a key-value bucket: in process, or
 * NATS JetStream shared by hosts).
 */
export interface ArtifactBackend {
  /** What it is and where, for messages ("files under /ws/.a2a/runs", "KV bucket artifacts"). */
  readonly where: string;
  /** Ids of the run's artifacts, in no particular order (one being created may have no record yet). */
  ids(runId: string): Promise<string[]>;
  readMeta(runId: string, id: string): Promise<StoredRecord | null>;
  /** Writes the record if it is at `revision` (0: absent); the new revision, or null when it is not. */
  writeMeta(runId: string, id: string, meta: ArtifactMeta, revision: number): Promise<number | null>;
  /** Writes a version's content if that version has none yet; false when it has one. */
  createContent(runId: string, id: string, version: number, content: ArtifactContent): Promise<boolean>;
  readContent(runId: string, id: string, version: number): Promise<StoredRecord | null>;
}

/** One shell command of run_command, in a session's worktree. */
export interface CommandRequest {
  command: string;
  /** The worktree's real path: the only part of the host's files the command may change. */
  worktree: string;
  /** Where it starts: the worktree or a directory inside it (real path). */
  cwd: string;
  timeoutMs: number;
  /** Aborted when the session ends: the command and everything it started are killed. */
  signal: AbortSignal;
  /** Reach the network (the `network_access` permission was granted). */
  network: boolean;
}

export interface CommandResult {
  exitCode: number | null;
  signal: string | null;
  /** stdout and stderr interleaved, capped (its beginning and end are kept). */
  output: string;
  /** Bytes of output left out in the middle. */
  cut: number;
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
  /** A limit of the sandbox the command hit (memory, processes, file size, /tmp, disk), said with the setting that raises it. */
  limit?: string;
  /** What the sandbox changed for this command that it should know (files it masked). */
  note?: string;
}

export type CommandRunnerStatus = { ready: true } | { ready: false; reason: string };

/**
 * Runs run_command's commands. Implementations (adapters/sandbox/): `bubblewrap`, the default,
 * confines a command to its worktree; `none` runs it unconfined (the user's explicit opt-out).
 */
export interface CommandRunner {
  readonly name: 'bubblewrap' | 'none';
  /** False when commands are not confined: each one then needs a person's approval. */
  readonly confined: boolean;
  /** Whether commands can run at all here (checked once per process, on first use); if not, why and how to fix it. */
  check(): Promise<CommandRunnerStatus>;
  run(request: CommandRequest): Promise<CommandResult>;
}

/** Opens pull requests (adapters/github.ts, with the token bound). */
export interface PullRequests {
  open(options: { owner: string; repo: string; head: string; base: string; title: string; body: string; signal?: AbortSignal }): Promise<{ number: number; url: string }>;
}

// ---------------------------------------------------------------------------------------------
// Contracts of the actors a session invokes. The messages themselves are zod schemas in
// machines/protocol/ (the one source of every message type); these are their types, re-exported here
// for the actors that implement the contracts.

export type {
  AgentLoopReply,
  AgentLoopRequest,
  CallModelInput,
  CallModelOutput,
  HumanDecision,
  HumanGateEvent,
  HumanGateReply,
  InboxEvent,
  InboxItem,
  InboxReply,
  ManagementEvent,
  PermissionAnswer,
  PermissionAsk,
  RunToolInput,
  SupervisorEvent,
  SupervisorReply,
  ToolEffect,
  ToolOutcome,
} from './protocol/index.js';

export interface AgentLoopInput {
  spec: SessionSpec;
}

// ---------------------------------------------------------------------------------------------
// The supervisor of a session's children and of the orchestrator's workers

export interface SupervisorInput {
  /** The owning session, or null for the orchestrator's worker family / a standalone root. */
  owner: SessionSpec | null;
  ownerId: string;
  /** Children that may run at once. */
  maxParallel: number;
}

/** Read-only view of a supervisor's children, for tools that validate ids. */
export interface FamilyView {
  has(id: string): boolean;
  status(id: string): 'pending' | 'running' | 'settled' | undefined;
  result(id: string): SubTaskResult | undefined;
  ids(): string[];
  live(): number;
}
