/**
 * A run, assembled: its configuration, agents, tools, models, store, transport, git, sandbox and
 * human channel, and the actors started on them. `a2a run` (bin/commands/run.ts) and the library
 * (`startRun` in index.ts) both start runs here, so there is one way a run happens; what differs
 * is only how it is shown (a terminal tree or typed events) and who answers (a prompt or code).
 * launchRun composes the stages of runStages.ts, in order, then runs the run's life (start,
 * checkpoints, control, finish).
 */
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { Clock, Model } from '../../machines/ports.js';
import { ControlRequest as ControlRequestSchema, type ControlRequest, type HumanAnswer, type HumanItem, type RunEvent, type SubTaskResult } from '../../machines/protocol/index.js';
import { describeIssues } from '../../actors/errors.js';
import type { ConfigLayer } from '../../actors/config/config.js';
import { startRun, startStandalone } from '../../actors/run.js';
import type { HumanChannel } from '../../actors/people/humanGate.js';
import { pendingHumanItems } from '../../actors/observation/runStatus.js';
import { RunView } from '../../actors/observation/runView.js';
import { createRuntime } from '../../actors/runtime.js';
import { mailboxOf } from '../../actors/distribution/mailbox.js';
import { errorText } from '../../machines/errorText.js';
import { realClock } from '../clock.js';
import { Checkpointer, ControlServer, handleControl, type ControlReply } from '../runHost.js';
import { publishRunEvents, relayHostEvents } from '../transport/events.js';
import { publishPause } from '../transport/pause.js';
import type { InspectorConnection } from '../inspector.js';
import { codeChannel, type HumanHandler } from '../humanPrompt.js';

export type { HumanHandler };
import type { TypedRunEvent } from '../../machines/runEvents.js';
import { budgetsOf, inputStage, logStage, modelStage, prepare, recordStage, requestStage, storeStage, toolStage, traceStage, transportOfRun, type RunIO } from './runStages.js';
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
      relay = await relayHostEvents(bus, transport, ns, runId, connected.box!.box, (ack) => (log ? log.whenWritten(() => void ack().catch(() => undefined)) : void ack().catch(() => undefined)));
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
      // a run that ended frees its box for the next run, whose consumers read on (one stopped by
      // a failure keeps it for its resume); the server removes a box's consumers after an hour unread
      const over = 'outcome' in ended;
      const closing: Array<() => Promise<unknown> | unknown> = [
        () => inspector?.close(),
        () => relay?.stop(),
        async () => {
          if (!transport || !connected.box) return;
          // what reached the run after its last checkpoint (late reports of sessions that ended):
          // acknowledged before the box is freed (its next run would drop them unread anyway)
          if (over) await Promise.all(pendingAcks.splice(0).map((ack) => ack().catch(() => undefined)));
          await mailboxOf(transport, ns, connected.box.box).stop();
          if (over) await connected.box.release();
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
    // a run refused before it started sent nothing: its box goes back to the pool (a resume keeps
    // the one it held, with what waits in it)
    if (!resuming) await connected.box?.release().catch(() => undefined);
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
