/**
 * Executes generated paths (actors/graph) against the real machines: each on a SimulatedClock,
 * as the child of a recording parent, checking the predicted state and the model's invariants
 * at every step, and recording which states and transitions were taken (from XState's
 * `@xstate.microstep` inspection events: @xstate/graph has no coverage API).
 */
import { createActor, SimulatedClock, type AnyActorRef, type AnyEventObject, type AnyStateMachine, type InspectionEvent } from 'xstate';
import {
  describePath,
  recordingParent,
  transitionKey,
  type AnySnapshot,
  type MachineModel,
  type ModelPath,
  type TransitionDef,
} from '../../actors/graph/paths.js';

export { describePath, generatePaths, machineGraph } from '../../actors/graph/paths.js';

/** Names a delayed event's delay and resolves it in the snapshot's context. */
function delayOf(machine: AnyStateMachine, eventType: string, snapshot: AnySnapshot): number | null {
  const match = /^xstate\.after\.([^.]+)\./.exec(eventType);
  if (!match) return null;
  const key = match[1]!;
  if (/^\d+$/.test(key)) return Number(key);
  const delay = (machine.implementations.delays as Record<string, unknown>)[key];
  return typeof delay === 'function' ? (delay as (a: { context: unknown }) => number)({ context: snapshot.context }) : Number(delay);
}

export interface Coverage {
  states: Set<string>;
  transitions: Set<string>;
}

/**
 * Runs a path against the real machine (as the child of a recording parent, on a simulated
 * clock): sends each event (or lets the clock fire a delayed one), checks that the state reached
 * is the one the graph predicted, and checks the model's invariants.
 */
export function executePath(model: MachineModel, path: ModelPath, coverage: Coverage): void {
  const clock = new SimulatedClock();
  const toParent: AnyEventObject[] = [];
  const parent = createActor(recordingParent(toParent) as never, { clock, input: undefined }) as unknown as AnyActorRef;
  const sent: Array<{ to: string; event: AnyEventObject }> = [];
  let actorRef: AnyActorRef | null = null;
  parent.system.inspect((e: InspectionEvent) => {
    // by id: the initial macrostep runs inside createActor, before `actorRef` is set
    if (e.type === '@xstate.microstep' && (e.actorRef === actorRef || (actorRef === null && (e.actorRef as AnyActorRef).id === 'under-test'))) {
      for (const t of (e as unknown as { _transitions: TransitionDef[] })._transitions) {
        coverage.transitions.add(transitionKey(t));
        // a transient state is the source of the eventless transition that leaves it
        if (t.eventType === '') coverage.states.add(t.source.id);
      }
      // transient states (left by an eventless transition) are only seen in microsteps
      for (const n of (e.snapshot as unknown as AnySnapshot)._nodes ?? []) coverage.states.add(n.id);
    }
    if (e.type === '@xstate.event' && e.sourceRef === actorRef && actorRef) sent.push({ to: (e.actorRef as AnyActorRef).id, event: e.event });
  });
  parent.start();
  const actor = createActor(model.machine, { input: model.input as never, parent, id: 'under-test', clock });
  actorRef = actor;
  actor.start();
  const visit = (s: AnySnapshot) => s._nodes.forEach((n) => coverage.states.add(n.id));
  let before = actor.getSnapshot() as AnySnapshot;
  visit(before);
  const describe = describePath(path);
  if (model.serialize(before) !== model.serialize(path.steps[0]?.state ?? before)) {
    throw new Error(`${describe}: initial state ${model.serialize(before)} differs from the graph's`);
  }
  for (const [i, step] of path.steps.entries()) {
    if (i === 0 && step.event.type === 'xstate.init') continue;
    sent.length = 0;
    model.takeSent?.();
    const delay = delayOf(model.machine, step.event.type, before);
    if (delay !== null) clock.increment(delay);
    else actor.send(model.concretize ? model.concretize(step.event, before) : step.event);
    const after = actor.getSnapshot() as AnySnapshot;
    visit(after);
    const expected = model.serialize(step.state);
    const actual = model.serialize(after);
    if (actual !== expected) {
      throw new Error(`${describe}\n  step ${i} (${step.event.type}) reached\n    ${actual}\n  but the graph predicted\n    ${expected}`);
    }
    model.invariants({ before, after, event: step.event, sent: [...sent, ...(model.takeSent?.() ?? [])], doneEvents: toParent.filter((e) => e.type.startsWith('xstate.done.actor.')) });
    before = after;
  }
  parent.stop();
}
