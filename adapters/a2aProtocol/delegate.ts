/**
 * Delegation to remote A2A agents. An agent file with `remote: { url, token?, timeoutMs? }` is
 * an agent type like any other: a parent spawns it with `a2a_spawn_subtask`, and its sub-task is
 * a session of the runtime (so it reports exactly once, is cancelled with its parent, is restored
 * on another host, and its questions go to its parent). Two pieces do the work:
 *
 * - `RemoteAgentDriver`, the session's "model": a function of the conversation, no I/O. It reads
 *   the last `a2a_remote_task` result and decides the next step: send the task, wait for more,
 *   pass a remote status on to the parent (`a2a_notify_orchestrator` status), ask the parent what
 *   the remote agent asks (INPUT_REQUIRED → question), forward the parent's answer, and finish
 *   with `a2a_subtask_complete` (COMPLETED → success; FAILED, REJECTED, CANCELED, a timeout, an
 *   unreachable server, a broken stream → failed with the reason).
 * - `a2a_remote_task`, the tool that talks to the server with the SDK's client: it asks the
 *   `remote_agent_delegation` permission before the first send (the matrix, default ask_user), and
 *   returns after each step of the remote task. Its results are in the conversation, so a session
 *   restored elsewhere picks the remote task up again (resubscribe) instead of sending it twice.
 *   A session that ends (cancelled with its parent, timed out, failed) while the tool follows the
 *   task aborts the tool's signal, which sends CancelTask; one that ends while it runs no tool
 *   (idle, waiting for its parent's answer to the remote agent's question) is watched from the
 *   call that left the task open (`leaveOpen`), which sends it then. Each change of the remote
 *   task's state is an `a2a.delegated` run event (the studio's A2A view, the monitor's lines).
 */
import { createHash } from 'node:crypto';
import type { StreamResponse } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { z } from 'zod';
import type { Model, ModelRequest } from '../../machines/ports.js';
import type { ChatMessage, ModelReply, ToolCall } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import { redactText, secrets } from '../../actors/config/secrets.js';
import { correlationOf } from '../../actors/observation/events.js';
import type { ToolContext, ToolDefinition } from '../../actors/tools/index.js';
import { errorText } from '../../machines/errorText.js';
import { messagesIn } from '../../actors/session/prompts.js';
import { fromFile } from '../model/secrets.js';
import { callHeaders } from '../../actors/observation/tracing.js';
import type { RemoteState, RemoteView } from './client.js';

/** The A2A SDK's client side, loaded when a remote agent is first asked (a run without one never loads it). */
const a2aClient = () => import('./client.js');
type ClientModule = Awaited<ReturnType<typeof a2aClient>>;

export const REMOTE_TOOL = 'a2a_remote_task';
const DEFAULT_TIMEOUT_MS = 10 * 60_000;
const DEFAULT_SILENCE_MS = 2 * 60_000;
/** How long a cancellation of the remote task may take before the session ends without its answer. */
const CANCEL_WAIT_MS = 3_000;

const RemoteArgs = z.strictObject({
  action: z.enum(['send', 'wait', 'reply']).describe('send: start the remote task; wait: follow it; reply: send the text into it (an answer).'),
  taskId: z.string().max(256).optional(),
  contextId: z.string().max(256).optional(),
  text: z.string().max(200_000).optional(),
  /** When the remote task must be over (ms since the epoch), set by the first send. */
  deadline: z.number().int().optional(),
  /** Where the remote task stood when the driver last saw it (the run hears of a change). */
  state: z.string().max(40).optional(),
});
type RemoteArgs = z.infer<typeof RemoteArgs>;

/** What the tool returns (its result's content, as JSON), and what the driver reads back. */
const RemoteResult = z.object({
  remote: z.object({
    taskId: z.string(),
    contextId: z.string(),
    state: z.string(),
    status: z.string(),
    artifacts: z.record(z.string(), z.string()),
    deadline: z.number(),
    error: z.string().optional(),
  }),
});
type RemoteResult = z.infer<typeof RemoteResult>['remote'];

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

function tokenOf(ctx: ToolContext, remote: NonNullable<ReturnType<ToolContext['registry']['get']>['remote']>, secretsFile: string | undefined, { tokenTransportProblem }: ClientModule): string | undefined {
  const ref = remote.token;
  if (!ref) return undefined;
  if (!remote.declaredIn.trusted) {
    throw new A2AError(
      'TOOL_NOT_ALLOWED',
      `@${ctx.spec.agent.agentName} is declared in ${remote.declaredIn.where}, a repository's file: it may not send a token from your environment or secrets file. Declare the agent in your user config (~/.config/a2a) or in code. Nothing was sent.`,
    );
  }
  const insecure = tokenTransportProblem(remote.url);
  if (insecure) throw new A2AError('TOOL_NOT_ALLOWED', `@${ctx.spec.agent.agentName}: ${insecure}. Nothing was sent.`, { where: 'remote.url' });
  const found = 'env' in ref ? process.env[ref.env]?.trim() : secretsFile ? fromFile(ref.secret, secretsFile) : undefined;
  if (!found) {
    const source = 'env' in ref ? `the environment variable ${ref.env}` : `"${ref.secret}" in ${secretsFile ?? 'the secrets file (none is configured)'}`;
    throw new A2AError('CONFIGURATION_INVALID', `@${ctx.spec.agent.agentName}: remote.token: ${source} is not set. Nothing was sent.`, { where: 'remote.token' });
  }
  secrets.add('env' in ref ? ref.env : `a2a-remote-${ref.secret}`, found);
  return found;
}

/** The text a remote agent gets: the sub-task's prompt and what is expected back. */
function taskText(ctx: ToolContext): string {
  return `${ctx.spec.prompt}\n\nExpected output: ${ctx.spec.expectedOutput}`;
}

/**
 * Reads a stream until the remote task needs the driver: a terminal state, a request for input,
 * or a status message with text (a progress report to pass on). Silence for `silenceMs` breaks it.
 */
async function follow(stream: AsyncGenerator<StreamResponse>, view: RemoteView, silenceMs: number, attempt: AbortController, { fold, TERMINAL }: ClientModule): Promise<'stop' | 'ended'> {
  let timer: NodeJS.Timeout | undefined;
  let silent!: () => void;
  const silence = new Promise<'silent'>((done) => (silent = () => done('silent')));
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(silent, silenceMs);
  };
  arm();
  try {
    for (;;) {
      const next = await Promise.race([stream.next(), silence]);
      if (next === 'silent') throw new Error(`the remote agent sent nothing for ${Math.round(silenceMs / 1000)} s`);
      if (next.done) return 'ended';
      arm();
      const before = view.status;
      const kind = fold(view, next.value);
      if (kind === 'message') return 'stop';
      if (TERMINAL.has(view.state) || view.state === 'input-required' || view.state === 'auth-required') return 'stop';
      if (kind === 'status' && view.status && view.status !== before) return 'stop';
    }
  } finally {
    clearTimeout(timer);
    // the request behind the stream ends with it (a silent one included)
    attempt.abort();
  }
}

export interface RemoteToolOptions {
  /** The secrets file a `token: { secret }` is read from. */
  secretsFile?: string;
}

export function remoteAgentTool(options: RemoteToolOptions = {}): ToolDefinition<typeof RemoteArgs> {
  return {
    name: REMOTE_TOOL,
    description: 'Talk to the remote A2A agent this session stands for (only its driver calls this).',
    parameters: RemoteArgs,
    // sent again after a restore, it names its message as before: the server keeps one task
    idempotent: true,
    async execute(args: RemoteArgs, ctx: ToolContext) {
      const definition = ctx.registry.get(ctx.spec.agent.agentName);
      const remote = definition.remote;
      if (!remote) throw new A2AError('TOOL_NOT_ALLOWED', `@${ctx.spec.agent.agentName} is not a remote A2A agent (its file has no "remote:"); ${REMOTE_TOOL} is for remote agents only.`);
      // this call follows the remote task from here: the watch a call before it left goes
      left.get(wireKey(ctx))?.();
      const a2a = await a2aClient();
      const { clientFor, emptyView, foldTask, TERMINAL, userMessage } = a2a;
      const timeoutMs = remote.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      let deadline = args.deadline ?? 0;
      const view = emptyView(args.taskId ?? '', args.contextId ?? '');
      let client: Client | undefined;
      const result = (error?: string): { isError: boolean; content: string } => {
        const state = error ? (view.state === 'canceled' ? 'canceled' : 'failed') : view.state;
        // the run hears where the remote task stands now (a2a.delegated), and a task still open
        // when the call returns is cancelled if the session ends before another call follows it
        if (view.taskId) tell(ctx, remote.url, view, args.state, error ? { state, error } : {});
        if (!error && client && view.taskId && !TERMINAL.has(view.state)) leaveOpen(ctx, remote.url, client, view);
        return { isError: false, content: JSON.stringify({ remote: { ...view, deadline, ...(error ? { state, error } : {}) } }) };
      };
      if (args.action === 'send') {
        const answer = await ctx.permit({ action: 'remote_agent_delegation', detail: `send to ${remote.url}: ${clip(ctx.spec.prompt, 300)}` });
        if (!answer.approved) {
          view.state = 'rejected';
          return result(`permission remote_agent_delegation was denied by ${answer.decidedBy}${answer.reason ? `: ${answer.reason}` : ''}; nothing was sent to ${remote.url}`);
        }
      }
      // the remote task's time starts when it is sent (not while a person decided)
      if (!deadline) deadline = ctx.clock.now() + timeoutMs;
      const token = tokenOf(ctx, remote, options.secretsFile, a2a);
      try {
        client = await clientFor(remote.url, token);
      } catch (e) {
        return result(`the remote agent at ${remote.url} could not be reached: ${errorText(e)}`);
      }
      const reached = client;
      const remaining = deadline - ctx.clock.now();
      if (remaining <= 0) return cancelled(reached, view, ctx, result, `the remote agent did not finish within ${Math.round(timeoutMs / 1000)} s (remote.timeoutMs); its task was cancelled`);
      const abort = new AbortController();
      // the session ended while the tool follows the task: the run hears at once that the task is
      // cancelled with it (before the run's own end; the CancelTask goes out as the call unwinds)
      let told = false;
      const cancelledWith = () => {
        if (told || !view.taskId || letGo(ctx)) return;
        told = true;
        tell(ctx, remote.url, view, args.state, { state: 'canceled', error: `cancelled with session ${ctx.spec.id}: ${errorText(ctx.signal.reason)}` });
      };
      const onAbort = () => {
        abort.abort();
        cancelledWith();
      };
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      // a cancel that came while the tool was getting ready (the permission, the client) fired no event
      if (ctx.signal.aborted) abort.abort();
      const overdue = setTimeout(() => abort.abort(), remaining);
      const silenceMs = remote.silenceMs ?? DEFAULT_SILENCE_MS;
      // the remote agent's spans join this run's trace (W3C traceparent on every request)
      const trace = callHeaders(ctx.spec.correlation.runId, ctx.spec.id);
      const open = (action: RemoteArgs['action'], attempt: AbortController): AsyncGenerator<StreamResponse> => {
        const call = { signal: AbortSignal.any([abort.signal, attempt.signal]), ...(trace ? { serviceParameters: trace } : {}) };
        if (action === 'wait') return reached.resubscribeTask({ tenant: '', id: view.taskId }, call);
        const text = action === 'send' ? taskText(ctx) : (args.text ?? '');
        // the call's idempotency key names the message: sent again after a restore, the server keeps the first
        const messageId = ctx.idempotencyKey ? `a2a-${createHash('sha256').update(`${ctx.idempotencyKey}:${action}`).digest('hex').slice(0, 32)}` : undefined;
        return reached.sendMessageStream({ tenant: '', message: userMessage(text, action === 'reply' ? { taskId: view.taskId, contextId: view.contextId } : {}, messageId), configuration: undefined, metadata: undefined }, call);
      };
      // where the task stands now: a task that ended (or asks) while nobody followed it cannot be subscribed to
      const settled = async (): Promise<boolean> => {
        foldTask(view, await reached.getTask({ tenant: '', id: view.taskId }, { signal: abort.signal, ...(trace ? { serviceParameters: trace } : {}) }));
        return TERMINAL.has(view.state) || view.state === 'input-required' || view.state === 'auth-required';
      };
      try {
        let action: RemoteArgs['action'] = args.action;
        let retried = false;
        for (;;) {
          let broke: string;
          try {
            if (action === 'wait' && (await settled())) return result();
            const attempt = new AbortController();
            const how = await follow(open(action, attempt), view, silenceMs, attempt, a2a);
            if (how === 'stop') return result();
            broke = `the remote agent's stream ended while its task was ${view.state}`;
          } catch (e) {
            if (ctx.signal.aborted) throw e;
            if (abort.signal.aborted) return cancelled(reached, view, ctx, result, `the remote agent did not finish within ${Math.round(timeoutMs / 1000)} s (remote.timeoutMs); its task was cancelled`);
            broke = `the remote agent's stream broke: ${errorText(e)}`;
          }
          // follow it once more from where it stands (a dropped connection), then give up, and
          // tell the server so (the task would otherwise go on for nobody)
          if (retried || !view.taskId) {
            if (view.taskId) {
              await cancelRemote(reached, view.taskId);
              view.state = 'canceled';
            }
            return result(broke);
          }
          retried = true;
          action = 'wait';
        }
      } catch (e) {
        // the session ended (cancelled, failed, timed out) while it followed the task: the task ends
        // too; a copy of the session its host let go (stopped: it goes on on another host) leaves it
        if (ctx.signal.aborted && view.taskId && !letGo(ctx)) {
          cancelledWith();
          await cancelRemote(reached, view.taskId);
        }
        throw e;
      } finally {
        clearTimeout(overdue);
        ctx.signal.removeEventListener('abort', onAbort);
      }
    },
  };
}

/** The key of a session's open remote task in `left`. */
const wireKey = (ctx: ToolContext) => `${ctx.spec.correlation.runId}.${ctx.spec.id}`;

/**
 * Remote tasks still open when their call returned (the session waits, idle, for its parent's
 * answer to the remote agent's question; or it is between two calls), by session: each is
 * cancelled when its session ends before another call takes it over. A session that waits runs no
 * tool, so no signal of a call would tell; the session itself is watched (ToolContext.session).
 * The values let go of the watch. A session restored in another process (a resume, a host taking
 * it over) is watched there once its driver calls the tool again.
 */
const left = new Map<string, () => void>();

/** The session is only stopped, not ended: a copy its host let go (it goes on elsewhere), or a process closing. */
const letGo = (ctx: ToolContext) => ctx.session?.getSnapshot().status === 'stopped';

function leaveOpen(ctx: ToolContext, url: string, client: Client, view: RemoteView): void {
  const session = ctx.session;
  if (!session) return;
  const key = wireKey(ctx);
  const open = { ...view };
  let over = false;
  let watch: { unsubscribe(): void } | null = null;
  const release = () => {
    over = true;
    watch?.unsubscribe();
    if (left.get(key) === release) left.delete(key);
  };
  const ended = () => {
    if (over) return;
    release();
    if (session.getSnapshot().status === 'stopped') return;
    // told now, while the run still takes events (the cancel's answer may come after the run's end)
    tell(ctx, url, open, open.state, { state: 'canceled', error: `cancelled: session ${ctx.spec.id} ended while the remote task was ${open.state}` });
    void cancelRemote(client, open.taskId);
  };
  left.get(key)?.();
  left.set(key, release);
  watch = session.subscribe({ complete: ended, error: ended });
  // ended already (while the call returned): subscribe said so at once, or says nothing more
  if (session.getSnapshot().status !== 'active') ended();
}

/**
 * Tells the run where a delegated task stands (`a2a.delegated`, with the session's correlation):
 * once per state it reaches (`from`: the state the driver last knew), with its status text.
 */
function tell(ctx: ToolContext, url: string, view: RemoteView, from: string | undefined, end: { state?: string; error?: string }): void {
  const events = ctx.events;
  if (!events || events.listening === false) return;
  const state = end.state ?? view.state;
  if (state === from && !end.error) return;
  events.emit({
    type: 'a2a.delegated',
    ...correlationOf(ctx.spec),
    data: {
      url: withoutCredentials(url),
      taskId: view.taskId,
      contextId: view.contextId,
      state,
      ...(from ? { from } : {}),
      ...(view.status ? { message: clip(redactText(view.status), 500) } : {}),
      ...(end.error ? { error: clip(redactText(end.error), 500) } : {}),
    },
  });
}

/** A URL as shown in the run's events: no user name or password in it. */
function withoutCredentials(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return url;
  }
}

async function cancelRemote(client: Client, taskId: string): Promise<void> {
  try {
    await client.cancelTask({ tenant: '', id: taskId, metadata: undefined }, { signal: AbortSignal.timeout(CANCEL_WAIT_MS) });
  } catch {
    // already over, or the server is gone: the session's own result says cancelled either way
  }
}

async function cancelled(client: Client, view: RemoteView, _ctx: ToolContext, result: (error?: string) => { isError: boolean; content: string }, why: string) {
  if (view.taskId) await cancelRemote(client, view.taskId);
  view.state = 'canceled';
  return result(why);
}

// ---------------------------------------------------------------------------------------------
// The driver

const NO_USAGE = { inputTokens: 0, outputTokens: 0 };

function call(id: string, name: string, args: Record<string, unknown>): ToolCall {
  return { id, name, arguments: args };
}

function reply(text: string, toolCalls: ToolCall[]): ModelReply {
  return { text, toolCalls, usage: NO_USAGE, stopReason: toolCalls.length ? 'tool_use' : 'end_turn' };
}

/** The latest result of the remote tool, where it is in the conversation, and the call that made it. */
function lastRemote(messages: ReadonlyArray<ChatMessage>): { at: number; result: RemoteResult | null; error: string | null } | null {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'tool' || m.name !== REMOTE_TOOL) continue;
    if (m.isError) return { at: i, result: null, error: m.content };
    try {
      return { at: i, result: RemoteResult.parse(JSON.parse(m.content)).remote, error: null };
    } catch {
      return { at: i, result: null, error: `unreadable result of ${REMOTE_TOOL}: ${clip(m.content, 200)}` };
    }
  }
  return null;
}

function output(r: RemoteResult): string {
  const parts = Object.values(r.artifacts).filter(Boolean);
  if (parts.length) return parts.join('\n\n');
  return r.status || `(the remote agent finished its task ${r.taskId} without a message or an artifact)`;
}

/**
 * The "model" of a remote agent's sessions: no model, no tokens, no I/O. Every reply is decided
 * from the conversation (see the module comment), so that a restored session continues where the
 * last one was.
 */
export class RemoteAgentDriver implements Model {
  readonly id = 'a2a-remote';
  readonly modelName = 'a2a-remote';
  readonly provider = 'a2a.remote_agent';
  readonly validatesReplies = true;

  async call(request: ModelRequest): Promise<ModelReply> {
    const messages = request.messages;
    const n = messages.length;
    const found = lastRemote(messages);
    if (!found) return reply('Sending the task to the remote A2A agent.', [call(`remote-${n}`, REMOTE_TOOL, { action: 'send' })]);
    const since = messages.slice(found.at + 1);
    if (!found.result) {
      // the tool itself failed (a token it may not send, an unknown agent): nothing reached the server
      return reply('The remote agent could not be asked.', [call(`remote-${n}`, 'a2a_subtask_complete', { status: 'failed', output: '', error: found.error ?? 'the remote task failed' })]);
    }
    const r = found.result;
    const state = r.state as RemoteState;
    const ids = { taskId: r.taskId, contextId: r.contextId, deadline: r.deadline, state: r.state };
    if (state === 'completed') {
      return reply(`The remote agent completed task ${r.taskId}.`, [call(`remote-${n}`, 'a2a_subtask_complete', { status: 'success', output: output(r) })]);
    }
    if (r.error || (await a2aClient()).TERMINAL.has(state)) {
      const error = r.error ?? `the remote agent ended task ${r.taskId} as ${state}${r.status ? `: ${r.status}` : ''}`;
      return reply(`The remote task ended: ${state}.`, [call(`remote-${n}`, 'a2a_subtask_complete', { status: 'failed', output: output(r), error })]);
    }
    // what the parent (or anyone) said since: the answer to forward
    const said = since.flatMap((m) => (m.role === 'user' ? messagesIn(m.content) : []));
    if (said.length) return reply('Forwarding to the remote agent.', [call(`remote-${n}`, REMOTE_TOOL, { action: 'reply', ...ids, text: said.join('\n\n') })]);
    if (state === 'input-required' || state === 'auth-required') {
      const asked = since.some((m) => m.role === 'tool' && m.name === 'a2a_notify_orchestrator');
      if (!asked) {
        const question = `The remote agent (task ${r.taskId}) asks${state === 'auth-required' ? ' for authorisation' : ''}: ${r.status || '(no text)'}`;
        return reply('Asking my parent what the remote agent asks.', [call(`remote-${n}`, 'a2a_notify_orchestrator', { type: 'question', message: question })]);
      }
      return reply(`Waiting for my parent's answer to pass on to the remote agent (task ${r.taskId}).`, []);
    }
    // working: pass the status on once, and keep following the task
    const calls: ToolCall[] = [];
    if (r.status && !since.some((m) => m.role === 'tool' && m.name === 'a2a_notify_orchestrator')) {
      calls.push(call(`remote-${n}-status`, 'a2a_notify_orchestrator', { type: 'status', message: `remote task ${r.taskId}: ${r.status}` }));
    }
    calls.push(call(`remote-${n}`, REMOTE_TOOL, { action: 'wait', ...ids }));
    return reply(`The remote task is ${state}.`, calls);
  }
}
