/**
 * `a2a run <plan.json | plan dir | "task">`: runs a plan (or one task) on the embedded default:
 * in-process actors, the file store under .a2a/, the scripted model.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { secrets } from '../../actors/secrets.js';
import { RunId as RunIdSchema, WorkflowRequest, type Plan, type RunEvent, type SubTaskResult } from '../../machines/protocol.js';
import { A2AError, describeIssues, nearest } from '../../actors/errors.js';
import { checkWorkflow, layerSource } from '../../actors/workflowRoles.js';
import type { AgentRegistry } from '../../actors/registry.js';
import type { RunConfig } from '../../actors/config.js';
import { busStartOf, RunEventBus } from '../../actors/events.js';
import { orchestratorInput, parsePlan, standaloneSpec, startRun, startStandalone, workflowRunInput } from '../../actors/run.js';
import { isAudited } from '../../actors/audit.js';
import { Checkpointer, ControlServer, handleControl, planResume, type ResumePlan } from '../../adapters/runHost.js';
import { PrintedNotice, TerminalPrompt } from '../../adapters/humanPrompt.js';
import { createGit, planGit, seedRepository } from '../../adapters/git.js';
import { indexRun } from '../../adapters/store/runIndex.js';
import { createPullRequest } from '../../adapters/github.js';
import type { PullRequests } from '../../machines/ports.js';
import { createRuntime } from '../../actors/runtime.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import type { ConfigLayer } from '../../actors/config.js';
import { realClock } from '../../adapters/clock.js';
import { loadConfig, loadRegistry, loadScript, readStructured } from '../../adapters/config.js';
import type { Script } from '../../adapters/model/scripted.js';
import { modelsFor } from '../models.js';
import { commandRunnerFor } from '../sandbox.js';
import { connectNats } from '../../adapters/transport/nats.js';
import { publishRunEvents, relayHostEvents } from '../../adapters/transport/events.js';
import { publishPause } from '../../adapters/transport/pause.js';
import { ensureQueues } from '../../actors/remote.js';
import { natsCredentials, warnIfUnauthenticated } from './host.js';
import { snapshotHolders } from '../../adapters/host.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { artifactEvent, artifactStores } from '../../actors/artifacts.js';
import { FileArtifactBackend } from '../../adapters/store/artifactFiles.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../../adapters/store/artifactKv.js';
import { canRedraw, liveDisplay, logDisplay, palette, renderSummary, usageLine, type RunDisplay } from '../../adapters/terminal.js';
import { connectInspector, type InspectorConnection } from '../../adapters/inspector.js';
import { errorText } from '../../machines/errorText.js';

export const DEFAULT_INSPECTOR_URL = 'ws://127.0.0.1:8080';

export interface RunOptions {
  agent?: string;
  /** Send inspection events to this WebSocket (true: the default `a2a inspect` address). */
  inspect?: string | boolean;
  json?: boolean;
  config?: string;
  script?: string;
  workspace?: string;
  standalone?: boolean;
  runId?: string;
  tree?: boolean;
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
  /** Continue a run that was killed, from its checkpoint and inbox journal. */
  resume?: string;
  /** A model profile (or model name) for workers whose task names none. */
  model?: string;
  /** Deploy workers to hosts over NATS (`a2a host`) instead of running them in this process. */
  nats?: string;
  namespace?: string;
  /** Run a workflow instead of a plan: `sdlc` (the target is the goal, in quotes). */
  workflow?: string;
}

export interface RunIo {
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
  /** Hooks for Ctrl-C; the default installs process signal handlers. */
  onInterrupt?: (handler: () => void) => () => void;
}

function newRunId(): string {
  const d = new Date();
  const pad = (n: number) => String(n).padStart(2, '0');
  return `r-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}-${randomBytes(4).toString('hex')}`;
}

/** The configuration layer made of command-line flags. */
function flagLayer(o: RunOptions): ConfigLayer {
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

interface Target {
  kind: 'plan' | 'task' | 'workflow';
  plan?: Plan;
  /** A workflow run: what to build, and the workflow file's script and config if any. */
  workflow?: WorkflowRequest;
  source: string;
  baseDir: string;
  task?: string;
}

const WORKFLOWS = ['sdlc'];

function parseWorkflow(data: unknown, source: string): WorkflowRequest {
  const parsed = WorkflowRequest.safeParse(data);
  if (!parsed.success) {
    throw new A2AError('VALIDATION_ERROR', `${source}: invalid workflow:\n${describeIssues(parsed.error.issues)}\nA workflow file is {"workflow": "sdlc", "goal": "...", "script"?: "script.json", "config"?: {...}}.`, { where: source });
  }
  return parsed.data;
}

/**
 * The existing path nearest to `target`, segment by segment (`exmaples/oauht` → `examples/oauth`),
 * or null when a segment has no near match or nothing changes.
 */
function nearestPath(target: string): string | null {
  const absolute = isAbsolute(target);
  const segments = target.split('/').filter((part, i) => part !== '' || (i === 0 && absolute));
  let at = absolute ? '/' : process.cwd();
  const fixed: string[] = [];
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') {
      fixed.push(segment);
      at = resolve(at, segment || '/');
      continue;
    }
    const exact = join(at, segment);
    if (existsSync(exact)) {
      fixed.push(segment);
      at = exact;
      continue;
    }
    let entries: string[];
    try {
      entries = readdirSync(at);
    } catch {
      return null;
    }
    const near = nearest(segment, entries);
    if (!near) return null;
    fixed.push(near);
    at = join(at, near);
  }
  const suggestion = fixed.join('/') || '/';
  return suggestion === target ? null : suggestion;
}

function resolveTarget(target: string, workspace: string, workflow: string | undefined): Target {
  if (workflow !== undefined && !WORKFLOWS.includes(workflow)) {
    throw new A2AError('VALIDATION_ERROR', `--workflow ${workflow}: unknown workflow; known: ${WORKFLOWS.join(', ')}`, { where: '--workflow' });
  }
  const path = isAbsolute(target) ? target : resolve(process.cwd(), target);
  if (existsSync(path)) {
    const dir = statSync(path).isDirectory();
    const file = dir ? [join(path, 'plan.json'), join(path, 'workflow.json')].find((f) => existsSync(f)) : path;
    if (!file) throw new A2AError('VALIDATION_ERROR', `${path} is a directory without a plan.json or a workflow.json`);
    const data = readStructured(file);
    if (workflow !== undefined || (typeof data === 'object' && data !== null && 'workflow' in data)) {
      return { kind: 'workflow', workflow: parseWorkflow(data, file), source: file, baseDir: dirname(file) };
    }
    return { kind: 'plan', plan: parsePlan(data, file), source: file, baseDir: dirname(file) };
  }
  // a word that looks like a path (or nearly names something here) is a typo, not a task
  const suggestion = nearestPath(target);
  if (!/\s/.test(target) && (target.includes('/') || /\.[A-Za-z0-9]{1,5}$/.test(target) || suggestion !== null)) {
    throw new A2AError(
      'VALIDATION_ERROR',
      `${target}: no such file or directory${suggestion ? ` (did you mean ${suggestion}?)` : ''}. Pass a plan file, a directory with plan.json or workflow.json, or a task in quotes ("fix the login form").`,
      { where: target },
    );
  }
  if (workflow !== undefined) return { kind: 'workflow', workflow: parseWorkflow({ workflow, goal: target }, 'the goal'), source: 'command line', baseDir: workspace };
  return { kind: 'task', task: target, source: 'command line', baseDir: workspace };
}

/** Everything a run needs, built from the target and options (the same way again on resume). */
function prepare(target: Target, options: RunOptions, runId: string) {
  const workspace = resolve(options.workspace ?? process.cwd());
  const extra: Array<{ source: string; data: ConfigLayer; base?: string }> = [];
  const targetConfig = target.plan?.config ?? target.workflow?.config;
  if (targetConfig) extra.push({ source: `${target.source} (config)`, data: targetConfig, base: target.baseDir });
  extra.push({ source: 'command-line flags', data: flagLayer(options) });
  const loaded = loadConfig({ workspace, ...(options.config ? { explicitFile: options.config } : {}), extra });
  const { config, policy } = loaded;
  const catalog = new ToolCatalog();
  const registry = loadRegistry({ workspace, knownTools: catalog.names(), userAgents: config.agents, userAgentsSource: 'config "agents"' });
  const scriptFile = options.script
    ? resolve(options.script)
    : (target.plan?.script ?? target.workflow?.script)
      ? resolve(target.baseDir, (target.plan?.script ?? target.workflow?.script)!)
      : config.model.script
        ? resolve(loaded.scriptBase ?? workspace, config.model.script)
        : null;
  const script: Script = scriptFile ? loadScript(scriptFile) : { rules: [] };
  // a workflow's roles: every agent in the registry, every profile configured
  const roles = target.workflow ? workflowRoles(config, registry, loaded.layers) : null;
  return { workspace, target, config, policy, catalog, registry, script, runId, roles };
}

/** A workflow file's template workspace: a directory beside or below the file, nothing else. */
function templateDir(baseDir: string, given: string, source: string): string {
  const dir = resolve(baseDir, given);
  const inside = relative(baseDir, dir);
  if (isAbsolute(given) || inside === '' || inside.startsWith('..') || isAbsolute(inside)) {
    throw new A2AError('VALIDATION_ERROR', `${source}: workspace: "${given}" must name a directory inside ${baseDir} (relative, no ".."): the run works on a copy of it`, { where: 'workspace' });
  }
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new A2AError('VALIDATION_ERROR', `${source}: workspace: ${dir} is not a directory`, { where: 'workspace' });
  // a symlink may not lead out either
  const real = realpathSync(dir);
  const realInside = relative(realpathSync(baseDir), real);
  if (realInside === '' || realInside.startsWith('..') || isAbsolute(realInside)) {
    throw new A2AError('VALIDATION_ERROR', `${source}: workspace: "${given}" leads to ${real}, outside ${baseDir}`, { where: 'workspace' });
  }
  return real;
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
function resumable(store: FileRunStore, runId: string) {
  const record = store.read(runId);
  if (record.status === 'completed' || record.status === 'failed' || record.status === 'cancelled') {
    throw new A2AError('INVALID_STATE_TRANSITION', `run ${runId} already finished (${record.status}); nothing to resume`);
  }
  if (record.status === 'running' && record.pid !== process.pid && alive(record.pid)) {
    throw new A2AError('INVALID_STATE_TRANSITION', `run ${runId} is still running (pid ${record.pid}); stop it first with: a2a stop ${runId}`);
  }
  if (!record.invocation) throw new A2AError('VALIDATION_ERROR', `run ${runId} was not recorded with what started it; it cannot be resumed`);
  if (record.planId === 'standalone') throw new A2AError('VALIDATION_ERROR', `run ${runId} is a standalone session: only orchestrated runs can be resumed`);
  // killed before its first checkpoint: it starts again from its plan, under the same id (its log
  // continues, and what it had logged is not logged twice)
  const checkpoint = store.readCheckpoint(runId);
  return { record, checkpoint };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** What is kept of the options for a resume (the run id and display flags are not). */
function invocationOptions(options: RunOptions): Record<string, unknown> {
  const { runId: _r, json: _j, tree: _t, inspect: _i, resume: _s, ...rest } = options;
  return Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== undefined));
}

export async function runCommand(targetArg: string | undefined, options: RunOptions, io: RunIo): Promise<number> {
  const store0 = new FileRunStore(resolve(options.workspace ?? process.cwd()));
  let resuming: ReturnType<typeof resumable> | null = null;
  let target = targetArg;
  let effective = options;
  if (options.resume) {
    if (targetArg) throw new A2AError('VALIDATION_ERROR', `give either a target or --resume <runId>, not both (got "${targetArg}" and --resume ${options.resume})`);
    resuming = resumable(store0, options.resume);
    const inv = resuming.record.invocation!;
    target = inv.target;
    effective = { ...(inv.options as RunOptions), workspace: inv.workspace, ...(options.json ? { json: true } : {}), ...(options.tree === false ? { tree: false } : {}), ...(options.inspect ? { inspect: options.inspect } : {}) };
  }
  if (!target) throw new A2AError('VALIDATION_ERROR', 'nothing to run: give a plan file, a directory with plan.json, a task in quotes, or --resume <runId>');

  const runId = resuming?.record.runId ?? options.runId ?? newRunId();
  const validRunId = RunIdSchema.safeParse(runId);
  if (!validRunId.success) throw new A2AError('VALIDATION_ERROR', `run id "${runId}" is not allowed: ${validRunId.error.issues[0]?.message ?? 'invalid'}`);
  const resolvedTarget = resolveTarget(target, resolve(effective.workspace ?? process.cwd()), effective.workflow);
  // a workflow file that names a template workspace runs on a fresh git copy of it (unless --workspace)
  if (!effective.workspace) {
    const declared = resolvedTarget;
    if (declared.workflow?.workspace) {
      const template = templateDir(declared.baseDir, declared.workflow.workspace, declared.source);
      const seeded = await seedRepository(template, `a2a-${declared.workflow.id}-`);
      // a2a pause|resume|status|stop|artifacts find it from anywhere, without --workspace
      indexRun(runId, seeded);
      io.stderr.write(`workspace: ${seeded} (a fresh git repository holding a copy of ${template}; a2a status|pause|resume|artifacts ${runId} find it from anywhere)\n`);
      effective = { ...effective, workspace: seeded };
    }
  }
  const p = prepare(resolvedTarget, effective, runId);
  const store = new FileRunStore(p.workspace);
  // a resumed run continues its log (read once): the same sequence, and what the log holds is
  // not emitted again
  const logged = resuming ? store0.events(runId) : [];
  const bus = new RunEventBus(runId, realClock, resuming ? busStartOf(logged) : undefined);
  // model clients by profile (the scripted model unless profiles say otherwise), priced per call
  const { resolveModel, profiles, ledger, costs, orchestratorModel, organiser } = modelsFor(p.config, p.registry, p.script, realClock, p.workspace);
  // a workflow run's organiser: --model too, unless it has a profile of its own
  const organiserModel = p.target.workflow ? organiser(effective.model) : undefined;
  if (resuming) {
    // the spending before the kill counts against the budgets (as far as the event log has it)
    for (const e of logged) {
      if (e.type === 'model.called' && e.subTaskId && e.workerId) {
        ledger.restore({
          sessionId: e.subTaskId,
          workerId: `${runId}.${e.workerId}`,
          usd: Number(e.data.costUsd ?? 0),
          usage: { inputTokens: Number(e.data.inputTokens ?? 0), outputTokens: Number(e.data.outputTokens ?? 0) },
        });
      }
    }
  }

  // the human channel: a prompt on a terminal, else a notice saying how to answer with `a2a inbox`
  let root: { send(event: unknown): void } | null = null;
  const interactive = io.stdin?.isTTY === true && io.stdout.isTTY === true && !effective.json;
  let display: RunDisplay | null = null;
  const prompt = interactive
    ? new TerminalPrompt(
        { input: io.stdin!, output: io.stdout, pause: () => display?.pause?.(), resume: () => display?.resume?.() },
        (id, answer) => root?.send({ type: 'HUMAN_ANSWER', id, answer }),
      )
    : null;
  const humanChannel = prompt ?? new PrintedNotice(effective.json ? io.stderr : io.stdout, runId);
  const journal = store.inboxJournal(runId);
  // over NATS the workers run on hosts; what reaches this process is acknowledged after its next checkpoint
  const ns = effective.namespace ?? 'default';
  const transport = effective.nats ? await connectNats({ servers: effective.nats, namespace: ns, name: `a2a-run-${runId}`, ...natsCredentials() }) : null;
  const pendingAcks: Array<() => Promise<void>> = [];
  const remote = transport
    ? {
        deps: { transport, ns, process: `run-${runId}`, clock: realClock, events: bus, deferAck: (_owner: string, ack: () => Promise<void>) => void pendingAcks.push(ack), holderOf: await snapshotHolders(transport, ns) },
        placeRemotely: () => true,
      }
    : null;
  if (transport) warnIfUnauthenticated(transport, effective.nats!, io.stderr);
  if (transport) await ensureQueues(transport, ns);
  const budgets = p.config.models.budgets;
  if (transport && budgets && (budgets.runUsd !== undefined || budgets.workerUsd !== undefined)) {
    // said, not silently ignored: spending is counted where the model calls are made
    io.stderr.write(
      `a2a: warning: budgets (models.budgets) are enforced per process: with --nats the sessions on hosts spend against the budgets of each host's own config (the run's summary still adds up every call the hosts report)\n`,
    );
  }
  const commands = commandRunnerFor(p.config.sandbox);
  if (commands.warning) io.stderr.write(`a2a: warning: ${commands.warning}\n`);
  const git = createGit();
  const github = p.config.git.github;
  const token = github ? process.env[github.tokenEnv] : undefined;
  if (github) secrets.add(github.tokenEnv, token);
  const pullRequests: PullRequests | undefined =
    github && token ? { open: (o) => createPullRequest({ ...o, token, ...(github.apiUrl ? { apiUrl: github.apiUrl } : {}) }) } : undefined;
  // the artifact store (seed 003): the run's files, or with --nats the KV bucket the hosts share
  const artifacts = artifactStores(transport ? new KvArtifactBackend(() => transport.keyValue(ARTIFACT_BUCKET)) : new FileArtifactBackend(store.root), realClock, {
    onChange: (meta, change) => bus.emit(artifactEvent(meta, change)),
  });
  const runtime = createRuntime({
    artifacts,
    registry: p.registry,
    clock: realClock,
    events: bus,
    model: resolveModel,
    orchestratorModel,
    ...(organiserModel ? { organiserModel } : {}),
    costs,
    profiles,
    catalog: p.catalog,
    journal,
    humanChannel,
    git,
    commands: commands.runner,
    ...(pullRequests ? { pullRequests } : {}),
    ...(remote ? { remote } : {}),
  });

  // validate before anything is written
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
  const runOptions = { runId, config: p.config, policy: p.policy, workspace: p.workspace, git: gitPlan, ...(effective.model ? { model: effective.model } : {}) };
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

  let plannedResume: ResumePlan | null = null;
  if (resuming) {
    const skipped: string[] = [];
    const journal = store.readJournal(runId, (problem) => skipped.push(problem));
    for (const problem of skipped) io.stderr.write(`a2a: warning: ${problem}\n`);
    if (resuming.checkpoint) {
      plannedResume = planResume(resuming.checkpoint, journal);
      store.appendRecovered(runId, plannedResume.recovered, Date.now());
    }
    store.clearControl(runId);
    store.update(runId, { pid: process.pid, status: 'running', resumes: [...(resuming.record.resumes ?? []), { at: Date.now(), pid: process.pid }] });
    // paused when it was killed: paused again, until a2a resume
    if (resuming.record.paused) runtime.pauses.gate(runId).close(resuming.record.paused.by, resuming.record.paused.at);
  } else {
    store.create({
      runId,
      pid: process.pid,
      status: 'running',
      startedAt: Date.now(),
      planId,
      source: p.target.source,
      invocation: { target, options: invocationOptions(effective), workspace: p.workspace },
    });
  }
  const log = store.runLog(runId, { audited: isAudited });
  const usage = { modelCalls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  bus.subscribe((e) => {
    log.append(e);
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
  let relay: { stop(): Promise<void>; pending(): Promise<number> } | null = null;
  if (transport) {
    publishRunEvents(bus, transport, ns, `run-${runId}`);
    // hosts' events are acknowledged once the log holds them
    relay = await relayHostEvents(bus, transport, ns, runId, (ack) => log.whenWritten(() => void ack().catch(() => undefined)));
  }
  const colour = io.stdout.isTTY === true && !process.env.NO_COLOR;
  if (effective.json) {
    bus.subscribe((e: RunEvent) => io.stdout.write(`${JSON.stringify(e)}\n`));
  } else {
    // a terminal that cannot redraw (TERM=dumb, narrower than 60 columns) gets plain lines
    display = canRedraw(io.stdout) && effective.tree !== false ? liveDisplay(io.stdout, { colour }) : logDisplay(io.stdout, { colour });
    const d = display;
    bus.subscribe((e) => d.onEvent(e));
  }

  // in the run's log and display too, not only on stderr
  if (commands.warning) bus.emit({ type: 'warning', planId, data: { message: commands.warning, sandbox: 'none' } });

  const announcePause = (paused: { by: string; at: number } | null, by: string) => {
    publishPause(transport!, ns, { runId, paused: paused !== null, by, at: paused?.at ?? Date.now() }).catch((error: unknown) =>
      bus.emit({ type: 'warning', planId, data: { message: `the hosts could not be told that the run is ${paused ? 'paused' : 'resumed'}: ${errorText(error)}` } }),
    );
  };

  const interrupt = io.onInterrupt ?? defaultInterrupt;
  let stopping = false;
  let stop: (reason: string) => void = () => {};
  const release = interrupt(() => {
    if (stopping) {
      io.stderr.write('\nforced exit\n');
      log.close();
      store.update(runId, { status: 'cancelled', finishedAt: Date.now() });
      process.exit(130);
    }
    stopping = true;
    io.stderr.write('\nstopping: cancelling every worker and sub-task (Ctrl-C again to force)\n');
    stop('stopped by the user');
  });

  let inspector: InspectorConnection | null = null;
  if (effective.inspect) {
    const url = typeof effective.inspect === 'string' ? effective.inspect : DEFAULT_INSPECTOR_URL;
    inspector = await connectInspector(url, { runId });
    if (inspector.connected) io.stderr.write(`inspector: sending the run to ${url}\n`);
    else io.stderr.write(`inspector: nothing answers at ${url} yet (start one with \`a2a inspect\`); the run goes on, and sends it the whole tree once it answers\n`);
  }
  const inspect = inspector ? { inspect: inspector.inspect } : {};

  // The run may wait on nothing Node can see (a model call that never answers, sessions waiting
  // for each other, a person): hold the process open until the run ends.
  const keepAlive = setInterval(() => {}, 1 << 30);
  let checkpointer: Checkpointer | null = null;
  let control: ControlServer | null = null;
  try {
    if (orchestrated) {
      if (resuming?.checkpoint) {
        bus.emit({ type: 'run.resumed', planId, data: { planId, replayed: plannedResume!.replay.map((m) => m.id), recovered: plannedResume!.recovered, checkpointAt: resuming.checkpoint.savedAt } });
      } else if (resuming) {
        bus.emit({ type: 'run.resumed', planId, data: { planId, restarted: true, reason: 'it was stopped before its first checkpoint: started again from its plan' } });
      } else {
        bus.emit({ type: 'run.started', planId, data: { planId, tasks: orchestrated.tasks.length, source: p.target.source } });
      }
      const handle = startRun(runtime, resuming?.checkpoint ? { checkpoint: resuming.checkpoint, replay: plannedResume!.replay } : orchestrated, { clock: realClock, ...inspect });
      root = handle.actor;
      stop = handle.stop;
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
      checkpointer = new Checkpointer(handle.actor, store, runId, journal, {
        onError: (error) => io.stderr.write(`a2a: checkpoint failed: ${error.message}\n`),
        beforeWrite: () => log.flush(),
        afterWrite: () => {
          for (const ack of pendingAcks.splice(0)) void ack().catch(() => undefined);
        },
      });
      checkpointer.start();
      control = new ControlServer(store.controlDir(runId), (request) =>
        handleControl(handle.actor, runtime, request, {
          // the pause is kept in the run's record: a run resumed after a kill comes back paused
          onPause: (paused, by) => {
            store.update(runId, { paused });
            bus.emit({ type: paused ? 'run.paused' : 'run.unpaused', planId, data: { by } });
            // the run's agents on hosts too
            if (transport) announcePause(paused, by);
          },
        }),
      );
      control.start();
      const summary = await handle.done;
      // hosts store their events before their results: wait until the log has every one of them
      if (relay && !(await drained(relay, log))) {
        bus.emit({ type: 'warning', planId, data: { message: `some events of the hosts had not arrived ${RELAY_DRAIN_MS} ms after the run ended; they stay in the host events queue` } });
      }
      checkpointer.flush();
      // every session's model calls, sub-tasks included (the summary alone counts the workers')
      const summaryWithUsage: RunSummary = { ...summary, usage };
      bus.emit({ type: 'run.finished', planId, data: { status: summary.status, summary: summaryWithUsage } });
      display?.finish();
      if (!effective.json) io.stdout.write(renderSummary(summaryWithUsage, palette(colour)));
      store.update(runId, { status: summary.status, finishedAt: Date.now(), summary: summaryWithUsage });
      return summary.status === 'completed' ? 0 : summary.status === 'cancelled' ? 130 : 1;
    }
    const spec = standaloneSpec(p.target.task!, runtime, { ...runOptions, agent: effective.agent ?? p.config.defaultAgent });
    bus.emit({ type: 'run.started', planId, data: { planId, tasks: 1, source: p.target.source, standalone: true } });
    const handle = startStandalone(runtime, spec, { clock: realClock, ...inspect });
    stop = handle.stop;
    const result: SubTaskResult = await handle.done;
    const status = result.status === 'success' || result.status === 'partial' ? 'completed' : result.status === 'cancelled' ? 'cancelled' : 'failed';
    bus.emit({ type: 'run.finished', planId, data: { status, result } });
    display?.finish();
    if (!effective.json) io.stdout.write(`\n${result.status}: ${result.output}${result.error ? `\nerror: ${result.error}` : ''}\n${palette(colour).dim(`\n${usageLine(usage)}`)}\n`);
    store.update(runId, { status, finishedAt: Date.now(), summary: result });
    return status === 'completed' ? 0 : status === 'cancelled' ? 130 : 1;
  } finally {
    checkpointer?.stop();
    control?.stop();
    prompt?.close();
    await inspector?.close();
    clearInterval(keepAlive);
    release();
    await relay?.stop();
    log.close();
    await transport?.close();
  }
}

/** How long a finished run waits for the events its hosts stored before their last results. */
const RELAY_DRAIN_MS = 10_000;

/** Resolves true once the relay has nothing pending and the log holds all it brought. */
async function drained(relay: { pending(): Promise<number> }, log: { flush(): void }): Promise<boolean> {
  const deadline = Date.now() + RELAY_DRAIN_MS;
  while (Date.now() < deadline) {
    log.flush(); // acknowledges what the relay handed over
    const pending = await relay.pending().catch(() => 1);
    if (pending === 0) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

function defaultInterrupt(handler: () => void): () => void {
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
