/**
 * `a2a mcp` against the SDKs' clients of both generations, over both transports: the v2 client on
 * the 2026-07-28 revision (no `initialize`), the v2 client on the 2025 handshake, and the v1
 * client. Each lists the tools with their annotations, starts a run that asks a person, answers
 * it, and waits for the result with progress notifications.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeAll, connect, reach, textOf, TOOLS, waitFor, workspace, type Generation } from './fixtures/serverKit.js';
import { a2aBundle } from '../nats/cluster.js';

// the CLI's bundle (stdio servers are the CLI started as a process) is built before the tests, not in the first
beforeAll(() => void a2aBundle());
afterEach(closeAll);

const cases: Array<[Generation, 'stdio' | 'http', string]> = [
  ['v2-modern', 'stdio', '2026-07-28'],
  ['v2-modern', 'http', '2026-07-28'],
  ['v2-legacy', 'stdio', '2025'],
  ['v2-legacy', 'http', '2025'],
  ['v1', 'stdio', '2025'],
  ['v1', 'http', '2025'],
];

describe('a2a mcp with the SDKs\' clients', () => {
  it.each(cases)('should serve the %s client over %s (%s): tools, a run that asks, the answer, progress and the result', async (generation, over, revision) => {
    const dir = workspace();
    const client = await connect(generation, await reach(over, dir));
    expect(client.era).toBe(revision === '2026-07-28' ? 'modern' : 'legacy');

    const tools = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
    const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations ?? {}]));
    for (const name of ['run_status', 'list_runs', 'get_result', 'artifacts']) expect(hints[name]).toMatchObject({ readOnlyHint: true });
    for (const name of ['stop_run', 'control', 'start_run']) expect(hints[name]).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(hints.answer).toMatchObject({ readOnlyHint: false, destructiveHint: false });

    const started = await client.call('start_run', { task: 'write the notes file', agent: '@coder' });
    expect(started.isError).toBeFalsy();
    const runId = String(started.structuredContent!.runId);
    await waitFor(async () => {
      const status = await client.call('run_status', { runId });
      return (status.structuredContent!.pending as unknown[]).length === 1 ? status : null;
    }, 'the permission to be pending');

    // the client waits on the run: progress arrives while it does, then the result
    const progress: Array<{ progress: number; message?: string }> = [];
    const waiting = client.call('get_result', { runId, waitSeconds: 8 }, (p) => progress.push(p));
    await waitFor(async () => (progress.length > 0 ? true : null), 'a progress notification');
    expect(progress[0]!.message).toMatch(new RegExp(`^run ${runId}: \\d+/\\d+ tasks ended · \\d+ model calls · \\$\\d+\\.\\d{4} · 1 waiting for an answer$`));
    expect(textOf(await client.call('answer', { runId, id: '1', approved: true }))).toMatch(/approved/);
    const result = await waiting;
    expect(textOf(result)).toContain(`run ${runId} completed`);
    expect(textOf(result)).toContain('NOTES.md written');
    expect(progress.length).toBeGreaterThan(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!.progress).toBeGreaterThan(progress[i - 1]!.progress);
    expect(progress.at(-1)!.message).not.toContain('waiting for an answer');
    expect(readFileSync(join(dir, 'NOTES.md'), 'utf8')).toBe('written through MCP\n');
  });
});
