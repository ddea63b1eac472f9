/**
 * Wires the statecharts to their implementations. Given the ports (model, clock, event sink) and
 * the registry, it returns the machines with `callModel`, `runTool` and the supervisors provided.
 * This is the one place where machines meet actors; `bin/` chooses the adapters.
 */
import { fromPromise, type AnyActorLogic } from 'xstate';
import type { Clock, CommandRunner, EventSink, Git, Model, PullRequests } from '../machines/ports.js';
import { taskBranchMachine } from '../machines/taskBranch.machine.js';
import type { DiffStats, ParsedAgentType, SessionSpec } from '../machines/protocol/index.js';
import { orchestratorMachine, type AnswerQuestionInput } from '../machines/orchestrator.machine.js';
import { sdlcWorkflowMachine } from '../machines/sdlcWorkflow.machine.js';
import { createDecide, createRecordStep } from './organiser/organiser.js';
import { PauseGates } from './people/pause.js';
import { createHumanGateLogic, type HumanChannel } from './people/humanGate.js';
import { createInboxLogic, type InboxJournal } from './people/inbox.js';
import { createRemoteSessionLogic, type RemoteDeps } from './distribution/remote.js';
import type { SupervisorLogic } from '../machines/session.js';
import { subtaskMachine } from '../machines/subtask.machine.js';
import { workerMachine } from '../machines/worker.machine.js';
import { createLoop, type CostControl, type EffectJournals, type ModelResolver } from './session/agentLoop.js';
import type { ArtifactStore } from './organiser/artifacts.js';
import { SpawnBudget } from './session/limits.js';
import { FileLockTable } from './session/fileLocks.js';

import { SystemPrompts } from './session/prompts.js';
import type { AgentRegistry } from './config/registry.js';
import { createSupervisorLogic } from './session/supervisor.js';
import { childIds, ToolCatalog, type ExternalTools, type IdGenerator } from './tools/index.js';

export interface RuntimeDeps {
  registry: AgentRegistry;
  clock: Clock;
  events: EventSink;
  /** One model for every session, or a resolver by session (agent backend, model override). */
  model: Model | ModelResolver;
  ids?: IdGenerator;
  catalog?: ToolCatalog;
  /** The model the orchestrator answers worker questions with (`orchestrator.questions: model`). */
  orchestratorModel?: Model;
  /** The organiser's model and its name for pricing (workflow runs: `workflow.organiser.profile`); the orchestrator's when absent. */
  organiserModel?: { model: Model; name: string };
  /** `a2a pause`: each run's agents wait before their next model call while its gate is closed. */
  pauses?: PauseGates;
  /** Where the inbox journals arrivals and handled ids (the file store). */
  journal?: InboxJournal;
  /** Where questions for a person are shown (terminal prompt, `a2a inbox`). */
  humanChannel?: HumanChannel;
  /** Git, for worktrees and the completion workflow (runs in a git repository). */
  git?: Git;
  /** Pull requests (a GitHub repository and token are configured). */
  pullRequests?: PullRequests;
  /** Prices every model call; spent budgets stop model calls and spawns. */
  costs?: CostControl;
  /** The model profiles a worker can be switched to (`a2a model`). */
  profiles?: ProfileCatalog;
  /** Runs run_command's commands: a sandbox, or the unconfined opt-out (absent: commands are refused). */
  commands?: CommandRunner;
  /** The artifact store of each run (seed 003): files of the run, or the NATS KV hosts share. */
  artifacts?: (runId: string) => ArtifactStore;
  /** Tools from the agents' MCP servers (adapters/mcp). */
  external?: ExternalTools;
  /** Sessions on other hosts (NATS): which children are placed remotely, and how to reach them. */
  remote?: { deps: RemoteDeps; placeRemotely(spec: SessionSpec): boolean };
  /** The effect journal of each run (absent: steps are not recorded, and a restored step runs again). */
  effects?: EffectJournals;
}

/** What a model switch needs to know about the configured profiles. */
export interface ProfileCatalog {
  names(): string[];
  /** The profile a session runs on now. */
  current(spec: SessionSpec): string;
  /** Whether `to` costs more than what `spec` runs on (the model_switch_expensive permission). */
  moreExpensive(spec: SessionSpec, to: string): boolean;
}

/** One merge into a base at a time per repository: merges compute against the base's current commit. */
class MergeQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, job: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const next = previous.then(job, job);
    this.#tails.set(key, next.catch(() => undefined));
    return next;
  }
}

/** `work`'s value and how long it took (ms): a git step's event carries it, and a trace's span of the step is timed by it. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = Date.now();
  const value = await work();
  return { value, ms: Date.now() - t0 };
}

/** The git steps of a task's branch, bound to the Git port; each reports what it did as a run event. */
export function createTaskBranch(deps: { git?: Git; pullRequests?: PullRequests; events: EventSink }) {
  const need = (): Git => {
    if (!deps.git) throw new Error('git is not configured for this run');
    return deps.git;
  };
  const merges = new MergeQueue();
  const taskOf = (worktree: string) => worktree.split('/').pop() ?? worktree;
  return taskBranchMachine.provide({
    actors: {
      prepareWorktree: fromPromise(async ({ input }: { input: { repo: string; worktree: string; branch: string; base: string } }) => {
        const { ms } = await timed(() => need().createWorktree(input.repo, { path: input.worktree, branch: input.branch, base: input.base }));
        deps.events.emit({ type: 'worktree.created', taskId: taskOf(input.worktree), data: { worktree: input.worktree, branch: input.branch, base: input.base, ms } });
      }),
      commitAndMeasure: fromPromise(async ({ input }: { input: { worktree: string; base: string; message: string } }): Promise<{ commit: string | null; diff: DiffStats }> => {
        const git = need();
        const { value, ms } = await timed(async () => ({ commit: await git.commitAll(input.worktree, input.message), diff: await git.diffSummary(input.worktree, input.base) }));
        deps.events.emit({ type: 'branch.committed', taskId: taskOf(input.worktree), data: { ...value, ms } });
        return value;
      }),
      mergeBranch: fromPromise(async ({ input }: { input: { repo: string; branch: string; base: string; message: string } }) => {
        // the merge itself is timed (not its wait in the repository's queue)
        const { value: outcome, ms } = await merges.run(input.repo, () => timed(() => need().merge(input.repo, { branch: input.branch, into: input.base, message: input.message })));
        const taskId = input.branch.split('/').pop()!;
        if (outcome.merged) deps.events.emit({ type: 'branch.merged', taskId, data: { branch: input.branch, into: input.base, commit: outcome.commit, ms } });
        else deps.events.emit({ type: 'branch.conflict', taskId, data: { branch: input.branch, into: input.base, conflicts: outcome.conflicts, ms } });
        return outcome;
      }),
      removeWorktree: fromPromise(async ({ input }: { input: { repo: string; worktree: string; branch: string } }) => {
        const { ms } = await timed(() => need().removeWorktree(input.repo, input.worktree, { deleteBranch: input.branch }));
        deps.events.emit({ type: 'worktree.removed', taskId: taskOf(input.worktree), data: { worktree: input.worktree, branch: input.branch, ms } });
      }),
      pushBranch: fromPromise(async ({ input }: { input: { repo: string; remote: string; branch: string } }) => {
        const { ms } = await timed(() => need().push(input.repo, { remote: input.remote, branch: input.branch }));
        deps.events.emit({ type: 'branch.pushed', taskId: input.branch.split('/').pop()!, data: { remote: input.remote, branch: input.branch, ms } });
      }),
      openPullRequest: fromPromise(
        async ({ input, signal }: { input: { github: { owner: string; repo: string }; branch: string; base: string; title: string; body: string }; signal: AbortSignal }) => {
          if (!deps.pullRequests) throw new Error('no GitHub token is configured: set git.github.tokenEnv (default GITHUB_TOKEN)');
          const pullRequests = deps.pullRequests;
          const { value: pr, ms } = await timed(() => pullRequests.open({ owner: input.github.owner, repo: input.github.repo, head: input.branch, base: input.base, title: input.title, body: input.body, signal }));
          deps.events.emit({ type: 'pr.created', taskId: input.branch.split('/').pop()!, data: { number: pr.number, url: pr.url, branch: input.branch, base: input.base, ms } });
          return pr;
        },
      ),
    },
  });
}


const ORCHESTRATOR_AGENT: ParsedAgentType = { raw: '@orchestrator', backend: 'default', agentName: 'orchestrator' };

const ORCHESTRATOR_SYSTEM = [
  'You are the orchestrator of a team of agents working on a plan. A worker you deployed asks you a question.',
  'Answer it directly and concisely from what you know about the task and the conversation so far.',
  'If the answer is not knowable, say which assumption the worker should make. Do not ask questions back.',
].join('\n');

/** The orchestrator's own model answering a worker's question (no tools, one call). */
export function createAnswerQuestion(model: Model | null) {
  return fromPromise<string, AnswerQuestionInput>(async ({ input, signal }) => {
    if (!model) throw new Error('no orchestrator model is configured');
    const history = input.history.map((e) => `- ${e.from} (${e.kind}): ${e.text}`).join('\n');
    const content = [
      `Worker ${input.workerId} (${input.agentType}) works on task "${input.taskId}":`,
      input.task,
      ...(history ? ['', 'Conversation with this worker so far:', history] : []),
      '',
      `Its question: ${input.question}`,
    ].join('\n');
    const reply = await model.call(
      { system: ORCHESTRATOR_SYSTEM, messages: [{ role: 'user', content }], tools: [], agentType: ORCHESTRATOR_AGENT, sessionId: 'orchestrator', depth: 0 },
      { signal },
    );
    const text = reply.text.trim();
    if (!text) throw new Error('the orchestrator model returned an empty answer');
    return text;
  });
}

export function createRuntime(deps: RuntimeDeps) {
  const catalog = deps.catalog ?? new ToolCatalog();
  const ids = deps.ids ?? childIds();
  const budget = new SpawnBudget(deps.clock);
  const locks = new FileLockTable();
  const pauses = deps.pauses ?? new PauseGates();
  const model = deps.model;
  const resolveModel: ModelResolver = typeof model === 'function' ? model : () => ({ model, name: model.id, profile: 'default' });
  const loop = createLoop({
    registry: deps.registry,
    catalog,
    prompts: new SystemPrompts(deps.registry),
    resolveModel,
    ids,
    clock: deps.clock,
    locks,
    events: deps.events,
    ...(deps.costs ? { costs: deps.costs } : {}),
    ...(deps.commands ? { commands: deps.commands } : {}),
    ...(deps.artifacts ? { artifacts: deps.artifacts } : {}),
    ...(deps.external ? { external: deps.external } : {}),
    ...(deps.effects ? { effects: deps.effects } : {}),
    pause: pauses,
  });

  const logics: Partial<Record<SessionSpec['role'], AnyActorLogic>> = {};
  const supervisor = createSupervisorLogic({
    sessionLogic: (role) => logics[role]!,
    clock: deps.clock,
    events: deps.events,
    budget,
    locks,
    ...(deps.costs ? { costs: deps.costs } : {}),
    ...(deps.remote ? { placeRemotely: deps.remote.placeRemotely, remoteLogic: createRemoteSessionLogic(deps.remote.deps) } : {}),
    observeId: (spec) => ids.observe(spec),
  }) as unknown as SupervisorLogic;
  const worker = workerMachine.provide({ actors: { subtasks: supervisor }, actions: { loop } });
  const subtask = subtaskMachine.provide({ actors: { subtasks: supervisor }, actions: { loop } });
  logics.worker = worker;
  logics.subtask = subtask;
  const inbox = createInboxLogic({ clock: deps.clock, events: deps.events, ...(deps.journal ? { journal: deps.journal } : {}) });
  const humanGate = createHumanGateLogic({ clock: deps.clock, events: deps.events, ...(deps.humanChannel ? { channel: deps.humanChannel } : {}) });
  const orchestratorModel = deps.orchestratorModel ?? (typeof model === 'function' ? null : model);
  const sdlcWorkflow = sdlcWorkflowMachine.provide({
    actors: {
      recordStep: createRecordStep({ artifacts: deps.artifacts ?? null, clock: deps.clock, events: deps.events }),
      decide: createDecide({
        model: deps.organiserModel?.model ?? orchestratorModel,
        modelName: deps.organiserModel?.name ?? orchestratorModel?.id ?? 'unknown',
        clock: deps.clock,
        events: deps.events,
        ...(deps.costs ? { costs: deps.costs } : {}),
        ...(deps.effects ? { effects: deps.effects } : {}),
      }),
    },
  });
  const orchestrator = orchestratorMachine.provide({
    actors: {
      workers: supervisor,
      inbox: inbox as never,
      humanGate: humanGate as never,
      answerQuestion: createAnswerQuestion(orchestratorModel),
      sdlcWorkflow,
      taskBranch: createTaskBranch({ ...(deps.git ? { git: deps.git } : {}), ...(deps.pullRequests ? { pullRequests: deps.pullRequests } : {}), events: deps.events }),
    },
  });

  return {
    orchestrator,
    worker,
    subtask,
    supervisor,
    registry: deps.registry,
    catalog,
    ids,
    budget,
    locks,
    clock: deps.clock,
    events: deps.events,
    costs: deps.costs ?? null,
    profiles: deps.profiles ?? null,
    pauses,
  };
}

export type Runtime = ReturnType<typeof createRuntime>;
