/**
 * A run, assembled: its configuration, agents, tools, models, store, transport, git, sandbox and
 * human channel, and the actors started on them. `a2a run` (bin/commands/run.ts) and the library
 * (`startRun` in index.ts) both start runs here, so there is one way a run happens; what differs
 * is only how it is shown (a terminal tree or typed events) and who answers (a prompt or code).
 * launchRun composes the stages of runStages.ts and runLife.ts, in order; RunLife is the run's
 * life (start, checkpoints, control, finish).
 */
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { Clock, Model } from '../../machines/ports.js';
import type { ControlRequest, HumanAnswer, HumanItem, PlanInput, RunEvent, SubTaskResult } from '../../machines/protocol/index.js';
import type { TypedRunEvent } from '../../machines/runEvents.js';
import type { Settings } from '../../actors/config/config.js';
import type { HumanChannel } from '../../actors/people/humanGate.js';
import type { RunView } from '../../actors/observation/runView.js';
import { realClock } from '../clock.js';
import type { ControlReply } from '../runHost.js';
import type { HumanHandler } from '../humanPrompt.js';
import { inputStage, logStage, modelStage, prepare, recordStage, requestStage, storeStage, toolStage, traceStage, transportOfRun, type RunIO } from './runStages.js';
import { actorStage, inspectorStage, RunLife, wireStage } from './runLife.js';
import type { CodeInputs } from './tools.js';

export type { HumanHandler };
export { DEFAULT_INSPECTOR_URL } from './runLife.js';

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
  plan?: PlanInput;
  /** A single task. */
  task?: string;
  /** Configuration given in code: the same shape as the config file, applied over it. */
  settings?: Settings;
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
  /** An event about the run from the program that started it (a2a serve's A2A tasks): into its log, display and monitors. */
  emit(event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): void;
  /** Items waiting for a person. */
  pending(): HumanItem[];
  /** The same requests as `a2a inbox`, `a2a pause`, `a2a redirect` …: checked, then carried out. */
  control(request: ControlRequest): ControlReply;
  /** Cancels every worker and sub-task; each still reports, and `done` resolves. */
  stop(reason: string): void;
  /** For a forced exit: the log closed and the run marked cancelled now. */
  abandon(): void;
}

/**
 * Prepares a run: checks everything, connects what it needs, writes its record (file store), and
 * returns it ready to `start()`. Bad input throws an A2AError before anything is written. The
 * stages, in order (runStages.ts, then runLife.ts): the request (what to run), the configuration
 * (settings, tools, agents, script), the store and bus, the models, the transport, the tools'
 * world, the actors, traces, what the run runs, its record, its logs, its wiring, the inspector;
 * then its life (RunLife: start, checkpoints, control, finish).
 */
export async function launchRun(request: RunRequest): Promise<LaunchedRun> {
  const notify = request.notify ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const io: RunIO = { notify, warn: (message: string) => notify(`a2a: warning: ${message}`), clock: request.clock ?? realClock };
  const asked = await requestStage(request, io);
  const p = prepare(asked.resolvedTarget, asked.effective, asked.runId);
  const stored = storeStage(asked, p, io);
  const models = modelStage(request, asked, p, stored, io);
  const connected = await transportOfRun(asked, p, stored.bus, io);
  const tools = toolStage(asked, p, stored, connected, io);
  const actors = actorStage(request, asked, p, stored, models, connected, tools, io);
  const tracing = await traceStage(request, asked, stored.bus, io);
  const cleanup = async () => {
    tools.effectJournal?.close();
    await tools.mcp.closeAll();
    await connected.transport?.close();
    // after the log: the run's last spans are exported before `done` settles
    await tracing?.close();
  };
  try {
    const inputs = await inputStage(asked, p, actors.runtime, { git: tools.git, pullRequests: tools.pullRequests, resolveModel: models.resolveModel, profileName: models.profileName });
    const plannedResume = recordStage(request, asked, p, stored.store, actors.runtime, inputs.planId, io);
    const logged = logStage(asked, stored, tools.logFlush, io);
    const relay = await wireStage(request, asked, stored, connected, logged.log, io);
    const inspector = await inspectorStage(asked, io);
    return new RunLife({ request, asked, p, stored, connected, tools, actors, inputs, plannedResume, logged, relay, inspector, cleanup, io, ...(tracing ? { traceId: tracing.builder.traceOf(asked.runId) } : {}) });
  } catch (error) {
    // a run refused before it started sent nothing: its box goes back to the pool (a resume keeps
    // the one it held, with what waits in it)
    if (!asked.resuming) await connected.box?.release().catch(() => undefined);
    await cleanup();
    throw error;
  }
}
