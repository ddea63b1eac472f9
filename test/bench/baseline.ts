/**
 * The raw-XState baseline the fan-out rows are compared with: N independent root actors of one
 * small machine, each started, sent one event that finishes it, and awaited, with no a2a code at
 * all. It is the floor under "N sub-tasks, each one model reply that completes": an actor created,
 * one event handled, a final state with an output.
 */
import { assign, createActor, setup } from 'xstate';

const leaf = setup({
  types: {
    context: {} as { prompt: string; text: string; turns: number },
    events: {} as { type: 'REPLY'; text: string },
    input: {} as { prompt: string },
    output: {} as { status: 'success'; output: string },
  },
}).createMachine({
  id: 'baseline',
  context: ({ input }) => ({ prompt: input.prompt, text: '', turns: 0 }),
  initial: 'thinking',
  output: ({ context }) => ({ status: 'success', output: context.text }),
  states: {
    thinking: {
      on: { REPLY: { target: 'done', actions: assign(({ context, event }) => ({ text: event.text, turns: context.turns + 1 })) } },
    },
    done: { type: 'final' },
  },
});

/** Wall time in ms of N root actors, one event each, all awaited (the event is sent from a microtask, as a reply would be). */
export async function rawXState(n: number): Promise<{ wallMs: number }> {
  const t0 = performance.now();
  const done: Array<Promise<void>> = [];
  for (let i = 0; i < n; i++) {
    const actor = createActor(leaf, { input: { prompt: `noop ${i}` } });
    done.push(
      new Promise<void>((resolve) => {
        actor.subscribe({ complete: () => resolve() });
      }),
    );
    actor.start();
    void Promise.resolve().then(() => actor.send({ type: 'REPLY', text: 'noop' }));
  }
  await Promise.all(done);
  return { wallMs: performance.now() - t0 };
}
