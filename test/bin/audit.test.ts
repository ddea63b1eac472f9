/**
 * The audit trail: the stuck-worker example is detected and redirected, visible in the export;
 * every record has its context; credentials never reach it.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { SecretRedactor } from '../../actors/config/secrets.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { AuditRecord, type RunEvent } from '../../machines/protocol/index.js';
import { renderAuditMarkdown } from '../../actors/durability/audit.js';
import { capture, tempDir } from '../helpers.js';

const root = resolve(import.meta.dirname, '..', '..');

/** Every record carries what it is about in full (AuditRecord: a session's operation its task, worker, sub-task, parent, depth and agent type). */
function expectFullContext(records: RunEvent[]): void {
  const problems = records.flatMap((r) => (AuditRecord.safeParse(r).error?.issues ?? []).map((i) => `#${r.seq} ${i.message}`));
  expect(problems).toEqual([]);
}


describe('a2a audit', () => {
  it('shows the stuck worker of examples/stuck-worker detected and redirected', async () => {
    const ws = tempDir();
    const run = capture();
    expect(await main(['run', join(root, 'examples/stuck-worker'), '--workspace', ws, '--run-id', 'stuck-1'], run.io)).toBe(0);
    expect(run.out()).toContain('⚠ w-settings is stuck: the same tool call 3 times in a row');
    expect(run.out()).toContain('↻ w-settings redirected by health monitor');

    const md = capture();
    expect(await main(['audit', 'stuck-1', '--workspace', ws, '--format', 'md'], md.io)).toBe(0);
    const table = md.out();
    expect(table).toMatch(/\| stuck\.detected \| settings \| w-settings \| orchestrator \| 0 \| @coder \| the same tool call 3 times in a row/);
    expect(table).toMatch(/\| worker\.redirected \| settings \| w-settings \|.*by health monitor because stuck: the same tool call 3 times/);
    expect(table.indexOf('| stuck.detected |')).toBeLessThan(table.indexOf('| worker.redirected |'));

    const json = capture();
    expect(await main(['audit', 'stuck-1', '--workspace', ws, '--format', 'json'], json.io)).toBe(0);
    const records = json.out().trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    expect(records.map((r) => r.type)).toEqual(expect.arrayContaining(['run.started', 'worker.deployed', 'stuck.detected', 'worker.redirected', 'subtask.result', 'task.completed', 'run.finished']));
    expect(records.every((r) => r.runId === 'stuck-1')).toBe(true);
    expect(records.some((r) => r.type === 'tool.called' || r.type === 'session.state')).toBe(false);
    expectFullContext(records);
  });

  it('gives every record of the OAuth example its full context', async () => {
    const ws = tempDir();
    expect(await main(['run', join(root, 'examples/oauth'), '--workspace', ws, '--run-id', 'oauth-1', '--no-tree'], capture().io)).toBe(0);
    const json = capture();
    expect(await main(['audit', 'oauth-1', '--workspace', ws, '--format', 'json'], json.io)).toBe(0);
    const records = json.out().trim().split('\n').map((l) => JSON.parse(l) as RunEvent);
    expect(new Set(records.map((r) => r.type))).toEqual(new Set(['run.started', 'worker.deployed', 'subtask.spawned', 'subtask.result', 'update.queued', 'inbox.accepted', 'inquiry.sent', 'inquiry.answered', 'task.completed', 'run.finished']));
    expectFullContext(records);
    // the Markdown export says who sent each update
    const md = capture();
    expect(await main(['audit', 'oauth-1', '--workspace', ws, '--format', 'md'], md.io)).toBe(0);
    expect(md.out()).toMatch(/\| update\.queued \|[^\n]*\| completed from w-design\.1/);
  });

  it('shows a failed result\'s error in the Markdown export', () => {
    const md = renderAuditMarkdown('r', [
      { type: 'subtask.result', runId: 'r', seq: 1, ts: 0, planId: 'p', taskId: 't', workerId: 'w', subTaskId: 'w.1', parentId: 'w', depth: 1, agentType: '@coder', data: { status: 'failed', output: '', error: 'crashed: disk full' } },
    ]);
    expect(md).toContain('| failed: crashed: disk full |');
  });

  it('never writes a credential, whoever put it in a prompt', async () => {
    const ws = tempDir();
    const key = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123456789';
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'leak', tasks: [{ id: 't', agent: '@coder', prompt: `Call the API with ${key} and token=ghp_abcdefghijklmnopqrstuvwxyz0123` }] }));
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: `used ${key}` } }] }] }] }));
    expect(await main(['run', join(ws, 'plan.json'), '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'leak-1'], capture().io)).toBe(0);
    const audit = JSON.stringify(new FileRunStore(ws).readLines('leak-1', 'audit.jsonl'));
    expect(audit).toContain('[redacted]');
    expect(audit).not.toContain('abcdefghijklmnopqrstuvwxyz0123456789');
    expect(audit).not.toContain('ghp_abcdefghij');
  });

  it('redacts known secrets and credential shapes, and leaves ordinary text alone', () => {
    const redactor = new SecretRedactor();
    redactor.add('MY_SECRET', 'my-own-secret-value');
    expect(redactor.text('key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA end')).toBe('key [redacted] end');
    expect(redactor.text('gemini AIzaSyA1234567890abcdefghijklmnopqrstuv end')).toBe('gemini [redacted] end');
    expect(redactor.text('Authorization: Bearer abcdefghijklmnopqrstuvwxyz')).toBe('Authorization: Bearer [redacted]');
    expect(redactor.text('password = "hunter2hunter2"')).toBe('password = "[redacted]"');
    expect(redactor.text('my-own-secret-value here')).toBe('[redacted:MY_SECRET] here');
    expect(redactor.text('a task about tokens and keys, sk-short')).toBe('a task about tokens and keys, sk-short');
  });
});
