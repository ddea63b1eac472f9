/**
 * The soak's short version (`npm run soak` runs it for 10 minutes): on a 3-node cluster, three
 * hosts (one per node) and runs back to back, each with exactly one result per session, and every
 * host's memory read from its heartbeats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsCluster, type NatsCluster } from './server.js';
import { formatSoak, slope, soak, type SoakReport } from '../soak/soak.js';

let cluster: NatsCluster;
let report: SoakReport;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  report = await soak({ durationMs: 60_000, maxRuns: 3, workers: 2, parts: 3, partMs: 20, warmup: 0.3, cluster });
}, 28_000);

afterAll(async () => {
  console.log(formatSoak(report));
  await cluster?.stop();
});

describe('soak (short): runs back to back on a 3-node cluster', () => {
  it('finishes every run with exactly one result per session', () => {
    expect(report.failedRuns).toEqual([]);
    expect({ lost: report.lost, duplicated: report.duplicated }).toEqual({ lost: [], duplicated: [] });
    expect([report.runs, report.sessions, report.subtasks]).toEqual([3, 3 * 8, 3 * 6]);
  });

  it('leaves no message unacknowledged in any queue (the last report of each child included)', () => {
    expect(report.leftInQueues).toEqual({ spawn: 0, up: 0, down: 0, hostevents: 0 });
  });

  it('reads every run\'s mail through one box reused from run to run: no consumer made per run, the slot free after the last', () => {
    // the hosts' own boxes, the agent types' spawn queues, and one run box: up-rs0 and events-rs0
    expect(report.consumerNames.filter((n) => /^(up|hostevents)\/(up|events)-r/.test(n))).toEqual(['hostevents/events-rs0', 'up/up-rs0']);
    expect(report.boxSlots).toEqual({ 'slot.0': null });
  });

  it("samples every host's memory from its heartbeats, and says how many sessions it ran at once", () => {
    expect(report.hosts.map((h) => h.host)).toEqual(['soak-h1', 'soak-h2', 'soak-h3']);
    for (const h of report.hosts) {
      expect(h.samples).toBeGreaterThan(1);
      expect(h.rssMB[1]).toBeGreaterThan(10);
      expect(Number.isFinite(h.heapSlope) && Number.isFinite(h.rssSlope)).toBe(true);
    }
    // the sub-tasks spread over the hosts: together they ran more than one at a time
    expect(Math.max(...report.hosts.map((h) => h.maxSessions))).toBeGreaterThan(1);
  });

  it('fits the memory slope by least squares', () => {
    expect(slope([[0, 10], [1, 12], [2, 14]])).toBeCloseTo(2);
    expect(slope([[0, 5], [1, 5], [2, 5]])).toBe(0);
    expect(slope([[3, 1]])).toBe(0);
  });
});
