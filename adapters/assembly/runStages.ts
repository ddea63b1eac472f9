/**
 * The stages a run is assembled in (launchRun in run.ts composes them, in this order): the
 * request (what to run, under which id; a resume takes what the run was started with), the
 * configuration (settings in layers, tools, agents, the script), the store and the event bus,
 * the models, the transport, the tools' world (git, artifacts, the sandbox, MCP servers, the
 * effect journal), traces, what the run runs (the git plan, the orchestrator's input), its record
 * and its logs. Each is a function with a typed result; the stages a host shares are in stages.ts.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import type { Clock, PullRequests } from '../../machines/ports.js';
import { RunId as RunIdSchema, type Plan, type SessionSpec } from '../../machines/protocol/index.js';
import { secrets } from '../../actors/config/secrets.js';
import { A2AError } from '../../actors/errors.js';
import { checkWorkflow, layerSource } from '../../actors/organiser/workflowRoles.js';
import type { AgentRegistry } from '../../actors/config/registry.js';
import type { ConfigLayer, RunConfig } from '../../actors/config/config.js';
import { RunEventBus } from '../../actors/observation/events.js';
import { orchestratorInput, parsePlan, standaloneSpec } from '../../actors/run.js';
import { workflowRunInput } from '../../actors/run.js';
import { isAudited } from '../../actors/durability/audit.js';
import { RunView } from '../../actors/observation/runView.js';
import { createRuntime } from '../../actors/runtime.js';
import { mailboxOf } from '../../actors/distribution/mailbox.js';
import { claimRunBox } from '../../actors/distribution/runBoxes.js';
import { artifactEvent, artifactStores } from '../../actors/organiser/artifacts.js';
import { CODE_SETTINGS, loadScript } from '../config.js';
import type { Script } from '../model/scripted.js';
import { alive, planResume, type ResumePlan } from '../runHost.js';
import { createGit, planGit, seedRepository } from '../git.js';
import { indexRun } from '../store/runIndex.js';
import { createPullRequest } from '../github.js';
import { ensureQueues } from '../../actors/distribution/remote.js';
import { snapshotHolders } from '../host.js';
import { FileRunStore } from '../store/file.js';
import { FileEffectJournal } from '../store/effects.js';
import { FileArtifactBackend } from '../store/artifactFiles.js';
import { MemoryArtifactBackend } from '../store/artifactMemory.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../store/artifactKv.js';
import { targetOf, templateDir, type Target } from './target.js';
import { modelsFor } from './models.js';
import { configuration, externalTools, transportStage } from './stages.js';
import { environmentTrace, exportSettings, tracingFor } from './tracing.js';
import { contextOfHeaders, otelApi } from '../../actors/observation/tracing.js';
import type { RunOptions, RunRequest, RunUsage } from './run.js';

/** The run's budgets for its `run.started` event (none when no budget is set). */
export function budgetsOf(config: RunConfig): { budgets?: { runUsd?: number; workerUsd?: number } } {
  const b = config.models.budgets;
  return b && Object.keys(b).length > 0 ? { budgets: b } : {};
}

export function newRunId(): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  return `r-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}-${randomBytes(4).toString('hex')}`;
}

/** The configuration layer made of the run's options (the command line's flags). */
export function flagLayer(o: Omit<RunOptions, 'model'>): ConfigLayer {
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
export function prepare(target: Target, request: RunRequest, runId: string) {
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
export function workflowRoles(config: RunConfig, registry: AgentRegistry, layers: Array<{ source: string; data: ConfigLayer }>): Record<string, { agent: string; profile?: string }> {
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
export function resumable(store: FileRunStore, runId: string, request: RunRequest) {
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
export const KEPT_OPTIONS: ReadonlyArray<keyof RunOptions> = [
  'agent', 'config', 'script', 'workspace', 'standalone', 'maxDepth', 'maxParallel', 'maxSubtasks', 'spawnRate', 'maxWorkers', 'maxTurns', 'subtaskTimeout',
  'idleThreshold', 'inquiryDelay', 'inquiryTimeout', 'questions', 'onComplete', 'worktrees', 'model', 'nats', 'namespace', 'workflow',
];

/** Whether the request holds what only a program has, and a resume from the command line would lack. */
export function codeOnly(request: RunRequest): boolean {
  return !!(request.agents?.length || request.tools?.length || typeof request.model === 'object' || request.scriptData || request.settings || request.human);
}

export function invocationOptions(options: RunRequest): Record<string, unknown> {
  const kept = options as Record<string, unknown>;
  return Object.fromEntries(KEPT_OPTIONS.filter((k) => kept[k] !== undefined && (k !== 'model' || typeof kept[k] === 'string')).map((k) => [k, kept[k]]));
}

/** Where a run's lines go, and its clock. */
export interface RunIO {
  notify: (line: string) => void;
  warn: (message: string) => void;
  clock: Clock;
}

/**
 * Stage 1, the request: what to run and under which id. A resume takes what the run was started
 * with from its record; a workflow that names a template workspace gets a fresh git copy of it.
 * Bad tracing settings are refused here, before anything is connected or written.
 */
export async function requestStage(request: RunRequest, io: RunIO) {
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
export type Requested = Awaited<ReturnType<typeof requestStage>>;
export type Prepared = ReturnType<typeof prepare>;

/** Stage 3, the store and the event bus: a resumed run continues its log (read once: the same sequence, and what the log holds is not emitted again). */
export function storeStage(asked: Requested, p: Prepared, io: RunIO) {
  const store = asked.memory ? null : new FileRunStore(p.workspace);
  const resumeAt = asked.resuming ? asked.store0.resumePoint(asked.runId, (problem) => io.warn(problem)) : undefined;
  const bus = new RunEventBus(asked.runId, io.clock, resumeAt?.start);
  return { store, resumeAt, bus };
}
export type Stored = ReturnType<typeof storeStage>;

/** Stage 4, the models: clients by profile (the scripted model unless profiles say otherwise), priced per call; a resumed run's spending counts against its budgets. */
export function modelStage(request: RunRequest, asked: Requested, p: Prepared, stored: Stored, io: RunIO) {
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
export async function transportOfRun(asked: Requested, p: Prepared, bus: RunEventBus, io: RunIO) {
  const { effective, runId } = asked;
  const ns = effective.namespace ?? 'default';
  const transport = effective.nats ? await transportStage(effective.nats, ns, `a2a-run-${runId}`, io.notify) : null;
  const pendingAcks: Array<() => Promise<void>> = [];
  if (!transport) return { ns, transport, remote: null, pendingAcks, box: null };
  await ensureQueues(transport, ns);
  // the run's box: a slot reused from run to run (its consumers are not made again), the one it
  // held when this is a resume
  const box = await claimRunBox(transport, runId, (message) => io.warn(message));
  const remote = {
    deps: { transport, ns, process: `run-${runId}`, box: box.box, runBox: box.box, clock: io.clock, events: bus, deferAck: (_owner: string, ack: () => Promise<void>) => void pendingAcks.push(ack), holderOf: await snapshotHolders(transport, ns) },
    placeRemotely: () => true,
  };
  const mailbox = mailboxOf(transport, ns, box.box);
  mailbox.occupant = runId;
  // a report for no stand-in of this run (one that ended long ago, or never was): said, then dropped
  mailbox.onDrop = (parcel, why) => bus.emit({ type: 'warning', data: { message: `dropped a report on ${parcel.message.subject}: ${why}` } });
  const budgets = p.config.models.budgets;
  if (budgets && (budgets.runUsd !== undefined || budgets.workerUsd !== undefined)) {
    // said, not silently ignored: spending is counted where the model calls are made
    io.warn('budgets (models.budgets) are enforced per process: with --nats the sessions on hosts spend against the budgets of each host\'s own config (the run\'s summary still adds up every call the hosts report)');
  }
  return { ns, transport, remote, pendingAcks, box };
}
export type Connected = Awaited<ReturnType<typeof transportOfRun>>;

/**
 * Stage 6, the tools' world: git and pull requests, the artifact store (the run's files, memory,
 * or with --nats the KV bucket the hosts share), the sandbox's command runner, the agents' MCP
 * servers, and the effect journal (file store: model replies and tool results on record before
 * the session acts on them; the event log is written first, through `logFlush`, so that what a
 * step told is there before the record that says it is over).
 */
export function toolStage(asked: Requested, p: Prepared, stored: Stored, connected: Connected, io: RunIO) {
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
export async function traceStage(request: RunRequest, asked: Requested, bus: RunEventBus, io: RunIO) {
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
export async function inputStage(asked: Requested, p: Prepared, runtime: ReturnType<typeof createRuntime>, tools: { git: ReturnType<typeof createGit>; pullRequests: PullRequests | undefined; resolveModel: (spec: SessionSpec) => unknown; profileName: string | undefined }) {
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
export function recordStage(request: RunRequest, asked: Requested, p: Prepared, store: FileRunStore | null, runtime: ReturnType<typeof createRuntime>, planId: string, io: RunIO): ResumePlan | null {
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
export function logStage(asked: Requested, stored: Stored, logFlush: { now: () => void }, io: RunIO) {
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
