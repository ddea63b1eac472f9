/**
 * A remote A2A agent for the delegation tests, built with the SDK alone (its request handler,
 * in-memory store, Express transport): what another framework's agent looks like to a2a.
 * It behaves by the words of the message: translate (status, artifact, COMPLETED), greet (a
 * Message, no task), ask
 * (INPUT_REQUIRED, then COMPLETED with the answer), fail (FAILED), hang (until cancelled), die
 * (the server goes away mid-stream).
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AgentCard, Role, TaskState, type Message } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import express from 'express';
import { legacyAgentCardRouter } from '@a2a-js/sdk/compat/v0_3/server/express';
import { partsText, textPart } from '../../adapters/a2aProtocol/client.js';

export interface RemoteAgent {
  url: string;
  /** Every message received, in order (text), and the tasks CancelTask was called for. */
  received: string[];
  cancelled: string[];
  authorizations: Array<string | undefined>;
  /** The JSON-RPC methods called, in order (`message/stream` from a v0.3 client, `SendStreamingMessage` from a v1.0 one). */
  methods: string[];
  close(): Promise<void>;
}

function reply(text: string, taskId: string, contextId: string): Message {
  return { messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

export async function remoteAgent(options: { token?: string; version?: '1.0' | '0.3' } = {}): Promise<RemoteAgent> {
  const legacyOnly = options.version === '0.3';
  const methods: string[] = [];
  const received: string[] = [];
  const cancelled: string[] = [];
  const authorizations: Array<string | undefined> = [];
  const hanging = new Map<string, () => void>();
  /** The context of each task that waits for an answer (INPUT_REQUIRED), for its cancel. */
  const asking = new Map<string, string>();
  let server!: Server;
  const status = (bus: ExecutionEventBus, ctx: RequestContext, state: TaskState, text: string) =>
    bus.publish(AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: { state, message: reply(text, ctx.taskId, ctx.contextId), timestamp: new Date().toISOString() }, metadata: undefined }));
  const executor: AgentExecutor = {
    async execute(ctx, bus) {
      const text = partsText(ctx.userMessage.parts);
      received.push(text);
      // a direct reply: a Message and no task at all
      if (!ctx.task && /greet/i.test(text)) return bus.publish(AgentEvent.message(reply('hallo', '', ctx.contextId)));
      bus.publish(AgentEvent.task(ctx.task ?? { id: ctx.taskId, contextId: ctx.contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [ctx.userMessage], metadata: undefined }));
      if (ctx.task) {
        asking.delete(ctx.taskId);
        // the answer to "ask"
        bus.publish(AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId: 'a1', name: 'translation', description: '', parts: [textPart(`in ${text}: bonjour`)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
        return status(bus, ctx, TaskState.TASK_STATE_COMPLETED, 'done');
      }
      if (/translate/i.test(text)) {
        status(bus, ctx, TaskState.TASK_STATE_WORKING, 'looking the word up');
        bus.publish(AgentEvent.artifactUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, artifact: { artifactId: 'a1', name: 'translation', description: '', parts: [textPart('bonjour')], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
        return status(bus, ctx, TaskState.TASK_STATE_COMPLETED, 'done');
      }
      if (/ask/i.test(text)) {
        asking.set(ctx.taskId, ctx.contextId);
        return status(bus, ctx, TaskState.TASK_STATE_INPUT_REQUIRED, 'Which language?');
      }
      if (/fail/i.test(text)) return status(bus, ctx, TaskState.TASK_STATE_FAILED, 'no such language');
      if (/hang/i.test(text)) {
        status(bus, ctx, TaskState.TASK_STATE_WORKING, 'still working');
        await new Promise<void>((done) => hanging.set(ctx.taskId, done));
        return status(bus, ctx, TaskState.TASK_STATE_CANCELED, 'cancelled as asked');
      }
      if (/die/i.test(text)) {
        status(bus, ctx, TaskState.TASK_STATE_WORKING, 'about to go away');
        setTimeout(() => {
          server.closeAllConnections();
          server.close();
        }, 50);
        await new Promise(() => undefined);
      }
      return status(bus, ctx, TaskState.TASK_STATE_REJECTED, `no behaviour for "${text}"`);
    },
    async cancelTask(taskId, bus) {
      cancelled.push(taskId);
      const release = hanging.get(taskId);
      if (release) return release();
      // a task that waits for an answer has no execute running: the cancel ends it here (the SDK waits for that)
      const contextId = asking.get(taskId);
      if (contextId === undefined) return;
      asking.delete(taskId);
      bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: { state: TaskState.TASK_STATE_CANCELED, message: reply('cancelled while waiting for an answer', taskId, contextId), timestamp: new Date().toISOString() }, metadata: undefined }));
    },
  };
  const app = express();
  app.use((req, res, next) => {
    authorizations.push(req.header('authorization'));
    if (options.token && req.path !== '/.well-known/agent-card.json' && req.header('authorization') !== `Bearer ${options.token}`) return void res.status(401).end();
    next();
  });
  await new Promise<void>((done) => (server = app.listen(0, '127.0.0.1', () => done())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const card = AgentCard.fromJSON({
    name: 'translator',
    description: 'translates one word',
    version: '1.0.0',
    supportedInterfaces: [{ url: `${url}/rpc`, protocolBinding: 'JSONRPC', protocolVersion: legacyOnly ? '0.3' : '1.0' }],
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'translate', name: 'translate', description: 'translate a word', tags: [] }],
  });
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.use('/rpc', express.json(), (req, _res, next) => {
    methods.push(String((req.body as { method?: unknown } | undefined)?.method));
    next();
  });
  if (legacyOnly) {
    // a v0.3 server: its card in the v0.3 shape to every client (url, protocolVersion 0.3.0,
    // preferredTransport), and the v0.3 JSON-RPC methods
    app.use('/.well-known/agent-card.json', (req, _res, next) => ((req.headers['a2a-version'] = '0.3'), next()), legacyAgentCardRouter({ agentCardProvider: async () => card }));
  } else {
    app.get('/.well-known/agent-card.json', (_req, res) => void res.json(AgentCard.toJSON(card)));
  }
  app.use('/rpc', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, ...(legacyOnly ? { legacyCompat: { enabled: true } } : {}) }));
  return {
    url,
    received,
    cancelled,
    authorizations,
    methods,
    close: () =>
      new Promise<void>((done) => {
        for (const release of hanging.values()) release();
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}
