/**
 * The span id a session's first span gets, derived from the run and the session (no I/O, no
 * Node module), so that the studio's page can link a session to its spans in the tracing backend
 * without asking anyone. The run's trace id is in its log (run.started's traceId).
 */

/** The span id of a session's first span (16 hex digits); `orchestrator` for a run's root. */
export function spanIdOf(runId: string, sessionId: string): string {
  // two 32-bit FNV-1a lanes with different offsets: spread well and cheap (a SHA-256 per session
  // was a fifth of tracing's cost on a 1,000-sub-task fan-out); the run's trace id takes SHA-256
  const text = `${runId}\0${sessionId}`;
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x9e3779b9;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 15);
  }
  a = Math.imul(a ^ (a >>> 16), 0x85ebca6b) >>> 0;
  b = Math.imul(b ^ (b >>> 13), 0xc2b2ae35) >>> 0;
  const id = a.toString(16).padStart(8, '0') + b.toString(16).padStart(8, '0');
  return id === '0000000000000000' ? '0000000000000001' : id;
}
