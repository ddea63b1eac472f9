/**
 * run_command's command runner for a process (`a2a run`, `a2a host`), chosen from the `sandbox`
 * section: bubblewrap by default, or the unconfined opt-out, which is said out loud.
 */
import type { SandboxConfig } from '../../actors/config/config.js';
import type { CommandRunner } from '../../machines/ports.js';
import { bubblewrapRunner, unconfinedRunner } from '../sandbox/index.js';

export const UNCONFINED_WARNING =
  'sandbox.mode is "none": run_command runs commands without a sandbox (the whole file system and the network, with this user\'s rights), ' +
  'so every command asks a person, whatever the permission matrix says';

export function commandRunnerFor(sandbox: SandboxConfig): { runner: CommandRunner; warning: string | null } {
  if (sandbox.mode === 'none') return { runner: unconfinedRunner({ env: sandbox.env }), warning: UNCONFINED_WARNING };
  return {
    runner: bubblewrapRunner({
      env: sandbox.env,
      readOnlyPaths: sandbox.readOnlyPaths,
      limits: sandbox.limits,
      gitWritable: sandbox.gitWritable ?? false,
      outsideHardLinks: sandbox.outsideHardLinks ?? 'mask',
    }),
    warning: null,
  };
}
