/**
 * An agent session: the statechart shared by workers (depth 0, owned by the orchestrator) and
 * sub-tasks (depth >= 1, owned by the session that spawned them). `worker.machine.ts` and
 * `subtask.machine.ts` build their machines from this; they differ in one place only: what a
 * tripped circuit breaker does (a worker pauses until resumed, a sub-task fails so that its
 * parent decides).
 *
 * The agent loop is drawn as states: `thinking` (one model call) → `usingTools` (one tool call
 * at a time) → `thinking` …; a turn without tool calls leaves the session `idle` (never
 * completed) or `awaitingUpdates` when children are still running. Child results reach the
 * session as `UPDATES_AVAILABLE` batches from its `subtasks` supervisor and are injected before
 * the next model call (parent wake-up). Every final state carries exactly one result, which is
 * this actor's output and so reaches the owner as the `xstate.done.actor` event.
 */
import { emptyUsage, freshHealth, freshMeta, noHelpers, noPerms, noWaits, result, sessionSetup } from './session.setup.js';

// its types and helpers, for those who import them from the chart's module
export * from './session.setup.js';

/**
 * Builds the chart. What a tripped circuit breaker (or a spent budget) does is the only
 * difference between a worker (it pauses until resumed) and a sub-task (it fails).
 */
export function createSessionMachine(id: 'worker' | 'subtask') {
  const pausable = id === 'worker';
  return sessionSetup.createMachine({
    id,
    context: ({ input }) => ({
      spec: input.spec,
      messages: [],
      inbox: input.inbox ?? [],
      batch: null,
      pendingCalls: [],
      lastText: '',
      turns: 0,
      usage: emptyUsage,
      live: 0,
      health: freshHealth,
      changes: {},
      perms: noPerms,
      waits: noWaits,
      meta: freshMeta,
      has: noHelpers,
      result: null,
    }),
    // A session is created when it may run: a spawn that finds no free slot waits in its
    // supervisor as a spec, and its actor is created when a slot frees.
    initial: 'running',
    output: ({ context }) => context.result ?? result(context, 'failed', { error: 'ended without a result', fallback: true }),
    states: {
      running: {
        // leaving `running` (an end, a cancel, a reinitialization) aborts the step in flight
        exit: 'abortStep',
        on: {
          CANCEL: 'cancelled',
          TIMEOUT: 'timedOut',
          'xstate.done.actor.idleInquiry': [
            {
              guard: { type: 'inquiryExhausted', params: ({ event }) => event.output },
              target: 'completed',
              actions: { type: 'recordExhaustedCompletion', params: ({ event }) => event.output },
            },
            { target: 'failed', actions: { type: 'failWith', params: { reason: 'unresponsive after idle inquiry' } } },
          ],
          'xstate.error.actor.idleInquiry': {
            target: 'failed',
            actions: { type: 'failWithChildError', params: ({ event }) => ({ child: 'idleInquiry', error: event.error }) },
          },
          MESSAGE: { actions: ['queueMessage', 'resetHealth'] },
          UPDATES_AVAILABLE: { actions: 'holdBatch' },
          IDLE_INQUIRY: { actions: 'queueInquiry' },
          // a descendant's permission: decided here within this session's level, else passed up
          CHILD_PERMISSION_REQUEST: [
            {
              guard: { type: 'withinOwnLevel', params: ({ event }) => event.request },
              actions: { type: 'approveForChild', params: ({ event }) => event.request },
            },
            { actions: { type: 'passUp', params: ({ event }) => event.request } },
          ],
          PERMISSION_DECIDED: {
            guard: { type: 'routedHere', params: ({ event }) => event.decision },
            actions: { type: 'passDown', params: ({ event }) => event.decision },
          },
          REASSIGN: { actions: 'reassign' },
          SWITCH_MODEL: { actions: 'switchModel' },
          REINITIALIZE: { target: '#' + id + '.running', reenter: true, actions: 'reinitialize' },
          'xstate.error.actor.subtasks': {
            target: 'failed',
            actions: { type: 'failWithChildError', params: ({ event }) => ({ child: 'subtasks', error: event.error }) },
          },
        },
        initial: 'thinking',
        states: {
          thinking: {
            entry: 'sendModelRequest',
            always: {
              guard: 'turnLimitReached',
              target: '#' + id + '.failed',
              actions: { type: 'failWith', params: { reason: 'turn limit reached without a2a_subtask_complete' } },
            },
            on: {
              // the reply and the tool calls run in the same step (`ran`): the last one may spawn,
              // await or complete; otherwise the turn goes on as after any tool call (`nextTool`)
              MODEL_REPLIED: [
                {
                  guard: { type: 'effectIs', params: ({ event }) => ({ outcome: event.ran?.at(-1), kind: 'spawn' as const }) },
                  target: 'spawning',
                  actions: [
                    { type: 'recordReply', params: ({ event }) => event.output },
                    { type: 'recordRan', params: ({ event }) => event.ran },
                    { type: 'requestSpawn', params: ({ event }) => event.ran!.at(-1)! },
                  ],
                },
                {
                  guard: { type: 'effectIs', params: ({ event }) => ({ outcome: event.ran?.at(-1), kind: 'await' as const }) },
                  target: 'awaitingChildren',
                  actions: [
                    { type: 'recordReply', params: ({ event }) => event.output },
                    { type: 'recordRan', params: ({ event }) => event.ran },
                    { type: 'startAwait', params: ({ event }) => event.ran!.at(-1)! },
                  ],
                },
                {
                  guard: { type: 'effectIs', params: ({ event }) => ({ outcome: event.ran?.at(-1), kind: 'complete' as const }) },
                  target: '#' + id + '.completed',
                  actions: [
                    { type: 'recordReply', params: ({ event }) => event.output },
                    { type: 'recordRan', params: ({ event }) => event.ran },
                    { type: 'recordCompletion', params: ({ event }) => event.ran!.at(-1)! },
                  ],
                },
                {
                  guard: { type: 'replyHasToolCalls', params: ({ event }) => event.output },
                  target: 'nextTool',
                  actions: [{ type: 'recordReply', params: ({ event }) => event.output }, { type: 'recordRan', params: ({ event }) => event.ran }],
                },
                {
                  guard: { type: 'inputArrivedDuringCall', params: ({ event }) => event.output },
                  target: 'thinking',
                  reenter: true,
                  actions: { type: 'recordReply', params: ({ event }) => event.output },
                },
                {
                  guard: 'hasLiveChildren',
                  target: 'awaitingUpdates',
                  actions: { type: 'recordReply', params: ({ event }) => event.output },
                },
                { target: 'idle', actions: { type: 'recordReply', params: ({ event }) => event.output } },
              ],
              MODEL_FAILED: {
                target: '#' + id + '.failed',
                actions: { type: 'failWithModelError', params: ({ event }) => ({ error: event.error }) },
              },
              RESTORED: { actions: 'sendModelRequest' },
              BUDGET_REACHED: pausable
                ? {
                    target: 'paused',
                    actions: { type: 'notifyBudget', params: ({ event }) => ({ scope: event.scope, limitUsd: event.limitUsd, spentUsd: event.spentUsd }) },
                  }
                : {
                    target: '#' + id + '.failed',
                    actions: {
                      type: 'failWith',
                      params: ({ event }) => ({ reason: `the ${event.scope} budget is spent ($${event.spentUsd.toFixed(4)} of $${event.limitUsd.toFixed(4)}): no further model calls` }),
                    },
                  },
            },
          },
          /**
           * Running one tool call of the turn (the agent loop executes it; it was asked on the way
           * in). Its effect's life: `intended` (the loop looks in the effect journal, and records
           * the intent of a call with effects) → `running` (it may act from here; its result is
           * recorded before TOOL_FINISHED) → the next step. A restored session whose call had
           * started and left no result is `inDoubt`: the call is not run again, the model is told
           * its outcome is unknown (or a person decides, `effects.inDoubt: ask`).
           */
          usingTools: {
            initial: 'intended',
            states: {
              intended: {
                on: {
                  EFFECT_STARTED: 'running',
                  EFFECT_IN_DOUBT: 'inDoubt',
                },
              },
              running: {},
              inDoubt: {
                // a person said to run it again
                on: { EFFECT_STARTED: 'running' },
              },
            },
            on: {
              PERMISSION_REQUIRED: [
                {
                  guard: { type: 'decidedThisStep', params: ({ event }) => event.requestId },
                  actions: { type: 'answerFromStep', params: ({ event }) => event.requestId },
                },
                {
                  target: 'waitingForPermission',
                  actions: { type: 'requestPermission', params: ({ event }) => ({ requestId: event.requestId, ask: event.ask }) },
                },
              ],
              PERMISSION_DECIDED: {
                guard: { type: 'isOwnRequest', params: ({ event }) => event.decision },
                actions: { type: 'keepDecision', params: ({ event }) => event.decision },
              },
              TOOL_FINISHED: [
                {
                  guard: { type: 'effectIs', params: ({ event }) => ({ outcome: event.outcome, kind: 'spawn' as const }) },
                  target: 'spawning',
                  actions: ['forgetStepDecisions', { type: 'requestSpawn', params: ({ event }) => event.outcome }],
                },
                {
                  guard: { type: 'effectIs', params: ({ event }) => ({ outcome: event.outcome, kind: 'await' as const }) },
                  target: 'awaitingChildren',
                  actions: ['forgetStepDecisions', { type: 'startAwait', params: ({ event }) => event.outcome }],
                },
                {
                  guard: { type: 'effectIs', params: ({ event }) => ({ outcome: event.outcome, kind: 'complete' as const }) },
                  target: '#' + id + '.completed',
                  actions: ['forgetStepDecisions', { type: 'recordCompletion', params: ({ event }) => event.outcome }],
                },
                { target: 'nextTool', actions: ['forgetStepDecisions', { type: 'recordToolOutcome', params: ({ event }) => event.outcome }] },
              ],
              TOOL_CRASHED: { target: 'nextTool', actions: ['forgetStepDecisions', { type: 'recordToolCrash', params: ({ event }) => ({ error: event.error }) }] },
              // the loop looks in the journal again: a result on record, an intent in doubt, or nothing yet
              RESTORED: { target: '.intended', actions: 'sendToolRequest' },
            },
          },
          /** The running tool needs a permission outside this session's level; its parent decides or passes it up. */
          waitingForPermission: {
            on: {
              PERMISSION_DECIDED: {
                guard: { type: 'isOwnRequest', params: ({ event }) => event.decision },
                target: 'usingTools.running',
                actions: { type: 'answerTool', params: ({ event }) => event.decision },
              },
              // a restored session lost the tool: run it again (it asks again, with the same request id)
              RESTORED: { target: 'usingTools', actions: 'sendToolRequest' },
            },
          },
          /** A spawn tool call waits for the supervisor to accept or refuse the children. */
          spawning: {
            on: {
              SPAWN_RESULT: [
                { guard: 'spawnAcceptedAndBlocking', target: 'awaitingChildren', actions: 'recordSpawnResult' },
                { target: 'nextTool', actions: 'recordSpawnResult' },
              ],
            },
          },
          /** After a tool call: the breaker, the turn's next call, or back to the model. */
          nextTool: {
            always: [
              { guard: 'stuck', actions: 'reportStuck' },
              pausable
                ? { guard: 'circuitOpen', target: 'paused', actions: 'notifyCircuitOpen' }
                : {
                    guard: 'circuitOpen',
                    target: '#' + id + '.failed',
                    actions: { type: 'failWith', params: { reason: 'circuit breaker open: too many consecutive tool failures' } },
                  },
              { guard: 'hasMoreCalls', target: 'usingTools', actions: 'sendToolRequest' },
              { target: 'thinking' },
            ],
          },
          awaitingChildren: {
            entry: 'watchAwaited',
            initial: 'waiting',
            states: {
              waiting: {
                after: { awaitTimeout: 'collectingPartial' },
              },
              collectingPartial: {
                entry: 'unwatch',
              },
            },
            on: {
              WATCH_SATISFIED: { target: '#' + id + '.running.nextTool', actions: 'recordAwaitResult' },
            },
          },
          awaitingUpdates: {
            on: {
              UPDATES_AVAILABLE: { target: 'thinking', actions: 'holdBatch' },
              MESSAGE: { target: 'thinking', actions: 'queueMessage' },
              REASSIGN: { target: 'thinking', actions: 'reassign' },
            },
          },
          idle: {
            entry: 'tellWatchdogIdle',
            exit: 'tellWatchdogBusy',
            after: { inquiryDue: { guard: 'noWatchdog', actions: 'startWatchdog' } },
            on: {
              UPDATES_AVAILABLE: { target: 'thinking', actions: 'holdBatch' },
              MESSAGE: { target: 'thinking', actions: 'queueMessage' },
              // new instructions wake a waiting session
              REASSIGN: { target: 'thinking', actions: 'reassign' },
              IDLE_INQUIRY: { target: 'thinking', actions: 'queueInquiry' },
            },
          },
          ...(pausable
            ? {
                /** The circuit breaker opened, or the budget is spent: nothing happens until RESUME. */
                paused: {
                  on: { RESUME: { target: 'thinking', actions: ['resumeAfterPause', 'resetHealth'] } },
                },
              }
            : {}),
        },
      },
      completed: {
        type: 'final',
      },
      failed: {
        type: 'final',
        entry: 'finishFailed',
      },
      cancelled: {
        type: 'final',
        entry: 'finishCancelled',
      },
      timedOut: {
        type: 'final',
        entry: 'finishTimedOut',
      },
    },
  });
}
