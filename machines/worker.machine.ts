/**
 * A worker: the agent session the orchestrator deploys for one plan task (depth 0). It shares the
 * session chart with sub-tasks; a tripped circuit breaker pauses it (`running.paused`) until the
 * orchestrator or a human sends `RESUME`.
 */
import { createSessionMachine } from './session.js';

export const workerMachine = createSessionMachine('worker');
