/**
 * The organiser (seed 003): the SDLC workflow's effects, the artifact store and what it does to
 * a content, and the workflow's roles resolved against the registry and the profiles.
 *
 * artifactContent.ts, artifacts.ts, organiser.ts, workflowRoles.ts
 */
export * from './artifactContent.js';
export * from './artifacts.js';
export * from './organiser.js';
export * from './workflowRoles.js';
