/**
 * Distribution: sessions in other actor systems (a stand-in here, the session on a host, over
 * NATS subjects) and a process's mailboxes, one durable consumer per box.
 *
 * mailbox.ts (a process's boxes), remote.ts (the picture) = wire.ts (keys, subjects, queues, sending)
 * + standIn.ts (the owner's side) + parentLink.ts (the host's side), runBoxes.ts (the runs' boxes,
 * slots reused from run to run)
 */
export * from './mailbox.js';
export * from './remote.js';
export * from './runBoxes.js';
