/**
 * The idle watchdog (idleInquiry): idle periods, the grace delay, inquiries and their timeout; and its start when the session's first inquiry is due.
 */
import { idleInquiryMachine, type IdleInquiryEvent } from '../../../machines/idleInquiry.machine.js';
import type { MachineModel } from '../paths.js';
import { fail, type Sample } from './shared.js';

const watchdogConfig = { idleThresholdMs: 1000, inquiryDelayMs: 200, inquiryTimeoutMs: 3000, maxInquiries: 2 };

export const idleInquiryModel: MachineModel = {
  name: 'idleInquiry',
  machine: idleInquiryMachine,
  input: watchdogConfig,
  simplePaths: true,
  // started by a session whose first inquiry is due (it sat idle through the threshold and the grace period)
  variants: [{ label: 'inquiry due', input: { ...watchdogConfig, inquiryDue: true } }],
  events: (): Array<Sample<IdleInquiryEvent>> => [
    { type: 'SESSION_BUSY' },
    { type: 'SESSION_IDLE' },
    { type: 'INQUIRY_ANSWERED' },
    { type: 'xstate.after.idleThreshold.idleInquiry.idle' },
    { type: 'xstate.after.inquiryDelay.idleInquiry.suspectedIdle' },
    { type: 'xstate.after.inquiryTimeout.idleInquiry.inquiring' },
  ],
  serialize: (s) => JSON.stringify({ v: s.value, n: (s.context as { inquiries: number }).inquiries }),
  invariants: (step) => {
    const c = step.after.context as { inquiries: number; maxInquiries: number };
    if (c.inquiries > c.maxInquiries) fail(step, `${c.inquiries} inquiries, more than ${c.maxInquiries}`);
    const sentInquiry = step.sent.filter((s) => s.event.type === 'IDLE_INQUIRY');
    if (step.after.value === 'inquiring' && step.before.value !== 'inquiring') {
      if (sentInquiry.length !== 1 || (sentInquiry[0]!.event as unknown as { attempt: number }).attempt !== c.inquiries) fail(step, 'entered inquiring without sending exactly one inquiry');
    } else if (sentInquiry.length > 0) {
      fail(step, 'sent an inquiry without entering inquiring');
    }
    if (step.after.status === 'done') {
      const reason = (step.doneEvents[0]?.output as { reason?: string } | undefined)?.reason;
      if (step.doneEvents.length !== 1 || reason !== step.after.value) fail(step, `ended ${String(step.after.value)} but reported ${String(reason)}`);
    }
  },
};
