/**
 * Runs one process for run_command (a shell, or bwrap around one): its own process group (so that
 * a timeout or a cancelled session kills everything it started), stdout and stderr interleaved as
 * they come, and a capped output that keeps the beginning and the end (errors are usually at the
 * end). Both command runners use it; only what they start differs.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { CommandResult } from '../../machines/ports.js';

export const OUTPUT_HEAD_BYTES = 32 * 1024;
export const OUTPUT_TAIL_BYTES = 32 * 1024;
/** How long a process may ignore SIGTERM before it gets SIGKILL. */
const KILL_GRACE_MS = 1000;
/** After the process exits, how long background processes may keep its output open. */
const DRAIN_MS = 500;

class CappedOutput {
  #head: Buffer[] = [];
  #headBytes = 0;
  #tail = Buffer.alloc(0);
  #total = 0;

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    const room = OUTPUT_HEAD_BYTES - this.#headBytes;
    if (room > 0) {
      const part = chunk.subarray(0, room);
      this.#head.push(part);
      this.#headBytes += part.length;
      chunk = chunk.subarray(part.length);
    }
    if (chunk.length === 0) return;
    this.#tail = Buffer.concat([this.#tail, chunk]);
    if (this.#tail.length > OUTPUT_TAIL_BYTES) this.#tail = this.#tail.subarray(this.#tail.length - OUTPUT_TAIL_BYTES);
  }

  result(): { output: string; cut: number } {
    const head = Buffer.concat(this.#head).toString('utf8');
    const tail = this.#tail.toString('utf8');
    const cut = this.#total - this.#headBytes - this.#tail.length;
    return cut > 0 ? { output: `${head}\n[... ${cut} bytes of output cut ...]\n${tail}`, cut } : { output: head + tail, cut: 0 };
  }
}

export interface ProcessOptions {
  cwd: string;
  /** The whole environment of the process (nothing is inherited). */
  env: Record<string, string>;
  timeoutMs: number;
  signal: AbortSignal;
  /** Descriptors the process gets as fd 3, 4, … (bwrap's --ro-bind-fd). */
  fds?: number[];
  /**
   * The process writes `{"child-pid": N}` on the next descriptor (fd 3 + fds.length: bwrap's
   * `--info-fd`): N is the sandbox's own first process, which a stop must reach too (see runProcess).
   */
  info?: boolean;
  /**
   * The sandbox waits (bwrap's `--block-fd`, the descriptor after the info one) until this
   * resolves for its first process (the network set up for its namespace, say); what it returns
   * is called when the command ended. A gate that fails runs nothing: its message is the output.
   */
  gate?: (innerPid: number) => Promise<() => void>;
  /**
   * Watches the running process (a quota, say): called once it started, with what kills it and
   * everything it started at once (no grace: a runaway writer should not write on); returns what
   * ends the watch, called when the command ended.
   */
  monitor?: (kill: () => void) => () => void;
}

export function runProcess(file: string, args: string[], options: ProcessOptions): Promise<CommandResult> {
  const started = Date.now();
  const output = new CappedOutput();
  const child = spawn(file, args, {
    cwd: options.cwd,
    detached: true, // a process group of its own, killed as a whole
    stdio: ['ignore', 'pipe', 'pipe', ...(options.fds ?? []), ...(options.info ? ['pipe' as const] : []), ...(options.gate ? ['pipe' as const] : [])],
    env: options.env,
  }) as ChildProcessByStdio<null, Readable, Readable>;
  child.stdout.on('data', (c: Buffer) => output.push(c));
  child.stderr.on('data', (c: Buffer) => output.push(c));

  let timedOut = false;
  let aborted = false;
  const timers: NodeJS.Timeout[] = [];
  /*
   * A sandbox (bwrap) runs the command in a session of its own (`--new-session`), under its own
   * first process, which outlived bwrap when a stop killed bwrap's group (seen: a cancelled
   * `sleep` still running 20 s later, on a busy machine). Its pid comes on the info descriptor;
   * a stop reaches its group too, and SIGKILL reaches that first process, whose end ends every
   * process of the sandbox's PID namespace. A stop asked before the pid is known waits for it.
   */
  let inner: number | null = null;
  let innerKnown: Promise<void> = Promise.resolve();
  if (options.info) {
    const stream = (child.stdio as unknown as Readable[])[3 + (options.fds?.length ?? 0)]!;
    let text = '';
    innerKnown = new Promise<void>((resolve) => {
      const done = () => resolve();
      stream.on('data', (c: Buffer) => {
        text += c.toString('utf8');
        const pid = /"child-pid"\s*:\s*(\d+)/.exec(text);
        if (pid) {
          inner = Number(pid[1]);
          resolve();
        }
      });
      stream.once('end', done);
      stream.once('error', done);
      child.once('exit', done);
      child.once('error', done);
    });
  }
  const signalAll = (signal: NodeJS.Signals) => {
    for (const target of [-child.pid!, ...(inner !== null ? [-inner, ...(signal === 'SIGKILL' ? [inner] : [])] : [])]) {
      try {
        process.kill(target, signal);
      } catch {
        // already gone
      }
    }
  };
  const killGroup = (signal: NodeJS.Signals) => {
    if (inner !== null || !options.info) signalAll(signal);
    else void innerKnown.then(() => signalAll(signal));
  };
  const stop = () => {
    killGroup('SIGTERM');
    timers.push(setTimeout(() => killGroup('SIGKILL'), KILL_GRACE_MS));
  };
  const onAbort = () => {
    aborted = true;
    stop();
  };

  let ungate: (() => void) | null = null;
  let ended = false;
  if (options.gate) {
    const gate = options.gate;
    const block = (child.stdio as unknown as Writable[])[3 + (options.fds?.length ?? 0) + (options.info ? 1 : 0)]!;
    block.on('error', () => undefined);
    void innerKnown.then(async () => {
      if (inner === null) return; // ended before it started
      try {
        const cleanup = await gate(inner);
        // ended meanwhile (a timeout, a stop): undone now, else when it ends
        if (ended) cleanup();
        else {
          ungate = cleanup;
          block.end('1');
        }
      } catch (error) {
        output.push(Buffer.from(`${(error as Error).message}\n`));
        signalAll('SIGKILL');
      }
    });
  }

  const unmonitor = options.monitor?.(() => killGroup('SIGKILL'));

  return new Promise((resolve) => {
    let settled = false;
    const finish = (exitCode: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      ended = true;
      unmonitor?.();
      (ungate as (() => void) | null)?.();
      for (const t of timers) clearTimeout(t);
      options.signal.removeEventListener('abort', onAbort);
      // nothing the command started outlives it: background processes, whatever ignored SIGTERM
      if (child.pid !== undefined) killGroup('SIGKILL');
      resolve({ exitCode, signal, ...output.result(), timedOut, aborted, durationMs: Date.now() - started });
    };
    child.on('error', (error) => {
      output.push(Buffer.from(`${error.message}\n`));
      finish(null, null);
    });
    child.on('exit', (code, signal) => {
      // Background processes may hold the pipes open; do not wait for them forever.
      timers.push(
        setTimeout(() => {
          for (const stream of child.stdio as unknown as Array<Readable | null>) stream?.destroy();
          finish(code, signal);
        }, DRAIN_MS),
      );
    });
    child.on('close', (code, signal) => finish(code, signal));
    timers.push(
      setTimeout(() => {
        timedOut = true;
        stop();
      }, options.timeoutMs),
    );
    if (options.signal.aborted) onAbort();
    else options.signal.addEventListener('abort', onAbort, { once: true });
  });
}
