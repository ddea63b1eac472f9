/**
 * The studio's time travel and live charts without a browser: a real run's events (the OAuth
 * example, scripted model) folded up to each event, compared with a fresh fold of the same prefix;
 * a session's trail of states; the orchestrator's queue told by the log; every machine's chart
 * laid out and drawn, with a session's state and the transitions it took marked.
 */
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { startRun, scriptedModel } from '../../index.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { machines, toGraphJson } from '../../actors/graph/index.js';
import type { GraphJson } from '../../actors/graph/render.js';
import { StudioRun } from '../../adapters/studio/page/view.js';
import { Timeline, queueOf, trailOf } from '../../adapters/studio/page/timeline.js';
import { chartSvg, layoutChart, stateOf } from '../../adapters/studio/page/diagram.js';
import { tempDir } from '../helpers.js';

const example = join(import.meta.dirname, '..', '..', 'examples', 'oauth');
let events: RunEvent[] = [];

beforeAll(async () => {
  const workspace = tempDir();
  cpSync(example, workspace, { recursive: true });
  const run = await startRun({
    plan: JSON.parse(readFileSync(join(example, 'plan.json'), 'utf8')),
    model: scriptedModel(JSON.parse(readFileSync(join(example, 'script.json'), 'utf8'))),
    store: 'memory',
    workspace,
  });
  run.on((e) => events.push(e as RunEvent));
  const outcome = await run.done;
  expect(outcome.status).toBe('completed');
  events = events.slice();
});

/** The run after its first n events, folded afresh. */
function fresh(n: number): StudioRun {
  const r = new StudioRun();
  events.slice(0, n).forEach((e, i) => r.apply(i, e));
  return r;
}

const shape = (r: StudioRun) => ({
  status: r.view.status,
  nodes: [...r.view.nodes.values()].map((n) => `${n.id}:${n.status}:${n.children.join(',')}`),
  cost: r.view.costUsd,
  asked: [...r.asked.keys()],
  badges: [...r.view.nodes.values()].map((n) => r.badgesOf(n).join('+')),
});

describe('time travel: the run as it was at an event', () => {
  it('gives at every event what a fresh fold of the events up to it gives, stepping forward, back and jumping', () => {
    const live = new StudioRun();
    events.forEach((e, i) => live.apply(i, e));
    const timeline = new Timeline(live);
    expect(events.length).toBeGreaterThan(30);
    // forward one event at a time, then back, then jumps both ways
    const order = [...events.keys(), ...[...events.keys()].reverse(), 0, events.length - 1, 5, Math.floor(events.length / 2), 3];
    for (const k of order) expect(shape(timeline.at(k)), `at event ${k}`).toEqual(shape(fresh(k + 1)));
    // past the end: the run as it is now
    expect(shape(timeline.at(events.length + 10))).toEqual(shape(live));
  });

  it('shows, early in the run, sessions running that ended later, and none not yet spawned', () => {
    const live = new StudioRun();
    events.forEach((e, i) => live.apply(i, e));
    const spawned = events.findIndex((e) => e.type === 'subtask.spawned');
    expect(spawned).toBeGreaterThan(0);
    const before = new Timeline(live).at(spawned - 1);
    const child = events[spawned]!.subTaskId!;
    expect(before.view.nodes.has(child)).toBe(false);
    const after = new Timeline(live).at(spawned);
    expect(after.view.nodes.get(child)!.endedAt).toBeNull();
    expect(live.view.nodes.get(child)!.endedAt).not.toBeNull();
  });

  it("gives a session's trail of states in order, ending where it is", () => {
    const live = new StudioRun();
    events.forEach((e, i) => live.apply(i, e));
    const worker = live.view.roots[0]!;
    const trail = trailOf(live, live.view.nodes.get(worker)!);
    const told = events.filter((e) => e.subTaskId === worker && e.type === 'session.state').map((e) => String(e.data.state));
    expect(told.length).toBeGreaterThan(2);
    expect(trail.slice(0, told.length)).toEqual(told);
    expect(trail[trail.length - 1]).toBe('completed');
  });

  it("tells the orchestrator's queue from the log: accepted and not yet handled", () => {
    const accepted = events.filter((e) => e.type === 'inbox.accepted');
    expect(accepted.length).toBeGreaterThan(0);
    const first = events.indexOf(accepted[0]!);
    expect(queueOf(events.slice(0, first + 1)).map((q) => q.id)).toContain(String(accepted[0]!.data.id));
    expect(queueOf(events)).toEqual([]);
  });
});

describe('full transcripts, and a model on every session', () => {
  it('keeps a long reply and a long tool call whole in the log, so that the transcript is read whole', async () => {
    const long = Array.from({ length: 400 }, (_, i) => `line ${i} of a long design note`).join('\n');
    const run = await startRun({
      task: 'write a long note',
      agent: '@researcher',
      model: scriptedModel({ rules: [{ prompt: '', turns: [{ text: long, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: long } }] }] }] }),
      store: 'memory',
      workspace: tempDir(),
    });
    const seen: RunEvent[] = [];
    run.on((e) => seen.push(e as RunEvent));
    await run.done;
    expect(long.length).toBeGreaterThan(10_000);
    const r = new StudioRun();
    seen.forEach((e, i) => r.apply(i, e));
    const reply = r.transcript(r.view.roots[0]!).find((t) => t.kind === 'assistant')!;
    expect(reply.text).toBe(long);
    expect(JSON.parse(reply.calls![0]!.arguments)).toEqual({ output: long });
    // a session on the default profile shows a model too: the one that answered
    const called = seen.find((e) => e.type === 'model.called')!;
    expect(called.data).toMatchObject({ model: 'scripted', profile: expect.any(String) });
    expect(r.extras.get(r.view.roots[0]!)).toMatchObject({ model: null, answeredBy: 'scripted' });
  });
});

describe('live charts: a statechart drawn as a diagram', () => {
  const charts = Object.fromEntries(Object.entries(machines).map(([name, m]) => [name, toGraphJson(m)])) as Record<string, GraphJson>;

  it('lays out every machine: each state drawn once, an arrow for each pair of states a transition joins', () => {
    for (const [name, chart] of Object.entries(charts)) {
      const layout = layoutChart(chart);
      const drawn = [...layout.clusters.map((c) => c.id), ...layout.nodes.filter((n) => !n.any).map((n) => n.id)].sort();
      expect(drawn, name).toEqual(chart.states.filter((s) => s.parent !== null).map((s) => s.id).sort());
      for (const n of [...layout.nodes, ...layout.clusters]) {
        expect(Number.isFinite(n.x) && Number.isFinite(n.y) && n.width > 0 && n.height > 0, `${name}: ${n.id} placed`).toBe(true);
        expect(n.x >= 0 && n.y >= 0 && n.x + n.width <= layout.width + 1 && n.y + n.height <= layout.height + 1, `${name}: ${n.id} inside the picture`).toBe(true);
      }
      // every transition to another state has its arrow (from the state, or from its box's "any state" marker)
      const inside = (id: string, of: string) => id === of || id.startsWith(`${of}.`);
      for (const t of chart.transitions) {
        for (const target of t.targets) {
          if (target === t.source || target === chart.machine) continue;
          const arrow = layout.edges.find((e) => (e.from === t.source || (e.from.endsWith(t.source) && e.from.includes('any:'))) && inside(e.to, target));
          expect(arrow, `${name}: ${t.source} -[${t.event}]-> ${target}`).toBeDefined();
          expect(arrow!.points.length).toBeGreaterThanOrEqual(2);
        }
      }
    }
  });

  it("marks the session's state, the states it went through and the transitions it took", () => {
    const chart = charts.subtask!;
    const svg = chartSvg(chart, { current: 'waitingForPermission', trail: ['running', 'thinking', 'usingTools', 'waitingForPermission'] });
    const active = /<g class="st active" aria-current="step" data-state="([^"]+)"/.exec(svg);
    expect(active?.[1]).toBe(stateOf(chart, 'waitingForPermission'));
    expect(svg).toContain(`class="st visited" data-state="${stateOf(chart, 'thinking')}"`);
    // usingTools → waitingForPermission (PERMISSION_REQUIRED, from any state in usingTools) is taken; entering running is no transition
    expect(svg).toMatch(/class="ed taken"><title>PERMISSION_REQUIRED/);
    expect(svg).not.toMatch(/class="ed taken"><title>REINITIALIZE/);
    expect(chartSvg(chart, { current: 'spawning', trail: ['thinking', 'spawning'] })).toMatch(/class="ed taken"><title>MODEL_REPLIED/);
    expect(svg).toMatch(/aria-label="Statechart subtask: now in waitingForPermission, went through running, thinking, usingTools, waitingForPermission"/);
    // nothing taken, nothing visited, for a session that has just started
    const start = chartSvg(chart, { current: 'thinking', trail: ['thinking'] });
    expect(start).not.toContain('ed taken');
    expect(start).not.toContain('st visited');
  });
});
