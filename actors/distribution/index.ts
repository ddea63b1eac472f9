/**
 * Distribution: sessions in other actor systems (a stand-in here, the session on a host, over
 * NATS subjects) and a process's mailboxes, one durable consumer per box.
 *
 * mailbox.ts, remote.ts, runBoxes.ts (the runs' boxes, slots reused from run to run)
 */
export * from './mailbox.js';
export * from './remote.js';
export * from './runBoxes.js';
