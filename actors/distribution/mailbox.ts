/**
 * A process's mailboxes: what reaches the sessions and stand-ins of one process over the durable
 * `up` and `down` queues, read through one consumer per queue made once for the process (not one
 * per session: on a cluster each consumer is a RAFT group, and making two per remote session cost
 * a leader election on every spawn and grew the servers by tens of MB a minute).
 *
 *   a2a.<ns>.up.<box>.<host>.<runId>.<sessionId>     a report to the owner in mailbox <box>
 *   a2a.<ns>.down.<box>.<runId>.<sessionId>          a command to the session in mailbox <box>
 *
 * A box is a run's `rs<n>` (a run's process: it owns the workers; a slot reused from run to run,
 * runBoxes.ts) or `h-<hostId>` (a host: it runs sessions and owns their remote children). Inside the process each message goes to the actor
 * registered for its session (its wire id); one for no actor here is a stray, handed to the
 * process's stray policy: a host forwards it to the box of the host that holds the session now
 * (a session moved after a failover), waits for a session being restored, or drops what is about
 * a session that has finished. A dead host's boxes are read by the hosts that take its sessions
 * over, through the same consumers (they are durable: joined, not made again), until they are
 * empty; nothing addressed to a dead process is left unread.
 */
import type { DurableConsumer, DurableMessage, Transport } from '../../machines/ports.js';
import { isA2AError } from '../errors.js';

export type MailKind = 'up' | 'down';

/** A message taken out of a box, with where it was addressed. */
export interface Parcel {
  kind: MailKind;
  box: string;
  /** For `up`: the host that sent it (the subject's token after the box). */
  host: string | null;
  wire: string;
  message: DurableMessage;
}

/** What is done with a message for no actor of this process (see the header). */
export type StrayPolicy = (parcel: Parcel) => Promise<void>;

/**
 * The header naming the host that sent a report first, on a report forwarded by another host (to
 * where its owner is now): the subject names the forwarding host, the only one it may publish as.
 */
export const FORWARDED_FROM = 'a2a-from';

/** The box of a run's process before run boxes were slots (runBoxes.ts: a spec that names none), and of a host. */
export const runBox = (runId: string) => `r-${runId}`;
export const hostBox = (hostId: string) => `h-${hostId}`;

/**
 * How long an acknowledgement may wait (for the snapshot that holds what a message did) before the
 * message comes back: a report to an owner that died comes back this soon to the host that takes
 * the owner's tree over (5 s), a command to a session that died 10 s after it was delivered.
 */
const ACK_WAIT_MS: Record<MailKind, number> = { up: 5_000, down: 10_000 };
/** Messages delivered and not yet acknowledged, across all the sessions of a process. */
const MAX_IN_FLIGHT = 4_096;
/**
 * A box nobody reads for this long is removed by the server (a host gone for good, a run never
 * resumed); its messages stay in the queue, and a reader that comes back makes it again.
 */
const BOX_IDLE_MS = 3_600_000;
/** Ended sessions remembered per kind: what comes for them later is acknowledged at once. */
const ENDED_KEPT = 4_096;
/** How often a message for no known actor comes back (1 s apart) before it is dropped, under the default policy. */
const UNKNOWN_DELIVERIES = 30;

type Handler = (message: DurableMessage) => void | Promise<void>;

export class Mailbox {
  readonly box: string;
  readonly #transport: Transport;
  readonly #ns: string;
  readonly #handlers = { up: new Map<string, Handler>(), down: new Map<string, Handler>() };
  readonly #ended = { up: new Set<string>(), down: new Set<string>() };
  readonly #consumers = new Map<string, Promise<DurableConsumer>>();
  /** Other boxes read here (a dead host's), by box. */
  readonly #others = new Map<string, Promise<DurableConsumer[]>>();
  #stopped = false;
  /** Set by the process (a host's forwards and waits); the default waits, then drops with `onDrop`. */
  stray: StrayPolicy;
  /**
   * A run's box: the run that reads it now. What comes for another run (the box's run before this
   * one, which ended: a late report) is acknowledged and dropped unsaid (runBoxes.ts).
   */
  occupant: string | null = null;
  onDrop: (parcel: Parcel, why: string) => void = () => {};

  constructor(transport: Transport, ns: string, box: string) {
    this.#transport = transport;
    this.#ns = ns;
    this.box = box;
    this.stray = async (parcel) => {
      if (parcel.message.deliveries < UNKNOWN_DELIVERIES) return parcel.message.nak(1_000);
      this.onDrop(parcel, `no session ${parcel.wire} is here (it ended, or never was)`);
      await parcel.message.ack();
    };
  }

  /** The subject of a message of `kind` for session `wire` in box `box` (`host`: the sender of a report). */
  static subject(ns: string, kind: MailKind, box: string, wire: string, host?: string): string {
    return kind === 'up' ? `a2a.${ns}.up.${box}.${host}.${wire}` : `a2a.${ns}.down.${box}.${wire}`;
  }

  /** Where a subject addresses its message; null when it is not a mailbox subject of this namespace. */
  static parse(ns: string, subject: string): { kind: MailKind; box: string; host: string | null; wire: string } | null {
    const tokens = subject.split('.');
    if (tokens[0] !== 'a2a' || tokens[1] !== ns) return null;
    const kind = tokens[2];
    if (kind === 'up' && tokens.length >= 7) return { kind, box: tokens[3]!, host: tokens[4]!, wire: tokens.slice(5).join('.') };
    if (kind === 'down' && tokens.length >= 6) return { kind, box: tokens[3]!, host: null, wire: tokens.slice(4).join('.') };
    return null;
  }

  /**
   * Hands what comes for session `wire` to `handler` until the returned function is called; resolves
   * once the box is read (its consumer made or joined).
   */
  async register(kind: MailKind, wire: string, handler: Handler): Promise<() => void> {
    this.#handlers[kind].set(wire, handler);
    this.#ended[kind].delete(wire);
    const off = () => {
      if (this.#handlers[kind].get(wire) === handler) this.#handlers[kind].delete(wire);
    };
    try {
      await this.#read(kind, this.box);
    } catch (error) {
      off();
      throw error;
    }
    return off;
  }

  /** Session `wire` ended here: what still comes for it is acknowledged and dropped. */
  ended(kind: MailKind, wire: string): void {
    this.#handlers[kind].delete(wire);
    const ended = this.#ended[kind];
    ended.add(wire);
    if (ended.size > ENDED_KEPT) ended.delete(ended.values().next().value as string);
  }

  /** Whether an actor of this process takes what comes for `wire`. */
  has(kind: MailKind, wire: string): boolean {
    return this.#handlers[kind].has(wire);
  }

  /** Reads this box of `kind` (at a process's start: what is forwarded here is read before any session registers). */
  async open(kind: MailKind): Promise<void> {
    await this.#read(kind, this.box);
  }

  /**
   * Reads another process's boxes too (a dead host's: its sessions are being taken over here), with
   * the same routing: what is for an actor here is handed to it, the rest goes to the stray policy.
   */
  readOther(box: string): void {
    if (box === this.box || this.#others.has(box) || this.#stopped) return;
    // joined, never made: a box is its process's to make (with per-host users, only its host may);
    // one that is not there (never made, or removed after an hour idle) holds nothing to read
    const join = (kind: MailKind) => this.#consume(kind, box, true).catch((error: unknown) => (isA2AError(error, 'NOT_FOUND') ? null : Promise.reject(error)));
    const reading = Promise.all((['up', 'down'] as const).map(join)).then((list) => list.filter((c): c is DurableConsumer => c !== null));
    reading.catch(() => this.#others.delete(box));
    this.#others.set(box, reading);
  }

  /**
   * Stops reading box `box` (its process is back, or its boxes are empty). Its consumers stay on
   * the server: they are its process's, which alone may remove them (per-host users); the server
   * removes them after an hour unread.
   */
  async stopReading(box: string): Promise<void> {
    const reading = this.#others.get(box);
    this.#others.delete(box);
    for (const consumer of (await reading?.catch(() => [])) ?? []) await consumer.stop().catch(() => undefined);
  }

  /** The boxes read here for others, and what is still in them (not delivered, or not acknowledged). */
  async othersPending(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const [box, reading] of this.#others) {
      const consumers = await reading.catch(() => null);
      if (!consumers) continue;
      let n = 0;
      for (const c of consumers) n += await c.pending().catch(() => 1);
      out.set(box, n);
    }
    return out;
  }

  /**
   * Stops reading. `remove`: this process's own boxes leave the server too (a run that ended, a
   * host that stopped): what they still hold stays queued for a reader that comes later.
   */
  async stop(options: { remove?: boolean } = {}): Promise<void> {
    this.#stopped = true;
    // a process started again on this connection (tests, a program) gets a new one
    const byBox = boxes.get(this.#transport);
    if (byBox?.get(`${this.#ns}\u0000${this.box}`) === this) byBox.delete(`${this.#ns}\u0000${this.box}`);
    const own = [...this.#consumers.values()];
    const others = [...this.#others.values()];
    this.#consumers.clear();
    this.#others.clear();
    for (const reading of own) {
      const consumer = await reading.catch(() => null);
      if (consumer) await (options.remove ? consumer.remove() : consumer.stop()).catch(() => undefined);
    }
    for (const reading of others) for (const consumer of (await reading.catch(() => [])) ?? []) await consumer.stop().catch(() => undefined);
  }

  #read(kind: MailKind, box: string): Promise<DurableConsumer> {
    const key = `${kind}:${box}`;
    let reading = this.#consumers.get(key);
    if (!reading) {
      reading = this.#consume(kind, box);
      reading.catch(() => this.#consumers.delete(key));
      this.#consumers.set(key, reading);
    }
    return reading;
  }

  #consume(kind: MailKind, box: string, join = false): Promise<DurableConsumer> {
    const filter = kind === 'up' ? `a2a.${this.#ns}.up.${box}.>` : `a2a.${this.#ns}.down.${box}.>`;
    return this.#transport.consume(
      kind,
      { consumer: `${kind}-${box}`, filter, ackWaitMs: ACK_WAIT_MS[kind], maxInFlight: MAX_IN_FLIGHT, inactiveMs: BOX_IDLE_MS, ...(join ? { join } : {}) },
      (message) => this.#dispatch(message),
    );
  }

  async #dispatch(message: DurableMessage): Promise<void> {
    const where = Mailbox.parse(this.#ns, message.subject);
    if (!where) {
      // not a mailbox subject (a foreign publisher on the queue): nothing can take it
      this.onDrop({ kind: 'down', box: '?', host: null, wire: '?', message }, `it came on ${message.subject}, which is not a mailbox subject`);
      await message.ack();
      return;
    }
    const handler = this.#handlers[where.kind].get(where.wire);
    if (handler) return handler(message);
    if (this.occupant !== null && !where.wire.startsWith(`${this.occupant}.`)) return message.ack();
    if (this.#ended[where.kind].has(where.wire)) return message.ack();
    await this.stray({ ...where, message });
  }
}

const boxes = new WeakMap<Transport, Map<string, Mailbox>>();

/** The mailbox `box` of namespace `ns` on this connection, made once (the actors of a process share it). */
export function mailboxOf(transport: Transport, ns: string, box: string): Mailbox {
  let byBox = boxes.get(transport);
  if (!byBox) boxes.set(transport, (byBox = new Map()));
  const key = `${ns}\u0000${box}`;
  let mailbox = byBox.get(key);
  if (!mailbox) byBox.set(key, (mailbox = new Mailbox(transport, ns, box)));
  return mailbox;
}
