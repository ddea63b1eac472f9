/**
 * Paths through the machines' own graphs, for the model-based tests and `a2a graph`.
 *
 * For a machine, a `MachineModel` gives the events that can happen in a state (with the payload
 * variants that matter, the delayed `xstate.after.*` events and the done/error events of its
 * children), an abstraction of its snapshot that keeps the graph finite, inert doubles for what
 * it invokes, and the invariants every step must keep. Paths come from @xstate/graph: shortest
 * paths, simple paths (small graphs), and one path per edge of the chart (source state, event, target state)
 * reached by the shortest way, so that every transition is taken. test/model executes them against the real machines.
 */
import { getAdjacencyMap, getShortestPaths, getSimplePaths, getStateNodes, type StatePath } from '@xstate/graph';
import { createActor, type AnyActorRef, type AnyEventObject, type AnyStateMachine, type Snapshot } from 'xstate';

export type AnySnapshot = Snapshot<unknown> & { value: unknown; context: unknown; status: string; _nodes: Array<{ id: string }> };
export type ModelPath = StatePath<AnySnapshot, AnyEventObject>;

/** What a step's checks can see. */
export interface StepView {
  before: AnySnapshot;
  after: AnySnapshot;
  event: AnyEventObject;
  /** Events the machine sent to its children and parent during the step, by target id. */
  sent: Array<{ to: string; event: AnyEventObject }>;
  /** Done events the machine delivered to its parent so far (whole path). */
  doneEvents: AnyEventObject[];
}

export interface MachineModel {
  name: string;
  /** The machine under test, with its children replaced by inert doubles. */
  machine: AnyStateMachine;
  input: unknown;
  /** Events to try in a state (only those the state handles are used). */
  events(state: AnySnapshot): AnyEventObject[];
  /** An abstraction of the snapshot: equal strings are the same vertex of the graph. */
  serialize(state: AnySnapshot): string;
  /** Throws when a step breaks an invariant. */
  invariants(step: StepView): void;
  /**
   * What the machine asked of ports that are actions rather than actors (a session's agent
   * loop), since the last call: added to a step's `sent`.
   */
  takeSent?(): Array<{ to: string; event: AnyEventObject }>;
  /** Also enumerate simple paths (only for small graphs: their number grows exponentially). */
  simplePaths?: boolean;
  /**
   * Further inputs the machine is explored from (a branch that merges, one that opens a PR …):
   * transitions only some inputs reach are covered by the union of their paths. Variants are
   * explored by shortest paths and edges (simple paths only from `input`).
   */
  variants?: Array<{ label: string; input: unknown }>;
  /**
   * An event whose payload depends on context the abstraction leaves out (a counter) is rebuilt
   * from the concrete snapshot when a path is executed: the graph's vertex stands for many.
   */
  concretize?(event: AnyEventObject, state: AnySnapshot): AnyEventObject;
}

export interface TransitionKey {
  key: string;
  source: string;
  event: string;
}

export interface TransitionDef {
  source: { id: string; transitions: Map<string, TransitionDef[]>; always?: TransitionDef[] };
  eventType: string;
}

/** A stable name for a transition definition: source state, event, position among its siblings. */
export function transitionKey(t: TransitionDef): string {
  const source = t.source;
  if (t.eventType === '') return `${source.id} ⟶ (always #${(source.always ?? []).indexOf(t)})`;
  const siblings = source.transitions.get(t.eventType) ?? [];
  return `${source.id} ⟶ ${t.eventType} #${siblings.indexOf(t)}`;
}

/** Every state node (root included) and every transition (on, after, done/error, always). */
export function machineGraph(machine: AnyStateMachine): { states: string[]; transitions: TransitionKey[] } {
  const nodes = [machine.root, ...getStateNodes(machine)] as unknown as Array<TransitionDef['source'] & { type?: string }>;
  // a history node is a pseudo-state: a transition to it lands in the state it remembers, never in it
  const states = nodes.filter((n) => n.type !== 'history').map((n) => n.id);
  const transitions: TransitionKey[] = [];
  for (const node of nodes) {
    for (const defs of node.transitions.values()) for (const t of defs) transitions.push({ key: transitionKey(t), source: node.id, event: t.eventType });
    for (const t of node.always ?? []) transitions.push({ key: transitionKey(t), source: node.id, event: '(always)' });
  }
  return { states, transitions };
}

/** Events the snapshot's state nodes handle, so that each vertex only tries meaningful events. */
function handled(state: AnySnapshot): Set<string> {
  const types = new Set<string>();
  for (const node of state._nodes as unknown as Array<TransitionDef['source']>) for (const type of node.transitions.keys()) types.add(type);
  return types;
}

function eventsFor(model: MachineModel) {
  return (state: AnySnapshot) => {
    if (state.status !== 'active') return [];
    const types = handled(state);
    return model.events(state).filter((e) => types.has(e.type));
  };
}

export function describePath(path: ModelPath): string {
  const steps = path.steps.slice(1).map((s) => s.event.type.replace(/^xstate\.after\.([^.]+)\..*$/, 'after $1'));
  return `${steps.join(' → ') || '(initial)'} ⇒ ${JSON.stringify(path.state.value)}`;
}

/** A parent that records what a machine sends to it (its done event, `sendParent`). */
export function recordingParent(received: AnyEventObject[]) {
  return {
    transition: (s: Snapshot<undefined>, e: AnyEventObject) => {
      received.push(e);
      return s;
    },
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }) as Snapshot<undefined>,
    getPersistedSnapshot: (s: Snapshot<undefined>) => s,
  };
}

/**
 * The machine as plain logic whose transitions run with a scope whose `self` has a parent.
 * @xstate/graph traverses with a mock scope whose `self` has none, so `sendParent` (used by the
 * watchdog and the sessions) would throw during traversal. Actions are resolved, not executed.
 */
function traversable(machine: AnyStateMachine, input: unknown) {
  const parent = createActor(recordingParent([]) as never, { input: undefined }) as unknown as AnyActorRef;
  const self = createActor(machine, { parent, input: input as never });
  const scope = {
    self,
    id: 'traversal',
    sessionId: 'traversal',
    logger: () => {},
    defer: () => {},
    system: self.system,
    stopChild: () => {},
    emit: () => {},
    actionExecutor: () => {},
  };
  return {
    transition: (snapshot: unknown, event: AnyEventObject) => machine.transition(snapshot as never, event, scope as never),
    getInitialSnapshot: (_scope: unknown, i: unknown) => machine.getInitialSnapshot(scope as never, i as never),
    getPersistedSnapshot: (snapshot: unknown) => snapshot,
  };
}

export function generatePaths(model: MachineModel): { shortest: ModelPath[]; simple: ModelPath[]; edges: ModelPath[]; vertices: number } {
  const options = { events: eventsFor(model), serializeState: model.serialize, input: model.input } as never;
  const logic = traversable(model.machine, model.input) as never;
  const shortest = getShortestPaths(logic, options) as unknown as ModelPath[];
  const simple = model.simplePaths ? (getSimplePaths(logic, options) as unknown as ModelPath[]) : [];
  // One path per edge of the chart: the shortest path to the edge's source vertex, then its
  // event. Vertices that differ only in the context the abstraction keeps (counters, ids) have
  // the same outgoing edges at the chart level, so an edge is keyed by its source state, its event
  // (payload included) and its target state, and the shortest representative is kept: taking all
  // adjacency edges (50k for the worker) re-tests the same transitions thousands of times.
  const adjacency = getAdjacencyMap(logic, options) as unknown as Record<string, { state: AnySnapshot; transitions: Record<string, { event: AnyEventObject; state: AnySnapshot }> }>;
  const toVertex = new Map(shortest.map((p) => [model.serialize(p.state), p]));
  const byEdge = new Map<string, ModelPath>();
  for (const [vertex, { state: source, transitions }] of Object.entries(adjacency)) {
    const head = toVertex.get(vertex);
    if (!head) continue;
    for (const { event, state } of Object.values(transitions)) {
      const key = JSON.stringify([source.value, event, state.value, state.status]);
      const known = byEdge.get(key);
      if (known && known.weight <= head.weight + 1) continue;
      byEdge.set(key, { state, weight: head.weight + 1, steps: [...head.steps, { event, state }] });
    }
  }
  const edges = [...byEdge.values()];
  return { shortest, simple, edges, vertices: Object.keys(adjacency).length };
}
