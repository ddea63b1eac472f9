/**
 * People: what reaches a person and comes back. The permission matrix (auto_approve, ask_user,
 * auto_deny) and how a request bubbles up, the orchestrator's priority inbox (it survives
 * restarts), the human gate that asks and waits, and a run's pause.
 *
 * humanGate.ts, inbox.ts, pause.ts, permissions.ts
 */
export * from './humanGate.js';
export * from './inbox.js';
export * from './pause.js';
export * from './permissions.js';
