/** What the provider tests share: a fake key and a conversation with every kind of message. */
import { A2AError } from '../../../actors/errors.js';
import type { ModelRequest } from '../../../machines/ports.js';

/** Never a real key: the tests check that it appears in no error. */
export const KEY = 'sk-test-DO-NOT-LEAK-0123456789abcdef';

export const readFileTool = {
  name: 'read_file',
  description: 'Read a file of the worktree',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

/**
 * Task, an assistant turn with text and two tool calls, their results (one failed), a synthetic
 * message injected after them, and an assistant turn with a tool call and no text.
 */
export const conversation: ModelRequest = {
  system: 'You are @coder, a worker deployed by the orchestrator for plan task "t1".',
  messages: [
    { role: 'user', content: 'Write the parser' },
    {
      role: 'assistant',
      content: 'Reading both files first.',
      toolCalls: [
        { id: 'call_1', name: 'read_file', arguments: { path: 'a.ts' } },
        { id: 'call_2', name: 'read_file', arguments: { path: 'b.ts' } },
      ],
    },
    { role: 'tool', toolCallId: 'call_1', name: 'read_file', content: 'export const a = 1;' },
    { role: 'tool', toolCallId: 'call_2', name: 'read_file', content: 'ENOENT: b.ts', isError: true },
    { role: 'user', content: 'Message from parent: b.ts is optional', synthetic: true },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_3', name: 'read_file', arguments: { path: 'c.ts' } }] },
    { role: 'tool', toolCallId: 'call_3', name: 'read_file', content: 'export const c = 3;' },
  ],
  tools: [readFileTool],
  agentType: { raw: '@coder', backend: 'default', agentName: 'coder' },
  sessionId: 'w-1',
  depth: 0,
};

/** The error a promise rejected with (fails the test when it resolved). */
export async function rejection(promise: Promise<unknown>): Promise<A2AError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof A2AError) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

export const signal = () => new AbortController().signal;
