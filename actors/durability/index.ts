/**
 * What survives a crash: checkpoints of the actor tree, the effect journal (what a step did
 * outside the tree, so that a resumed run neither repeats a side effect nor reports an executed
 * call as not run), and the audit trail of every A2A operation.
 *
 * audit.ts, checkpoint.ts, effects.ts
 */
export * from './audit.js';
export * from './checkpoint.js';
export * from './effects.js';
