/**
 * The run's event log closed into segments (adapters/store/runLog.ts): every reader reads every
 * event once across segments (plain or compressed), the resume point read from the index and the
 * tail equals the one read from the whole log, and a process killed between closing a segment and
 * writing the index, or an index that is not valid, loses nothing.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { busStartOf, RunEventBus } from '../../actors/observation/events.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { logLines, resumePoint, segmentNumbers, type RunLog } from '../../adapters/store/runLog.js';
import { RunFeed } from '../../adapters/studio/feed.js';
import type { RunEvent } from '../../machines/protocol/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

let now = 1_000;
const clock = { now: () => now++, setTimeout: () => ({}) as never, clearTimeout: () => {} } as never;

function setup(segmentBytes: number) {
  const ws = mkdtempSync(join(tmpdir(), 'a2a-runlog-'));
  dirs.push(ws);
  const store = new FileRunStore(ws);
  store.create({ runId: 'r', pid: process.pid, status: 'running', startedAt: 0, planId: 'p', source: 'test' });
  const bus = new RunEventBus('r', clock);
  const log = store.runLog('r', { audited: (e) => e.type === 'subtask.result', flushMs: 60_000, segmentBytes, busState: () => bus.state() });
  bus.subscribe((e) => log.append(e));
  return { ws, store, bus, log, dir: store.dir('r') };
}

/** Events of every kind the resume point counts: facts, relayed ids, model spending, and text that is not ASCII. */
function emitSome(bus: RunEventBus, log: RunLog, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    const id = `s.${i % 7}`;
    bus.emit({ type: 'subtask.spawned', subTaskId: `s.${i}`, parentId: 's', data: { prompt: `part ${i} — ünïcödé ✓`, expectedOutput: 'a part' } });
    bus.emit({ type: 'model.called', subTaskId: id, workerId: 'w1', data: { costUsd: 0.001, inputTokens: 10, outputTokens: 3, replyId: `r${i}`, toolCalls: [] } });
    bus.emit({ type: 'warning', id: `host-evt-${i}`, data: { message: `relayed ${i}` } });
    if (i % 5 === 0) bus.emit({ type: 'subtask.result', subTaskId: `s.${i}`, parentId: 's', data: { status: 'success', how: 'reported', output: `done ${i}` } });
    if (i % 3 === 0) log.flush();
  }
  log.flush();
}

const sorted = (xs: Iterable<string>) => [...xs].sort();

describe('the run log in segments', () => {
  it('reads every event once across segments, and resumes from the index and the tail', async () => {
    const { store, bus, log, dir } = setup(4_000);
    emitSome(bus, log, 0, 300);
    await log.settled();
    const numbers = segmentNumbers(dir, 'events');
    expect(numbers.length).toBeGreaterThan(10);
    // compressed once closed: no plain segment left
    expect(numbers.every((n) => existsSync(join(dir, `events.${n}.jsonl.gz`)) && !existsSync(join(dir, `events.${n}.jsonl`)))).toBe(true);
    const events = store.events('r');
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i));
    expect(events.length).toBe(bus.nextSeq);
    expect(events.filter((e) => e.type === 'subtask.spawned').map((e) => e.data.prompt)[299]).toBe('part 299 — ünïcödé ✓');
    const audit = logLines(dir, 'audit') as RunEvent[];
    expect(audit.map((e) => e.subTaskId)).toEqual(Array.from({ length: 60 }, (_, i) => `s.${i * 5}`));

    const whole = busStartOf(events);
    const point = resumePoint(dir);
    expect(point.read.indexed).toBe(numbers.at(-1));
    expect(point.read.segments).toBe(0);
    expect(point.read.bytes).toBeLessThan(4_000 + 2_000);
    expect(point.start.seq).toBe(whole.seq);
    expect(sorted(point.start.facts)).toEqual(sorted(whole.facts));
    expect([...point.start.recent]).toEqual([...whole.recent]);
    const spent = point.spend.reduce((a, s) => a + s.usd, 0);
    expect(spent).toBeCloseTo(0.3, 9);
    expect(point.spend.reduce((a, s) => a + s.inputTokens, 0)).toBe(3_000);
    log.close();
  });

  it('loses nothing when killed between closing a segment and writing the index, or when the index is not valid', async () => {
    const { bus, log, dir, store } = setup(3_000);
    emitSome(bus, log, 0, 100);
    await log.settled();
    const index = join(dir, 'events.index.json');
    const stale = readFileSync(index, 'utf8');
    emitSome(bus, log, 100, 100);
    await log.settled();
    const whole = busStartOf(store.events('r'));
    // the index of an earlier segment: the segments after it are read as the tail
    writeFileSync(index, stale);
    const behind = resumePoint(dir);
    expect(behind.read.segments).toBeGreaterThan(0);
    expect(behind.start.seq).toBe(whole.seq);
    expect(sorted(behind.start.facts)).toEqual(sorted(new Set(whole.facts)));
    expect(behind.spend.reduce((a, s) => a + s.usd, 0)).toBeCloseTo(0.2, 9);
    // not an index: said, and every segment read
    writeFileSync(index, JSON.stringify({ segments: 'many' }));
    const problems: string[] = [];
    const full = resumePoint(dir, (p) => problems.push(p));
    expect(problems.join('\n')).toMatch(/events\.index\.json is not a log index: segments/);
    expect(full.start.seq).toBe(whole.seq);
    expect(full.read.indexed).toBe(0);
    expect(full.spend.reduce((a, s) => a + s.usd, 0)).toBeCloseTo(0.2, 9);
    log.close();
  });

  it('the studio feed follows the log across segments, each event once and in order', async () => {
    const { store, bus, log, dir } = setup(2_500);
    emitSome(bus, log, 0, 20);
    const feed = new RunFeed(store, 'r', 60_000);
    for (let round = 0; round < 30; round++) {
      // some rounds close a segment and compress it before the feed reads again, some not
      emitSome(bus, log, 20 + round * 7, 7);
      if (round % 3 === 0) await log.settled();
      feed.poll();
    }
    await log.settled();
    feed.poll();
    expect(segmentNumbers(dir, 'events').length).toBeGreaterThan(10);
    expect(feed.invalid).toBe(0);
    expect(feed.events.map((e) => e.seq)).toEqual(Array.from({ length: bus.nextSeq }, (_, i) => i));
    log.close();
  });

  it('refuses a segment size that is not a positive number, naming the variable', async () => {
    const { segmentBytesFromEnv } = await import('../../adapters/store/runLog.js');
    expect(() => segmentBytesFromEnv({ A2A_LOG_SEGMENT_MB: 'lots' })).toThrow(/A2A_LOG_SEGMENT_MB must be a positive number of megabytes.*"lots"/);
    expect(segmentBytesFromEnv({ A2A_LOG_SEGMENT_MB: '0.5' })).toBe(524_288);
    expect(segmentBytesFromEnv({})).toBe(64 * 1024 * 1024);
  });

  it('writes the audit lines a kill between the two writes of a flush left out, once, and none twice', () => {
    const { store, bus, log, dir } = setup(1_000_000);
    emitSome(bus, log, 0, 30);
    log.close();
    const audited = (lines: unknown[]) => (lines as RunEvent[]).filter((e) => e.type === 'subtask.result').map((e) => e.id);
    const complete = audited(store.logLines('r', 'audit'));
    expect(complete.length).toBe(6);
    // a flush killed after writing the events: two results in events.jsonl, not in audit.jsonl,
    // and a torn audit line (the kill mid-write of the one before)
    const events = (id: string, n: number) => JSON.stringify({ type: 'subtask.result', runId: 'r', subTaskId: `k.${n}`, parentId: 's', data: { status: 'success', how: 'done', output: 'x' }, id, seq: 1_000 + n, ts: 1 });
    writeFileSync(join(dir, 'events.jsonl'), `${readFileSync(join(dir, 'events.jsonl'), 'utf8')}${events('late-1', 1)}\n${JSON.stringify({ type: 'warning', id: 'w', seq: 1_002, ts: 1, data: { message: 'm' } })}\n${events('late-2', 2)}\n`);
    writeFileSync(join(dir, 'audit.jsonl'), `${readFileSync(join(dir, 'audit.jsonl'), 'utf8')}{"type":"subtask.res`);
    const problems: string[] = [];
    const again = store.runLog('r', { audited: (e) => e.type === 'subtask.result', flushMs: 60_000, onError: (p) => problems.push(p) });
    again.close();
    expect(audited(store.logLines('r', 'audit'))).toEqual([...complete, 'late-1', 'late-2']);
    expect(problems.join()).toMatch(/lacked the last 2 audited event/);
    // opened again: nothing is missing, nothing is written twice
    store.runLog('r', { audited: (e) => e.type === 'subtask.result', flushMs: 60_000 }).close();
    expect(audited(store.logLines('r', 'audit'))).toEqual([...complete, 'late-1', 'late-2']);
  });

  it('finds the audit\'s last line in the events\' tail, or further back in a log of more than a megabyte', () => {
    const { store, bus, log, dir } = setup(64 * 1024 * 1024);
    emitSome(bus, log, 0, 10);
    log.close();
    const audited = (lines: unknown[]) => (lines as RunEvent[]).filter((e) => e.type === 'subtask.result').map((e) => e.id);
    const before = audited(store.logLines('r', 'audit'));
    const line = (type: string, id: string, n: number) => JSON.stringify({ type, runId: 'r', subTaskId: `k.${n}`, parentId: 's', data: { status: 'success', how: 'done', output: 'x'.repeat(200) }, id, seq: 2_000 + n, ts: 1 });
    // 1.5 MB of events that are not audited, then one result the audit lacks: its last line is
    // more than a megabyte back
    const filler = Array.from({ length: 6_000 }, (_, i) => line('model.called', `m-${i}`, i)).join('\n');
    writeFileSync(join(dir, 'events.jsonl'), `${readFileSync(join(dir, 'events.jsonl'), 'utf8')}${filler}\n${line('subtask.result', 'far-1', 1)}\n`);
    store.runLog('r', { audited: (e) => e.type === 'subtask.result', flushMs: 60_000 }).close();
    expect(audited(store.logLines('r', 'audit'))).toEqual([...before, 'far-1']);
    // and one more near the end: found in the tail
    writeFileSync(join(dir, 'events.jsonl'), `${readFileSync(join(dir, 'events.jsonl'), 'utf8')}${line('model.called', 'm-x', 7)}\n${line('subtask.result', 'near-1', 2)}\n`);
    store.runLog('r', { audited: (e) => e.type === 'subtask.result', flushMs: 60_000 }).close();
    expect(audited(store.logLines('r', 'audit'))).toEqual([...before, 'far-1', 'near-1']);
  });
});

