/**
 * A workflow run paused, killed with SIGKILL, and resumed with `a2a run --resume`: it comes back
 * paused (its agents wait, its workflow stays PAUSED), `a2a resume` lets it go on, and it ends in
 * the same final state, with the same artifacts, as a run that was never interrupted.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aProcess, capture, killAll, waitFor } from '../nats/cluster.js';
import { artifactVersions, EXAMPLE_ARTIFACTS, exampleWorkspace, workflowStates } from './example.js';

afterEach(() => killAll());

const lines = (out: string) => out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as RunEvent);

describe('a paused workflow run killed with SIGKILL', () => {
  it('should come back paused with --resume, and after a2a resume end as an uninterrupted run does', async () => {
    const ws = exampleWorkspace('a2a-sdlc-kill-', () => 30);
    const store = new FileRunStore(ws);

    const first = a2aProcess(['run', 'workflow.json', '--run-id', 'pk', '--json'], ws);
    await waitFor('the code review', () => lines(first.out()).some((e) => e.type === 'workflow.state' && e.data.state === 'CODE_REVIEW') || first.child.exitCode !== null, 8_000, first.out);
    const ctl = capture();
    expect(await main(['pause', 'pk', '--workspace', ws], ctl.io), ctl.err()).toBe(0);
    await waitFor('PAUSED in the checkpoint', () => JSON.stringify(store.readCheckpoint('pk') ?? {}).includes('"PAUSED"'), 8_000, first.out);
    first.child.kill('SIGKILL');
    await first.exited;
    expect(store.read('pk').paused).toBeTruthy();

    const second = a2aProcess(['run', '--resume', 'pk', '--json'], ws);
    await waitFor('the resumed run', () => lines(second.out()).some((e) => e.type === 'run.paused' && e.data.restored === true) || second.child.exitCode !== null, 8_000, second.out);
    expect(second.child.exitCode).toBeNull();
    expect(await main(['resume', 'pk', '--workspace', ws], ctl.io), ctl.err()).toBe(0);
    expect(await second.exited, second.out().slice(-3000)).toBe(0);

    const record = store.read('pk');
    expect(record.status).toBe('completed');
    expect(record.paused).toBeNull();
    expect((record.summary as RunSummary).workflow).toMatchObject({ status: 'completed', state: 'COMPLETED' });
    const logged = store.events('pk');
    expect(workflowStates(logged).at(-1)).toBe('COMPLETED');
    // the same artifacts as a run that was never interrupted, each version once
    expect(artifactVersions(logged)).toEqual(EXAMPLE_ARTIFACTS);
  });

  // killed while the organiser decides (its plan review calls take 400 ms) or while the sceptic
  // reviews the plan (its calls take 400 ms): the resumed run asks again or reviews again, and
  // every artifact version is in the log exactly once
  for (const phase of ['deciding', 'working'] as const) {
    it(`should complete after a SIGKILL while ${phase}, with every artifact version logged once`, async () => {
      const slow = (rule: { agent: string; prompt?: string }) =>
        phase === 'deciding' ? rule.agent === 'organiser' && (rule.prompt ?? '').includes('PLAN_REVIEW') : rule.agent === 'code-sceptic' && (rule.prompt ?? '').includes('PLAN_REVIEW');
      const ws = exampleWorkspace(`a2a-sdlc-kill-${phase}-`, (rule) => (slow(rule) ? 400 : 20));
      const store = new FileRunStore(ws);
      const first = a2aProcess(['run', 'workflow.json', '--run-id', 'kp', '--json'], ws);
      const inPhase = () => new RegExp(`"PLAN_REVIEW":"${phase}"`).test(JSON.stringify(store.readCheckpoint('kp') ?? {}));
      await waitFor(`PLAN_REVIEW ${phase} in the checkpoint`, () => inPhase() || first.child.exitCode !== null, 8_000, first.out);
      first.child.kill('SIGKILL');
      await first.exited;
      const second = a2aProcess(['run', '--resume', 'kp', '--no-tree'], ws);
      expect(await second.exited, second.out().slice(-3000)).toBe(0);
      const logged = store.events('kp');
      const versions = artifactVersions(logged);
      expect(versions).toHaveLength(16);
      expect(new Set(versions).size).toBe(16);
      expect(workflowStates(logged).at(-1)).toBe('COMPLETED');
    });
  }
});
