/** Shared by the A2A protocol tests: a script for the served runs, and the SDK client's calls, typed once. */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { bearerFetch, partsText } from '../../adapters/a2aProtocol/client.js';
import { parseScript } from '../../adapters/model/scripted.js';

const complete = (output: string) => ({ name: 'a2a_subtask_complete', arguments: { status: 'success', output } });

/** What the served workers do, by the task's words. */
export const SERVE_SCRIPT = parseScript({
  rules: [
    { agent: 'coder', depth: 0, prompt: 'hello', turns: [{ text: 'Writing it.', toolCalls: [complete('print("hello world")')] }] },
    {
      agent: 'coder',
      depth: 0,
      prompt: 'fan out',
      turns: [
        {
          toolCalls: [
            {
              name: 'a2a_spawn_parallel_subtasks',
              arguments: { subtasks: [{ agentType: '@coder', prompt: 'part A', expectedOutput: 'A' }, { agentType: '@coder', prompt: 'part B', expectedOutput: 'B' }] },
            },
          ],
        },
        { text: 'Waiting for the parts.' },
      ],
      reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [complete('A and B, combined')] } }],
    },
    { agent: 'coder', depth: 1, prompt: 'part', turns: [{ toolCalls: [complete('part done')] }] },
    {
      agent: 'coder',
      depth: 0,
      prompt: 'which database',
      turns: [{ toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: 'Which database should I use?' } }] }, { text: 'Waiting for the answer.' }],
      reactions: [{ when: 'postgres', turn: { toolCalls: [complete('schema for postgres')] } }],
    },
    {
      agent: 'coder',
      depth: 0,
      prompt: 'write a file',
      turns: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'notes' } }] }, { toolCalls: [complete('file written')] }],
    },
    { agent: 'coder', depth: 0, prompt: 'forever', turns: [{ hang: true }] },
    {
      agent: 'coder',
      depth: 0,
      prompt: 'two files at once',
      turns: [
        {
          toolCalls: [
            {
              name: 'a2a_spawn_parallel_subtasks',
              arguments: { subtasks: [{ agentType: '@coder', prompt: 'permit file a.txt', expectedOutput: 'a' }, { agentType: '@coder', prompt: 'permit file b.txt', expectedOutput: 'b' }] },
            },
          ],
        },
        { text: 'Waiting for both.' },
      ],
      reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [complete('both written')] } }],
    },
    { agent: 'coder', depth: 1, prompt: 'permit file a.txt', turns: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'a' } }] }, { toolCalls: [complete('a written')] }] },
    { agent: 'coder', depth: 1, prompt: 'permit file b.txt', turns: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'b.txt', content: 'b' } }] }, { toolCalls: [complete('b written')] }] },
    { agent: 'coder', depth: 0, prompt: 'slow', turns: [{ delayMs: 1500, toolCalls: [complete('slow but done')] }] },
  ],
}, 'the served runs\' script');

export async function clientOf(url: string, token?: string): Promise<Client> {
  const fetchImpl = bearerFetch(token);
  const { JsonRpcTransportFactory, ClientFactoryOptions } = await import('@a2a-js/sdk/client');
  return new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] })).createFromUrl(url);
}

export function message(text: string, options: { skill?: string; taskId?: string; contextId?: string; data?: unknown } = {}): Message {
  return {
    messageId: randomUUID(),
    contextId: options.contextId ?? '',
    taskId: options.taskId ?? '',
    role: Role.ROLE_USER,
    parts: [
      { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' },
      ...(options.data !== undefined ? [{ content: { $case: 'data' as const, value: options.data }, metadata: undefined, filename: '', mediaType: 'application/json' }] : []),
    ],
    metadata: options.skill ? { skill: options.skill } : undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

export function send(client: Client, m: Message): AsyncGenerator<StreamResponse> {
  return client.sendMessageStream({ tenant: '', message: m, configuration: undefined, metadata: undefined });
}

/** Every event of a stream, until it ends (or `stop` says so). */
export async function drain(stream: AsyncGenerator<StreamResponse>, stop?: (e: StreamResponse) => boolean): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) {
    out.push(e);
    if (stop?.(e)) break;
  }
  return out;
}

export function states(events: StreamResponse[]): string[] {
  return events.flatMap((e) => (e.payload?.$case === 'statusUpdate' ? [TaskState[e.payload.value.status!.state].replace('TASK_STATE_', '')] : e.payload?.$case === 'task' ? [`task:${TaskState[e.payload.value.status!.state].replace('TASK_STATE_', '')}`] : []));
}

export function taskIdOf(events: StreamResponse[]): string {
  for (const e of events) {
    const p = e.payload;
    if (p?.$case === 'task') return p.value.id;
    if (p?.$case === 'statusUpdate') return p.value.taskId;
  }
  throw new Error('no task in the stream');
}

export function lastStatusText(events: StreamResponse[]): string {
  for (let i = events.length - 1; i >= 0; i--) {
    const p = events[i]!.payload;
    if (p?.$case === 'statusUpdate') return partsText(p.value.status?.message?.parts);
  }
  return '';
}

export function artifacts(task: Task): string[] {
  return task.artifacts.map((a) => partsText(a.parts));
}

export function seqOf(e: StreamResponse): number | undefined {
  const p = e.payload;
  if (p?.$case === 'statusUpdate' || p?.$case === 'artifactUpdate') return p.value.metadata?.seq as number | undefined;
  return undefined;
}
