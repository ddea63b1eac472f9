/**
 * The stubs can stand in for a provider in whole runs: a ScriptedModel answers behind the wire,
 * and the real adapter, SDK and HTTP sit in between.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RunConfig } from '../../../actors/config/config.js';
import { RunEventBus } from '../../../actors/observation/events.js';
import { standaloneSpec, startStandalone } from '../../../actors/run.js';
import { createRuntime } from '../../../actors/runtime.js';
import { ToolCatalog } from '../../../actors/tools/index.js';
import { realClock } from '../../../adapters/clock.js';
import { loadRegistry } from '../../../adapters/config.js';
import { AnthropicModel } from '../../../adapters/model/anthropic.js';
import { OpenAIModel } from '../../../adapters/model/openai.js';
import { parseScript, ScriptedModel } from '../../../adapters/model/scripted.js';
import type { Model } from '../../../machines/ports.js';
import { complete, tempDir } from '../../helpers.js';
import { conversation, KEY, signal } from './fixtures.js';
import { scriptedAnthropic, scriptedOpenAI, startAnthropicStub, startOpenAIStub, type Stub } from './stubs.js';

const providers = [
  {
    name: 'openai',
    start: (m: ScriptedModel) => startOpenAIStub(scriptedOpenAI(m)),
    adapter: (s: Stub): Model => new OpenAIModel({ apiKey: KEY, baseURL: s.baseURL, model: 'gpt-test', maxRetries: 0 }),
  },
  {
    name: 'anthropic',
    start: (m: ScriptedModel) => startAnthropicStub(scriptedAnthropic(m)),
    adapter: (s: Stub): Model => new AnthropicModel({ apiKey: KEY, baseURL: s.baseURL, model: 'claude-test', maxRetries: 0 }),
  },
];

let stub: Stub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

describe.each(providers)('scripted $name stub', ({ name, start, adapter }) => {
  it('should give the scripted model the conversation the adapter sent and return its turn', async () => {
    const script = parseScript(
      { rules: [{ agent: 'coder', prompt: 'parser', turns: [{ text: 'one' }, { text: 'two' }, { text: 'three', toolCalls: [{ name: 'read_file', arguments: { path: 'z.ts' } }] }] }] },
      'test',
    );
    const behind = new ScriptedModel(script, realClock);
    stub = await start(behind);
    const reply = await adapter(stub).call(conversation, { signal: signal() });
    const direct = await new ScriptedModel(script, realClock).call(conversation, { signal: signal() });

    expect(reply).toEqual({ ...direct, toolCalls: [{ ...direct.toolCalls[0]!, id: expect.stringMatching(/^stub-[0-9a-f]{8}-t2-c0$/) }] });
    const seen = behind.calls[0]!.request;
    expect(seen).toMatchObject({ system: conversation.system, tools: conversation.tools, depth: 0, agentType: { agentName: 'coder' } });
    // OpenAI has no error flag on tool results; everything else survives the round trip
    const expected = name === 'openai' ? conversation.messages.map((m) => (m.role === 'tool' ? { ...m, isError: undefined } : m)) : conversation.messages;
    expect(seen.messages).toEqual(JSON.parse(JSON.stringify(expected)));
  });

  it('should fail the call without retrying when the scripted turn fails', async () => {
    stub = await start(new ScriptedModel(parseScript({ rules: [{ turns: [{ error: 'scripted failure' }] }] }, 'test'), realClock));
    const first = { ...conversation, messages: conversation.messages.slice(0, 1) };
    await expect(adapter(stub).call(first, { signal: signal() })).rejects.toMatchObject({ code: 'AGENT_ERROR', message: expect.stringContaining('scripted failure') });
    expect(stub.requests).toHaveLength(1);
  });

  it('should run a parent and its child session end to end through the adapter', async () => {
    const behind = new ScriptedModel(
      parseScript(
        {
          rules: [
            {
              agent: 'architect',
              depth: 0,
              turns: [
                { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: '@coder', prompt: 'implement it', expectedOutput: 'code' }] } }] },
                { text: 'waiting for the coder' },
              ],
              reactions: [{ when: 'All your sub-tasks have finished', turn: complete('plan done') }],
            },
            { agent: 'coder', turns: [complete('code written')] },
          ],
        },
        'test',
      ),
      realClock,
    );
    stub = await start(behind);
    const workspace = tempDir();
    const catalog = new ToolCatalog();
    const registry = loadRegistry({ workspace, knownTools: catalog.names() });
    const runtime = createRuntime({ registry, clock: realClock, events: new RunEventBus('stub-run', realClock), model: adapter(stub), catalog });
    const spec = standaloneSpec('design the parser', runtime, { runId: 'stub-run', config: RunConfig.parse({}), workspace, agent: '@architect' });
    const result = await startStandalone(runtime, spec, { clock: realClock }).done;

    expect(result).toMatchObject({ status: 'success', output: 'plan done' });
    // the parent's second call and the child's run concurrently: compare without order
    expect(behind.calls.map((c) => `${c.agentType}@${c.depth}`).sort()).toEqual(['@architect@0', '@architect@0', '@architect@0', '@coder@1']);
    // the parent's last call saw the child's result injected after its spawn's tool result
    const last = behind.calls.at(-1)!.request.messages;
    expect(last.at(-1)).toMatchObject({ role: 'user', synthetic: true, content: expect.stringContaining('code written') });
    expect(stub.requests).toHaveLength(4);
  });
});
