/**
 * The idle watchdog of one session (seed 002, phase 3). It never marks a session done: after
 * `idleThresholdMs` of the session sitting idle plus an `inquiryDelayMs` grace period it asks the
 * session why ("complete, say what blocks you, report an error, or say what you are doing").
 * The session's answer goes to its parent as an `idle_response`; no answer within
 * `inquiryTimeoutMs` ends the watchdog as `unresponsive`, and the session is failed with
 * "unresponsive after idle inquiry". After `maxInquiries` answered inquiries without the session
 * finishing, the watchdog ends as `exhausted` and the session ends with a partial result.
 *
 * Time only passes in `idle`: a session running a tool, calling its model, awaiting children or
 * waiting for a permission is `busy`, never idle.
 *
 * A session starts its watchdog only when its first inquiry is due: once it has sat idle for
 * `idleThresholdMs` and the `inquiryDelayMs` grace period (one timer of its own until then: most
 * sessions never need a watchdog, and an idle one costs a timer, not a second actor: about 2.5 KB
 * less each, issue 38). Started with `inquiryDue`, the watchdog asks at once (`inquiring`), and
 * counts every later idle period itself.
 */
import { assign, sendParent, setup } from 'xstate';
import type { IdleConfig, IdleInquiryRequest } from './protocol/index.js';

export type IdleInquiryEvent =
  | { type: 'SESSION_BUSY' }
  | { type: 'SESSION_IDLE' }
  | { type: 'INQUIRY_ANSWERED' };

/** Sent to the watched session (the parent of this actor); its schema is in machines/protocol/. */
export type { IdleInquiryRequest } from './protocol/index.js';

export interface IdleInquiryOutput {
  reason: 'unresponsive' | 'exhausted';
  inquiries: number;
}

/** The watchdog's input: the session's idle settings, and whether its first inquiry is due already (the session sat idle through the threshold and the grace period). */
export type IdleInquiryInput = IdleConfig & { inquiryDue?: boolean };

export const idleInquiryMachine = setup({
  types: {
    input: {} as IdleInquiryInput,
    context: {} as IdleConfig & { startedDue: boolean; inquiries: number; endReason: IdleInquiryOutput['reason'] | null },
    events: {} as IdleInquiryEvent,
    output: {} as IdleInquiryOutput,
  },
  delays: {
    idleThreshold: ({ context }) => context.idleThresholdMs,
    inquiryDelay: ({ context }) => context.inquiryDelayMs,
    inquiryTimeout: ({ context }) => context.inquiryTimeoutMs,
  },
  guards: {
    inquiriesExhausted: ({ context }) => context.inquiries >= context.maxInquiries,
    startsDue: ({ context }) => context.startedDue,
  },
  actions: {
    sendInquiry: sendParent(
      ({ context }): IdleInquiryRequest => ({
        type: 'IDLE_INQUIRY',
        attempt: context.inquiries,
        maxInquiries: context.maxInquiries,
      }),
    ),
    countInquiry: assign({ inquiries: ({ context }) => context.inquiries + 1 }),
    markUnresponsive: assign({ endReason: 'unresponsive' as const }),
    markExhausted: assign({ endReason: 'exhausted' as const }),
  },
}).createMachine({
  id: 'idleInquiry',
  context: ({ input }) => ({
    idleThresholdMs: input.idleThresholdMs,
    inquiryDelayMs: input.inquiryDelayMs,
    inquiryTimeoutMs: input.inquiryTimeoutMs,
    maxInquiries: input.maxInquiries,
    startedDue: input.inquiryDue === true,
    inquiries: 0,
    endReason: null,
  }),
  initial: 'starting',
  states: {
    /** Started by a session whose first inquiry is due: it asks at once. */
    starting: {
      always: [
        { guard: 'startsDue', target: 'inquiring' },
        { target: 'busy' },
      ],
    },
    busy: {
      on: { SESSION_IDLE: 'idle' },
    },
    idle: {
      after: { idleThreshold: 'suspectedIdle' },
      on: { SESSION_BUSY: 'busy' },
    },
    suspectedIdle: {
      after: {
        inquiryDelay: [{ guard: 'inquiriesExhausted', target: 'exhausted' }, { target: 'inquiring' }],
      },
      on: { SESSION_BUSY: 'busy' },
    },
    inquiring: {
      entry: ['countInquiry', 'sendInquiry'],
      after: { inquiryTimeout: 'unresponsive' },
      on: { INQUIRY_ANSWERED: 'busy' },
    },
    unresponsive: { type: 'final', entry: 'markUnresponsive' },
    exhausted: { type: 'final', entry: 'markExhausted' },
  },
  output: ({ context }) => ({ reason: context.endReason ?? 'unresponsive', inquiries: context.inquiries }),
});
