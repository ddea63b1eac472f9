/**
 * A run's control subject over NATS, `a2a.<ns>.control.<runId>.<user>` (request/reply), answered
 * by the run's process (`a2a run --nats`, and each run of `a2a serve --a2a --nats`): what the
 * studio does to a run whose files it cannot reach, exactly as it does to a local run through the
 * run's control directory.
 *
 * - Changes (`ControlRequest`: answer, approve_all, pause, unpause, retry, redirect, reassign,
 *   reinitialize, resume, switch_model) go to the same `handleControl` the control directory uses
 *   and get the same `ControlReply`; `stop` cancels the tree as `a2a stop` does.
 * - Reads (`status`, `events`, `artifacts`) change nothing: the run's record and live status, its
 *   log page by page (the same events with the same indices as its `events.jsonl`), its artifacts.
 * - Every request is parsed with `RunControlMessage`; an invalid one is answered with an error
 *   naming the field, and changes nothing.
 * - Who asked (`by`) is the subject's last token: a NATS user's name, which the server lets only
 *   that user publish under (`a2a nats users --studio <name>`). The payload's `by` (the person at
 *   the studio) is kept beside it, never instead of it: "ann (studio) via studio-ops". On a server
 *   without users nothing binds the token, as nothing binds the `by` of a control file.
 * - When the run ends, a studio that follows it (it read the log within the last second) is given
 *   up to 2 s to read the log's last events (`run.finished`) before the subject goes: otherwise it
 *   would learn of the end only from its request's timeout.
 */
import { inlineIssues } from '../../actors/errors.js';
import type { Transport, TransportMessage, TransportSubscription } from '../../machines/ports.js';
import { ControlUser, RunControlMessage, type ControlRequest, type RunEvent } from '../../machines/protocol/index.js';
import { subjects } from '../../actors/distribution/remote.js';
import { errorText } from '../../machines/errorText.js';
import type { ControlReply } from '../runHost.js';

/** What the run's process does for each request. */
export interface RunControlHandlers {
  /** A change, as the control directory's requests are carried out. */
  control(request: ControlRequest): ControlReply;
  /** The emergency stop. */
  stop(reason: string, by: string): ControlReply;
  /** The run's record (run.json) and its status now (status.json's shape; null before the run started). */
  status(): { record: unknown; status: unknown };
  /** The run's log as it stands (every event written or about to be: the handler flushes first). */
  events(): readonly RunEvent[];
  artifacts(): Promise<unknown[]>;
}

/** What one `events` reply holds at most (JSON bytes): well under the 1 MB a NATS message may hold by default. */
export const EVENTS_REPLY_BYTES = 256 * 1024;

/** A studio that read the log this recently follows the run (it reads every 250 ms). */
const FOLLOWING_MS = 1_000;
/** How long a run that ends waits at most for its followers to read its last events. */
const LINGER_MS = 2_000;

/** An event too large for a reply alone is sent without its data, saying so (its index stays). */
const EVENT_ALONE_BYTES = 768 * 1024;

/** The events after index `after`, as many as `budget` bytes of JSON hold (at least one). */
export function eventsPage(all: readonly RunEvent[], after: number, budget = EVENTS_REPLY_BYTES): { from: number; events: RunEvent[]; more: boolean } {
  const from = Math.max(0, after + 1);
  const events: RunEvent[] = [];
  let bytes = 0;
  let i = from;
  for (; i < all.length; i++) {
    let event = all[i]!;
    let size = JSON.stringify(event).length;
    if (size > EVENT_ALONE_BYTES) {
      event = { ...event, data: { omitted: `this event's data (${size} bytes) is larger than one NATS message holds: read it in the run's log (events.jsonl)` } };
      size = JSON.stringify(event).length;
    }
    if (events.length > 0 && bytes + size > budget) break;
    events.push(event);
    bytes += size;
  }
  return { from, events, more: i < all.length };
}

/** `by` of a change: the NATS user who asked, with the person the payload names beside it. */
export function controlBy(payloadBy: string, user: string): string {
  return payloadBy === user ? user : `${payloadBy} via ${user}`;
}


/** Answers the run's control subject until `stop()`. */
export async function serveRunControl(
  transport: Transport,
  ns: string,
  runId: string,
  handlers: RunControlHandlers,
  onError: (message: string) => void = () => {},
): Promise<{ stop(): Promise<void> }> {
  const s = subjects(ns);
  /** When a studio last read the log, and how far (the log's index after its last event read). */
  let followedAt = 0;
  let readTo = 0;
  const answer = async (message: TransportMessage): Promise<unknown> => {
    const user = ControlUser.safeParse(s.controlUser(message.subject, runId));
    if (!user.success) return { ok: false, error: `invalid subject ${message.subject}: its last token names who asks (${inlineIssues(user.error.issues)})` };
    const parsed = RunControlMessage.safeParse(message.data);
    if (!parsed.success) return { ok: false, error: `invalid request: ${inlineIssues(parsed.error.issues)}` };
    const request = parsed.data;
    switch (request.command) {
      case 'status':
        return { ok: true, ...handlers.status() };
      case 'events': {
        const page = eventsPage(handlers.events(), request.after);
        followedAt = Date.now();
        readTo = Math.max(readTo, page.from + page.events.length);
        return { ok: true, ...page };
      }
      case 'artifacts':
        return { ok: true, artifacts: await handlers.artifacts() };
      case 'stop':
        return handlers.stop(request.reason ?? `stopped by ${controlBy(request.by, user.data)}`, controlBy(request.by, user.data));
      default:
        return handlers.control({ ...request, by: controlBy(request.by, user.data) });
    }
  };
  const sub: TransportSubscription = await transport.subscribe(s.controlOf(runId), (message) => {
    void (async () => {
      let reply: unknown;
      try {
        reply = await answer(message);
      } catch (error) {
        reply = { ok: false, error: `cannot process the request: ${errorText(error)}` };
      }
      try {
        await transport.respond(message, reply);
      } catch (error) {
        // a reply that cannot go (over the server's size, the connection gone): the asker is told what it can be
        onError(`the reply on ${message.subject} could not be sent: ${errorText(error)}`);
        await transport.respond(message, { ok: false, error: `the reply could not be sent: ${errorText(error)}` }).catch(() => undefined);
      }
    })();
  });
  return {
    async stop() {
      const deadline = Date.now() + LINGER_MS;
      while (Date.now() < deadline && Date.now() - followedAt < FOLLOWING_MS && readTo < handlers.events().length) await new Promise((r) => setTimeout(r, 25));
      await sub.unsubscribe();
    },
  };
}
