/**
 * One task done by external agents that speak seed 004 (adapters/seed004/gateway.ts serves it on
 * a host, in place of an agent loop). To its owner it is an ordinary session: what the agent
 * reports goes up as `SUBTASK_UPDATE`s (progress as `status`, a clarification as a `question`),
 * the owner's answer (`MESSAGE`) goes back to the agent as a seed 004 `response`, `CANCEL` and
 * `TIMEOUT` cancel the agent's work, and the final state's output is the one `SubTaskResult`.
 *
 *   starting ─WIRE_READY─▶ choosingAgent ─AGENT_FOUND─▶ offered ─ack accepted─▶ working ─task_result─▶ completed
 *                              ▲    │ no agent in time        │ rejected            │ lost, error, task deadline
 *                              │    ▼                         │ (next agent)        ▼
 *                              │  failed ◀── attempts spent ──┴──── no ack ───▶ reassigning ─▶ backingOff
 *                              └─────────────────────────────── exponential backoff ──────────────┘
 *
 * Everything that talks to the world goes through the invoked `wire` actor (src `agentWire`):
 * the machine sends it `FIND_AGENT` (the gateway answers `AGENT_FOUND` with the least loaded
 * registered agent that has capacity), `OFFER`, `ANSWER`, `CANCEL_TASK`, `ASSIGNED`; it sends the
 * machine what the agents say (`AGENT_*`, each with the gateway's clock time `at`) and
 * `WIRE_READY` whenever it (re)starts: after a restore the machine asks again for what it was
 * waiting for. The task deadline is kept in context (`deadlineAt`, from those clock times), so a
 * restored session keeps its deadline.
 */
import { DEFAULT_EXTERNAL_TASK_CONFIG, ended, externalTaskSetup, type ExternalTaskConfig } from './externalTask.setup.js';

// its types and helpers, for those who import them from the chart's module
export * from './externalTask.setup.js';

export function createExternalTaskMachine(defaults: ExternalTaskConfig = DEFAULT_EXTERNAL_TASK_CONFIG) {
  /** How the agent holding the task can end its part, once offered or working. */
  const endsOfTheAgentsWork = {
    AGENT_RESULT: { guard: 'fromAgent', target: 'completed', actions: 'recordResult' },
    AGENT_ERROR: [
      { guard: 'recoverableFromAgent', target: 'reassigning', actions: 'markRecoverable' },
      { guard: 'fromAgent', target: 'failed', actions: ['cancelAgent', 'recordAgentFailure'] },
    ],
    AGENT_LOST: { guard: 'fromAgent', target: 'reassigning', actions: 'markLost' },
  } as const;
  return externalTaskSetup.createMachine({
    id: 'externalTask',
    context: ({ input }) => ({
      spec: input.spec,
      config: { ...defaults, ...input.config },
      agentId: null,
      attempts: 0,
      history: [],
      excluded: [],
      avoid: [],
      offerId: null,
      now: 0,
      deadlineAt: null,
      queries: [],
      held: [],
      seq: 0,
      reassignReason: '',
      result: null,
    }),
    invoke: { id: 'wire', src: 'agentWire', input: ({ context }) => ({ spec: context.spec }) },
    initial: 'starting',
    on: {
      WIRE_READY: { actions: ['noteTime', 'reattach'] },
      CANCEL: { target: '.cancelled', actions: ['cancelAgent', 'recordCancelled'] },
      TIMEOUT: { target: '.timedOut', actions: ['cancelAgent', 'recordTimedOut'] },
      // no agent works on it right now (working answers at once)
      MESSAGE: { actions: 'holdMessage' },
      'xstate.error.actor.wire': { target: '.failed', actions: 'recordWireError' },
    },
    states: {
      starting: {
        on: { WIRE_READY: { target: 'choosingAgent', actions: 'noteTime' } },
      },
      choosingAgent: {
        entry: 'findAgent',
        after: { agentWait: { target: 'failed', actions: 'recordNoAgent' } },
        on: {
          // restored: the request was lost with the old gateway
          WIRE_READY: { actions: ['noteTime', 'findAgent'] },
          AGENT_FOUND: { target: 'offered', actions: 'assignAgent' },
        },
      },
      offered: {
        entry: 'offerTask',
        after: { ackTimeout: { target: 'reassigning', actions: 'markNoAck' } },
        on: {
          AGENT_ACK: [
            { guard: 'acceptedByAgent', target: 'working', actions: 'startWorking' },
            { guard: 'rejectedByAgent', target: 'rejected', actions: 'noteTime' },
          ],
          // an agent may skip the acknowledgment and answer at once
          ...endsOfTheAgentsWork,
        },
      },
      /** The agent said no: the next agent, at once (it is not offered to this one again). */
      rejected: {
        always: [
          { guard: 'attemptsLeft', target: 'choosingAgent', actions: 'excludeAgent' },
          { target: 'failed', actions: 'recordRejectedLast' },
        ],
      },
      working: {
        after: { taskTimeout: { target: 'reassigning', actions: 'markTaskTimeout' } },
        on: {
          AGENT_PROGRESS: { guard: 'fromAgent', actions: 'forwardProgress' },
          AGENT_QUERY: { guard: 'fromAgent', actions: 'askOwner' },
          MESSAGE: { actions: 'answerAgent' },
          ...endsOfTheAgentsWork,
        },
      },
      /** The current agent is cancelled; the task goes to another agent after a backoff, or fails. */
      reassigning: {
        entry: 'reassign',
        always: [{ guard: 'attemptsLeft', target: 'backingOff' }, { target: 'failed', actions: 'recordGaveUp' }],
      },
      backingOff: {
        after: { backoff: 'choosingAgent' },
      },
      completed: { type: 'final' },
      failed: { type: 'final' },
      cancelled: { type: 'final' },
      timedOut: { type: 'final' },
    },
    output: ({ context }) => context.result ?? ended(context, 'failed', 'ended without a result'),
  });
}

/** The machine with the default timings (the gateway builds its own with `createExternalTaskMachine`). */
export const externalTaskMachine = createExternalTaskMachine();
export type ExternalTaskMachine = typeof externalTaskMachine;
