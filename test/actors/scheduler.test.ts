import { describe, expect, it } from 'vitest';
import { createActor, setup, SimulatedClock } from 'xstate';
import { createRootActor, installIndexedScheduler } from '../../actors/scheduler.js';

const timed = setup({}).createMachine({
  initial: 'waiting',
  states: { waiting: { after: { 1000: 'late' }, on: { GO: 'other' } }, late: {}, other: { after: { 50: 'waiting' } } },
});

describe('indexed scheduler', () => {
  it('should keep XState delayed transitions working: fire, cancel on exit, re-arm', () => {
    const clock = new SimulatedClock();
    const actor = createRootActor(timed, { clock });
    actor.start();
    clock.increment(500);
    actor.send({ type: 'GO' }); // leaves `waiting`: its timer is cancelled
    clock.increment(50);
    expect(actor.getSnapshot().value).toBe('waiting');
    clock.increment(999);
    expect(actor.getSnapshot().value).toBe('waiting');
    clock.increment(1);
    expect(actor.getSnapshot().value).toBe('late');
  });

  it('should cancel an actor\'s timers when it stops, and keep the persisted record in step', () => {
    const clock = new SimulatedClock();
    const parent = setup({ actors: { timed } }).createMachine({ invoke: { id: 'child', src: 'timed' }, on: { STOP: '.done' }, initial: 'on', states: { on: {}, done: { type: 'final' } } });
    const actor = createActor(parent, { clock });
    expect(installIndexedScheduler(actor.system)).toBe(true);
    actor.start();
    expect(Object.keys(actor.system.getSnapshot()._scheduledEvents)).toHaveLength(1);
    actor.send({ type: 'STOP' });
    expect(Object.keys(actor.system.getSnapshot()._scheduledEvents)).toHaveLength(0);
    expect((clock as unknown as { timeouts: Map<unknown, unknown> }).timeouts.size).toBe(0);
  });

  it('should refuse to replace a scheduler that already holds timers', () => {
    const clock = new SimulatedClock();
    const actor = createActor(timed, { clock });
    actor.start();
    expect(installIndexedScheduler(actor.system)).toBe(false);
  });
});
