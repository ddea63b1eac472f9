/**
 * File coordination between sibling sub-tasks sharing a worktree: declared `targetFiles` are held
 * while a sub-task runs; a sibling declaring the same file waits, and nothing is overwritten.
 * Results carry the diff stats of the edits their tools made.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { complete, harness } from '../helpers.js';

const write = (content: string, delayMs?: number) => ({ ...(delayMs ? { delayMs } : {}), toolCalls: [{ name: 'write_file', arguments: { path: 'src/a.ts', content } }] });

describe('targetFiles', () => {
  it('a sibling declaring a held file waits until it is released; each write lands in order', async () => {
    const h = harness({
      script: {
        rules: [
          {
            agent: 'agent',
            depth: 0,
            turns: [
              {
                toolCalls: [
                  {
                    name: 'a2a_spawn_parallel_subtasks',
                    arguments: {
                      subtasks: [
                        { agentType: '@coder', prompt: 'first writer', expectedOutput: 'x', targetFiles: ['src/a.ts'] },
                        { agentType: '@coder', prompt: 'second writer', expectedOutput: 'x', targetFiles: ['./src/a.ts'] },
                      ],
                    },
                  },
                ],
              },
              { text: 'waiting' },
            ],
            reactions: [{ when: 'All your sub-tasks have finished', turn: complete('both written') }],
          },
          { agent: 'coder', prompt: 'first', turns: [write('first\n', 500), complete('wrote first')] },
          { agent: 'coder', prompt: 'second', turns: [write('first\nsecond\n'), complete('wrote second')] },
        ],
      },
      io: true,
    });
    const run = h.standalone('two writers', '@agent');
    await h.until(() => run.result() !== null);
    expect(run.result()!.status).toBe('success');
    const queued = h.of('subtask.queued', 'session.2')[0]!;
    expect(queued.data.reason).toBe('waiting for files held by session.1 (./src/a.ts)');
    const firstDone = h.of('subtask.result', 'session.1')[0]!.seq;
    const secondStarted = h.of('session.state', 'session.2')[0]!.seq;
    expect(secondStarted).toBeGreaterThan(firstDone);
    expect(readFileSync(join(h.workspace, 'src/a.ts'), 'utf8')).toBe('first\nsecond\n');
    // each result carries the diff stats of its own edits (what the parent was told)
    const told = h.model.calls.filter((c) => c.sessionId === 'session').flatMap((c) => c.request.messages.map((m) => m.content)).join('\n');
    expect(told).toContain('Sub-task session.1 (@coder) completed (success):\nwrote first\n  Changed: 1 file(s), +1 −0 (src/a.ts)');
    expect(told).toContain('Sub-task session.2 (@coder) completed (success):\nwrote second\n  Changed: 1 file(s), +1 −0 (src/a.ts)');
  });
});
