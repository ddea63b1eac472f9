/**
 * A sub-task: an agent session spawned by another session (depth >= 1), advisory and scoped by
 * its prompt and `expectedOutput`. It shares the session chart with workers; a tripped circuit
 * breaker fails it, so that its parent decides what to do next.
 */
import { createSessionMachine } from './session.js';

export const subtaskMachine = createSessionMachine('subtask');
