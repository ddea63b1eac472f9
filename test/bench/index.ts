/**
 * `npm run bench`: runs every scenario several times, each in a fresh Node process (plain node,
 * so XState's production build, as users run it), and prints a table of medians against targets.
 *
 * BENCH_RUNS (default 5) sets the runs per scenario; the NATS rows take at most 3 (each run starts
 * its own nats-server: see test/nats/server.ts for where the binary comes from). BENCH_NATS=0
 * leaves the NATS rows out; without a nats-server binary the bench fails before it starts.
 */
import { execFileSync, spawn as spawnProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { natsServerBinary } from '../nats/server.js';

const JSON_OUT = process.argv.includes('--json');
const unknown = process.argv.slice(2).filter((a) => a !== '--json');
if (unknown.length) {
  console.error(`npm run bench: unknown argument ${unknown.join(' ')}; the only option is --json (one JSON line per row). Set BENCH_RUNS and BENCH_NATS in the environment.`);
  process.exit(2);
}
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

function measure(scenario: string, n: number, parallel?: number, runs = RUNS, exposeGc = true): Array<Record<string, number>> {
  const results: Array<Record<string, number>> = [];
  for (let i = 0; i < runs; i++) {
    const args = [...(exposeGc ? ['--expose-gc'] : []), '--import', 'tsx', worker, scenario, String(n), ...(parallel ? [String(parallel)] : [])];
    const out = execFileSync(process.execPath, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    results.push(JSON.parse(out.trim().split('\n').pop()!));
  }
  return results;
}

/** Runs `fn` (synchronous, as measure() is) while another process fans out 10k sub-tasks over and over. */
async function underLoad<T>(fn: () => T): Promise<T> {
  const load = spawnProcess(process.execPath, ['--import', 'tsx', worker, 'load', '10000'], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('npm run bench: the load process did not start within 30 s')), 30_000);
      load.once('exit', (code) => reject(new Error(`npm run bench: the load process ended (${code}) before it started`)));
      load.stdout!.once('data', () => (clearTimeout(timer), resolve()));
    });
    // into its first fan-out
    await new Promise((r) => setTimeout(r, 300));
    return fn();
  } finally {
    load.removeAllListeners('exit');
    load.kill('SIGKILL');
  }
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};
const med = (rs: Array<Record<string, number>>, key: string) => median(rs.map((r) => r[key]!));

/** One row of the table: what, the value shown, the number behind it, its target and whether it is met. */
interface Row {
  name: string;
  value: string;
  number: number;
  unit: string;
  target: string;
  ok: boolean | null;
}
const rows: Row[] = [];
const row = (name: string, number: number, unit: string, value: string, target = '', ok: boolean | null = null) =>
  rows.push({ name, value, number, unit, target, ok: target ? ok : null });

/**
 * The built CLI's start (dist/, as `npx a2a` runs it): a command's modules load when it runs, so a
 * start pays only for the CLI's frame. Median of 10 (5 for the OAuth example's whole run).
 */
const cli = fileURLToPath(new URL('../../dist/bin/a2a.js', import.meta.url));
function timed(args: string[], times: number): number {
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const started = process.hrtime.bigint();
    execFileSync(process.execPath, [cli, ...args], { stdio: 'ignore' });
    ms.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  return median(ms);
}
const version = timed(['--version'], 10);
row('CLI start: a2a --version (dist/)', version, 'ms', `${version.toFixed(0)} ms`);
const oauthWorkspace = mkdtempSync(join(tmpdir(), 'a2a-bench-oauth-'));
const oauth = timed(['run', fileURLToPath(new URL('../../examples/oauth', import.meta.url)), '--workspace', oauthWorkspace, '--no-tree'], 5);
row('  a2a run examples/oauth, start to exit (its scripted delays: 1.1 s)', oauth, 'ms', `${oauth.toFixed(0)} ms`);

const spawn = measure('spawn', 2000);
const p50 = med(spawn, 'p50');
const p99 = med(spawn, 'p99');
row('sub-task spawn latency p50', p50 * 1000, 'µs', `${(p50 * 1000).toFixed(0)} µs`);
row('sub-task spawn latency p99', p99 * 1000, 'µs', `${(p99 * 1000).toFixed(0)} µs`, '< 1 ms', p99 < 1);
// the same while another process fans out 10k sub-tasks over and over (the machine is busy)
const loaded = await underLoad(() => measure('spawn', 2000));
const p99Loaded = med(loaded, 'p99');
row('  spawn p99 while a 10k fan-out runs beside it', p99Loaded * 1000, 'µs', `${(p99Loaded * 1000).toFixed(0)} µs`, '< 1 ms', p99Loaded < 1);

for (const [label, parallel] of [
  ['all N running at once', undefined],
  ['default 5 running, the rest waiting', 5],
] as const) {
  const all = parallel === undefined;
  // the fan-out and the raw-XState baseline of the same size, each cold in a fresh process,
  // interleaved run by run (so that a busy moment of the machine weighs on both)
  const paired = (n: number) => {
    const fan: Array<Record<string, number>> = [];
    const base: Array<Record<string, number>> = [];
    for (let i = 0; i < RUNS; i++) {
      fan.push(...measure('fanout', n, parallel, 1));
      if (all) base.push(...measure('baseline', n, undefined, 1));
    }
    return { fan, base };
  };
  const f1k = paired(1000);
  const f10k = paired(10_000);
  const t1k = med(f1k.fan, 'wallMs');
  const t10k = med(f10k.fan, 'wallMs');
  for (const [n, runs, t] of [[1000, f1k, t1k], [10_000, f10k, t10k]] as const) {
    row(`fan-out ${n.toLocaleString('en')} no-op sub-tasks, cold (${label})`, t, 'ms', `${t.toFixed(0)} ms`);
    if (!all) continue;
    const base = med(runs.base, 'wallMs');
    row(`  raw XState, ${n.toLocaleString('en')} root actors, one event each (cold)`, base, 'ms', `${base.toFixed(0)} ms`);
    row(`  ratio to raw XState`, t / base, 'x', `${(t / base).toFixed(2)}x`, '<= 1.5x', t / base <= 1.5);
    // warm: each process runs it once, then measures the second run (a long-lived process's
    // fan-out: the JIT warmed up); the fan-out and the baseline interleaved as above
    const warmFan: Array<Record<string, number>> = [];
    const warmBase: Array<Record<string, number>> = [];
    for (let i = 0; i < RUNS; i++) {
      warmFan.push(...measure('fanout-warm', n, undefined, 1));
      warmBase.push(...measure('baseline-warm', n, undefined, 1));
    }
    const tw = med(warmFan, 'wallMs');
    const bw = med(warmBase, 'wallMs');
    row(`  the same warm (the second fan-out of a process)`, tw, 'ms', `${tw.toFixed(0)} ms`);
    row(`  raw XState warm`, bw, 'ms', `${bw.toFixed(0)} ms`);
    row(`  ratio to raw XState, warm`, tw / bw, 'x', `${(tw / bw).toFixed(2)}x`, '<= 1.5x', tw / bw <= 1.5);
  }
  row(`  linearity t(10k)/t(1k)`, t10k / t1k, '', (t10k / t1k).toFixed(1), '<= 10', t10k / t1k <= 10);
  const growth = med(f10k.fan, 'rssGrowthMb');
  row(`  peak RSS growth of the 10,000 fan-out`, growth, 'MB', `${growth.toFixed(0)} MB`, all ? '<= 120 MB' : '', growth <= 120);
  const gc = med(f10k.fan, 'gcShare') * 100;
  row(`  GC share of the 10,000 fan-out (gc pauses / wall)`, gc, '%', `${gc.toFixed(1)} %`, all ? '<= 15 %' : '', gc <= 15);
}

for (const n of [1000, 10_000]) {
  const idle = measure('idle', n);
  const perIdle = med(idle, 'heapPerIdle');
  row(`heap per live idle sub-task with its watchdog (a timer until an inquiry is due), N=${n.toLocaleString('en')}`, perIdle / 1024, 'KB', `${(perIdle / 1024).toFixed(1)} KB`, '<= 6 KB', perIdle <= 6 * 1024);
}
// past the idle threshold, in the grace period before the first inquiry: still a timer, no actor
const grace = med(measure('idle-grace', 1000), 'heapPerIdle');
row('  the same past the idle threshold, in the grace period, N=1,000', grace / 1024, 'KB', `${(grace / 1024).toFixed(1)} KB`, '<= 6 KB', grace <= 6 * 1024);
// the inquiry sent: the watchdog actor started (a bare XState actor is about 2.6 KB), the model thinking about the answer
const inquiry = med(measure('idle-inquiry', 1000), 'heapPerIdle');
row('  an inquiry in flight: watchdog actor started, the model call pending, N=1,000', inquiry / 1024, 'KB', `${(inquiry / 1024).toFixed(1)} KB`);
// a finished sub-task while its run goes on: its result delivered to the parent, which sits idle
const done = measure('finished', 10_000);
const perDone = med(done, 'heapPerFinished');
const familyPerDone = med(done, 'familyPerFinished');
row('heap per finished sub-task, result delivered, N=10,000 (the parent\'s conversation holds its results)', perDone, 'B', `${perDone.toFixed(0)} B`);
row("  of it what the family keeps (a slim record: status, output clipped to 500 characters)", familyPerDone, 'B', `${familyPerDone.toFixed(0)} B`, '<= 200 B', familyPerDone <= 200);

const memoryInbox = med(measure('inbox-memory', 20_000), 'perSecond');
row('inbox throughput, in memory (20,000 mixed messages)', memoryInbox, '/s', `${Math.round(memoryInbox).toLocaleString('en')}/s`, '>= 200,000/s', memoryInbox >= 200_000);
const perSecond = med(measure('inbox', 20_000), 'perSecond');
row('inbox throughput, journaled to the file store', perSecond, '/s', `${Math.round(perSecond).toLocaleString('en')}/s`, '>= 80,000/s', perSecond >= 80_000);

// each process takes the median of 20 commands per runner; the row is the median over processes
const commands = measure('command', 20);
const unconfined = med(commands, 'unconfinedMs');
const sandboxed = med(commands, 'sandboxedMs');
const sandboxedGit = med(commands, 'sandboxedGitMs');
const commandMs = (name: string, key: string) => row(name, med(commands, key), 'ms', `${med(commands, key).toFixed(1)} ms`);
row('run_command `true` unconfined, sandbox.mode none (median of 20)', unconfined, 'ms', `${unconfined.toFixed(1)} ms`);
commandMs('  bwrap alone, same namespaces and mounts, no limits (plain directory)', 'bwrapOnlyMs');
row('run_command `true` in the bubblewrap sandbox, plain directory', sandboxed, 'ms', `${sandboxed.toFixed(1)} ms`);
commandMs('  with network: true (slirp4netns)', 'networkMs');
row('run_command `true` in the bubblewrap sandbox, git worktree', sandboxedGit, 'ms', `${sandboxedGit.toFixed(1)} ms`);
row('  cost of the sandbox per command (git worktree)', sandboxedGit - unconfined, 'ms', `+${(sandboxedGit - unconfined).toFixed(1)} ms`);
commandMs('run_command `true`, a worktree of 50,000 files, hard-link scan on (default)', 'largeScanMs');
commandMs('  the same with outsideHardLinks: allow (no scan)', 'largeNoScanMs');
row('    cost of the scan per command (5,000 directories)', med(commands, 'largeScanMs') - med(commands, 'largeNoScanMs'), 'ms', `+${(med(commands, 'largeScanMs') - med(commands, 'largeNoScanMs')).toFixed(1)} ms`);
commandMs("  that worktree's first scan (every directory read, every file looked at)", 'firstScanMs');

// a sub-task delegated over the Agent2Agent protocol on loopback, against the same sub-task in process
const roundTrips = measure('a2a', 20, undefined, Math.min(RUNS, 3));
const direct = med(roundTrips, 'directP50');
const viaSdk = med(roundTrips, 'sdkP50');
const viaA2a = med(roundTrips, 'a2aP50');
row('run with one sub-task, in process (p50 of 20)', direct, 'ms', `${direct.toFixed(1)} ms`);
row('  the sub-task sent over A2A to an SDK-built agent (loopback)', viaSdk, 'ms', `${viaSdk.toFixed(1)} ms`);
row('    cost of the A2A round trip', viaSdk - direct, 'ms', `+${(viaSdk - direct).toFixed(1)} ms`);
row('  the sub-task sent over A2A to another a2a (a2a serve --a2a)', viaA2a, 'ms', `${viaA2a.toFixed(1)} ms`);
row('    cost of the round trip, the served run included', viaA2a - direct, 'ms', `+${(viaA2a - direct).toFixed(1)} ms`);
// both warm, measured in turn in each process (see a2aFanout); the ratios are the medians of the processes'
const fanned = measure('a2a-fanout', 1000);
const fanDirect = med(fanned, 'directMs');
const fanServed = med(fanned, 'servedMs');
const fanRatio = med(fanned, 'ratio');
const fanCpu = med(fanned, 'cpuRatio');
row('a task of 1,000 parallel sub-tasks, run directly (warm)', fanDirect, 'ms', `${fanDirect.toFixed(0)} ms`);
row('  the same task sent to a2a serve --a2a, streamed to its end (warm)', fanServed, 'ms', `${fanServed.toFixed(0)} ms`);
row('    ratio (2,004 A2A events logged and sent)', fanRatio, 'x', `${fanRatio.toFixed(2)}x`, '<= 1.5x', fanRatio <= 1.5);
row("    the same in CPU time of the process's main thread", fanCpu, 'x', `${fanCpu.toFixed(2)}x`);

/** `off` and `on` runs of the 1,000-sub-task run (file store), interleaved pair by pair. */
function pairs(off: string, on: string): { off: Array<Record<string, number>>; on: Array<Record<string, number>> } {
  const out = { off: [] as Array<Record<string, number>>, on: [] as Array<Record<string, number>> };
  for (let i = 0; i < RUNS; i++) {
    out.off.push(...measure(off, 1000, undefined, 1));
    out.on.push(...measure(on, 1000, undefined, 1));
  }
  return out;
}

/** A row of what `on` costs over `off`, in % (signed), against a limit in %. */
function costRow(name: string, on: number, off: number, limitPct: number): void {
  const pct = (on / off - 1) * 100;
  row(name, pct, '%', `${pct >= 0 ? '+' : ''}${pct.toFixed(1)} %`, `<= ${limitPct} %`, pct <= limitPct);
}

// tracing: the same 1,000-sub-task run without and with spans exported
const tracing = pairs('untraced', 'traced');
const tOff = med(tracing.off, 'wallMs');
const tOn = med(tracing.on, 'wallMs');
const cpuOff = med(tracing.off, 'cpuMs');
const cpuOn = med(tracing.on, 'cpuMs');
row('a run of 1,000 parallel sub-tasks, file store, no tracing', tOff, 'ms', `${tOff.toFixed(0)} ms`);
row('  with every span exported over OTLP/HTTP (about 3,000 spans)', tOn, 'ms', `${tOn.toFixed(0)} ms`);
costRow('    overhead of tracing, wall time', tOn, tOff, 5);
if (cpuOff > 0) costRow("    overhead of tracing, CPU of the run's thread", cpuOn, cpuOff, 5);
const load = med(tracing.on, 'loadMs');
row('  starting the export (its thread and modules; once per process)', load, 'ms', `${load.toFixed(0)} ms`);

// the effect journal: the same run without it (effects.journal: false) and with it (the default);
// then the OAuth example without and with it
const journal = pairs('unjournaled', 'untraced');
const jOff = med(journal.off, 'wallMs');
const jOn = med(journal.on, 'wallMs');
const jCpuOff = med(journal.off, 'cpuMs');
const jCpuOn = med(journal.on, 'cpuMs');
row('a run of 1,000 parallel sub-tasks, file store, no effect journal', jOff, 'ms', `${jOff.toFixed(0)} ms`);
row('  with the effect journal (1,001 model replies recorded)', jOn, 'ms', `${jOn.toFixed(0)} ms`);
costRow('    cost of the journal, wall time', jOn, jOff, 5);
if (jCpuOff > 0) costRow("    cost of the journal, CPU of the run's thread", jCpuOn, jCpuOff, 5);
const noJournal = join(oauthWorkspace, 'no-journal.json');
writeFileSync(noJournal, JSON.stringify({ effects: { journal: false } }));
const oauthArgs = ['run', fileURLToPath(new URL('../../examples/oauth', import.meta.url)), '--workspace', oauthWorkspace, '--no-tree'];
const oauthRuns = { on: [] as number[], off: [] as number[] };
for (let i = 0; i < RUNS; i++) {
  oauthRuns.off.push(timed([...oauthArgs, '--config', noJournal], 1));
  oauthRuns.on.push(timed(oauthArgs, 1));
}
const oOn = median(oauthRuns.on);
const oOff = median(oauthRuns.off);
row('a2a run examples/oauth without the effect journal (start to exit)', oOff, 'ms', `${oOff.toFixed(0)} ms`);
row('  with it', oOn, 'ms', `${oOn.toFixed(0)} ms`);
costRow('    cost of the journal, wall time', oOn, oOff, 5);

let natsRuns = 0;
if (NATS) {
  // 1,000 round trips each way, 40 remote spawns (after warm-ups), on a private loopback server
  natsRuns = Math.min(RUNS, 3);
  const nats = measure('nats', 1000, 40, natsRuns);
  const ms = (name: string, key: string) => row(name, med(nats, key), 'ms', `${med(nats, key).toFixed(2)} ms`);
  ms('NATS hop via the Transport (request/respond, ~1 KB JSON) p50', 'hopP50');
  ms('NATS hop via the Transport p99', 'hopP99');
  ms('  raw NATS request/reply, bare client, same payload p50', 'rawP50');
  ms('  raw NATS request/reply p99', 'rawP99');
  ms('remote sub-task spawn: enqueue -> started at the owner p50', 'spawnP50');
  ms('remote sub-task spawn: enqueue -> started at the owner p99 (of 40)', 'spawnP99');
  // a host of 4 slots given 200 spawns of 20 ms sessions at once: a slot freed -> the next started
  const refill = measure('refill', 200, 4, natsRuns);
  const r50 = med(refill, 'refillP50');
  const r99 = med(refill, 'refillP99');
  row('host slot freed -> next queued session started p50 (4 slots, 200 x 20 ms)', r50, 'ms', `${r50.toFixed(2)} ms`, '<= 5 ms', r50 <= 5);
  row('host slot freed -> next queued session started p99', r99, 'ms', `${r99.toFixed(2)} ms`, '<= 25 ms', r99 <= 25);
  const rWall = med(refill, 'refillWallMs');
  row('  those 200 sessions, first spawn to last result (floor 1,000 ms of work)', rWall, 'ms', `${rWall.toFixed(0)} ms`);
  // two idle hosts, 5,000 records of past sessions in the bucket: heartbeats read none of them
  const idleHosts = measure('idle-hosts', 5000, undefined, Math.min(natsRuns, 2), false);
  const hostsCpu = med(idleHosts, 'idleHostsCpuPct');
  const serverCpu = med(idleHosts, 'idleServerCpuPct');
  row('two idle hosts, 5,000 past records in the bucket: their CPU (% of a core)', hostsCpu, '%', `${hostsCpu.toFixed(1)} %`, '<= 5 %', hostsCpu <= 5);
  row("  the nats-server's CPU meanwhile", serverCpu, '%', `${serverCpu.toFixed(1)} %`, '<= 5 %', serverCpu <= 5);
  // each host reads its own box pair (up-h-<id>, down-h-<id>) and the hosts share one spawn consumer per agent type: 2 hosts, 1 type
  row('  consumers on the server after 10 s idle (2 per host, 1 per agent type)', med(idleHosts, 'idleConsumers'), '', String(med(idleHosts, 'idleConsumers')), '<= 5', med(idleHosts, 'idleConsumers') <= 5);
}

if (JSON_OUT) {
  // one JSON line per row, for tracking across commits
  const at = new Date().toISOString();
  for (const r of rows) console.log(JSON.stringify({ at, name: r.name.trim(), value: r.number, unit: r.unit, target: r.target || null, ok: r.ok, runs: RUNS, node: process.version }));
} else {
  const width = Math.max(...rows.map((r) => r.name.length));
  console.log(
    `\na2a benchmark: median of ${RUNS} runs${natsRuns ? ` (NATS rows: ${natsRuns})` : ''}, each in a fresh process (node ${process.version}, ${process.arch})\n`,
  );
  console.log(`${'measure'.padEnd(width)}  ${'value'.padStart(10)}  ${'target'.padEnd(12)}  ok`);
  console.log(`${'-'.repeat(width)}  ${'-'.repeat(10)}  ${'-'.repeat(12)}  --`);
  for (const r of rows) console.log(`${r.name.padEnd(width)}  ${r.value.padStart(10)}  ${r.target.padEnd(12)}  ${r.ok === null ? '' : r.ok ? 'yes' : 'NO'}`);
}
