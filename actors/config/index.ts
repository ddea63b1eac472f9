/**
 * Configuration: the run's settings in layers, the portable roles-and-profiles document, the agent
 * registry (Markdown files), provider profiles and role assignments, and the secrets a process
 * knows (never printed).
 *
 * config.ts, configDocument.ts, profiles.ts, registry.ts, secrets.ts
 */
export * from './config.js';
export * from './configDocument.js';
export * from './profiles.js';
export * from './registry.js';
export * from './secrets.js';
