/**
 * XState's private API as this project uses it (actors/xstateInternals.ts). After an XState
 * upgrade this is the test that says which private member changed, before anything else fails
 * in a way that is hard to read.
 */
import { describe, expect, it } from 'vitest';
import { createActor, createMachine, fromCallback, setup, type AnyActorRef } from 'xstate';
import { internalSystem, parentOf, relay, scheduledEvents } from '../../actors/xstateInternals.js';
import { installIndexedScheduler } from '../../actors/scheduler.js';

describe('the XState internals a2a relies on', () => {
  it('should find every private member of an actor system: the scheduler, the scheduled events, the clock, the relay', () => {
    const actor = createActor(createMachine({}));
    expect(internalSystem(actor.system).missing).toEqual([]);
    expect(internalSystem({ scheduler: {} }).missing).toEqual(['system.scheduler', 'system._snapshot._scheduledEvents', 'system._clock', 'system._relay']);
  });

  it('should see a delayed event in the scheduled events, and its source and target', () => {
    const machine = createMachine({ initial: 'a', states: { a: { after: { 60_000: 'b' } }, b: {} } });
    const actor = createActor(machine).start();
    const events = Object.values(scheduledEvents(actor.system));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ delay: 60_000, source: actor, target: actor, event: { type: expect.stringContaining('xstate.after') } });
    expect(typeof events[0]!.startedAt).toBe('number');
    actor.stop();
  });

  it('should relay an event with its source (the inspector sees who sent it), and name a child\'s parent', () => {
    const seen: Array<{ source: unknown; type: string }> = [];
    const parent = createActor(
      setup({ actors: { child: fromCallback(() => () => {}) } }).createMachine({ invoke: { id: 'child', src: 'child' }, on: { PING: {} } }),
      { inspect: (e) => void (e.type === '@xstate.event' && e.event.type === 'PING' && seen.push({ source: e.sourceRef, type: e.event.type })) },
    ).start();
    const child = parent.getSnapshot().children.child as AnyActorRef;
    expect(parentOf(child)).toBe(parent);
    relay(child, parent, { type: 'PING' });
    expect(seen).toEqual([{ source: child, type: 'PING' }]);
    parent.stop();
  });

  it('should install the indexed scheduler on a fresh system', () => {
    const actor = createActor(createMachine({}));
    expect(installIndexedScheduler(actor.system)).toBe(true);
    expect(installIndexedScheduler({})).toBe(false);
  });
});
