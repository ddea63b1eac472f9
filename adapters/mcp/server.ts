/**
 * a2a as an MCP server (`a2a mcp`): an editor's agent (Claude Code, Cursor, VS Code) hands work to
 * an a2a team through tools. Runs start in this process on the library API (`startRun`), with the
 * file store of the workspace, so `a2a status`, `a2a inbox` and `a2a audit` see them too; runs
 * started elsewhere in the workspace (`a2a run`) are read from their files and answered through
 * their control channel, as `a2a inbox` does. The same checks apply either way.
 *
 * Built on the v2 SDK (`@modelcontextprotocol/server`), which serves both protocol eras from one
 * factory: the 2026-07-28 revision (stateless, no `initialize`, a `_meta` envelope per request)
 * and, for clients of earlier revisions, the 2025 `initialize` handshake. The factory is told
 * which era an instance serves: only a 2026-07-28 instance offers the Tasks extension
 * (serverTasks.ts), whose wire does not exist before it. Over HTTP see serverHttp.ts.
 */
import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { McpServer, type ServerContext } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { ControlRequest, HumanItem, PlanInput } from '../../machines/protocol/index.js';
import type { RunStatus } from '../../actors/observation/runStatus.js';
import { traceHeadersOf } from '../../actors/observation/tracing.js';
import { ArtifactStore } from '../../actors/organiser/artifacts.js';
import { redactText } from '../../actors/config/secrets.js';
import { errorText } from '../../machines/errorText.js';
import { realClock } from '../clock.js';
import { FileArtifactBackend } from '../store/artifactFiles.js';
import type { Run, TreeNode } from '../assembly/library.js';
import type { RunOutcome } from '../assembly/run.js';
import { endedReply, failure, McpRuns, outcomeText, progressLine, text, type McpServeOptions, type Reply } from './serverRuns.js';
import { createTaskResult, declaresTasks, registerTaskMethods, TASKS_EXTENSION } from './serverTasks.js';
import { serveMcpHttp, type McpHttpOptions, type McpHttpServer } from './serverHttp.js';
import { jsonRpcLines } from './serverStdio.js';

export { McpRuns, type HeldRun, type McpServeOptions } from './serverRuns.js';
export type { McpHttpOptions, McpHttpServer } from './serverHttp.js';

/** The protocol era an instance serves: `modern` is 2026-07-28, `legacy` the 2025 revisions (with `initialize`). */
export type McpEra = 'legacy' | 'modern';

/** A path the client named, as long as it stays inside the workspace (symbolic links followed). */
function insideWorkspace(workspace: string, given: string): string {
  const path = resolve(workspace, given);
  const real = existsSync(path) ? realpathSync(path) : path;
  const inside = relative(realpathSync(workspace), real);
  if (isAbsolute(given) || inside.startsWith('..') || isAbsolute(inside)) throw new Error(`planFile: "${given}" is outside the workspace ${workspace}; name a plan inside it`);
  return real;
}

function treeLines(nodes: TreeNode[], indent = ''): string[] {
  return nodes.flatMap((n) => [
    `${indent}${n.id} ${n.agentType} ${n.status} depth ${n.depth}${n.costUsd > 0 ? ` $${n.costUsd.toFixed(4)}` : ''}${n.note ? ` (${n.note.slice(0, 120)})` : ''}`,
    ...treeLines(n.children, `${indent}  `),
  ]);
}

function pendingLines(items: HumanItem[]): string[] {
  return items.map((i, n) => `  ${n + 1}. [${i.kind}] ${i.title} (id ${i.id}; ${i.kind === 'permission' ? 'answer with approved true/false' : 'answer with text'})`);
}

/**
 * While the client waits on a run and gave a progress token: a progress notification whenever
 * something happens in the run (coalesced per turn of the event loop), its count as the progress
 * (it only grows) and a line on where the run stands as the message.
 */
function reportProgress(run: Run, ctx: ServerContext): () => Promise<void> {
  const token = ctx.mcpReq._meta?.progressToken;
  if (token === undefined) return async () => {};
  let count = 0;
  /** The notifications handed to the SDK, written or not yet: the answer waits for them, so that none comes after it. */
  let written: Promise<unknown> = Promise.resolve();
  let queued = false;
  let stopped = false;
  const send = () => {
    queued = false;
    // none after the answer: the wait is over (stop sends what was queued)
    if (stopped) return;
    count += 1;
    // a client that went away: the notification is lost with it, the run goes on
    const sending = ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: count, message: redactText(progressLine(run)) } }).catch(() => undefined);
    written = Promise.all([written, sending]);
  };
  send();
  const off = run.on(() => {
    if (queued) return;
    queued = true;
    setImmediate(send);
  });
  return async () => {
    // what happened since the last notification is told before the answer, not dropped
    if (queued && !stopped) send();
    stopped = true;
    off();
    await written;
  };
}

const RunIdArg = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'a run id').optional().describe('The run (default: the latest started here)');
const By = 'mcp';

/**
 * The MCP server's tools over `runs`, for one instance of the era given (a connection on stdio,
 * one request over HTTP). The tools are the same in both eras.
 */
export function createA2aMcpServer(runs: McpRuns, options: McpServeOptions = {}, era: McpEra = 'legacy'): McpServer {
  const server = new McpServer(
    { name: 'a2a', version: options.version ?? '0' },
    {
      ...(era === 'modern' ? { capabilities: { extensions: { [TASKS_EXTENSION]: {} } } } : {}),
      instructions:
        'a2a runs a team of LLM agents (an orchestrator, workers in git worktrees, parallel sub-tasks) on this workspace. ' +
        'start_run with a task or a plan; watch it with run_status (its tree, cost, and what waits for a person); answer permissions and questions with answer; ' +
        "get_result waits for the end and returns each task's output; artifacts lists what the agents wrote; control pauses, resumes or redirects; stop_run cancels." +
        (era === 'modern'
          ? ` A client with the MCP Tasks extension (${TASKS_EXTENSION}) gets start_run as a task: tasks/get follows the run and ends with its result, its permissions and questions come as input requests (answer them with tasks/update), tasks/cancel stops it.`
          : ''),
    },
  );

  server.registerTool(
    'start_run',
    {
      title: 'Start an a2a run',
      description:
        'Starts a run in the workspace: a task (one worker, optionally an agent type like @coder), a plan (tasks with agents and dependencies) or a plan file. Returns the run id at once; the run goes on in the background. ' +
        'With the MCP Tasks extension the answer is a task whose result is the run\'s result.',
      inputSchema: z.object({
        task: z.string().min(1).optional().describe('What to do, in words (one task)'),
        plan: z.record(z.string(), z.unknown()).optional().describe('A plan: { "id": "p", "tasks": [{ "id": "a", "agent": "@coder", "prompt": "…", "dependsOn": [] }] }'),
        planFile: z.string().min(1).optional().describe('A plan file or a directory with plan.json, relative to the workspace'),
        workflow: z.enum(['sdlc']).optional().describe("Run the organiser's SDLC workflow on the task (the goal)"),
        agent: z.string().optional().describe('Agent type for the task (default: the configured default)'),
        model: z.string().optional().describe('Model profile for the workers'),
        maxDepth: z.number().int().min(0).max(8).optional(),
        maxParallel: z.number().int().min(1).optional(),
        questions: z.enum(['policy', 'model', 'human']).optional().describe('Who answers worker questions'),
        onComplete: z.enum(['merge', 'pr', 'review', 'keep']).optional().describe("What happens to a finished worker's branch"),
      }),
      // agents change the workspace (files, commits, merges) under a2a's permissions, and call models
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    },
    async (args, ctx) => {
      try {
        const given = [args.task !== undefined && !args.workflow, args.plan !== undefined, args.planFile !== undefined].filter(Boolean).length;
        if (given !== 1 && !(args.workflow && args.task)) return failure(new Error('give exactly one of task, plan and planFile (a workflow takes its goal as task)'));
        // a caller that traces (W3C trace context in the request's _meta) gets the run in its trace
        const meta = ctx.mcpReq._meta as Record<string, unknown> | undefined;
        const trace = traceHeadersOf(typeof meta?.traceparent === 'string' ? { traceparent: meta.traceparent, ...(typeof meta.tracestate === 'string' ? { tracestate: meta.tracestate } : {}) } : undefined);
        const base = {
          ...(args.agent ? { agent: args.agent } : {}),
          ...(args.model ? { model: args.model } : {}),
          ...(args.maxDepth !== undefined ? { maxDepth: args.maxDepth } : {}),
          ...(args.maxParallel !== undefined ? { maxParallel: args.maxParallel } : {}),
          ...(args.questions ? { questions: args.questions } : {}),
          ...(args.onComplete ? { onComplete: args.onComplete } : {}),
          ...(trace ? { trace } : {}),
        };
        // a client may be an agent that read something hostile: it names work, never configuration
        if (args.plan !== undefined && ('config' in args.plan || 'script' in args.plan)) {
          return failure(new Error('plan: "config" and "script" are not taken over MCP (they would change permissions, the sandbox or the model): put them in the workspace\'s a2a.config.json'));
        }
        const asTask = era === 'modern' && declaresTasks(ctx);
        const run = await runs.start(
          args.plan !== undefined
            ? { ...base, plan: args.plan as PlanInput } // checked by the run like a plan file
            : args.planFile !== undefined
              ? { ...base, target: insideWorkspace(runs.workspace, args.planFile) }
              : args.workflow
                ? { ...base, target: args.task!, workflow: args.workflow }
                : { ...base, task: args.task! },
          { task: asTask },
        );
        // the Tasks extension's answer (resultType "task"), which the SDK forwards as the tool's result
        if (asTask) return createTaskResult(runs, run.id) as unknown as Reply;
        return text(`started run ${run.id} (plan ${run.planId}) in ${runs.workspace}. Watch it with run_status, answer what waits with answer, get the outputs with get_result.`, { runId: run.id, planId: run.planId });
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'run_status',
    {
      title: 'Status of a run',
      description: "A run's status: its tree of workers and sub-tasks (agent, state, depth, cost), its cost so far, and the permissions and questions waiting for an answer.",
      inputSchema: z.object({ runId: RunIdArg }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ runId }) => {
      try {
        const id = runs.resolveId(runId);
        const local = runs.local(id);
        if (local) {
          const tree = local.run.tree();
          const pending = local.outcome ? [] : local.run.pending();
          const usage = local.run.usage();
          const lines = [
            `run ${id} · ${local.outcome?.status ?? (local.error ? 'failed' : tree.status)} · ${usage.modelCalls} model calls · $${usage.costUsd.toFixed(4)}`,
            ...treeLines(tree.roots),
            `waiting for an answer: ${pending.length}`,
            ...pendingLines(pending),
            ...(local.error ? [`error: ${local.error}`] : []),
          ];
          return text(lines.join('\n'), { runId: id, status: local.outcome?.status ?? tree.status, costUsd: usage.costUsd, modelCalls: usage.modelCalls, pending: pending.map((p) => ({ id: p.id, kind: p.kind, title: p.title })) });
        }
        const store = runs.store;
        const record = store.read(id);
        const status = store.readStatus(id) as RunStatus | null;
        const lines = [
          `run ${id} · ${record.status} (started in another process, pid ${record.pid})`,
          ...(status?.tasks ?? []).map((t) => `${t.id} ${t.agentType} ${t.state}${t.session ? ` (${t.session})` : ''}`),
          `waiting for an answer: ${status?.pending.length ?? 0}`,
          ...pendingLines(status?.pending ?? []),
        ];
        return text(lines.join('\n'), { runId: id, status: record.status, pending: (status?.pending ?? []).map((p) => ({ id: p.id, kind: p.kind, title: p.title })) });
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'list_runs',
    { title: 'Runs of the workspace', description: 'The runs of the workspace, newest last: id, status, plan, when started.', inputSchema: z.object({}), annotations: { readOnlyHint: true, openWorldHint: false } },
    async () => {
      try {
        const records = existsSync(runs.store.root) ? runs.store.list() : [];
        const lines = records.map((r) => `${r.runId} ${r.status} plan ${r.planId} started ${new Date(r.startedAt).toISOString()}${runs.local(r.runId) ? ' (this server)' : ''}`);
        return text(lines.length ? lines.join('\n') : `no runs in ${runs.workspace}`, { runs: records.map((r) => ({ runId: r.runId, status: r.status, planId: r.planId, startedAt: r.startedAt })) });
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'answer',
    {
      title: 'Answer a permission or a question',
      description: 'Answers what waits for a person in a run (see run_status): a permission with approved true or false, a question with text. id is the item id or its number in the list.',
      inputSchema: z.object({
        runId: RunIdArg,
        id: z.string().min(1).describe('The item id, or its number in run_status'),
        approved: z.boolean().optional(),
        text: z.string().optional(),
        reason: z.string().optional(),
      }),
      // an item is answered once: a second answer is refused
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ runId, id, approved, text: answerText, reason }) => {
      try {
        const message = await runs.control(runs.resolveId(runId), {
          command: 'answer',
          id,
          by: By,
          ...(approved !== undefined ? { approved } : {}),
          ...(answerText !== undefined ? { text: answerText } : {}),
          ...(reason !== undefined ? { reason } : {}),
        });
        return text(message);
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'control',
    {
      title: 'Steer a run',
      description: "Pauses or resumes a run; approves every pending permission; or steers a running task's worker: redirect (new instructions, conversation kept), restart (start over), reassign (another agent type), switch_model (another profile).",
      inputSchema: z.object({
        runId: RunIdArg,
        action: z.enum(['pause', 'resume', 'approve_all', 'redirect', 'restart', 'reassign', 'switch_model']),
        taskId: z.string().optional(),
        instructions: z.string().optional(),
        agent: z.string().optional(),
        profile: z.string().optional(),
      }),
      // restart throws a worker's conversation away
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
    },
    async ({ runId, action, taskId, instructions, agent, profile }) => {
      try {
        const need = (value: string | undefined, name: string) => {
          if (!value) throw new Error(`${action} needs ${name}`);
          return value;
        };
        const request: ControlRequest =
          action === 'pause'
            ? { command: 'pause', by: By }
            : action === 'resume'
              ? { command: 'unpause', by: By }
              : action === 'approve_all'
                ? { command: 'approve_all', by: By }
                : action === 'redirect'
                  ? { command: 'redirect', taskId: need(taskId, 'taskId'), instructions: need(instructions, 'instructions'), by: By }
                  : action === 'restart'
                    ? { command: 'reinitialize', taskId: need(taskId, 'taskId'), instructions: need(instructions, 'instructions'), by: By }
                    : action === 'reassign'
                      ? { command: 'reassign', taskId: need(taskId, 'taskId'), agent: need(agent, 'agent'), by: By }
                      : { command: 'switch_model', taskId: need(taskId, 'taskId'), profile: need(profile, 'profile'), by: By };
        return text(await runs.control(runs.resolveId(runId), request));
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'get_result',
    {
      title: 'Result of a run',
      description: "Each task's status and output, and the cost. Waits up to waitSeconds (default 0, at most 300) for a run still going, with progress notifications when the request has a progress token; then says it is still running.",
      inputSchema: z.object({ runId: RunIdArg, waitSeconds: z.number().min(0).max(300).optional() }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ runId, waitSeconds }, ctx) => {
      try {
        const id = runs.resolveId(runId);
        const local = runs.local(id);
        if (local) {
          if (!local.outcome && !local.error && waitSeconds) {
            let timer: NodeJS.Timeout | undefined;
            let onAbort: (() => void) | undefined;
            const signal = ctx.mcpReq.signal;
            const stopProgress = reportProgress(local.run, ctx);
            try {
              await Promise.race([
                local.run.done.catch(() => undefined),
                new Promise((r) => (timer = setTimeout(r, waitSeconds * 1000))),
                new Promise<void>((r) => signal.addEventListener('abort', (onAbort = () => r()), { once: true })),
              ]);
            } finally {
              await stopProgress();
              clearTimeout(timer);
              if (onAbort) signal.removeEventListener('abort', onAbort);
            }
            // the run's own bookkeeping settles on the same turn: let it
            await new Promise((r) => setImmediate(r));
          }
          const ended = endedReply(id, local);
          if (ended) return ended;
          return text(`run ${id} is still running (run_status shows where it is)`, { runId: id, status: 'running' });
        }
        const record = runs.store.read(id);
        if (record.status === 'running') return text(`run ${id} is still running (in another process)`, { runId: id, status: 'running' });
        const summary = record.summary as RunOutcome['summary'];
        return text(outcomeText(id, { status: record.status as RunOutcome['status'], exitCode: 0, ...(summary && 'tasks' in summary ? { summary } : {}), usage: (summary as { usage?: RunOutcome['usage'] } | undefined)?.usage ?? { modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 } }), { runId: id, status: record.status });
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'artifacts',
    {
      title: "A run's artifacts",
      description: "What the agents of a run wrote to its artifact store: the list, or one artifact's content (id, optionally a version).",
      inputSchema: z.object({ runId: RunIdArg, id: z.string().optional(), version: z.number().int().min(1).optional() }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ runId, id, version }) => {
      try {
        const store = new ArtifactStore(new FileArtifactBackend(runs.store.root), runs.resolveId(runId), realClock);
        if (id) {
          const content = await store.read(id, version);
          return text(content.content, { id, version: version ?? null });
        }
        const list = await store.list({ includeArchived: true });
        return text(list.length ? list.map((a) => `${a.id} ${a.type} v${a.version} ${a.status} ${a.producerRole}: ${a.summary.brief}`).join('\n') : 'no artifacts', { artifacts: list.map((a) => ({ id: a.id, type: a.type, version: a.version, status: a.status })) });
      } catch (error) {
        return failure(error);
      }
    },
  );

  server.registerTool(
    'stop_run',
    {
      title: 'Stop a run',
      description: 'Cancels every worker and sub-task of a run started here; each still reports what it had.',
      inputSchema: z.object({ runId: RunIdArg, reason: z.string().optional() }),
      // cancelling is not undone; stopping a run that has ended changes nothing
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ runId, reason }) => {
      try {
        const id = runs.resolveId(runId);
        const local = runs.local(id);
        if (!local) return failure(new Error(`run ${id} was not started by this server: stop it with a2a stop ${id}`));
        if (local.outcome) return text(`run ${id} has already ended (${local.outcome.status})`);
        local.run.stop(reason ?? 'stopped through MCP');
        const outcome = await local.run.done;
        return text(`run ${id} ${outcome.status}`, { runId: id, status: outcome.status });
      } catch (error) {
        return failure(error);
      }
    },
  );

  if (era === 'modern') registerTaskMethods(server, runs);
  return server;
}

/**
 * Serves the tools on stdin/stdout until the input ends. The SDK's entry picks each connection's
 * era from its first message (`server/discover` or `initialize`) and keeps one instance for it;
 * lines that are not JSON-RPC are answered before they reach it (serverStdio.ts).
 */
export async function serveStdio(runs: McpRuns, options: McpServeOptions): Promise<{ closed: Promise<void> }> {
  const { serveStdio: serve, StdioServerTransport } = await import('@modelcontextprotocol/server/stdio');
  const notify = options.notify ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const wire = new StdioServerTransport(jsonRpcLines(process.stdin, process.stdout, notify), process.stdout);
  serve(({ era }) => createA2aMcpServer(runs, options, era), { transport: wire, onerror: (error) => notify(`a2a mcp: ${redactText(errorText(error))}`) });
  const closed = new Promise<void>((done) => {
    // the entry set its own onclose: chain to it
    const entry = wire.onclose;
    wire.onclose = () => {
      entry?.();
      done();
    };
    process.stdin.once('end', () => done());
  });
  return { closed };
}

/**
 * Serves the tools over Streamable HTTP (serverHttp.ts): both eras, stateless, behind the Host,
 * Origin and token checks.
 */
export function serveHttp(runs: McpRuns, options: McpHttpOptions): Promise<McpHttpServer> {
  return serveMcpHttp((era) => createA2aMcpServer(runs, options, era), options);
}
