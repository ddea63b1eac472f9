/**
 * The seed 004 wire protocol ("Orchestrator Integration Specification for Coding Agent"): the
 * JSON envelope every message travels in, the payload of each message type, and the task
 * specification an orchestrator sends. Strict where a wrong value would mislead the runtime
 * (ids, enums, numbers in range), lenient on what the spec marks optional (absent, null, or extra
 * fields are accepted). `parseEnvelope` is the only way a message from an agent enters the
 * process: it returns the typed message, or a problem that names the field path at fault and what
 * is allowed there.
 *
 * Also here, because they are pure: the task JSON built from a session's spec, and the mapping
 * of an agent's `task_result` onto the runtime's `SubTaskResult`.
 */
import { z } from 'zod';
import type { SessionSpec, SubTaskResult } from './protocol/index.js';
import { errorText } from './errorText.js';

export const PROTOCOL_VERSION = '1.0';

/**
 * Why an agent's registration `version` is one this orchestrator does not speak, or null. The
 * spec keeps compatibility for 2 major versions: majors 0 and 1 are accepted; a later major, or
 * a version that is not `<major>[.<minor>[.<patch>]]`, is refused. No version: accepted.
 */
export function unsupportedVersion(version: string | null | undefined): string | null {
  if (version === null || version === undefined) return null;
  const match = /^v?(\d+)(\.\d+){0,2}([-+][0-9A-Za-z.-]+)?$/.exec(version.trim());
  const ours = Number(PROTOCOL_VERSION.split('.')[0]);
  if (!match) return `payload.version: "${version}" is not a version (expected <major>.<minor>.<patch>, e.g. "1.0.0")`;
  const major = Number(match[1]);
  if (major > ours || major < ours - 1) return `payload.version: major version ${major} ("${version}") is not supported: this orchestrator speaks protocol ${PROTOCOL_VERSION}, and accepts majors ${ours - 1} and ${ours}`;
  return null;
}

/** Agent ids become NATS subject tokens (`agent.<id>`): letters, digits, `_` and `-`. */
export const AgentId = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, "_" and "-" only (it is used as a subject token)');

const Id = z.string().min(1).max(256);
/** ISO 8601 (the spec's examples: `2024-01-01T00:00:00Z`); any form `Date` parses is accepted. */
const Timestamp = z.string().refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO 8601 date-time, e.g. "2024-01-01T00:00:00Z"');
const optionalText = z.string().nullish();
const strings = z.array(z.string()).nullish().transform((v) => v ?? []);
const Extra = z.record(z.string(), z.unknown());

export const MessageType = z.enum([
  'registration',
  'task',
  'acknowledgment',
  'progress',
  'query',
  'response',
  'task_result',
  'heartbeat',
  'status_request',
  'status_response',
  'cancel',
  'error',
  'collaboration_request',
]);
export type MessageType = z.infer<typeof MessageType>;

export const TaskType = z.enum(['implementation', 'refactoring', 'bug_fix', 'feature', 'optimization', 'test_generation']);
export type TaskType = z.infer<typeof TaskType>;

// ---------------------------------------------------------------------------------------------
// The task specification

export const TaskContext = z.looseObject({
  repository_url: z.string().nullish(),
  branch: z.string().nullish(),
  base_branch: z.string().nullish(),
  relevant_files: z.array(z.string()).nullish(),
  dependencies: z.array(z.string()).nullish(),
  related_issues: z.array(z.string()).nullish(),
  environment_vars: z.record(z.string(), z.string()).nullish(),
  constraints: Extra.nullish(),
  metadata: Extra.nullish(),
});

export const TaskSpec = z.looseObject({
  task_id: Id,
  type: TaskType,
  /** 1 = critical … 5 = trivial. */
  priority: z.number().int().min(1).max(5),
  title: z.string().min(1),
  description: z.string(),
  requirements: z.array(z.string()),
  acceptance_criteria: z.array(z.string()),
  context: TaskContext.nullish(),
  deadline: Timestamp.nullish(),
  estimated_hours: z.number().min(0).nullish(),
  assigned_to: z.string().nullish(),
  parent_task_id: z.string().nullish(),
  subtask_ids: z.array(z.string()).nullish(),
});
export type TaskSpec = z.infer<typeof TaskSpec>;

// ---------------------------------------------------------------------------------------------
// Payloads

export const RegistrationPayload = z.looseObject({
  agent_id: AgentId,
  agent_type: z.string().min(1),
  capabilities: strings,
  max_concurrent_tasks: z.number().int().min(1).max(1000).default(1),
  version: z.string().nullish(),
});

export const AcknowledgmentPayload = z.looseObject({
  task_id: Id,
  status: z.enum(['accepted', 'rejected']),
  reason: optionalText,
});

export const ProgressPayload = z.looseObject({
  task_id: Id,
  progress: z.number().min(0).max(1),
  message: optionalText,
  timestamp: Timestamp.nullish(),
});

export const ClarificationQueryPayload = z.looseObject({
  query_type: z.literal('clarification'),
  task_id: Id,
  question: z.string().min(1),
  context: Extra.nullish(),
  suggested_options: z.array(z.string()).nullish(),
  urgency: z.string().nullish(),
});

export const CapabilitiesQueryPayload = z.looseObject({
  query_type: z.literal('capabilities'),
  required_capabilities: z.array(z.string()).nullish(),
  task_context: Extra.nullish(),
});

export const ClarificationResponsePayload = z.looseObject({
  query_type: z.literal('clarification'),
  task_id: Id,
  answer: z.string(),
  additional_context: optionalText,
});

export const CapabilitiesResponsePayload = z.looseObject({
  query_type: z.literal('capabilities'),
  supported_task_types: z.array(z.string()),
  max_concurrent_tasks: z.number().int().min(0).nullish(),
  current_load: z.number().int().min(0).nullish(),
  available_capacity: z.number().int().min(0).nullish(),
  supported_frameworks: z.array(z.string()).nullish(),
  confidence_score: z.number().min(0).max(1).nullish(),
});

export const TaskResultPayload = z.looseObject({
  task_id: Id,
  status: z.enum(['completed', 'failed', 'blocked']),
  result_type: z.enum(['success', 'error', 'partial']).nullish(),
  files_modified: strings,
  files_created: strings,
  files_deleted: strings,
  tests_added: strings,
  issues_created: strings,
  pull_request_url: optionalText,
  commit_hash: optionalText,
  error_message: optionalText,
  warnings: strings,
  execution_time: z.number().min(0).nullish(),
  metrics: Extra.nullish(),
});
export type TaskResultPayload = z.infer<typeof TaskResultPayload>;

export const HeartbeatPayload = z.looseObject({
  agent_id: AgentId,
  timestamp: Timestamp.nullish(),
  current_tasks: z.number().int().min(0).nullish(),
  available_capacity: z.number().int().min(0).nullish(),
  status: z.string().nullish(),
  uptime: z.number().min(0).nullish(),
});

export const StatusRequestPayload = z.looseObject({
  include_task_details: z.boolean().nullish(),
});

export const StatusResponsePayload = z.looseObject({
  agent_id: AgentId,
  status: z.enum(['active', 'idle', 'busy', 'error']),
  current_tasks: z
    .array(
      z.looseObject({
        task_id: Id,
        status: z.string(),
        progress: z.number().min(0).max(1).nullish(),
        started_at: Timestamp.nullish(),
      }),
    )
    .nullish()
    .transform((v) => v ?? []),
  completed_tasks: z.number().int().min(0).nullish(),
  failed_tasks: z.number().int().min(0).nullish(),
  available_capacity: z.number().int().min(0).nullish(),
  uptime: z.number().min(0).nullish(),
  last_error: optionalText,
});

export const CancelPayload = z.looseObject({
  task_id: Id,
  reason: optionalText,
});

export const ErrorPayload = z.looseObject({
  error_type: z.enum(['task_failure', 'system_error', 'resource_error']),
  task_id: z.string().nullish(),
  error_code: z.string().min(1),
  error_message: z.string(),
  stack_trace: optionalText,
  recoverable: z.boolean().nullish(),
  suggested_action: optionalText,
});

export const CollaborationRequestPayload = z.looseObject({
  collaboration_type: z.string().min(1),
  task_id: Id,
  target_agent_type: z.string().nullish(),
  context: Extra.nullish(),
});

// ---------------------------------------------------------------------------------------------
// The envelope

const EnvelopeFields = {
  message_id: Id,
  sender_id: AgentId,
  recipient_id: z.string().min(1),
  timestamp: Timestamp,
  correlation_id: z.string().nullish(),
  reply_to: z.string().nullish(),
};

/** The envelope alone (payload unchecked): the first step of parsing. */
export const EnvelopeBase = z.looseObject({ ...EnvelopeFields, message_type: MessageType, payload: Extra });

const envelope = <T extends MessageType, P extends z.ZodType>(type: T, payload: P) =>
  z.looseObject({ ...EnvelopeFields, message_type: z.literal(type), payload });

export const Seed004Message = z.discriminatedUnion('message_type', [
  envelope('registration', RegistrationPayload),
  envelope('task', TaskSpec),
  envelope('acknowledgment', AcknowledgmentPayload),
  envelope('progress', ProgressPayload),
  envelope('query', z.discriminatedUnion('query_type', [ClarificationQueryPayload, CapabilitiesQueryPayload])),
  envelope('response', z.discriminatedUnion('query_type', [ClarificationResponsePayload, CapabilitiesResponsePayload])),
  envelope('task_result', TaskResultPayload),
  envelope('heartbeat', HeartbeatPayload),
  envelope('status_request', StatusRequestPayload),
  envelope('status_response', StatusResponsePayload),
  envelope('cancel', CancelPayload),
  envelope('error', ErrorPayload),
  envelope('collaboration_request', CollaborationRequestPayload),
]);
export type Seed004Message = z.infer<typeof Seed004Message>;
export type MessageOf<T extends MessageType> = Extract<Seed004Message, { message_type: T }>;
export type PayloadOf<T extends MessageType> = MessageOf<T>['payload'];

/** The payload schema of each message type (query and response: by `query_type`). */
function payloadSchema(type: MessageType, payload: Record<string, unknown>): { schema: z.ZodType; problem?: string } {
  const byQuery = (clarification: z.ZodType, capabilities: z.ZodType) => {
    const q = payload.query_type;
    if (q === 'clarification') return { schema: clarification };
    if (q === 'capabilities') return { schema: capabilities };
    return { schema: clarification, problem: `payload.query_type: expected one of "clarification", "capabilities" (got ${describe(q)})` };
  };
  switch (type) {
    case 'registration':
      return { schema: RegistrationPayload };
    case 'task':
      return { schema: TaskSpec };
    case 'acknowledgment':
      return { schema: AcknowledgmentPayload };
    case 'progress':
      return { schema: ProgressPayload };
    case 'query':
      return byQuery(ClarificationQueryPayload, CapabilitiesQueryPayload);
    case 'response':
      return byQuery(ClarificationResponsePayload, CapabilitiesResponsePayload);
    case 'task_result':
      return { schema: TaskResultPayload };
    case 'heartbeat':
      return { schema: HeartbeatPayload };
    case 'status_request':
      return { schema: StatusRequestPayload };
    case 'status_response':
      return { schema: StatusResponsePayload };
    case 'cancel':
      return { schema: CancelPayload };
    case 'error':
      return { schema: ErrorPayload };
    case 'collaboration_request':
      return { schema: CollaborationRequestPayload };
  }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  try {
    const text = JSON.stringify(value);
    return text.length > 60 ? `${text.slice(0, 57)}...` : text;
  } catch {
    return typeof value;
  }
}

function valueAt(data: unknown, path: PropertyKey[]): unknown {
  let v: unknown = data;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}

/** One line per issue of a wire message, with what it held: `payload.status: expected one of "accepted", "rejected" (got "maybe")` (actors/errors.ts describeIssues is the general one). */
function describeWireIssues(issues: z.core.$ZodIssue[], data: unknown, prefix: PropertyKey[] = []): string {
  return issues
    .map((issue) => {
      const path = [...prefix, ...issue.path];
      const where = path.length ? path.map(String).join('.') : '(message)';
      const got = valueAt(data, issue.path);
      let what: string;
      if (issue.code === 'invalid_value') {
        what = `expected ${issue.values.length === 1 ? JSON.stringify(issue.values[0]) : `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`}`;
      } else if (issue.code === 'invalid_type' && got === undefined) {
        what = `is required (expected ${issue.expected})`;
      } else {
        what = issue.message;
      }
      return got === undefined ? `${where}: ${what}` : `${where}: ${what} (got ${describe(got)})`;
    })
    .join('; ');
}

export type ParseResult =
  | { ok: true; message: Seed004Message }
  | {
      ok: false;
      problem: string;
      /** What could be read of the bad message, so that the error reply reaches its sender. */
      senderId: string | null;
      messageId: string | null;
      messageType: string | null;
    };

/**
 * Parses a message as it came off the wire: a JSON text or an already decoded value. On failure
 * the problem names the field and the allowed values, and the sender and message id are
 * recovered when they can be (even from text that is not JSON), for the error reply.
 */
export function parseEnvelope(data: unknown): ParseResult {
  let value = data;
  if (data instanceof Uint8Array) value = new TextDecoder().decode(data);
  if (typeof value === 'string') {
    const text = value;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const grab = (field: string) => new RegExp(`"${field}"\\s*:\\s*"([^"\\\\]{1,256})"`).exec(text)?.[1] ?? null;
      const sender = grab('sender_id');
      return {
        ok: false,
        problem: `the message is not valid JSON (${errorText(error)}): send one JSON object per message`,
        senderId: sender && AgentId.safeParse(sender).success ? sender : null,
        messageId: grab('message_id'),
        messageType: grab('message_type'),
      };
    }
  }
  const fail = (problem: string) => {
    const record = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
    const sender = AgentId.safeParse(record.sender_id);
    const id = Id.safeParse(record.message_id);
    return {
      ok: false as const,
      problem,
      senderId: sender.success ? sender.data : null,
      messageId: id.success ? id.data : null,
      messageType: typeof record.message_type === 'string' ? record.message_type : null,
    };
  };
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return fail(`(message): expected a JSON object with message_id, sender_id, recipient_id, message_type, payload and timestamp (got ${describe(value)})`);
  }
  const base = EnvelopeBase.safeParse(value);
  if (!base.success) return fail(describeWireIssues(base.error.issues, value));
  const { schema, problem } = payloadSchema(base.data.message_type, base.data.payload);
  if (problem) return fail(problem);
  const payload = schema.safeParse(base.data.payload);
  if (!payload.success) return fail(describeWireIssues(payload.error.issues, base.data.payload, ['payload']));
  return { ok: true, message: { ...base.data, payload: payload.data } as Seed004Message };
}

// ---------------------------------------------------------------------------------------------
// Building messages

/** An envelope (the caller gives the id and the time, so that this stays pure). */
export function envelopeOf<T extends MessageType>(
  type: T,
  fields: { messageId: string; senderId: string; recipientId: string; at: number; correlationId?: string | null; replyTo?: string | null },
  payload: PayloadOf<T>,
): MessageOf<T> {
  return {
    message_id: fields.messageId,
    sender_id: fields.senderId,
    recipient_id: fields.recipientId,
    message_type: type,
    payload,
    timestamp: new Date(fields.at).toISOString(),
    correlation_id: fields.correlationId ?? null,
    reply_to: fields.replyTo ?? null,
  } as MessageOf<T>;
}

/** A session's `taskType` (or agent) as one of the spec's task types. */
export function taskTypeOf(spec: Pick<SessionSpec, 'taskType'>, mapping: Record<string, TaskType> = {}): TaskType {
  const raw = spec.taskType?.toLowerCase();
  if (!raw) return 'implementation';
  if (mapping[raw]) return mapping[raw];
  const known = TaskType.safeParse(raw);
  if (known.success) return known.data;
  if (/test/.test(raw)) return 'test_generation';
  if (/refactor/.test(raw)) return 'refactoring';
  if (/bug|fix/.test(raw)) return 'bug_fix';
  if (/perf|optimi/.test(raw)) return 'optimization';
  if (/feature/.test(raw)) return 'feature';
  return 'implementation';
}

const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.replace(/^\s*[-*\d.)]+\s+/, '').trim())
    .filter(Boolean);

/** The spec's task JSON for a session: `task_id` is the session id. */
export function taskFromSpec(spec: SessionSpec, options: { agentId: string; type: TaskType; deadlineAt: number | null; priority?: number }): TaskSpec {
  const firstLine = spec.prompt.split(/\r?\n/).find((l) => l.trim()) ?? spec.id;
  const title = firstLine.trim().length > 80 ? `${firstLine.trim().slice(0, 77)}...` : firstLine.trim();
  const expected = lines(spec.expectedOutput);
  return {
    // session ids repeat from run to run: the task id is qualified by the run
    task_id: `${spec.correlation.runId}.${spec.id}`,
    type: options.type,
    priority: options.priority ?? 3,
    title: title || spec.id,
    description: spec.prompt,
    requirements: expected.length ? expected : [`Complete the task described: ${title || spec.id}`],
    acceptance_criteria: expected.length ? expected.map((e) => `Delivered: ${e}`) : ['The task is done as described'],
    context: {
      relevant_files: spec.targetFiles ?? [],
      dependencies: [],
      metadata: {
        runId: spec.correlation.runId,
        planId: spec.correlation.planId,
        planTaskId: spec.correlation.taskId,
        workerId: spec.correlation.workerId,
        owner: spec.owner.ownerId,
        ownerType: spec.owner.ownerType,
        depth: spec.depth,
        agent: spec.agent.raw,
        worktreePath: spec.correlation.worktreePath,
        ...(spec.taskType ? { taskType: spec.taskType } : {}),
      },
    },
    ...(options.deadlineAt !== null ? { deadline: new Date(options.deadlineAt).toISOString() } : {}),
    assigned_to: options.agentId,
    ...(spec.role === 'subtask' ? { parent_task_id: `${spec.correlation.runId}.${spec.owner.ownerId}` } : {}),
    subtask_ids: [],
  };
}

/** An agent's `task_result` as the runtime's result, with a readable summary as its output. */
export function resultFromTaskResult(taskId: string, agentId: string, p: TaskResultPayload): SubTaskResult {
  const status: SubTaskResult['status'] =
    p.status === 'completed'
      ? p.result_type === 'partial'
        ? 'partial'
        : p.result_type === 'error'
          ? 'failed'
          : 'success'
      : p.status === 'failed'
        ? 'failed'
        : p.files_modified.length + p.files_created.length > 0
          ? 'partial'
          : 'failed';
  const summary: string[] = [`${agentId}: task ${p.status}${p.result_type ? ` (${p.result_type})` : ''}`];
  const list = (label: string, items: string[]) => {
    if (items.length) summary.push(`${label}: ${items.join(', ')}`);
  };
  list('files modified', p.files_modified);
  list('files created', p.files_created);
  list('files deleted', p.files_deleted);
  list('tests added', p.tests_added);
  list('issues created', p.issues_created);
  if (p.pull_request_url) summary.push(`pull request: ${p.pull_request_url}`);
  if (p.commit_hash) summary.push(`commit: ${p.commit_hash}`);
  if (p.error_message) summary.push(`error: ${p.error_message}`);
  list('warnings', p.warnings);
  if (p.execution_time !== null && p.execution_time !== undefined) summary.push(`execution time: ${p.execution_time} s`);
  const error = status === 'success' ? undefined : (p.error_message ?? (p.status === 'blocked' ? 'the agent is blocked' : `the agent reported ${p.status}`));
  return {
    taskId,
    status,
    output: summary.join('\n'),
    ...(error ? { error } : {}),
    metadata: {
      agentId,
      seed004: {
        status: p.status,
        result_type: p.result_type ?? null,
        files_modified: p.files_modified,
        files_created: p.files_created,
        files_deleted: p.files_deleted,
        tests_added: p.tests_added,
        issues_created: p.issues_created,
        pull_request_url: p.pull_request_url ?? null,
        commit_hash: p.commit_hash ?? null,
        warnings: p.warnings,
        execution_time: p.execution_time ?? null,
        metrics: p.metrics ?? null,
      },
    },
  };
}
