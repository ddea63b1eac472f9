/**
 * The studio in a real browser (Debian's chromium, driven by playwright-core) against real runs
 * (`a2a run` in its own process, the scripted model slowed down so that a person could watch):
 * the tree fills in live; a sub-task's transcript; a permission approved from the page goes on
 * and is audited; pause and resume; a reconnect (streams dropped, then the studio restarted)
 * loses and repeats no event; an MCP server's question answered from the inbox; time travel (the
 * slider, its keys, a link) and the charts drawn as diagrams; the NATS view with two hosts; a run on
 * a host opened from the NATS view with no file of it in the studio's workspace (its permission
 * approved through its control subject, its cost and a transcript shown, each process with its
 * own NATS user); a task served over A2A (`serveA2A`
 * in this process) with the task its worker delegated; every control reachable by keyboard and
 * labelled. Screenshots of the main views go to test-results/studio/.
 */
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startStudio, type RunningStudio } from '../../adapters/studio/server.js';
import { serveA2A } from '../../adapters/a2aProtocol/server.js';
import { parseScript } from '../../adapters/model/scripted.js';
import { clientOf, drain, message, send, states, taskIdOf } from '../a2aProtocol/fixtures.js';
import { remoteAgent } from '../a2aProtocol/remoteServer.js';
import { watchNamespace, type NatsWatch } from '../../adapters/studio/nats.js';
import { connectNats } from '../../adapters/transport/nats.js';
import { natsUsers, type NatsUser } from '../../adapters/transport/natsUsers.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import type { Transport } from '../../machines/ports.js';
import { main } from '../../bin/cli.js';
import { capture, tempDir } from '../helpers.js';
import { a2aHost, a2aProcess, killAll, served, splitWorkspace, waitFor, type Proc } from '../nats/cluster.js';
import { startNatsServer, type NatsServer } from '../nats/server.js';
import { launchBrowser, pageBundle, SHOTS, writeRun } from './kit.js';
import { spanIdOf } from '../../actors/observation/traceIds.js';

const examples = join(import.meta.dirname, '..', '..', 'examples');
let browser: Browser;
let studio: RunningStudio | null = null;
let page: Page | null = null;
const cleanups: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  browser = await launchBrowser();
  pageBundle();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  killAll();
  await page?.close().catch(() => undefined);
  page = null;
  await studio?.close();
  studio = null;
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});

const USER = 'ann (studio)';

async function open(ws: string, hash: string, extra: { nats?: NatsWatch; traceUrl?: string } = {}): Promise<Page> {
  studio ??= await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle(), user: USER, pollMs: 50, ...extra });
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  // a step that cannot happen fails in seconds with what it waited for, not at the test's timeout
  page.setDefaultTimeout(5_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  cleanups.push(async () => expect(errors, 'errors in the page').toEqual([]));
  await page.goto(`${studio.url}${hash}`);
  return page;
}

const shot = (p: Page, name: string) => p.screenshot({ path: join(SHOTS, `${name}.png`) });
const events = (ws: string, runId: string): RunEvent[] => {
  try {
    return new FileRunStore(ws).events(runId);
  } catch {
    return [];
  }
};
const started = (ws: string, runId: string) => waitFor(`run ${runId} to start`, () => events(ws, runId).length > 0, 8_000);

/** `a2a run` of a plan in `ws`, in its own process. */
function run(ws: string, runId: string, args: string[] = []): Proc {
  return a2aProcess(['run', 'plan.json', '--script', 'script.json', '--run-id', runId, '--no-tree', ...args], ws);
}

/** The OAuth example in a workspace of its own, each model turn slowed to `delayMs`. */
function slowOauth(delayMs: number): string {
  const ws = tempDir('a2a-studio-');
  const plan = JSON.parse(readFileSync(join(examples, 'oauth', 'plan.json'), 'utf8')) as Record<string, unknown>;
  const script = JSON.parse(readFileSync(join(examples, 'oauth', 'script.json'), 'utf8')) as { rules: Array<{ turns?: Array<Record<string, unknown>>; reactions?: Array<{ turn: Record<string, unknown> }> }> };
  for (const rule of script.rules) {
    for (const turn of rule.turns ?? []) turn.delayMs = Math.max(Number(turn.delayMs ?? 0), delayMs);
    for (const r of rule.reactions ?? []) r.turn.delayMs = Math.max(Number(r.turn.delayMs ?? 0), delayMs);
  }
  writeFileSync(join(ws, 'plan.json'), JSON.stringify({ ...plan, script: 'script.json' }));
  writeFileSync(join(ws, 'script.json'), JSON.stringify(script));
  return ws;
}

/** The process's exit code, or a failure naming what it printed if it runs longer than `ms`. */
async function exited(proc: Proc, ms = 8_000): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the run did not end within ${ms} ms:\n${proc.out()}`)), ms)));
  try {
    return await Promise.race([proc.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Sessions drawn with a final status (success, partial, failed). */
const endedCount = (p: Page) => p.locator('button[data-node] span.s-success, button[data-node] span.s-partial, button[data-node] span.s-failed').count();
const nodeCount = (p: Page) => p.locator('button[data-node]').count();

describe('a2a studio in a browser', () => {
  it('shows the OAuth run filling in live, and a sub-task transcript', async () => {
    // slow enough that the page, opened once the run has started, sees it before its end even when
    // a loaded machine takes seconds to open it (at 250 ms a call the run had ended first, once)
    const ws = slowOauth(600);
    const proc = run(ws, 'oauth-live');
    await started(ws, 'oauth-live');
    const p = await open(ws, '#/run/oauth-live');
    // the tree fills in in place: how many sessions had ended, seen while the run goes on, without a reload
    const ended = new Set<number>();
    let navigations = 0;
    p.on('framenavigated', () => navigations++);
    const deadline = Date.now() + 8_000;
    while (Date.now() < deadline) {
      ended.add(await endedCount(p));
      if ((await p.locator('#runhead .stat').first().textContent())?.includes('completed')) break;
      await p.waitForTimeout(40);
    }
    expect(await exited(proc), proc.out()).toBe(0);
    await p.locator('#runhead .stat', { hasText: 'completed' }).waitFor({ timeout: 3_000 });
    expect(await nodeCount(p)).toBe(4);
    expect(await endedCount(p)).toBe(4);
    expect(Math.min(...ended)).toBeLessThan(4);
    expect(navigations).toBe(0);
    await shot(p, 'run-tree');

    // the frontend sub-task went idle and answered its inquiry: its transcript says so
    await p.locator('button[data-node="w-design.2"]').click();
    const transcript = p.locator('[aria-label="Transcript of w-design.2"]');
    await expect.poll(() => transcript.textContent()).toContain('frontend OAuth login flow');
    expect(await transcript.textContent()).toContain('inquiry.sent');
    await p.locator('button[data-node="w-design"]').click();
    const worker = p.locator('[aria-label="Transcript of w-design"]');
    await expect.poll(() => worker.textContent()).toContain('a2a_spawn_parallel_subtasks(');
    expect(await worker.textContent()).toContain('injected by the runtime');
    // its chart drawn as a diagram: where it is now, and the transitions it took
    expect(await p.locator('svg.diagram .st.active text').first().textContent()).toBe('completed');
    expect(await p.locator('svg.diagram .ed.taken').count()).toBeGreaterThan(1);
    // nothing listens at the inspector's address: no link to it, a hint instead
    expect(await p.locator('a:has-text("open in the Stately inspector")').count()).toBe(0);
    expect(await p.locator('#session').textContent()).toContain('a2a inspect');
    await shot(p, 'run-transcript');
  });

  it('approves a pending permission from the page: the run goes on, the audit records it, the CLI agrees', async () => {
    const ws = tempDir('a2a-studio-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'live', tasks: [{ id: 'build', agent: '@coder', prompt: 'build it' }] }));
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'coder',
            turns: [{ toolCalls: [{ name: 'run_command', arguments: { command: 'echo built > out.txt && echo ok' } }] }, { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'built' } }] }],
          },
        ],
      }),
    );
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ permissions: { ask_user: ['command_execution'] } }));
    const proc = run(ws, 'perm-1');
    await started(ws, 'perm-1');
    // the run asks first (on a loaded machine its process can take seconds to get there: not the page's doing)
    await waitFor('the permission request', () => events(ws, 'perm-1').some((e) => e.type === 'permission.requested'), 15_000, proc.out);
    const p = await open(ws, '#/run/perm-1/inbox');
    const approve = p.getByRole('button', { name: 'Approve: command_execution: echo built > out.txt && echo ok' });
    await approve.waitFor({ timeout: 8_000 });
    expect(await p.locator('.group h3').textContent()).toBe('plan live · task build');
    // the CLI lists the same item
    const list = capture();
    expect(await main(['inbox', '--workspace', ws], list.io)).toBe(0);
    expect(list.out()).toContain('1. [permission] command_execution: echo built > out.txt && echo ok');
    await shot(p, 'inbox');

    await p.getByLabel('Reason for item 1').fill('looks safe');
    await approve.click();
    await p.locator('#toast', { hasText: 'approved (command_execution' }).waitFor({ timeout: 5_000 });
    expect(await exited(proc), proc.out()).toBe(0);
    const audit = new FileRunStore(ws).readLines('perm-1', 'audit.jsonl') as RunEvent[];
    expect(audit.find((e) => e.type === 'permission.decided' && e.data.decidedBy === 'human')?.data).toMatchObject({ approved: true, reason: 'looks safe', decider: USER });

    // the audit view, filtered to approvals
    await p.getByRole('tab', { name: 'Audit' }).click();
    await p.getByLabel('Decision').selectOption('approved');
    await p.getByRole('button', { name: 'Filter' }).click();
    const rows = p.locator('[aria-label="Audit records"] tbody tr');
    await expect.poll(() => rows.count()).toBeGreaterThan(0);
    expect(await rows.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('permission.decided')]));
    await shot(p, 'audit');
  });

  it("answers an MCP server's question from the page: the server gets the fields typed", async () => {
    const ws = tempDir('a2a-studio-');
    const config = join(ws, 'user-config');
    const seen = join(ws, 'server');
    mkdirSync(join(config, 'agents'), { recursive: true });
    mkdirSync(seen);
    const server = join(import.meta.dirname, '..', 'mcp', 'fixtures', 'clientServers.mjs');
    // the server is declared in the user's own config (a workspace's file may not start servers)
    writeFileSync(
      join(config, 'agents', 'traveller.agent.md'),
      `---\nname: traveller\ndescription: Books stays\ntools: [a2a_subtask_complete]\nmcpServers:\n  hotel:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(server)}, v2, ${JSON.stringify(seen)}]\n    permission: auto_approve\n---\nBook what you are asked to.\n`,
    );
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'trip', tasks: [{ id: 'stay', agent: '@traveller', prompt: 'book a stay' }] }));
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [{ agent: 'traveller', turns: [{ toolCalls: [{ name: 'mcp__hotel__book', arguments: {} }] }, { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'booked' } }] }] }] }));
    const proc = a2aProcess(['run', 'plan.json', '--script', 'script.json', '--run-id', 'mcp-ask', '--no-tree'], ws, { ...process.env, A2A_CONFIG_HOME: config });
    await waitFor("the server's question", () => events(ws, 'mcp-ask').some((e) => e.type === 'mcp.elicitation.asked'), 15_000, proc.out);
    const p = await open(ws, '#/run/mcp-ask/inbox');
    const answer = p.getByLabel(/^Answer to item 1: Where should the stay be booked\?/);
    await answer.waitFor({ timeout: 8_000 }).catch(async (e) => {
      await shot(p, 'inbox-mcp-question-failed');
      throw new Error(`${String(e)}\npage: ${await p.locator('#body').innerHTML()}`);
    });
    expect(await p.locator('.elicit').textContent()).toMatch(/hotel asks: Where should the stay be booked\?\s*wants city\* string · Where to, nights integer/);
    await shot(p, 'inbox-mcp-question');
    await answer.fill('{"city": "Lisbon", "nights": 3}');
    await p.getByRole('button', { name: 'Send the answer to hotel' }).click();
    expect(await exited(proc, 15_000), proc.out()).toBe(0);
    expect(readFileSync(join(seen, 'calls'), 'utf8')).toContain('book accept {"city":"Lisbon","nights":3}');
    const answered = events(ws, 'mcp-ask').find((e) => e.type === 'human.answered');
    expect(answered?.data).toMatchObject({ approved: true, by: USER });
  });

  it('pauses and resumes a run from the page', async () => {
    const ws = tempDir('a2a-studio-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'slow', tasks: [{ id: 'work', agent: '@coder', prompt: 'work slowly' }] }));
    const step = (i: number) => ({ delayMs: 200, toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'status', message: `step ${i}` } }] });
    const turns = [...Array.from({ length: 16 }, (_, i) => step(i + 1)), { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'done' } }] }];
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [{ agent: 'coder', turns }] }));
    const proc = run(ws, 'pause-1');
    await started(ws, 'pause-1');
    const p = await open(ws, '#/run/pause-1');
    await p.locator('button[data-node="w-work"]').waitFor({ timeout: 5_000 });
    await p.getByRole('button', { name: 'Pause run' }).click();
    await p.locator('#toast', { hasText: 'paused' }).waitFor({ timeout: 5_000 });
    const resume = p.getByRole('button', { name: 'Resume run' });
    await resume.waitFor({ timeout: 5_000 });
    expect(await p.locator('#runhead .stat').first().textContent()).toContain('paused');
    await waitFor('run.paused in the log', () => events(ws, 'pause-1').some((e) => e.type === 'run.paused'), 5_000);
    await p.locator('.badge.b-paused').first().waitFor({ timeout: 5_000 });
    await shot(p, 'paused');
    await resume.click();
    await p.locator('#toast', { hasText: 'resumed: agents go on' }).waitFor({ timeout: 5_000 });
    await waitFor('run.unpaused in the log', () => events(ws, 'pause-1').some((e) => e.type === 'run.unpaused'), 5_000);
    expect(await exited(proc), proc.out()).toBe(0);
    await p.locator('#runhead .stat', { hasText: 'completed' }).waitFor({ timeout: 5_000 });
    const types = events(ws, 'pause-1').map((e) => e.type);
    expect(types.indexOf('run.paused')).toBeLessThan(types.indexOf('run.unpaused'));
    expect(types.at(-1)).toBe('run.finished');
  });

  it("redirects a worker, changes its model and stops the run from the page", async () => {
    const ws = tempDir('a2a-studio-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'steer', tasks: [{ id: 'work', agent: '@coder', prompt: 'work slowly' }] }));
    const step = (i: number) => ({ delayMs: 250, toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'status', message: `step ${i}` } }] });
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [{ agent: 'coder', turns: [...Array.from({ length: 30 }, (_, i) => step(i + 1)), { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'done' } }] }] }] }));
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ models: { profiles: { careful: { provider: 'scripted', model: 'scripted' } } } }));
    const proc = run(ws, 'steer-1');
    await started(ws, 'steer-1');
    const p = await open(ws, '#/run/steer-1/tree/w-work');
    await p.getByLabel('Model profile for work').waitFor({ timeout: 5_000 });
    // a bad value is refused with the run's own message, and changes nothing
    await p.getByLabel('Model profile for work').fill('nonexistent');
    await p.getByRole('button', { name: 'Change model' }).click();
    await p.locator('#toast .bad').first().waitFor({ timeout: 5_000 });
    expect(await p.locator('#toast .bad').first().textContent()).toContain('nonexistent');
    await p.getByLabel('Model profile for work').fill('careful');
    await p.getByRole('button', { name: 'Change model' }).click();
    await p.locator('.badge.b-model').first().waitFor({ timeout: 5_000 });
    await p.getByLabel('Instructions to redirect work with').fill('keep the public API unchanged');
    await p.getByRole('button', { name: 'Redirect' }).click();
    await waitFor('the redirect in the log', () => events(ws, 'steer-1').some((e) => e.type === 'worker.redirected'), 5_000);
    const transcript = p.locator('[aria-label="Transcript of w-work"]');
    await expect.poll(() => transcript.textContent(), { timeout: 5_000 }).toContain('redirected by ann (studio): keep the public API unchanged');
    // stop asks to be confirmed
    const stop = p.getByRole('button', { name: 'Stop the run: cancels every worker and sub-task' });
    await stop.click();
    await p.getByRole('button', { name: 'Confirm: stop the run now' }).click();
    expect(await exited(proc), proc.out()).not.toBe(0);
    await p.locator('#runhead .stat', { hasText: 'cancelled' }).waitFor({ timeout: 5_000 });
    const log = events(ws, 'steer-1');
    expect(log.find((e) => e.type === 'model.switched')?.data).toMatchObject({ to: 'careful', by: USER });
    expect(log.find((e) => e.type === 'run.finished')?.data.status).toBe('cancelled');
  });

  it('shows a workflow run: its state on the chart, the artifacts with versions, the organiser\'s decisions', async () => {
    const ws = tempDir('a2a-studio-');
    cpSync(join(examples, 'sdlc', 'repo'), ws, { recursive: true });
    cpSync(join(examples, 'sdlc', 'script.json'), join(ws, 'script.json'));
    // the example without git (each step's worktree and merge cost seconds): the same workflow, files written in place
    const workflow = JSON.parse(readFileSync(join(examples, 'sdlc', 'workflow.json'), 'utf8')) as { config: { git: unknown }; workspace?: string };
    workflow.config.git = { worktrees: 'off' };
    delete workflow.workspace;
    writeFileSync(join(ws, 'plan.json'), JSON.stringify(workflow));
    const proc = run(ws, 'wf-1');
    expect(await exited(proc), proc.out()).toBe(0);
    const p = await open(ws, '#/run/wf-1/workflow');
    await p.locator('[aria-label="Workflow state"] h2', { hasText: 'COMPLETED' }).waitFor({ timeout: 5_000 });
    expect(await p.locator('svg.diagram .st.active text').first().textContent()).toBe('COMPLETED');
    expect(await p.locator('svg.diagram .ed.taken').count()).toBeGreaterThan(5);
    const artifacts = p.locator('[aria-label="Artifacts"] tbody tr');
    await expect.poll(() => artifacts.count(), { timeout: 5_000 }).toBeGreaterThan(3);
    expect(await p.locator('[aria-label="Artifacts"] tbody tr').first().textContent()).toMatch(/^implementation_plan-1v2approvedarchitectPlan: greet\(name\)/);
    const decisions = p.locator('[aria-label="Artifacts and decisions"] ol li');
    expect(await decisions.count()).toBeGreaterThan(5);
    expect(await decisions.first().textContent()).toContain('in PLANNING: approve');
    await shot(p, 'workflow');
  });

  it('loses and repeats no event when its stream drops and when the studio restarts mid-run', async () => {
    const ws = slowOauth(400);
    const proc = run(ws, 'reconnect-1');
    await started(ws, 'reconnect-1');
    const p = await open(ws, '#/run/reconnect-1/events');
    // what the page received: window.a2aStudio (adapters/studio/page/main.ts)
    const received = () => p.evaluate<number[]>('window.a2aStudio.received()');
    const reconnects = () => p.evaluate<number>('window.a2aStudio.reconnects()');
    await expect.poll(async () => (await received()).length, { timeout: 5_000 }).toBeGreaterThan(3);
    // 1. the server ends the stream (a proxy timing out, the network blinking)
    studio!.dropStreams();
    await expect.poll(reconnects, { timeout: 5_000 }).toBe(1);
    const before = (await received()).length;
    await expect.poll(async () => (await received()).length, { timeout: 6_000 }).toBeGreaterThan(before);
    // 2. the studio itself restarts, on the same port with the same token, while the run goes on
    const { port, token } = studio!;
    await studio!.close();
    await expect.poll(reconnects, { timeout: 5_000 }).toBe(2);
    studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle(), user: USER, pollMs: 50, port, token });
    expect(await exited(proc), proc.out()).toBe(0);
    const log = events(ws, 'reconnect-1');
    await expect.poll(async () => (await received()).length, { timeout: 5_000 }).toBe(log.length);
    expect(await received()).toEqual(log.map((_, i) => i));
    const seqs = await p.evaluate<number[]>('window.a2aStudio.seqs()');
    expect(seqs).toEqual(log.map((e) => e.seq));
    expect(await p.locator('#conn').textContent()).toBe('live');
  });

  it('shows a NATS namespace with two hosts and where each session runs', async () => {
    const server: NatsServer = await startNatsServer();
    cleanups.push(() => server.stop());
    const ws = splitWorkspace({ partMs: 300 });
    const a = a2aHost(server.url, ws, 'host-a', 'architect');
    const b = a2aHost(server.url, ws, 'host-b', 'coder');
    const transport: Transport = await connectNats({ servers: server.url, namespace: 'default', name: 'studio-test' });
    cleanups.push(() => transport.close());
    const nats = await watchNamespace(transport, { servers: server.url, namespace: 'default', intervalMs: 200 });
    cleanups.push(() => nats.close());
    await Promise.all([served(a), served(b)]);
    const p = await open(ws, '#/nats', { nats });
    await p.locator('tr[data-host="host-a"]').waitFor({ timeout: 5_000 });
    await p.locator('tr[data-host="host-b"]').waitFor({ timeout: 5_000 });
    expect(await p.locator('tr[data-host="host-b"]').textContent()).toContain('coder');
    const proc = a2aProcess(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'nats-1', '--no-tree'], ws);
    // the parts run on host-b, the architect on host-a
    await p.locator('[aria-label="Tree of nats-1"] li[aria-label^="w-design.1 on host-b"]').waitFor({ timeout: 8_000 });
    expect(await p.locator('[aria-label="Tree of nats-1"] li[aria-label^="w-design on host-a"]').count()).toBe(1);
    await shot(p, 'nats');
    expect(await exited(proc), proc.out()).toBe(0);
  });

  it('opens a run on a host from the NATS view and approves its permission through the run\'s control subject: its cost and a transcript shown, every process with its own user', async () => {
    // the users `a2a nats users --host alpha=coder --studio ops` makes, nkeys
    const { conf, users } = natsUsers({ namespace: 'default', hosts: [{ id: 'alpha', agents: ['coder'] }], gateways: [], agents: [], studios: ['ops'], runs: 2, auth: 'nkey', listen: '127.0.0.1:4222', storeDir: '/unused' });
    const server: NatsServer = await startNatsServer({ base: conf });
    cleanups.push(() => server.stop());
    const keys = tempDir('a2a-studio-keys-');
    const envOf = (name: string): NodeJS.ProcessEnv => {
      const u = users.find((x) => x.name === name) as NatsUser;
      writeFileSync(join(keys, `${name}.nk`), `${u.seed}\n`, { mode: 0o600 });
      const { A2A_NATS_USER: _u, A2A_NATS_PASSWORD: _p, A2A_NATS_TOKEN: _t, ...inherited } = process.env;
      return { ...inherited, A2A_NATS_NKEY: join(keys, `${name}.nk`), ...u.env };
    };
    // the run's workspace: one coder task whose command needs a person's approval, each model call priced
    const ws = tempDir('a2a-studio-nats-run-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'remote', tasks: [{ id: 'build', agent: '@coder', prompt: 'build it' }] }));
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({ rules: [{ agent: 'coder', turns: [{ toolCalls: [{ name: 'run_command', arguments: { command: 'echo built > out.txt && echo ok' } }] }, { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'built on alpha' } }] }] }] }),
    );
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ permissions: { ask_user: ['command_execution'] }, models: { prices: { scripted: { inputPerMTok: 1_000, outputPerMTok: 1_000 } } } }));
    const host = a2aHost(server.url, ws, 'alpha', 'coder', { env: envOf('host-alpha') });
    // the studio as studio-ops, with a workspace of its own: it has no file of the run
    const env = envOf('studio-ops');
    const transport: Transport = await connectNats({ servers: server.url, namespace: 'default', name: 'studio-test', nkeyFile: env.A2A_NATS_NKEY!, inboxPrefix: env.A2A_NATS_INBOX_PREFIX!, jsApiPrefix: env.A2A_NATS_JS_API_PREFIX! });
    cleanups.push(() => transport.close());
    const nats = await watchNamespace(transport, { servers: server.url, namespace: 'default', intervalMs: 200, controlUser: env.A2A_NATS_NAME! });
    cleanups.push(() => nats.close());
    await served(host);
    const proc = a2aProcess(['run', 'plan.json', '--nats', server.url, '--script', 'script.json', '--run-id', 'nats-perm', '--no-tree'], ws, envOf('orchestrator'));
    const p = await open(tempDir('a2a-studio-elsewhere-'), '#/nats', { nats });
    await p.getByRole('link', { name: 'Open run nats-perm' }).click({ timeout: 8_000 });
    await p.getByRole('tab', { name: /^Inbox/ }).click();
    const approve = p.getByRole('button', { name: 'Approve: command_execution: echo built > out.txt && echo ok' });
    await approve.waitFor({ timeout: 8_000 });
    await p.getByLabel('Reason for item 1').fill('fine on alpha');
    await approve.click();
    await p.locator('#toast', { hasText: 'approved (command_execution' }).waitFor({ timeout: 5_000 });
    expect(await exited(proc), proc.out()).toBe(0);
    // who approved: the person at the studio, through the studio's NATS user (the server binds the name)
    const audit = new FileRunStore(ws).readLines('nats-perm', 'audit.jsonl') as RunEvent[];
    expect(audit.find((e) => e.type === 'permission.decided' && e.data.decidedBy === 'human')?.data).toMatchObject({ approved: true, reason: 'fine on alpha', decider: `${USER} via studio-ops` });
    // the page has the whole log, read over NATS, as the run wrote it
    const log = events(ws, 'nats-perm');
    await expect.poll(async () => (await p.evaluate<number[]>('window.a2aStudio.seqs()')).length, { timeout: 5_000 }).toBe(log.length);
    expect(await p.evaluate<number[]>('window.a2aStudio.seqs()')).toEqual(log.map((e) => e.seq));
    await expect.poll(() => p.locator('[aria-label="status"]').textContent(), { timeout: 5_000 }).toBe('completed');
    // its cost (priced on the host), and the worker's transcript
    const spent = log.filter((e) => e.type === 'model.called').reduce((sum, e) => sum + Number(e.data.costUsd ?? 0), 0);
    expect(spent).toBeGreaterThan(0);
    await p.getByRole('tab', { name: 'Cost' }).click();
    expect(await p.locator('[aria-label="Cost"]').textContent()).toContain(`$${spent.toFixed(2)}`);
    // the audit trail: the log's audited events, filtered as for a local run
    await p.getByRole('tab', { name: 'Audit' }).click();
    await p.getByLabel('Decision').selectOption('approved');
    await p.getByRole('button', { name: 'Filter' }).click();
    const rows = p.locator('[aria-label="Audit records"] tbody tr');
    await expect.poll(() => rows.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('permission.decided')]));
    await p.getByRole('tab', { name: 'Tree' }).click();
    await p.locator('button[data-node="w-build"]').click();
    const transcript = p.locator('[aria-label="Transcript of w-build"]');
    await expect.poll(() => transcript.textContent(), { timeout: 5_000 }).toContain('echo built > out.txt');
    await shot(p, 'nats-run');
    expect(server.log().split('\n').filter((l) => /Violation/.test(l))).toEqual([]);
  });

  it('shows a task served over A2A: its state, client and messages, and the remote task its worker delegated', async () => {
    const ws = tempDir('a2a-studio-');
    const remote = await remoteAgent();
    cleanups.push(() => remote.close());
    const script = parseScript(
      {
        rules: [
          {
            agent: 'coder',
            depth: 0,
            turns: [{ toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: [{ agentType: '@translator', prompt: 'translate hello', expectedOutput: 'the word' }] } }] }, { text: 'Waiting.' }],
            reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { status: 'success', output: 'hello is bonjour' } }] } }],
          },
        ],
      },
      'the served worker',
    );
    const server = await serveA2A({
      workspace: ws,
      version: '1',
      agent: 'coder',
      notify: () => undefined,
      run: { scriptData: script, agents: [{ name: 'translator', description: 'a remote translator', remote: { url: remote.url } as never }], settings: { permissions: { auto_approve: ['remote_agent_delegation'] } } },
    });
    cleanups.push(() => server.close());
    const streamed = await drain(send(await clientOf(server.url), message('Translate hello for me', { skill: 'coder' })));
    expect(states(streamed).at(-1)).toBe('COMPLETED');
    const taskId = taskIdOf(streamed);
    const runId = (await server.executor.records.read(taskId))!.record.runId!;
    await waitFor(`run ${runId} to end`, () => events(ws, runId).some((e) => e.type === 'run.finished'), 8_000);
    const p = await open(ws, `#/run/${runId}/a2a`);
    const row = p.locator(`[aria-label="Served A2A tasks"] tr[data-a2a-task="${taskId}"]`);
    await row.waitFor({ timeout: 8_000 });
    expect(await row.textContent()).toContain('completed');
    expect(await p.locator('#tab-a2a').textContent()).toBe('A2A (2)');
    const said = p.locator(`[aria-label="Messages of A2A task ${taskId}"]`);
    expect(await said.textContent()).toContain('client →');
    expect(await said.textContent()).toContain('Translate hello for me');
    expect(await said.textContent()).toContain('result: hello is bonjour');
    const delegated = p.locator('[aria-label="Delegated A2A tasks"] tbody tr');
    expect(await delegated.count()).toBe(1);
    expect(await delegated.textContent()).toContain(`${remote.url}/`);
    expect(await delegated.textContent()).toContain('completed');
    await shot(p, 'a2a');
    // the delegating session's node shows its remote task, and so does its view
    await p.getByRole('link', { name: 'w-task.1' }).click();
    const node = p.locator('button[data-node="w-task.1"] .chip.remote');
    await node.waitFor({ timeout: 5_000 });
    expect(await node.textContent()).toContain('completed');
    expect(await p.locator('[aria-label="Remote A2A task of w-task.1"]').textContent()).toContain(`${remote.url}/`);
    await shot(p, 'a2a-session');
  });

  it('travels in time: the slider, its keys and a link redraw the tree, the chart, the inbox and the cost as they were', async () => {
    const ws = slowOauth(0);
    const proc = run(ws, 'time-1');
    expect(await exited(proc), proc.out()).toBe(0);
    const log = events(ws, 'time-1');
    const spawned = log.findIndex((e) => e.type === 'subtask.spawned');
    const p = await open(ws, '#/run/time-1/tree/w-design');
    await p.locator('#runhead .stat', { hasText: 'completed' }).waitFor({ timeout: 5_000 });
    const slider = p.locator('#time');
    expect(await slider.getAttribute('max')).toBe(String(log.length - 1));
    expect(await nodeCount(p)).toBe(4);
    // to the event before the first sub-task: one worker, running, in a state of its own
    await slider.fill(String(spawned - 1));
    await expect.poll(() => nodeCount(p)).toBe(1);
    expect(await p.locator('#runhead .stat').first().textContent()).toBe('running');
    expect(await p.locator('.timebar .when').textContent()).toContain(`event ${spawned} of ${log.length}`);
    expect(p.url()).toContain(`/run/time-1/tree/w-design?at=${spawned - 1}`);
    const before = await p.locator('svg.diagram .st.active text').first().textContent();
    expect(before).not.toBe('completed');
    // nothing can be changed in the past: no pause, stop or manage
    expect(await p.locator('button[data-act="pause"], button[data-act="stop"], button[data-act="redirect"]').count()).toBe(0);
    await shot(p, 'time-slider');
    // ] steps forward to the spawn: the sub-tasks appear
    await slider.focus();
    await p.keyboard.press(']');
    await expect.poll(() => nodeCount(p)).toBeGreaterThan(1);
    expect(p.url()).toContain(`?at=${spawned}`);
    // the link opens another page on the same event and view
    const link = await p.locator('.timebar a[aria-label^="Link to the run at event"]').getAttribute('href');
    const other = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    cleanups.push(() => other.close());
    await other.goto(`${studio!.url}${link}`);
    await expect.poll(() => other.locator('button[data-node]').count(), { timeout: 5_000 }).toBe(await nodeCount(p));
    expect(await other.locator('.timebar .when').textContent()).toContain(`event ${spawned + 1} of`);
    // the events view: each line a link to the run at that event, the slider's marked
    await p.locator('#tab-events').click();
    expect(await p.locator('.events a.ev.here').textContent()).toContain(String(spawned + 1));
    await p.locator('.events a.ev').nth(2).click();
    await expect.poll(() => p.locator('.timebar .when').textContent()).toContain(`event 3 of ${log.length}`);
    // back to live
    await p.locator('button[data-time="live"]').first().click();
    await expect.poll(() => p.locator('.timebar .when').textContent()).toContain(`live · ${log.length} events`);
    await p.locator('#tab-tree').click();
    await expect.poll(() => nodeCount(p)).toBe(4);
    // the worker's chart, drawn as a diagram with the path it took
    await p.locator('#session .chartbox svg.diagram').scrollIntoViewIfNeeded();
    await p.locator('#session .chartbox').screenshot({ path: join(SHOTS, 'live-chart.png') });
  });

  it('links a traced run and each session to the tracing backend (--trace-url), at the session\'s first span', async () => {
    const ws = tempDir('a2a-studio-');
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    writeRun(ws, { runId: 'traced' }, [
      { type: 'run.started', data: { planId: 'p', tasks: 1, source: 'plan.json', traceId } },
      { type: 'worker.deployed', subTaskId: 'w-a', taskId: 'a', agentType: '@coder', depth: 0, parentId: 'orchestrator', data: { prompt: 'do a', expectedOutput: 'a' } },
      { type: 'subtask.result', subTaskId: 'w-a', taskId: 'a', parentId: 'orchestrator', data: { status: 'success', output: 'done' } },
      { type: 'run.finished', data: { status: 'completed' } },
    ]);
    const p = await open(ws, '#/run/traced/tree/w-a', { traceUrl: 'http://127.0.0.1:16686/trace/{traceId}?uiFind={spanId}' });
    const run = p.getByRole('link', { name: 'Trace of the run in the tracing backend' });
    await run.waitFor({ timeout: 5_000 });
    expect(await run.getAttribute('href')).toBe(`http://127.0.0.1:16686/trace/${traceId}?uiFind=${spanIdOf('traced', 'orchestrator')}`);
    const session = p.getByRole('link', { name: 'Trace of w-a in the tracing backend' });
    await session.waitFor({ timeout: 5_000 });
    expect(await session.getAttribute('href')).toBe(`http://127.0.0.1:16686/trace/${traceId}?uiFind=${spanIdOf('traced', 'w-a')}`);
    // a template that is no trace URL is refused, naming the option and what is allowed
    await expect(startStudio({ workspace: ws, traceUrl: 'ftp://x/{spanId}' })).rejects.toThrow(/--trace-url \(A2A_TRACE_URL\) "ftp:\/\/x\/\{spanId\}" is not a trace URL template: give an http\(s\) URL with \{traceId\}/);
  });

  it('lets every control be reached by keyboard, each with a name', async () => {
    const ws = slowOauth(0);
    const proc = run(ws, 'a11y-1');
    expect(await exited(proc), proc.out()).toBe(0);
    const p = await open(ws, '#/');
    await p.locator('a[href="#/run/a11y-1"]').waitFor({ timeout: 5_000 });
    await shot(p, 'runs');
    // from the list to the run by keyboard alone
    await p.locator('a[href="#/run/a11y-1"]').focus();
    await p.keyboard.press('Enter');
    await p.locator('button[data-node="w-design"]').waitFor({ timeout: 5_000 });
    await p.locator('button[data-node="w-design"]').focus();
    await p.keyboard.press('Enter');
    await p.locator('[aria-label="Transcript of w-design"]').waitFor({ timeout: 5_000 });
    // the tree's rows by their arrow keys: down to the last sub-task, and Enter selects it
    await p.keyboard.press('End');
    expect(await p.evaluate<string>('document.activeElement.dataset.node')).toBe('w-design.3');
    await p.keyboard.press('ArrowUp');
    expect(await p.evaluate<string>('document.activeElement.dataset.node')).toBe('w-design.2');
    await p.keyboard.press('Enter');
    await p.locator('[aria-label="Transcript of w-design.2"]').waitFor({ timeout: 5_000 });
    for (const tab of ['tree', 'inbox', 'audit', 'cost', 'workflow', 'a2a', 'events']) {
      await p.locator(`#tab-${tab}`).focus();
      await p.keyboard.press('Enter');
      await expect.poll(() => p.locator(`#tab-${tab}`).getAttribute('aria-selected')).toBe('true');
      // every interactive element is focusable and has an accessible name; the tree is one tab
      // stop (one row's button has it, the arrow keys reach the others)
      const unnamed = await p.evaluate<string[]>(`(() => {
        const out = [];
        for (const el of document.querySelectorAll('button, a[href], input, select, textarea')) {
          if (el.closest('[hidden]')) continue;
          const labelled = el.getAttribute('aria-label') || el.textContent.trim() || (el.id && document.querySelector('label[for="' + el.id + '"]')?.textContent.trim());
          const tree = el.closest('[role=tree]');
          const reachable = el.tabIndex >= 0 || (tree && tree.querySelectorAll('button[data-node][tabindex="0"]').length === 1);
          if (!labelled || !reachable) out.push(el.outerHTML.slice(0, 80));
        }
        return out;
      })()`);
      expect(unnamed, `unnamed or unreachable controls on ${tab}`).toEqual([]);
    }
    // Tab moves through the controls in order, never stuck
    await p.locator('#tab-tree').focus();
    const seen = new Set<string>();
    for (let i = 0; i < 12; i++) {
      await p.keyboard.press('Tab');
      seen.add(await p.evaluate<string>("document.activeElement?.outerHTML.slice(0, 60) ?? ''"));
    }
    expect(seen.size).toBeGreaterThan(8);
  });
});
