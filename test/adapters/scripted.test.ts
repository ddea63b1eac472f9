import { describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { parseScript, ScriptedModel } from '../../adapters/model/scripted.js';
import type { ModelRequest } from '../../machines/ports.js';
import type { ChatMessage } from '../../machines/protocol/index.js';

const request = (messages: ChatMessage[], agentName = 'coder', depth = 1): ModelRequest => ({
  system: 'sys',
  messages,
  tools: [{ name: 'a2a_subtask_complete', description: '', parameters: {} }],
  agentType: { raw: `@${agentName}`, backend: 'default', agentName },
  sessionId: 's1',
  depth,
});
const signal = () => new AbortController().signal;

describe('scripted model', () => {
  const script = parseScript(
    {
      rules: [
        {
          agent: 'coder',
          prompt: 'parser',
          turns: [{ text: 'one' }, { text: 'two', toolCalls: [{ name: 'a2a_await_subtasks', arguments: { ids: '$children', first: '$children[0]' } }] }],
          reactions: [{ when: 'appear to be idle', turn: { text: 'reacting' } }],
        },
        { agent: '*', turns: [{ text: 'fallback rule' }] },
      ],
    },
    'test',
  );

  it('should pick the rule by agent and task pattern and play its turns in order', async () => {
    const model = new ScriptedModel(script, new SimulatedClock());
    const task: ChatMessage = { role: 'user', content: 'write the parser' };
    expect((await model.call(request([task]), { signal: signal() })).text).toBe('one');
    const spawned: ChatMessage[] = [
      task,
      { role: 'assistant', content: 'one', toolCalls: [{ id: 'c', name: 'a2a_spawn_parallel_subtasks', arguments: {} }] },
      { role: 'tool', toolCallId: 'c', name: 'a2a_spawn_parallel_subtasks', content: JSON.stringify({ subTaskIds: ['st-7', 'st-8'] }) },
    ];
    const two = await model.call(request(spawned), { signal: signal() });
    expect(two.toolCalls).toEqual([{ id: 's1-t1-c0', name: 'a2a_await_subtasks', arguments: { ids: ['st-7', 'st-8'], first: 'st-7' } }]);
    expect((await model.call(request([{ role: 'user', content: 'something else' }]), { signal: signal() })).text).toBe('fallback rule');
    expect(model.calls).toHaveLength(3);
    expect(model.calls[0]).toMatchObject({ sessionId: 's1', agentType: '@coder', depth: 1, reply: { text: 'one' } });
  });

  it('should answer an injected message with a matching reaction without losing its place in the turns', async () => {
    const model = new ScriptedModel(script, new SimulatedClock());
    const messages: ChatMessage[] = [
      { role: 'user', content: 'write the parser' },
      { role: 'assistant', content: 'one' },
      { role: 'user', content: '[a2a] You appear to be idle.', synthetic: true },
    ];
    expect((await model.call(request(messages), { signal: signal() })).text).toBe('reacting');
    messages.push({ role: 'assistant', content: 'reacting' }, { role: 'user', content: 'Message from parent: go on', synthetic: true });
    expect((await model.call(request(messages), { signal: signal() })).text).toBe('two');
  });

  it('should delay on the clock, fail, or hang until cancelled as the turn says', async () => {
    const clock = new SimulatedClock();
    const model = new ScriptedModel(
      parseScript({ rules: [{ prompt: 'slow', turns: [{ delayMs: 1000, text: 'late' }] }, { prompt: 'bad', turns: [{ error: 'boom' }] }, { prompt: 'stuck', turns: [{ hang: true }] }] }, 't'),
      clock,
    );
    let late = '';
    void model.call(request([{ role: 'user', content: 'slow' }]), { signal: signal() }).then((r) => (late = r.text));
    clock.increment(999);
    await new Promise((r) => setImmediate(r));
    expect(late).toBe('');
    clock.increment(1);
    await new Promise((r) => setImmediate(r));
    expect(late).toBe('late');
    await expect(model.call(request([{ role: 'user', content: 'bad' }]), { signal: signal() })).rejects.toThrow('boom');
    const abort = new AbortController();
    const stuck = model.call(request([{ role: 'user', content: 'stuck' }]), { signal: abort.signal });
    abort.abort(new Error('cancelled'));
    await expect(stuck).rejects.toThrow('cancelled');
    expect(model.calls.at(-1)).toMatchObject({ error: 'cancelled' });
  });

  it('should explain what is missing when no rule matches', async () => {
    const model = new ScriptedModel(parseScript({ rules: [] }, 't'), new SimulatedClock());
    const reply = await model.call(request([{ role: 'user', content: 'anything' }]), { signal: signal() });
    expect(reply.toolCalls[0]).toMatchObject({ name: 'a2a_subtask_complete', arguments: { status: 'partial' } });
    expect(reply.text).toContain('has no rule for @coder');
  });

  it('should reject an invalid script naming the field', () => {
    expect(() => parseScript({ rules: [{ agent: 'x', turns: [{ txt: 'typo' }], prompt: '(' }] }, 'my-script.json')).toThrowErrorMatchingInlineSnapshot(`
      [A2AError: my-script.json: invalid script:
        - rules[0].prompt: not a valid regular expression
        - rules[0].turns[0]: Unrecognized key: "txt"]
    `);
  });
});
