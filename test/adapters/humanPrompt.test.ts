import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseReply, TerminalPrompt } from '../../adapters/humanPrompt.js';
import type { HumanAnswer, HumanItem } from '../../machines/protocol/index.js';

const item = (id: string, kind: HumanItem['kind'] = 'permission'): HumanItem => ({
  id,
  kind,
  taskId: 'api',
  workerId: 'w-api',
  requesterId: 'st-2',
  title: kind === 'permission' ? 'branch_push: git push origin a2a/r/api' : 'Which database?',
  ...(kind === 'question' ? { question: 'Which database?' } : {}),
  askedAt: 0,
  timeoutMs: 60_000,
  onTimeout: { approved: false, text: 'denied by default' },
});

function terminal() {
  const input = new PassThrough();
  const output = new PassThrough();
  let shown = '';
  output.on('data', (d: Buffer) => (shown += d.toString()));
  const answers: Array<[string, HumanAnswer]> = [];
  const paused: string[] = [];
  const prompt = new TerminalPrompt(
    { input, output, pause: () => paused.push('pause'), resume: () => paused.push('resume') },
    (id, answer) => answers.push([id, answer]),
    'ann',
  );
  const tick = () => new Promise((r) => setImmediate(r));
  return { input, prompt, answers, paused, shown: () => shown, tick };
}

describe('terminal prompt', () => {
  it('asks one item at a time, re-asks on a reply it cannot read, and passes the answer on', async () => {
    const t = terminal();
    t.prompt.present(item('p1'));
    t.prompt.present(item('q1', 'question'));
    await t.tick();
    expect(t.shown()).toContain('st-2 (task api) asks permission: branch_push: git push origin a2a/r/api');
    expect(t.shown()).not.toContain('Which database?');
    t.input.write('maybe\n');
    await t.tick();
    expect(t.shown()).toContain('please type y or n');
    t.input.write('n not on a Friday\n');
    await t.tick();
    expect(t.answers[0]).toEqual(['p1', { approved: false, by: 'ann', reason: 'not on a Friday' }]);
    expect(t.shown()).toContain('w-api (task api) asks: Which database?');
    t.input.write('PostgreSQL 16\n');
    await t.tick();
    expect(t.answers[1]).toEqual(['q1', { text: 'PostgreSQL 16', by: 'ann' }]);
    expect(t.paused).toEqual(['pause', 'pause', 'resume']);
    t.prompt.close();
  });

  it('takes an item answered elsewhere off the prompt and moves on', async () => {
    const t = terminal();
    t.prompt.present(item('p1'));
    t.prompt.present(item('p2'));
    await t.tick();
    t.prompt.withdraw('p1', 'answered');
    await t.tick();
    expect(t.shown()).toContain('(answered elsewhere)');
    t.input.write('y\n');
    await t.tick();
    expect(t.answers).toEqual([['p2', { approved: true, by: 'ann' }]]);
    t.prompt.close();
  });

  it('reads y/yes/approve and n/no/deny, and refuses an empty answer to a question', () => {
    expect(parseReply(item('p'), 'YES', 'a')).toEqual({ approved: true, by: 'a' });
    expect(parseReply(item('p'), 'deny too risky', 'a')).toEqual({ approved: false, by: 'a', reason: 'too risky' });
    expect(parseReply(item('p'), 'sure', 'a')).toBeNull();
    expect(parseReply(item('q', 'question'), '   ', 'a')).toBeNull();
  });
});
