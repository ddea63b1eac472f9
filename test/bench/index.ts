/**
 * `npm run bench`: runs every scenario several times, each in a fresh Node process (plain node,
 * so XState's production build, as users run it), and prints a table of medians against targets.
 *
 * BENCH_RUNS (default 5) sets the runs per scenario; the NATS rows take at most 3 (each run starts
 * its own nats-server: see test/nats/server.ts for where the binary comes from). BENCH_NATS=0
 * leaves the NATS rows out; without a nats-server binary the bench fails before it starts.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { natsServerBinary } from '../nats/server.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const NATS = process.env.BENCH_NATS !== '0';
const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));

if (NATS) {
  try {
    natsServerBinary();
  } catch (error) {
    console.error(`npm run bench: the NATS rows need a nats-server binary. ${error instanceof Error ? error.message : String(error)} (BENCH_NATS=0 leaves the NATS rows out.)`);
    process.exit(1);
  }
}

function measure(scenario: string, n: number, parallel?: number, runs = RUNS): Array<Record<string, number>> {
  const results: Array<Record<string, number>> = [];
  for (let i = 0; i < runs; i++) {
    const args = ['--expose-gc', '--import', 'tsx', worker, scenario, String(n), ...(parallel ? [String(parallel)] : [])];
    const out = execFileSync(process.execPath, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    results.push(JSON.parse(out.trim().split('\n').pop()!));
  }
  return results;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const med = (rs: Array<Record<string, number>>, key: string) => median(rs.map((r) => r[key]!));

const rows: Array<[string, string, string, boolean]> = [];
const spawn = measure('spawn', 2000);
const p50 = med(spawn, 'p50');
const p99 = med(spawn, 'p99');
rows.push(['sub-task spawn latency p50', `${(p50 * 1000).toFixed(0)} µs`, '', true]);
rows.push(['sub-task spawn latency p99', `${(p99 * 1000).toFixed(0)} µs`, '< 1 ms', p99 < 1]);

for (const [label, parallel] of [
  ['all N running at once', undefined],
  ['default 5 running, the rest waiting', 5],
] as const) {
  const f1k = measure('fanout', 1000, parallel);
  const f10k = measure('fanout', 10_000, parallel);
  const t1k = med(f1k, 'wallMs');
  const t10k = med(f10k, 'wallMs');
  rows.push([`fan-out 1,000 no-op sub-tasks (${label})`, `${t1k.toFixed(0)} ms`, '', true]);
  rows.push([`fan-out 10,000 no-op sub-tasks (${label})`, `${t10k.toFixed(0)} ms`, '< 1000 ms', t10k < 1000]);
  rows.push([`  linearity t(10k)/t(1k)`, (t10k / t1k).toFixed(1), '<= 12', t10k / t1k <= 12]);
  rows.push([`  peak RSS at 1,000 / 10,000`, `${med(f1k, 'peakRssMb').toFixed(0)}/${med(f10k, 'peakRssMb').toFixed(0)} MB`, '', true]);
}

for (const n of [1000, 10_000]) {
  const idle = measure('idle', n);
  const perIdle = med(idle, 'heapPerIdle');
  rows.push([`heap per live idle sub-task (+watchdog), N=${n.toLocaleString('en')}`, `${(perIdle / 1024).toFixed(1)} KB`, '<= 10 KB', perIdle <= 10 * 1024]);
}

const inboxRuns = measure('inbox', 20_000);
const perSecond = med(inboxRuns, 'perSecond');
rows.push(['inbox throughput, journaled to the file store (20,000 mixed messages)', `${Math.round(perSecond).toLocaleString('en')}/s`, '>= 10,000/s', perSecond >= 10_000]);

// each process takes the median of 20 commands per runner; the row is the median over processes
const commands = measure('command', 20);
const unconfined = med(commands, 'unconfinedMs');
const sandboxed = med(commands, 'sandboxedMs');
const sandboxedGit = med(commands, 'sandboxedGitMs');
rows.push(['run_command `true` unconfined, sandbox.mode none (median of 20)', `${unconfined.toFixed(1)} ms`, '', true]);
rows.push(['run_command `true` in the bubblewrap sandbox, plain directory', `${sandboxed.toFixed(1)} ms`, '', true]);
rows.push(['run_command `true` in the bubblewrap sandbox, git worktree', `${sandboxedGit.toFixed(1)} ms`, '', true]);
rows.push(['  cost of the sandbox per command (git worktree)', `+${(sandboxedGit - unconfined).toFixed(1)} ms`, '', true]);

let natsRuns = 0;
if (NATS) {
  // 1,000 round trips each way, 40 remote spawns (after warm-ups), on a private loopback server
  natsRuns = Math.min(RUNS, 3);
  const nats = measure('nats', 1000, 40, natsRuns);
  const ms = (key: string) => `${med(nats, key).toFixed(2)} ms`;
  rows.push(['NATS hop via the Transport (request/respond, ~1 KB JSON) p50', ms('hopP50'), '', true]);
  rows.push(['NATS hop via the Transport p99', ms('hopP99'), '', true]);
  rows.push(['  raw NATS request/reply, bare client, same payload p50', ms('rawP50'), '', true]);
  rows.push(['  raw NATS request/reply p99', ms('rawP99'), '', true]);
  rows.push(['remote sub-task spawn: enqueue -> started at the owner p50', ms('spawnP50'), '', true]);
  rows.push(['remote sub-task spawn: enqueue -> started at the owner p99 (of 40)', ms('spawnP99'), '', true]);
}

const width = Math.max(...rows.map((r) => r[0].length));
console.log(
  `\na2a benchmark: median of ${RUNS} runs${natsRuns ? ` (NATS rows: ${natsRuns})` : ''}, each in a fresh process (node ${process.version}, ${process.arch})\n`,
);
console.log(`${'measure'.padEnd(width)}  ${'value'.padStart(10)}  ${'target'.padEnd(10)}  ok`);
console.log(`${'-'.repeat(width)}  ${'-'.repeat(10)}  ${'-'.repeat(10)}  --`);
for (const [name, value, target, ok] of rows) {
  console.log(`${name.padEnd(width)}  ${value.padStart(10)}  ${target.padEnd(10)}  ${target ? (ok ? 'yes' : 'NO') : ''}`);
}
