/**
 * One benchmark measurement in this process; prints one JSON line.
 *   node --expose-gc --import tsx test/bench/worker.ts fanout 10000
 * The fan-out runs cold (the first thing the process does), as does the raw-XState baseline
 * (baseline.ts) in a process of its own.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { rawXState } from './baseline.js';
import { a2aFanout, a2aRoundTrip, commandCost, fanout, idle, inbox, natsLatency, slotRefill, idleHosts, spawnLatency, tracedFanout } from './scenarios.js';

const [scenario, nText, parallelText] = process.argv.slice(2);
const n = Number(nText);
const parallel = parallelText ? Number(parallelText) : n;
/** BENCH_PROFILE=<file>: a CPU profile of the measured fan-out only (not of loading the modules or the baseline). */
async function startProfile(): Promise<(file: string) => Promise<void>> {
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
  return async (file) => {
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(file, JSON.stringify(profile));
    session.disconnect();
  };
}

const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

let out: Record<string, unknown>;
switch (scenario) {
  case 'fanout': {
    // cold: the first thing this process does (a user's first run)
    const rss0 = process.memoryUsage().rss;
    const profiler = process.env.BENCH_PROFILE ? await startProfile() : null;
    let gcMs = 0;
    const gcs = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) gcMs += entry.duration;
    });
    gcs.observe({ entryTypes: ['gc'] });
    const { wallMs } = await fanout(n, parallel);
    // gc entries are delivered on a later turn of the event loop
    await new Promise((resolve) => setTimeout(resolve, 20));
    gcs.disconnect();
    await profiler?.(process.env.BENCH_PROFILE!);
    const peak = peakRssMb();
    out = { wallMs, gcShare: gcMs / wallMs, peakRssMb: peak, rssGrowthMb: peak - rss0 / 2 ** 20 };
    break;
  }
  case 'baseline': {
    // the raw-XState baseline, cold as the fan-out is, in a process of its own
    const { wallMs } = await rawXState(n);
    out = { wallMs, peakRssMb: peakRssMb() };
    break;
  }
  case 'idle':
  case 'idle-watched':
    out = { ...(await idle(n, scenario === 'idle-watched')), peakRssMb: peakRssMb() };
    break;
  case 'spawn':
    await spawnLatency(1000);
    out = await spawnLatency(n);
    break;
  case 'inbox':
  case 'inbox-memory': {
    const journaled = scenario === 'inbox';
    await inbox(1000, journaled);
    out = { ...(await inbox(n, journaled)), peakRssMb: peakRssMb() };
    break;
  }
  case 'load': {
    // background load for the spawn row: fan-outs of 10k, one after another, until killed
    console.log('ready');
    for (;;) await fanout(10_000);
  }
  case 'nats':
    // n: hop samples; the second argument: remote spawns
    out = await natsLatency(n, parallel);
    break;
  case 'refill':
    // n: sessions queued at once on a host of `parallel` slots
    out = await slotRefill(n, parallel);
    break;
  case 'idle-hosts':
    // n: records of past sessions in the snapshots bucket
    out = await idleHosts(n);
    break;
  case 'command':
    // n: commands per runner
    out = await commandCost(n);
    break;
  case 'a2a':
    // n: runs per kind (direct, an SDK-built A2A server, another a2a)
    out = await a2aRoundTrip(n);
    break;
  case 'a2a-fanout':
    // n: sub-tasks of the one task
    out = await a2aFanout(n);
    break;
  case 'traced':
  case 'untraced':
  case 'unjournaled':
    // n: sub-tasks of the one worker; traced: spans exported over OTLP/HTTP; unjournaled: no effect journal
    out = await tracedFanout(n, scenario === 'traced' ? 'on' : 'off', scenario !== 'unjournaled');
    break;
  default:
    throw new Error(`unknown scenario ${scenario}; use fanout, baseline, idle, idle-watched, spawn, inbox, inbox-memory, load, nats, refill, idle-hosts, command, a2a, a2a-fanout, traced, untraced or unjournaled`);
}
console.log(JSON.stringify({ scenario, n, parallel, ...out }));
process.exit(0);
