/**
 * The studio (adapters/studio): what its page sends over HTTP.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// The studio (adapters/studio): what its page sends over HTTP

/** Which events a page's stream starts after (`?after=`, or the `Last-Event-ID` header): an index in the run's log. */
export const StudioStreamQuery = z.strictObject({
  after: z.coerce.number().int().min(-1).optional(),
  /** 1: up to 1,000 events a message (`event: runs`, data `{"first": <index>, "events": [...]}`, id the last index), for a page that opens a large run; else one event a message (`event: run`). */
  batch: z.enum(['0', '1']).optional(),
  token: z.string().optional(),
});

/** The audit trail's filters and format (`/api/runs/<id>/audit?…`). */
export const StudioAuditQuery = z.strictObject({
  format: z.enum(['json', 'md']).optional(),
  /** A session, worker, task or decider id, or who acted (`by`). */
  actor: z.string().max(200).optional(),
  /** An event type (`permission.decided`) or a permission action (`command_execution`). */
  action: z.string().max(200).optional(),
  decision: z.enum(['approved', 'denied']).optional(),
  token: z.string().optional(),
});

/** The page's emergency stop (`a2a stop`); its other changes are control requests, `by` set by the server. */
export const StudioStop = z.strictObject({ command: z.literal('stop') });
