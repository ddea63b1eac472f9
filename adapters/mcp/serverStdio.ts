/**
 * `a2a mcp` on stdio: what comes in on stdin is checked line by line before the SDK sees it. The
 * SDK's stdio transport skips a line that is not JSON without a word, and drops one that is not
 * JSON-RPC with no answer (its client then waits for its timeout): here each gets JSON-RPC's error
 * answer (-32700 parse error, -32600 invalid request, with the request's id when it has one) on
 * stdout, a line on stderr, and the server goes on with the next line.
 */
import { inlineIssues } from '../../actors/errors.js';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { parseJSONRPCMessage, STDIO_DEFAULT_MAX_BUFFER_SIZE } from '@modelcontextprotocol/server';
import { errorText } from '../../machines/errorText.js';

/** The request id of a line that parsed as JSON but not as JSON-RPC, when it has a usable one. */
function idOf(value: unknown): string | number | null {
  const id = typeof value === 'object' && value !== null ? (value as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null;
}

/** What is wrong with a JSON value as JSON-RPC, in one line (the SDK's schema, its first issues). */
function whyNotJsonRpc(error: unknown): string {
  const issues = (error as { issues?: Array<{ path: PropertyKey[]; message: string; errors?: Array<Array<{ path: PropertyKey[]; message: string }>> }> }).issues;
  if (!issues?.length) return errorText(error).slice(0, 200);
  // a union's issues: the first alternative's (a request) says it best
  const first = issues[0]!.errors?.[0] ?? issues;
  return inlineIssues(first.slice(0, 3));
}

/**
 * The lines of `input` that are JSON-RPC messages, as a stream for the SDK's transport; every other
 * line is answered on `output` and told to `notify`.
 */
export function jsonRpcLines(input: Readable, output: Writable, notify: (line: string) => void, maxLine = STDIO_DEFAULT_MAX_BUFFER_SIZE): Readable {
  const passed = new PassThrough();
  let buffer = '';
  let skipping = false;
  const answer = (id: string | number | null, code: number, message: string) => {
    output.write(`${JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } })}\n`);
    notify(`a2a mcp: refused a line on stdin: ${message}`);
  };
  const line = (text: string) => {
    if (!text.trim()) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      answer(null, -32700, `Parse error: the line is not JSON (${errorText(error).slice(0, 120)})`);
      return;
    }
    try {
      parseJSONRPCMessage(value);
    } catch (error) {
      answer(idOf(value), -32600, `Invalid Request: not a JSON-RPC 2.0 message: ${whyNotJsonRpc(error)}`);
      return;
    }
    passed.write(`${text}\n`);
  };
  input.setEncoding('utf8');
  input.on('data', (chunk: string) => {
    buffer += chunk;
    for (let at = buffer.indexOf('\n'); at !== -1; at = buffer.indexOf('\n')) {
      const text = buffer.slice(0, at).replace(/\r$/, '');
      buffer = buffer.slice(at + 1);
      if (skipping) skipping = false;
      else line(text);
    }
    if (buffer.length > maxLine) {
      // the rest of this line is dropped as it comes: said once, not held in memory
      if (!skipping) answer(null, -32600, `Invalid Request: a line over ${maxLine} bytes`);
      skipping = true;
      buffer = '';
    }
  });
  input.on('end', () => {
    if (!skipping) line(buffer);
    passed.end();
  });
  input.on('error', (error) => passed.destroy(error));
  return passed;
}
