/**
 * Between actor systems (NATS): a session runs on a host, its owner elsewhere; records, heartbeats and mail.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { RunId } from './common.js';
import { SubTaskResult, TaskUpdate } from './subtasks.js';
import { HumanItem, PermissionRequest } from './permissions.js';
import { SessionSpec } from './limits.js';
import { ControlRequest, SessionCommand } from './actors.js';

// ---------------------------------------------------------------------------------------------
// Between actor systems (NATS): a session runs on a host, its owner elsewhere

/** Where a remote session's messages go back to, and where it is asked to run. */
/**
 * W3C trace context headers (`traceparent`, `tracestate`) on a message between processes (spawn,
 * up, down, a host's events): the span of the session the message is about, so that a run across
 * hosts is one trace. Other headers are allowed (the schema looks at these two only).
 */
export const TraceHeaders = z.object({
  traceparent: z.string().regex(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/, 'version-traceid-spanid-flags in lowercase hex (W3C Trace Context)'),
  tracestate: z.string().max(512).optional(),
});
export type TraceHeaders = z.infer<typeof TraceHeaders>;

export const RemoteSpawn = z.object({
  /** The session to run (its agent type picks the queue: `a2a.<ns>.spawn.<agentName>`). */
  spec: SessionSpec,
  /** The process that owns it (its supervisor), for the record. */
  ownerProcess: z.string(),
  /**
   * Where its reports go: the owner's box (a run's `rs<n>`, `h-<hostId>`; see actors/distribution/mailbox.ts), and,
   * when its owner runs on a host, the id of the tree the owner runs in there (its reports go to
   * whichever host holds that tree then).
   */
  owner: z.object({ box: z.string().regex(/^[A-Za-z0-9_-]+$/), root: z.string().optional() }),
  /** When the spawn was first requested (clock time of the owner). */
  requestedAt: z.number(),
});
export type RemoteSpawn = z.infer<typeof RemoteSpawn>;

/** A host id: it names NATS subjects and keys. */
export const HostId = z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, "_" and "-"');

/**
 * From a remote session to its owner, on `a2a.<ns>.up.<hostId>.<runId>.<sessionId>`: the subject
 * names the host that sent it (per-host credentials can bind it), and the owner takes reports only
 * from the host that holds the session.
 */
export const UpMessage = z.discriminatedUnion('kind', [
  /** A host took the spawn (seed 004 acknowledgment) and runs the session. */
  z.strictObject({ kind: z.literal('started'), host: HostId, restored: z.boolean() }),
  /** What the session sent its parent: an update, or a permission request. */
  z.strictObject({
    kind: z.literal('event'),
    event: z.discriminatedUnion('type', [
      z.strictObject({ type: z.literal('SUBTASK_UPDATE'), update: TaskUpdate }),
      z.strictObject({ type: z.literal('PERMISSION_REQUEST'), request: PermissionRequest }),
    ]),
  }),
  /** Its result (its final state's output). */
  z.strictObject({ kind: z.literal('done'), output: SubTaskResult }),
  z.strictObject({ kind: z.literal('error'), error: z.string().max(100_000) }),
]);
export type UpMessage = z.infer<typeof UpMessage>;

/**
 * From the owner to a remote session (`a2a.<ns>.down.<runId>.<sessionId>`): what a parent sends a
 * child, with an id so that a replay is recognised and dropped.
 */
export const DownMessage = z.strictObject({
  id: z.string().min(1).max(300),
  event: SessionCommand,
});
export type DownMessage = z.infer<typeof DownMessage>;

/** A timer of a checkpointed actor tree: its source and target actor paths and when it fires. */
export const SavedTimer = z.object({
  source: z.string(),
  target: z.string(),
  event: z.object({ type: z.string() }).loose(),
  id: z.string(),
  /** When it fires (clock time). */
  dueAt: z.number(),
});
export type SavedTimer = z.infer<typeof SavedTimer>;

/** An actor tree's persisted snapshot and its pending timers (`checkpoint.json`, the snapshots bucket). */
export const Checkpoint = z.object({
  version: z.literal(1),
  savedAt: z.number(),
  snapshot: z.object({ status: z.enum(['active', 'done', 'error', 'stopped']) }).loose(),
  timers: z.array(SavedTimer),
});
export type Checkpoint = z.infer<typeof Checkpoint>;

/** A run paused or resumed (`a2a.<ns>.runs.<runId>.pause`, and the `pauses` bucket under its run id). */
export const RunPause = z.strictObject({
  runId: RunId,
  paused: z.boolean(),
  by: z.string().min(1).max(200),
  at: z.number(),
});
export type RunPause = z.infer<typeof RunPause>;

/**
 * A slot of the `boxes` bucket (`slot.<n>`): the run that reads box `rs<n>` now, or null when the
 * box is free for the next run (actors/distribution/runBoxes.ts).
 */
export const RunBoxSlot = z.strictObject({
  runId: RunId.nullable(),
  at: z.number(),
});
export type RunBoxSlot = z.infer<typeof RunBoxSlot>;

/** What the snapshots bucket holds for a session that runs (or ran) on a host, under its wire key. */
export const SessionRecord = z.object({
  spec: SessionSpec,
  host: HostId,
  /** `released`: its host drained and handed it back; `finished`: its result went to its owner. */
  state: z.enum(['running', 'released', 'finished']),
  checkpoint: Checkpoint.nullable(),
  at: z.number(),
  /** The trace headers of its spawn (its span, in its owner's process): a host that takes it over continues the trace. */
  trace: z.record(z.string(), z.string()).optional(),
  /** Where its reports go (its spawn's `owner`): for a host that forwards or reports for it. */
  owner: z.object({ box: z.string(), root: z.string().optional() }).optional(),
});
export type SessionRecord = z.infer<typeof SessionRecord>;

/** A host's liveness and load (`a2a.<ns>.hosts.<hostId>.heartbeat`), also its registration. */
export const HostHeartbeat = z.object({
  hostId: HostId,
  agents: z.array(z.string()),
  concurrency: z.number().int().min(1),
  running: z.number().int().min(0),
  /** The sessions it runs (wire ids), claims included as soon as they are made. */
  sessions: z.array(z.string()),
  /** Sessions it handed back while draining, for another host to take over. */
  released: z.array(z.string()).optional(),
  startedAt: z.number(),
  at: z.number(),
  /** How often it beats: a host silent for 3 intervals is taken as dead. */
  intervalMs: z.number().int().positive().optional(),
  status: z.enum(['ready', 'draining']),
  /** Records of the snapshots bucket this host found invalid and skipped (key and why), at most 20. */
  invalidRecords: z.array(z.object({ key: z.string(), problem: z.string() })).optional(),
  /** Its process's memory (bytes), for monitors. */
  memory: z.object({ rss: z.number(), heapUsed: z.number() }).optional(),
});
export type HostHeartbeat = z.infer<typeof HostHeartbeat>;

// ---------------------------------------------------------------------------------------------
// A run's control subject: the studio (or any operator) steering a run that runs elsewhere

/**
 * Who asks on a run's control subject `a2a.<ns>.control.<runId>.<user>`: its last token, a NATS
 * user's name. The server lets each studio user publish under its own name only (`a2a nats users
 * --studio <name>`), so the run's process takes it from the subject, not from the payload.
 */
export const ControlUser = z.string().min(1).max(128).regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, "_" and "-" (a NATS subject token)');

/**
 * A request on a run's control subject: the changes a run's control directory takes
 * (`ControlRequest`: answer, approve_all, pause, unpause, retry, redirect, reassign, reinitialize,
 * resume, switch_model), the emergency stop, and what the studio reads of a run it has no files
 * of (its status, its log, its artifacts), which change nothing.
 */
export const RunControlMessage = z.discriminatedUnion('command', [
  ...ControlRequest.options,
  /** `a2a stop`: every worker and sub-task is cancelled, each still reports `cancelled`. */
  z.strictObject({ command: z.literal('stop'), by: z.string().trim().min(1), reason: z.string().max(1_000).optional() }),
  /** The run's record and its live status (tasks, inbox, pending items, workflow); read only. */
  z.strictObject({ command: z.literal('status') }),
  /** The run's log from index `after + 1` (-1: from its start), as much as one reply holds; read only. */
  z.strictObject({ command: z.literal('events'), after: z.number().int().min(-1) }),
  /** The run's artifacts with their versions and summaries; read only. */
  z.strictObject({ command: z.literal('artifacts') }),
]);
export type RunControlMessage = z.infer<typeof RunControlMessage>;

/** The reply to a change or a stop: what was done, or why nothing was (the same as the control directory's). */
export const ControlReplyMessage = z.union([z.strictObject({ ok: z.literal(true), message: z.string() }), z.strictObject({ ok: z.literal(false), error: z.string() })]);
export type ControlReplyMessage = z.infer<typeof ControlReplyMessage>;

/**
 * The reply to `status`: the run's record (as `run.json` holds it) and its status (as
 * `status.json` holds it, taken now); both parsed further by their readers, the items waiting for
 * a person here.
 */
export const RunStatusReply = z.strictObject({
  ok: z.literal(true),
  record: z.looseObject({ runId: z.string(), status: z.string(), startedAt: z.number(), planId: z.string() }),
  status: z.looseObject({ runId: z.string(), state: z.string(), pending: z.array(HumanItem), tasks: z.array(z.unknown()) }).nullable(),
});
export type RunStatusReply = z.infer<typeof RunStatusReply>;

/** The reply to `events`: the log's events from index `from`, and whether more were there than one reply holds. */
export const RunEventsReply = z.strictObject({
  ok: z.literal(true),
  from: z.number().int().min(0),
  /** Each parsed by the reader with `RunEvent` (one it cannot read is counted, not passed on). */
  events: z.array(z.unknown()),
  more: z.boolean(),
});
export type RunEventsReply = z.infer<typeof RunEventsReply>;

/** The reply to `artifacts`: each parsed by the reader with `ArtifactMeta` (machines/protocol/workflow.ts). */
export const RunArtifactsReply = z.strictObject({ ok: z.literal(true), artifacts: z.array(z.unknown()) });
