/**
 * An agent session and its children: the agent loop the session chart runs (model step, tool step,
 * its prompts and the summary that fits a long conversation in the window), the supervisor of a
 * session's sub-tasks and the state of that family, the spawn limits, and the file locks of
 * sub-tasks that share a worktree. The chart itself is machines/session.ts.
 *
 * agentLoop.ts, family.ts, fileLocks.ts, limits.ts, prompts.ts, summarize.ts, supervisor.ts
 */
export * from './agentLoop.js';
export * from './family.js';
export * from './fileLocks.js';
export * from './limits.js';
export * from './prompts.js';
export * from './summarize.js';
export * from './supervisor.js';
