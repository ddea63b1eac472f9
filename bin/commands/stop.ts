/**
 * `a2a stop [runId]`: emergency stop of a run in progress on this machine. It signals the run's
 * process (SIGINT, as Ctrl-C would), which cancels the whole tree; every worker and sub-task
 * still reports `cancelled`.
 */
import { resolve } from 'node:path';
import { A2AError } from '../../actors/errors.js';
import { locateRun } from './manage.js';
import { alive } from '../../adapters/runHost.js';


export function stopCommand(runId: string | undefined, options: { workspace?: string }, out: NodeJS.WritableStream): number {
  const { store, record } = locateRun(options, runId);
  if (record.status !== 'running') {
    throw new A2AError('INVALID_STATE_TRANSITION', `run ${record.runId} is not running (it is ${record.status})`);
  }
  if (!alive(record.pid)) {
    store.update(record.runId, { status: 'crashed', finishedAt: Date.now() });
    throw new A2AError('NOT_FOUND', `run ${record.runId} has no live process (pid ${record.pid}); marked crashed`);
  }
  process.kill(record.pid, 'SIGINT');
  out.write(`stop requested for run ${record.runId} (pid ${record.pid}): every worker and sub-task is being cancelled\n`);
  return 0;
}
