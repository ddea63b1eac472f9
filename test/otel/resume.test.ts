/**
 * A run killed with SIGKILL and resumed continues its trace: the same trace id (derived from the
 * run id), a new root span marked resumed and linked to the first root, restored sessions' spans
 * linked to the spans they had before the kill; what the first process exported before it died
 * stays in the trace.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { spanIdOf, traceIdOf } from '../../actors/observation/tracing.js';
import { a2aProcess, capture, killAll, waitFor } from '../nats/cluster.js';
import { tempDir } from '../helpers.js';
import { spanTree, startReceiver, type ReceivedSpan, type Receiver } from './receiver.js';

const RUN = 'otel-resume-1';
let rx: Receiver;
let before: ReceivedSpan[];
let spans: ReceivedSpan[];

beforeAll(async () => {
  rx = await startReceiver();
  const ws = tempDir();
  writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'slow', tasks: [{ id: 'build', agent: '@coder', prompt: 'build it' }] }));
  // the kill comes while the second call is in flight: it takes 30 s in the first life (however
  // slowly a loaded machine exports the first span, the kill comes first), none once resumed (the
  // resumed run reads the script again)
  const script = (delayMs: number) =>
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'coder',
            turns: [
              { toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'status', message: 'started' } }] },
              { delayMs, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'built' } }] },
            ],
          },
        ],
      }),
    );
  script(30_000);
  const store = new FileRunStore(ws);
  const first = a2aProcess(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--run-id', RUN, '--no-tree', '--otel', rx.url], ws, { ...process.env, OTEL_BSP_SCHEDULE_DELAY: '50' });
  // killed once its first model call's span is exported and a checkpoint holds the worker
  await waitFor('the first chat span and a checkpoint', () => rx.spans.some((s) => s.name.startsWith('chat ')) && (() => { try { return store.readCheckpoint(RUN) !== null; } catch { return false; } })(), 20_000, first.out);
  first.child.kill('SIGKILL');
  await first.exited;
  script(0);
  before = [...rx.spans];
  const c = capture();
  const code = await main(['run', '--resume', RUN, '--workspace', ws, '--no-tree', '--otel', rx.url], c.io);
  expect(code, c.out() + c.err()).toBe(0);
  // the resumed run's root ends last (the first root never ended: it was killed)
  spans = [...(await rx.runExported())];
}, 30_000);

afterAll(async () => {
  killAll();
  await rx.close();
});

describe('a resumed run', () => {
  it('continues the same trace, with a resumed root linked to the first one', () => {
    expect(new Set(spans.map((s) => s.traceId)), spanTree(spans)).toEqual(new Set([traceIdOf(RUN)]));
    const roots = spans.filter((s) => s.name === 'invoke_agent orchestrator');
    // the first root never ended (killed): only the resumed one is exported
    expect(roots).toHaveLength(1);
    expect(roots[0]!.attributes['a2a.resumed']).toBe(true);
    expect(roots[0]!.spanId).not.toBe(spanIdOf(RUN, 'orchestrator'));
    expect(roots[0]!.links.map((l) => `${l.traceId}/${l.spanId}`)).toEqual([`${traceIdOf(RUN)}/${spanIdOf(RUN, 'orchestrator')}`]);
    expect(roots[0]!.attributes['a2a.run.status']).toBe('completed');
  });

  it('keeps what the first process exported, and links the restored worker to its span before the kill', () => {
    expect(before.length).toBeGreaterThan(0);
    for (const s of before) expect(s.traceId).toBe(traceIdOf(RUN));
    // the first call's span hangs from the worker's first span (never exported: it was open at the kill)
    const firstChat = before.find((s) => s.name.startsWith('chat '))!;
    expect(firstChat.parentSpanId).toBe(spanIdOf(RUN, 'w-build'));
    const worker = spans.filter((s) => s.name === 'invoke_agent coder');
    expect(worker).toHaveLength(1);
    expect(worker[0]!.attributes['a2a.restored']).toBe(true);
    expect(worker[0]!.links.map((l) => l.spanId)).toEqual([spanIdOf(RUN, 'w-build')]);
    expect(worker[0]!.attributes['a2a.result.status']).toBe('success');
    // the call after the restore hangs from the restored span
    const later = spans.filter((s) => s.name.startsWith('chat ') && !before.includes(s));
    expect(later.length).toBeGreaterThan(0);
    for (const c of later) expect(c.parentSpanId).toBe(worker[0]!.spanId);
  });
});
