/**
 * A statechart drawn as a diagram (SVG) from the machine's definition: the JSON that `a2a graph
 * --format json` prints and `/api/charts` serves, laid out by dagre (a layered graph layout; the
 * page has no other drawing library). A compound state is a box around its children; a transition
 * is an arrow labelled with its events. Over it, one session's life: the state it is in (filled),
 * the states it went through and the transitions it took (marked), redrawn live and by the time
 * slider. Pure (a string out), so it is tested without a browser.
 *
 * dagre cannot draw an edge to or from a cluster. An arrow into a compound state points at the
 * state it enters (its initial state, followed down); an arrow out of one (CANCEL, a timeout: any
 * state inside it may take it) starts at a small "any state in X" marker inside its box.
 */
import dagre from '@dagrejs/dagre';
import { eventLabel, type GraphJson } from '../../../actors/graph/render.js';
import { esc } from './esc.js';

type State = GraphJson['states'][number];

export interface ChartLayout {
  chart: GraphJson;
  width: number;
  height: number;
  clusters: Array<{ id: string; name: string; x: number; y: number; width: number; height: number; depth: number }>;
  nodes: Array<{ id: string; name: string; x: number; y: number; width: number; height: number; final: boolean; any: boolean; title: string }>;
  edges: Array<{ from: string; to: string; label: string; title: string; points: Array<{ x: number; y: number }>; labelAt: { x: number; y: number } | null }>;
}

/** Where one session is and has been, as the names of the chart's states (a session's `session.state` values). */
export interface ChartLife {
  current: string;
  /** The states it went through, in order (repeats included). */
  trail: string[];
}

const CHAR_PX = 6.4;
const key = (id: string) => id.split('.').pop()!;
const ANY = '\u0000any:';
const layouts = new WeakMap<GraphJson, ChartLayout>();

/** The chart's layout, computed once per chart (every session of a machine shares it). */
export function layoutChart(chart: GraphJson): ChartLayout {
  const known = layouts.get(chart);
  if (known) return known;
  const byId = new Map(chart.states.map((s) => [s.id, s]));
  const root = chart.states.find((s) => s.parent === null);
  const children = (id: string) => chart.states.filter((s) => s.parent === id);
  const compound = (s: State) => children(s.id).length > 0;
  /** The leaf a transition into `id` ends in: its initial state, followed down. */
  const entered = (id: string): string => {
    let s = byId.get(id);
    while (s && compound(s)) s = byId.get(s.initial ?? children(s.id)[0]!.id);
    return s?.id ?? id;
  };
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
  g.setGraph({ rankdir: 'TB', nodesep: 14, ranksep: 40, edgesep: 6, marginx: 8, marginy: 8 });
  g.setDefaultEdgeLabel(() => ({}));
  const anyName = (s: State) => (s === root ? 'any state' : `any state in ${key(s.id)}`);
  const depthOf = (s: State): number => (s.parent && s.parent !== root?.id ? 1 + depthOf(byId.get(s.parent)!) : 0);
  const selfLoops = new Map<string, string[]>();
  for (const s of chart.states) {
    if (s === root) continue;
    if (compound(s)) g.setNode(s.id, { label: key(s.id), clusterLabelPos: 'top', paddingTop: 22 });
    else g.setNode(s.id, { width: key(s.id).length * CHAR_PX + 24, height: 26 });
    if (s.parent && s.parent !== root?.id) g.setParent(s.id, s.parent);
  }
  // transitions, merged per (from, to)
  const merged = new Map<string, { from: string; to: string; events: string[]; guards: string[] }>();
  for (const t of chart.transitions) {
    const source = byId.get(t.source);
    if (!source) continue;
    const label = eventLabel(t.event);
    const targets = t.targets.filter((x) => x !== root?.id);
    if (targets.length === 0 || (targets.length === 1 && targets[0] === t.source && !compound(source))) {
      selfLoops.set(t.source, [...(selfLoops.get(t.source) ?? []), `${label}${t.guard ? ` [${t.guard}]` : ''}`]);
      continue;
    }
    let from = t.source;
    if (compound(source)) {
      // the machine's own transitions (an actor's error, a stop) start at a marker outside every box
      from = `${ANY}${t.source}`;
      if (!g.hasNode(from)) {
        g.setNode(from, { width: (anyName(source).length + 2) * (CHAR_PX - 1), height: 18 });
        if (source !== root) g.setParent(from, t.source);
      }
    }
    for (const target of targets) {
      const to = entered(target);
      if (to === from) continue;
      const id = `${from}\u0001${to}`;
      const m = merged.get(id) ?? { from, to, events: [], guards: [] };
      if (!m.events.includes(label)) m.events.push(label);
      if (t.guard && !m.guards.includes(t.guard)) m.guards.push(t.guard);
      merged.set(id, m);
    }
  }
  const labelOf = (events: string[]) => (events.length > 2 ? `${events.slice(0, 2).join(', ')} +${events.length - 2}` : events.join(', '));
  for (const m of merged.values()) {
    const label = labelOf(m.events);
    // the labels take no room in the layout (with room, the worker's chart is 2,400 px wide): each is written at its arrow's middle
    g.setEdge(m.from, m.to, { label, minlen: 1 });
  }
  dagre.layout(g);
  const graph = g.graph();
  const layout: ChartLayout = { chart, width: Math.ceil(graph.width ?? 0), height: Math.ceil(graph.height ?? 0), clusters: [], nodes: [], edges: [] };
  for (const id of g.nodes()) {
    const n = g.node(id) as { x: number; y: number; width: number; height: number };
    const s = byId.get(id);
    if (s && compound(s)) {
      layout.clusters.push({ id, name: key(id), x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height, depth: depthOf(s) });
      continue;
    }
    const any = id.startsWith(ANY);
    const loops = selfLoops.get(id) ?? [];
    layout.nodes.push({
      id,
      name: any ? anyName(byId.get(id.slice(ANY.length))!) : key(id),
      x: n.x - n.width / 2,
      y: n.y - n.height / 2,
      width: n.width,
      height: n.height,
      final: s?.type === 'final',
      any,
      title: any ? `transitions ${anyName(byId.get(id.slice(ANY.length))!)} takes` : `${id}${loops.length ? `\nstays on: ${loops.join(', ')}` : ''}`,
    });
  }
  layout.clusters.sort((a, b) => a.depth - b.depth);
  for (const m of merged.values()) {
    const e = g.edge(m.from, m.to) as { points?: Array<{ x: number; y: number }>; x?: number; y?: number; label: string };
    layout.edges.push({
      from: m.from,
      to: m.to,
      label: e.label,
      title: `${m.events.join(', ')}${m.guards.length ? ` [${m.guards.join('; ')}]` : ''}`,
      points: e.points ?? [],
      labelAt: middle(e.points ?? []),
    });
  }
  layouts.set(chart, layout);
  return layout;
}

/** The point halfway along a polyline (where its label goes). */
function middle(points: Array<{ x: number; y: number }>): { x: number; y: number } | null {
  if (points.length === 0) return null;
  const lengths = points.slice(1).map((p, i) => Math.hypot(p.x - points[i]!.x, p.y - points[i]!.y));
  let left = lengths.reduce((a, b) => a + b, 0) / 2;
  for (let i = 0; i < lengths.length; i++) {
    if (left <= lengths[i]! && lengths[i]! > 0) {
      const f = left / lengths[i]!;
      return { x: points[i]!.x + (points[i + 1]!.x - points[i]!.x) * f, y: points[i]!.y + (points[i + 1]!.y - points[i]!.y) * f };
    }
    left -= lengths[i]!;
  }
  return points[0]!;
}

/** The state a session's state name stands for: the first (outermost) state of that name. */
export function stateOf(chart: GraphJson, name: string): string | null {
  return chart.states.find((s) => s.parent !== null && key(s.id) === name)?.id ?? null;
}

/** Is `id` the state `of` or inside it? */
const within = (id: string, of: string) => id === of || id.startsWith(`${of}.`);

/** The diagram as SVG markup: the chart's layout with one session's life drawn over it. */
export function chartSvg(chart: GraphJson, life: ChartLife, label = chart.machine): string {
  const layout = layoutChart(chart);
  const current = stateOf(chart, life.current);
  const trail = life.trail.map((n) => stateOf(chart, n)).filter((id): id is string => id !== null);
  const visited = new Set(trail);
  // a transition taken: two states in a row in the trail, joined by an edge from the first (a state inside it, or the "any state" marker of a box around it) into the second (or a state inside it)
  const taken = new Set<number>();
  const source = (e: ChartLayout['edges'][number]) => (e.from.startsWith(ANY) ? e.from.slice(ANY.length) : e.from);
  /** Edges leaving `a` itself (a state inside it, or its own "any state" marker: a name may stand for a box, as the workflow's PLANNING). */
  const own = (a: string) => layout.edges.map((e, at) => ({ e, at })).filter(({ e }) => within(source(e), a));
  /** Edges leaving a box around `a` ("any state in running"), the innermost box first. */
  const outer = (a: string) =>
    layout.edges
      .map((e, at) => ({ e, at }))
      .filter(({ e }) => e.from.startsWith(ANY) && within(a, source(e)) && source(e) !== a)
      .sort((x, y) => source(y.e).split('.').length - source(x.e).split('.').length);
  for (let i = 1; i < trail.length; i++) {
    const a = trail[i - 1]!;
    const b = trail[i]!;
    // entering a box is not a transition: running → thinking is running's initial state
    if (a === b || within(b, a)) continue;
    // a transition of a's own; else through a state the session passes without telling (nextTool,
    // collectingPartial: each an "always" step); only then one that any state of a box around it takes
    const direct = own(a).find(({ e }) => within(e.to, b));
    if (direct) {
      taken.add(direct.at);
      continue;
    }
    const via = own(a).flatMap((first) => (visited.has(first.e.to) ? [] : own(first.e.to).filter(({ e }) => within(e.to, b)).map((second) => [first.at, second.at]))).at(0);
    if (via) {
      for (const at of via) taken.add(at);
      continue;
    }
    const boxed = outer(a).find(({ e }) => within(e.to, b));
    if (boxed) taken.add(boxed.at);
  }
  const r = (n: number) => Math.round(n * 10) / 10;
  const clusters = layout.clusters
    .map((c) => {
      const cls = current && within(current, c.id) ? 'cl on-path' : visited.has(c.id) || trail.some((t) => within(t, c.id)) ? 'cl visited' : 'cl';
      return `<g class="${cls}"><rect x="${r(c.x)}" y="${r(c.y)}" width="${r(c.width)}" height="${r(c.height)}" rx="8"/><text x="${r(c.x + 8)}" y="${r(c.y + 14)}">${esc(c.name)}</text></g>`;
    })
    .join('');
  const edges = layout.edges
    .map((e, at) => {
      const d = e.points.map((p, i) => `${i ? 'L' : 'M'}${r(p.x)} ${r(p.y)}`).join(' ');
      const cls = taken.has(at) ? 'ed taken' : 'ed';
      const text = e.labelAt ? `<text x="${r(e.labelAt.x)}" y="${r(e.labelAt.y + 4)}" text-anchor="middle">${esc(e.label)}</text>` : '';
      return `<g class="${cls}"><title>${esc(e.title)}</title><path d="${d}" marker-end="url(#arrow${taken.has(at) ? '-taken' : ''})"/>${text}</g>`;
    })
    .join('');
  const nodes = layout.nodes
    .map((n) => {
      const cls = n.any ? 'st any' : n.id === current ? 'st active' : visited.has(n.id) ? 'st visited' : 'st';
      const ring = n.final ? `<rect x="${r(n.x + 3)}" y="${r(n.y + 3)}" width="${r(n.width - 6)}" height="${r(n.height - 6)}" rx="${n.height / 2 - 3}" class="ring"/>` : '';
      return `<g class="${cls}"${n.id === current ? ' aria-current="step"' : ''} data-state="${esc(n.id)}"><title>${esc(n.title)}</title><rect x="${r(n.x)}" y="${r(n.y)}" width="${r(n.width)}" height="${r(n.height)}" rx="${n.any ? 4 : n.height / 2}"/>${ring}<text x="${r(n.x + n.width / 2)}" y="${r(n.y + n.height / 2 + 4)}" text-anchor="middle">${esc(n.name)}</text></g>`;
    })
    .join('');
  const where = current ? `now in ${key(current)}` : `now ${life.current}`;
  const path = trail.length ? `, went through ${[...new Set(trail.map(key))].join(', ')}` : '';
  return `<svg class="diagram" viewBox="0 0 ${layout.width} ${layout.height}" width="${layout.width}" height="${layout.height}" role="img" aria-label="Statechart ${esc(label)}: ${esc(where + path)}">
    <defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L8 4L0 8z" class="head"/></marker>
    <marker id="arrow-taken" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0 0L8 4L0 8z" class="head taken"/></marker></defs>
    ${clusters}${edges}${nodes}</svg>`;
}
