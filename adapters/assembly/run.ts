/**
 * A run, assembled: its configuration, agents, tools, models, store, transport, git, sandbox and
 * human channel, and the actors started on them. `a2a run` (bin/commands/run.ts) and the library
 * (`startRun` in index.ts) both start runs here, so there is one way a run happens; what differs
 * is only how it is shown (a terminal tree or typed events) and who answers (a prompt or code).
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { Clock, Model, PullRequests } from '../../machines/ports.js';
import { ControlRequest as ControlRequestSchema, RunId as RunIdSchema, type ControlRequest, type HumanAnswer, type HumanItem, type Plan, type RunEvent, type SessionSpec, type SubTaskResult } from '../../machines/protocol/index.js';
import { secrets } from '../../actors/config/secrets.js';
import { A2AError, describeIssues } from '../../actors/errors.js';
import { checkWorkflow, layerSource } from '../../actors/organiser/workflowRoles.js';
import type { AgentRegistry } from '../../actors/config/registry.js';
import type { ConfigLayer, RunConfig } from '../../actors/config/config.js';
import { RunEventBus } from '../../actors/observation/events.js';
import { orchestratorInput, parsePlan, standaloneSpec, startRun, startStandalone } from '../../actors/run.js';
import { workflowRunInput } from '../../actors/run.js';
import { isAudited } from '../../actors/durability/audit.js';
import type { HumanChannel } from '../../actors/people/humanGate.js';
import { pendingHumanItems } from '../../actors/observation/runStatus.js';
import { RunView } from '../../actors/observation/runView.js';
import { createRuntime } from '../../actors/runtime.js';
import { mailboxOf, runBox } from '../../actors/distribution/mailbox.js';
import { artifactEvent, artifactStores } from '../../actors/organiser/artifacts.js';
import { errorText } from '../../machines/errorText.js';
import { realClock } from '../clock.js';
import { CODE_SETTINGS, loadScript } from '../config.js';
import type { Script } from '../model/scripted.js';
import { alive, Checkpointer, ControlServer, handleControl, planResume, type ControlReply, type ResumePlan } from '../runHost.js';
import { createGit, planGit, seedRepository } from '../git.js';
import { indexRun } from '../store/runIndex.js';
import { createPullRequest } from '../github.js';
import { publishRunEvents, relayHostEvents } from '../transport/events.js';
import { publishPause } from '../transport/pause.js';
import { ensureQueues } from '../../actors/distribution/remote.js';
import { snapshotHolders } from '../host.js';
import { FileRunStore } from '../store/file.js';
import { FileEffectJournal } from '../store/effects.js';
import { FileArtifactBackend } from '../store/artifactFiles.js';
import { MemoryArtifactBackend } from '../store/artifactMemory.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../store/artifactKv.js';
import type { InspectorConnection } from '../inspector.js';
import { codeChannel, type HumanHandler } from '../humanPrompt.js';
import { targetOf, templateDir, type Target } from './target.js';

export type { HumanHandler };
import { modelsFor } from './models.js';
import type { TypedRunEvent } from '../../machines/runEvents.js';
import { configuration, externalTools, transportStage } from './stages.js';
import { environmentTrace, exportSettings, tracingFor } from './tracing.js';
import { contextOfHeaders, otelApi } from '../../actors/observation/tracing.js';
import type { CodeInputs } from './tools.js';

export const DEFAULT_INSPECTOR_URL = 'ws://127.0.0.1:8080';

/** The settings of a run: the flags of `a2a run`, and the same fields for the library. */
export interface RunOptions {
  /** Agent type for a task, or for plan tasks that name none (`@coder`, `claude:reviewer`). */
  agent?: string;
  /** Send inspection events to this WebSocket (true: the default `a2a inspect` address). */
  inspect?: string | boolean;
  /** A configuration file (default: a2a.config.json or .yaml in the workspace). */
  config?: string;
  /** A scripted-model script file (JSON). */
  script?: string;
  /** The workspace directory (default: the current directory). */
  workspace?: string;
  /** A single task as a standalone session: no orchestrator; sub-tasks nest one level. */
  standalone?: boolean;
  /** This run id instead of a generated one. */
  runId?: string;
  maxDepth?: number;
  maxParallel?: number;
  maxSubtasks?: number;
  spawnRate?: number;
  maxWorkers?: number;
  maxTurns?: number;
  subtaskTimeout?: number;
  idleThreshold?: number;
  inquiryDelay?: number;
  inquiryTimeout?: number;
  /** Who answers worker questions: policy, model or human. */
  questions?: string;
  /** What happens to a finished worker's branch: merge, pr, review, keep. */
  onComplete?: string;
  /** Worktrees per worker: auto (in a git repository), on, off. */
  worktrees?: string;
  /** Continue a run that was killed, from its checkpoint and inbox journal (file store only). */
  resume?: string;
  /** A model profile (or model name) for workers whose task names none. */
  model?: string;
  /** Deploy workers to hosts over NATS (`a2a host`) instead of running them in this process. */
  nats?: string;
  namespace?: string;
  /** Run a workflow instead of a plan: `sdlc` (the target is the goal). */
  workflow?: string;
  /**
   * Traces (OpenTelemetry): an OTLP/HTTP endpoint to export to (`--otel <url>`); `true`: the
   * OTEL_EXPORTER_OTLP_* variables, or without them the program's own tracer provider; `false`:
   * none, even with the variables set. Default: export when OTEL_EXPORTER_OTLP_ENDPOINT is set.
   */
  otel?: string | boolean;
  /** Prompts, outputs, tool arguments and results as span attributes (redacted either way). */
  otelContent?: boolean;
}


/** A run to start: what to run, its settings, and what a program adds in code. */
export interface RunRequest extends Omit<RunOptions, 'model'>, CodeInputs {
  /** A plan file, a directory holding plan.json or workflow.json, or a task in quotes (the CLI's argument). */
  target?: string;
  /** A plan object, checked like a plan file. */
  plan?: unknown;
  /** A single task. */
  task?: string;
  /** Configuration given in code: the same shape as the config file, applied over it. */
  settings?: ConfigLayer;
  /**
   * A model profile (or model name) for workers whose task names none, as `--model`; or one `Model`
   * for every session (a program's own, or scriptedModel / openaiModel / anthropicModel).
   */
  model?: Model | string;
  /** `file` (default): the run's record, log, checkpoints and inbox under <workspace>/.a2a; `memory`: nothing written. */
  store?: 'file' | 'memory';
  /** Answers permissions and questions meant for a person; without one they wait for `answer()` (or `a2a inbox`). */
  human?: HumanHandler;
  /** The human channel of the CLI (a terminal prompt, a printed notice), given the way to answer. */
  humanChannel?: (answer: (id: string, answer: HumanAnswer) => void, runId: string) => HumanChannel;
  /** Every run event, from the first (its `data` typed by its `type`). */
  onEvent?: (event: TypedRunEvent) => void;
  /** The W3C trace context the run's trace continues (an A2A caller's `traceparent`); default: the program's active span, else TRACEPARENT. */
  trace?: { traceparent: string; tracestate?: string };
  clock?: Clock;
}

export interface RunUsage {
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
}

export interface RunOutcome {
  status: 'completed' | 'failed' | 'cancelled';
  /** The CLI's exit code for it: 0, 1 or 130. */
  exitCode: number;
  /** An orchestrated run's summary (every task and its worker's result). */
  summary?: RunSummary;
  /** A standalone session's result. */
  result?: SubTaskResult;
  usage: RunUsage;
}

/** A run that is prepared (validated, its record written) and starts when `start()` is called. */
export interface LaunchedRun {
  readonly runId: string;
  readonly planId: string;
  readonly workspace: string;
  readonly standalone: boolean;
  /** The live tree, from the run's events. */
  readonly view: RunView;
  /** Model calls, tokens and cost so far (sub-tasks included). */
  readonly usage: Readonly<RunUsage>;
  readonly done: Promise<RunOutcome>;
  start(): void;
  subscribe(listener: (event: RunEvent) => void): () => void;
  /** Items waiting for a person. */
  pending(): HumanItem[];
  /** The same requests as `a2a inbox`, `a2a pause`, `a2a redirect` …: checked, then carried out. */
  control(request: ControlRequest): ControlReply;
  /** Cancels every worker and sub-task; each still reports, and `done` resolves. */
  stop(reason: string): void;
  /** For a forced exit: the log closed and the run marked cancelled now. */
  abandon(): void;
}

/** The run's budgets for its `run.started` event (none when no budget is set). */
function budgetsOf(config: RunConfig): { budgets?: { runUsd?: number; workerUsd?: number } } {
  const b = config.models.budgets;
  return b && Object.keys(b).length > 0 ? { budgets: b } : {};
}

function newRunId(): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  return `r-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}-${randomBytes(4).toString('hex')}`;
}

/** The configuration layer made of the run's options (the command line's flags). */
function flagLayer(o: Omit<RunOptions, 'model'>): ConfigLayer {
  const limits: Record<string, number> = {};
  const idle: Record<string, number> = {};
  const set = (target: Record<string, number>, key: string, value: number | undefined) => {
    if (value !== undefined) target[key] = value;
  };
  set(limits, 'maxDepth', o.maxDepth);
  set(limits, 'maxDepthStandalone', o.standalone ? o.maxDepth : undefined);
  set(limits, 'maxParallelSubtasks', o.maxParallel);
  set(limits, 'maxSubtasksPerWorker', o.maxSubtasks);
  set(limits, 'spawnRatePerMinute', o.spawnRate);
  set(limits, 'maxParallelWorkers', o.maxWorkers);
  set(limits, 'maxTurns', o.maxTurns);
  set(limits, 'subtaskTimeoutMs', o.subtaskTimeout);
  set(idle, 'idleThresholdMs', o.idleThreshold);
  set(idle, 'inquiryDelayMs', o.inquiryDelay);
  set(idle, 'inquiryTimeoutMs', o.inquiryTimeout);
  return {
    ...(Object.keys(limits).length ? { limits } : {}),
    ...(Object.keys(idle).length ? { idle } : {}),
    ...(o.agent ? { defaultAgent: o.agent } : {}),
    ...(o.questions ? { orchestrator: { questions: o.questions } } : {}),
    ...(o.onComplete || o.worktrees ? { git: { ...(o.onComplete ? { onComplete: o.onComplete } : {}), ...(o.worktrees ? { worktrees: o.worktrees } : {}) } } : {}),
  };
}

/** Everything a run needs, built from the target and options (the same way again on resume). */
function prepare(target: Target, request: RunRequest, runId: string) {
  const workspace = resolve(request.workspace ?? process.cwd());
  const extra: Array<{ source: string; data: ConfigLayer; base?: string }> = [];
  const targetConfig = target.plan?.config ?? target.workflow?.config;
  if (targetConfig) extra.push({ source: `${target.source} (config)`, data: targetConfig, base: target.baseDir });
  if (request.settings) extra.push({ source: CODE_SETTINGS, data: request.settings, base: workspace });
  // a run kept in memory leaves the repository as it found it: no worktrees, branches or merges
  // unless the program asks for them (settings.git.worktrees, or the worktrees option)
  const settingsGit = (request.settings as { git?: { worktrees?: unknown } } | undefined)?.git;
  if (request.store === 'memory' && request.worktrees === undefined && settingsGit?.worktrees === undefined) extra.push({ source: 'store: memory', data: { git: { worktrees: 'off' } } });
  extra.push({ source: 'command-line flags', data: flagLayer(request) });
  const loaded = configuration({ workspace, ...(request.config ? { configFile: request.config } : {}), extra, ...(request.tools ? { tools: request.tools } : {}), ...(request.agents ? { agents: request.agents } : {}) });
  const { config, policy, catalog, registry } = loaded;
  const scriptFile = request.script
    ? resolve(request.script)
    : (target.plan?.script ?? target.workflow?.script)
      ? resolve(target.baseDir, (target.plan?.script ?? target.workflow?.script)!)
      : config.model.script
        ? resolve(loaded.scriptBase ?? workspace, config.model.script)
        : null;
  const script: Script = request.scriptData ?? (scriptFile ? loadScript(scriptFile) : { rules: [] });
  // a workflow's roles: every agent in the registry, every profile configured
  const roles = target.workflow ? workflowRoles(config, registry, loaded.layers) : null;
  return { workspace, target, config, policy, catalog, registry, script, runId, roles };
}

/** Every role of the workflow with its agent and profile; errors name the file and field. */
function workflowRoles(config: RunConfig, registry: AgentRegistry, layers: Array<{ source: string; data: ConfigLayer }>): Record<string, { agent: string; profile?: string }> {
  const check = checkWorkflow(config, registry, (path) => layerSource(layers, path));
  if (!check.result.isValid) {
    throw new A2AError('CONFIGURATION_INVALID', `the workflow's roles are not valid:\n${check.result.errors.map((e) => `  - ${e}`).join('\n')}\n(check them with: a2a config validate)`, { where: 'workflow.roles' });
  }
  // a role's own profile wins; the others resolve as any worker's would (assignments, --model)
  const explicit = (role: string) => {
    const given = config.workflow.roles[role];
    return given && 'profile' in given ? given.profile : undefined;
  };
  return Object.fromEntries(Object.entries(check.roles).map(([role, r]) => [role, { agent: r.agent, ...(explicit(role) ? { profile: explicit(role)! } : {}) }]));
}

/** The run's record says how it was started; resume only what ended without finishing. */
function resumable(store: FileRunStore, runId: string, request: RunRequest) {
  const record = store.read(runId);
  if (record.status === 'completed' || record.status === 'failed' || record.status === 'cancelled') {
    throw new A2AError('INVALID_STATE_TRANSITION', `run ${runId} already finished (${record.status}); nothing to resume`);
  }
  if (record.status === 'running' && record.pid !== process.pid && alive(record.pid)) {
    throw new A2AError('INVALID_STATE_TRANSITION', `run ${runId} is still running (pid ${record.pid}); stop it first with: a2a stop ${runId}`);
  }
  if (!record.invocation) throw new A2AError('VALIDATION_ERROR', `run ${runId} was not recorded with what started it; it cannot be resumed`);
  if (record.invocation.code && !codeOnly(request)) {
    // its agents, tools, model or settings exist only in the program that started it
    throw new A2AError(
      'VALIDATION_ERROR',
      `run ${runId} was started by a program with its own agents, tools, model or settings: resume it from that program, with the same code inputs (startRun({ resume: "${runId}", tools, agents, … }))`,
      { where: 'resume' },
    );
  }
  if (record.planId === 'standalone') throw new A2AError('VALIDATION_ERROR', `run ${runId} is a standalone session: only orchestrated runs can be resumed`);
  // killed before its first checkpoint: it starts again from its plan, under the same id (its log
  // continues, and what it had logged is not logged twice)
  const checkpoint = store.readCheckpoint(runId);
  return { record, checkpoint };
}


/** What is kept of the options for a resume (the run id, display and code-only fields are not). */
const KEPT_OPTIONS: ReadonlyArray<keyof RunOptions> = [
  'agent', 'config', 'script', 'workspace', 'standalone', 'maxDepth', 'maxParallel', 'maxSubtasks', 'spawnRate', 'maxWorkers', 'maxTurns', 'subtaskTimeout',
  'idleThreshold', 'inquiryDelay', 'inquiryTimeout', 'questions', 'onComplete', 'worktrees', 'model', 'nats', 'namespace', 'workflow',
];

/** Whether the request holds what only a program has, and a resume from the command line would lack. */
function codeOnly(request: RunRequest): boolean {
  return !!(request.agents?.length || request.tools?.length || typeof request.model === 'object' || request.scriptData || request.settings || request.human);
}

function invocationOptions(options: RunRequest): Record<string, unknown> {
  const kept = options as Record<string, unknown>;
  return Object.fromEntries(KEPT_OPTIONS.filter((k) => kept[k] !== undefined && (k !== 'model' || typeof kept[k] === 'string')).map((k) => [k, kept[k]]));
}

/** Where a run's lines go, and its clock. */
interface RunIO {
  notify: (line: string) => void;
  warn: (message: string) => void;
  clock: Clock;
}

/**
 * Stage 1, the request: what to run and under which id. A resume takes what the run was started
 * with from its record; a workflow that names a template workspace gets a fresh git copy of it.
 * Bad tracing settings are refused here, before anything is connected or written.
 */
async function requestStage(request: RunRequest, io: RunIO) {
  const memory = request.store === 'memory';
  if (request.store !== undefined && request.store !== 'file' && request.store !== 'memory') {
    throw new A2AError('VALIDATION_ERROR', `store: "${String(request.store)}" is not a store; use "file" (the default: <workspace>/.a2a) or "memory"`, { where: 'store' });
  }
  if (memory && request.resume) throw new A2AError('VALIDATION_ERROR', 'resume needs the file store: a run kept in memory is gone with its process', { where: 'resume' });
  const store0 = new FileRunStore(resolve(request.workspace ?? process.cwd()));
  let resuming: ReturnType<typeof resumable> | null = null;
  let target = request.target;
  let effective: RunRequest = request;
  if (request.resume) {
    if (target !== undefined || request.plan !== undefined || request.task !== undefined) {
      throw new A2AError('VALIDATION_ERROR', `give either a target or --resume <runId>, not both (got "${target ?? request.task ?? 'a plan'}" and --resume ${request.resume})`);
    }
    resuming = resumable(store0, request.resume, request);
    const inv = resuming.record.invocation!;
    target = inv.target;
    // what the run was started with, not flags given now (display and code-side fields stay)
    const notOptions = Object.fromEntries(Object.entries(request).filter(([key]) => !(KEPT_OPTIONS as readonly string[]).includes(key)));
    effective = { ...notOptions, ...(inv.options as RunOptions), workspace: inv.workspace, resume: request.resume };
  }
  const otelExport = exportSettings(effective);
  const runId = resuming?.record.runId ?? request.runId ?? newRunId();
  const validRunId = RunIdSchema.safeParse(runId);
  if (!validRunId.success) throw new A2AError('VALIDATION_ERROR', `run id "${runId}" is not allowed: ${validRunId.error.issues[0]?.message ?? 'invalid'}`, { where: 'runId' });
  const resolvedTarget = targetOf(resuming ? { ...effective, plan: undefined, task: undefined } : effective, target, resolve(effective.workspace ?? process.cwd()));
  // a workflow file that names a template workspace runs on a fresh git copy of it (unless a workspace is given)
  if (!effective.workspace && resolvedTarget.workflow?.workspace) {
    const template = templateDir(resolvedTarget.baseDir, resolvedTarget.workflow.workspace, resolvedTarget.source);
    const seeded = await seedRepository(template, `a2a-${resolvedTarget.workflow.id}-`);
    // a2a pause|resume|status|stop|artifacts find it from anywhere, without --workspace
    indexRun(runId, seeded);
    io.notify(`workspace: ${seeded} (a fresh git repository holding a copy of ${template}; a2a status|pause|resume|artifacts ${runId} find it from anywhere)`);
    effective = { ...effective, workspace: seeded };
  }
  return { memory, store0, resuming, target, effective, runId, otelExport, resolvedTarget };
}
type Requested = Awaited<ReturnType<typeof requestStage>>;
type Prepared = ReturnType<typeof prepare>;

/** Stage 3, the store and the event bus: a resumed run continues its log (read once: the same sequence, and what the log holds is not emitted again). */
function storeStage(asked: Requested, p: Prepared, io: RunIO) {
  const store = asked.memory ? null : new FileRunStore(p.workspace);
  const resumeAt = asked.resuming ? asked.store0.resumePoint(asked.runId, (problem) => io.warn(problem)) : undefined;
  const bus = new RunEventBus(asked.runId, io.clock, resumeAt?.start);
  return { store, resumeAt, bus };
}
type Stored = ReturnType<typeof storeStage>;

/** Stage 4, the models: clients by profile (the scripted model unless profiles say otherwise), priced per call; a resumed run's spending counts against its budgets. */
function modelStage(request: RunRequest, asked: Requested, p: Prepared, stored: Stored, io: RunIO) {
  const given = typeof request.model === 'object' && request.model !== null ? request.model : undefined;
  if (request.model !== undefined && !given && typeof request.model !== 'string') {
    throw new A2AError('VALIDATION_ERROR', 'model: give a Model (scriptedModel, openaiModel, anthropicModel or your own) or a profile name', { where: 'model' });
  }
  if (given && (typeof given.call !== 'function' || typeof given.id !== 'string')) {
    throw new A2AError('VALIDATION_ERROR', 'model: a Model has an id (string) and call(request, { signal }) returning a reply', { where: 'model' });
  }
  const models = modelsFor(p.config, p.registry, p.script, io.clock, p.workspace, given);
  // a workflow run's organiser: --model too, unless it has a profile of its own
  const profileName = typeof asked.effective.model === 'string' ? asked.effective.model : undefined;
  const organiserModel = p.target.workflow ? models.organiser(profileName) : undefined;
  if (asked.resuming) {
    // the spending before the kill counts against the budgets (as far as the event log has it)
    for (const s of stored.resumeAt?.spend ?? []) {
      models.ledger.restore({ sessionId: s.sessionId, workerId: `${asked.runId}.${s.workerId}`, usd: s.usd, usage: { inputTokens: s.inputTokens, outputTokens: s.outputTokens } });
    }
  }
  return { ...models, profileName, organiserModel };
}

/**
 * Stage 5, the transport (with --nats): the workers run on hosts; what reaches this process is
 * acknowledged after its next checkpoint (`pendingAcks`).
 */
async function transportOfRun(asked: Requested, p: Prepared, bus: RunEventBus, io: RunIO) {
  const { effective, runId } = asked;
  const ns = effective.namespace ?? 'default';
  const transport = effective.nats ? await transportStage(effective.nats, ns, `a2a-run-${runId}`, io.notify) : null;
  const pendingAcks: Array<() => Promise<void>> = [];
  if (!transport) return { ns, transport, remote: null, pendingAcks };
  const remote = {
    deps: { transport, ns, process: `run-${runId}`, box: runBox(runId), clock: io.clock, events: bus, deferAck: (_owner: string, ack: () => Promise<void>) => void pendingAcks.push(ack), holderOf: await snapshotHolders(transport, ns) },
    placeRemotely: () => true,
  };
  // a report for no stand-in of this run (one that ended long ago, or never was): said, then dropped
  mailboxOf(transport, ns, runBox(runId)).onDrop = (parcel, why) => bus.emit({ type: 'warning', data: { message: `dropped a report on ${parcel.message.subject}: ${why}` } });
  await ensureQueues(transport, ns);
  const budgets = p.config.models.budgets;
  if (budgets && (budgets.runUsd !== undefined || budgets.workerUsd !== undefined)) {
    // said, not silently ignored: spending is counted where the model calls are made
    io.warn('budgets (models.budgets) are enforced per process: with --nats the sessions on hosts spend against the budgets of each host\'s own config (the run\'s summary still adds up every call the hosts report)');
  }
  return { ns, transport, remote, pendingAcks };
}
type Connected = Awaited<ReturnType<typeof transportOfRun>>;

/**
 * Stage 6, the tools' world: git and pull requests, the artifact store (the run's files, memory,
 * or with --nats the KV bucket the hosts share), the sandbox's command runner, the agents' MCP
 * servers, and the effect journal (file store: model replies and tool results on record before
 * the session acts on them; the event log is written first, through `logFlush`, so that what a
 * step told is there before the record that says it is over).
 */
function toolStage(asked: Requested, p: Prepared, stored: Stored, connected: Connected, io: RunIO) {
  const { store, bus } = stored;
  const { transport } = connected;
  const git = createGit();
  const github = p.config.git.github;
  const token = github ? process.env[github.tokenEnv] : undefined;
  if (github) secrets.add(github.tokenEnv, token);
  const pullRequests: PullRequests | undefined =
    github && token ? { open: (o) => createPullRequest({ ...o, token, ...(github.apiUrl ? { apiUrl: github.apiUrl } : {}) }) } : undefined;
  const backend = transport ? new KvArtifactBackend(() => transport.keyValue(ARTIFACT_BUCKET)) : store ? new FileArtifactBackend(store.root) : new MemoryArtifactBackend();
  const artifacts = artifactStores(backend, io.clock, { onChange: (meta, change) => bus.emit(artifactEvent(meta, change)) });
  const { commands, mcp } = externalTools(p.config, p.workspace, bus);
  if (commands.warning) io.warn(commands.warning);
  const logFlush = { now: () => {} };
  const effectJournal = store && p.config.effects.journal
    ? new FileEffectJournal(store, asked.runId, { beforeWrite: () => logFlush.now(), onInvalid: (problem) => io.warn(`the effect journal: ${problem}`) })
    : null;
  return { git, pullRequests, artifacts, commands, mcp, effectJournal, logFlush };
}

/** Stage 8, traces (with --otel or OTEL_* variables): the run's spans, parented to a program's active span or the environment's TRACEPARENT. */
async function traceStage(request: RunRequest, asked: Requested, bus: RunEventBus, io: RunIO) {
  const { effective, otelExport, runId } = asked;
  const { notify, warn } = io;
  const tracing = await tracingFor(effective, otelExport, 'a2a', notify);
  if (tracing) {
    // a program's active span (a run started inside its own trace), or the TRACEPARENT of the
    // environment (a CI job's trace), is the run's parent
    const inherited = request.trace ?? environmentTrace();
    const otel = await otelApi();
    const parent = otel.trace.getSpanContext(otel.context.active()) ?? contextOfHeaders(inherited);
    if (inherited && !parent) warn(`${request.trace ? 'trace' : 'TRACEPARENT'} "${String(inherited.traceparent).slice(0, 80)}" is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): the run starts a trace of its own`);
    tracing.builder.parentRun(runId, parent);
    bus.subscribe((e) => tracing.builder.observe(e));
    notify(`tracing: spans of run ${runId} go to ${tracing.target}`);
  }
  return tracing;
}

/**
 * Stage 9, what the run runs, checked before anything is written: the git plan (worktrees,
 * merges, pull requests), the orchestrator's input (a plan, a workflow, or a task as a plan of
 * one) or a standalone session's spec; an unknown profile or a missing API key fails here.
 */
async function inputStage(asked: Requested, p: Prepared, runtime: ReturnType<typeof createRuntime>, tools: { git: ReturnType<typeof createGit>; pullRequests: PullRequests | undefined; resolveModel: (spec: SessionSpec) => unknown; profileName: string | undefined }) {
  const { effective, runId, resuming } = asked;
  const { git, pullRequests, resolveModel, profileName } = tools;
  const plan: Plan | null = p.target.plan ?? null;
  const workflowRequest = p.target.workflow ?? null;
  const orchestratedRun = !!plan || !!workflowRequest || effective.standalone !== true;
  const gitPlan =
    orchestratedRun && !resuming?.checkpoint
      ? await planGit(p.config.git, { workspace: p.workspace, runId, git, reviewer: p.registry.resolve(p.config.git.reviewer).parsed })
      : null;
  if (gitPlan?.github && !pullRequests) {
    throw new A2AError('CONFIGURATION_INVALID', `git.github is set (${p.config.git.github!.repo}) but ${p.config.git.github!.tokenEnv} is not set: export a token, or remove git.github to push without opening a PR`);
  }
  if (workflowRequest && gitPlan && gitPlan.action !== 'merge') {
    // each step builds on what the steps before it merged: a branch left for a PR or a person
    // would leave the next step's worktree without the code
    throw new A2AError(
      'CONFIGURATION_INVALID',
      `git.onComplete is "${gitPlan.action}", but a workflow run needs "merge": every step starts from the code the steps before it merged. Run it on a branch of its own (git switch -c …) and open the PR from that branch, or set git.worktrees: off`,
      { where: 'git.onComplete' },
    );
  }
  const runOptions = { runId, config: p.config, policy: p.policy, workspace: p.workspace, git: gitPlan, ...(profileName ? { model: profileName } : {}) };
  const input = plan
    ? orchestratorInput(plan, runtime, runOptions, p.target.source)
    : workflowRequest
      ? workflowRunInput(workflowRequest, runtime, { ...runOptions, roles: p.roles!, startedAt: Date.now() })
      : null;
  const standalone = !plan && !workflowRequest && effective.standalone === true;
  const single: Plan | null =
    !plan && !workflowRequest && !standalone ? parsePlan({ id: 'task', tasks: [{ id: 'task', prompt: p.target.task, ...(effective.agent ? { agent: effective.agent } : {}) }] }, 'the task') : null;
  const orchestrated = input ?? (single ? orchestratorInput(single, runtime, runOptions, 'the task') : null);
  const planId = orchestrated?.planId ?? 'standalone';
  // an unknown profile or a missing API key fails here, before anything runs
  for (const t of orchestrated?.tasks ?? []) resolveModel(t.spec);
  for (const role of Object.values(orchestrated?.workflow?.roles ?? {})) resolveModel({ ...orchestrated!.workflow!.template, agent: role.agent, ...(role.model ? { model: role.model } : {}) });
  const spec = orchestrated ? null : standaloneSpec(p.target.task!, runtime, { ...runOptions, agent: effective.agent ?? p.config.defaultAgent });
  return { orchestrated, planId, spec };
}

/**
 * Stage 10, the run's record (file store): a new run's, with what started it (what a resume
 * needs); a resumed run's updated, its inbox journal read, its replay planned from the
 * checkpoint, and its pause put back.
 */
function recordStage(request: RunRequest, asked: Requested, p: Prepared, store: FileRunStore | null, runtime: ReturnType<typeof createRuntime>, planId: string, io: RunIO): ResumePlan | null {
  const { resuming, runId, target, effective } = asked;
  const { warn } = io;
  let plannedResume: ResumePlan | null = null;
  if (resuming && store) {
    const skipped: string[] = [];
    const journalRecords = store.readJournal(runId, (problem) => skipped.push(problem));
    for (const problem of skipped) warn(problem);
    if (resuming.checkpoint) {
      plannedResume = planResume(resuming.checkpoint, journalRecords);
      store.appendRecovered(runId, plannedResume.recovered, Date.now());
    }
    store.clearControl(runId);
    store.update(runId, { pid: process.pid, status: 'running', resumes: [...(resuming.record.resumes ?? []), { at: Date.now(), pid: process.pid }] });
    // paused when it was killed: paused again, until a2a resume
    if (resuming.record.paused) runtime.pauses.gate(runId).close(resuming.record.paused.by, resuming.record.paused.at);
  } else {
    store?.create({
      runId,
      pid: process.pid,
      status: 'running',
      startedAt: Date.now(),
      planId,
      source: p.target.source,
      // a run started with what only the program has (its agents, tools, model, settings) is
      // resumed by that program, which gives them again (the CLI refuses it: it would lack them)
      ...(target !== undefined ? { invocation: { target, options: invocationOptions(effective), workspace: p.workspace, ...(codeOnly(request) ? { code: true as const } : {}) } } : {}),
    });
  }
  return plannedResume;
}

/** Stage 11, the run's logs (events and audit, file store), its live view and its usage, fed by the bus. */
function logStage(asked: Requested, stored: Stored, logFlush: { now: () => void }, io: RunIO) {
  const { runId } = asked;
  const { store, bus, resumeAt } = stored;
  const { warn } = io;
  const log = store?.runLog(runId, { audited: isAudited, busState: () => bus.state(), spend: resumeAt?.spend, onError: warn }) ?? null;
  if (log) logFlush.now = () => log.flush();
  const usage: RunUsage = { modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  const view = new RunView();
  bus.subscribe((e) => {
    log?.append(e);
    view.apply(e);
    if (e.type === 'model.called') {
      // a reply thrown away (discarded) was billed: its tokens and cost count, not as a call made
      if (e.data.discarded !== true) usage.modelCalls++;
      usage.inputTokens += Number(e.data.inputTokens ?? 0);
      usage.outputTokens += Number(e.data.outputTokens ?? 0);
      usage.cacheReadTokens += Number(e.data.cacheReadTokens ?? 0);
      usage.cacheWriteTokens += Number(e.data.cacheWriteTokens ?? 0);
      usage.costUsd += Number(e.data.costUsd ?? 0);
    }
  });
  return { log, usage, view };
}

/**
 * Prepares a run: checks everything, connects what it needs, writes its record (file store), and
 * returns it ready to `start()`. Bad input throws an A2AError before anything is written. The
 * stages, in order: the request (what to run), the configuration (settings, tools, agents,
 * script), the store and bus, the models, the transport, the tools' world, the actors, traces,
 * what the run runs, its record, its logs; then its life, below (start, checkpoints, control,
 * finish), whose parts share the run's handles and stay together.
 */
export async function launchRun(request: RunRequest): Promise<LaunchedRun> {
  const notify = request.notify ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const warn = (message: string) => notify(`a2a: warning: ${message}`);
  const clock = request.clock ?? realClock;
  const io: RunIO = { notify, warn, clock };
  const asked = await requestStage(request, io);
  const { resuming, effective, runId } = asked;
  const p = prepare(asked.resolvedTarget, effective, runId);
  const stored = storeStage(asked, p, io);
  const { store, bus } = stored;
  const { resolveModel, profiles, costs, orchestratorModel, profileName, organiserModel } = modelStage(request, asked, p, stored, io);
  const connected = await transportOfRun(asked, p, bus, io);
  const { ns, transport, remote, pendingAcks } = connected;
  const { git, pullRequests, artifacts, commands, mcp, effectJournal, logFlush } = toolStage(asked, p, stored, connected, io);

  // Stage 7, the actors: the human channel (the CLI's prompt or notice, or the program's handler), the inbox's journal, and the runtime they run on
  let root: { send(event: unknown): void } | null = null;
  const answerItem = (id: string, answer: HumanAnswer) => root?.send({ type: 'HUMAN_ANSWER', id, answer });
  const humanChannel = request.humanChannel ? request.humanChannel(answerItem, runId) : request.human ? codeChannel(request.human, answerItem, warn) : undefined;
  const journal = store?.inboxJournal(runId);
  const runtime = createRuntime({
    ...(effectJournal ? { effects: { journal: (id: string) => (id === runId ? effectJournal : null), inDoubt: p.config.effects.inDoubt } } : {}),
    artifacts,
    external: mcp,
    registry: p.registry,
    clock,
    events: bus,
    model: resolveModel,
    orchestratorModel,
    ...(organiserModel ? { organiserModel } : {}),
    costs,
    profiles,
    catalog: p.catalog,
    ...(journal ? { journal } : {}),
    ...(humanChannel ? { humanChannel } : {}),
    git,
    commands: commands.runner,
    ...(pullRequests ? { pullRequests } : {}),
    ...(remote ? { remote } : {}),
  });

  // traces: the SDK is loaded only when asked for; the spans are built from the run's events
  const tracing = await traceStage(request, asked, bus, io);
  const cleanup = async () => {
    effectJournal?.close();
    await mcp.closeAll();
    await transport?.close();
    // after the log: the run's last spans are exported before `done` settles
    await tracing?.close();
  };
  try {
    const { orchestrated, planId, spec } = await inputStage(asked, p, runtime, { git, pullRequests, resolveModel, profileName });

    const plannedResume = recordStage(request, asked, p, store, runtime, planId, io);
    const { log, usage, view } = logStage(asked, stored, logFlush, io);
    let relay: { stop(): Promise<void>; remove(): Promise<void>; pending(): Promise<number> } | null = null;
    if (transport) {
      publishRunEvents(bus, transport, ns, `run-${runId}`);
      // hosts' events are acknowledged once the log holds them
      relay = await relayHostEvents(bus, transport, ns, runId, (ack) => (log ? log.whenWritten(() => void ack().catch(() => undefined)) : void ack().catch(() => undefined)));
    }
    if (request.onEvent) {
      const listener = request.onEvent;
      const deliver = (e: RunEvent) => {
        try {
          listener(e as TypedRunEvent);
        } catch (error) {
          // a listener's bug must not stop the run or the other listeners
          warn(`an event listener threw on ${e.type}: ${errorText(error)}`);
        }
      };
      // with a log, an event is handed on once it is written: a run killed and resumed then
      // hands on each event once, with sequence numbers that never go back
      if (log) log.onWritten(deliver);
      else bus.subscribe(deliver);
    }

    const announcePause = (paused: { by: string; at: number } | null, by: string) => {
      publishPause(transport!, ns, { runId, paused: paused !== null, by, at: paused?.at ?? Date.now() }).catch((error: unknown) =>
        bus.emit({ type: 'warning', planId, data: { message: `the hosts could not be told that the run is ${paused ? 'paused' : 'resumed'}: ${errorText(error)}` } }),
      );
    };
    const controlHooks = {
      // the pause is kept in the run's record: a run resumed after a kill comes back paused
      onPause: (paused: { by: string; at: number } | null, by: string) => {
        store?.update(runId, { paused });
        bus.emit({ type: paused ? 'run.paused' : 'run.unpaused', planId, data: { by } });
        // the run's agents on hosts too
        if (transport) announcePause(paused, by);
      },
    };

    let inspector: InspectorConnection | null = null;
    if (effective.inspect) {
      const url = typeof effective.inspect === 'string' ? effective.inspect : DEFAULT_INSPECTOR_URL;
      inspector = await (await import('../inspector.js')).connectInspector(url, { runId });
      if (inspector.connected) notify(`inspector: sending the run to ${url}`);
      else notify(`inspector: nothing answers at ${url} yet (start one with \`a2a inspect\`); the run goes on, and sends it the whole tree once it answers`);
    }
    const inspect = inspector ? { inspect: inspector.inspect } : {};

    let settle!: (outcome: RunOutcome) => void;
    let fail!: (error: unknown) => void;
    const done = new Promise<RunOutcome>((resolvePromise, reject) => {
      settle = resolvePromise;
      fail = reject;
    });
    let started = false;
    let stopRun: ((reason: string) => void) | null = null;
    let stopBefore: string | null = null;
    let orchestrator: { getSnapshot(): unknown; send(event: unknown): void } | null = null;
    let finished = false;

    /** Runs the run, closes what it opened, and only then settles `done`: whoever awaits it finds the log complete. */
    const finish = async (work: () => Promise<RunOutcome>) => {
      // The run may wait on nothing Node can see (a model call that never answers, sessions
      // waiting for each other, a person): the process is held open until the run ends.
      const keepAlive = setInterval(() => {}, 1 << 30);
      let ended: { outcome: RunOutcome } | { error: unknown };
      try {
        ended = { outcome: await work() };
      } catch (error) {
        ended = { error };
      }
      finished = true;
      // a run that ended takes its consumers off the server (one stopped by a failure keeps them
      // for its resume; the server removes them after an hour unread)
      const over = 'outcome' in ended;
      const closing: Array<() => Promise<unknown> | unknown> = [
        () => inspector?.close(),
        () => (over ? relay?.remove() : relay?.stop()),
        async () => {
          if (!transport) return;
          // what reached the run after its last checkpoint (late reports of sessions that ended):
          // acknowledged before its box goes, or it would stay queued with nobody to read it
          if (over) await Promise.all(pendingAcks.splice(0).map((ack) => ack().catch(() => undefined)));
          await mailboxOf(transport, ns, runBox(runId)).stop({ remove: over });
        },
        () => log?.close(),
        cleanup,
      ];
      for (const close of closing) {
        try {
          await close();
        } catch (error) {
          warn(`closing the run: ${errorText(error)}`);
        }
      }
      clearInterval(keepAlive);
      if ('outcome' in ended) settle(ended.outcome);
      else fail(ended.error);
    };

    const runOrchestrated = async (): Promise<RunOutcome> => {
      if (resuming?.checkpoint) {
        bus.emit({ type: 'run.resumed', planId, data: { planId, replayed: plannedResume!.replay.map((m) => m.id), recovered: plannedResume!.recovered, checkpointAt: resuming.checkpoint.savedAt } });
      } else if (resuming) {
        bus.emit({ type: 'run.resumed', planId, data: { planId, restarted: true, reason: 'it was stopped before its first checkpoint: started again from its plan' } });
      } else {
        bus.emit({ type: 'run.started', planId, data: { planId, tasks: orchestrated!.tasks.length, source: p.target.source, ...budgetsOf(p.config) } });
      }
      const handle = startRun(runtime, resuming?.checkpoint ? { checkpoint: resuming.checkpoint, replay: plannedResume!.replay } : orchestrated!, { clock, ...inspect });
      root = handle.actor;
      orchestrator = handle.actor;
      stopRun = handle.stop;
      if (stopBefore !== null) handle.stop(stopBefore);
      if (resuming) {
        // the run's record says whether it is paused; its checkpoint may be older than the last
        // pause or resume: the workflow is brought in line, and the hosts are told again
        const paused = resuming.record.paused ?? null;
        if (transport) announcePause(paused, paused?.by ?? 'resume');
        const workflow = (handle.actor.getSnapshot() as { children: Record<string, { getSnapshot(): { value: unknown } } | undefined> }).children.workflow;
        const value = workflow?.getSnapshot().value;
        if (paused && typeof value === 'object') handle.actor.send({ type: 'WORKFLOW_COMMAND', command: { type: 'PAUSE', by: paused.by } });
        if (!paused && value === 'PAUSED') handle.actor.send({ type: 'WORKFLOW_COMMAND', command: { type: 'RESUME', by: 'resume' } });
        if (paused) bus.emit({ type: 'run.paused', planId, data: { by: paused.by, restored: true } });
      }
      let checkpointer: Checkpointer | null = null;
      let control: ControlServer | null = null;
      try {
        if (store && journal) {
          checkpointer = new Checkpointer(handle.actor, store, runId, journal, {
            onError: (error) => notify(`a2a: checkpoint failed: ${error.message}`),
            beforeWrite: () => log?.flush(),
            afterWrite: () => {
              for (const ack of pendingAcks.splice(0)) void ack().catch(() => undefined);
            },
          });
          checkpointer.start();
          control = new ControlServer(store.controlDir(runId), (controlRequest) => handleControl(handle.actor, runtime, controlRequest, controlHooks));
          control.start();
        } else {
          // nothing to checkpoint into: what hosts hand over is acknowledged as it arrives
          const timer = setInterval(() => {
            for (const ack of pendingAcks.splice(0)) void ack().catch(() => undefined);
          }, 200);
          handle.done.finally(() => clearInterval(timer)).catch(() => undefined);
        }
        const summary = await handle.done;
        // hosts store their events before their results: wait until the log has every one of them
        if (relay && !(await drained(relay, log))) {
          bus.emit({ type: 'warning', planId, data: { message: `some events of the hosts had not arrived ${RELAY_DRAIN_MS} ms after the run ended; they stay in the host events queue` } });
        }
        checkpointer?.flush();
        // every session's model calls, sub-tasks included (the summary alone counts the workers')
        const summaryWithUsage: RunSummary = { ...summary, usage: { ...usage } };
        bus.emit({ type: 'run.finished', planId, data: { status: summary.status, summary: summaryWithUsage } });
        store?.update(runId, { status: summary.status, finishedAt: Date.now(), summary: summaryWithUsage });
        return { status: summary.status, exitCode: summary.status === 'completed' ? 0 : summary.status === 'cancelled' ? 130 : 1, summary: summaryWithUsage, usage: { ...usage } };
      } finally {
        checkpointer?.stop();
        control?.stop();
      }
    };

    const runStandalone = async (): Promise<RunOutcome> => {
      bus.emit({ type: 'run.started', planId, data: { planId, tasks: 1, source: p.target.source, standalone: true, ...budgetsOf(p.config) } });
      const handle = startStandalone(runtime, spec!, { clock, ...inspect });
      stopRun = handle.stop;
      if (stopBefore !== null) handle.stop(stopBefore);
      const result: SubTaskResult = await handle.done;
      const status = result.status === 'success' || result.status === 'partial' ? 'completed' : result.status === 'cancelled' ? 'cancelled' : 'failed';
      bus.emit({ type: 'run.finished', planId, data: { status, result } });
      store?.update(runId, { status, finishedAt: Date.now(), summary: result });
      return { status, exitCode: status === 'completed' ? 0 : status === 'cancelled' ? 130 : 1, result, usage: { ...usage } };
    };

    const start = () => {
      if (started) return;
      started = true;
      // in the run's log and display too, not only on stderr (here, so that every listener hears it)
      if (commands.warning) bus.emit({ type: 'warning', planId, data: { message: commands.warning, sandbox: 'none' } });
      void finish(orchestrated ? runOrchestrated : runStandalone);
    };
    return {
      runId,
      planId,
      workspace: p.workspace,
      standalone: !orchestrated,
      view,
      usage,
      done,
      start,
      subscribe: (listener) =>
        bus.subscribe((e) => {
          try {
            listener(e);
          } catch (error) {
            // a listener's bug must not fail the session that emitted the event
            warn(`an event listener threw on ${e.type}: ${errorText(error)}`);
          }
        }),
      pending: () => (orchestrator ? pendingHumanItems(orchestrator as never) : []),
      control(controlRequest) {
        const parsed = ControlRequestSchema.safeParse(controlRequest);
        if (!parsed.success) return { ok: false, error: `invalid request:\n${describeIssues(parsed.error.issues)}` };
        if (!orchestrator) return { ok: false, error: orchestrated ? 'the run has not started yet' : 'a standalone session has no orchestrator to manage: stop it, or run it as a plan' };
        if (finished) return { ok: false, error: 'the run has already ended' };
        return handleControl(orchestrator as never, runtime, parsed.data, controlHooks);
      },
      stop(reason) {
        if (stopRun) stopRun(reason);
        else stopBefore = reason;
        if (!started) start();
      },
      abandon() {
        log?.close();
        store?.update(runId, { status: 'cancelled', finishedAt: Date.now() });
      },
    };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** How long a finished run waits for the events its hosts stored before their last results. */
const RELAY_DRAIN_MS = 10_000;

/** Resolves true once the relay has nothing pending and the log holds all it brought. */
async function drained(relay: { pending(): Promise<number> }, log: { flush(): void } | null): Promise<boolean> {
  const deadline = Date.now() + RELAY_DRAIN_MS;
  while (Date.now() < deadline) {
    log?.flush(); // acknowledges what the relay handed over
    const pending = await relay.pending().catch(() => 1);
    if (pending === 0) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}
