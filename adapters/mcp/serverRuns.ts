/**
 * The runs `a2a mcp` started (and the workspace's others, through their files), and the replies
 * its tools and tasks give about them: what server.ts's tools and serverTasks.ts's task methods share.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { ControlRequest } from '../../machines/protocol/index.js';
import { isA2AError } from '../../actors/errors.js';
import { redactText } from '../../actors/config/secrets.js';
import { errorText } from '../../machines/errorText.js';
import { realClock } from '../clock.js';
import { FileRunStore } from '../store/file.js';
import { sendControl } from '../runHost.js';
import { startRun, type Run, type TreeNode } from '../assembly/library.js';
import type { RunOutcome } from '../assembly/run.js';

export interface McpServeOptions {
  /** Where runs start and are looked for (default: the current directory). */
  workspace?: string;
  /** Lines for a person (stderr); never the protocol's stream. */
  notify?: (line: string) => void;
  version?: string;
}

export type Reply = { content: Array<{ type: 'text'; text: string }>; isError?: boolean; structuredContent?: Record<string, unknown> };

export const text = (body: string, structured?: Record<string, unknown>): Reply => ({ content: [{ type: 'text', text: redactText(body) }], ...(structured ? { structuredContent: structured } : {}) });
export const failure = (error: unknown): Reply => ({ content: [{ type: 'text', text: redactText(isA2AError(error) ? `${error.code}: ${error.message}` : errorText(error)) }], isError: true });

/** A run started here; `task` when it was started as an MCP task (the Tasks extension), with when it last changed. */
export interface HeldRun {
  run: Run;
  outcome: RunOutcome | null;
  error: string | null;
  task: { createdAt: number; updatedAt: number } | null;
}

/** The runs this server started, and the workspace's other runs through their files. */
export class McpRuns {
  readonly workspace: string;
  readonly store: FileRunStore;
  readonly #runs = new Map<string, HeldRun>();
  readonly #notify: (line: string) => void;

  constructor(options: McpServeOptions) {
    this.workspace = resolve(options.workspace ?? process.cwd());
    this.store = new FileRunStore(this.workspace);
    this.#notify = options.notify ?? ((line) => void process.stderr.write(`${line}\n`));
  }

  async start(request: Parameters<typeof startRun>[0], options: { task?: boolean } = {}): Promise<Run> {
    const run = await startRun({ workspace: this.workspace, notify: this.#notify, ...request });
    const now = realClock.now();
    const held: HeldRun = { run, outcome: null, error: null, task: options.task ? { createdAt: now, updatedAt: now } : null };
    this.#runs.set(run.id, held);
    // a task's lastUpdatedAt: the time of the run's latest event, or of its end
    const task = held.task;
    const stop = task ? run.on(() => (task.updatedAt = realClock.now())) : () => {};
    run.done.then(
      (outcome) => (held.outcome = outcome),
      (error: unknown) => (held.error = errorText(error)),
    ).finally(() => {
      stop();
      if (task) task.updatedAt = realClock.now();
    });
    return run;
  }

  local(runId: string): HeldRun | null {
    return this.#runs.get(runId) ?? null;
  }

  /** The run named, or the latest this server started (else the workspace's latest). */
  resolveId(runId: string | undefined): string {
    if (runId) return runId;
    const mine = [...this.#runs.keys()].at(-1);
    if (mine) return mine;
    const latest = existsSync(this.store.root) ? this.store.list().at(-1)?.runId : undefined;
    if (!latest) throw new Error(`no run yet in ${this.workspace}: start one with start_run`);
    return latest;
  }

  async control(runId: string, request: ControlRequest): Promise<string> {
    const local = this.#runs.get(runId);
    if (local) return local.run.control(request);
    const reply = await sendControl(this.store, runId, request);
    if (!reply.ok) throw new Error(reply.error);
    return reply.message;
  }

  async stopAll(): Promise<void> {
    for (const held of this.#runs.values()) if (!held.outcome && !held.error) held.run.stop('the MCP server is shutting down');
    await Promise.allSettled([...this.#runs.values()].map((h) => h.run.done));
  }
}

export function outcomeText(runId: string, outcome: RunOutcome): string {
  const lines = [`run ${runId} ${outcome.status} · ${outcome.usage.modelCalls} model calls · $${outcome.usage.costUsd.toFixed(4)}`];
  for (const t of outcome.summary?.tasks ?? []) {
    lines.push('', `## ${t.id} (${t.agentType}): ${t.state}${t.result ? ` · ${t.result.status}` : ''}`);
    if (t.result?.output) lines.push(t.result.output);
    if (t.result?.error) lines.push(`error: ${t.result.error}`);
  }
  if (outcome.result) lines.push('', `${outcome.result.status}: ${outcome.result.output}`, ...(outcome.result.error ? [`error: ${outcome.result.error}`] : []));
  return lines.join('\n');
}

/** One line on where a live run stands: its tasks, its model calls and cost, what waits for a person. */
export function progressLine(run: Run): string {
  const nodes: TreeNode[] = [];
  const walk = (list: TreeNode[]) => list.forEach((n) => (nodes.push(n), walk(n.children)));
  walk(run.tree().roots);
  const usage = run.usage();
  const pending = run.pending().length;
  return `run ${run.id}: ${nodes.filter((n) => n.endedAt !== null).length}/${nodes.length} tasks ended · ${usage.modelCalls} model calls · $${usage.costUsd.toFixed(4)}${pending ? ` · ${pending} waiting for an answer` : ''}`;
}

/** What get_result answers for a run this server started that has ended (or failed inside a2a). */
export function endedReply(id: string, held: HeldRun): Reply | null {
  if (held.error) return failure(new Error(`run ${id} failed inside a2a: ${held.error}`));
  if (!held.outcome) return null;
  return text(outcomeText(id, held.outcome), { runId: id, status: held.outcome.status, usage: { ...held.outcome.usage } });
}

