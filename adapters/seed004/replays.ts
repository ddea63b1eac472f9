/**
 * The seed 004 message ids a gateway has already handled, per sender, so that a message seen
 * again (the same `message_id` from the same agent: a replay, a duplicate delivery, a client that
 * retries) is dropped instead of taking effect twice. Core NATS delivers at most once, but anyone
 * who may publish on an agent's subject can send a recorded message again.
 *
 * Bounded: the latest `perSender` ids of each sender, and `total` ids in all; past that the
 * oldest ids of the sender heard from least recently go first. A replay older than what is kept
 * is not recognised (the spec's ids are UUIDs: a sender never reuses one on purpose).
 */
export type ReplayCheck =
  /** Not seen before; remembered now. */
  | 'new'
  /** Seen before, and this is the first time it comes again: worth one log line. */
  | 'replay'
  /** Seen before and already reported as a replay: dropped silently. */
  | 'replay-again';

export interface ReplayGuardOptions {
  /** Ids kept per sender (default 4096: over a day of heartbeats every 30 s). */
  perSender?: number;
  /** Ids kept in all (default 65536). */
  total?: number;
}

export class ReplayGuard {
  readonly #perSender: number;
  readonly #total: number;
  /** Sender → its ids (oldest first) → whether a replay of it was reported; senders heard from least recently first. */
  readonly #bySender = new Map<string, Map<string, boolean>>();
  #size = 0;

  constructor(options: ReplayGuardOptions = {}) {
    this.#perSender = Math.max(1, options.perSender ?? 4096);
    this.#total = Math.max(this.#perSender, options.total ?? 65_536);
  }

  /** How many ids are remembered now. */
  get size(): number {
    return this.#size;
  }

  check(sender: string, messageId: string): ReplayCheck {
    let ids = this.#bySender.get(sender);
    if (ids) this.#bySender.delete(sender);
    else ids = new Map();
    // re-inserted: the map's order is the order senders were last heard from
    this.#bySender.set(sender, ids);
    const reported = ids.get(messageId);
    if (reported === true) return 'replay-again';
    if (reported === false) {
      ids.set(messageId, true);
      return 'replay';
    }
    ids.set(messageId, false);
    this.#size += 1;
    if (ids.size > this.#perSender) this.#dropOldest(sender, ids);
    while (this.#size > this.#total) {
      const [oldest, itsIds] = this.#bySender.entries().next().value as [string, Map<string, boolean>];
      this.#dropOldest(oldest, itsIds);
    }
    return 'new';
  }

  #dropOldest(sender: string, ids: Map<string, boolean>): void {
    const first = ids.keys().next();
    if (!first.done) {
      ids.delete(first.value);
      this.#size -= 1;
    }
    if (ids.size === 0) this.#bySender.delete(sender);
  }
}
