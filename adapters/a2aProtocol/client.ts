/**
 * The A2A client side shared by delegation (delegate.ts): an SDK `Client` per remote agent (its
 * card fetched once per process), a bearer token added to every request, and the protocol's
 * objects turned into the plain fields the rest of a2a reads (state names, text).
 */
import { Role, TaskState, type Artifact, type Message, type Part, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory, type Client } from '@a2a-js/sdk/client';
import { randomUUID } from 'node:crypto';

/** A task state as a2a writes it (`input-required`), from the protocol's enum. */
export type RemoteState = 'submitted' | 'working' | 'input-required' | 'auth-required' | 'completed' | 'failed' | 'canceled' | 'rejected' | 'unknown';

const STATE_NAMES: Partial<Record<TaskState, RemoteState>> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'submitted',
  [TaskState.TASK_STATE_WORKING]: 'working',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_AUTH_REQUIRED]: 'auth-required',
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
};

export function stateName(state: TaskState | undefined): RemoteState {
  return (state !== undefined && STATE_NAMES[state]) || 'unknown';
}

export const TERMINAL: ReadonlySet<RemoteState> = new Set(['completed', 'failed', 'canceled', 'rejected']);

/** The text of a message's or an artifact's parts: text parts as they are, data parts as JSON, files by name or URL. */
export function partsText(parts: ReadonlyArray<Part> | undefined): string {
  const out: string[] = [];
  for (const part of parts ?? []) {
    const c = part.content;
    if (!c) continue;
    if (c.$case === 'text') out.push(c.value);
    else if (c.$case === 'data') out.push(JSON.stringify(c.value));
    else if (c.$case === 'url') out.push(`[file ${part.filename || c.value}]`);
    else out.push(`[file ${part.filename || 'bytes'} (${part.mediaType || 'binary'})]`);
  }
  return out.join('\n');
}

export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** A message from this side (role user) in a task (or starting one when `taskId` is empty). */
/** `messageId`: the same for a message sent again (a restored delegation), so that the server drops the copy. */
export function userMessage(text: string, ids: { taskId?: string; contextId?: string } = {}, messageId: string = randomUUID()): Message {
  return { messageId, contextId: ids.contextId ?? '', taskId: ids.taskId ?? '', role: Role.ROLE_USER, parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

export function artifactText(artifact: Artifact | undefined): string {
  if (!artifact) return '';
  const body = partsText(artifact.parts);
  return artifact.name ? `${artifact.name}:\n${body}` : body;
}

/** Where a remote task stands, folded from the events seen so far. */
export interface RemoteView {
  taskId: string;
  contextId: string;
  state: RemoteState;
  /** The text of the latest status message. */
  status: string;
  /** Artifacts by id: the latest text of each. */
  artifacts: Record<string, string>;
}

export function emptyView(taskId = '', contextId = ''): RemoteView {
  return { taskId, contextId, state: 'unknown', status: '', artifacts: {} };
}

/** Folds one streamed event into the view; returns what kind it was. */
export function fold(view: RemoteView, event: StreamResponse): 'task' | 'status' | 'artifact' | 'message' | 'none' {
  const p = event.payload;
  if (!p) return 'none';
  if (p.$case === 'task') {
    foldTask(view, p.value);
    return 'task';
  }
  if (p.$case === 'message') {
    view.status = partsText(p.value.parts);
    if (p.value.taskId) view.taskId = p.value.taskId;
    if (p.value.contextId) view.contextId = p.value.contextId;
    // a reply without a task is the whole answer (the protocol's direct response)
    if (!p.value.taskId) {
      view.state = 'completed';
      view.artifacts.reply = view.status;
    }
    return 'message';
  }
  if (p.$case === 'statusUpdate') {
    view.taskId = p.value.taskId || view.taskId;
    view.contextId = p.value.contextId || view.contextId;
    view.state = stateName(p.value.status?.state);
    const text = partsText(p.value.status?.message?.parts);
    if (text) view.status = text;
    return 'status';
  }
  const a = p.value.artifact;
  if (a) {
    const before = p.value.append ? (view.artifacts[a.artifactId] ?? '') : '';
    view.artifacts[a.artifactId] = before + artifactText(a);
  }
  return 'artifact';
}

export function foldTask(view: RemoteView, task: Task): void {
  view.taskId = task.id;
  view.contextId = task.contextId;
  view.state = stateName(task.status?.state);
  const text = partsText(task.status?.message?.parts);
  if (text) view.status = text;
  for (const a of task.artifacts ?? []) view.artifacts[a.artifactId] = artifactText(a);
}

/** Clients by card URL and token: the card is fetched once per process. */
const clients = new Map<string, Promise<Client>>();

/** The well-known path of the card under a base URL; a URL that already names a `.json` file is the card itself. */
function cardLocation(url: string): { base: string; path?: string } {
  const u = new URL(url);
  if (u.pathname.endsWith('.json')) return { base: `${u.origin}`, path: u.pathname };
  return { base: url.replace(/\/$/, '') };
}

/**
 * `fetch` with `Authorization: Bearer <token>` (plain fetch without a token). With `origin`, only
 * requests to that origin carry it: a card may name interfaces on other hosts, which get none.
 */
export function bearerFetch(token: string | undefined, origin?: string): typeof fetch {
  if (!token) return fetch;
  return (input, init) => {
    const target = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
    if (origin && target.origin !== origin) return fetch(input, init);
    const headers = new Headers(init?.headers);
    headers.set('Authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** A token may go over plain http only to this machine. */
export function tokenTransportProblem(url: string): string | null {
  const u = new URL(url);
  if (u.protocol === 'https:') return null;
  return ['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) ? null : `a token is sent over https only (or to this machine): ${u.origin} is plain http`;
}

export function clientFor(url: string, token: string | undefined): Promise<Client> {
  const key = `${url}\u0000${token ?? ''}`;
  let found = clients.get(key);
  if (!found) {
    const authed = bearerFetch(token, new URL(url).origin);
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl: authed, legacyCompat: { enabled: true } }), new RestTransportFactory({ fetchImpl: authed, legacyCompat: { enabled: true } })],
      }),
    );
    const { base, path } = cardLocation(url);
    found = factory.createFromUrl(base, path);
    // a failure is not kept: the next sub-task tries again
    found.catch(() => clients.delete(key));
    clients.set(key, found);
  }
  return found;
}

