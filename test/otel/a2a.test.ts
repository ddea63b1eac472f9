/**
 * Traces across the Agent2Agent protocol: a run that delegates a sub-task to another a2a
 * (`a2a serve --a2a`) sends its trace context on the HTTP requests (W3C traceparent), and the
 * served run's spans join the delegating run's trace, under the tool call that sent the task.
 * A client of another framework that sends a traceparent gets the served run in its trace.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveA2A } from '../../adapters/a2aProtocol/server.js';
import { startRun } from '../../adapters/assembly/library.js';
import { parseScript } from '../../adapters/model/scripted.js';
import { spanIdOf, traceIdOf } from '../../actors/observation/tracing.js';
import { tempDir } from '../helpers.js';
import { clientOf, drain, message, send, SERVE_SCRIPT, states } from '../a2aProtocol/fixtures.js';
import { spanTree, startReceiver, type ReceivedSpan, type Receiver } from './receiver.js';

const PARENT = parseScript(
  {
    rules: [
      {
        agent: 'architect',
        depth: 0,
        prompt: 'delegate',
        turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: '@translator', prompt: 'say hello in Python', expectedOutput: 'code' }] } }] }, { text: 'Waiting.' }],
        reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'parent done' } }] } }],
      },
    ],
  },
  'the parent script',
);

let rx: Receiver;
let served: Awaited<ReturnType<typeof serveA2A>>;

beforeAll(async () => {
  rx = await startReceiver();
  served = await serveA2A({ workspace: tempDir('a2a-otel-served-'), version: '1', agent: 'coder', notify: () => undefined, run: { scriptData: SERVE_SCRIPT, otel: rx.url, store: 'memory' } as never });
});

afterAll(async () => {
  await served?.close();
  await rx?.close();
});

const roots = (spans: ReceivedSpan[]) => spans.filter((s) => s.name === 'invoke_agent orchestrator');

describe('traces over A2A', () => {
  it('puts the served run under the tool call of the delegating sub-task, in one trace', async () => {
    const run = await startRun({
      workspace: tempDir('a2a-otel-delegate-'),
      task: 'delegate it',
      agent: '@architect',
      store: 'memory',
      notify: () => undefined,
      scriptData: PARENT,
      agents: [{ name: 'translator', description: 'a remote translator', remote: { url: served.url } as never }],
      settings: { permissions: { auto_approve: ['remote_agent_delegation'] } },
      otel: rx.url,
    });
    expect((await run.done).status).toBe('completed');
    const trace = traceIdOf(run.id);
    // the served run ends (and exports) on its own schedule: its root span
    const spans = await rx.until((got) => got.some((s) => s.traceId === trace && s.name === 'invoke_agent orchestrator' && s.parentSpanId !== ''));
    const mine = spans.filter((s) => s.traceId === trace);
    const [own, remote] = [roots(mine).find((s) => !s.parentSpanId)!, roots(mine).find((s) => s.parentSpanId)!];
    expect(own.spanId).toBe(spanIdOf(run.id, 'orchestrator'));
    // the delegating sub-task's call of a2a_remote_task is the served run's parent
    const call = mine.find((s) => s.spanId === remote.parentSpanId)!;
    expect(call?.name, spanTree(mine)).toBe('execute_tool a2a_remote_task');
    const sub = mine.find((s) => s.spanId === call.parentSpanId)!;
    expect(sub.name).toBe('invoke_agent translator');
    expect(sub.parentSpanId).toBe(spanIdOf(run.id, 'w-task'));
    // and the served run's worker, model call and tool call are in the same trace
    const servedRunId = String(remote.attributes['gen_ai.conversation.id']);
    expect(servedRunId).not.toBe(run.id);
    expect(mine.filter((s) => s.attributes['gen_ai.conversation.id'] === servedRunId).map((s) => s.name)).toEqual(expect.arrayContaining(['invoke_agent coder', 'chat scripted', 'execute_tool a2a_subtask_complete']));
  });

  it('continues the trace of a client of another framework that sends a traceparent', async () => {
    const caller = { trace: '0af7651916cd43dd8448eb211c80319c', span: 'b7ad6b7169203331' };
    const client = await clientOf(served.url);
    const events = await drain(send(client, message('say hello in Python', { skill: 'coder' })));
    expect(states(events).at(-1)).toBe('COMPLETED');
    // the SDK's client sends what it is given as service parameters (HTTP headers)
    const traced = await drain(client.sendMessageStream({ tenant: '', message: message('say hello in Python', { skill: 'coder' }), configuration: undefined, metadata: undefined }, { serviceParameters: { traceparent: `00-${caller.trace}-${caller.span}-01` } }));
    expect(states(traced).at(-1)).toBe('COMPLETED');
    const spans = await rx.until((got) => got.some((s) => s.traceId === caller.trace && s.name === 'invoke_agent orchestrator'));
    const root = spans.find((s) => s.traceId === caller.trace && s.name === 'invoke_agent orchestrator')!;
    expect(root.parentSpanId).toBe(caller.span);
    expect(spans.filter((s) => s.traceId === caller.trace).map((s) => s.name)).toEqual(expect.arrayContaining(['invoke_agent coder', 'chat scripted']));
  });
});
