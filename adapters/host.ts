/**
 * A headless actor host (`a2a host`): it serves some agent types for every run of a namespace.
 *
 * - **Registration and liveness**: it publishes a heartbeat (agent types, capacity, load, the
 *   sessions it runs) every `heartbeatMs` and keeps it in the hosts bucket.
 * - **Work**: it takes spawn requests for its agent types from the durable spawn queue, at most
 *   `concurrency` at a time (one host per spawn: the queue is shared), claims each session in the
 *   snapshots bucket (compare-and-set, so that a session runs once), and runs it as a local actor
 *   under a parent link that talks to its owner.
 * - **Snapshots**: each session's actor tree and timers are written to the snapshots bucket after
 *   it changes (throttled by their cost); down messages are acknowledged once a snapshot holds them.
 * - **Failover**: a host whose heartbeat stops (or that released its sessions while draining) has
 *   its sessions restored here from their last snapshot, by whichever live host serving the agent
 *   type claims them first.
 * - **Drain** (SIGTERM): it stops taking work, lets running sessions finish for `drainMs`, then
 *   releases the rest (last snapshot, marked released) for other hosts to take over.
 *
 * Over 600 lines, for a reason: one class, `Host`, whose private state (the sessions running here,
 * the claims announced, the hosts heard, its mailbox, its records' heads) is read by every part of
 * it: claiming, snapshots, failover, strays and drain. Split into modules, that state would have to
 * be made public or passed to each.
 */
import type { AnyActorLogic, AnyActorRef } from 'xstate';
import type { Clock, DurableConsumer, EventSink, KeyValue, Transport, TransportSubscription } from '../machines/ports.js';
import { HostHeartbeat, RemoteSpawn, SessionRecord, SessionSpec, type SessionCommand, type UpMessage } from '../machines/protocol/index.js';
import { restoreTimers, takeCheckpoint, type Checkpoint } from '../actors/durability/checkpoint.js';
import { createParentLinkLogic, enqueueSurely, ensureQueues, ownerBox, subjects, wireId, type LinkDeps, type OwnerAddress } from '../actors/distribution/remote.js';
import { FORWARDED_FROM, hostBox, mailboxOf, runBox, type Mailbox, type Parcel } from '../actors/distribution/mailbox.js';
import { runBoxOf, type KnownRunBoxes } from '../actors/distribution/runBoxes.js';
import { createRootActor } from '../actors/scheduler.js';
import { correlationOf } from '../actors/observation/events.js';
import { A2AError, inlineIssues } from '../actors/errors.js';
import { envelopeOf, PROTOCOL_VERSION } from '../machines/seed004.js';
import { observeSessions } from '../actors/observation/observe.js';
import { adopt, forget, traceHeadersOf } from '../actors/observation/tracing.js';
import { errorText } from '../machines/errorText.js';

/** What the snapshots bucket holds for a session (schema in machines/protocol/). */
export type { SessionRecord } from '../machines/protocol/index.js';

/** The part of a record the adoption decision reads (the same schema, without the checkpoint). */
const RecordHead = SessionRecord.pick({ host: true, state: true, at: true }).extend({ spec: SessionSpec.pick({ id: true, correlation: true, agent: true }) });
type RecordHeadData = ReturnType<typeof RecordHead.parse>;

/**
 * The process's memory for its heartbeat. Started with `--expose-gc` (as the fault tests start
 * hosts), a collection runs first, so that the figure is what is live, not garbage not yet collected.
 */
function liveMemory(): { rss: number; heapUsed: number } {
  (globalThis as { gc?: () => void }).gc?.();
  return { rss: process.memoryUsage.rss(), heapUsed: process.memoryUsage().heapUsed };
}

/** How many invalid records a heartbeat lists (each was named in a warning when first seen). */
const INVALID_LISTED = 20;
/** How often a report for no stand-in of a tree running here comes back (250 ms apart) before it is dropped. */
const STRAY_DELIVERIES = 20;
/** How many invalid records and heartbeat subjects are remembered (not said again): forgeries cannot grow it. */
const INVALID_REMEMBERED = 1_000;

/**
 * How long a finished session's record stays in the snapshots bucket, then removed (nothing of it
 * is left: the bucket holds the sessions alive, not every session ever run). Long enough for a
 * spawn redelivered after a lost acknowledgement (its ack wait: 3 heartbeats) to find it and not
 * run the session again, and for its owner to check the host that sent its result; a spawn sent
 * again by a resumed owner within the spawn queue's dedup window (10 min) is dropped by the queue.
 */
export const FINISHED_KEPT_MS = 120_000;
/** How often a spawn whose claim names a live host that has not listed it yet comes back before it is dropped. */
const UNLISTED_CLAIM_DELIVERIES = 10;
/**
 * How long a spawn delivered while every slot is taken waits here for one to free before it is
 * handed back to the queue (for a host with a free slot). It used to be handed back at once with a
 * redelivery delay of 1 s: a slot that freed a millisecond later stayed empty for that second
 * (a 4 × 5 plan took 3.4-4.3 s on a host of 4 slots instead of about 1.1 s).
 */
const HOLD_MS = 500;

export interface HostOptions {
  transport: Transport;
  ns: string;
  hostId: string;
  /** Agent names served (registry keys, e.g. `coder`). */
  agents: string[];
  concurrency: number;
  /** Acknowledgements the host's runtime defers until a session's snapshot (see RemoteDeps.deferAck). */
  deferredAcks?: DeferredAcks;
  /** The session machines (the host's runtime: its own registry, models and tools). */
  sessionLogic(role: SessionSpec['role']): AnyActorLogic;
  /** Resolves once the events emitted so far are stored (see LinkDeps.beforeResult). */
  flushEvents?: () => Promise<void>;
  /**
   * A tree stopped running here (finished, lost or released). `unused` says whether a wire id
   * (`<runId>.<session id>`: a session, or a worker's key) is of no tree still running here.
   */
  onTreeEnded?: (unused: (key: string) => boolean) => void;
  /** Why a command from an owner cannot reach its session now (see LinkDeps.refuse). */
  refuse?: (session: AnyActorRef, command: SessionCommand) => string | null;
  clock: Clock;
  events: EventSink;
  /** The runs' boxes this host learns from the sessions it runs (its event sink sends their events there). */
  runBoxes?: KnownRunBoxes;
  heartbeatMs?: number;
  /** A host silent this long is dead (default: 3 heartbeats). */
  deadAfterMs?: number;
  snapshotMinMs?: number;
  /**
   * A session is about to be restored here from another host's snapshot (or this host's earlier
   * life): what must be read first (its effect journal) is read now.
   */
  restoring?: (spec: SessionSpec) => Promise<void>;
  /** A session's record says it finished (written by this host): what was kept for its restore can go. */
  closed?: (spec: SessionSpec) => void;
  /** How long a finished session's record is kept before it is removed (default FINISHED_KEPT_MS). */
  finishedKeptMs?: number;
}

interface Running {
  spec: SessionSpec;
  root: AnyActorRef;
  dirty: boolean;
  timer: NodeJS.Timeout | null;
  lastCostMs: number;
  pendingAcks: Array<() => Promise<void>>;
  revision: number;
  /** Its snapshot writes, one after the other: a compare-and-set never races its own host. */
  saving: Promise<void>;
  unsubscribe: () => void;
  /** The trace headers of its spawn (its span in its owner's process), kept in its record for a host that takes it over. */
  trace?: Record<string, string>;
  /** Where its reports go (its spawn's owner), kept in its record. */
  owner?: OwnerAddress;
}

/** Acks waiting for a session's next snapshot; the host flushes them when it writes one. */
/** Whether wire id `id` is `root` or one of its descendants (a sub-task's id extends its parent's with ".n"). */
const under = (id: string, root: string) => id === root || id.startsWith(`${root}.`);

export class DeferredAcks {
  readonly #bySession = new Map<string, Array<() => Promise<void>>>();

  defer = (session: string, ack: () => Promise<void>): void => {
    const list = this.#bySession.get(session);
    if (list) list.push(ack);
    else this.#bySession.set(session, [ack]);
  };

  take(session: string): Array<() => Promise<void>> {
    const list = this.#bySession.get(session) ?? [];
    this.#bySession.delete(session);
    return list;
  }

  /** Takes the acks of every session `mine` says is one's own. */
  takeWhere(mine: (session: string) => boolean): Array<() => Promise<void>> {
    const taken: Array<() => Promise<void>> = [];
    for (const [session, list] of this.#bySession) {
      if (!mine(session)) continue;
      taken.push(...list);
      this.#bySession.delete(session);
    }
    return taken;
  }

}

export class Host {
  readonly #o: Required<Pick<HostOptions, 'heartbeatMs' | 'deadAfterMs' | 'snapshotMinMs' | 'finishedKeptMs'>> & HostOptions;
  readonly #s: ReturnType<typeof subjects>;
  readonly #running = new Map<string, Running>();
  #consumers: DurableConsumer[] = [];
  #snapshots: KeyValue | null = null;
  #hosts: KeyValue | null = null;
  #beat: NodeJS.Timeout | null = null;
  #draining = false;
  #stopped = false;
  readonly #startedAt: number;
  #subscription: TransportSubscription | null = null;
  /** Hosts seen alive, for host.joined / host.lost events. */
  readonly #known = new Map<string, HostHeartbeat>();
  /** Per host: its last heartbeat's `at`, and when (here) that value last changed. */
  readonly #seen = new Map<string, { at: number; changedAt: number }>();
  /**
   * Every host's last heartbeat as heard here: the core heartbeats (every host hears every other's;
   * no reads), seeded from the hosts bucket at start for hosts that went silent before.
   */
  readonly #beats = new Map<string, HostHeartbeat>();
  /**
   * Per host taken for dead (or handing sessions back): the sessions of its last heartbeat that are
   * settled (taken over by someone, finished, gone). Once all are, its key leaves the hosts bucket.
   */
  readonly #settled = new Map<string, Set<string>>();
  /** Sessions this host handed back while draining: listed in its heartbeats for the others to take. */
  #released: string[] = [];
  /** Timers removing finished sessions' records (see FINISHED_KEPT_MS). */
  readonly #removals = new Set<NodeJS.Timeout>();
  /** The next heartbeat that announces new claims, not yet begun (claims made meanwhile join it). */
  #nextAnnounce: Promise<void> | null = null;
  #announced: Promise<void> = Promise.resolve();
  /** Until then, this host does not judge others dead: it was cut off itself and saw nobody. */
  #blindUntil = 0;
  /** Keys being claimed or finished here: their record says this host, but they are not in #running. */
  readonly #busy = new Set<string>();
  /** Spawns delivered while every slot was taken, in order: the first starts when a slot frees. */
  readonly #held: Array<{ start: () => void; handBack: () => void }> = [];
  /** Spawns between the slot check and their session's start (the claim's write): they hold a slot. */
  #claiming = 0;
  #beating = false;
  #scanning = false;
  /**
   * Records of the buckets that are not valid (key → revision and why): skipped, reported once per
   * revision, listed in the heartbeat, never in the way of the others.
   */
  readonly #invalid = new Map<string, { revision: number; problem: string }>();
  /** This host's boxes (actors/distribution/mailbox.ts): what comes for its sessions and stand-ins. */
  #mailbox: Mailbox | null = null;
  /** Dead hosts whose boxes are read here, and how many heartbeats each has been empty. */
  readonly #readingDead = new Map<string, number>();
  /** Subjects invalid heartbeats came on, said once each. */
  readonly #invalidBeats = new Set<string>();

  constructor(options: HostOptions) {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(options.hostId)) {
      throw new A2AError('VALIDATION_ERROR', `host id "${options.hostId}" is not allowed: use 1 to 128 letters, digits, "_" and "-" (it names NATS subjects and keys)`, { where: '--id' });
    }
    this.#o = { heartbeatMs: 2_000, snapshotMinMs: 50, finishedKeptMs: FINISHED_KEPT_MS, ...options, deadAfterMs: options.deadAfterMs ?? 3 * (options.heartbeatMs ?? 2_000) };
    this.#s = subjects(options.ns);
    this.#startedAt = options.clock.now();
  }

  get running(): number {
    return this.#running.size;
  }

  get sessions(): string[] {
    return [...this.#running.keys()];
  }

  /** The session id of the tree running here that session `sessionId` of run `runId` is in (the deepest root above it). */
  rootOf(runId: string, sessionId: string): string {
    const wire = `${runId}.${sessionId}`;
    let best: Running | null = null;
    for (const [root, running] of this.#running) if (under(wire, root) && (best === null || root.length > wireId(best.spec).length)) best = running;
    return best?.spec.id ?? sessionId;
  }

  async start(): Promise<void> {
    const { transport } = this.#o;
    await ensureQueues(transport, this.#o.ns);
    this.#snapshots = await transport.keyValue(this.#s.buckets.snapshots);
    this.#hosts = await transport.keyValue(this.#s.buckets.hosts);
    // its boxes, read from now on: what was forwarded here (or sent before it restarted) included
    const mailbox = mailboxOf(transport, this.#o.ns, hostBox(this.#o.hostId));
    mailbox.stray = (parcel) => this.#stray(parcel);
    mailbox.onDrop = (parcel, why) => this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: dropped a message on ${parcel.message.subject}: ${why}` } });
    this.#mailbox = mailbox;
    await Promise.all([mailbox.open('up'), mailbox.open('down')]);
    // every host's heartbeat as it is published: liveness costs no read of the bucket
    this.#subscription = await transport.subscribe(this.#s.heartbeats, (message) => this.#onBeat(message.subject, message.data));
    // the hosts that beat before this one listened (or went silent before it started), this one's
    // earlier life included: what its last heartbeat listed is looked at like any silent host's
    await this.#seedBeats();
    await this.#heartbeat();
    await this.#register();
    this.#beat = setInterval(() => this.#tick(), this.#o.heartbeatMs);
    for (const agent of this.#o.agents) {
      const consumer = await transport.consume(
        this.#s.queues.spawn.name,
        // a spawn is claimed and acknowledged within milliseconds; one a host took and died with
        // before claiming it comes back to another host as soon as that host would be taken for dead
        // (a second delivery of one that was claimed finds the claim and is dropped)
        { consumer: `spawn-${agent}`, filter: this.#s.spawn(agent), ackWaitMs: Math.max(2_000, this.#o.deadAfterMs), maxInFlight: this.#o.concurrency },
        (message) => this.#onSpawn(message),
      );
      this.#consumers.push(consumer);
    }
    // sessions of hosts that died while nobody was looking, and claims never listed in a
    // heartbeat: every record is read once, at start (the bucket holds only sessions alive, and
    // finished ones for FINISHED_KEPT_MS)
    await this.#adoptOrphans(true);
  }

  async #onSpawn(message: import('../machines/ports.js').DurableMessage): Promise<void> {
    const parsed = RemoteSpawn.safeParse(message.data);
    if (!parsed.success) {
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: dropped an invalid spawn request: ${inlineIssues(parsed.error.issues)}` } });
      await message.ack();
      return;
    }
    // where its run hears what this host says about it, from the first word (a claim refused, a restore that fails)
    this.#o.runBoxes?.learn(parsed.data.spec.correlation);
    if (this.#draining) {
      await message.nak(1_000);
      return;
    }
    if (this.#running.size + this.#claiming >= this.#o.concurrency) {
      // every slot taken: held until one frees (started within the same turn), else handed back
      await new Promise<void>((resolve) => {
        const held = {
          start: () => {
            clearTimeout(timer);
            // a failure (an ack lost to a leader election) leaves it unacknowledged: it comes back;
            // never an unhandled rejection, which would end the process
            void this.#onSpawn(message)
              .catch(() => undefined)
              .finally(resolve);
          },
          handBack: () => {
            clearTimeout(timer);
            void message.nak(0).catch(() => undefined).finally(resolve);
          },
        };
        const timer = setTimeout(() => {
          const at = this.#held.indexOf(held);
          if (at >= 0) this.#held.splice(at, 1);
          held.handBack();
        }, HOLD_MS);
        this.#held.push(held);
      });
      return;
    }
    const { spec } = parsed.data;
    const trace = traceHeadersOf(message.headers);
    if (message.headers.traceparent !== undefined && !trace) {
      // W3C: an invalid traceparent is ignored; said, so that a broken tracer upstream is found
      this.#o.events.emit({ type: 'warning', ...correlationOf(spec), data: { message: `host ${this.#o.hostId}: the spawn request for ${spec.id} has an invalid traceparent header (${message.headers.traceparent.slice(0, 80)}): ignored, the session's spans start from its run's trace` } });
    }
    const wanted = message.subject.slice(this.#s.spawn('').length);
    if (spec.agent.agentName !== wanted || !this.#o.agents.includes(spec.agent.agentName)) {
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: dropped a spawn request for ${spec.id} on ${message.subject}: its agent type is ${spec.agent.agentName}, this host serves ${this.#o.agents.join(', ')}` } });
      await message.ack();
      return;
    }
    // claim it: a session runs on one host, whatever the queue redelivers
    const owner = parsed.data.owner;
    const record: SessionRecord = { spec, host: this.#o.hostId, state: 'running', checkpoint: null, at: this.#o.clock.now(), owner, ...(trace ? { trace } : {}) };
    const key = wireId(spec);
    this.#busy.add(key);
    this.#claiming++;
    let claimed = true;
    try {
      const revision = await this.#snapshots!.update(key, record, 0);
      this.#claiming--;
      claimed = false;
      if (revision === null) {
        // claimed before (a redelivery): its slot goes to the next held spawn
        this.#refill();
        await this.#claimedBefore(key, message);
        return;
      }
      if (!this.#stopped) this.#run(spec, null, revision, trace, owner);
      // acknowledged once a heartbeat lists it: a host that dies between the claim and its next
      // heartbeat leaves the spawn unacknowledged, and its redelivery finds the claim of a dead host
      // (#claimedBefore). Orphans are found from heartbeats alone, never by reading every record.
      try {
        await this.#announce();
      } catch {
        return; // not listed: redelivered, and found claimed here
      }
      await message.ack();
    } finally {
      if (claimed) {
        this.#claiming--;
        this.#refill();
      }
      this.#busy.delete(key);
    }
  }

  /**
   * A spawn whose session has a record already (the spawn redelivered: its acknowledgement was
   * lost, or its host died before listing it). Dropped when the session finished, runs here, or a
   * live host lists it; taken over when its host is dead; else delivered again after a heartbeat.
   */
  async #claimedBefore(key: string, message: import('../machines/ports.js').DurableMessage): Promise<void> {
    const head = await this.#head(key);
    if (!head || head.state === 'finished' || this.#running.has(key)) return message.ack();
    const { host, state } = head;
    const alive = this.#aliveNow(this.#o.clock.now());
    const listed = this.#beats.get(host)?.sessions.includes(key) ?? false;
    if (state === 'running' && host !== this.#o.hostId && alive.has(host) && !listed && message.deliveries < UNLISTED_CLAIM_DELIVERIES) {
      // its host may still be about to list it (or about to be taken for dead)
      await message.nak(this.#o.heartbeatMs);
      return;
    }
    if (state === 'released' || !alive.has(host) || host === this.#o.hostId) {
      // (the spawn's handling holds the session busy: this is the one look at it)
      await this.#considerOnce(key, this.#o.clock.now(), alive, false).catch((error: unknown) =>
        this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: could not consider ${key} for adoption: ${errorText(error)}` } }),
      );
    }
    await message.ack();
  }

  /**
   * A heartbeat now, listing the sessions claimed since the last one. Claims made while one is
   * being written wait for the next; claims made before it begins join it (one write for a burst).
   */
  #announce(): Promise<void> {
    if (this.#nextAnnounce) return this.#nextAnnounce;
    const next = this.#announced.then(() => {
      this.#nextAnnounce = null;
      return this.#heartbeat(undefined, false);
    });
    this.#nextAnnounce = next;
    this.#announced = next.catch(() => undefined);
    return next;
  }

  /** What a session's record says of who holds it and how it stands (not its checkpoint); null when none is valid. */
  async #head(key: string): Promise<RecordHeadData | null> {
    const entry = await this.#snapshots!.get(key);
    const parsed = entry ? RecordHead.safeParse(entry.value) : null;
    return parsed?.success ? parsed.data : null;
  }

  /** Which host holds a session now (its record), null when none does. */
  async #holderOf(wire: string): Promise<string | null> {
    return (await this.#head(wire))?.host ?? null;
  }

  /**
   * A message in one of the boxes read here for no session or stand-in of this host: forwarded to
   * the box of the process that holds its addressee now (a session taken over, an owner's tree
   * taken over), waited for when that is this host restoring it (or no host yet), dropped when its
   * addressee has finished.
   */
  async #stray(parcel: Parcel): Promise<void> {
    const { kind, wire, message } = parcel;
    const runId = wire.split('.')[0]!;
    let target: string;
    try {
      if (kind === 'down') {
        const record = await this.#head(wire);
        if (!record || record.state === 'finished') return message.ack(); // over: nothing takes it
        if (record.state === 'released' || record.host === this.#o.hostId) return message.nak(record.host === this.#o.hostId ? 250 : 1_000);
        target = hostBox(record.host);
      } else {
        // the tree its owner runs in: the nearest ancestor with a record; none: the run's process
        const parts = wire.slice(runId.length + 1).split('.');
        // (the run's box: its sessions' specs name it; the record of this session, when this host ran none of that run)
        const boxes = this.#o.runBoxes;
        if (boxes && !boxes.has(runId)) boxes.learn((await this.#head(wire))?.spec.correlation ?? { runId });
        target = boxes ? boxes.of(runId) : runBoxOf((await this.#head(wire))?.spec.correlation ?? { runId });
        for (let n = parts.length - 1; n >= 1; n--) {
          const root = `${runId}.${parts.slice(0, n).join('.')}`;
          const record = await this.#head(root);
          if (!record) continue;
          if (record.state === 'finished') return message.ack();
          if (record.state === 'released') return message.nak(1_000);
          if (record.host === this.#o.hostId) {
            // its tree is being restored here (its stand-ins register as they start): in a moment.
            // A tree that runs here with no stand-in for it long after (its stand-in ended and was
            // forgotten): nothing takes it
            return this.#running.has(root) && message.deliveries >= STRAY_DELIVERIES ? message.ack() : message.nak(250);
          }
          target = hostBox(record.host);
          break;
        }
      }
    } catch {
      return message.nak(1_000); // the bucket cannot be read now
    }
    // back into the box it came from (its process is alive after all, or not yet taken over): later
    if (target === parcel.box) return message.nak(500);
    const hops = Number(message.headers['a2a-hops'] ?? '0');
    if (hops >= 4) {
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: dropped a message on ${message.subject} forwarded ${hops} times (last towards ${target})` } });
      return message.ack();
    }
    // a report goes on in this host's name (a host may publish only its own: per-host users), the
    // host that sent it first in a header, which the owner checks against the session's record
    const from: Record<string, string> = kind === 'up' ? { [FORWARDED_FROM]: message.headers[FORWARDED_FROM] ?? parcel.host ?? this.#o.hostId } : {};
    const subject = kind === 'down' ? this.#s.down(target, wire) : this.#s.up(target, this.#o.hostId, wire);
    await enqueueSurely(this.#o.transport, subject, message.data, `${message.msgId || `${wire}:${message.subject}`}>${target}`, () => undefined, () => this.#stopped, { ...message.headers, ...from, 'a2a-hops': String(hops + 1) });
    await message.ack();
  }

  /**
   * Reads the boxes of the hosts taken for dead (what was sent to them goes to whoever holds its
   * addressee now), until each is back or has had nothing in its boxes for 3 heartbeats.
   */
  async #readDeadBoxes(dead: string[], alive: Set<string>): Promise<void> {
    const mailbox = this.#mailbox;
    if (!mailbox) return;
    for (const hostId of dead) {
      if (this.#readingDead.has(hostId)) continue;
      this.#readingDead.set(hostId, 0);
      mailbox.readOther(hostBox(hostId));
    }
    const pending = await mailbox.othersPending();
    for (const [hostId, quiet] of [...this.#readingDead]) {
      const left = pending.get(hostBox(hostId));
      const back = alive.has(hostId);
      const empty = left === 0 && !this.#beats.has(hostId);
      const next = empty ? quiet + 1 : 0;
      if (back || next >= 3) {
        this.#readingDead.delete(hostId);
        // back, or empty and gone: read no more here (its consumers are its own to remove)
        await mailbox.stopReading(hostBox(hostId));
      } else this.#readingDead.set(hostId, next);
    }
  }

  /** Starts (or restores) a session under a parent link. */
  #run(spec: SessionSpec, checkpoint: Checkpoint | null, revision: number, trace?: Record<string, string>, owner?: OwnerAddress): void {
    // its model and tool calls hang from its span in its owner's process
    adopt(spec.correlation.runId, spec.id, trace);
    // where its run hears its events and what has no other owner
    this.#o.runBoxes?.learn(spec.correlation);
    const linkDeps: LinkDeps = {
      transport: this.#o.transport,
      ns: this.#o.ns,
      process: this.#o.hostId,
      box: hostBox(this.#o.hostId),
      hostId: this.#o.hostId,
      holderOf: (wire) => this.#holderOf(wire),
      clock: this.#o.clock,
      events: this.#o.events,
      sessionLogic: this.#o.sessionLogic,
      ...(this.#o.refuse ? { refuse: this.#o.refuse } : {}),
      ...(this.#o.flushEvents ? { beforeResult: this.#o.flushEvents } : {}),
      // a message whose ack waits for a snapshot asks for one: a message that changed nothing (a
      // refusal, a replay) must not hold its consumer's in-flight slots until something else does
      ackAfterSnapshot: (id, ack) => {
        const running = this.#running.get(id);
        if (!running) return;
        running.pendingAcks.push(ack);
        this.#mark(running);
      },
      onFinished: (id) => void this.#finished(id),
    };
    const logic = createParentLinkLogic(linkDeps);
    let root: AnyActorRef;
    try {
      root = createRootActor(logic, {
        id: `host-${wireId(spec)}`,
        clock: this.#o.clock,
        ...(checkpoint ? { snapshot: checkpoint.snapshot as never } : { input: { spec, ...(owner ? { owner } : {}) } }),
      });
    } catch (error) {
      void this.#unrestorable(spec, revision, error, owner);
      return;
    }
    const running: Running = { spec, root, dirty: true, timer: null, lastCostMs: 0, pendingAcks: [], revision, saving: Promise.resolve(), unsubscribe: () => {}, ...(trace ? { trace } : {}), ...(owner ? { owner } : {}) };
    this.#running.set(wireId(spec), running);
    const sub = root.system.inspect((e) => {
      if (e.type === '@xstate.snapshot') this.#mark(running);
    });
    // the sessions' states, model and tool calls, for the run's orchestrator and monitors
    const observed = observeSessions(root, this.#o.events);
    running.unsubscribe = () => {
      sub.unsubscribe();
      observed?.unsubscribe();
    };
    try {
      root.start();
      if ((root.getSnapshot() as { status: string }).status === 'error') throw (root.getSnapshot() as { error: unknown }).error;
      if (checkpoint) {
        restoreTimers(root, checkpoint.timers, this.#o.clock.now());
        this.#o.events.emit({ type: 'session.restored', ...correlationOf(spec), data: { host: this.#o.hostId, savedAt: checkpoint.savedAt } });
      }
    } catch (error) {
      this.#drop(wireId(spec));
      void this.#unrestorable(spec, revision, error, owner);
      return;
    }
    this.#mark(running);
  }

  /**
   * A session whose snapshot cannot be restored (a corrupt or foreign record): its owner is told
   * (its result is `failed`, so nobody waits for ever) and its record is closed.
   */
  async #unrestorable(spec: SessionSpec, revision: number, error: unknown, owner?: OwnerAddress): Promise<void> {
    const key = wireId(spec);
    const why = `host ${this.#o.hostId} could not restore ${spec.id}: ${errorText(error)}`;
    this.#o.events.emit({ type: 'warning', ...correlationOf(spec), data: { message: why } });
    const report: UpMessage = { kind: 'error', error: why };
    const address = owner ?? { box: runBoxOf(spec.correlation) };
    const box = await ownerBox(address, spec.correlation.runId, (wire) => this.#holderOf(wire)).catch(() => address.box);
    await enqueueSurely(this.#o.transport, this.#s.up(box, this.#o.hostId, key), report, `${key}:unrestorable:${revision}`, () => undefined, () => this.#stopped).catch(() => undefined);
    const record: SessionRecord = { spec, host: this.#o.hostId, state: 'finished', checkpoint: null, at: this.#o.clock.now(), ...(owner ? { owner } : {}) };
    if ((await this.#snapshots!.update(key, record, revision).catch(() => null)) !== null) {
      this.#removeLater(key);
      this.#o.closed?.(spec);
    }
  }

  #mark(running: Running): void {
    running.dirty = true;
    if (running.timer || this.#stopped) return;
    running.timer = setTimeout(() => {
      running.timer = null;
      void this.#snapshot(running);
    }, Math.max(this.#o.snapshotMinMs, running.lastCostMs * 10));
  }

  /**
   * Writes the session's checkpoint (compare-and-set on its revision), then acknowledges what it
   * holds. Writes of one session are queued, so a lost compare-and-set means another host took it.
   */
  #snapshot(running: Running, state: SessionRecord['state'] = 'running'): Promise<void> {
    running.saving = running.saving.then(() => this.#write(running, state));
    return running.saving;
  }

  async #write(running: Running, state: SessionRecord['state'], attempt = 0): Promise<void> {
    if (!running.dirty && state === 'running') return;
    const key = wireId(running.spec);
    if (this.#running.get(key) !== running) return; // dropped (or replaced by a newer copy)
    const started = performance.now();
    running.dirty = false;
    // what reached any session of this tree is acknowledged once this snapshot holds it
    const acks = [...running.pendingAcks.splice(0), ...this.#deferredOf(key)];
    const record: SessionRecord = { spec: running.spec, host: this.#o.hostId, state, checkpoint: takeCheckpoint(running.root, this.#o.clock.now()), at: this.#o.clock.now(), ...(running.trace ? { trace: running.trace } : {}), ...(running.owner ? { owner: running.owner } : {}) };
    let revision: number | null;
    try {
      revision = await this.#snapshots!.update(key, record, running.revision);
    } catch (error) {
      // not written (the server is away): nothing is lost, the next attempt writes it
      running.pendingAcks.unshift(...acks);
      running.dirty = true;
      this.#o.events.emit({ type: 'warning', ...correlationOf(running.spec), data: { message: `host ${this.#o.hostId} could not save ${running.spec.id} yet: ${errorText(error)}` } });
      if (!this.#stopped && !running.timer) running.timer = setTimeout(() => {
        running.timer = null;
        void this.#snapshot(running, state);
      }, 1_000);
      return;
    }
    if (revision === null) {
      if (this.#running.get(key) !== running) return; // it finished meanwhile
      // a write of ours that landed while its answer was lost (the server went away mid-write:
      // "could not save … yet"): the record is still this host's, at a newer revision. Go on from
      // it; taking it for another host's would stop the session and restore it from its snapshot
      // here (seen when a cluster node died under load: steps run twice)
      const current = await this.#snapshots!.get(key).catch(() => null);
      const head = current ? RecordHead.safeParse(current.value) : null;
      if (attempt < 3 && current && head?.success && head.data.host === this.#o.hostId && head.data.state === 'running' && this.#running.get(key) === running) {
        running.revision = current.revision;
        running.pendingAcks.unshift(...acks);
        running.dirty = true;
        return this.#write(running, state, attempt + 1);
      }
      // another host took it over (this one was thought dead): stop here, it runs there
      this.#o.events.emit({ type: 'warning', ...correlationOf(running.spec), data: { message: `host ${this.#o.hostId} lost ${running.spec.id} to another host; stopping its copy here` } });
      this.#drop(key);
      return;
    }
    running.revision = revision;
    for (const ack of acks) await ack().catch(() => undefined);
    running.lastCostMs = performance.now() - started;
  }

  /**
   * Takes the acks deferred for the sessions of tree `key`: its root's and its descendants' (a
   * sub-task's id extends its parent's with ".n"), those that ended included, but not those of a
   * descendant that runs here as a tree of its own (a remote child placed on this host).
   */
  #deferredOf(key: string): Array<() => Promise<void>> {
    if (!this.#o.deferredAcks) return [];
    return this.#o.deferredAcks.takeWhere(this.#inTree(key));
  }

  /** Whether a session (by wire id) is of tree `key` here: the deepest running root it is under. */
  #inTree(key: string): (session: string) => boolean {
    const roots = [...this.#running.keys()];
    return (session) => {
      let best: string | null = null;
      for (const root of roots) if (under(session, root) && (best === null || root.length > best.length)) best = root;
      return best === key;
    };
  }

  async #finished(id: string): Promise<void> {
    const running = this.#running.get(id);
    if (!running) return;
    this.#busy.add(id);
    try {
      for (const ack of running.pendingAcks.splice(0)) await ack().catch(() => undefined);
      await running.saving;
      // what reached its sessions last (their children's final reports), held for a snapshot that
      // will not come: acknowledged once the finished record is written, dropped if another host
      // holds it now (they come back to that host's copy); left here, they would be kept forever
      const deferred = this.#deferredOf(id);
      this.#drop(id);
      // kept (without its snapshot) so that a redelivered spawn of it is never run again; written
      // only if this host still holds it: a host that was taken for dead and replaced must not
      // overwrite the claim of the one that runs it now (its report was refused by the owner)
      const record: SessionRecord = { spec: running.spec, host: this.#o.hostId, state: 'finished', checkpoint: null, at: this.#o.clock.now(), ...(running.owner ? { owner: running.owner } : {}) };
      const written = await this.#snapshots!.update(id, record, running.revision).catch(() => null);
      if (written !== null) {
        for (const ack of deferred) await ack().catch(() => undefined);
        this.#removeLater(id);
        this.#o.closed?.(running.spec);
      } else {
        this.#o.events.emit({ type: 'warning', ...correlationOf(running.spec), data: { message: `host ${this.#o.hostId} finished ${running.spec.id}, but another host holds it now: its record is left to that host` } });
      }
    } finally {
      this.#busy.delete(id);
    }
  }

  /**
   * Removes a finished session's record after FINISHED_KEPT_MS. A host that stops or dies first
   * leaves it to the next host that starts (its scan removes finished records past that age).
   */
  #removeLater(key: string): void {
    const timer = setTimeout(() => {
      this.#removals.delete(timer);
      void this.#snapshots!.delete(key).catch(() => undefined);
    }, this.#o.finishedKeptMs);
    timer.unref?.();
    this.#removals.add(timer);
  }

  /** A slot freed: the spawn held longest starts now (a draining or stopped host hands them all back). */
  #refill(): void {
    if (this.#draining || this.#stopped) {
      for (const held of this.#held.splice(0)) held.handBack();
      return;
    }
    while (this.#held.length > 0 && this.#running.size + this.#claiming < this.#o.concurrency) this.#held.shift()!.start();
  }

  #drop(id: string): void {
    const running = this.#running.get(id);
    if (!running) return;
    queueMicrotask(() => this.#refill());
    // not acknowledged (a copy that is not finishing here): redelivered to the copy that holds it
    this.#deferredOf(id);
    this.#running.delete(id);
    forget(running.spec.correlation.runId, running.spec.id);
    // what the host keeps per session and per worker (child id counters, spawn and cost budgets)
    // goes with the last tree that uses it
    if (this.#o.onTreeEnded) {
      const roots = [...this.#running.keys()];
      this.#o.onTreeEnded((key) => !roots.some((root) => under(key, root) || under(root, key)));
    }
    if (running.timer) clearTimeout(running.timer);
    running.unsubscribe();
    if ((running.root.getSnapshot() as { status: string }).status === 'active') running.root.stop();
  }

  /**
   * Says what it serves in seed 004's registration envelope (agent type `a2a_host`, its agent
   * types as capabilities, its concurrency as max_concurrent_tasks), for monitors and tools that
   * speak that protocol; the heartbeats that follow keep it current in the hosts bucket.
   */
  async #register(): Promise<void> {
    const registration = envelopeOf(
      'registration',
      { messageId: `${this.#o.hostId}:registration:${this.#startedAt}`, senderId: this.#o.hostId, recipientId: 'orchestrator', at: this.#o.clock.now() },
      { agent_id: this.#o.hostId, agent_type: 'a2a_host', capabilities: this.#o.agents, max_concurrent_tasks: this.#o.concurrency, version: PROTOCOL_VERSION },
    );
    await this.#o.transport.publish(this.#s.registration(this.#o.hostId), registration);
  }

  /** The memory figure of the last periodic heartbeat (an announcement between two reuses it). */
  #memory: HostHeartbeat['memory'] | null = null;

  async #heartbeat(status: HostHeartbeat['status'] = this.#draining ? 'draining' : 'ready', measure = true): Promise<void> {
    // measured on the periodic beat only: with --expose-gc a measure is a full collection, and a
    // burst of claims announced one after the other would pay one each (20 ms: the next claim waits)
    if (measure || !this.#memory) this.#memory = liveMemory();
    const beat: HostHeartbeat = {
      hostId: this.#o.hostId,
      agents: this.#o.agents,
      concurrency: this.#o.concurrency,
      running: this.#running.size,
      sessions: this.sessions,
      ...(this.#released.length > 0 ? { released: this.#released } : {}),
      startedAt: this.#startedAt,
      at: this.#o.clock.now(),
      intervalMs: this.#o.heartbeatMs,
      status,
      ...(this.#invalid.size > 0 ? { invalidRecords: this.invalidRecords } : {}),
      memory: this.#memory!,
    };
    await this.#o.transport.publish(this.#s.heartbeat(this.#o.hostId), beat);
    await this.#hosts!.put(this.#o.hostId, beat);
  }

  /**
   * One heartbeat interval: the heartbeat, and a scan for orphans. They run apart: a scan that
   * takes longer than an interval (many records, a slow server) never holds back the heartbeats,
   * or a busy host would look dead to the others and lose its sessions to them.
   */
  #tick(): void {
    if (this.#stopped) return;
    if (!this.#beating) void this.#beatOnce();
    if (!this.#scanning) void this.#scan();
  }

  async #beatOnce(): Promise<void> {
    this.#beating = true;
    const started = this.#o.clock.now();
    try {
      await this.#heartbeat();
      this.#blindIfSlow(started);
    } catch (error) {
      this.#goBlind();
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: ${errorText(error)}` } });
    } finally {
      this.#beating = false;
    }
  }

  /**
   * This host was cut off from the server (an operation failed, or waited longer than a
   * heartbeat): others' heartbeats could not get through either, so for a while their silence
   * says nothing and nobody is judged dead.
   */
  #goBlind(): void {
    this.#blindUntil = this.#o.clock.now() + this.#o.deadAfterMs * 2;
  }

  /** #goBlind when an operation begun at `since` took longer than a heartbeat. */
  #blindIfSlow(since: number): void {
    if (this.#o.clock.now() - since > this.#o.heartbeatMs) this.#goBlind();
  }

  async #scan(): Promise<void> {
    this.#scanning = true;
    try {
      await this.#adoptOrphans();
    } catch (error) {
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: ${errorText(error)}` } });
    } finally {
      this.#scanning = false;
    }
  }

  /**
   * Why a record of a bucket is not valid, remembered per revision so that it is reported once
   * (a warning naming the key and the field), listed in the heartbeat, and skipped.
   */
  #invalidRecord(bucket: string, key: string, revision: number, problem: string): void {
    const id = `${bucket}/${key}`;
    if (this.#invalid.get(id)?.revision === revision) return;
    this.#invalid.set(id, { revision, problem });
    if (this.#invalid.size > INVALID_REMEMBERED) this.#invalid.delete(this.#invalid.keys().next().value as string);
    this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: skipped the invalid record "${key}" of the ${bucket} bucket (revision ${revision}): ${problem}` } });
  }

  /** A heartbeat heard (core): kept when valid and sent by the host it names. */
  #onBeat(subject: string, data: unknown): void {
    const beat = HostHeartbeat.safeParse(data);
    const from = subject.split('.').at(-2) ?? '';
    if (!beat.success || beat.data.hostId !== from) {
      // said once per subject (a forged host beating on is not said again), remembered within bounds
      if (this.#invalidBeats.has(subject)) return;
      this.#invalidBeats.add(subject);
      if (this.#invalidBeats.size > INVALID_REMEMBERED) this.#invalidBeats.delete(this.#invalidBeats.values().next().value as string);
      const problem = beat.success ? `hostId "${beat.data.hostId}" is not the host of its subject` : inlineIssues(beat.error.issues);
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: skipped an invalid heartbeat on ${subject}: ${problem}` } });
      return;
    }
    this.#invalidBeats.delete(subject);
    this.#heard(beat.data, this.#o.clock.now());
  }

  /** Takes a heartbeat (heard, or read from the bucket) as the host's latest if it is newer. */
  #heard(beat: HostHeartbeat, now: number): void {
    const before = this.#beats.get(beat.hostId);
    if (before && before.at >= beat.at && before.startedAt >= beat.startedAt) return;
    this.#beats.set(beat.hostId, beat);
    const seen = this.#seen.get(beat.hostId);
    if (!seen || seen.at !== beat.at) this.#seen.set(beat.hostId, { at: beat.at, changedAt: now });
    // a host heard again (restarted under its id, or back from an outage) starts a new account
    if (before && before.at !== beat.at) this.#settled.delete(beat.hostId);
  }

  /** The heartbeats in the hosts bucket (once, at start): hosts that went silent before this one listened. */
  async #seedBeats(): Promise<void> {
    const now = this.#o.clock.now();
    for (const key of await this.#hosts!.keys()) {
      const entry = await this.#hosts!.get(key).catch(() => null);
      if (!entry) continue;
      const beat = HostHeartbeat.safeParse(entry.value);
      if (!beat.success || beat.data.hostId !== key) {
        this.#invalidRecord('hosts', key, entry.revision, beat.success ? `hostId "${beat.data.hostId}" is not its key` : inlineIssues(beat.error.issues));
        continue;
      }
      // this host's earlier life: its records name it, and the first scan takes them back
      if (key !== this.#o.hostId) this.#heard(beat.data, now);
    }
  }

  /** The hosts alive as seen from here (no reads: heartbeats heard), with host.joined / host.lost on changes. */
  #aliveNow(now: number): Set<string> {
    const alive = new Set<string>([this.#o.hostId]);
    for (const [hostId, beat] of this.#beats) {
      if (hostId === this.#o.hostId) continue;
      // A host is alive while its heartbeat keeps changing, as seen from here (no clock skew); a
      // host first seen now gets the benefit of the doubt for deadAfterMs. Just back from an
      // outage of its own, this host takes nobody's silence to mean anything yet.
      const fresh = now < this.#blindUntil || now - this.#seen.get(hostId)!.changedAt < this.#o.deadAfterMs;
      if (fresh) alive.add(hostId);
      const before = this.#known.get(hostId);
      if (fresh && !before) this.#o.events.emit({ type: 'host.joined', data: { host: hostId, agents: beat.agents } });
      if (!fresh && before) this.#o.events.emit({ type: 'host.lost', data: { host: hostId, sessions: beat.sessions } });
      if (fresh) this.#known.set(hostId, beat);
      else this.#known.delete(hostId);
    }
    return alive;
  }

  /**
   * A host about to be taken for dead: its heartbeat in the bucket is read once, in case its core
   * heartbeats were lost on the way (they are at most once) while it kept writing them there.
   */
  async #confirmSilent(hostId: string, now: number): Promise<void> {
    const entry = await this.#hosts!.get(hostId);
    const beat = entry ? HostHeartbeat.safeParse(entry.value) : null;
    if (beat?.success && beat.data.hostId === hostId) this.#heard(beat.data, now);
  }

  /**
   * Sessions whose host is dead or handed them back, restored here if this host serves their agent
   * type. What is looked at is what those hosts' last heartbeats listed, so a heartbeat costs the
   * same whatever the number of records; `everything` (at start) reads every record once instead,
   * for claims never listed and records of hosts gone before this one started.
   */
  async #adoptOrphans(everything = false): Promise<void> {
    if (this.#draining || this.#stopped) return;
    const now = this.#o.clock.now();
    // silent hosts are confirmed from the bucket before their sessions are taken
    for (const [hostId] of this.#beats) {
      if (hostId === this.#o.hostId || now < this.#blindUntil) continue;
      const seen = this.#seen.get(hostId);
      if (seen && now - seen.changedAt >= this.#o.deadAfterMs && !this.#settled.has(hostId)) {
        await this.#confirmSilent(hostId, now).catch(() => undefined);
        this.#blindIfSlow(now);
      }
    }
    const alive = this.#aliveNow(now);
    if (everything) return this.#scanAll(now, alive);
    // what was sent to the hosts taken for dead is read here too (and forwarded where it belongs)
    const dead = [...this.#beats.keys()].filter((hostId) => hostId !== this.#o.hostId && !alive.has(hostId));
    await this.#readDeadBoxes(dead, alive).catch((error: unknown) =>
      this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: could not read the boxes of ${dead.join(', ')}: ${errorText(error)}` } }),
    );
    for (const [hostId, beat] of [...this.#beats]) {
      if (hostId === this.#o.hostId) continue;
      const dead = !alive.has(hostId);
      const handedBack = beat.released ?? [];
      if (!dead && handedBack.length === 0) continue;
      const settled = this.#settled.get(hostId) ?? new Set<string>();
      this.#settled.set(hostId, settled);
      const listed = dead ? [...beat.sessions, ...handedBack] : handedBack;
      for (const key of listed) {
        if (settled.has(key)) continue;
        if (this.#running.size + this.#claiming >= this.#o.concurrency || this.#draining || this.#stopped) return;
        try {
          if (await this.#consider(key, now, alive)) settled.add(key);
        } catch (error) {
          this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: could not consider ${key} for adoption: ${errorText(error)}` } });
        }
      }
      // every session it listed is someone's now (or over): its heartbeat leaves the bucket
      if (dead && listed.every((key) => settled.has(key))) {
        this.#beats.delete(hostId);
        this.#settled.delete(hostId);
        this.#seen.delete(hostId);
        await this.#hosts!.delete(hostId).catch(() => undefined);
      }
    }
  }

  /** Every record of the snapshots bucket, once (at start). */
  async #scanAll(now: number, alive: Set<string>): Promise<void> {
    const keys = await this.#snapshots!.keys();
    for (const key of keys) {
      if (this.#running.size + this.#claiming >= this.#o.concurrency || this.#draining || this.#stopped) return;
      // one record's trouble (invalid, unreadable, unrestorable) never stops the others
      try {
        await this.#consider(key, now, alive, true);
      } catch (error) {
        this.#o.events.emit({ type: 'warning', data: { message: `host ${this.#o.hostId}: could not consider ${key} for adoption: ${errorText(error)}` } });
      }
    }
  }

  /**
   * Looks at one record and takes the session over if its host is dead or released it (or is this
   * host, which does not run it). True when the record is settled: taken over (here or by another
   * host), finished or gone; false when it still waits for a host (of an agent type this host does
   * not serve, say).
   */
  async #consider(key: string, now: number, alive: Set<string>, atStart = false): Promise<boolean> {
    // one look at a time per session: the start's scan, a heartbeat's listing and a spawn claimed
    // before can reach the same record at once, and a look that read it after another took it
    // here would find its own record (host: this one) and take it again: a second actor
    if (this.#running.has(key) || this.#busy.has(key)) return true;
    this.#busy.add(key);
    try {
      return await this.#considerOnce(key, now, alive, atStart);
    } finally {
      this.#busy.delete(key);
    }
  }

  async #considerOnce(key: string, now: number, alive: Set<string>, atStart: boolean): Promise<boolean> {
    const entry = await this.#snapshots!.get(key);
    if (!entry) return true;
    const invalid = (problem: string) => {
      this.#invalidRecord('snapshots', key, entry.revision, problem);
      return true;
    };
    // what the decision needs is checked first, the whole record (its checkpoint, its spec) only
    // when this host is about to take the session over
    const head = RecordHead.safeParse(entry.value);
    if (!head.success) return invalid(inlineIssues(head.error.issues));
    if (wireId(head.data.spec) !== key) return invalid(`its session is ${wireId(head.data.spec)}, not its key`);
    const { state, host, at, spec } = head.data;
    // one listed as invalid before is looked at whole again: it may have been mended
    if (this.#invalid.has(`snapshots/${key}`) && SessionRecord.safeParse(entry.value).success) this.#invalid.delete(`snapshots/${key}`);
    if (state === 'finished') {
      // past its keeping (its host stopped or died before removing it): removed here
      if (atStart && now - at > this.#o.finishedKeptMs) await this.#snapshots!.delete(key).catch(() => undefined);
      return true;
    }
    // its own record with nothing running it (a claim it did not start, or this host restarted
    // under the same id) is an orphan too
    const ownOrphan = host === this.#o.hostId;
    if (state !== 'released' && alive.has(host) && !ownOrphan) return true;
    if (!this.#o.agents.includes(spec.agent.agentName)) return false;
    const parsed = SessionRecord.safeParse(entry.value);
    if (!parsed.success) return invalid(inlineIssues(parsed.error.issues));
    this.#invalid.delete(`snapshots/${key}`);
    const record = parsed.data;
    const claimed: SessionRecord = { ...record, host: this.#o.hostId, state: 'running', at: now };
    const revision = await this.#snapshots!.update(key, claimed, entry.revision);
    // lost to another host: settled (it runs there)
    if (revision === null) return true;
    if (this.#stopped) return true;
    this.#o.events.emit({ type: 'warning', ...correlationOf(record.spec), data: { message: `host ${this.#o.hostId} takes over ${key} from ${record.host} (${record.state === 'released' ? 'released' : 'not heard from'})` } });
    if (this.#o.restoring) {
      // claimed, not running yet (busy: no other look takes it meanwhile)
      try {
        await this.#o.restoring(record.spec);
      } catch (error) {
        // restored without it: its steps after the snapshot run again (said, not hidden)
        this.#o.events.emit({ type: 'warning', ...correlationOf(record.spec), data: { message: `host ${this.#o.hostId} could not read the effect journal of ${key}; its steps after its last snapshot run again: ${errorText(error)}` } });
      }
      if (this.#stopped) return true;
    }
    this.#run(record.spec, record.checkpoint, revision, record.trace, record.owner);
    // listed in a heartbeat at once, as a new claim is
    void this.#announce().catch(() => undefined);
    return true;
  }

  /** The invalid records this host skips, for its heartbeat (and so for `a2a monitor`). */
  get invalidRecords(): Array<{ key: string; problem: string }> {
    return [...this.#invalid].slice(0, INVALID_LISTED).map(([key, v]) => ({ key, problem: v.problem.slice(0, 300) }));
  }

  /** Stops taking work; waits up to `drainMs` for running sessions, then releases the rest. */
  async drain(drainMs: number): Promise<{ finished: number; released: string[] }> {
    this.#draining = true;
    this.#refill();
    for (const c of this.#consumers.splice(0)) await c.stop();
    await this.#heartbeat('draining');
    const before = this.#running.size;
    const deadline = Date.now() + drainMs;
    while (this.#running.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const released: string[] = [];
    for (const running of [...this.#running.values()]) {
      running.dirty = true;
      await this.#snapshot(running, 'released');
      released.push(running.spec.id);
      this.#released.push(wireId(running.spec));
      this.#drop(wireId(running.spec));
    }
    // the others take what it lists as released at once (their next heartbeat)
    if (released.length > 0) await this.#heartbeat('draining').catch(() => undefined);
    return { finished: before - released.length, released };
  }

  /** Stops dead, as a crash would: no release, no goodbye; its sessions are adopted by other hosts. */
  async kill(): Promise<void> {
    this.#stopped = true;
    this.#refill();
    if (this.#beat) clearInterval(this.#beat);
    this.#quiet();
    for (const c of this.#consumers.splice(0)) await c.stop();
    await this.#mailbox?.stop();
    for (const running of this.#running.values()) {
      if (running.timer) clearTimeout(running.timer);
      running.unsubscribe();
    }
    for (const id of [...this.#running.keys()]) {
      const running = this.#running.get(id)!;
      this.#running.delete(id);
      running.root.stop();
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#refill();
    if (this.#beat) clearInterval(this.#beat);
    for (const c of this.#consumers.splice(0)) await c.stop();
    this.#quiet();
    for (const id of [...this.#running.keys()]) this.#drop(id);
    // its boxes leave the server, unless it handed sessions back: then the hosts that take those
    // over read what the boxes still hold (or is sent there meanwhile) by joining their consumers,
    // which only their host may make (per-host users); the server removes them an hour after
    await this.#mailbox?.stop({ remove: this.#released.length === 0 });
    // a host that handed sessions back leaves its last heartbeat (status draining, listing them)
    // for the others, which remove it once they are taken
    if (this.#released.length === 0) await this.#hosts?.delete(this.#o.hostId).catch(() => undefined);
  }

  /** Hears no more heartbeats and removes no more records (a host starting later removes them). */
  #quiet(): void {
    void this.#subscription?.unsubscribe().catch(() => undefined);
    this.#subscription = null;
    for (const timer of this.#removals) clearTimeout(timer);
    this.#removals.clear();
  }
}

/**
 * Which host holds a session now, read from its record in the snapshots bucket (see
 * RemoteDeps.holderOf): an owner takes reports only from that host.
 */
export async function snapshotHolders(transport: Transport, ns: string): Promise<(wire: string) => Promise<string | null>> {
  // read-only: the orchestrator's role may read the bucket, not write it
  const bucket = await transport.readKeyValue(subjects(ns).buckets.snapshots);
  return async (wire) => {
    const entry = await bucket.get(wire);
    // asked for every report and command: the head of the record, not its checkpoint
    const head = entry ? RecordHead.safeParse(entry.value) : null;
    return head?.success ? head.data.host : null;
  };
}
