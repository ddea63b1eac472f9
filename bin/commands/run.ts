/**
 * `a2a run <plan.json | plan dir | "task">`: runs a plan (or one task) on the embedded default:
 * in-process actors, the file store under .a2a/, the scripted model. The run itself is assembled
 * in adapters/assembly/run.ts, as for the library; this file is how it is shown on a terminal and
 * how a person answers and stops it.
 */
import { PrintedNotice, TerminalPrompt } from '../../adapters/humanPrompt.js';
import { canRedraw, liveDisplay, logDisplay, palette, renderSummary, usageLine, type RunDisplay } from '../../adapters/terminal.js';
import { launchRun, type LaunchedRun, type RunOptions as EngineOptions } from '../../adapters/assembly/run.js';
import type { RunEvent } from '../../machines/protocol/index.js';

export { DEFAULT_INSPECTOR_URL } from '../../adapters/assembly/run.js';

export interface RunOptions extends EngineOptions {
  /** One JSON event per line on stdout instead of the tree. */
  json?: boolean;
  /** false: the log without redrawing the tree, even on a terminal. */
  tree?: boolean;
}

export interface RunIo {
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  stderr: NodeJS.WritableStream;
  /** Hooks for Ctrl-C; the default installs process signal handlers. */
  onInterrupt?: (handler: () => void) => () => void;
}

export async function runCommand(targetArg: string | undefined, options: RunOptions, io: RunIo): Promise<number> {
  const { json, tree, ...engine } = options;
  // the human channel: a prompt on a terminal, else a notice saying how to answer with `a2a inbox`
  const interactive = io.stdin?.isTTY === true && io.stdout.isTTY === true && !json;
  const colour = io.stdout.isTTY === true && !process.env.NO_COLOR;
  // the tree is drawn once the run is set up: a redrawn tree would wipe what setting it up printed
  // (the workspace it made, warnings); the events of the setup wait for it
  let display: RunDisplay | null = null;
  const early: RunEvent[] = [];
  let prompt: TerminalPrompt | null = null;
  let run: LaunchedRun | null = null;
  const interrupt = io.onInterrupt ?? defaultInterrupt;
  let stopping = false;
  const release = interrupt(() => {
    if (stopping || !run) {
      // twice, or before anything runs: nothing to cancel and wait for
      io.stderr.write(stopping ? '\nforced exit\n' : '\nstopped before the run started\n');
      run?.abandon();
      process.exit(130);
    }
    stopping = true;
    io.stderr.write('\nstopping: cancelling every worker and sub-task (Ctrl-C again to force)\n');
    run.stop('stopped by the user');
  });
  try {
    run = await launchRun({
      ...engine,
      ...(targetArg !== undefined ? { target: targetArg } : {}),
      notify: (line) => io.stderr.write(`${line}\n`),
      onEvent: json ? (e: RunEvent) => io.stdout.write(`${JSON.stringify(e)}\n`) : (e: RunEvent) => (display ? display.onEvent(e) : early.push(e)),
      humanChannel: (answer, runId) => {
        if (interactive) {
          prompt = new TerminalPrompt({ input: io.stdin!, output: io.stdout, pause: () => display?.pause?.(), resume: () => display?.resume?.() }, answer);
          return prompt;
        }
        return new PrintedNotice(json ? io.stderr : io.stdout, runId);
      },
    });
    if (!json) {
      // a terminal that cannot redraw (TERM=dumb, narrower than 60 columns) gets plain lines
      display = canRedraw(io.stdout) && tree !== false ? liveDisplay(io.stdout, { colour }) : logDisplay(io.stdout, { colour });
      for (const e of early.splice(0)) display.onEvent(e);
    }
    run.start();
    let outcome;
    try {
      outcome = await run.done;
    } finally {
      display?.finish();
    }
    if (!json) {
      if (outcome.summary) io.stdout.write(renderSummary(outcome.summary, palette(colour)));
      else if (outcome.result) {
        const result = outcome.result;
        io.stdout.write(`\n${result.status}: ${result.output}${result.error ? `\nerror: ${result.error}` : ''}\n${palette(colour).dim(`\n${usageLine(outcome.usage)}`)}\n`);
      }
    }
    return outcome.exitCode;
  } finally {
    (prompt as TerminalPrompt | null)?.close();
    release();
  }
}

function defaultInterrupt(handler: () => void): () => void {
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}
