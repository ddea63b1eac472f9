/**
 * One error class for the runtime. `code` is closed (protocol `ErrorCode`); `fault` says who must
 * act: the user (bad input or config), the model (an unusable reply) or the system.
 * Errors never cross an actor boundary by throwing: they become a tool error, a terminal result
 * or an error event.
 */
import type { ErrorCode } from '../machines/protocol.js';

export type Fault = 'user' | 'model' | 'system';

const FAULT: Record<ErrorCode, Fault> = {
  AGENT_SPAWN_FAILED: 'system',
  AGENT_TIMEOUT: 'system',
  AGENT_ERROR: 'system',
  VALIDATION_ERROR: 'user',
  RATE_LIMIT_EXCEEDED: 'user',
  INVALID_STATE_TRANSITION: 'user',
  CONFIGURATION_INVALID: 'user',
  WORKFLOW_PAUSED: 'system',
  WORKFLOW_STOPPED: 'system',
  UNKNOWN_AGENT_TYPE: 'user',
  DEPTH_LIMIT_EXCEEDED: 'user',
  SUBTASK_LIMIT_EXCEEDED: 'user',
  CYCLE_DETECTED: 'user',
  TOOL_NOT_ALLOWED: 'user',
  MODEL_MISBEHAVIOUR: 'model',
  NOT_FOUND: 'user',
  BUDGET_EXCEEDED: 'user',
  ARTIFACT_NOT_FOUND: 'user',
};

export class A2AError extends Error {
  override readonly name = 'A2AError';
  readonly code: ErrorCode;
  readonly fault: Fault;
  /** Where the problem is: a file, a field, a tool argument. */
  readonly where: string | undefined;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown; where?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.fault = FAULT[code];
    this.where = options.where;
  }

  toInfo(): { code: ErrorCode; message: string } {
    return { code: this.code, message: this.message };
  }
}

export function isA2AError(error: unknown, code?: ErrorCode): error is A2AError {
  return error instanceof A2AError && (code === undefined || error.code === code);
}

type Issues = ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string }>;

const issueLine = (i: Issues[number]) => `${i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '') || '(root)'}: ${i.message}`;

/** Formats zod issues as `path: message` lines, naming the source. */
export function describeIssues(issues: Issues): string {
  return issues.map((i) => `  - ${issueLine(i)}`).join('\n');
}

/** The same on one line (`a.b: message; c: message`), for a warning or a log line. */
export function inlineIssues(issues: Issues): string {
  return issues.map(issueLine).join('; ');
}
