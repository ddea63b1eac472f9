/**
 * Sessions in other actor systems. A supervisor places a child locally or remotely; a remote
 * child is, in the owner's system, a `remoteSession` actor that stands for it:
 *
 *   owner process (box r-<run> or h-<host>)          host process (box h-<host>)
 *   supervisor ── remoteSession(st-3) ──spawn──▶ a2a.<ns>.spawn.<agent> ──▶ host ── parentLink ── session st-3
 *                      ▲                                                                 │
 *                      └── a2a.<ns>.up.<owner box>.<host>.<run>.st-3 (updates, requests, result) ◀┘
 *                      └── a2a.<ns>.down.<host box>.<run>.st-3 (cancel, messages, decisions) ──▶
 *
 * To the supervisor a remote child is an ordinary child actor: what it sends its parent arrives as
 * if the session had sent it, its result completes the actor (so the supervisor's delivery rule
 * holds: exactly one result per child), and what the supervisor sends it goes down to the session.
 * Every channel is a durable queue (JetStream over NATS): a message survives a restart of either
 * side or of the server, and is acknowledged once handed over. Each process reads its own box of
 * each queue through one consumer (actors/distribution/mailbox.ts), and each message names the box of the
 * process that holds its addressee now: the host that holds a session (its record in the snapshots
 * bucket), the host that holds the owner's tree, or the run's process. Every message is validated
 * on arrival; an invalid one is reported and dropped without changing anything.
 *
 * wire.ts: keys, subjects, queues and sending; standIn.ts: the owner's side; parentLink.ts: the host's side.
 */
export * from './wire.js';
export * from './standIn.js';
export * from './parentLink.js';
