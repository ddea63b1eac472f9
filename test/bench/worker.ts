/**
 * One benchmark measurement in this process; prints one JSON line.
 *   node --expose-gc --import tsx test/bench/worker.ts fanout 10000
 * The fan-out runs cold (the first thing the process does), as does the raw-XState baseline
 * (baseline.ts) in a process of its own. `fanout-warm` and `baseline-warm` run it once first
 * (the JIT warmed up, the modules' lazy state made), collect the garbage, and measure a second run:
 * a long-lived process's second fan-out.
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { rawXState } from './baseline.js';
import { a2aFanout, a2aRoundTrip, commandCost, fanout, finished, idle, inbox, natsLatency, slotRefill, idleHosts, spawnLatency, tracedFanout } from './scenarios.js';

const [scenario, nText, parallelText] = process.argv.slice(2);
const n = Number(nText);
const parallel = parallelText ? Number(parallelText) : n;
/**
 * BENCH_PROFILE=<file>: a CPU profile of the measured fan-out (or baseline) only: not of loading
 * the modules, nor of a warm run's first. BENCH_ALLOC=<file>: a sampling heap profile of it
 * instead (every allocation sampled about every 1 KB, collected objects included: what the
 * garbage collector has to deal with). Run with --enable-source-maps (profile.ts does), the
 * project's frames are given their places in the TypeScript sources: tsx runs each file as one
 * line of JavaScript, so a frame's own place says only which file it is in.
 */
async function startProfile(): Promise<(file: string) => Promise<void>> {
  const { Session } = await import('node:inspector/promises');
  const { writeFileSync } = await import('node:fs');
  const { findSourceMap } = await import('node:module');
  const session = new Session();
  session.connect();
  const heap = !process.env.BENCH_PROFILE && !!process.env.BENCH_ALLOC;
  if (heap) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true } as never);
  } else {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
  }
  const toSource = (node: { callFrame: { url: string; lineNumber: number; columnNumber: number }; positionTicks?: unknown }) => {
    const frame = node.callFrame;
    if (!frame.url.startsWith('file://') || frame.url.includes('/node_modules/') || frame.lineNumber < 0) return;
    const entry = findSourceMap(frame.url)?.findEntry(frame.lineNumber, frame.columnNumber) as { originalLine?: number; originalColumn?: number } | undefined;
    if (entry?.originalLine === undefined) return;
    frame.lineNumber = entry.originalLine;
    frame.columnNumber = entry.originalColumn!;
    // its ticks' lines are the generated code's
    delete node.positionTicks;
  };
  return async (file) => {
    if (heap) {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      const walk = (node: typeof profile.head): void => {
        toSource(node);
        for (const child of node.children) walk(child);
      };
      walk(profile.head);
      writeFileSync(file, JSON.stringify(profile));
    } else {
      const { profile } = await session.post('Profiler.stop');
      for (const node of profile.nodes) toSource(node);
      writeFileSync(file, JSON.stringify(profile));
    }
    session.disconnect();
  };
}

const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

let out: Record<string, unknown>;
switch (scenario) {
  case 'fanout':
  case 'fanout-warm': {
    if (scenario === 'fanout-warm') {
      await fanout(n, parallel);
      (globalThis as { gc?: () => void }).gc?.();
    }
    // cold: the first thing this process does (a user's first run); warm: the second
    const rss0 = process.memoryUsage().rss;
    const profiler = process.env.BENCH_PROFILE || process.env.BENCH_ALLOC ? await startProfile() : null;
    let gcMs = 0;
    const gcs = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) gcMs += entry.duration;
    });
    gcs.observe({ entryTypes: ['gc'] });
    const cpu0 = process.cpuUsage();
    const { wallMs } = await fanout(n, parallel);
    const cpu = process.cpuUsage(cpu0);
    // gc entries are delivered on a later turn of the event loop
    await new Promise((resolve) => setTimeout(resolve, 20));
    gcs.disconnect();
    await profiler?.((process.env.BENCH_PROFILE || process.env.BENCH_ALLOC)!);
    const peak = peakRssMb();
    // cpuMs: the process's CPU time (all its threads), less moved by a busy machine than the wall time
    out = { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, gcShare: gcMs / wallMs, peakRssMb: peak, rssGrowthMb: peak - rss0 / 2 ** 20 };
    break;
  }
  case 'baseline':
  case 'baseline-warm': {
    // the raw-XState baseline, cold (or warm) as the fan-out is, in a process of its own
    if (scenario === 'baseline-warm') {
      await rawXState(n);
      (globalThis as { gc?: () => void }).gc?.();
    }
    let gcMs = 0;
    const gcs = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) gcMs += entry.duration;
    });
    gcs.observe({ entryTypes: ['gc'] });
    const profiler = process.env.BENCH_PROFILE ? await startProfile() : null;
    const cpu0 = process.cpuUsage();
    const { wallMs } = await rawXState(n);
    const cpu = process.cpuUsage(cpu0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    gcs.disconnect();
    await profiler?.(process.env.BENCH_PROFILE!);
    out = { wallMs, cpuMs: (cpu.user + cpu.system) / 1000, gcShare: gcMs / wallMs, peakRssMb: peakRssMb() };
    break;
  }
  case 'idle':
  case 'idle-grace':
  case 'idle-inquiry': {
    const mode = scenario === 'idle' ? 'idle' : scenario === 'idle-grace' ? 'grace' : 'inquiry';
    // a small run first: the code the sessions run is compiled once per process (about 1 KB a
    // sub-task of a cold 1,000), not per sub-task
    await idle(100, mode);
    out = { ...(await idle(n, mode)), peakRssMb: peakRssMb() };
    break;
  }
  case 'finished':
    out = { ...(await finished(n)), peakRssMb: peakRssMb() };
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
    throw new Error(`unknown scenario ${scenario}; use fanout, fanout-warm, baseline, baseline-warm, idle, idle-grace, idle-inquiry, finished, spawn, inbox, inbox-memory, load, nats, refill, idle-hosts, command, a2a, a2a-fanout, traced, untraced or unjournaled`);
}
console.log(JSON.stringify({ scenario, n, parallel, ...out }));
process.exit(0);
