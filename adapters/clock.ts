/** The real clock: wall time and Node timers. Tests use xstate's `SimulatedClock` instead. */
import type { Clock } from '../machines/ports.js';

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
};
