/**
 * The Agent2Agent protocol (adapters/a2aProtocol/): what `a2a serve --a2a` keeps of a task, and how an agent file names a remote A2A agent.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { JsonObject } from './common.js';

// ---------------------------------------------------------------------------------------------
// The Agent2Agent protocol (adapters/a2aProtocol/): what `a2a serve --a2a` keeps of a task, and
// how an agent file names a remote A2A agent
// ---------------------------------------------------------------------------------------------

/** An A2A task id or context id as this server makes them and accepts them from clients. */
export const A2AProtocolId = z.string().regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/, 'letters, digits, ".", "_" and "-" (not first), at most 128');

/** An A2A task's state as a2a writes it in its events (`input-required`; `unknown`: not known yet). */
export const A2ATaskState = z.enum(['submitted', 'working', 'input-required', 'auth-required', 'completed', 'failed', 'canceled', 'rejected', 'unknown']);
export type A2ATaskState = z.infer<typeof A2ATaskState>;

/** One A2A event of a served task, numbered from 1 (its `seq` is the SSE event id a client resumes from). */
export const A2AServedEvent = z.strictObject({
  seq: z.number().int().min(1),
  at: z.number(),
  /** The protocol's StreamResponse in its v1.0 JSON form. */
  event: JsonObject,
});
export type A2AServedEvent = z.infer<typeof A2AServedEvent>;

/** What the server keeps of a task it serves (a file, or a KV entry with `--nats`). */
export const A2AServedTask = z.strictObject({
  version: z.literal(1),
  /** The protocol's Task in its v1.0 JSON form. */
  task: JsonObject,
  /** The run carrying the task (null: the task failed before one started). */
  runId: z.string().nullable(),
  workspace: z.string(),
  agent: z.string(),
  /** Run events already turned into A2A events (their ids), so that a resumed run does not repeat them. */
  facts: z.array(z.string()),
  /** The person's item the task waits for (INPUT_REQUIRED / AUTH_REQUIRED). */
  waitingFor: z.object({ id: z.string(), kind: z.enum(['permission', 'question']), title: z.string().optional() }).nullable(),
  /** The last event folded into `task`: the events after it (in the task's log) are folded in when it is read. */
  seq: z.number().int().min(0),
  updatedAt: z.number(),
  /** The client whose credential created the task (a2a serve's named tokens): no other client sees or changes it. */
  owner: z.string().optional(),
});
export type A2AServedTask = z.infer<typeof A2AServedTask>;

/** Where a bearer token for a remote A2A agent comes from: an environment variable or the secrets file. */
export const RemoteAgentToken = z.union([
  z.strictObject({ env: z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'an environment variable name (A-Z, 0-9, _)') }),
  z.strictObject({ secret: z.string().min(1).max(128) }),
]);

/** An agent file's `remote:`: the agent is a remote A2A agent, reached at its card's URL. */
export const RemoteAgentConfig = z.strictObject({
  /** The agent card's URL, or the server's base URL (the card is then at /.well-known/agent-card.json). */
  url: z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL' }),
  token: RemoteAgentToken.optional(),
  /** How long one remote task may take before it is cancelled and reported failed (default 10 minutes). */
  timeoutMs: z.number().int().min(100).max(86_400_000).optional(),
  /** How long the server may stay silent while the task runs before the stream counts as broken (default 2 minutes). */
  silenceMs: z.number().int().min(100).max(3_600_000).optional(),
});
export type RemoteAgentConfig = z.infer<typeof RemoteAgentConfig>;
