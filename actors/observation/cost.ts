/**
 * What model calls cost, in USD, and the running totals a run is held to: per session, per
 * worker (its whole subtree of sub-tasks) and per run. Pure bookkeeping, no I/O: the agent loop
 * records each reply's usage here and stops work once a configured budget is spent.
 * Prices are USD per million tokens; the built-in table is a convenience for well-known models,
 * and the config's `models.prices` overrides it entry by entry.
 */
import { z } from 'zod';

export const Price = z.strictObject({
  /** USD per million input (prompt) tokens. */
  inputPerMTok: z.number().min(0),
  /** USD per million output (completion) tokens. */
  outputPerMTok: z.number().min(0),
  /** USD per million input tokens read from the prompt cache (absent: the input rate). */
  cacheReadPerMTok: z.number().min(0).optional(),
  /** USD per million input tokens written to the prompt cache (absent: the input rate). */
  cacheWritePerMTok: z.number().min(0).optional(),
});
export type Price = z.infer<typeof Price>;

/** Token counts of one or more calls (a `ModelReply`'s `usage`). */
export interface TokenUsage {
  /** Every input token, cache reads and writes included. */
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, those read from the provider's prompt cache and those written to it. */
  cacheReadTokens?: number | undefined;
  cacheWriteTokens?: number | undefined;
}

/**
 * DEFAULTS, not authoritative: list prices of well-known models (USD per million tokens, standard
 * tier, no caching or batch discounts) when this table was written. Providers change prices;
 * `models.prices` in the config overrides any entry. `scripted` costs nothing.
 */
export const DEFAULT_PRICES: Readonly<Record<string, Price>> = Object.freeze({
  scripted: { inputPerMTok: 0, outputPerMTok: 0 },
  // OpenAI: cached input at its own rate, no charge for writing the cache
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10, cacheReadPerMTok: 1.25 },
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6, cacheReadPerMTok: 0.075 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8, cacheReadPerMTok: 0.5 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6, cacheReadPerMTok: 0.1 },
  'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4, cacheReadPerMTok: 0.025 },
  'o4-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4, cacheReadPerMTok: 0.275 },
  // Anthropic: a 5-minute cache write at 1.25 times the input rate, a read at 0.1 times
  'claude-opus-4': { inputPerMTok: 15, outputPerMTok: 75, cacheWritePerMTok: 18.75, cacheReadPerMTok: 1.5 },
  'claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15, cacheWritePerMTok: 3.75, cacheReadPerMTok: 0.3 },
  'claude-3-7-sonnet': { inputPerMTok: 3, outputPerMTok: 15, cacheWritePerMTok: 3.75, cacheReadPerMTok: 0.3 },
  'claude-3-5-sonnet': { inputPerMTok: 3, outputPerMTok: 15, cacheWritePerMTok: 3.75, cacheReadPerMTok: 0.3 },
  'claude-3-5-haiku': { inputPerMTok: 0.8, outputPerMTok: 4, cacheWritePerMTok: 1, cacheReadPerMTok: 0.08 },
  // Gemini: implicit caching, reads at a quarter of the input rate
  'gemini-2.5-pro': { inputPerMTok: 1.25, outputPerMTok: 10, cacheReadPerMTok: 0.31 },
  'gemini-2.5-flash': { inputPerMTok: 0.3, outputPerMTok: 2.5, cacheReadPerMTok: 0.075 },
  'gemini-2.5-flash-lite': { inputPerMTok: 0.1, outputPerMTok: 0.4, cacheReadPerMTok: 0.025 },
  'gemini-2.0-flash': { inputPerMTok: 0.1, outputPerMTok: 0.4, cacheReadPerMTok: 0.025 },
});

function lookup(table: Readonly<Record<string, Price>>, model: string): Price | undefined {
  if (Object.hasOwn(table, model)) return table[model];
  // dated and aliased names (`gpt-4o-2024-08-06`, `claude-3-5-haiku-latest`) price as their family;
  // the longest family wins, so that `gpt-4o-mini-…` is not priced as `gpt-4o`
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (model.startsWith(`${key}-`) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/**
 * The price of `model`: the configured table first, then the built-in defaults; an exact name
 * first, then the longest `<name>-` prefix (dated versions). Undefined when unknown: such calls
 * count as free in the totals and are counted apart (`unpricedCalls`), never guessed.
 */
export function priceOf(prices: Readonly<Record<string, Price>> | undefined, model: string): Price | undefined {
  return (prices ? lookup(prices, model) : undefined) ?? lookup(DEFAULT_PRICES, model);
}

/** USD for the tokens of `usage` at `price` (0 when the price is unknown). */
export function costOf(usage: TokenUsage, price: Price | undefined): number {
  if (!price) return 0;
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const plain = Math.max(0, usage.inputTokens - read - write);
  return (
    (plain * price.inputPerMTok +
      read * (price.cacheReadPerMTok ?? price.inputPerMTok) +
      write * (price.cacheWritePerMTok ?? price.inputPerMTok) +
      usage.outputTokens * price.outputPerMTok) /
    1_000_000
  );
}

export interface CostTotals {
  usd: number;
  inputTokens: number;
  outputTokens: number;
  /** Of inputTokens, read from and written to the prompt cache. */
  cacheReadTokens: number;
  cacheWriteTokens: number;
  calls: number;
  /** Calls of models without a known price: their tokens are counted, their cost is not. */
  unpricedCalls: number;
}

export interface CostRecord {
  sessionId: string;
  /** The worker whose subtree the session belongs to (the worker's own id for the worker). */
  workerId: string;
  /** The session that spawned this one; absent for a worker or a standalone root. */
  parentId?: string | undefined;
  model: string;
  usage: TokenUsage;
}

export interface Budgets {
  /** The whole run's spend. */
  runUsd?: number | undefined;
  /** One worker's spend, its sub-tasks included. */
  workerUsd?: number | undefined;
}

export interface BudgetExceeded {
  scope: 'run' | 'worker';
  limitUsd: number;
  spentUsd: number;
}

const zero = (): CostTotals => ({ usd: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 0, unpricedCalls: 0 });

function add(totals: CostTotals, usage: TokenUsage, usd: number, priced: boolean): void {
  totals.usd += usd;
  totals.inputTokens += usage.inputTokens;
  totals.outputTokens += usage.outputTokens;
  totals.cacheReadTokens += usage.cacheReadTokens ?? 0;
  totals.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
  totals.calls += 1;
  if (!priced) totals.unpricedCalls += 1;
}

/**
 * Running totals for one run. Each `record` updates a fixed number of counters (the session's,
 * its worker's, the model's and the run's), so it is O(1) whatever the size of the tree. Reads
 * return copies, so that callers cannot change the ledger.
 */
export class CostLedger {
  readonly #prices: Readonly<Record<string, Price>> | undefined;
  readonly #run = zero();
  readonly #sessions = new Map<string, CostTotals>();
  readonly #workers = new Map<string, CostTotals>();
  readonly #models = new Map<string, CostTotals>();
  readonly #parents = new Map<string, string>();

  /** `prices`: the config's `models.prices` (the built-in defaults fill the gaps). */
  constructor(prices?: Readonly<Record<string, Price>>) {
    this.#prices = prices;
  }

  /**
   * Adds spending already priced elsewhere (a resumed run re-reads what it spent before it was
   * stopped from its event log), so that budgets count it.
   */
  restore(entry: Omit<CostRecord, 'model'> & { usd: number }): void {
    const usage = entry.usage;
    add(this.#run, usage, entry.usd, true);
    add(this.#bucket(this.#sessions, entry.sessionId), usage, entry.usd, true);
    add(this.#bucket(this.#workers, entry.workerId), usage, entry.usd, true);
    if (entry.parentId !== undefined && !this.#parents.has(entry.sessionId)) this.#parents.set(entry.sessionId, entry.parentId);
  }

  /** Adds one model call; returns its cost in USD (0 for a model without a known price). */
  record(entry: CostRecord): number {
    const price = priceOf(this.#prices, entry.model);
    const usd = costOf(entry.usage, price);
    const priced = price !== undefined;
    add(this.#run, entry.usage, usd, priced);
    add(this.#bucket(this.#sessions, entry.sessionId), entry.usage, usd, priced);
    add(this.#bucket(this.#workers, entry.workerId), entry.usage, usd, priced);
    add(this.#bucket(this.#models, entry.model), entry.usage, usd, priced);
    if (entry.parentId !== undefined && !this.#parents.has(entry.sessionId)) this.#parents.set(entry.sessionId, entry.parentId);
    return usd;
  }

  #bucket(map: Map<string, CostTotals>, key: string): CostTotals {
    let totals = map.get(key);
    if (!totals) map.set(key, (totals = zero()));
    return totals;
  }

  /**
   * Lets go of the workers `ended` names (by key, `<runId>.<workerId>`): a host serves many runs,
   * and keeps a worker's totals only while a session of it runs there.
   */
  forget(ended: (workerKey: string) => boolean): void {
    for (const key of this.#workers.keys()) if (ended(key)) this.#workers.delete(key);
  }

  /** The whole run. */
  totals(): CostTotals {
    return { ...this.#run };
  }

  /** A worker and every sub-task under it, at any depth. */
  forWorker(workerId: string): CostTotals {
    return { ...(this.#workers.get(workerId) ?? zero()) };
  }

  /** One session's own calls (not its children's). */
  forSession(sessionId: string): CostTotals {
    return { ...(this.#sessions.get(sessionId) ?? zero()) };
  }

  /** The spawning session recorded for `sessionId`, for views that rebuild the tree. */
  parentOf(sessionId: string): string | undefined {
    return this.#parents.get(sessionId);
  }

  /** Totals per model name, for the run's summary. */
  byModel(): Record<string, CostTotals> {
    return Object.fromEntries([...this.#models].map(([model, totals]) => [model, { ...totals }]));
  }

  /**
   * The first budget reached (spent ≥ limit), the run's before the worker's, or null. Checked
   * after recording a call, so that the call that crosses the limit is the last one made.
   */
  checkBudget(workerId: string, budgets: Budgets | undefined): BudgetExceeded | null {
    if (budgets?.runUsd !== undefined && this.#run.usd >= budgets.runUsd) {
      return { scope: 'run', limitUsd: budgets.runUsd, spentUsd: this.#run.usd };
    }
    const worker = this.#workers.get(workerId)?.usd ?? 0;
    if (budgets?.workerUsd !== undefined && worker >= budgets.workerUsd) {
      return { scope: 'worker', limitUsd: budgets.workerUsd, spentUsd: worker };
    }
    return null;
  }
}
