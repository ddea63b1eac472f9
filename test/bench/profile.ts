/**
 * `npm run bench:profile`: a CPU profile of the fan-out (worker.ts in one fresh process, the
 * profiler on for the fan-out only, sampling every 100 µs), then
 *   - the share of each group of code: XState, garbage collection, the project's files, other
 *     (Node, zod, the rest of node_modules);
 *   - where a sub-task's time goes, phase by phase (see PHASES in phases.ts): each sample goes to
 *     the phase of the innermost project function on its stack that belongs to one (XState's and
 *     zod's work is the phase's that called it);
 *   - the top self-time functions, named by their place in the TypeScript sources.
 * With `--alloc`, the bytes allocated instead (V8's sampling heap profiler, collected objects
 * included), by group and by phase: what the garbage collector has to deal with, and unlike CPU
 * time not moved by a busy machine.
 *
 *   npm run bench:profile                    # 10,000 sub-tasks, cold (the first thing the process does)
 *   npm run bench:profile -- 1000            # another size
 *   npm run bench:profile -- 1000 --warm     # the second fan-out of a process (the JIT warmed up)
 *   npm run bench:profile -- 1000 --alloc    # bytes allocated per sub-task, by phase
 *
 * The profile is kept (its path is printed): a .cpuprofile opens in Chrome DevTools or speedscope.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { groupOf, lexicalChain, PHASES, phaseOfFrame, projectFile, root, type Frame, type Group, type Phase } from './phases.js';

interface ProfileNode {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
interface HeapNode {
  callFrame: Frame;
  selfSize: number;
  children: HeapNode[];
}

const args = process.argv.slice(2);
const warm = args.includes('--warm');
const alloc = args.includes('--alloc');
const sizes = args.filter((a) => a !== '--warm' && a !== '--alloc');
const n = Number(sizes[0] ?? 10_000);
if (!Number.isInteger(n) || n < 1 || sizes.length > 1) {
  console.error(`npm run bench:profile: give the number of sub-tasks, and optionally --warm and --alloc (got ${args.join(' ')})`);
  process.exit(2);
}
const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));
const kind = warm ? 'warm (the second in its process)' : 'cold';
const OUTSIDE = 'outside the phases (event loop, Node)';

const dir = mkdtempSync(join(tmpdir(), 'a2a-profile-'));
const file = join(dir, `fanout-${warm ? 'warm-' : ''}${n}.${alloc ? 'heapprofile' : 'cpuprofile'}`);
const run = (scenario: string, env: NodeJS.ProcessEnv = process.env) =>
  JSON.parse(
    execFileSync(process.execPath, ['--enable-source-maps', '--expose-gc', '--import', 'tsx', worker, scenario, String(n)], { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'inherit'] })
      .trim()
      .split('\n')
      .pop()!,
  ) as { wallMs: number };

/** A table of the phases: for each, its total, its share, per sub-task, and how much of it each group is. */
function phaseTable(phases: Map<string, Record<Group, number>>, unit: (total: number) => string, perTask: (total: number) => string, header: string): void {
  let total = 0;
  const groups: Record<Group, number> = { XState: 0, GC: 0, project: 0, other: 0 };
  for (const g of phases.values()) {
    for (const k of Object.keys(groups) as Group[]) {
      groups[k] += g[k];
      total += g[k];
    }
  }
  console.log(header);
  for (const [phase, g] of phases) {
    const all = g.XState + g.GC + g.project + g.other;
    if (phase === 'garbage collection' && all === 0) continue;
    const part = (v: number) => (phase === 'garbage collection' || all === 0 ? '' : `${((100 * v) / all).toFixed(0)} %`);
    console.log(`| ${phase} | ${unit(all)} | ${((100 * all) / total).toFixed(1)} % | ${perTask(all)} | ${part(g.XState)} | ${part(g.project)} | ${part(g.other)} |`);
  }
  const share = (v: number) => `${((100 * v) / total).toFixed(0)} %`;
  console.log(`| total | ${unit(total)} | 100 % | ${perTask(total)} | ${share(groups.XState)} | ${share(groups.project)} | ${share(groups.other)} |\n`);
}

const emptyPhases = () => {
  const phases = new Map<string, Record<Group, number>>();
  for (const phase of [...PHASES, OUTSIDE, 'garbage collection']) phases.set(phase, { XState: 0, GC: 0, project: 0, other: 0 });
  return phases;
};

if (alloc) {
  const measured = run(warm ? 'fanout-warm' : 'fanout', { ...process.env, BENCH_ALLOC: file });
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: HeapNode };
  // a native frame's bytes (a Set, an array's copy) are its caller's: group and phase come down the tree
  const phases = emptyPhases();
  const functions = new Map<string, { bytes: number; group: Group }>();
  const walk = (node: HeapNode, group: Group, phase: Phase | null): void => {
    const frame = node.callFrame;
    const own = frame.url ? groupOf(frame) : group;
    const here = phaseOfFrame(frame) ?? phase;
    if (node.selfSize > 0) {
      phases.get(here ?? OUTSIDE)![own] += node.selfSize;
      const key = `${frameName(frame)}  ${where(frame)}`;
      const entry = functions.get(key) ?? { bytes: 0, group: own };
      entry.bytes += node.selfSize;
      functions.set(key, entry);
    }
    for (const child of node.children) walk(child, own, here);
  };
  walk(profile.head, 'other', null);
  console.log(`\nBytes allocated by the fan-out of ${n.toLocaleString('en')} sub-tasks, ${kind} (collected objects included; sampled every 1 KB): ${measured.wallMs.toFixed(0)} ms wall with the sampler on`);
  console.log(`profile: ${file}\n`);
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  phaseTable(phases, (b) => `${(b / 2 ** 20).toFixed(0)} MB`, (b) => `${kb(b / n)} KB`, `Bytes allocated by phase of a sub-task (${n.toLocaleString('en')} sub-tasks, ${kind}; a callee's bytes counted in the phase that called it)\n\n| phase | allocated | share | per sub-task | XState | project | other |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |`);
  console.log('top allocating functions (bytes per sub-task)');
  for (const [key, { bytes, group }] of [...functions.entries()].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 30)) console.log(`${String(Math.round(bytes / n)).padStart(7)} B  ${group.padEnd(7)}  ${key}`);
  process.exit(0);
}

/** A frame's name: a project function's by its place in the sources (the function and the one around it). */
function frameName(frame: Frame): string {
  const own = projectFile(frame);
  const name = own ? lexicalChain(join(root, own), frame.lineNumber, frame.columnNumber).slice(-2).join(' › ') || frame.functionName : frame.functionName;
  return name || '(anonymous)';
}
function where(frame: Frame): string {
  const url = frame.url.replace(/^file:\/\//, '');
  const place = projectFile(frame) ?? (url.startsWith(root) ? relative(root, url).replace(/^node_modules\//, '') : url || '(native)');
  return `${place}${url ? `:${frame.lineNumber + 1}` : ''}`;
}

const measured = run(warm ? 'fanout-warm' : 'fanout', { ...process.env, BENCH_PROFILE: file });
const baseline = run(warm ? 'baseline-warm' : 'baseline');
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
// the profiler's own start (an inspector call) is not the fan-out's: its subtree is left out
const profilerOwn = (id: number): boolean => {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) if (byId.get(at)!.callFrame.url === 'node:inspector') return true;
  return false;
};
/** The phase of a node: its innermost frame that has one (memoized by node: a node is a whole stack). */
const phaseMemo = new Map<number, Phase | null>();
function phaseOf(id: number): Phase | null {
  if (phaseMemo.has(id)) return phaseMemo.get(id)!;
  const own = phaseOfFrame(byId.get(id)!.callFrame);
  const parent = parentOf.get(id);
  const phase = own ?? (parent === undefined ? null : phaseOf(parent));
  phaseMemo.set(id, phase);
  return phase;
}

const selfUs = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));

const functions = new Map<string, { us: number; group: Group }>();
const groups: Record<Group, number> = { XState: 0, GC: 0, project: 0, other: 0 };
const phases = emptyPhases();
let total = 0;
for (const [id, us] of selfUs) {
  const frame = byId.get(id)!.callFrame;
  if (profilerOwn(id)) continue;
  if (frame.functionName === '(idle)' || frame.functionName === '(program)' || frame.functionName === '(root)') continue;
  const group = groupOf(frame);
  const key = `${frameName(frame)}  ${where(frame)}`;
  const entry = functions.get(key) ?? { us: 0, group };
  entry.us += us;
  functions.set(key, entry);
  groups[group] += us;
  const phase = group === 'GC' ? 'garbage collection' : (phaseOf(id) ?? OUTSIDE);
  phases.get(phase)![group] += us;
  total += us;
}

const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
console.log(
  `\nCPU profile of the fan-out of ${n.toLocaleString('en')} sub-tasks, ${kind}: ${measured.wallMs.toFixed(0)} ms wall (raw-XState baseline, ${warm ? 'warm' : 'cold'} in its own process: ${baseline.wallMs.toFixed(0)} ms, ratio ${(measured.wallMs / baseline.wallMs).toFixed(2)}; with the profiler on)`,
);
console.log(`profile: ${file}\n`);
console.log('group      self time   share');
for (const group of ['XState', 'GC', 'project', 'other'] as const) console.log(`${group.padEnd(9)} ${ms(groups[group])}  ${pct(groups[group])}`);
console.log(`${'total'.padEnd(9)} ${ms(total)}\n`);

// the phase table, in Markdown (it goes into the documentation as it is)
phaseTable(
  phases,
  (us) => (us / 1000).toFixed(0),
  (us) => (us / n).toFixed(1),
  `CPU time by phase of a sub-task (${n.toLocaleString('en')} sub-tasks, ${kind}; XState's, zod's and Node's work counted in the phase that called it)\n\n| phase | CPU ms | share | µs per sub-task | XState | project | other |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |`,
);

console.log('top self-time functions');
const top = [...functions.entries()].sort((a, b) => b[1].us - a[1].us).slice(0, 30);
for (const [key, { us, group }] of top) console.log(`${ms(us)}  ${pct(us)}  ${group.padEnd(7)}  ${key}`);
