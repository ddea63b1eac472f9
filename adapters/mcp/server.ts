/**
 * a2a as an MCP server (`a2a mcp`): an editor's agent (Claude Code, Cursor, VS Code) hands work to
 * an a2a team through tools. Runs start in this process on the library API (`startRun`), with the
 * file store of the workspace, so `a2a status`, `a2a inbox` and `a2a audit` see them too; runs
 * started elsewhere in the workspace (`a2a run`) are read from their files and answered through
 * their control channel, as `a2a inbox` does. The same checks apply either way.
 */
import { timingSafeEqual } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { isAbsolute, relative, resolve } from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';
import type { ControlRequest, HumanItem, PlanInput } from '../../machines/protocol/index.js';
import type { RunStatus } from '../../actors/observation/runStatus.js';
import { ArtifactStore } from '../../actors/organiser/artifacts.js';
import { A2AError, isA2AError } from '../../actors/errors.js';
import { redactText } from '../../actors/config/secrets.js';
import { errorText } from '../../machines/errorText.js';
import { realClock } from '../clock.js';
import { FileArtifactBackend } from '../store/artifactFiles.js';
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

type Reply = { content: Array<{ type: 'text'; text: string }>; isError?: boolean; structuredContent?: Record<string, unknown> };

const text = (body: string, structured?: Record<string, unknown>): Reply => ({ content: [{ type: 'text', text: redactText(body) }], ...(structured ? { structuredContent: structured } : {}) });
const failure = (error: unknown): Reply => ({ content: [{ type: 'text', text: redactText(isA2AError(error) ? `${error.code}: ${error.message}` : errorText(error)) }], isError: true });

/** The runs this server started, and the workspace's other runs through their files. */
export class McpRuns {
  readonly workspace: string;
  readonly store: FileRunStore;
  readonly #runs = new Map<string, { run: Run; outcome: RunOutcome | null; error: string | null }>();
  readonly #notify: (line: string) => void;

  constructor(options: McpServeOptions) {
    this.workspace = resolve(options.workspace ?? process.cwd());
    this.store = new FileRunStore(this.workspace);
    this.#notify = options.notify ?? ((line) => void process.stderr.write(`${line}\n`));
  }


  async start(request: Parameters<typeof startRun>[0]): Promise<Run> {
    const run = await startRun({ workspace: this.workspace, notify: this.#notify, ...request });
    const held = { run, outcome: null as RunOutcome | null, error: null as string | null };
    this.#runs.set(run.id, held);
    run.done.then(
      (outcome) => (held.outcome = outcome),
      (error: unknown) => (held.error = errorText(error)),
    );
    return run;
  }

  local(runId: string) {
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

function outcomeText(runId: string, outcome: RunOutcome): string {
  const lines = [`run ${runId} ${outcome.status} · ${outcome.usage.modelCalls} model calls · $${outcome.usage.costUsd.toFixed(4)}`];
  for (const t of outcome.summary?.tasks ?? []) {
    lines.push('', `## ${t.id} (${t.agentType}): ${t.state}${t.result ? ` · ${t.result.status}` : ''}`);
    if (t.result?.output) lines.push(t.result.output);
    if (t.result?.error) lines.push(`error: ${t.result.error}`);
  }
  if (outcome.result) lines.push('', `${outcome.result.status}: ${outcome.result.output}`, ...(outcome.result.error ? [`error: ${outcome.result.error}`] : []));
  return lines.join('\n');
}

const RunIdArg = z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'a run id').optional().describe('The run (default: the latest started here)');
const By = 'mcp';

/** The MCP server's tools over `runs`. */
export function createA2aMcpServer(runs: McpRuns, options: McpServeOptions = {}): McpServer {
  const server = new McpServer(
    { name: 'a2a', version: options.version ?? '0' },
    {
      instructions:
        'a2a runs a team of LLM agents (an orchestrator, workers in git worktrees, parallel sub-tasks) on this workspace. ' +
        'start_run with a task or a plan; watch it with run_status (its tree, cost, and what waits for a person); answer permissions and questions with answer; ' +
        'get_result waits for the end and returns each task\'s output; artifacts lists what the agents wrote; control pauses, resumes or redirects; stop_run cancels.',
    },
  );

  server.registerTool(
    'start_run',
    {
      title: 'Start an a2a run',
      description: 'Starts a run in the workspace: a task (one worker, optionally an agent type like @coder), a plan (tasks with agents and dependencies) or a plan file. Returns the run id at once; the run goes on in the background.',
      inputSchema: {
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
      },
    },
    async (args) => {
      try {
        const given = [args.task !== undefined && !args.workflow, args.plan !== undefined, args.planFile !== undefined].filter(Boolean).length;
        if (given !== 1 && !(args.workflow && args.task)) return failure(new Error('give exactly one of task, plan and planFile (a workflow takes its goal as task)'));
        const base = {
          ...(args.agent ? { agent: args.agent } : {}),
          ...(args.model ? { model: args.model } : {}),
          ...(args.maxDepth !== undefined ? { maxDepth: args.maxDepth } : {}),
          ...(args.maxParallel !== undefined ? { maxParallel: args.maxParallel } : {}),
          ...(args.questions ? { questions: args.questions } : {}),
          ...(args.onComplete ? { onComplete: args.onComplete } : {}),
        };
        // a client may be an agent that read something hostile: it names work, never configuration
        if (args.plan !== undefined && ('config' in args.plan || 'script' in args.plan)) {
          return failure(new Error('plan: "config" and "script" are not taken over MCP (they would change permissions, the sandbox or the model): put them in the workspace\'s a2a.config.json'));
        }
        const run = await runs.start(
          args.plan !== undefined
            ? { ...base, plan: args.plan as PlanInput } // checked by the run like a plan file
            : args.planFile !== undefined
              ? { ...base, target: insideWorkspace(runs.workspace, args.planFile) }
              : args.workflow
                ? { ...base, target: args.task!, workflow: args.workflow }
                : { ...base, task: args.task! },
        );
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
      inputSchema: { runId: RunIdArg },
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
    { title: 'Runs of the workspace', description: 'The runs of the workspace, newest last: id, status, plan, when started.', inputSchema: {} },
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
      inputSchema: {
        runId: RunIdArg,
        id: z.string().min(1).describe('The item id, or its number in run_status'),
        approved: z.boolean().optional(),
        text: z.string().optional(),
        reason: z.string().optional(),
      },
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
      inputSchema: {
        runId: RunIdArg,
        action: z.enum(['pause', 'resume', 'approve_all', 'redirect', 'restart', 'reassign', 'switch_model']),
        taskId: z.string().optional(),
        instructions: z.string().optional(),
        agent: z.string().optional(),
        profile: z.string().optional(),
      },
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
      description: "Each task's status and output, and the cost. Waits up to waitSeconds (default 0, at most 300) for a run still going; then says it is still running.",
      inputSchema: { runId: RunIdArg, waitSeconds: z.number().min(0).max(300).optional() },
    },
    async ({ runId, waitSeconds }, extra) => {
      try {
        const id = runs.resolveId(runId);
        const local = runs.local(id);
        if (local) {
          if (!local.outcome && !local.error && waitSeconds) {
            let timer: NodeJS.Timeout | undefined;
            let onAbort: (() => void) | undefined;
            await Promise.race([
              local.run.done.catch(() => undefined),
              new Promise((r) => (timer = setTimeout(r, waitSeconds * 1000))),
              new Promise<void>((r) => extra.signal.addEventListener('abort', (onAbort = () => r()), { once: true })),
            ]);
            clearTimeout(timer);
            if (onAbort) extra.signal.removeEventListener('abort', onAbort);
            // the run's own bookkeeping settles on the same turn: let it
            await new Promise((r) => setImmediate(r));
          }
          if (local.error) return failure(new Error(`run ${id} failed inside a2a: ${local.error}`));
          if (!local.outcome) return text(`run ${id} is still running (run_status shows where it is)`, { runId: id, status: 'running' });
          return text(outcomeText(id, local.outcome), { runId: id, status: local.outcome.status, usage: { ...local.outcome.usage } });
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
      description: 'What the agents of a run wrote to its artifact store: the list, or one artifact\'s content (id, optionally a version).',
      inputSchema: { runId: RunIdArg, id: z.string().optional(), version: z.number().int().min(1).optional() },
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
    { title: 'Stop a run', description: 'Cancels every worker and sub-task of a run started here; each still reports what it had.', inputSchema: { runId: RunIdArg, reason: z.string().optional() } },
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
  return server;
}

/** Serves the tools on stdin/stdout until the input ends. */
export async function serveStdio(runs: McpRuns, options: McpServeOptions): Promise<{ closed: Promise<void> }> {
  const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
  const server = createA2aMcpServer(runs, options);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((done) => {
    transport.onclose = () => done();
    process.stdin.once('end', () => done());
  });
  await server.connect(transport);
  return { closed };
}

/**
 * Serves the tools over Streamable HTTP on 127.0.0.1, each request with `Authorization: Bearer
 * <token>` (compared in constant time); anything else is a 401 and reaches no tool.
 */
export async function serveHttp(runs: McpRuns, options: McpServeOptions & { port?: number; token: string }): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  if (options.token.length < 16) throw new Error('the MCP token must be at least 16 characters');
  const expected = Buffer.from(`Bearer ${options.token}`);
  const authorized = (req: IncomingMessage) => {
    const given = Buffer.from(String(req.headers.authorization ?? ''));
    return given.length === expected.length && timingSafeEqual(given, expected);
  };
  const http = createServer((req: IncomingMessage, res: ServerResponse) => {
    try {
      handle(req, res);
    } catch (error) {
      // a malformed request is that request's problem, never the server's (its runs go on)
      if (!res.headersSent) res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `bad request: ${errorText(error)}` }));
    }
  });
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (!authorized(req)) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ error: 'unauthorized: send Authorization: Bearer <token> (a2a mcp printed where it is)' }));
      return;
    }
    if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'the MCP endpoint is /mcp' }));
      return;
    }
    // stateless: one server and transport per request, over the runs they share
    const server = createA2aMcpServer(runs, options);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => void transport.close().catch(() => undefined));
    server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: errorText(error) }));
      });
  };
  http.on('clientError', (_error, socket) => socket.destroy());
  await new Promise<void>((ok, fail) => {
    http.once('error', (error: NodeJS.ErrnoException) =>
      fail(
        error.code === 'EADDRINUSE' || error.code === 'EACCES'
          ? new A2AError('VALIDATION_ERROR', `--port ${options.port ?? 0}: ${error.code === 'EADDRINUSE' ? 'another process listens there' : 'not allowed to listen there'}; choose another port, or leave --port out for a free one`, { where: '--port' })
          : error,
      ),
    );
    http.listen(options.port ?? 0, '127.0.0.1', () => ok());
  });
  // after listening, an error of the server is told, not thrown into the process
  http.on('error', (error) => options.notify?.(`a2a: the MCP HTTP server: ${errorText(error)}`));
  const url = `http://127.0.0.1:${(http.address() as { port: number }).port}/mcp`;
  return {
    server: http,
    url,
    // clients keep connections open (keep-alive, event streams): closing does not wait for them
    close: () =>
      new Promise<void>((done) => {
        http.close(() => done());
        http.closeAllConnections();
      }),
  };
}
