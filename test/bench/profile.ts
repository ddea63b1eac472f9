/**
 * `npm run bench:profile`: a CPU profile of the cold 10k fan-out (worker.ts in one fresh process,
 * the profiler on for the fan-out only, sampling every 100 µs), then the top self-time functions and the share of each group:
 * XState, garbage collection, the project's files, other (Node, zod, the rest of node_modules).
 *
 *   npm run bench:profile            # 10,000 sub-tasks
 *   npm run bench:profile -- 1000    # another size
 *
 * The .cpuprofile is kept (its path is printed): open it in Chrome DevTools or speedscope.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const n = Number(process.argv[2] ?? 10_000);
if (!Number.isInteger(n) || n < 1) {
  console.error(`npm run bench:profile: the size must be a whole number of sub-tasks (got ${process.argv[2]})`);
  process.exit(2);
}
const root = fileURLToPath(new URL('../../', import.meta.url));
const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'a2a-profile-'));
const file = join(dir, `fanout-${n}.cpuprofile`);
const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', worker, 'fanout', String(n)], {
  encoding: 'utf8',
  env: { ...process.env, BENCH_PROFILE: file },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const measured = JSON.parse(out.trim().split('\n').pop()!) as { wallMs: number };
const baselineOut = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', worker, 'baseline', String(n)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
const baseline = JSON.parse(baselineOut.trim().split('\n').pop()!) as { wallMs: number };
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;

export type Group = 'XState' | 'GC' | 'project' | 'other';
export function groupOf(frame: ProfileNode['callFrame'], projectRoot: string): Group {
  if (frame.functionName === '(garbage collector)') return 'GC';
  const url = frame.url.replace(/^file:\/\//, '');
  if (url.includes('/node_modules/xstate/') || url.includes('/node_modules/@xstate/')) return 'XState';
  if (url.startsWith(projectRoot) && !url.includes('/node_modules/')) return 'project';
  return 'other';
}

// self time per node, then per function (name + place) and per group; idle and the program's
// own bookkeeping are left out, so the shares are of the time the process was working
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
// the profiler's own start (an inspector call) is not the fan-out's: its subtree is left out
const parentOf = new Map<number, number>();
for (const node of profile.nodes) for (const child of (node as ProfileNode & { children?: number[] }).children ?? []) parentOf.set(child, node.id);
const profilerOwn = (id: number): boolean => {
  for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) if (byId.get(at)!.callFrame.url === 'node:inspector') return true;
  return false;
};
const selfUs = new Map<number, number>();
for (let i = 0; i < profile.samples.length; i++) selfUs.set(profile.samples[i]!, (selfUs.get(profile.samples[i]!) ?? 0) + (profile.timeDeltas[i] ?? 0));
const functions = new Map<string, { us: number; group: Group }>();
const groups: Record<Group, number> = { XState: 0, GC: 0, project: 0, other: 0 };
let total = 0;
for (const [id, us] of selfUs) {
  const frame = byId.get(id)!.callFrame;
  if (profilerOwn(id)) continue;
  if (frame.functionName === '(idle)' || frame.functionName === '(program)' || frame.functionName === '(root)') continue;
  const group = groupOf(frame, root);
  const url = frame.url.replace(/^file:\/\//, '');
  const where = url.startsWith(root) ? relative(root, url).replace(/^node_modules\//, '') : url || '(native)';
  const key = `${frame.functionName || '(anonymous)'}  ${where}${url ? `:${frame.lineNumber + 1}` : ''}`;
  const entry = functions.get(key) ?? { us: 0, group };
  entry.us += us;
  functions.set(key, entry);
  groups[group] += us;
  total += us;
}

const pct = (us: number) => `${((100 * us) / total).toFixed(1).padStart(5)} %`;
const ms = (us: number) => `${(us / 1000).toFixed(0).padStart(6)} ms`;
console.log(`\nCPU profile of the cold fan-out of ${n.toLocaleString('en')} sub-tasks: ${measured.wallMs.toFixed(0)} ms wall (raw-XState baseline, cold in its own process: ${baseline.wallMs.toFixed(0)} ms, ratio ${(measured.wallMs / baseline.wallMs).toFixed(2)})`);
console.log(`profile: ${file}\n`);
console.log('group      self time   share');
for (const group of ['XState', 'GC', 'project', 'other'] as const) console.log(`${group.padEnd(9)} ${ms(groups[group])}  ${pct(groups[group])}`);
console.log(`${'total'.padEnd(9)} ${ms(total)}\n`);
console.log('top self-time functions');
const top = [...functions.entries()].sort((a, b) => b[1].us - a[1].us).slice(0, 25);
for (const [key, { us, group }] of top) console.log(`${ms(us)}  ${pct(us)}  ${group.padEnd(7)}  ${key}`);
