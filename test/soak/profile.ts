/**
 * Where a nats-server's memory goes under the soak's load: a 3-node cluster started with Go's
 * profiling port (prof_port, loopback), the soak run for `--minutes`, and each node's heap profile
 * (in-use bytes by allocating function, from /debug/pprof/heap?debug=1) printed at the first
 * minute and at the end, the largest growth first. `npx tsx test/soak/profile.ts --minutes 8`.
 */
import { parseArgs } from 'node:util';
import { freePort, startNatsCluster } from '../nats/server.js';
import { soak } from './soak.js';
import { heap } from './serverHeap.js';

const { values } = parseArgs({ options: { minutes: { type: 'string' } } });
const minutes = Number(values.minutes ?? 8);
const ports = await Promise.all([0, 1, 2].map(() => freePort()));
const cluster = await startNatsCluster(3, { extraConfig: (i) => `prof_port: ${ports[i]}` });

/** The Go runtime's memory figures (MB) from the profile's MemStats footer. */
async function memStats(port: number): Promise<string> {
  const text = await (await fetch(`http://127.0.0.1:${port}/debug/pprof/heap?debug=1`)).text();
  const pick = (name: string) => Number(new RegExp(`# ${name} = (\\d+)`).exec(text)?.[1] ?? NaN);
  const mb = (name: string) => `${name} ${(pick(name) / 1048576).toFixed(1)}`;
  return [mb('Sys'), mb('HeapSys'), mb('HeapInuse'), mb('HeapIdle'), mb('HeapReleased'), mb('Stack'), mb('MSpan'), mb('OtherSys'), mb('GCSys'), `NumGC ${pick('NumGC')}`].join(' · ');
}
const memTimer = setInterval(() => {
  void Promise.all(ports.map((p) => memStats(p))).then((lines) => lines.forEach((l, i) => console.log(`  n${i + 1} go: ${l}`)));
}, 60_000);

const first: Array<Map<string, number>> = [];
// after warm-up: the deduplication windows (2 min) filled
const firstAt = Math.min(3, minutes / 3) * 60_000;
const t = setTimeout(async () => {
  for (const p of ports) first.push(await heap(p));
  console.log(`heap profiles taken at ${firstAt / 60_000} min`);
}, firstAt);
try {
  const report = await soak({ durationMs: minutes * 60_000, workers: 4, parts: 5, partMs: 100, warmup: 0.2, cluster, sampleMs: 60_000, progress: (line) => { if (line.startsWith('servers')) console.log(line.slice(0, 160)); } });
  clearTimeout(t);
  clearInterval(memTimer);
  console.log(`sessions/s ${report.sessionsPerSec.toFixed(1)}, lost ${report.lost.length}, duplicated ${report.duplicated.length}`);
  for (let i = 0; i < ports.length; i++) {
    const now = await heap(ports[i]!);
    const before = first[i] ?? new Map();
    const total = [...now.values()].reduce((a, b) => a + b, 0);
    console.log(`\nnode n${i + 1}: live heap ${(total / 1048576).toFixed(1)} MB (estimated from the samples); growth since the first profile by function:`);
    const rows = [...now.entries()].map(([k, v]) => [k, v, v - (before.get(k) ?? 0)] as const).sort((a, b) => b[2] - a[2]).slice(0, 15);
    for (const [k, v, d] of rows) console.log(`  ${(d / 1048576).toFixed(1).padStart(7)} MB grown  ${(v / 1048576).toFixed(1).padStart(7)} MB now  ${k}`);
  }
} finally {
  await cluster.stop();
}
