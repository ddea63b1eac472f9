/**
 * Durability: a run is killed with SIGKILL while messages wait in its inbox, then resumed with
 * `a2a run --resume`; the inbox journal proves by message id that nothing was lost and nothing
 * was handled twice. Also the control channel of a live run (a2a inbox, a2a redirect, a2a status).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore, type JournalRecord } from '../../adapters/store/file.js';
import type { RunStatus } from '../../actors/observation/runStatus.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { capture, tempDir } from '../helpers.js';
import { a2aBundle } from '../nats/cluster.js';


function a2a(args: string[], cwd: string): { child: ChildProcess; exited: Promise<number>; out: () => string } {
  // the CLI bundled from the sources (test/nats/cluster.ts): starts in a fraction of tsx's time
  const child = spawn(process.execPath, [a2aBundle(), ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  return { child, exited: new Promise((r) => child.on('exit', (code, signal) => r(code ?? (signal ? 128 : -1)))), out: () => out };
}

async function waitFor<T>(what: string, probe: () => T | null | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let value: T | null | undefined | false = null;
    try {
      value = probe();
    } catch {
      value = null; // a file being replaced
    }
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}


const WORKERS = 6;

/** Workers each ask a question and send a status; the orchestrator's model answers slowly, one at a time. */
function writePlan(ws: string) {
  writeFileSync(
    join(ws, 'plan.json'),
    JSON.stringify({ id: 'durable', tasks: Array.from({ length: WORKERS }, (_, i) => ({ id: `q${i}`, agent: '@coder', prompt: `part ${i}` })) }),
  );
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        {
          agent: 'coder',
          turns: [
            {
              toolCalls: [
                { name: 'a2a_notify_orchestrator', arguments: { type: 'question', message: 'Which database should I use?' } },
                { name: 'a2a_notify_orchestrator', arguments: { type: 'status', message: 'schema drafted' } },
              ],
            },
            { text: 'Waiting for the answer.' },
          ],
          reactions: [{ when: 'PostgreSQL', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'done with PostgreSQL' } }] } }],
        },
        { agent: 'orchestrator', turns: [{ text: 'Use PostgreSQL.', delayMs: 400 }] },
      ],
    }),
  );
}

describe('a2a run --resume after kill -9', () => {
  it('continues with nothing lost and nothing handled twice, by message id', async () => {
    const ws = tempDir();
    writePlan(ws);
    const store = new FileRunStore(ws);
    const runId = 'durable-1';
    const first = a2a(['run', 'plan.json', '--script', 'script.json', '--questions', 'model', '--max-workers', String(WORKERS), '--run-id', runId, '--no-tree'], ws);

    // kill it once questions wait in the inbox behind the one being answered
    const before = await waitFor('messages waiting in the inbox', () => {
      const s = store.readStatus(runId) as RunStatus | null;
      return s && s.inbox.metrics.handled >= 2 && s.inbox.queued.length >= 3 ? s : null;
    });
    first.child.kill('SIGKILL');
    expect(await first.exited).not.toBe(0);
    const journalAtKill = store.readJournal(runId);
    const acceptedAtKill = journalAtKill.filter((r) => r.t === 'accepted').map((r) => (r as Extract<JournalRecord, { t: 'accepted' }>).message.id);
    const handledAtKill = new Set(journalAtKill.filter((r) => r.t === 'handled').map((r) => (r as Extract<JournalRecord, { t: 'handled' }>).id));
    const pendingAtKill = acceptedAtKill.filter((id) => !handledAtKill.has(id));
    expect(before.inbox.queued.length).toBeGreaterThanOrEqual(3);
    expect(pendingAtKill.length).toBeGreaterThanOrEqual(1);
    expect(store.read(runId).status).toBe('running'); // nobody recorded an end

    // resume: a second process continues from the checkpoint and the journal
    const second = a2a(['run', '--resume', runId, '--no-tree'], ws);
    expect(await second.exited, second.out()).toBe(0);
    expect(second.out()).toContain(`run ${runId} resumed from its checkpoint`);

    const record = store.read(runId);
    expect(record.status).toBe('completed');
    expect(record.resumes).toHaveLength(1);
    const summary = record.summary as RunSummary;
    expect(summary.tasks.map((t) => t.state)).toEqual(Array(WORKERS).fill('succeeded'));

    const journal = store.readJournal(runId);
    const accepted = journal.filter((r): r is Extract<JournalRecord, { t: 'accepted' }> => r.t === 'accepted');
    const handled = journal.filter((r): r is Extract<JournalRecord, { t: 'handled' }> => r.t === 'handled');
    const acceptedIds = accepted.map((r) => r.message.id);
    // nothing accepted twice, nothing handled twice, everything accepted handled
    expect(new Set(acceptedIds).size).toBe(acceptedIds.length);
    const handledCount = new Map<string, number>();
    for (const h of handled) handledCount.set(h.id, (handledCount.get(h.id) ?? 0) + 1);
    expect([...handledCount.values()].every((n) => n === 1), JSON.stringify([...handledCount].filter(([, n]) => n > 1))).toBe(true);
    expect(new Set(handledCount.keys())).toEqual(new Set(acceptedIds));
    // what waited at the kill was handled after the resume
    for (const id of pendingAtKill) expect(handledCount.get(id)).toBe(1);
    // per worker: one question, one status, one completion; one answer each in the conversation
    for (let i = 0; i < WORKERS; i++) {
      const mine = accepted.filter((r) => r.message.workerId === `w-q${i}`).map((r) => r.message.type).sort();
      expect(mine, `worker w-q${i}`).toEqual(['completion', 'question', 'status_update']);
      const talk = summary.conversations[`q${i}`]!;
      expect(talk.filter((e) => e.kind === 'question')).toHaveLength(1);
      expect(talk.filter((e) => e.kind === 'answer').map((e) => e.text)).toEqual(['Use PostgreSQL.']);
    }
    // the audit trail spans both processes
    const c = capture();
    expect(await main(['audit', runId, '--workspace', ws, '--format', 'md'], c.io)).toBe(0);
    expect(c.out()).toContain('| run.resumed |');
    expect(c.out().match(/\| question\.answered \|/g)!.length).toBeGreaterThanOrEqual(1);
  }, 90_000);

  it('refuses to resume a finished run, a live one, or a run that does not exist', async () => {
    const ws = tempDir();
    const c = capture();
    expect(await main(['run', '--resume', 'nope', '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain('no run "nope"');
    const store = new FileRunStore(ws);
    store.create({ runId: 'done-1', pid: process.pid, status: 'completed', startedAt: 0, planId: 'p', source: 'x' });
    expect(await main(['run', '--resume', 'done-1', '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain('run done-1 already finished (completed); nothing to resume');
    expect(await main(['run', 'plan.json', '--resume', 'done-1', '--workspace', ws], c.io)).toBe(2);
    expect(c.err()).toContain('give either a target or --resume <runId>, not both');
  });
});

describe('a live run answers a2a inbox, a2a redirect and a2a status from other processes', () => {
  it('approves a pending permission from another shell, refuses bad requests clearly, and shows the inbox', async () => {
    const ws = tempDir();
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'live', tasks: [{ id: 'build', agent: '@coder', prompt: 'build it' }] }));
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'coder',
            turns: [
              { toolCalls: [{ name: 'run_command', arguments: { command: 'echo built > out.txt && echo ok' } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'built' } }] },
            ],
          },
        ],
      }),
    );
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ permissions: { ask_user: ['command_execution'] } }));
    const run = a2a(['run', 'plan.json', '--script', 'script.json', '--run-id', 'live-1', '--no-tree'], ws);
    const store = new FileRunStore(ws);
    await waitFor('a pending permission', () => ((store.readStatus('live-1') as RunStatus | null)?.pending.length ?? 0) > 0);
    expect(run.out()).toContain('answer with: a2a inbox approve');

    const list = capture();
    expect(await main(['inbox', '--workspace', ws], list.io)).toBe(0);
    expect(list.out()).toContain('1. [permission] command_execution: echo built > out.txt && echo ok');

    const status = capture();
    expect(await main(['status', '--workspace', ws], status.io)).toBe(0);
    expect(status.out()).toMatch(/build\s+running\s+@coder\s+w-build \(waitingForPermission\)/);
    expect(status.out()).toContain('waiting for a person: 1');

    const bad = capture();
    expect(await main(['redirect', 'nope', 'do something else', '--workspace', ws], bad.io)).toBe(2);
    expect(bad.err()).toContain('no task "nope" in this run; tasks: build');
    expect(await main(['inbox', 'answer', '1', 'some text', '--workspace', ws], bad.io)).toBe(2);
    expect(bad.err()).toContain('is a permission request (command_execution: echo built > out.txt && echo ok): approve or deny it');
    expect(await main(['resume', 'build', '--workspace', ws], bad.io)).toBe(2);
    expect(bad.err()).toContain('is waitingForPermission, not paused');

    const ok = capture();
    expect(await main(['inbox', 'approve', '1', '--reason', 'looks safe', '--workspace', ws], ok.io)).toBe(0);
    expect(ok.out()).toContain('approved (command_execution: echo built > out.txt && echo ok)');
    expect(await run.exited, run.out()).toBe(0);
    const audit = store.readLines('live-1', 'audit.jsonl') as Array<{ type: string; data: Record<string, unknown> }>;
    const decided = audit.find((e) => e.type === 'permission.decided' && e.data.decidedBy === 'human')!;
    expect(decided.data).toMatchObject({ approved: true, reason: 'looks safe', action: 'command_execution' });
    const after = capture();
    expect(await main(['inbox', 'approve', '1', '--workspace', ws, '--run', 'live-1'], after.io)).toBe(2);
    expect(after.err()).toContain('run live-1 is completed, not running');
  }, 60_000);
});
