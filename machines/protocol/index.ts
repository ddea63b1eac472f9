/**
 * The protocol: every message and event that crosses an actor boundary, as zod schemas, one
 * module per boundary. TypeScript types come from `z.infer`; nothing here is hand-duplicated
 * elsewhere. Messages entering a process (files, CLI, NATS, HTTP) are parsed with these schemas
 * first. Each module imports only those above it in this list:
 *
 *   common       data of any shape from outside, error codes, agent types, identity
 *   subtasks     what a session is asked to do, updates to its parent, the orchestrator's queue
 *   permissions  requests that bubble up, decisions, the policy and the human channel
 *   model        the model port's messages
 *   plans        the plan file `a2a run` reads
 *   events       run events (the run's log, `--json`, the monitors)
 *   limits       limits and timings that travel with every session
 *   actors       between the actors of one system (the machines' event unions)
 *   studio       what the studio's page sends over HTTP
 *   nats         between actor systems: records, heartbeats, mail, spawns
 *   workflow     seed 003: the organiser's workflow and its artifacts
 *   a2a          the Agent2Agent protocol's served tasks, remote agents
 */

export * from './common.js';
export * from './subtasks.js';
export * from './permissions.js';
export * from './model.js';
export * from './plans.js';
export * from './events.js';
export * from './limits.js';
export * from './actors.js';
export * from './studio.js';
export * from './nats.js';
export * from './workflow.js';
export * from './a2a.js';
