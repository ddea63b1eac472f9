/**
 * A run's last stages and its life, after the stages of runStages.ts (run.ts composes them all):
 *
 *   actorStage      the runtime the actors run on, the human channel, the inbox's journal
 *   wireStage       the run's events to NATS and to the program; its hosts' events into its log
 *   inspectorStage  the Stately inspector, when asked for
 *   RunLife         start, checkpoints, control and pauses (the control directory, and with NATS
 *                   the run's control subject), and the finish that closes what the run opened
 *                   before `done` settles: the LaunchedRun a caller holds
 */
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { ControlRequest as ControlRequestSchema, type ControlRequest, type HumanAnswer, type HumanItem, type RunEvent, type SubTaskResult } from '../../machines/protocol/index.js';
import type { TypedRunEvent } from '../../machines/runEvents.js';
import { errorText } from '../../machines/errorText.js';
import { describeIssues } from '../../actors/errors.js';
import { startRun, startStandalone } from '../../actors/run.js';
import { pendingHumanItems, runStatus } from '../../actors/observation/runStatus.js';
import type { RunView } from '../../actors/observation/runView.js';
import { createRuntime } from '../../actors/runtime.js';
import { mailboxOf } from '../../actors/distribution/mailbox.js';
import { Checkpointer, ControlServer, handleControl, type ControlReply, type ResumePlan } from '../runHost.js';
import { publishRunEvents, relayHostEvents } from '../transport/events.js';
import { publishPause } from '../transport/pause.js';
import { serveRunControl, type RunControlHandlers } from '../transport/runControl.js';
import { RunFeed } from '../studio/feed.js';
import type { InspectorConnection } from '../inspector.js';
import { codeChannel } from '../humanPrompt.js';
import type { LaunchedRun, RunOutcome, RunRequest, RunUsage } from './run.js';
import { budgetsOf, type Connected, type Prepared, type Requested, type RunIO, type Stored, type modelStage, type toolStage, type inputStage, type logStage } from './runStages.js';

export const DEFAULT_INSPECTOR_URL = 'ws://127.0.0.1:8080';

type Models = ReturnType<typeof modelStage>;
type Tools = ReturnType<typeof toolStage>;
type Inputs = Awaited<ReturnType<typeof inputStage>>;
type Logged = ReturnType<typeof logStage>;

/** The run's root actor once started (the human channel answers through it). */
interface RootRef {
  current: { send(event: unknown): void } | null;
}

/** Stage 7, the actors: the human channel (the CLI's prompt or notice, or the program's handler), the inbox's journal, and the runtime they run on. */
export function actorStage(request: RunRequest, asked: Requested, p: Prepared, stored: Stored, models: Models, connected: Connected, tools: Tools, io: RunIO) {
  const { runId } = asked;
  const root: RootRef = { current: null };
  const answerItem = (id: string, answer: HumanAnswer) => root.current?.send({ type: 'HUMAN_ANSWER', id, answer });
  const humanChannel = request.humanChannel ? request.humanChannel(answerItem, runId) : request.human ? codeChannel(request.human, answerItem, io.warn) : undefined;
  const journal = stored.store?.inboxJournal(runId);
  const { effectJournal } = tools;
  const runtime = createRuntime({
    ...(effectJournal ? { effects: { journal: (id: string) => (id === runId ? effectJournal : null), inDoubt: p.config.effects.inDoubt } } : {}),
    artifacts: tools.artifacts,
    external: tools.mcp,
    registry: p.registry,
    clock: io.clock,
    events: stored.bus,
    model: models.resolveModel,
    orchestratorModel: models.orchestratorModel,
    ...(models.organiserModel ? { organiserModel: models.organiserModel } : {}),
    costs: models.costs,
    profiles: models.profiles,
    catalog: p.catalog,
    ...(journal ? { journal } : {}),
    ...(humanChannel ? { humanChannel } : {}),
    git: tools.git,
    commands: tools.commands.runner,
    ...(tools.pullRequests ? { pullRequests: tools.pullRequests } : {}),
    ...(connected.remote ? { remote: connected.remote } : {}),
  });
  return { runtime, journal, root };
}

export type Actors = ReturnType<typeof actorStage>;

/** A relay of the hosts' events into the run's log. */
type Relay = { stop(): Promise<void>; remove(): Promise<void>; pending(): Promise<number> };

/**
 * Stage 12, the wiring: the run's events published for watchers on NATS, its hosts' events relayed
 * into its log (acknowledged once written), and every event handed to the program's onEvent.
 */
export async function wireStage(request: RunRequest, asked: Requested, stored: Stored, connected: Connected, log: Logged['log'], io: RunIO): Promise<Relay | null> {
  const { bus } = stored;
  const { transport, ns } = connected;
  let relay: Relay | null = null;
  if (transport) {
    publishRunEvents(bus, transport, ns, `run-${asked.runId}`);
    // hosts' events are acknowledged once the log holds them
    relay = await relayHostEvents(bus, transport, ns, asked.runId, connected.box!.box, (ack) => (log ? log.whenWritten(() => void ack().catch(() => undefined)) : void ack().catch(() => undefined)));
  }
  if (request.onEvent) {
    const listener = request.onEvent;
    const deliver = (e: RunEvent) => {
      try {
        listener(e as TypedRunEvent);
      } catch (error) {
        // a listener's bug must not stop the run or the other listeners
        io.warn(`an event listener threw on ${e.type}: ${errorText(error)}`);
      }
    };
    // with a log, an event is handed on once it is written: a run killed and resumed then
    // hands on each event once, with sequence numbers that never go back
    if (log) log.onWritten(deliver);
    else bus.subscribe(deliver);
  }
  return relay;
}

/** Stage 13, the Stately inspector (`--inspect`): connected now, or as soon as one answers. */
export async function inspectorStage(asked: Requested, io: RunIO): Promise<InspectorConnection | null> {
  const { effective, runId } = asked;
  if (!effective.inspect) return null;
  const url = typeof effective.inspect === 'string' ? effective.inspect : DEFAULT_INSPECTOR_URL;
  const inspector = await (await import('../inspector.js')).connectInspector(url, { runId });
  if (inspector.connected) io.notify(`inspector: sending the run to ${url}`);
  else io.notify(`inspector: nothing answers at ${url} yet (start one with \`a2a inspect\`); the run goes on, and sends it the whole tree once it answers`);
  return inspector;
}

/** What a run's life holds: every stage's result it uses. */
export interface Assembled {
  request: RunRequest;
  asked: Requested;
  p: Prepared;
  stored: Stored;
  connected: Connected;
  tools: Tools;
  actors: Actors;
  inputs: Inputs;
  plannedResume: ResumePlan | null;
  logged: Logged;
  relay: Relay | null;
  inspector: InspectorConnection | null;
  /** Closes what the stages opened (effect journal, MCP servers, transport, traces). */
  cleanup: () => Promise<void>;
  /** The trace the run's spans go to, with tracing on. */
  traceId?: string;
  io: RunIO;
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

const exitCodeOf = (status: RunOutcome['status']) => (status === 'completed' ? 0 : status === 'cancelled' ? 130 : 1);

/**
 * A run's life: `start()` runs it (orchestrated, or one standalone session) under checkpoints and
 * the control directory, `control()` carries out what `a2a inbox`, `a2a pause` … ask, `stop()`
 * cancels the tree, and `done` settles once everything the run opened is closed.
 */
export class RunLife implements LaunchedRun {
  readonly runId: string;
  readonly planId: string;
  readonly workspace: string;
  readonly standalone: boolean;
  readonly view: RunView;
  readonly usage: Readonly<RunUsage>;
  readonly done: Promise<RunOutcome>;
  readonly #a: Assembled;
  #settle!: (outcome: RunOutcome) => void;
  #fail!: (error: unknown) => void;
  #started = false;
  #stopRun: ((reason: string) => void) | null = null;
  #stopBefore: string | null = null;
  #orchestrator: { getSnapshot(): unknown; send(event: unknown): void } | null = null;
  #finished = false;
  /** The run's control subject (with NATS), answered from start() until the run's transport closes. */
  #natsControl: Promise<{ stop(): Promise<void> } | null> = Promise.resolve(null);

  constructor(assembled: Assembled) {
    this.#a = assembled;
    this.runId = assembled.asked.runId;
    this.planId = assembled.inputs.planId;
    this.workspace = assembled.p.workspace;
    this.standalone = !assembled.inputs.orchestrated;
    this.view = assembled.logged.view;
    this.usage = assembled.logged.usage;
    this.done = new Promise<RunOutcome>((resolve, reject) => {
      this.#settle = resolve;
      this.#fail = reject;
    });
    // a caller may hand these on detached (`onSignal(run.stop)`)
    this.start = this.start.bind(this);
    this.subscribe = this.subscribe.bind(this);
    this.emit = this.emit.bind(this);
    this.pending = this.pending.bind(this);
    this.control = this.control.bind(this);
    this.stop = this.stop.bind(this);
    this.abandon = this.abandon.bind(this);
  }

  start(): void {
    if (this.#started) return;
    this.#started = true;
    const { commands } = this.#a.tools;
    // in the run's log and display too, not only on stderr (here, so that every listener hears it)
    if (commands.warning) this.#a.stored.bus.emit({ type: 'warning', planId: this.planId, data: { message: commands.warning, sandbox: 'none' } });
    const { transport, ns } = this.#a.connected;
    if (transport) {
      this.#natsControl = serveRunControl(transport, ns, this.runId, this.#controlHandlers(), (message) => this.#a.io.warn(message)).catch((error: unknown) => {
        // the run goes on: only the studio over NATS cannot reach it (a user without the right to its control subject)
        this.#a.stored.bus.emit({
          type: 'warning',
          planId: this.planId,
          data: { message: `the run's control subject is not answered (a studio cannot steer it over NATS; a server configuration from before \`a2a nats users --studio\` lacks the right): ${errorText(error)}` },
        });
        return null;
      });
    }
    // the control subject is answered from the run's first event on: whoever hears it may ask at once
    void this.#finish(async () => {
      await this.#natsControl;
      return this.#a.inputs.orchestrated ? this.#runOrchestrated() : this.#runStandalone();
    });
  }

  subscribe(listener: (event: RunEvent) => void): () => void {
    return this.#a.stored.bus.subscribe((e) => {
      try {
        listener(e);
      } catch (error) {
        // a listener's bug must not fail the session that emitted the event
        this.#a.io.warn(`an event listener threw on ${e.type}: ${errorText(error)}`);
      }
    });
  }

  emit(event: Omit<RunEvent, 'seq' | 'ts' | 'runId'>): void {
    this.#a.stored.bus.emit(event);
  }

  pending(): HumanItem[] {
    return this.#orchestrator ? pendingHumanItems(this.#orchestrator as never) : [];
  }

  control(controlRequest: ControlRequest): ControlReply {
    const parsed = ControlRequestSchema.safeParse(controlRequest);
    if (!parsed.success) return { ok: false, error: `invalid request:\n${describeIssues(parsed.error.issues)}` };
    if (!this.#orchestrator) return { ok: false, error: this.#a.inputs.orchestrated ? 'the run has not started yet' : 'a standalone session has no orchestrator to manage: stop it, or run it as a plan' };
    if (this.#finished) return { ok: false, error: 'the run has already ended' };
    return handleControl(this.#orchestrator as never, this.#a.actors.runtime, parsed.data, this.#controlHooks);
  }

  stop(reason: string): void {
    if (this.#stopRun) this.#stopRun(reason);
    else this.#stopBefore = reason;
    if (!this.#started) this.start();
  }

  abandon(): void {
    this.#a.logged.log?.close();
    this.#a.stored.store?.update(this.runId, { status: 'cancelled', finishedAt: Date.now() });
  }

  /**
   * What the run's control subject does (adapters/transport/runControl.ts): what `control()` does,
   * the stop, and the run's files as the studio reads them locally (run.json, status.json taken
   * now, the log read as it grows, the artifacts).
   */
  #controlHandlers(): RunControlHandlers {
    const { stored, logged, tools, p } = this.#a;
    const { store, bus } = stored;
    const startedAt = Date.now();
    // a run without files (memory store): its events are kept here from its start
    const kept: RunEvent[] = [];
    if (!store) bus.subscribe((e) => void kept.push(e));
    // the log as read for a studio, let go a minute after the last read (no studio follows the run then)
    let feed: RunFeed | null = null;
    let release: NodeJS.Timeout | null = null;
    return {
      control: (request) => this.control(request),
      stop: (reason, by) => {
        if (this.#finished) return { ok: false, error: 'the run has already ended' };
        this.#a.io.notify(`a2a: stop requested by ${by}`);
        this.stop(reason);
        return { ok: true, message: `stop requested for run ${this.runId}: every worker and sub-task is being cancelled` };
      },
      status: () => {
        let record: unknown;
        try {
          record = store?.read(this.runId);
        } catch {
          // being replaced: the fields below say enough
        }
        record ??= { runId: this.runId, pid: process.pid, status: this.#finished ? 'completed' : 'running', startedAt, planId: this.planId, source: p.target.source };
        // without the conversations (the log has them as events): a long run's would outgrow a NATS message
        const status = this.#orchestrator ? { ...runStatus(this.#orchestrator as never, Date.now()), conversations: {}, paused: (record as { paused?: unknown }).paused ?? null } : null;
        return { record, status };
      },
      events: () => {
        if (!store) return kept;
        logged.log?.flush();
        feed ??= new RunFeed(store, this.runId);
        feed.poll();
        if (release) clearTimeout(release);
        release = setTimeout(() => (feed = null), 60_000);
        release.unref();
        return feed.events;
      },
      artifacts: () => tools.artifacts(this.runId).list({ includeArchived: true }),
    };
  }

  /** Tells the run's hosts that it is paused or resumed (a failure is a warning: the run goes on). */
  #announcePause(paused: { by: string; at: number } | null, by: string): void {
    const { transport, ns } = this.#a.connected;
    publishPause(transport!, ns, { runId: this.runId, paused: paused !== null, by, at: paused?.at ?? Date.now() }).catch((error: unknown) =>
      this.#a.stored.bus.emit({ type: 'warning', planId: this.planId, data: { message: `the hosts could not be told that the run is ${paused ? 'paused' : 'resumed'}: ${errorText(error)}` } }),
    );
  }

  readonly #controlHooks = {
    // the pause is kept in the run's record: a run resumed after a kill comes back paused
    onPause: (paused: { by: string; at: number } | null, by: string) => {
      this.#a.stored.store?.update(this.runId, { paused });
      this.#a.stored.bus.emit({ type: paused ? 'run.paused' : 'run.unpaused', planId: this.planId, data: { by } });
      // the run's agents on hosts too
      if (this.#a.connected.transport) this.#announcePause(paused, by);
    },
  };

  /** Runs the run, closes what it opened, and only then settles `done`: whoever awaits it finds the log complete. */
  async #finish(work: () => Promise<RunOutcome>): Promise<void> {
    const { connected, relay, inspector, logged, cleanup, io } = this.#a;
    const { transport, ns, pendingAcks } = connected;
    // The run may wait on nothing Node can see (a model call that never answers, sessions
    // waiting for each other, a person): the process is held open until the run ends.
    const keepAlive = setInterval(() => {}, 1 << 30);
    let ended: { outcome: RunOutcome } | { error: unknown };
    try {
      ended = { outcome: await work() };
    } catch (error) {
      ended = { error };
    }
    this.#finished = true;
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
      () => logged.log?.close(),
      // the last: a studio reads the run's final record and log until its transport closes
      async () => (await this.#natsControl)?.stop(),
      cleanup,
    ];
    for (const close of closing) {
      try {
        await close();
      } catch (error) {
        io.warn(`closing the run: ${errorText(error)}`);
      }
    }
    clearInterval(keepAlive);
    if ('outcome' in ended) this.#settle(ended.outcome);
    else this.#fail(ended.error);
  }

  async #runOrchestrated(): Promise<RunOutcome> {
    const { asked, p, stored, connected, actors, inputs, plannedResume, logged, relay, inspector, io } = this.#a;
    const { resuming } = asked;
    const { bus, store } = stored;
    const { planId, runId } = this;
    const { pendingAcks } = connected;
    const { log, usage } = logged;
    if (resuming?.checkpoint) {
      bus.emit({ type: 'run.resumed', planId, data: { planId, replayed: plannedResume!.replay.map((m) => m.id), recovered: plannedResume!.recovered, checkpointAt: resuming.checkpoint.savedAt } });
    } else if (resuming) {
      bus.emit({ type: 'run.resumed', planId, data: { planId, restarted: true, reason: 'it was stopped before its first checkpoint: started again from its plan' } });
    } else {
      bus.emit({ type: 'run.started', planId, data: { planId, tasks: inputs.orchestrated!.tasks.length, source: p.target.source, ...budgetsOf(p.config), ...(this.#a.traceId ? { traceId: this.#a.traceId } : {}) } });
    }
    const handle = startRun(actors.runtime, resuming?.checkpoint ? { checkpoint: resuming.checkpoint, replay: plannedResume!.replay } : inputs.orchestrated!, { clock: io.clock, ...(inspector ? { inspect: inspector.inspect } : {}) });
    actors.root.current = handle.actor;
    this.#orchestrator = handle.actor;
    this.#stopRun = handle.stop;
    if (this.#stopBefore !== null) handle.stop(this.#stopBefore);
    if (resuming) {
      // the run's record says whether it is paused; its checkpoint may be older than the last
      // pause or resume: the workflow is brought in line, and the hosts are told again
      const paused = resuming.record.paused ?? null;
      if (connected.transport) this.#announcePause(paused, paused?.by ?? 'resume');
      const workflow = (handle.actor.getSnapshot() as { children: Record<string, { getSnapshot(): { value: unknown } } | undefined> }).children.workflow;
      const value = workflow?.getSnapshot().value;
      if (paused && typeof value === 'object') handle.actor.send({ type: 'WORKFLOW_COMMAND', command: { type: 'PAUSE', by: paused.by } });
      if (!paused && value === 'PAUSED') handle.actor.send({ type: 'WORKFLOW_COMMAND', command: { type: 'RESUME', by: 'resume' } });
      if (paused) bus.emit({ type: 'run.paused', planId, data: { by: paused.by, restored: true } });
    }
    let checkpointer: Checkpointer | null = null;
    let control: ControlServer | null = null;
    try {
      if (store && actors.journal) {
        checkpointer = new Checkpointer(handle.actor, store, runId, actors.journal, {
          onError: (error) => io.notify(`a2a: checkpoint failed: ${error.message}`),
          beforeWrite: () => log?.flush(),
          afterWrite: () => {
            for (const ack of pendingAcks.splice(0)) void ack().catch(() => undefined);
          },
        });
        checkpointer.start();
        control = new ControlServer(store.controlDir(runId), (controlRequest) => handleControl(handle.actor, actors.runtime, controlRequest, this.#controlHooks));
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
      return { status: summary.status, exitCode: exitCodeOf(summary.status), summary: summaryWithUsage, usage: { ...usage } };
    } finally {
      checkpointer?.stop();
      control?.stop();
    }
  }

  async #runStandalone(): Promise<RunOutcome> {
    const { p, stored, actors, inputs, logged, inspector, io } = this.#a;
    const { bus, store } = stored;
    const { planId, runId } = this;
    bus.emit({ type: 'run.started', planId, data: { planId, tasks: 1, source: p.target.source, standalone: true, ...budgetsOf(p.config), ...(this.#a.traceId ? { traceId: this.#a.traceId } : {}) } });
    const handle = startStandalone(actors.runtime, inputs.spec!, { clock: io.clock, ...(inspector ? { inspect: inspector.inspect } : {}) });
    this.#stopRun = handle.stop;
    if (this.#stopBefore !== null) handle.stop(this.#stopBefore);
    const result: SubTaskResult = await handle.done;
    const status = result.status === 'success' || result.status === 'partial' ? 'completed' : result.status === 'cancelled' ? 'cancelled' : 'failed';
    bus.emit({ type: 'run.finished', planId, data: { status, result } });
    store?.update(runId, { status, finishedAt: Date.now(), summary: result });
    return { status, exitCode: exitCodeOf(status), result, usage: { ...logged.usage } };
  }
}
