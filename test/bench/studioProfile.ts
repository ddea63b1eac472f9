/**
 * Where the studio's page spends its time opening a run (`STUDIO_PROFILE=1 npm run bench:studio`):
 * a CPU profile of the page (Chromium's `Profiler` over CDP, sampling every 100 µs) from
 * navigation to the whole tree drawn, each sample given to the first step of the page that its
 * stack names (read leaf first), and a trace of the same open for what the profiler cannot see
 * (style, layout, paint: Blink's work outside JS). The .cpuprofile is kept (its path is printed):
 * open it in Chrome DevTools or speedscope.
 */
import type { CDPSession } from 'playwright-core';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * The page's steps, by the names of its functions (the bundle is not minified). A sample goes to
 * the first of these its stack meets from the leaf up, helpers such as `esc` going to their
 * caller: JSON.parse called by the stream's reader is the stream's, an attribute set by `sync` is
 * the morph's, a string escaped for a row is the tree's. The names are those of the page before
 * the virtual tree and after it (the old page's stream listener is anonymous: "other JS").
 */
const STEPS: Array<[string, RegExp]> = [
  ['stream (read, split, JSON.parse)', /^(received|readStream|parseMessage|JSON\.parse)$/],
  ['fold (StudioRun, RunView)', /^(apply|#?extra|#workflow|#permission|#index)$/],
  ['session (transcript, chart)', /^(sessionView|transcript|permissions|trailOf|chartSvg|layoutChart|remoteTaskView|folded)$/],
  ['morph (DOM)', /^(morph|sync)$/],
  ['tree rows (virtual)', /^(flatten|present|rowsOf|treeRow|draw|#paint|#row|focusRow)$/],
  ['build HTML', /^(treeView|item|render|timeBar|eventLine|eventsView|drawSession)$/],
];

export async function startProfile(cdp: CDPSession): Promise<void> {
  await cdp.send('Profiler.enable');
  await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
  await cdp.send('Profiler.start');
}

export async function stopProfile(cdp: CDPSession): Promise<CpuProfile> {
  const { profile } = (await cdp.send('Profiler.stop')) as unknown as { profile: CpuProfile };
  return profile;
}

/** Milliseconds per step of the page; idle and the rest of the browser's own work apart. */
export function splitProfile(profile: CpuProfile): Map<string, number> {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stepOf = new Map<number, string>();
  const step = (id: number): string => {
    const known = stepOf.get(id);
    if (known) return known;
    let found = 'other JS';
    const leaf = byId.get(id)!.callFrame.functionName;
    if (leaf === '(idle)') found = 'idle (waiting: network, timers)';
    else if (leaf === '(garbage collector)') found = 'GC';
    else if (leaf === '(program)') found = 'browser (parse HTML, style, layout, paint)';
    else {
      outer: for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
        const name = byId.get(at)!.callFrame.functionName;
        for (const [label, re] of STEPS) {
          if (re.test(name)) {
            found = label;
            break outer;
          }
        }
      }
    }
    stepOf.set(id, found);
    return found;
  };
  // Chromium records samples slightly out of order (negative deltas): each sample, in time order,
  // lasts until the next one
  const at: number[] = [];
  for (let i = 0, t = 0; i < profile.samples.length; i++) at.push((t += profile.timeDeltas[i] ?? 0));
  const order = at.map((_, i) => i).sort((a, b) => at[a]! - at[b]!);
  const out = new Map<string, number>();
  for (let k = 0; k + 1 < order.length; k++) {
    const label = step(profile.samples[order[k]!]!);
    out.set(label, (out.get(label) ?? 0) + (at[order[k + 1]!]! - at[order[k]!]!) / 1000);
  }
  return out;
}

/** Milliseconds of Blink's main-thread work by kind, from a Chromium trace (`browser.stopTracing()`). */
export function splitTrace(trace: Buffer): Map<string, number> {
  const { traceEvents } = JSON.parse(trace.toString('utf8')) as { traceEvents: Array<{ name: string; ph: string; dur?: number; tid: number; pid: number; args?: { name?: string } }> };
  const main = new Set(traceEvents.filter((e) => e.name === 'thread_name' && e.args?.name === 'CrRendererMain').map((e) => `${e.pid}:${e.tid}`));
  const kinds: Record<string, string> = {
    UpdateLayoutTree: 'style',
    Layout: 'layout',
    PrePaint: 'paint',
    Paint: 'paint',
    Layerize: 'paint',
    ParseHTML: 'parse HTML',
    EventDispatch: 'events (SSE, input)',
  };
  const out = new Map<string, number>();
  for (const e of traceEvents) {
    const kind = kinds[e.name];
    if (!kind || e.ph !== 'X' || !main.has(`${e.pid}:${e.tid}`)) continue;
    out.set(kind, (out.get(kind) ?? 0) + (e.dur ?? 0) / 1000);
  }
  return out;
}
