/**
 * One error class for the runtime. `code` is closed (protocol `ErrorCode`); `fault` says who must
 * act: the user (bad input or config), the model (an unusable reply) or the system.
 * Errors never cross an actor boundary by throwing: they become a tool error, a terminal result
 * or an error event.
 */
import type { ErrorCode } from '../machines/protocol/index.js';

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
  CONTEXT_OVERFLOW: 'model',
};

export class A2AError extends Error {
  override readonly name = 'A2AError';
  readonly code: ErrorCode;
  readonly fault: Fault;
  /** Where the problem is: a file, a field, a tool argument. */
  readonly where: string | undefined;
  /**
   * Tokens a provider billed for a reply that this error threw away (unusable, misbehaving): the
   * agent loop prices them all the same (set by the model adapters).
   */
  billed?: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number };

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

/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, d[i - 2]![j - 2]! + 1);
      d[i]![j] = best;
    }
  }
  return d[a.length]![b.length]!;
}

/** The candidate closest to `word` (case-insensitive), if it is close: a typo, not another word. */
export function nearest(word: string, candidates: Iterable<string>): string | null {
  const limit = Math.max(1, Math.min(3, Math.floor(word.length / 3)));
  let best: { candidate: string; distance: number } | null = null;
  for (const candidate of candidates) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance <= limit && (!best || distance < best.distance)) best = { candidate, distance };
  }
  return best?.candidate ?? null;
}

/**
 * Zod's unknown-key issues said plainly, with the nearest allowed key and the list of allowed
 * ones (`allowedAt` gives them for an issue's path; other issues pass through).
 */
export function explainUnknownKeys<I extends { path: ReadonlyArray<PropertyKey>; message: string; code?: string; keys?: readonly string[] }>(
  issues: ReadonlyArray<I>,
  allowedAt: (path: ReadonlyArray<PropertyKey>) => readonly string[] | undefined,
): Array<{ path: ReadonlyArray<PropertyKey>; message: string }> {
  return issues.map((issue) => {
    const allowed = issue.code === 'unrecognized_keys' ? allowedAt(issue.path) : undefined;
    if (!allowed || !issue.keys) return issue;
    const said = issue.keys.map((key) => {
      const near = nearest(key, allowed);
      return `unknown key "${key}"${near ? ` (did you mean "${near}"?)` : ''}`;
    });
    return { path: issue.path, message: `${said.join('; ')}; allowed: ${allowed.join(', ')}` };
  });
}
