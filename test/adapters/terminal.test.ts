/**
 * The live tree of `a2a run` on terminals of 60, 80 and 160 columns: the events of a real run (the
 * OAuth example, printed with --json) are replayed into the display with the redraw timer under
 * control; every frame must fit the width (a cut line ends in "…", the tree's "├─" kept), and
 * each redraw must move the cursor up by exactly the lines the previous frame drew, so that no
 * stale copy of the tree is left behind.
 */
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { canRedraw, fitLine, liveDisplay, visibleLength } from '../../adapters/terminal.js';
import { main } from '../../bin/cli.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { capture, tempDir } from '../helpers.js';

const root = join(import.meta.dirname, '../..');
let events: RunEvent[] = [];

beforeAll(async () => {
  const c = capture();
  expect(await main(['run', join(root, 'examples/oauth'), '--json', '--workspace', tempDir(), '--run-id', 'oauth-tree'], c.io)).toBe(0);
  events = c
    .out()
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as RunEvent);
});

afterEach(() => {
  vi.useRealTimers();
});

/** Replays the run into a live display `columns` wide; returns each write (one per frame). */
function frames(columns: number, colour: boolean): string[] {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'Date'] });
  const writes: string[] = [];
  const display = liveDisplay({ write: (s: string) => writes.push(s), columns }, { colour });
  for (const event of events) {
    display.onEvent(event);
    vi.advanceTimersByTime(100);
  }
  display.finish();
  return writes;
}

describe('the live tree', () => {
  it.each([
    [60, true],
    [80, false],
    [160, true],
  ])('should fit %i columns (colour %s), keep its branches, and redraw exactly over the last frame', (columns, colour) => {
    const writes = frames(columns, colour);
    expect(writes.length).toBeGreaterThan(5);
    let previousTree = 0;
    for (const [i, write] of writes.entries()) {
      const up = /^\x1b\[(\d+)F\x1b\[J/.exec(write);
      // the first frame starts where the cursor is; each later one goes back over the last tree
      if (i === 0) expect(up).toBeNull();
      else expect(Number(up?.[1]), `frame ${i} moves up over the ${previousTree} lines drawn`).toBe(previousTree);
      const lines = write.replace(/^\x1b\[\d+F\x1b\[J/, '').replace(/\n$/, '').split('\n');
      const start = lines.findIndex((l) => l.replace(/\x1b\[[0-9;]*m/g, '').startsWith('orchestrator'));
      const tree = lines.slice(start);
      for (const line of tree) expect(visibleLength(line), line).toBeLessThanOrEqual(columns - 1);
      previousTree = tree.length;
    }
    const last = writes.at(-1)!.replace(/\x1b\[[0-9;]*m/g, '');
    expect(last).toMatch(/└─ design \(w-design\) {2}@architect {2}partial/);
    expect(last).toMatch(/ {3}├─ w-design\.1 {2}@architect {2}success/);
    if (columns < 100) expect(last).toContain('…');
  });

  it('should cut a line at the width, keeping colour codes whole and closed', () => {
    const coloured = `├─ \x1b[1mw-design.1\x1b[22m  @architect  \x1b[32msuccess\x1b[39m  d1  a long prompt that goes on`;
    const cut = fitLine(coloured, 30);
    expect(visibleLength(cut)).toBe(30);
    expect(cut.replace(/\x1b\[[0-9;]*m/g, '')).toBe('├─ w-design.1  @architect  su…');
    expect(cut.endsWith('\x1b[0m')).toBe(true);
    expect(fitLine('short', 30)).toBe('short');
  });

  it('should fall back to plain lines where the terminal cannot redraw', () => {
    expect(canRedraw({ write: () => true, isTTY: true, columns: 80 }, {})).toBe(true);
    expect(canRedraw({ write: () => true, isTTY: true, columns: 59 }, {})).toBe(false);
    expect(canRedraw({ write: () => true, isTTY: true, columns: 120 }, { TERM: 'dumb' })).toBe(false);
    expect(canRedraw({ write: () => true, columns: 120 }, {})).toBe(false);
  });
});
