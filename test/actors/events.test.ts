/**
 * The facts an event states: what a resumed run or a host emits again is recognised by its key
 * and dropped; what is new is never taken for a repeat.
 */
import { describe, expect, it } from 'vitest';
import { RunEventBus, factKey } from '../../actors/observation/events.js';
import type { RunEvent } from '../../machines/protocol/index.js';

const tool = (callId: string, turn: number, epoch?: number) =>
  ({ type: 'tool.called', subTaskId: 'w-a.1', data: { name: 'charge', isError: false, content: 'ok', callId, turn, ...(epoch ? { epoch } : {}) } }) as Pick<RunEvent, 'type' | 'subTaskId' | 'parentId' | 'taskId' | 'data'>;

describe('facts of model and tool calls', () => {
  it('should know a tool result told again (same session, turn and call) and keep a provider\'s reused call id apart', () => {
    expect(factKey(tool('call_0', 2))).toBe(factKey(tool('call_0', 2)));
    // some providers number calls per reply: "call_0" in turn 2 and in turn 3 are two calls
    expect(factKey(tool('call_0', 2))).not.toBe(factKey(tool('call_0', 3)));
    // a session started over (reinitialized) numbers its turns again
    expect(factKey(tool('call_0', 2))).not.toBe(factKey(tool('call_0', 2, 1)));
  });

  it('should take a model reply given back from the journal for the call it was, and a new call for a new one', () => {
    const model = (replyId?: string) => ({ type: 'model.called', subTaskId: 'w-a.1', data: { toolCalls: [], inputTokens: 1, outputTokens: 1, ...(replyId ? { replyId } : {}) } }) as Pick<RunEvent, 'type' | 'subTaskId' | 'parentId' | 'taskId' | 'data'>;
    expect(factKey(model('w-a.1:m0.3:abcd'))).toBe(factKey(model('w-a.1:m0.3:abcd')));
    // asked again by a later life (a new call, paid again): its own record
    expect(factKey(model('w-a.1:m0.3:ef01'))).not.toBe(factKey(model('w-a.1:m0.3:abcd')));
    // without a journal, every call is an occurrence of its own
    expect(factKey(model())).toBeUndefined();
  });

  it('should drop a repeat on the bus and hand on everything else', () => {
    const bus = new RunEventBus('r', { now: () => 0 } as never);
    const seen: RunEvent[] = [];
    bus.subscribe((e) => seen.push(e));
    const emit = (e: ReturnType<typeof tool>) => bus.emit({ type: e.type, subTaskId: e.subTaskId, data: e.data } as never);
    expect([emit(tool('call_0', 2)), emit(tool('call_0', 2)), emit(tool('call_0', 3))]).toEqual([true, false, true]);
    expect(seen.map((e) => e.data.turn)).toEqual([2, 3]);
  });
});
