/**
 * A machine's graph as a Mermaid `stateDiagram-v2` or as JSON, for `a2a graph` and the docs (docs/reference/machines.md).
 *
 * Mermaid cannot draw a transition between inner states of different composite states, so a
 * transition is drawn between the ancestors of its source and target that are siblings (inside
 * their nearest common ancestor), labelled with its real source when that differs.
 */
import type { AnyStateMachine } from 'xstate';

interface Node {
  id: string;
  key: string;
  type: string;
  path: string[];
  parent?: Node;
  initial?: { target: Node[] };
  states: Record<string, Node>;
  transitions: Map<string, Transition[]>;
  always?: Transition[];
}

interface Transition {
  source: Node;
  target?: Node[];
  eventType: string;
  guard?: unknown;
  reenter?: boolean;
  actions: unknown[];
}

const mermaidId = (n: Node) => (n.path.length ? n.path.join('_') : 'root');

export function eventLabel(eventType: string): string {
  if (eventType === '') return 'always';
  const after = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (after) return `after ${after[1]}`;
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) return `${actor[1]} ${actor[2]}`;
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  return eventType;
}

/** `hasLiveChildren`, `effectIs spawn`, `not circuitOpen` … */
export function guardLabel(guard: unknown): string | null {
  if (!guard) return null;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    // and([...]) / or([...]) / not(...) carry their operands
    const g = guard as { name?: string; guards?: unknown[] };
    if (Array.isArray(g.guards) && (g.name === 'and' || g.name === 'or' || g.name === 'not')) {
      const parts = g.guards.map((x) => guardLabel(x) ?? 'guard');
      return g.name === 'not' ? `not ${parts.join(' ')}` : parts.join(` ${g.name} `);
    }
    return g.name || 'guard';
  }
  const g = guard as { type?: string; params?: unknown };
  let params = g.params;
  if (typeof params === 'function') {
    try {
      params = (params as (a: unknown) => unknown)({ context: {}, event: {} });
    } catch {
      params = undefined;
    }
  }
  const shown =
    params && typeof params === 'object'
      ? Object.values(params).filter((v) => ['string', 'number', 'boolean'].includes(typeof v))
      : ['string', 'number', 'boolean'].includes(typeof params)
        ? [params]
        : [];
  return [g.type ?? 'guard', ...shown].join(' ');
}

function ancestors(n: Node): Node[] {
  const out: Node[] = [];
  for (let p: Node | undefined = n; p; p = p.parent) out.unshift(p);
  return out;
}

/** The nearest state containing both (never one of them), and the children of it on each side. */
function lift(source: Node, target: Node): { within: Node; from: Node; to: Node } {
  const a = ancestors(source);
  const b = ancestors(target);
  let i = 0;
  while (i < a.length - 1 && i < b.length - 1 && a[i + 1] === b[i + 1]) i++;
  if (source === target || a[i + 1] === undefined || b[i + 1] === undefined) {
    // a self-transition, or one to an ancestor: drawn as a loop on the source's branch
    const within = source.parent ?? source;
    const from = a[Math.max(1, i + 1)] ?? source;
    return { within, from, to: from };
  }
  return { within: a[i]!, from: a[i + 1]!, to: b[i + 1]! };
}

/** The child of `within` on the way to `node`. */
function targetBranch(within: Node, node: Node): Node {
  const chain = ancestors(node);
  return chain[chain.indexOf(within) + 1] ?? node;
}

function allTransitions(node: Node): Transition[] {
  return [...[...node.transitions.values()].flat(), ...(node.always ?? [])];
}

export function toMermaid(machine: AnyStateMachine): string {
  const root = machine.root as unknown as Node;
  // edges between the same two states are merged, their labels stacked (else they overlap)
  const drawn = new Map<Node, Map<string, string[]>>();
  const edge = (within: Node, line: string) => {
    const [arrow, label] = line.split(' : ') as [string, string];
    const edges = drawn.get(within) ?? new Map<string, string[]>();
    edges.set(arrow, [...(edges.get(arrow) ?? []), label]);
    drawn.set(within, edges);
  };
  // machine-level events handled without a change of state (recorded in context, forwarded)
  const everywhere: string[] = [];
  const visit = (node: Node) => {
    for (const t of allTransitions(node)) {
      if (node === root && !t.target?.length) {
        const guard = guardLabel(t.guard);
        const label = `${eventLabel(t.eventType)}${guard ? ` [${guard}]` : ''}`;
        if (!everywhere.includes(label)) everywhere.push(label);
        continue;
      }
      const targets = t.target?.length ? t.target : [t.source];
      if (node === root) {
        // a machine-level transition applies in every top-level state that is not final
        for (const target of targets) {
          for (const child of Object.values(root.states).filter((c) => c.type !== 'final' && !ancestors(target).includes(c))) {
            const guard = guardLabel(t.guard);
            edge(root, `${mermaidId(child)} --> ${mermaidId(targetBranch(root, target))} : ${eventLabel(t.eventType)}${guard ? ` [${guard}]` : ''}`);
          }
        }
        continue;
      }
      for (const target of targets) {
        const { within, from, to } = lift(t.source, target);
        const guard = guardLabel(t.guard);
        const realSource = from !== t.source ? ` (from ${t.source.key})` : '';
        edge(within, `${mermaidId(from)} --> ${mermaidId(to)} : ${eventLabel(t.eventType)}${guard ? ` [${guard}]` : ''}${realSource}`);
      }
    }
    Object.values(node.states).forEach(visit);
  };
  visit(root);

  const lines: string[] = ['stateDiagram-v2'];
  const block = (node: Node, indent: string) => {
    const children = Object.values(node.states);
    for (const child of children) {
      if (child.key !== mermaidId(child)) lines.push(`${indent}state "${child.key}" as ${mermaidId(child)}`);
    }
    const initial = node.initial?.target?.[0];
    if (initial) lines.push(`${indent}[*] --> ${mermaidId(initial)}`);
    for (const child of children) {
      if (Object.keys(child.states).length > 0) {
        lines.push(`${indent}state ${mermaidId(child)} {`);
        block(child, `${indent}  `);
        lines.push(`${indent}}`);
      }
      if (child.type === 'final') lines.push(`${indent}${mermaidId(child)} --> [*]`);
    }
    for (const [arrow, labels] of drawn.get(node) ?? []) lines.push(`${indent}${arrow} : ${labels.join('<br/>')}`);
  };
  block(root, '  ');
  const first = root.initial?.target?.[0];
  if (everywhere.length > 0 && first) {
    lines.push(`  note right of ${mermaidId(targetBranch(root, first))}`, `    in every state: ${everywhere.join(', ')}`, '  end note');
  }
  return `${lines.join('\n')}\n`;
}

export interface GraphJson {
  machine: string;
  initial: string | null;
  states: Array<{ id: string; type: string; parent: string | null; initial: string | null }>;
  transitions: Array<{ source: string; event: string; targets: string[]; guard: string | null; reenter: boolean }>;
}

export function toGraphJson(machine: AnyStateMachine): GraphJson {
  const root = machine.root as unknown as Node;
  const states: GraphJson['states'] = [];
  const transitions: GraphJson['transitions'] = [];
  const visit = (node: Node) => {
    states.push({ id: node.id, type: node.type, parent: node.parent?.id ?? null, initial: node.initial?.target?.[0]?.id ?? null });
    for (const t of allTransitions(node)) {
      transitions.push({
        source: node.id,
        event: t.eventType === '' ? '(always)' : t.eventType,
        targets: (t.target ?? []).map((x) => x.id),
        guard: guardLabel(t.guard),
        reenter: t.reenter === true,
      });
    }
    Object.values(node.states).forEach(visit);
  };
  visit(root);
  return { machine: root.id, initial: root.initial?.target?.[0]?.id ?? null, states, transitions };
}
