/**
 * The explicit opt-out (`sandbox: { mode: none }`): commands run as the runtime's user with the
 * whole host file system and network in reach. Only the environment allowlist still applies, and
 * the runner says it is not confined, so that every command asks a person.
 */
import type { CommandRequest, CommandResult, CommandRunner } from '../../machines/ports.js';
import { commandEnv } from './env.js';
import { runProcess } from './process.js';

export function unconfinedRunner(options: { env?: readonly string[] } = {}): CommandRunner {
  return {
    name: 'none',
    confined: false,
    check: async () => ({ ready: true }),
    run: (request: CommandRequest): Promise<CommandResult> =>
      runProcess('/bin/sh', ['-c', request.command], { cwd: request.cwd, env: commandEnv(options.env ?? []), timeoutMs: request.timeoutMs, signal: request.signal }),
  };
}
