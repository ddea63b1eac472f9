#!/usr/bin/env node
/** The `a2a` executable. */
import { main } from './cli.js';
import { redactUncaught } from './fatal.js';

redactUncaught();

// a reader that goes away (`a2a run --json | head`) is not an error
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

main(process.argv.slice(2), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr }).then((code) => {
  process.exitCode = code;
  // The work is done and reported: a handle someone forgot (a socket closing slowly, a timer)
  // must not keep a finished command alive. Unreferenced, so a clean exit is not delayed.
  setTimeout(() => process.exit(code), 2_000).unref();
});
