/**
 * The library's run handle: a run started from code (`startRun`), observed as typed events, a
 * live tree and its cost, steered with the same requests as `a2a inbox`, `a2a pause` and
 * `a2a redirect` (checked by the same code, so the CLI and a program never disagree).
 */
import type { Model } from '../../machines/ports.js';
import type { HumanAnswer, HumanItem, SubTaskResult } from '../../machines/protocol/index.js';
import type { TypedRunEvent } from '../../machines/runEvents.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { ControlRequest } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import type { NodeView, RunViewStatus } from '../../actors/observation/runView.js';
import { secrets } from '../../actors/config/secrets.js';
import { realClock } from '../clock.js';
import { AnthropicModel } from '../model/anthropic.js';
import { OpenAIModel } from '../model/openai.js';
import { parseScript, ScriptedModel, type ScriptInput } from '../model/scripted.js';
import type { ProviderOptions } from '../model/wire.js';
import { launchRun, type LaunchedRun, type RunOutcome, type RunRequest, type RunUsage } from './run.js';

/** A node of the live tree: a worker or a sub-task, with its children. */
export interface TreeNode extends Omit<NodeView, 'children'> {
  children: TreeNode[];
}

/** The live tree of a run at one moment. */
export interface RunTree {
  status: RunViewStatus;
  startedAt: number | null;
  finishedAt: number | null;
  costUsd: number;
  /** The workers (or the standalone session), each with its sub-tasks below it. */
  roots: TreeNode[];
}

/** The answer a program gives to a person's item: `approved` for a permission, `text` for a question. */
export interface Answer {
  approved?: boolean;
  text?: string;
  reason?: string;
  /** Who answered (default: "code"). */
  by?: string;
}

/** A run started from code. */
export interface Run {
  readonly id: string;
  readonly planId: string;
  readonly workspace: string;
  /** Resolves when the run has ended (completed, failed or cancelled); rejects only on an internal failure. */
  readonly done: Promise<RunOutcome>;
  /**
   * The run's events from this call on, ending after `run.finished`. The run starts on the next
   * turn of the event loop: called right after `await startRun(…)`, it sees every event.
   */
  events(): AsyncIterableIterator<TypedRunEvent>;
  /** Calls `listener` for every event from now on; returns the function that stops it. */
  on(listener: (event: TypedRunEvent) => void): () => void;
  tree(): RunTree;
  /** Model calls, tokens and cost so far, sub-tasks included. */
  usage(): RunUsage;
  /** Permissions and questions waiting for a person. */
  pending(): HumanItem[];
  /** Answers one (by id, or its 1-based position in `pending()`); throws an A2AError saying why when it cannot. */
  answer(id: string, answer: Answer): string;
  /**
   * Any request `a2a inbox`, `a2a pause`, `a2a redirect` … send (`{ command: 'answer', id, approved, by }`,
   * …): checked the same way; the reply's message, or an A2AError saying why not.
   */
  control(request: ControlRequest): string;
  /** Approves every pending permission request. */
  approveAll(by?: string): string;
  /** Agents wait before their next model call until `resume()`. */
  pause(by?: string): string;
  resume(by?: string): string;
  /** A running task's worker: new instructions, conversation kept. */
  redirect(taskId: string, instructions: string, by?: string): string;
  /** A running task's worker: started over with new instructions. */
  restart(taskId: string, instructions: string, by?: string): string;
  /** A running task's worker: another agent type (`@debugger`), conversation kept. */
  reassign(taskId: string, agent: string, by?: string): string;
  /** A running task's worker: another model profile from its next call. */
  switchModel(taskId: string, profile: string, by?: string): string;
  /** Cancels every worker and sub-task (each still reports); `done` resolves with `cancelled`. */
  stop(reason?: string): void;
}

export type { RunOutcome, RunRequest, RunUsage, RunSummary, SubTaskResult };

/**
 * Starts a run: a plan (object or file), a single task, or a workflow. Resolves once everything is
 * checked and connected; the actors start on the next turn of the event loop. Bad input rejects
 * with an A2AError naming the field.
 */
export async function startRun(request: RunRequest): Promise<Run> {
  if (typeof request !== 'object' || request === null) throw new A2AError('VALIDATION_ERROR', 'startRun: give a request object ({ plan }, { task } or { target })', { where: 'request' });
  const launched = await launchRun(request);
  setImmediate(() => launched.start());
  return runHandle(launched);
}

/** The run behind each handle, for a2a's own servers (recordRunEvent). */
const launchedOf = new WeakMap<Run, LaunchedRun>();

/**
 * For a2a's own servers, not the package's API (index.ts does not export it): an event about a
 * run from the program that started it (`a2a serve --a2a`'s A2A tasks), into the run's log, its
 * display and its monitors, stamped like the run's own.
 */
export function recordRunEvent(run: Run, event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): void {
  launchedOf.get(run)?.emit(event);
}

function runHandle(launched: LaunchedRun): Run {
  const control = (request: ControlRequest): string => {
    const reply = launched.control(request);
    if (!reply.ok) throw new A2AError('INVALID_STATE_TRANSITION', reply.error, { where: request.command });
    return reply.message;
  };
  const handle: Run = {
    id: launched.runId,
    planId: launched.planId,
    workspace: launched.workspace,
    done: launched.done,
    events: () => eventStream(launched),
    control,
    on: (listener) => launched.subscribe(listener as (event: RunEvent) => void),
    tree: () => treeOf(launched),
    usage: () => ({ ...launched.usage }),
    pending: () => launched.pending(),
    answer: (id, answer) =>
      control({
        command: 'answer',
        id,
        by: answer.by ?? 'code',
        ...(answer.approved !== undefined ? { approved: answer.approved } : {}),
        ...(answer.text !== undefined ? { text: answer.text } : {}),
        ...(answer.reason !== undefined ? { reason: answer.reason } : {}),
      }),
    approveAll: (by = 'code') => control({ command: 'approve_all', by }),
    pause: (by = 'code') => control({ command: 'pause', by }),
    resume: (by = 'code') => control({ command: 'unpause', by }),
    redirect: (taskId, instructions, by = 'code') => control({ command: 'redirect', taskId, instructions, by }),
    restart: (taskId, instructions, by = 'code') => control({ command: 'reinitialize', taskId, instructions, by }),
    reassign: (taskId, agent, by = 'code') => control({ command: 'reassign', taskId, agent, by }),
    switchModel: (taskId, profile, by = 'code') => control({ command: 'switch_model', taskId, profile, by }),
    stop: (reason = 'stopped by the program') => launched.stop(reason),
  };
  launchedOf.set(handle, launched);
  return handle;
}

/** The events from now on, as an async iterator that ends after `run.finished` (or with the run). */
function eventStream(launched: LaunchedRun): AsyncIterableIterator<TypedRunEvent> {
  const queue: TypedRunEvent[] = [];
  // every next() waiting, in order (a caller may ask for several at once)
  const waiting: Array<(result: IteratorResult<TypedRunEvent>) => void> = [];
  // the live tree has applied run.finished when the run has told its end
  let finished = launched.view.finishedAt !== null;
  let failure: unknown = null;
  const settleWaiting = () => {
    while (waiting.length > 0 && queue.length > 0) waiting.shift()!({ value: queue.shift()!, done: false });
    if (finished && queue.length === 0) {
      unsubscribe();
      for (const resolve of waiting.splice(0)) resolve({ value: undefined, done: true });
    }
  };
  const unsubscribe = launched.subscribe((e) => {
    if (finished) return;
    // its data matches its type's schema (machines/runEvents.ts; the test suite checks every event)
    queue.push(e as TypedRunEvent);
    if (e.type === 'run.finished') finished = true;
    settleWaiting();
  });
  launched.done.then(
    () => {
      finished = true;
      settleWaiting();
    },
    (error: unknown) => {
      failure = error;
      finished = true;
      settleWaiting();
    },
  );
  const iterator: AsyncIterableIterator<TypedRunEvent> = {
    next(): Promise<IteratorResult<TypedRunEvent>> {
      if (queue.length > 0) return Promise.resolve({ value: queue.shift()!, done: false });
      if (finished) {
        unsubscribe();
        return failure ? Promise.reject(failure) : Promise.resolve({ value: undefined, done: true });
      }
      return new Promise((resolve) => waiting.push(resolve));
    },
    async return(): Promise<IteratorResult<TypedRunEvent>> {
      finished = true;
      queue.length = 0;
      settleWaiting();
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}

function treeOf(launched: LaunchedRun): RunTree {
  const view = launched.view;
  const build = (id: string, depth: number): TreeNode | null => {
    const node = view.nodes.get(id);
    if (!node || depth > 32) return null;
    const { children, ...rest } = node;
    return { ...rest, children: children.map((c) => build(c, depth + 1)).filter((c): c is TreeNode => c !== null) };
  };
  return {
    status: view.status,
    startedAt: view.startedAt,
    finishedAt: view.finishedAt,
    costUsd: view.costUsd,
    roots: view.roots.map((id) => build(id, 0)).filter((n): n is TreeNode => n !== null),
  };
}

// ---------------------------------------------------------------------------------------------
// Models

/** The scripted model: replies from a script (rules matched on the task), no API key, no network. */
export function scriptedModel(script: ScriptInput = { rules: [] }): Model {
  return new ScriptedModel(parseScript(script, 'scriptedModel'), realClock);
}

/** OpenAI's Chat Completions (or an OpenAI-compatible server at `baseURL`; `provider: 'google'` for Gemini). */
export function openaiModel(options: ProviderOptions & { provider?: 'openai' | 'google' }): Model {
  const { provider = 'openai', ...rest } = options ?? ({} as typeof options);
  if (provider !== 'openai' && provider !== 'google') throw new A2AError('CONFIGURATION_INVALID', `openaiModel: provider "${String(provider)}" is not one of openai, google`, { where: 'provider' });
  // known from here on: redacted wherever it would be written or printed
  secrets.add(provider === 'google' ? 'GEMINI_API_KEY' : 'OPENAI_API_KEY', rest.apiKey);
  return new OpenAIModel(rest, provider);
}

/** Anthropic's Messages API. */
export function anthropicModel(options: ProviderOptions): Model {
  secrets.add('ANTHROPIC_API_KEY', options?.apiKey);
  return new AnthropicModel(options);
}

export type { HumanAnswer };
