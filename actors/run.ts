/**
 * Runs: a plan is validated and turned into the orchestrator's input (every task's worker spec),
 * then run as the root actor. A standalone session (no orchestrator) runs under a root supervisor.
 */
import type { AnyActorRef, InspectionEvent, Observer } from 'xstate';
import { createRootActor } from './scheduler.js';
import { observeSessions } from './observation/observe.js';
import type { GitPlan, OrchestratorEmitted, OrchestratorInput, RunSummary } from '../machines/orchestrator.machine.js';
import type { Clock } from '../machines/ports.js';
import { Plan, PlanTask, type ParsedAgentType, type QueueMessage, type SessionSpec, type SubTaskResult, type WorkflowRequest } from '../machines/protocol/index.js';
import { restoreTimers, type Checkpoint } from './durability/checkpoint.js';
import { orchestratorPolicy, type RunConfig } from './config/config.js';
import { buildPolicy, workerPermissions, type PermissionPolicy } from './people/permissions.js';
import { A2AError, describeIssues, explainUnknownKeys } from './errors.js';
import type { Runtime } from './runtime.js';
import { correlationOf, correlationOfRequest, type Correlated } from './observation/events.js';

/** Parses a plan object; errors name the source and each bad field. */
export function parsePlan(data: unknown, source: string): Plan {
  const parsed = Plan.safeParse(data);
  if (!parsed.success) {
    // a misspelt key would otherwise drop what it meant (an agent, a script) without a word
    const allowedAt = (path: ReadonlyArray<PropertyKey>) =>
      path.length === 0 ? Object.keys(Plan.shape) : path.length === 2 && path[0] === 'tasks' ? Object.keys(PlanTask.shape) : undefined;
    throw new A2AError(
      'VALIDATION_ERROR',
      `${source}: invalid plan:\n${describeIssues(explainUnknownKeys(parsed.error.issues, allowedAt))}\nA plan is {"tasks": [{"id": "...", "prompt": "...", "agent"?: "@architect", "dependsOn"?: ["..."]}]}.`,
      { where: source },
    );
  }
  return parsed.data;
}

/** Checks what zod cannot: unique ids, known dependencies, no dependency cycle, known agent types. */
export function validatePlan(plan: Plan, runtime: Pick<Runtime, 'registry'>, defaultAgent: string, source: string): void {
  const problems: string[] = [];
  const ids = new Set<string>();
  plan.tasks.forEach((t, i) => {
    if (ids.has(t.id)) problems.push(`tasks[${i}].id: duplicate task id "${t.id}"`);
    ids.add(t.id);
  });
  plan.tasks.forEach((t, i) => {
    t.dependsOn.forEach((d, j) => {
      if (!ids.has(d)) problems.push(`tasks[${i}].dependsOn[${j}]: unknown task "${d}" (tasks: ${[...ids].join(', ')})`);
      if (d === t.id) problems.push(`tasks[${i}].dependsOn[${j}]: a task cannot depend on itself`);
    });
    try {
      runtime.registry.resolve(t.agent ?? defaultAgent);
    } catch (e) {
      problems.push(`tasks[${i}].agent: ${(e as Error).message}`);
    }
  });
  // cycle check (depth-first, three colours)
  const byId = new Map(plan.tasks.map((t) => [t.id, t]));
  const colour = new Map<string, 1 | 2>();
  const visit = (id: string, path: string[]): void => {
    if (colour.get(id) === 2) return;
    if (colour.get(id) === 1) {
      problems.push(`dependency cycle: ${[...path.slice(path.indexOf(id)), id].join(' → ')}`);
      return;
    }
    colour.set(id, 1);
    for (const d of byId.get(id)?.dependsOn ?? []) if (byId.has(d)) visit(d, [...path, id]);
    colour.set(id, 2);
  };
  for (const t of plan.tasks) visit(t.id, []);
  if (problems.length > 0) {
    throw new A2AError('VALIDATION_ERROR', `${source}: invalid plan:\n${problems.map((p) => `  - ${p}`).join('\n')}`, { where: source });
  }
}

export interface RunOptions {
  runId: string;
  config: RunConfig;
  /** The permission matrix (defaults when absent). */
  policy?: PermissionPolicy;
  /** Working directory of the workers when they get no worktree of their own. */
  workspace: string;
  /** Worktrees and the completion workflow (null: not a git repository, or switched off). */
  git?: GitPlan | null;
  /** `--model`: the profile (or model) of every worker whose task names none. */
  model?: string;
}

/** The matrix given, else the defaults with the configuration's `permissions` layer. */
function policyOf(options: RunOptions): PermissionPolicy {
  return options.policy ?? buildPolicy(options.config.permissions ? [{ source: 'configuration', layer: options.config.permissions }] : []);
}

/** The orchestrator's input: one worker spec per task. */
export function orchestratorInput(plan: Plan, runtime: Pick<Runtime, 'registry'>, options: RunOptions, source = 'plan'): OrchestratorInput {
  validatePlan(plan, runtime, options.config.defaultAgent, source);
  const { limits, idle } = options.config;
  const policy = policyOf(options);
  const permissions = workerPermissions(policy);
  return {
    runId: options.runId,
    planId: plan.id,
    maxParallelWorkers: limits.maxParallelWorkers,
    policy: orchestratorPolicy(options.config, policy),
    git: options.git ?? null,
    tasks: plan.tasks.map((task) => {
      const { parsed } = runtime.registry.resolve(task.agent ?? options.config.defaultAgent);
      const id = `w-${task.id}`;
      const spec: SessionSpec = {
        id,
        role: 'worker',
        agent: parsed,
        prompt: task.prompt,
        expectedOutput: task.expectedOutput ?? 'A short report of what you did and the result.',
        ...(task.model ? { model: task.model } : options.model ? { model: options.model } : {}),
        ...(task.taskType ? { taskType: task.taskType } : {}),
        depth: 0,
        maxDepth: limits.maxDepth,
        spawnContext: 'orchestrator',
        owner: { ownerType: 'orchestrator', ownerId: 'orchestrator' },
        correlation: { runId: options.runId, planId: plan.id, taskId: task.id, workerId: id, worktreePath: options.workspace, depth: 0 },
        lineage: [],
        ...(task.timeoutMs ? { timeoutMs: task.timeoutMs } : {}),
        limits,
        idle,
        permissions,
      };
      return { id: task.id, dependsOn: task.dependsOn, spec };
    }),
  };
}

/**
 * The orchestrator's input for a workflow run: no tasks (the workflow adds them step by step),
 * the roles resolved to agents and profiles, and the spec template of every step's worker.
 */
export function workflowRunInput(
  request: WorkflowRequest,
  runtime: Pick<Runtime, 'registry'>,
  options: RunOptions & { roles: Record<string, { agent: string; profile?: string }>; startedAt: number },
): OrchestratorInput {
  const { limits, idle, workflow } = options.config;
  const roles: Record<string, { agent: ParsedAgentType; model?: string }> = {};
  for (const [role, r] of Object.entries(options.roles)) {
    const model = r.profile ?? options.model;
    roles[role] = { agent: runtime.registry.resolve(r.agent).parsed, ...(model ? { model } : {}) };
  }
  const architect = roles.architect ?? { agent: runtime.registry.resolve(options.config.defaultAgent).parsed };
  const template: SessionSpec = {
    id: 'w-template',
    role: 'worker',
    agent: architect.agent,
    prompt: '',
    expectedOutput: 'The artifact this step produces (a2a_write_artifact), and a short report of what you did.',
    depth: 0,
    maxDepth: limits.maxDepth,
    spawnContext: 'orchestrator',
    owner: { ownerType: 'orchestrator', ownerId: 'orchestrator' },
    correlation: { runId: options.runId, planId: request.id, taskId: 'template', workerId: 'w-template', worktreePath: options.workspace, depth: 0 },
    lineage: [],
    limits,
    idle,
    permissions: workerPermissions(policyOf(options)),
  };
  return {
    runId: options.runId,
    planId: request.id,
    maxParallelWorkers: limits.maxParallelWorkers,
    policy: orchestratorPolicy(options.config, policyOf(options)),
    git: options.git ?? null,
    tasks: [],
    workflow: {
      input: {
        runId: options.runId,
        goal: request.goal,
        startedAt: options.startedAt,
        settings: {
          maxPlanRevisions: workflow.maxPlanRevisions,
          maxFixRounds: workflow.maxFixRounds,
          maxWaits: workflow.maxWaits,
          secondaryCoders: workflow.secondaryCoders,
          reviewers: workflow.reviewers,
          onError: workflow.onError,
          waitMs: workflow.waitMs,
          archiveAfterMs: Math.round(workflow.archiveAfterHours * 3_600_000),
          ...(workflow.testCommand ? { testCommand: workflow.testCommand } : {}),
        },
      },
      roles,
      template,
    },
  };
}

export interface RunHandle {
  actor: AnyActorRef;
  /** Resolves with the summary when the orchestrator reaches a final state. */
  done: Promise<RunSummary>;
  /** Emergency stop: every worker and sub-task is cancelled and still reports. */
  stop(reason: string): void;
}

export interface RestoreFrom {
  checkpoint: Checkpoint;
  /** Journaled arrivals the checkpoint does not hold: into the inbox again. */
  replay: QueueMessage[];
}

/**
 * Starts the orchestrator as the root actor: fresh from its input, or restored from a checkpoint
 * (the whole tree, its timers re-armed, journaled arrivals replayed).
 */
export function startRun(
  runtime: Runtime,
  from: OrchestratorInput | RestoreFrom,
  options: { clock: Clock; inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void) },
): RunHandle {
  const restore = 'checkpoint' in from ? from : null;
  const actor = createRootActor(runtime.orchestrator, {
    ...(restore ? { snapshot: restore.checkpoint.snapshot as never } : { input: from as OrchestratorInput }),
    clock: options.clock,
    id: 'orchestrator',
    systemId: 'orchestrator',
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  const planId = restore ? (restore.checkpoint.snapshot as unknown as { context: { planId: string } }).context.planId : (from as OrchestratorInput).planId;
  observeSessions(actor, runtime.events);
  forwardOrchestratorEvents(actor, runtime.events, planId);
  const done = new Promise<RunSummary>((resolve, reject) => {
    actor.subscribe({
      next: (snapshot) => {
        if (snapshot.status === 'done') resolve(snapshot.output);
      },
      error: reject,
    });
  });
  actor.start();
  if (restore) {
    const lost = restoreTimers(actor, restore.checkpoint.timers, options.clock.now());
    for (const t of lost) runtime.events.emit({ type: 'warning', planId, data: { message: `timer ${t.id} of ${t.source} not restored: the actor no longer exists` } });
    if (restore.replay.length > 0) actor.send({ type: 'REPLAY', messages: restore.replay });
  }
  return { actor, done, stop: (reason) => actor.send({ type: 'STOP', reason }) };
}

/** A worker's correlation, from its task's session spec in the orchestrator's context. */
function workerCorrelation(actor: AnyActorRef, taskId: string | undefined, workerId: string): Partial<Correlated> {
  const tasks = (actor.getSnapshot() as { context?: { tasks?: Record<string, { spec: SessionSpec }> } }).context?.tasks;
  const spec = taskId ? tasks?.[taskId]?.spec : undefined;
  return spec ? { ...correlationOf(spec), subTaskId: workerId } : { subTaskId: workerId, parentId: 'orchestrator', depth: 0 };
}

/** The orchestrator's decisions (permission, question, redirect, skip, stop) as run events. */
export function forwardOrchestratorEvents(actor: AnyActorRef, events: Runtime['events'], planId: string): void {
  actor.on('*', (emitted: OrchestratorEmitted) => {
    if (events.listening === false) return;
    const { type, data, taskId, workerId, subTaskId, request } = emitted;
    events.emit({
      type,
      planId,
      // about a permission request: its requester's whole correlation (parent, depth, agent type);
      // about a worker: the worker's (the task's session, under the orchestrator)
      ...(request ? correlationOfRequest(request) : workerId ? workerCorrelation(actor, taskId, workerId) : {}),
      ...(taskId ? { taskId } : {}),
      ...(workerId ? { workerId } : {}),
      ...(subTaskId ? { subTaskId } : {}),
      data,
    });
  });
}

/** A standalone session: one agent, no orchestrator, sub-tasks nest `maxDepthStandalone` levels. */
export function standaloneSpec(prompt: string, runtime: Pick<Runtime, 'registry'>, options: RunOptions & { agent: string }): SessionSpec {
  const { parsed } = runtime.registry.resolve(options.agent);
  const { limits, idle } = options.config;
  const id = 'session';
  return {
    id,
    role: 'worker',
    agent: parsed,
    prompt,
    expectedOutput: 'A short report of what you did and the result.',
    depth: 0,
    maxDepth: limits.maxDepthStandalone,
    spawnContext: 'agent',
    owner: { ownerType: 'agent', ownerId: 'cli' },
    correlation: { runId: options.runId, planId: 'standalone', taskId: 'standalone', workerId: id, worktreePath: options.workspace, depth: 0 },
    lineage: [],
    limits,
    idle,
    permissions: workerPermissions(policyOf(options)),
  };
}

/** Runs one session under a root supervisor and resolves with its result. */
export function startStandalone(
  runtime: Runtime,
  spec: SessionSpec,
  options: { clock: Clock; inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void) },
): { root: AnyActorRef; done: Promise<SubTaskResult>; stop(reason: string): void } {
  const root = createRootActor(runtime.supervisor, {
    input: { owner: null, ownerId: 'cli', maxParallel: 1 },
    clock: options.clock,
    id: 'root',
    ...(options.inspect ? { inspect: options.inspect } : {}),
  });
  observeSessions(root, runtime.events);
  const done = new Promise<SubTaskResult>((resolve) => {
    root.subscribe((snapshot) => {
      const family = (snapshot as unknown as { family: { result(id: string): SubTaskResult | undefined } }).family;
      const result = family.result(spec.id);
      if (result) resolve(result);
    });
  });
  root.start();
  root.send({ type: 'SPAWN', requestId: spec.id, specs: [spec] });
  return { root, done, stop: (reason) => root.send({ type: 'CANCEL_CHILDREN', ids: [spec.id], reason }) };
}
