/**
 * Durable effects: `a2a run` killed with SIGKILL around tool calls that charge money (an MCP
 * server that appends each charge to a ledger outside the run, answering 150-300 ms later), then
 * `a2a run --resume`. A plan of 2 workers × 3 parallel sub-tasks, each charging three times in
 * sequence. The kill points cover the life of a call: between a reply and its tool, during the
 * charge, between its end and the next checkpoint, during the next model call, and anywhere
 * (by event count, seeded). Each trial asserts, from the ledger and the run's logs:
 *
 * - no completed charge is executed twice (one ledger line per idempotency key);
 * - no executed charge is reported to the model as not run;
 * - a charge in doubt (in flight at the kill, no recorded result) is surfaced exactly once
 *   (one `effect.in_doubt`, one "outcome unknown" result), and never run again;
 * - every charge that ran has its `mcp.called` record or its in-doubt report, in events and audit;
 * - one result per session, one `tool.called` per call.
 */
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { a2aProcess, killAll, nodeProcess, served, waitFor, type Proc } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { faultSeed, faultTrials, seeded, tally } from './harness.js';
import { bundleOnce, tempDir } from '../helpers.js';

/**
 * How long a trial waits for its kill point: the condition is an event, not a delay. Alone a trial
 * takes 6 s; three at once beside the rest of the suite on 2 cores, up to 14 s, and longer while
 * another load runs (a soak): the wait is generous so that a slow machine is not a failure.
 */
const KILL_POINT_MS = 30_000;
const TRIAL_MS = 60_000;
const BANK = resolve(import.meta.dirname, 'fixtures', 'bank.mjs');
const WORKERS = 2;
const PARTS = 2;
const CHARGES = 3;
const SEED = faultSeed(20261127);
/** A run of this plan prints about this many events (--json). */
const EVENTS = 100;

const charge = (n: number) => ({ name: 'mcp__bank__charge', arguments: { account: 'acme', amount: 10 * n, ref: `charge-${n}` } });

function workspace(): { ws: string; env: NodeJS.ProcessEnv; ledger: string } {
  const ws = tempDir('a2a-effects-');
  const config = join(ws, 'user-config');
  const ledger = join(ws, 'ledger.jsonl');
  mkdirSync(join(config, 'agents'), { recursive: true });
  // the bank is declared in the user's own config (a workspace's file may not start servers)
  writeFileSync(
    join(config, 'agents', 'payer.agent.md'),
    `---\nname: payer\ndescription: Pays the invoices of a part\ntools: [a2a_subtask_complete]\nmcpServers:\n  bank:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(BANK)}, ${JSON.stringify(ledger)}]\n    permission: auto_approve\n---\nPay what you are asked to.\n`,
  );
  writeFileSync(
    join(ws, 'plan.json'),
    JSON.stringify({ id: 'effects', tasks: Array.from({ length: WORKERS }, (_, i) => ({ id: `t${i + 1}`, agent: '@architect', prompt: `pay the invoices of set ${i + 1}` })) }),
  );
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        {
          agent: 'architect',
          depth: 0,
          turns: [
            { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: Array.from({ length: PARTS }, (_, i) => ({ agentType: '@payer', prompt: `pay part ${i + 1}`, expectedOutput: 'receipts' })) } }] },
            { text: 'waiting for the payments' },
          ],
          reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'all paid' } }] } }],
        },
        {
          agent: 'payer',
          // each model call takes 120 ms: a kill can land in one
          turns: [
            // a read first (annotated readOnlyHint: in doubt, it runs again, with the same key)
            { toolCalls: [{ name: 'mcp__bank__balance', arguments: { account: 'acme' } }] },
            ...Array.from({ length: CHARGES }, (_, i) => ({ delayMs: 120, toolCalls: [charge(i + 1)] })),
            { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'paid' } }] },
          ],
        },
      ],
    }),
  );
  return { ws, env: { ...process.env, A2A_CONFIG_HOME: config }, ledger };
}

const payers = Array.from({ length: WORKERS }, (_, w) => Array.from({ length: PARTS }, (_, p) => `w-t${w + 1}.${p + 1}`)).flat();
const sessions = [...Array.from({ length: WORKERS }, (_, w) => `w-t${w + 1}`), ...payers];

interface KillPoint {
  name: string;
  /** When to kill the first life: a condition on what it printed (--json lines) and the ledger. */
  when: (printed: RunEvent[], ledger: LedgerLine[]) => boolean;
}

const printedOf = (p: Proc): RunEvent[] =>
  p
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as RunEvent];
      } catch {
        return [];
      }
    });

/** How many of the printed events are about charges (model replies calling one, results, answers). */
const charges = (events: RunEvent[], type: RunEvent['type']) =>
  events.filter(
    (e) =>
      e.type === type &&
      (type === 'model.called' ? (e.data.toolCalls as string[] | undefined)?.includes('mcp__bank__charge') : type === 'mcp.called' ? e.data.tool === 'charge' : e.data.name === 'mcp__bank__charge'),
  ).length;

interface LedgerLine {
  key: string;
  ref?: string;
  balance?: string;
  lookup?: string;
}
const ledgerOf = (file: string): LedgerLine[] => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as LedgerLine) : []);

/** The kill points: each kind at the first, a middle and the last charges of the run. */
const TOTAL = payers.length * CHARGES;
const random = seeded(SEED);
const KILL_POINTS: KillPoint[] = [
  { name: 'during a read (balance started)', when: (_: RunEvent[], lines: LedgerLine[]) => lines.some((l) => l.balance) },
  ...[1, 5, 9, 12].map((n) => ({ name: `between a reply and its charge (reply ${n})`, when: (e: RunEvent[]) => charges(e, 'model.called') >= n })),
  ...[1, 4, 7, 10, 12].map((n) => ({ name: `during the charge (charge ${n} started)`, when: (_: RunEvent[], lines: LedgerLine[]) => lines.filter((l) => l.ref).length >= n })),
  ...[1, 4, 8, 11].map((n) => ({ name: `after the charge, before a checkpoint (charge ${n} answered)`, when: (e: RunEvent[]) => charges(e, 'mcp.called') >= n })),
  ...[1, 6, 10].map((n) => ({ name: `during the next model call (charge ${n} told)`, when: (e: RunEvent[]) => charges(e, 'tool.called') >= n })),
  ...Array.from({ length: 5 }, () => {
    const at = 5 + Math.floor(random() * (EVENTS - 10));
    return { name: `anywhere (after event ${at})`, when: (e: RunEvent[]) => e.length >= at };
  }),
];

interface Row {
  point: string;
  trials: number;
  rerun: number;
  reportedNotRun: number;
  inDoubt: number;
  inDoubtTwice: number;
  results: string;
}
const rows: Row[] = [];

// one trial after the other (side by side, three at once beside the suite on 2 cores took 10-12 s a trial); their processes are killed at the end
afterAll(() => killAll());
afterAll(() => {
  const kinds = new Map<string, Row>();
  for (const r of rows) {
    const kind = r.point.replace(/ \(.*\)$/, '');
    const k = kinds.get(kind) ?? { point: kind, trials: 0, rerun: 0, reportedNotRun: 0, inDoubt: 0, inDoubtTwice: 0, results: '1 each' };
    k.trials++;
    k.rerun += r.rerun;
    k.reportedNotRun += r.reportedNotRun;
    k.inDoubt += r.inDoubt;
    k.inDoubtTwice += r.inDoubtTwice;
    if (r.results !== '1 each') k.results = r.results;
    kinds.set(kind, k);
  }
  const header = ['kill point', 'trials', 'completed calls re-run', 'executed calls reported not run', 'in doubt surfaced (twice)', 'results per session'];
  const cells = [...kinds.values()].map((k) => [k.point, String(k.trials), String(k.rerun), String(k.reportedNotRun), `${k.inDoubt} (${k.inDoubtTwice})`, k.results]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i]!.length)));
  const line = (c: string[]) => c.map((v, i) => v.padEnd(widths[i]!)).join('  ');
  console.log(['', line(header), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line), `(seed ${SEED}, ${TOTAL} charges per run)`, ''].join('\n'));
});

describe('fault: kill -9 around tool calls with side effects, then --resume', () => {
  // the suite's sample: one point of each kind (the first kill anywhere, the middle of the others)
  const sample = new Set(['during a read (balance started)', 'between a reply and its charge (reply 5)', 'during the charge (charge 7 started)', 'after the charge, before a checkpoint (charge 4 answered)', 'during the next model call (charge 6 told)', KILL_POINTS.find((p) => p.name.startsWith('anywhere'))!.name]);
  faultTrials(KILL_POINTS, (p) => sample.has(p.name)).forEach((point) => {
    const trial = KILL_POINTS.indexOf(point);
    it(`charges once, reports nothing that ran as not run, and surfaces each call in doubt once: ${point.name}`, async () => {
      const { ws, env, ledger } = workspace();
      const runId = `effects-${trial + 1}`;
      const first = a2aProcess(['run', 'plan.json', '--script', 'script.json', '--max-workers', String(WORKERS), '--run-id', runId, '--json', '--no-tree'], ws, env);
      await waitFor(point.name, () => point.when(printedOf(first), ledgerOf(ledger)) || first.child.exitCode !== null, KILL_POINT_MS, first.out);
      expect(first.child.exitCode, `the run ended before the kill point (${point.name}):\n${first.out().slice(-2000)}`).toBeNull();
      first.child.kill('SIGKILL');
      await first.exited;

      const second = a2aProcess(['run', '--resume', runId, '--json', '--no-tree'], ws, env);
      const code = await second.exited;
      // on a loaded machine the kill may land as the first life exits, its run over: nothing to
      // resume (exit 2); what follows checks that life's charges all the same
      const lateKill = code === 2 && /already finished/.test(second.out());
      if (!lateKill) expect(code, `${first.out().slice(-3000)}\n--- resume ---\n${second.out().slice(-3000)}`).toBe(0);

      const store = new FileRunStore(ws);
      const events = store.events(runId);
      const audit = store.readLines(runId, 'audit.jsonl') as RunEvent[];
      const all = ledgerOf(ledger);
      const lines = all.filter((l) => l.ref);
      const keyOf = (e: RunEvent, callId: unknown) => `a2a:${runId}:${e.subTaskId}:${String(callId)}`;

      // every call carries its idempotency key (the request's _meta); a read in doubt ran again with the same one
      expect(all.every((l) => l.key.startsWith(`a2a:${runId}:`)), JSON.stringify(all)).toBe(true);
      const reads = all.filter((l) => l.balance).map((l) => l.key);
      expect(new Set(reads).size, 'one key per read').toBe(payers.length);
      // no charge executed twice
      const perKey = new Map<string, number>();
      for (const l of lines) perKey.set(l.key, (perKey.get(l.key) ?? 0) + 1);
      const rerun = [...perKey.values()].filter((n) => n > 1).length;

      const told = events.filter((e) => e.type === 'tool.called' && e.data.name === 'mcp__bank__charge');
      // one tool result per call, each call of each payer told
      const perCall = new Map<string, RunEvent[]>();
      for (const e of told) perCall.set(keyOf(e, e.data.callId), [...(perCall.get(keyOf(e, e.data.callId)) ?? []), e]);
      expect([...perCall.values()].filter((list) => list.length > 1).map((l) => l[0]!.data.callId)).toEqual([]);
      for (const s of payers) expect(told.filter((e) => e.subTaskId === s).length, `${s}'s charges told`).toBe(CHARGES);

      // executed (in the ledger) but told as not run
      const reportedNotRun = [...perKey.keys()].filter((key) =>
        perCall.get(key)?.some((e) => !String(e.data.content).startsWith('EFFECT_IN_DOUBT') && /was not run|not available|not connected/.test(String(e.data.content))),
      ).length;

      // in doubt: surfaced once, as an event and as the model's result, and not run again
      const doubts = events.filter((e) => e.type === 'effect.in_doubt');
      const doubtKeys = doubts.map((e) => String(e.data.idempotencyKey));
      const inDoubtTwice = doubtKeys.length - new Set(doubtKeys).size;
      for (const key of doubtKeys) {
        expect(perCall.get(key)?.map((e) => String(e.data.content).startsWith('EFFECT_IN_DOUBT'))).toEqual([true]);
        expect(perKey.get(key) ?? 0, `${key} was in doubt: at most the one execution`).toBeLessThanOrEqual(1);
      }
      expect(audit.filter((e) => e.type === 'effect.in_doubt').length, 'in-doubt reports in the audit').toBe(doubts.length);
      // what ran has its record: an mcp.called (it answered) or its in-doubt report
      const called = new Set(events.filter((e) => e.type === 'mcp.called' && e.data.tool === 'charge').map((e) => keyOf(e, e.data.callId)));
      const audited = new Set(audit.filter((e) => e.type === 'mcp.called' && e.data.tool === 'charge').map((e) => keyOf(e, e.data.callId)));
      for (const key of perKey.keys()) expect(called.has(key) || doubtKeys.includes(key), `${key} ran and has no record`).toBe(true);
      expect([...audited].sort()).toEqual([...called].sort());
      // every mcp.called is a charge in the ledger
      for (const key of called) expect(perKey.has(key), `${key} told as called, not in the ledger`).toBe(true);

      const counted = tally(ws, runId, sessions);
      rows.push({ point: point.name, trials: 1, rerun, reportedNotRun, inDoubt: doubts.length, inDoubtTwice, results: counted.lost.length || counted.duplicated.length ? `${counted.lost.length} lost, ${counted.duplicated.length} twice` : '1 each' });
      expect({ rerun, reportedNotRun, inDoubtTwice }).toEqual({ rerun: 0, reportedNotRun: 0, inDoubtTwice: 0 });
      expect(counted).toEqual({ lost: [], duplicated: [] });
      // the printed stream across both lives: each event once, sequence numbers never going back
      const printed = [...printedOf(first), ...printedOf(second)];
      const ids = printed.map((e) => e.id);
      expect(ids.length - new Set(ids).size, 'events printed twice').toBe(0);
      expect(printed.every((e, i) => i === 0 || e.seq > printed[i - 1]!.seq)).toBe(true);
    }, TRIAL_MS);
  });
});

/** A program's own tool (defineTool), killed and resumed by the same program (startRun({ resume })). */
describe('fault: kill -9 of a program around its own tool, then the program resumes', () => {
  const program = () => bundleOnce('payments', 'test/faults/fixtures/payments.ts', { platform: 'node', format: 'esm', packages: 'external', target: 'node20', splitting: true }, 'mjs');
  const start = (ws: string, ledger: string, ...rest: string[]): Proc => nodeProcess([program(), ws, ledger, ...rest], ws);
  const setup = () => {
    const ws = tempDir('a2a-effects-program-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'pay', tasks: [1, 2].map((i) => ({ id: `t${i}`, agent: '@payer', prompt: `pay set ${i}` })) }));
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'payer',
            turns: [
              { toolCalls: [{ name: 'lookup', arguments: { account: 'acme' } }] },
              ...[1, 2].map((n) => ({ delayMs: 80, toolCalls: [{ name: 'charge', arguments: { account: 'acme', amount: n, ref: `c${n}` } }] })),
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'paid' } }] },
            ],
          },
        ],
      }),
    );
    return { ws, ledger: join(ws, 'ledger.jsonl') };
  };
  const points: KillPoint[] = [
    { name: 'during a read (idempotent)', when: (_e, lines) => lines.some((l) => l.lookup) },
    ...[1, 2, 3, 4].map((n) => ({ name: `during charge ${n}`, when: (_e: RunEvent[], lines: LedgerLine[]) => lines.filter((l) => l.ref).length >= n })),
    ...[1, 2].map((n) => ({ name: `after charge ${n} answered`, when: (e: RunEvent[]) => e.filter((x) => x.type === 'tool.called' && x.data.name === 'charge').length >= n })),
  ];
  faultTrials(points, (p) => /during a read|during charge 2|after charge 1/.test(p.name)).forEach((point, i) => {
    it(`charges once, surfaces the call in doubt once, and gives the same key again: ${point.name}`, async () => {
      const { ws, ledger } = setup();
      const first = start(ws, ledger);
      await waitFor(point.name, () => point.when(printedOf(first), ledgerOf(ledger)) || first.child.exitCode !== null, KILL_POINT_MS, first.out);
      expect(first.child.exitCode, first.out().slice(-2000)).toBeNull();
      first.child.kill('SIGKILL');
      await first.exited;
      const second = start(ws, ledger, 'resume', 'pay');
      expect(await second.exited, `${first.out().slice(-2000)}\n--- resume ---\n${second.out().slice(-3000)}`).toBe(0);
      const lines = ledgerOf(ledger);
      const charged = lines.filter((l) => l.ref).map((l) => l.key);
      expect(charged.length - new Set(charged).size, `charges executed twice (${point.name}, ${i})`).toBe(0);
      // the read ran again after a kill during it: the same key both times
      const reads = lines.filter((l) => l.lookup).map((l) => l.key);
      expect(new Set(reads).size).toBe(2);
      if (point.name.startsWith('during a read')) expect(reads.length).toBeGreaterThan(2);
      const events = new FileRunStore(ws).events('pay');
      const doubts = events.filter((e) => e.type === 'effect.in_doubt').map((e) => String(e.data.idempotencyKey));
      expect(doubts.length - new Set(doubts).size).toBe(0);
      for (const key of doubts) expect(charged.filter((k) => k === key).length).toBeLessThanOrEqual(1);
      // each call told once; a charge in doubt told as such
      const told = events.filter((e) => e.type === 'tool.called' && e.data.name === 'charge');
      expect(told.length).toBe(4);
      expect(told.filter((e) => String(e.data.content).startsWith('EFFECT_IN_DOUBT')).length).toBe(doubts.length);
      expect(tally(ws, 'pay', ['w-t1', 'w-t2'])).toEqual({ lost: [], duplicated: [] });
    }, TRIAL_MS);
  });
});

/**
 * The same charges run by hosts over NATS: the host that runs the payers is killed with SIGKILL
 * around a charge, and another host takes its sessions over from their last snapshots. The
 * effect journal of hosts (the namespace's effects bucket) holds what the dead host's sessions
 * did after those snapshots: no charge runs twice, none that ran is told as not run.
 */
describe('fault: kill -9 of the host running tool calls with side effects, another host takes over', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(() => server?.stop());
  const points: Array<{ name: string; charges: number; afterMs: number }> = [
    { name: 'during charge 2', charges: 2, afterMs: 0 },
    { name: 'after charge 5 started, 200 ms on', charges: 5, afterMs: 200 },
  ];
  // one after the other: each starts four processes
  faultTrials(points, (_p, i) => i === 0).forEach((point) => {
    const trial = points.indexOf(point);
    it(`charges once, reports nothing that ran as not run: ${point.name}`, async () => {
      const { ws, env, ledger } = workspace();
      const ns = `fx${trial + 1}`;
      const runId = `host-effects-${trial + 1}`;
      const host = (id: string, agents: string) =>
        a2aProcess(['host', '--nats', server.url, '--namespace', ns, '--agents', agents, '--id', id, '--script', join(ws, 'script.json'), '--workspace', ws, '--heartbeat', '150', '--drain', '1000'], ws, env);
      const arch = host('arch', 'architect');
      const payer = host('pay-1', 'payer');
      await Promise.all([served(arch), served(payer)]);
      const run = a2aProcess(['run', 'plan.json', '--nats', server.url, '--namespace', ns, '--script', 'script.json', '--run-id', runId, '--no-tree'], ws, env);
      await waitFor(point.name, () => ledgerOf(ledger).filter((l) => l.ref).length >= point.charges || run.child.exitCode !== null, KILL_POINT_MS, () => `${run.out()}\n--- payer host ---\n${payer.out()}`);
      if (point.afterMs) await new Promise((r) => setTimeout(r, point.afterMs));
      expect(run.child.exitCode, `the run ended before the kill point:\n${run.out().slice(-2000)}`).toBeNull();
      payer.child.kill('SIGKILL');
      await payer.exited;
      const heir = host('pay-2', 'payer');
      const code = await run.exited;
      expect(code, `${run.out().slice(-3000)}\n--- heir ---\n${heir.out().slice(-3000)}`).toBe(0);

      const events = new FileRunStore(ws).events(runId);
      const lines = ledgerOf(ledger).filter((l) => l.ref);
      const perKey = new Map<string, number>();
      for (const l of lines) perKey.set(l.key, (perKey.get(l.key) ?? 0) + 1);
      const rerun = [...perKey.values()].filter((n) => n > 1).length;
      const told = events.filter((e) => e.type === 'tool.called' && e.data.name === 'mcp__bank__charge');
      const keyOf = (e: RunEvent) => `a2a:${runId}:${e.subTaskId}:${String(e.data.callId)}`;
      const reportedNotRun = told.filter((e) => perKey.has(keyOf(e)) && !String(e.data.content).startsWith('EFFECT_IN_DOUBT') && /was not run|not available|not connected/.test(String(e.data.content))).length;
      const doubts = events.filter((e) => e.type === 'effect.in_doubt').map((e) => String(e.data.idempotencyKey));
      const inDoubtTwice = doubts.length - new Set(doubts).size;
      rows.push({ point: `host killed, ${point.name}`, trials: 1, rerun, reportedNotRun, inDoubt: doubts.length, inDoubtTwice, results: '1 each' });
      expect({ rerun, reportedNotRun, inDoubtTwice }).toEqual({ rerun: 0, reportedNotRun: 0, inDoubtTwice: 0 });
      for (const key of doubts) expect(perKey.get(key) ?? 0, `${key} was in doubt: at most the one execution`).toBeLessThanOrEqual(1);
      // the sessions were taken over, and each payer's charges were told once each
      expect(events.some((e) => e.type === 'session.restored')).toBe(true);
      for (const s of payers) expect(told.filter((e) => e.subTaskId === s).length, `${s}'s charges told`).toBe(CHARGES);
      expect(tally(ws, runId, sessions)).toEqual({ lost: [], duplicated: [] });
      heir.child.kill('SIGTERM');
      arch.child.kill('SIGTERM');
    }, TRIAL_MS);
  });
});
