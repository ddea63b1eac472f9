import { describe, expect, it } from 'vitest';
import { CostLedger, costOf, DEFAULT_PRICES, priceOf } from '../../actors/observation/cost.js';

describe('priceOf', () => {
  it('should price well-known models from the defaults, dated versions as their family', () => {
    expect(priceOf(undefined, 'gpt-4o')).toEqual({ inputPerMTok: 2.5, outputPerMTok: 10, cacheReadPerMTok: 1.25 });
    expect(priceOf(undefined, 'gpt-4o-2024-08-06')).toBe(DEFAULT_PRICES['gpt-4o']);
    // the longest family wins: not priced as gpt-4o
    expect(priceOf(undefined, 'gpt-4o-mini-2024-07-18')).toBe(DEFAULT_PRICES['gpt-4o-mini']);
    expect(priceOf(undefined, 'claude-3-5-haiku-latest')).toBe(DEFAULT_PRICES['claude-3-5-haiku']);
    expect(priceOf(undefined, 'scripted')).toEqual({ inputPerMTok: 0, outputPerMTok: 0 });
  });

  it('should let configured prices override the defaults and add models, and know nothing else', () => {
    const prices = { 'gpt-4o': { inputPerMTok: 1, outputPerMTok: 2 }, 'local-llama': { inputPerMTok: 0.01, outputPerMTok: 0.02 } };
    expect(priceOf(prices, 'gpt-4o-2024-11-20')).toEqual({ inputPerMTok: 1, outputPerMTok: 2 });
    expect(priceOf(prices, 'local-llama')).toEqual({ inputPerMTok: 0.01, outputPerMTok: 0.02 });
    expect(priceOf(prices, 'gpt-4.1')).toBe(DEFAULT_PRICES['gpt-4.1']);
    expect(priceOf(prices, 'mystery-model')).toBeUndefined();
    // a prefix only matches a whole family name
    expect(priceOf(undefined, 'gpt-4oo')).toBeUndefined();
  });

  it('should compute USD from tokens per million', () => {
    expect(costOf({ inputTokens: 1_000_000, outputTokens: 0 }, { inputPerMTok: 3, outputPerMTok: 15 })).toBe(3);
    expect(costOf({ inputTokens: 200_000, outputTokens: 10_000 }, { inputPerMTok: 3, outputPerMTok: 15 })).toBeCloseTo(0.75, 10);
    expect(costOf({ inputTokens: 5, outputTokens: 5 }, undefined)).toBe(0);
  });
});

describe('CostLedger', () => {
  // gpt-4o: $2.5 in / $10 out per million → 100k in + 10k out = $0.35
  const call = { inputTokens: 100_000, outputTokens: 10_000 };

  function ledgerWithTree() {
    const ledger = new CostLedger({ 'local-llama': { inputPerMTok: 1, outputPerMTok: 1 } });
    // worker w1 → sub-task s1 → sub-sub-task s1a; worker w2 alone
    expect(ledger.record({ sessionId: 'w1', workerId: 'w1', model: 'gpt-4o', usage: call })).toBeCloseTo(0.35, 10);
    ledger.record({ sessionId: 's1', workerId: 'w1', parentId: 'w1', model: 'gpt-4o', usage: call });
    ledger.record({ sessionId: 's1a', workerId: 'w1', parentId: 's1', model: 'local-llama', usage: { inputTokens: 500_000, outputTokens: 500_000 } });
    ledger.record({ sessionId: 's1a', workerId: 'w1', parentId: 's1', model: 'mystery', usage: { inputTokens: 7, outputTokens: 3 } });
    ledger.record({ sessionId: 'w2', workerId: 'w2', model: 'gpt-4o-mini', usage: call });
    return ledger;
  }

  it('should roll a worker up over its whole subtree, and keep sessions and the run apart', () => {
    const ledger = ledgerWithTree();
    const w1 = ledger.forWorker('w1');
    expect(w1.usd).toBeCloseTo(0.35 + 0.35 + 1, 10);
    expect(w1).toMatchObject({ inputTokens: 700_007, outputTokens: 520_003, calls: 4, unpricedCalls: 1 });
    expect(ledger.forSession('s1a')).toMatchObject({ calls: 2, unpricedCalls: 1, inputTokens: 500_007 });
    expect(ledger.forSession('s1a').usd).toBeCloseTo(1, 10);
    expect(ledger.forSession('w1').calls).toBe(1);
    // gpt-4o-mini: 100k × 0.15 + 10k × 0.6 per million = 0.021
    expect(ledger.forWorker('w2').usd).toBeCloseTo(0.021, 10);
    expect(ledger.totals()).toMatchObject({ calls: 5, unpricedCalls: 1 });
    expect(ledger.totals().usd).toBeCloseTo(1.721, 10);
    expect(ledger.parentOf('s1a')).toBe('s1');
    expect(Object.keys(ledger.byModel()).sort()).toEqual(['gpt-4o', 'gpt-4o-mini', 'local-llama', 'mystery']);
    expect(ledger.byModel()['gpt-4o']!.calls).toBe(2);
    expect(ledger.forWorker('nobody')).toEqual({ usd: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, calls: 0, unpricedCalls: 0 });
  });

  it('should hand out copies that do not change the ledger', () => {
    const ledger = ledgerWithTree();
    ledger.totals().usd = 1000;
    ledger.forWorker('w1').calls = 0;
    expect(ledger.totals().usd).toBeCloseTo(1.721, 10);
    expect(ledger.forWorker('w1').calls).toBe(4);
  });

  it("should trip a worker's budget for that worker only, once its subtree reaches it", () => {
    const ledger = new CostLedger();
    const budgets = { workerUsd: 0.7, runUsd: 10 };
    ledger.record({ sessionId: 'w1', workerId: 'w1', model: 'gpt-4o', usage: call });
    expect(ledger.checkBudget('w1', budgets)).toBeNull();
    ledger.record({ sessionId: 's1', workerId: 'w1', parentId: 'w1', model: 'gpt-4o', usage: call });
    const hit = ledger.checkBudget('w1', budgets);
    expect(hit).toMatchObject({ scope: 'worker', limitUsd: 0.7 });
    expect(hit!.spentUsd).toBeCloseTo(0.7, 10);
    expect(ledger.checkBudget('w2', budgets)).toBeNull();
  });

  it('should trip the run budget for every worker once the run reaches it, before a worker budget', () => {
    const ledger = new CostLedger();
    const budgets = { runUsd: 1, workerUsd: 0.5 };
    ledger.record({ sessionId: 'w1', workerId: 'w1', model: 'gpt-4o', usage: call });
    ledger.record({ sessionId: 'w2', workerId: 'w2', model: 'gpt-4o', usage: call });
    expect(ledger.checkBudget('w3', budgets)).toBeNull();
    ledger.record({ sessionId: 'w3', workerId: 'w3', model: 'gpt-4o', usage: call });
    expect(ledger.checkBudget('w3', budgets)).toMatchObject({ scope: 'run', limitUsd: 1 });
    expect(ledger.checkBudget('w1', budgets)!.scope).toBe('run');
    expect(ledger.checkBudget('w1', undefined)).toBeNull();
    expect(ledger.checkBudget('w1', {})).toBeNull();
  });
});
