/**
 * One benchmark measurement in this process; prints one JSON line.
 *   node --expose-gc --import tsx test/bench/worker.ts fanout 10000
 * The fan-out is warmed up first with a 1k run, so that JIT warm-up is not billed to the
 * measured run (both sizes get the same warm-up).
 */
import { commandCost, fanout, idle, inbox, natsLatency, spawnLatency } from './scenarios.js';

const [scenario, nText, parallelText] = process.argv.slice(2);
const n = Number(nText);
const parallel = parallelText ? Number(parallelText) : n;
const peakRssMb = () => process.resourceUsage().maxRSS / 1024;

let out: Record<string, unknown>;
switch (scenario) {
  case 'fanout': {
    await fanout(1000, Math.min(parallel, 1000));
    (globalThis as { gc?: () => void }).gc?.();
    const { wallMs } = await fanout(n, parallel);
    out = { wallMs, peakRssMb: peakRssMb() };
    break;
  }
  case 'idle':
    out = { ...(await idle(n)), peakRssMb: peakRssMb() };
    break;
  case 'spawn':
    await spawnLatency(1000);
    out = await spawnLatency(n);
    break;
  case 'inbox':
    await inbox(1000);
    out = { ...(await inbox(n)), peakRssMb: peakRssMb() };
    break;
  case 'nats':
    // n: hop samples; the second argument: remote spawns
    out = await natsLatency(n, parallel);
    break;
  case 'command':
    // n: commands per runner
    out = await commandCost(n);
    break;
  default:
    throw new Error(`unknown scenario ${scenario}; use fanout, idle, spawn, inbox, nats or command`);
}
console.log(JSON.stringify({ scenario, n, parallel, ...out }));
process.exit(0);
