/**
 * Permissions end to end: real tools (run_command, write_file) ask; sessions decide within their
 * level, pass the rest up through their parents to the orchestrator, which applies the matrix and
 * asks a person for `ask_user`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { AuditRecord, PermissionAction } from '../../machines/protocol/index.js';
import { isAudited } from '../../actors/durability/audit.js';
import { describeWait } from '../../actors/people/humanGate.js';
import { formatElapsed, RunView } from '../../actors/observation/runView.js';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildPolicy, childPermissions, parsePermissionsMarkdown, workerPermissions } from '../../actors/people/permissions.js';
import { handleControl } from '../../adapters/runHost.js';
import { pendingHumanItems } from '../../actors/observation/runStatus.js';
import { complete, harness, spawnParallel } from '../helpers.js';
import { unconfinedRunner } from '../../adapters/sandbox/index.js';

const runCommand = (command: string) => ({ toolCalls: [{ name: 'run_command', arguments: { command } }] });

/** A coder that runs one command, then completes with what the tool said. */
const coderScript = (command: string) => ({
  rules: [{ agent: 'coder', turns: [runCommand(command), complete('done')] }],
});

function toolResult(h: ReturnType<typeof harness>, sessionId: string, name: string): string {
  const call = h.model.calls.filter((c) => c.sessionId === sessionId).at(-1)!;
  const msg = call.request.messages.find((m) => m.role === 'tool' && m.name === name);
  return msg?.content ?? '';
}

describe('permission matrix: each tier', () => {
  it('auto_approve within the worker level is decided by the session itself; nothing reaches the inbox', async () => {
    // commands ask a person by default: this workspace approves them
    const h = harness({ script: coderScript('echo within-level'), config: { permissions: { auto_approve: ['command_execution'] } }, io: true });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'run it' }] });
    await h.until(() => run.summary() !== null);
    expect(toolResult(h, 'w-t', 'run_command')).toContain('within-level');
    expect(h.of('permission.decided').map((e) => [e.data.decidedBy, e.data.approved])).toEqual([['policy', true]]);
    expect(h.of('permission.requested')).toHaveLength(0);
    expect(h.of('inbox.accepted').map((e) => e.data.type)).toEqual(['completion']);
  });

  it('auto_deny is refused by the orchestrator, and the tool says so', async () => {
    const h = harness({ script: coderScript('echo never'), config: { permissions: { auto_deny: ['command_execution'] } }, io: true });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'run it' }] });
    await h.until(() => run.summary() !== null);
    const decided = h.of('permission.decided').find((e) => e.data.decidedBy === 'orchestrator')!;
    expect(decided.data).toMatchObject({ action: 'command_execution', approved: false, tier: 'auto_deny', detail: 'echo never' });
    expect(toolResult(h, 'w-t', 'run_command')).toContain('denied by orchestrator: command_execution is auto_deny in the permission matrix. Nothing was run.');
    expect(h.of('human.asked')).toHaveLength(0);
  });

  it('ask_user waits for a person; the session shows waitingForPermission and is never counted idle', async () => {
    const h = harness({
      script: coderScript('echo approved-by-ann'),
      config: { permissions: { ask_user: ['command_execution'] }, idle: { idleThresholdMs: 1000, inquiryDelayMs: 100 } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'run it' }] });
    await h.until(() => h.of('human.asked').length === 1);
    // far past the idle threshold: no inquiry, because waiting for permission is not idle
    await h.advance(5_000, 500);
    expect(h.of('inquiry.sent')).toHaveLength(0);
    expect(h.of('session.state', 'w-t').map((e) => e.data.state).at(-1)).toBe('waitingForPermission');
    const [item] = pendingHumanItems(run.actor);
    expect(item).toMatchObject({ kind: 'permission', taskId: 't', requesterId: 'w-t', title: 'command_execution: echo approved-by-ann' });
    run.actor.send({ type: 'HUMAN_ANSWER', id: item!.id, answer: { approved: true, by: 'ann' } });
    await h.until(() => run.summary() !== null);
    expect(toolResult(h, 'w-t', 'run_command')).toContain('approved-by-ann');
    const decided = h.of('permission.decided').find((e) => e.data.decidedBy === 'human')!;
    expect(decided.data).toMatchObject({ approved: true, decider: 'ann', tier: 'ask_user' });
    expect(run.summary()!.conversations['t']!.map((c) => c.from)).toContain('human:ann');
  });

  it('ask_user with nobody answering: the default (deny) applies when the timeout passes', async () => {
    const h = harness({
      script: coderScript('echo too-late'),
      config: { permissions: { ask_user: ['command_execution'], ask_user_timeout_ms: 30_000 } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'run it' }] });
    await h.until(() => h.of('human.asked').length === 1);
    const askedAt = h.clock.now();
    await h.until(() => run.summary() !== null);
    const answered = h.of('human.answered')[0]!;
    expect(answered.data).toMatchObject({ by: 'timeout', approved: false });
    expect(answered.ts - askedAt).toBeGreaterThanOrEqual(30_000);
    expect(toolResult(h, 'w-t', 'run_command')).toContain('denied by timeout: nobody answered within 30000 ms');
    expect(pendingHumanItems(run.actor)).toEqual([]);
  });

  it('ask_user_default approve: the timeout approves', async () => {
    const h = harness({
      script: coderScript('echo approved-by-default'),
      config: { permissions: { ask_user: ['command_execution'], ask_user_timeout_ms: 1_000, ask_user_default: 'approve' } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'run it' }] });
    await h.until(() => run.summary() !== null);
    expect(toolResult(h, 'w-t', 'run_command')).toContain('approved-by-default');
  });
});

describe('inheritance and bubbling', () => {
  it('a sub-task inherits its parent level narrowed by auto_approve_for_subtasks', () => {
    const policy = buildPolicy([
      { source: 'test', layer: { auto_approve: ['command_execution'], auto_approve_for_subtasks: ['file_edits_in_worktree', 'command_execution', 'branch_push'] } },
    ]);
    const worker = workerPermissions(policy);
    expect(worker.level).toContain('subtask_spawning');
    expect(worker.level).not.toContain('branch_push'); // ask_user: not the worker's to grant
    const child = childPermissions(worker);
    expect(child.level).toEqual(['file_edits_in_worktree', 'command_execution']);
    expect(childPermissions(child).level).toEqual(['file_edits_in_worktree', 'command_execution']);
  });

  const twoLevels = (command: string) => ({
    rules: [
      { agent: 'agent', depth: 0, turns: [spawnParallel([{ agentType: '@agent', prompt: 'middle' }], { text: 'delegating' })], reactions: [{ when: 'finished', turn: complete('worker done') }] },
      { agent: 'agent', depth: 1, turns: [spawnParallel([{ agentType: '@coder', prompt: 'leaf' }])], reactions: [{ when: 'finished', turn: complete('middle done') }] },
      { agent: 'coder', depth: 2, turns: [runCommand(command), complete('leaf done')] },
    ],
  });

  it('a request from depth 2 passes its parent (outside its level too) and is approved by the worker, within its level', async () => {
    const h = harness({
      script: twoLevels('echo from-the-leaf'),
      config: { permissions: { auto_approve: ['command_execution'], auto_approve_for_subtasks: ['file_edits_in_worktree', 'subtask_spawning'] } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'do it in layers' }] });
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.status).toBe('completed');
    const requested = h.of('permission.requested');
    expect(requested.map((e) => e.subTaskId)).toEqual(['w-t.1.1']);
    const decided = h.of('permission.decided').find((e) => e.data.requestId === requested[0]!.data.requestId && e.data.decidedBy === 'parent')!;
    expect(decided.data).toMatchObject({ approved: true, decider: 'w-t' });
    expect(toolResult(h, 'w-t.1.1', 'run_command')).toContain('from-the-leaf');
    expect(h.of('inbox.accepted').filter((e) => e.data.type === 'permission_request')).toHaveLength(0);
  });

  it('an ask_user request from depth 2 bubbles through both parents to the orchestrator and a person', async () => {
    const h = harness({ script: twoLevels('echo asked-ann'), config: { permissions: { ask_user: ['command_execution'] } }, io: true });
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'do it in layers' }] });
    await h.until(() => h.of('human.asked').length === 1);
    const [item] = pendingHumanItems(run.actor);
    expect(item!.request!.via).toEqual(['w-t.1.1', 'w-t.1', 'w-t']);
    expect(item).toMatchObject({ requesterId: 'w-t.1.1', workerId: 'w-t', taskId: 't' });
    run.actor.send({ type: 'HUMAN_ANSWER', id: item!.id, answer: { approved: true, by: 'ann', reason: 'fine' } });
    await h.until(() => run.summary() !== null);
    expect(toolResult(h, 'w-t.1.1', 'run_command')).toContain('asked-ann');
    expect(run.summary()!.status).toBe('completed');
  });
});

describe('a request on its way: times, hops, audit records', () => {
  const twoLevels = (command: string) => ({
    rules: [
      { agent: 'agent', depth: 0, turns: [spawnParallel([{ agentType: '@agent', prompt: 'middle' }], { text: 'delegating' })], reactions: [{ when: 'finished', turn: complete('worker done') }] },
      { agent: 'agent', depth: 1, turns: [spawnParallel([{ agentType: '@coder', prompt: 'leaf' }])], reactions: [{ when: 'finished', turn: complete('middle done') }] },
      { agent: 'coder', depth: 2, turns: [runCommand(command), complete('leaf done')] },
    ],
  });
  const audited = (h: ReturnType<typeof harness>) => h.events.filter(isAudited);

  it('is stamped on the run clock, shows each hop as an event, and the person sees how long is left', async () => {
    const h = harness({ script: twoLevels('echo asked'), config: { permissions: { ask_user: ['command_execution'], ask_user_timeout_ms: 60_000 } }, io: true });
    h.clock.increment(5_000); // the run starts at 5 s on the simulated clock: a time of 0 would be the old bug
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'do it in layers' }] });
    await h.until(() => h.of('human.asked').length === 1);
    const asked = h.of('human.asked')[0]!;
    const [item] = pendingHumanItems(run.actor);
    expect(item!.askedAt).toBe(asked.ts);
    expect(item!.request!.timestamp).toBeGreaterThanOrEqual(5_000);
    expect(item!.request!.timestamp).toBeLessThanOrEqual(item!.askedAt);
    expect(asked.data).toMatchObject({ askedAt: item!.askedAt, expiresAt: item!.askedAt + 60_000 });
    expect(describeWait(item!, h.clock.now())).toBe(`${formatElapsed(item!.askedAt + 60_000 - h.clock.now())} left, then denied by default: nobody answered`);
    await h.advance(15_000, 1_000);
    expect(describeWait(item!, item!.askedAt + 15_000)).toBe('45.0s left, then denied by default: nobody answered');

    // the way up, hop by hop, each about the requester: sub-task → parent → worker → orchestrator → a person
    const hops = h.of('permission.forwarded');
    expect(hops.map((e) => `${String(e.data.from)}>${String(e.data.to)}`)).toEqual(['w-t.1.1>w-t.1', 'w-t.1>w-t', 'w-t>orchestrator']);
    expect(hops.map((e) => e.data.hop)).toEqual([1, 2, 3]);
    for (const e of hops) expect(e).toMatchObject({ subTaskId: 'w-t.1.1', parentId: 'w-t.1', depth: 2, agentType: '@coder', taskId: 't', workerId: 'w-t', planId: 'plan' });
    const order = [h.of('permission.requested')[0]!, ...hops, asked].map((e) => e.seq);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    // the live tree shows where it waits
    const view = new RunView();
    for (const e of h.events) view.apply(e);
    expect(view.nodes.get('w-t.1.1')!.note).toBe('command_execution: echo asked: waiting for a person');

    run.actor.send({ type: 'HUMAN_ANSWER', id: item!.id, answer: { approved: true, by: 'ann' } });
    await h.until(() => run.summary() !== null);
    const decided = h.of('permission.decided').find((e) => e.data.decidedBy === 'human')!;
    expect(decided).toMatchObject({ subTaskId: 'w-t.1.1', parentId: 'w-t.1', depth: 2, agentType: '@coder', planId: 'plan' });
    expect(h.of('human.answered')[0]).toMatchObject({ planId: 'plan', subTaskId: 'w-t.1.1', parentId: 'w-t.1', depth: 2 });
    for (const record of audited(h)) expect(AuditRecord.safeParse(record).error?.issues ?? [], `${record.type} #${record.seq}`).toEqual([]);
  });

  it('decided by the timeout: the record carries the requester\'s whole context too', async () => {
    const h = harness({ script: twoLevels('echo too-late'), config: { permissions: { ask_user: ['command_execution'], ask_user_timeout_ms: 2_000 } }, io: true });
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'do it in layers' }] });
    await h.until(() => run.summary() !== null);
    const decided = h.of('permission.decided').find((e) => e.data.decidedBy === 'timeout')!;
    expect(decided).toMatchObject({ subTaskId: 'w-t.1.1', parentId: 'w-t.1', depth: 2, agentType: '@coder', planId: 'plan', taskId: 't', workerId: 'w-t' });
    expect(h.of('inbox.accepted').find((e) => e.data.type === 'permission_request')).toMatchObject({ subTaskId: 'w-t.1.1', parentId: 'w-t.1', depth: 2, agentType: '@coder' });
    for (const record of audited(h)) expect(AuditRecord.safeParse(record).error?.issues ?? [], `${record.type} #${record.seq}`).toEqual([]);
  });
});

describe('commands without a sandbox', () => {
  it('asks a person even where the matrix approves commands: no level and no auto_approve on the way up counts', async () => {
    const h = harness({
      script: {
        rules: [
          { agent: 'agent', depth: 0, turns: [spawnParallel([{ agentType: '@coder', prompt: 'leaf' }])], reactions: [{ when: 'finished', turn: complete('worker done') }] },
          { agent: 'coder', depth: 1, turns: [runCommand('echo unconfined'), complete('leaf done')] },
        ],
      },
      config: { permissions: { auto_approve: ['command_execution'] } },
      commands: unconfinedRunner(),
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@agent', prompt: 'run it below' }] });
    await h.until(() => h.of('human.asked').length === 1);
    const [item] = pendingHumanItems(run.actor);
    expect(item!.request).toMatchObject({ action: 'command_execution', needsPerson: true, via: ['w-t.1', 'w-t'] });
    expect(h.of('permission.decided')).toHaveLength(0);
    run.actor.send({ type: 'HUMAN_ANSWER', id: item!.id, answer: { approved: true, by: 'ann' } });
    await h.until(() => run.summary() !== null);
    expect(toolResult(h, 'w-t.1', 'run_command')).toContain('unconfined');
  });
});

describe('human channel: batch approval', () => {
  it('approves every pending permission at once through the control channel', async () => {
    const h = harness({
      script: { rules: [{ agent: 'coder', turns: [runCommand('echo $A2A_X'), complete('done')] }] },
      config: { permissions: { ask_user: ['command_execution'] } },
      io: true,
    });
    const run = h.run({
      tasks: [
        { id: 'a', agent: '@coder', prompt: 'first' },
        { id: 'b', agent: '@coder', prompt: 'second' },
      ],
    });
    await h.until(() => h.of('human.asked').length === 2);
    expect(handleControl(run.actor, h.runtime, { command: 'answer', id: 'nope', approved: true, by: 'ann' })).toMatchObject({ ok: false });
    const reply = handleControl(run.actor, h.runtime, { command: 'approve_all', by: 'ann' });
    expect(reply).toMatchObject({ ok: true });
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.status).toBe('completed');
    expect(h.of('human.answered').map((e) => [e.workerId, e.data.approved, e.data.by]).sort()).toEqual([
      ['w-a', true, 'ann'],
      ['w-b', true, 'ann'],
    ]);
    expect(handleControl(run.actor, h.runtime, { command: 'approve_all', by: 'ann' })).toMatchObject({ ok: false, error: 'the run has already ended' });
  });
});

describe('file edits ask before they change anything', () => {
  it('a denied write leaves no file behind', async () => {
    const h = harness({
      script: { rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'src/a.ts', content: 'x' } }] }, complete('done')] }] },
      config: { permissions: { auto_deny: ['file_creation_in_worktree'] } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'write' }] });
    await h.until(() => run.summary() !== null);
    expect(toolResult(h, 'w-t', 'write_file')).toContain('denied by orchestrator');
    expect(existsSync(join(h.workspace, 'src/a.ts'))).toBe(false);
  });
});

describe('permissions.md', () => {
  const file = '.github/agents/orchestrator/permissions.md';

  it('reads the appendix format: the three lists, sub-task grants and the Limits section', () => {
    const { layer, limits } = parsePermissionsMarkdown(
      [
        '---',
        'version: 1',
        '---',
        '# Permissions',
        '## Auto-Approve',
        '- file_edits_in_worktree',
        '- `command_execution`',
        '## Ask User',
        '- branch_merge  # people decide merges',
        '## Auto-Deny',
        '- force_push',
        '## Auto-Approve for Sub-Tasks',
        '- file_edits_in_worktree',
        '## Limits',
        'max_subtask_depth: 3',
        'ask_user_timeout_ms: 60000',
      ].join('\n'),
      file,
    );
    expect(layer).toMatchObject({
      auto_approve: ['file_edits_in_worktree', 'command_execution'],
      ask_user: ['branch_merge'],
      auto_deny: ['force_push'],
      auto_approve_for_subtasks: ['file_edits_in_worktree'],
      ask_user_timeout_ms: 60000,
    });
    expect(limits).toEqual({ maxDepth: 3 });
  });

  it.each([
    ['## Auto-Approve\n- delete_everything', /permissions\.md:2: unknown action "delete_everything". Allowed actions: file_edits_in_worktree, /],
    ['## Auto-Approve\n- force_push\n## Ask User\n- force_push', /permissions\.md:4: force_push is already listed on line 2/],
    ['## Limits\nmax_subtask_depth: deep', /permissions\.md:2: max_subtask_depth must be a whole number/],
    ['## Whatever', /permissions\.md:1: unknown section "Whatever"/],
    ['- file_edits_in_worktree', /permissions\.md:1: "- file_edits_in_worktree" is outside any section/],
  ])('names the file, the line and what is allowed: %s', (text, message) => {
    expect(() => parsePermissionsMarkdown(text, file)).toThrow(message);
  });

  it('reads the commented example in examples/permissions: every action, the policy keys in the frontmatter, every limit', () => {
    const example = join(import.meta.dirname, '../../examples/permissions/permissions.md');
    const { layer, limits } = parsePermissionsMarkdown(readFileSync(example, 'utf8'), example);
    const listed = [...layer.auto_approve!, ...layer.ask_user!, ...layer.auto_deny!];
    expect([...listed].sort()).toEqual([...PermissionAction.options].sort());
    expect(layer).toMatchObject({ ask_user_timeout_ms: 300000, ask_user_default: 'deny', auto_approve_for_subtasks: ['file_edits_in_worktree', 'file_creation_in_worktree', 'command_execution'] });
    expect(limits).toEqual({ maxDepth: 3, maxSubtasksPerWorker: 20, maxParallelSubtasks: 5, spawnRatePerMinute: 10 });
    expect(() => buildPolicy([{ source: example, layer }])).not.toThrow();
  });

  it.each([
    ['---\nversion: 1\nask_user_default: maybe\n---\n## Auto-Approve', /permissions\.md:3: ask_user_default must be deny or approve, got "maybe"/],
    ['## Limits\nask_user_default: maybe', /permissions\.md:2: ask_user_default must be deny or approve, got "maybe"/],
    ['---\nask_user_timout_ms: 5\n---', /permissions\.md:2: unknown frontmatter key "ask_user_timout_ms" \(did you mean "ask_user_timeout_ms"\?\)\. Allowed: version, max_subtask_depth, /],
    ['---\nask_user_timeout_ms: soon\n---', /permissions\.md:2: ask_user_timeout_ms must be a whole number of milliseconds > 0, got "soon"/],
    ['## Limits\nmax_subtask_dept: 2', /permissions\.md:2: unknown limit "max_subtask_dept" \(did you mean "max_subtask_depth"\?\)/],
  ])('checks the frontmatter as it checks Limits: %s', (text, message) => {
    expect(() => parsePermissionsMarkdown(text, file)).toThrow(message);
  });

  it('refuses to move an always-denied action out of auto_deny', () => {
    expect(() => buildPolicy([{ source: 'a2a.config.json', layer: { auto_approve: ['force_push'] } }])).toThrow(
      'a2a.config.json: force_push is always denied and cannot be moved to auto_approve',
    );
  });

  it('layers: the config overrides permissions.md action by action', () => {
    const policy = buildPolicy([
      { source: 'permissions.md', layer: { ask_user: ['command_execution'] } },
      { source: 'config', layer: { auto_approve: ['command_execution'] } },
    ]);
    expect(policy.matrix.command_execution).toBe('auto_approve');
    expect(policy.matrix.branch_merge).toBe('ask_user');
  });
});

