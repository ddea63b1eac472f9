/**
 * The boxes runs read their mail from (with --nats): a pool of slots reused from run to run, not a
 * box per run.
 *
 * A run's process reads two queues through its own durable consumers: its box of `up` (its
 * workers' reports) and its hosts' run events. Named after the run, those were two consumers made
 * and removed per run; and nats-server 2.9 keeps 16-23 KB on every node of each replicated
 * consumer it ever made, for good (its RAFT group's clients and queues: measured by
 * `npx tsx test/soak/consumerLeak.ts`), so a cluster grew with the number of runs ever run. Now a
 * run takes a free slot `n` of the namespace's `boxes` bucket (`slot.<n>`: RunBoxSlot) and reads
 * box `rs<n>`; its consumers (`up-rs<n>`, `events-rs<n>`) stay when it ends and the next run to
 * take the slot reads on from them. The slots in use are as many as runs at once (plus runs
 * stopped by a failure and not resumed yet, which keep theirs for `--resume`).
 *
 *   slot.<n>   { runId, at }: the run reading box rs<n>; runId null: free
 *
 * A run that ends frees its slot; what comes later for it (a late report, an event sent again) is
 * acknowledged and dropped by the slot's next run (the subject names the run). A run resumed takes
 * the slot it held back. Hosts learn a run's box from its sessions' specs (`correlation.runBox`,
 * set on the run's spawns and copied to every sub-task's), never from the bucket.
 */
import type { Correlation } from '../../machines/protocol/index.js';
import { RunBoxSlot } from '../../machines/protocol/index.js';
import type { KeyValue, Transport } from '../../machines/ports.js';
import { inlineIssues } from '../errors.js';
import { runBox } from './mailbox.js';

/** The namespace's bucket of run box slots (`a2a_<ns>_boxes`). */
export const BOXES_BUCKET = 'boxes';

/** The box of slot `n`. */
export const slotBox = (n: number) => `rs${n}`;

/** How many times a claim is tried again after another run took the slot it chose first. */
const CLAIM_ATTEMPTS = 20;

export interface RunBoxClaim {
  box: string;
  /** Frees the slot for the next run (the run ended: nothing more is read for it). */
  release(): Promise<void>;
}

/**
 * Takes a slot for run `runId`: the one it holds (a resume), else the lowest free one, else a new
 * one; compare-and-set on the slot's revision, so that two runs starting at once never share one.
 * `warn`: a slot whose record is not valid (it is taken over as free, and said).
 */
export async function claimRunBox(transport: Transport, runId: string, warn: (message: string) => void = () => {}): Promise<RunBoxClaim> {
  const kv = await transport.keyValue(BOXES_BUCKET);
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS; attempt++) {
    const slots = await readSlots(kv, warn);
    const held = slots.find((s) => s.runId === runId);
    const chosen = held ?? slots.find((s) => s.runId === null) ?? { n: nextSlot(slots), revision: 0, runId: null };
    const revision = await kv.update(`slot.${chosen.n}`, { runId, at: Date.now() } satisfies RunBoxSlot, chosen.revision);
    if (revision === null) continue; // another run took it meanwhile
    return {
      box: slotBox(chosen.n),
      release: async () => {
        await kv.update(`slot.${chosen.n}`, { runId: null, at: Date.now() } satisfies RunBoxSlot, revision);
      },
    };
  }
  throw new Error(`could not take a run box in the ${BOXES_BUCKET} bucket after ${CLAIM_ATTEMPTS} tries (other runs took each slot chosen)`);
}

interface Slot {
  n: number;
  revision: number;
  runId: string | null;
}

async function readSlots(kv: KeyValue, warn: (message: string) => void): Promise<Slot[]> {
  const out: Slot[] = [];
  for (const key of await kv.keys('slot.')) {
    const n = Number(key.slice('slot.'.length));
    if (!Number.isInteger(n) || n < 0) continue;
    const entry = await kv.get(key);
    if (!entry) continue;
    const parsed = RunBoxSlot.safeParse(entry.value);
    if (!parsed.success) warn(`the ${BOXES_BUCKET} bucket's ${key} is not a run box slot (${inlineIssues(parsed.error.issues)}): taken as free`);
    out.push({ n, revision: entry.revision, runId: parsed.success ? parsed.data.runId : null });
  }
  return out.sort((a, b) => a.n - b.n);
}

function nextSlot(slots: Slot[]): number {
  const used = new Set(slots.map((s) => s.n));
  let n = 0;
  while (used.has(n)) n++;
  return n;
}

/** Where a session's run hears from its hosts: the box its spec names, or (a spec from before slots) `r-<runId>`. */
export function runBoxOf(correlation: Pick<Correlation, 'runId' | 'runBox'>): string {
  return correlation.runBox ?? runBox(correlation.runId);
}

/**
 * The runs' boxes a process has learnt from the sessions it runs (a host: events and reports with
 * no other owner go there). Bounded: the oldest are forgotten first (a run long over; a session
 * of it that comes back teaches it again).
 */
export class KnownRunBoxes {
  readonly #boxes = new Map<string, string>();
  readonly #max: number;

  constructor(max = 10_000) {
    this.#max = max;
  }

  learn(correlation: Pick<Correlation, 'runId' | 'runBox'>): void {
    if (!correlation.runBox) return;
    this.#boxes.delete(correlation.runId);
    this.#boxes.set(correlation.runId, correlation.runBox);
    if (this.#boxes.size > this.#max) this.#boxes.delete(this.#boxes.keys().next().value as string);
  }

  has(runId: string): boolean {
    return this.#boxes.has(runId);
  }

  of(runId: string): string {
    return this.#boxes.get(runId) ?? runBox(runId);
  }
}
