/**
 * The studio's tree and its per-session reading without a browser: the tree flattened into the
 * rows a person sees (depth-first, each with its level, place among its siblings and whether it
 * is open, folded or a leaf; a folded node's subtree left out), the shape counter that tells the
 * page when to flatten again, and a session's events read from the index the fold keeps (what a
 * transcript, a chart's trail and the permission history read) against a scan of the whole log.
 */
import { describe, expect, it } from 'vitest';
import { RunView } from '../../actors/observation/runView.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { StudioRun } from '../../adapters/studio/page/view.js';
import { trailOf } from '../../adapters/studio/page/timeline.js';
import { flatten } from '../../adapters/studio/page/rows.js';

let seq = 0;
const event = (e: Partial<RunEvent> & { type: string }): RunEvent => ({ runId: 'r', seq: seq++, ts: 1_000 + seq, data: {}, ...e }) as RunEvent;
const spawn = (id: string, parentId?: string) => event({ type: parentId ? 'subtask.spawned' : 'worker.deployed', subTaskId: id, ...(parentId ? { parentId } : {}), agentType: 'coder', depth: parentId ? 1 : 0, data: { prompt: `do ${id}` } });

/** w-a (w-a.1 (w-a.1.1, w-a.1.2), w-a.2, w-a.3), w-b */
function run(): RunView {
  const v = new RunView();
  for (const e of [spawn('w-a'), spawn('w-a.1', 'w-a'), spawn('w-a.2', 'w-a'), spawn('w-a.1.1', 'w-a.1'), spawn('w-a.3', 'w-a'), spawn('w-a.1.2', 'w-a.1'), spawn('w-b')]) v.apply(e);
  return v;
}

describe('the tree flattened into rows', () => {
  it('should list every node depth-first with its level, its place among its siblings and whether it is open', () => {
    const rows = flatten(run(), new Set());
    expect(rows.map((r) => `${r.id} ${r.level} ${r.posinset}/${r.setsize} ${r.expanded} ${r.parent}`)).toEqual([
      'w-a 1 1/2 true null',
      'w-a.1 2 1/3 true w-a',
      'w-a.1.1 3 1/2 null w-a.1',
      'w-a.1.2 3 2/2 null w-a.1',
      'w-a.2 2 2/3 null w-a',
      'w-a.3 2 3/3 null w-a',
      'w-b 1 2/2 null null',
    ]);
  });

  it('should leave out the subtree of a folded node and mark it folded', () => {
    const rows = flatten(run(), new Set(['w-a.1']));
    expect(rows.map((r) => r.id)).toEqual(['w-a', 'w-a.1', 'w-a.2', 'w-a.3', 'w-b']);
    expect(rows[1]!.expanded).toBe(false);
    expect(flatten(run(), new Set(['w-a'])).map((r) => r.id)).toEqual(['w-a', 'w-b']);
  });

  it('should count the nodes added in its shape, and nothing else', () => {
    const v = run();
    expect(v.shape).toBe(7);
    v.apply(event({ type: 'subtask.result', subTaskId: 'w-a.2', data: { status: 'success', output: 'ok' } }));
    v.apply(spawn('w-a.2', 'w-a'));
    expect(v.shape).toBe(7);
    v.apply(spawn('w-a.4', 'w-a'));
    expect(v.shape).toBe(8);
  });

  it('should flatten 10,000 sessions to 10,001 rows, each once', () => {
    const v = new RunView();
    v.apply(spawn('w-big'));
    for (let i = 1; i <= 10_000; i++) v.apply(spawn(`w-big.${i}`, 'w-big'));
    const rows = flatten(v, new Set());
    expect(rows).toHaveLength(10_001);
    expect(new Set(rows.map((r) => r.id)).size).toBe(10_001);
    expect(rows.at(-1)).toMatchObject({ id: 'w-big.10000', level: 2, posinset: 10_000, setsize: 10_000 });
  });
});

describe("a session's events, read from the fold's index", () => {
  it('should give each session its own events and those naming it as the requester, in order, as a scan of the log does', () => {
    const events: RunEvent[] = [
      spawn('w-a'),
      spawn('w-a.1', 'w-a'),
      event({ type: 'session.state', subTaskId: 'w-a.1', data: { state: 'thinking' } }),
      event({ type: 'model.called', subTaskId: 'w-a.1', data: { turn: 1, text: 'asking', toolCalls: ['run_command'] } }),
      event({ type: 'permission.requested', subTaskId: 'w-a.1', data: { requestId: 'q1', action: 'command_execution', detail: 'make' } }),
      // the parent's decision: its event, the requester in its data
      event({ type: 'permission.decided', subTaskId: 'w-a', data: { requestId: 'q1', requesterId: 'w-a.1', action: 'command_execution', approved: true, decidedBy: 'parent', decider: 'w-a' } }),
      event({ type: 'session.state', subTaskId: 'w-a', data: { state: 'thinking' } }),
      event({ type: 'subtask.result', subTaskId: 'w-a.1', data: { status: 'success', output: 'made' } }),
    ];
    const r = new StudioRun();
    events.forEach((e, i) => r.apply(i, e));
    for (const id of ['w-a', 'w-a.1', 'w-none']) {
      expect(r.eventsOf(id), id).toEqual(events.filter((e) => e.subTaskId === id || e.data.requesterId === id));
      expect(r.eventCountOf(id)).toBe(r.eventsOf(id).length);
    }
    expect(r.transcript('w-a.1').map((t) => t.kind)).toEqual(['task', 'assistant', 'permission', 'permission', 'result']);
    expect(r.permissions('w-a.1').map((e) => e.type)).toEqual(['permission.requested', 'permission.decided']);
    expect(r.permissions('w-a')).toEqual([]);
    expect(trailOf(r, r.view.nodes.get('w-a.1')!)).toEqual(['thinking', 'completed']);
  });
});
