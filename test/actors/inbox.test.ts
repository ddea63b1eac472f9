/**
 * The orchestrator's inbox on its own: priority order under a burst, FIFO within a priority,
 * de-duplication, journaling, metrics, and a restore that keeps order and refuses what it saw.
 */
import { createActor, SimulatedClock, type ActorLogic, type AnyActorRef, type Snapshot } from 'xstate';
import { describe, expect, it } from 'vitest';
import { createInboxLogic, type InboxReply } from '../../actors/people/inbox.js';
import { QUEUE_PRIORITY, type QueueMessage, type QueueMessageType } from '../../machines/protocol/index.js';

const TYPES: QueueMessageType[] = ['status_update', 'permission_request', 'question', 'completion', 'error', 'idle_response'];

function message(id: string, type: QueueMessageType): QueueMessage {
  return { id, type, priority: QUEUE_PRIORITY[type], timestamp: 0, runId: 'r', planId: 'p', taskId: 't', workerId: 'w', worktreePath: '.', content: null };
}

/** A stand-in owner that records what the inbox offers and answers HANDLED when told to. */
function owner() {
  const offered: QueueMessage[] = [];
  const drained: number[] = [];
  const logic: ActorLogic<Snapshot<undefined>, InboxReply> = {
    transition: (s, e) => {
      if (e.type === 'INBOX_MESSAGE') offered.push(e.message);
      else drained.push(e.received);
      return s;
    },
    getInitialSnapshot: () => ({ status: 'active', output: undefined, error: undefined }),
    getPersistedSnapshot: (s) => s,
  };
  const ref = createActor(logic);
  ref.start();
  return { ref: ref as unknown as AnyActorRef, offered, drained };
}

function start(clock = new SimulatedClock(), snapshot?: Snapshot<unknown>) {
  const o = owner();
  const journal = { accepted: [] as string[], handled: [] as string[] };
  const logic = createInboxLogic({
    clock,
    journal: { accepted: (m) => journal.accepted.push(m.id), handled: (id) => journal.handled.push(id) },
  });
  const inbox = createActor(logic, { parent: o.ref, ...(snapshot ? { snapshot } : {}) } as never);
  inbox.start();
  /** Handles what was offered, one at a time, until nothing is left. */
  const drain = (each?: () => void) => {
    for (let i = 0; i < o.offered.length; i++) {
      each?.();
      inbox.send({ type: 'HANDLED', id: o.offered[i]!.id });
    }
  };
  return { inbox, ...o, journal, clock, drain };
}

describe('inbox', () => {
  it('hands out a burst of mixed messages by priority, FIFO within each priority', () => {
    const t = start();
    t.inbox.send({ type: 'ENQUEUE', messages: [message('first', 'status_update')] });
    // a burst while the first is being handled: 600 messages in a scrambled order
    const burst: QueueMessage[] = [];
    for (let i = 0; i < 600; i++) burst.push(message(`m${i}`, TYPES[(i * 7) % TYPES.length]!));
    t.inbox.send({ type: 'ENQUEUE', messages: burst });
    t.drain();
    const rank = { critical: 0, high: 1, normal: 2, low: 3 } as const;
    const expected = [...burst].sort((a, b) => rank[a.priority] - rank[b.priority]); // stable: FIFO within a priority
    expect(t.offered.map((m) => m.id)).toEqual(['first', ...expected.map((m) => m.id)]);
    expect(t.offered.slice(1, 101).every((m) => m.type === 'permission_request')).toBe(true);
    expect(t.offered.at(-1)!.type).toBe('status_update');
    expect(t.journal.handled).toEqual(t.offered.map((m) => m.id));
  });

  it('offers one message at a time: nothing more until HANDLED', () => {
    const t = start();
    t.inbox.send({ type: 'ENQUEUE', messages: [message('a', 'question'), message('b', 'permission_request')] });
    expect(t.offered.map((m) => m.id)).toEqual(['b']);
    t.inbox.send({ type: 'HANDLED', id: 'not-in-flight' });
    expect(t.offered).toHaveLength(1);
    t.inbox.send({ type: 'HANDLED', id: 'b' });
    expect(t.offered.map((m) => m.id)).toEqual(['b', 'a']);
  });

  it('refuses a message id it has seen, and counts it', () => {
    const t = start();
    t.inbox.send({ type: 'ENQUEUE', messages: [message('a', 'completion'), message('a', 'completion')] });
    t.drain();
    t.inbox.send({ type: 'ENQUEUE', messages: [message('a', 'completion')] });
    expect(t.offered.map((m) => m.id)).toEqual(['a']);
    expect(t.journal.accepted).toEqual(['a']);
    const metrics = (t.inbox.getSnapshot() as unknown as { inbox: { metrics: { duplicates: number; accepted: number } } }).inbox.metrics;
    expect(metrics).toMatchObject({ accepted: 1, duplicates: 2 });
    // each ENQUEUE that left it empty is reported with the count of ENQUEUEs received
    expect(t.drained.at(-1)).toBe(2);
  });

  it('measures depth, waiting time and processing time on its clock', () => {
    const t = start();
    t.inbox.send({ type: 'ENQUEUE', messages: [message('a', 'question'), message('b', 'question'), message('c', 'question')] });
    t.drain(() => t.clock.increment(100));
    const m = (t.inbox.getSnapshot() as unknown as { inbox: { metrics: Record<string, number> } }).inbox.metrics;
    expect(m).toMatchObject({ accepted: 3, handled: 3, depth: 0, maxDepth: 3, processTotalMs: 300, processMaxMs: 100, waitMaxMs: 200 });
    expect(m.waitTotalMs).toBe(0 + 100 + 200);
  });

  it('restores with its queue in order, the message in flight offered again, and the ids it saw refused', () => {
    const t = start();
    t.inbox.send({ type: 'ENQUEUE', messages: [message('q1', 'question')] });
    t.inbox.send({ type: 'ENQUEUE', messages: [message('s1', 'status_update'), message('p1', 'permission_request'), message('c1', 'completion')] });
    t.inbox.send({ type: 'HANDLED', id: 'q1' }); // then p1 is in flight
    expect(t.offered.map((m) => m.id)).toEqual(['q1', 'p1']);
    const persisted = JSON.parse(JSON.stringify(t.inbox.getPersistedSnapshot())) as Snapshot<unknown>;

    const r = start(new SimulatedClock(), persisted);
    expect(r.offered.map((m) => m.id)).toEqual(['p1']); // offered again on start
    r.inbox.send({ type: 'ENQUEUE', messages: [message('q1', 'question'), message('c1', 'completion'), message('e1', 'error')] });
    r.drain();
    expect(r.offered.map((m) => m.id)).toEqual(['p1', 'c1', 'e1', 's1']);
    expect(r.journal.accepted).toEqual(['e1']);
  });
});
