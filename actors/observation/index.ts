/**
 * Observation: run events (the bus and its facts), events projected from XState's inspection
 * stream, costs and budgets, OpenTelemetry traces that mirror the actor tree, and the run's live
 * tree and status rebuilt from events alone.
 *
 * a2aView.ts, cost.ts, events.ts, observe.ts, runStatus.ts, runView.ts, tracing.ts (and spans.ts,
 * which tracing.ts loads when tracing is turned on: not exported here, so that importing this
 * loads nothing of it)
 */
export * from './a2aView.js';
export * from './cost.js';
export * from './events.js';
export * from './observe.js';
export * from './runStatus.js';
export * from './runView.js';
export * from './tracing.js';
