/**
 * `a2a stop [runId]`: emergency stop of a run in progress on this machine (stopRunProcess: SIGINT
 * to the run's process, which cancels the whole tree; every worker and sub-task still reports
 * `cancelled`).
 */
import { locateRun } from './manage.js';
import { stopRunProcess } from '../../adapters/runHost.js';

export function stopCommand(runId: string | undefined, options: { workspace?: string }, out: NodeJS.WritableStream): number {
  const { store, record } = locateRun(options, runId);
  out.write(`${stopRunProcess(store, record.runId)}\n`);
  return 0;
}
