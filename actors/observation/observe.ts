/**
 * Run events projected from XState's inspection stream, rather than emitted by the charts:
 * a session's state is in every snapshot, and its model and tool calls are the messages it
 * appends to its conversation. Emitting events for these from the charts would cost every
 * session on every step even when nobody listens; this observer is attached only when the run's
 * event sink has listeners.
 */
import type { AnyActorRef, InspectionEvent, Subscription } from 'xstate';
import type { EventSink } from '../../machines/ports.js';
import type { ChatMessage, SessionSpec, Usage } from '../../machines/protocol/index.js';
import { sessionStateName } from '../../machines/session.js';
import { correlationOf } from './events.js';

const SESSION_MACHINES = new Set(['worker', 'subtask']);
const FINAL_STATES = new Set(['completed', 'failed', 'cancelled', 'timedOut']);

interface Seen {
  state: string;
  messages: number;
  usage: Usage | null;
  turns: number;
}

interface SessionSnapshot {
  value: unknown;
  context?: { spec?: SessionSpec; messages: ChatMessage[]; usage: Usage; turns: number; meta?: { epoch: number } };
}

/**
 * What of a message the log keeps: all of it up to 100,000 characters (as much as a tool result
 * may give a model), so that a transcript is read whole (the studio folds long entries); past that
 * it is cut, and says so.
 */
const MAX_TOLD = 100_000;
const clipped = (text: string, max = MAX_TOLD) => (text.length > max ? `${text.slice(0, max)}… [${text.length - max} more characters not kept]` : text);

export function observeSessions(root: AnyActorRef, events: EventSink): Subscription | null {
  if (events.listening === false) return null;
  const seen = new WeakMap<AnyActorRef, Seen>();
  const reported = new WeakSet<ChatMessage>();
  return root.system.inspect((event: InspectionEvent) => {
    // microsteps too: a session's last step (its completing tool call, its final state) must be
    // told before its owner hears that it ended, and XState sends the final snapshot after that
    const microstep = event.type === '@xstate.microstep';
    if (event.type !== '@xstate.snapshot' && !microstep) return;
    const ref = event.actorRef as AnyActorRef;
    const logic = (ref as unknown as { logic?: { id?: string } }).logic;
    if (!logic?.id || !SESSION_MACHINES.has(logic.id)) return;
    const snapshot = event.snapshot as unknown as SessionSnapshot;
    const context = snapshot.context;
    if (!context?.spec) return;
    const corr = correlationOf(context.spec);
    let before = seen.get(ref);
    if (!before) {
      // first seen: a session restored from a snapshot (a resume, a host taking it over) brings
      // its conversation, whose calls were told by the life that made them: only what it does
      // from now on is new (a fresh session has no messages yet)
      for (const m of context.messages) reported.add(m);
      before = { state: '', messages: context.messages.length, usage: context.messages.length > 0 ? context.usage : null, turns: context.turns };
      seen.set(ref, before);
    }

    // conversation growth: each new assistant message is a model call, each new tool message a tool
    // call. Messages are immutable objects: the new ones are those at the end not reported yet
    // (a history summarized to fit a smaller window keeps its newest messages as they were).
    let from = context.messages.length;
    while (from > 0 && !reported.has(context.messages[from - 1]!)) from--;
    for (let i = from; i < context.messages.length; i++) reported.add(context.messages[i]!);
    for (let i = from; i < context.messages.length; i++) {
      const m = context.messages[i]!;
      if (m.role === 'assistant') {
        const u = context.usage;
        const p = before.usage;
        events.emit({
          type: 'model.called',
          ...corr,
          data: {
            turn: context.turns,
            text: clipped(m.content),
            toolCalls: (m.toolCalls ?? []).map((c) => c.name),
            ...(m.toolCalls?.length ? { calls: m.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: clipped(JSON.stringify(c.arguments)) })) } : {}),
            inputTokens: u.inputTokens - (p?.inputTokens ?? 0),
            outputTokens: u.outputTokens - (p?.outputTokens ?? 0),
            ...(u.cacheReadTokens ? { cacheReadTokens: u.cacheReadTokens - (p?.cacheReadTokens ?? 0) } : {}),
            ...(u.cacheWriteTokens ? { cacheWriteTokens: u.cacheWriteTokens - (p?.cacheWriteTokens ?? 0) } : {}),
            ...(u.costUsd !== undefined ? { costUsd: u.costUsd - (p?.costUsd ?? 0) } : {}),
            ...(m.replyId ? { replyId: m.replyId } : {}),
            ...(m.model ? { model: m.model } : {}),
            ...(m.profile ? { profile: m.profile } : {}),
          },
        });
      } else if (m.role === 'tool' && m.clipped !== true) {
        const epoch = context.meta?.epoch;
        // the turn too: a provider may reuse call ids from one reply to the next ("call_0")
        events.emit({ type: 'tool.called', ...corr, data: { name: m.name, isError: m.isError === true, content: clipped(m.content), callId: m.toolCallId, turn: context.turns, ...(epoch ? { epoch } : {}) } });
      } else if (m.role === 'user' && m.synthetic === true) {
        // child results, inquiries, answers and notes as the session's model read them (the task itself is its spawn's prompt)
        events.emit({ type: 'message.injected', ...corr, data: { text: clipped(m.content) } });
      }
    }
    // between microsteps a session passes through transient states: only a final one is told early
    const state = sessionStateName(snapshot.value);
    const final = typeof snapshot.value === 'string' && FINAL_STATES.has(snapshot.value);
    if (microstep && !final) {
      if (from < context.messages.length) seen.set(ref, { ...before, messages: context.messages.length, usage: context.usage, turns: context.turns });
      return;
    }
    if (state !== before.state) events.emit({ type: 'session.state', ...corr, data: { state } });
    seen.set(ref, { state, messages: context.messages.length, usage: context.usage, turns: context.turns });
  });
}
