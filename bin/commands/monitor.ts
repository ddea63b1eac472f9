/**
 * `a2a monitor --nats <url> [--namespace ns] [--run id] [--json]`: watches, live, runs whose
 * sessions are spread across processes. It reads the hosts bucket, then listens to host heartbeats
 * and run events (all runs, or one with `--run`) and shows the tree with the host of every session,
 * the hosts with their liveness and load, and the metrics (adapters/monitor.ts).
 *
 * - on a terminal: the view redrawn in place, at most every 500 ms;
 * - otherwise: one line per event worth reading and per host change, the view at the end;
 * - `--json`: NDJSON, one line per event received (`"kind":"event"`, with its `origin`), per host
 *   change (`"kind":"host"`), and a `"kind":"snapshot"` line (hosts, runs, metrics) every
 *   `--interval` ms and at the end (`"final":true`).
 *
 * `--until-done` ends (0) after the watched run's `run.finished` and a last snapshot; `--for <ms>`
 * ends after that long (1 with `--until-done` if the run did not finish). Otherwise it runs until
 * SIGINT/SIGTERM. Credentials come from the environment (A2A_NATS_USER/PASSWORD/TOKEN/INBOX_PREFIX,
 * and A2A_NATS_JS_API_PREFIX when its account imports JetStream's API) and are never printed.
 * It publishes nothing and creates no consumer: the hosts bucket is read by stream info and direct
 * get (Transport.readKeyValue), so its user needs no right that could deliver messages anywhere.
 */
import { A2AError } from '../../actors/errors.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import type { Transport } from '../../machines/ports.js';
import { describeHostChange, MonitorState, renderMonitor, type HostChange, type MonitorEvent } from '../../adapters/monitor.js';
import { followNamespace } from '../../adapters/monitorFeed.js';
import { describeEvent, palette } from '../../adapters/terminal.js';
import { formatElapsed } from '../../actors/observation/runView.js';
import { connectNats, describeServers } from '../../adapters/transport/nats.js';
import { natsCredentials } from '../../adapters/assembly/nats.js';

export interface MonitorCommandOptions {
  nats: string;
  namespace?: string;
  run?: string;
  json?: boolean;
  untilDone?: boolean;
  for?: number;
  /** Snapshot period (JSON) and refresh period of the view; default 1000. */
  interval?: number;
}

export interface MonitorIo {
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
  /** Resolves when the monitor should stop (default: SIGTERM or SIGINT). */
  until?: Promise<void>;
}

/** The view is redrawn at most this often on a terminal. */
const REDRAW_MS = 500;
/** Liveness is checked this often. */
const TICK_MS = 100;

export async function monitorCommand(options: MonitorCommandOptions, io: MonitorIo): Promise<number> {
  if (options.untilDone && !options.run) throw new A2AError('VALIDATION_ERROR', '--until-done needs --run <runId>: the run whose end it waits for');
  const ns = options.namespace ?? 'default';
  const interval = options.interval ?? 1_000;
  const mode: 'json' | 'live' | 'log' = options.json ? 'json' : io.stdout.isTTY ? 'live' : 'log';
  const colour = mode === 'live';
  const p = palette(colour);
  const title = `a2a monitor · ${describeServers(options.nats)} · namespace ${ns}${options.run ? ` · run ${options.run}` : ''}`;

  const transport = await connectNats({ servers: options.nats, namespace: ns, name: 'a2a-monitor', ...natsCredentials() });
  try {
    return await watch(transport);
  } finally {
    await transport.close().catch(() => undefined);
  }

  async function watch(transport: Transport): Promise<number> {
    const state = new MonitorState();
    const write = (line: string) => io.stdout.write(`${line}\n`);
    const json = (value: unknown) => write(JSON.stringify(value));
    const recent: string[] = [];
    let dirty = true;
    let lastDraw = 0;
    let lastSnapshot = 0;
    let drawnHeight = 0;

    const log = (line: string) => {
      if (mode === 'log') write(line);
      else if (mode === 'live') {
        recent.push(line);
        if (recent.length > 6) recent.shift();
      }
    };
    const snapshot = (final = false) => {
      const snap = state.snapshot(Date.now());
      json({ kind: 'snapshot', ...(final ? { final: true } : {}), ...snap });
      lastSnapshot = Date.now();
    };
    const draw = () => {
      const lines = renderMonitor(state, Date.now(), { colour, title, ...(io.stdout.columns ? { width: io.stdout.columns } : {}) });
      if (recent.length) lines.push('', p.bold('recent'), ...recent.map((l) => `  ${l}`));
      // in place: back to the top of the last drawing, then each line cleared before it is written
      const up = drawnHeight > 0 ? `\x1b[${drawnHeight}F` : '';
      io.stdout.write(`${up}${lines.map((l) => `\x1b[2K${l}`).join('\n')}\n\x1b[J`);
      drawnHeight = lines.length;
      lastDraw = Date.now();
      dirty = false;
    };
    const hostChanges = (changes: HostChange[]) => {
      if (changes.length === 0) return;
      dirty = true;
      const snap = mode === 'json' ? null : state.snapshot(Date.now());
      for (const change of changes) {
        if (mode === 'json') json({ kind: 'host', at: Date.now(), ...change });
        else log(describeHostChange(change, snap!));
      }
    };

    let done = false;
    let finish: (code: number) => void = () => {};
    const finished = new Promise<number>((resolve) => (finish = resolve));

    const onEvent = (event: MonitorEvent, changes: HostChange[]) => {
      dirty = true;
      if (mode === 'json') json({ kind: 'event', ...event });
      else {
        const line = monitorLine(event, state) ?? describeEvent(event, p);
        if (line) log(`${p.dim(`[${event.origin ?? '?'}]`)} ${line}`);
      }
      hostChanges(changes);
      if (options.untilDone && event.runId === options.run && event.type === 'run.finished') finish(0);
    };

    let following: { close(): Promise<void> } | null = null;
    const stops: Array<() => void> = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      following = await followNamespace(transport, { namespace: ns, ...(options.run ? { run: options.run } : {}) }, state, {
        event: onEvent,
        hosts: (changes) => {
          dirty = true;
          hostChanges(changes);
        },
      });
      if (mode === 'log') write(`${title}: watching (Ctrl-C to stop)`);
      hostChanges(state.tick(Date.now()));
      if (mode === 'json') snapshot();
      if (mode === 'live') draw();

      // After the poll phase: when this process was busy, the heartbeats that arrived meanwhile are
      // taken in before anyone is found silent.
      const afterIo = () => new Promise<void>((resolve) => setImmediate(resolve));
      timer = setInterval(() => {
        void afterIo().then(() => {
          if (done) return;
          const now = Date.now();
          hostChanges(state.tick(now));
          if (mode === 'json' && now - lastSnapshot >= interval) snapshot();
          // the view ages (elapsed times, last heartbeats) even when nothing arrives
          if (mode === 'live' && now - lastDraw >= REDRAW_MS && (dirty || now - lastDraw >= interval)) draw();
        });
      }, TICK_MS);

      if (options.for !== undefined) {
        const t = setTimeout(() => {
          if (options.untilDone) io.stderr.write(`a2a monitor: run ${options.run} did not finish within ${formatElapsed(options.for!)}\n`);
          finish(options.untilDone ? 1 : 0);
        }, options.for);
        stops.push(() => clearTimeout(t));
      }
      if (io.until) void io.until.then(() => finish(0));
      else {
        const stop = () => finish(0);
        process.once('SIGTERM', stop);
        process.once('SIGINT', stop);
        stops.push(() => {
          process.removeListener('SIGTERM', stop);
          process.removeListener('SIGINT', stop);
        });
      }

      const code = await finished;
      done = true;
      clearInterval(timer);
      await afterIo();
      await following.close();
      hostChanges(state.tick(Date.now()));
      if (mode === 'json') snapshot(true);
      else if (mode === 'live') draw();
      else write(`\n${renderMonitor(state, Date.now(), { title }).join('\n')}`);
      return code;
    } finally {
      done = true;
      if (timer) clearInterval(timer);
      for (const stop of stops) stop();
      await following?.close();
    }
  }
}

/** Log lines for what `describeEvent` leaves out: where sessions run. (host.joined and host.lost come from every host that notices; the monitor's own host lines say it once.) */
function monitorLine(event: RunEvent, state: MonitorState): string | null {
  const d = event.data;
  const id = event.subTaskId ?? '';
  switch (event.type) {
    case 'subtask.placed': {
      const waited = state.placement(event.runId, id)?.queueLatencyMs;
      return `→ ${id} ${d.restored ? 'resumed' : 'placed'} on ${String(d.host)}${!d.restored && waited != null ? ` after ${formatElapsed(waited)} in the queue` : ''}`;
    }
    case 'session.restored':
      return `↻ ${id} restored on ${String(d.host)} from its snapshot`;
    default:
      return null;
  }
}
