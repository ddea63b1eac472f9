/**
 * The model port: what a session sends to a model and what comes back.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { JsonObject } from './common.js';

// ---------------------------------------------------------------------------------------------
// Model port messages

export const ToolCall = z.object({
  id: z.string(),
  name: z.string(),
  arguments: JsonObject,
  /**
   * The model's arguments could not be read (not valid JSON, not an object): the call is not run,
   * and its result is this error, so that the model can send it again (see ToolCatalog.run).
   */
  argumentsError: z.string().optional(),
});
export type ToolCall = z.infer<typeof ToolCall>;

export const ChatMessage = z.discriminatedUnion('role', [
  z.object({
    role: z.literal('user'),
    content: z.string(),
    /** Injected by the runtime (child results, inquiries, answers), not typed by a human. */
    synthetic: z.boolean().optional(),
  }),
  z.object({
    role: z.literal('assistant'),
    content: z.string(),
    toolCalls: z.array(ToolCall).optional(),
    /**
     * The model call that made it (session, step and the process that paid for it): a reply given
     * back from the effect journal after a restore keeps it, so that its `model.called` is told once.
     */
    replyId: z.string().optional(),
    /** The model that answered (its provider's name) and the profile it came from. */
    model: z.string().optional(),
    profile: z.string().optional(),
  }),
  z.object({
    role: z.literal('tool'),
    toolCallId: z.string(),
    name: z.string(),
    content: z.string(),
    isError: z.boolean().optional(),
    /** Its content was cut to fit the context window (the call itself was told when it ran). */
    clipped: z.boolean().optional(),
  }),
]);
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ToolSpec = z.object({
  name: z.string(),
  description: z.string(),
  /** JSON Schema of the arguments object. */
  parameters: z.record(z.string(), z.unknown()),
});
export type ToolSpec = z.infer<typeof ToolSpec>;

export const ModelReply = z.object({
  text: z.string(),
  toolCalls: z.array(ToolCall),
  /** What the provider billed: inputTokens counts every input token, of which cacheRead/WriteTokens came from or went to its prompt cache. */
  usage: z.object({
    inputTokens: z.number().int().min(0),
    outputTokens: z.number().int().min(0),
    cacheReadTokens: z.number().int().min(0).optional(),
    cacheWriteTokens: z.number().int().min(0).optional(),
  }),
  stopReason: z.enum(['end_turn', 'tool_use', 'max_tokens']).optional(),
});
export type ModelReply = z.infer<typeof ModelReply>;
