/**
 * The studio's server without a browser: who may ask (token, Host, Origin, content type), what a
 * bad request is told, the event stream (from an index, Last-Event-ID, a log that grows, a torn
 * line), the audit filters and exports, the runs list; and the page's model of a run (view.ts).
 */
import { appendFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startStudio, type RunningStudio } from '../../adapters/studio/server.js';
import { StudioRun } from '../../adapters/studio/page/view.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { capture, tempDir } from '../helpers.js';
import { studioCommand } from '../../bin/commands/studio.js';
import { pageBundle, writeRun } from './kit.js';

let studio: RunningStudio | null = null;
afterEach(async () => {
  await studio?.close();
  studio = null;
});

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
}

const auth = { authorization: 'Bearer secret-token' };

function request(path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port: studio!.port, path, method: options.method ?? 'GET', headers: options.headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Reads a server-sent event stream until `done` says so; returns its events. */
function readStream(path: string, headers: Record<string, string>, done: (events: Array<{ id?: string; event: string; data: string }>) => boolean): Promise<Array<{ id?: string; event: string; data: string }>> {
  return new Promise((resolve, reject) => {
    const events: Array<{ id?: string; event: string; data: string }> = [];
    const req = httpRequest({ host: '127.0.0.1', port: studio!.port, path, headers }, (res) => {
      let buffer = '';
      res.on('data', (d: Buffer) => {
        buffer += d.toString();
        let cut: number;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const fields: Record<string, string> = {};
          for (const line of block.split('\n')) {
            const m = /^(\w+): ?(.*)$/.exec(line);
            if (m) fields[m[1]!] = m[2]!;
          }
          if (fields.event) events.push({ ...(fields.id !== undefined ? { id: fields.id } : {}), event: fields.event, data: fields.data ?? '' });
        }
        if (done(events)) {
          req.destroy();
          resolve(events);
        }
      });
    });
    req.on('error', (e) => (events.length ? undefined : reject(e)));
    req.end();
  });
}

const EVENTS: Array<Partial<RunEvent> & { type: string }> = [
  { type: 'run.started', data: { planId: 'p', tasks: 1, source: 'plan.json', budgets: { runUsd: 1 } } },
  { type: 'worker.deployed', subTaskId: 'w-a', taskId: 'a', agentType: '@coder', depth: 0, data: { prompt: 'build a', expectedOutput: 'done', model: 'fast' } },
  { type: 'model.called', subTaskId: 'w-a', data: { turn: 1, text: 'running it', toolCalls: ['run_command'], calls: [{ id: 'c1', name: 'run_command', arguments: '{"command":"make"}' }], inputTokens: 10, outputTokens: 5, costUsd: 0.25 } },
  { type: 'permission.requested', subTaskId: 'w-a', taskId: 'a', data: { requestId: 'r1', action: 'command_execution', detail: 'make', requesterId: 'w-a' } },
  { type: 'permission.decided', subTaskId: 'w-a', taskId: 'a', data: { requestId: 'r1', approved: true, decidedBy: 'human', decider: 'ann', action: 'command_execution', requesterId: 'w-a' } },
  { type: 'tool.called', subTaskId: 'w-a', data: { name: 'run_command', isError: false, content: 'ok', callId: 'c1' } },
  { type: 'subtask.spawned', subTaskId: 'w-a.1', parentId: 'w-a', taskId: 'a', agentType: '@coder', depth: 1, data: { prompt: 'part', expectedOutput: 'x' } },
  { type: 'model.switched', subTaskId: 'w-a.1', data: { from: null, to: 'smart', by: 'ann' } },
  { type: 'inquiry.sent', subTaskId: 'w-a.1', data: { attempt: 1 } },
  { type: 'subtask.result', subTaskId: 'w-a.1', parentId: 'w-a', data: { status: 'success', how: 'tool', output: 'part done' } },
  { type: 'message.injected', subTaskId: 'w-a', data: { text: 'Sub-task w-a.1 completed: part done' } },
];

const AUDIT = [
  { type: 'permission.decided', runId: 'r1', seq: 4, ts: 1_004, subTaskId: 'w-a', workerId: 'w-a', taskId: 'a', data: { requestId: 'r1', approved: true, decidedBy: 'human', decider: 'ann', action: 'command_execution' } },
  { type: 'permission.decided', runId: 'r1', seq: 5, ts: 1_005, subTaskId: 'w-a.1', workerId: 'w-a', taskId: 'a', data: { requestId: 'r2', approved: false, decidedBy: 'policy', decider: 'policy', action: 'git_push' } },
  { type: 'subtask.spawned', runId: 'r1', seq: 6, ts: 1_006, subTaskId: 'w-a.1', workerId: 'w-a', taskId: 'a', data: { prompt: 'part', expectedOutput: 'x' } },
];

async function withRun(): Promise<{ ws: string; token: string }> {
  const ws = tempDir();
  writeRun(ws, { runId: 'r1', status: 'completed', finishedAt: 2_000 }, EVENTS, { audit: AUDIT });
  studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle(), token: 'secret-token' });
  return { ws, token: 'secret-token' };
}

describe('who may ask the studio', () => {
  it('asks for the token on every request, and says how to get it', async () => {
    await withRun();
    for (const path of ['/', '/page.js', '/api/runs', '/api/runs/r1', '/api/runs/r1/stream', '/api/runs/r1/audit', '/api/charts']) {
      const none = await request(path);
      expect(none.status, path).toBe(401);
      expect(none.body).toContain('open the URL `a2a studio` printed');
      expect((await request(`${path}?token=wrong-token!`)).status, path).toBe(401);
    }
    // the URL's token is taken once: exchanged for a cookie that holds no token, and the address left without it
    const opened = await request('/?token=secret-token');
    expect(opened.status).toBe(303);
    expect(opened.headers.location).toBe('/');
    const cookie = String(opened.headers['set-cookie']);
    expect(cookie).toMatch(new RegExp(`^a2a_studio_${studio!.port}=[0-9a-f]{64}; HttpOnly; SameSite=Strict; Path=/$`));
    expect(cookie).not.toContain('secret-token');
    const jar = { cookie: cookie.split(';')[0]! };
    const page = await request('/', { headers: jar });
    expect(page.status).toBe(200);
    expect(page.body).toContain('<script type="module" src="/page.js">');
    expect(page.body).not.toContain('secret-token');
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect((await request('/page.js', { headers: jar })).status).toBe(200);
    expect((await request('/api/runs', { headers: jar })).status).toBe(200);
    expect((await request('/api/runs', { headers: { cookie: `a2a_studio_${studio!.port}=${'0'.repeat(64)}` } })).status).toBe(401);
    expect((await request('/api/runs', { headers: { authorization: 'Bearer secret-token' } })).status).toBe(200);
    // no API takes the token in its URL, even the right one
    for (const path of ['/api/runs', '/api/runs/r1/stream', '/api/runs/r1/audit', '/page.js']) {
      const byUrl = await request(`${path}?token=secret-token`);
      expect(byUrl.status, path).toBe(401);
      expect(byUrl.body).toContain('carries it in its Authorization header');
    }
    // the page's change: its cookie and its header; the cookie alone (a cross-site form) is refused
    const change = { 'content-type': 'application/json', ...jar };
    expect((await request('/api/runs/r1/control', { method: 'POST', headers: change, body: JSON.stringify({ command: 'pause' }) })).status).toBe(403);
    expect((await request('/api/runs/r1/control', { method: 'POST', headers: { ...change, 'x-a2a-studio': '1' }, body: JSON.stringify({ command: 'pause' }) })).status).toBe(409); // past the guard: r1 has no live process
  });

  it('refuses a Host that is not this server (DNS rebinding), and changes from another origin, by URL token, or as a form', async () => {
    await withRun();
    const rebound = await request('/api/runs', { headers: { host: `evil.example:${studio!.port}`, ...auth } });
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.body).error).toBe(`this server does not answer for host "evil.example:${studio!.port}"`);
    const body = JSON.stringify({ command: 'pause' });
    const json = { 'content-type': 'application/json', authorization: 'Bearer secret-token' };
    const foreign = await request('/api/runs/r1/control', { method: 'POST', headers: { ...json, origin: 'https://evil.example' }, body });
    expect(foreign.status).toBe(403);
    expect(JSON.parse(foreign.body).error).toContain("must come from the studio's own page, not from https://evil.example");
    const byUrl = await request('/api/runs/r1/control?token=secret-token', { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(byUrl.status).toBe(401);
    expect(byUrl.body).toContain('Authorization header');
    const form = await request('/api/runs/r1/control', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Bearer secret-token' }, body: 'command=pause' });
    expect(form.status).toBe(415);
    expect(form.body).toContain('content-type must be application/json');
    expect((await request('/api/runs/r1', { method: 'DELETE', headers: auth })).status).toBe(405);
  });

  it('tells a bad change what was wrong, and changes nothing', async () => {
    await withRun();
    const post = (body: unknown, run = 'r1') => request(`/api/runs/${run}/control`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer secret-token' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
    const notJson = await post('{nope');
    expect([notJson.status, JSON.parse(notJson.body).error]).toEqual([400, 'the request body is not valid JSON']);
    const unknown = await post({ command: 'explode' });
    expect(unknown.status).toBe(400);
    expect(JSON.parse(unknown.body).error).toMatch(/command: .*\(commands: answer, approve_all, pause/);
    const missing = await post({ command: 'redirect', taskId: 'a' });
    expect(JSON.parse(missing.body).error).toContain('instructions');
    const forged = await post({ command: 'pause', by: 'someone else' });
    expect(JSON.parse(forged.body).error).toBe('by: set by the studio (who runs it), not by the page');
    const extra = await post({ command: 'stop', now: true });
    expect(JSON.parse(extra.body).error).toContain('now');
    // a finished run: the control channel's own refusal, with its code
    const finished = await post({ command: 'pause' });
    expect(finished.status).toBe(409);
    expect(JSON.parse(finished.body)).toMatchObject({ code: 'INVALID_STATE_TRANSITION', error: 'run r1 is completed, not running' });
    const gone = await post({ command: 'pause' }, 'nope');
    expect([gone.status, JSON.parse(gone.body).error]).toEqual([404, expect.stringContaining('no run "nope"')]);
    const bad = await request('/api/runs/..%2Fx', { headers: auth });
    expect(bad.status).toBe(400);
  });
});

describe('what the studio serves', () => {
  it('lists runs with their counts and cost', async () => {
    await withRun();
    const runs = JSON.parse((await request('/api/runs', { headers: auth })).body);
    expect(runs).toEqual([expect.objectContaining({ runId: 'r1', status: 'completed', sessions: 2, ended: 1, failed: 0, costUsd: 0.25, pending: 0 })]);
  });

  it('streams the log from an index or Last-Event-ID, then what is appended; a torn line waits for its end', async () => {
    const { ws } = await withRun();
    const all = await readStream('/api/runs/r1/stream', { ...auth }, (e) => e.some((x) => x.event === 'files'));
    const run = all.filter((e) => e.event === 'run');
    expect(run.map((e) => e.id)).toEqual(EVENTS.map((_, i) => String(i)));
    expect(JSON.parse(run[3]!.data)).toMatchObject({ type: 'permission.requested', subTaskId: 'w-a' });

    const after = await readStream('/api/runs/r1/stream?after=8', { ...auth }, (e) => e.some((x) => x.event === 'files'));
    expect(after.filter((e) => e.event === 'run').map((e) => e.id)).toEqual(['9', '10']);
    // an EventSource reconnecting sends its first URL again, with Last-Event-ID: the later one wins
    const resumed = await readStream('/api/runs/r1/stream?after=2', { 'last-event-id': '9', ...auth }, (e) => e.some((x) => x.event === 'files'));
    expect(resumed.filter((e) => e.event === 'run').map((e) => e.id)).toEqual(['10']);

    // live: half a line, then its end and one more; a line that is no run event is never sent
    const log = join(ws, '.a2a', 'runs', 'r1', 'events.jsonl');
    const live = readStream('/api/runs/r1/stream?after=10', { ...auth }, (e) => e.filter((x) => x.event === 'run').length >= 2);
    const next = JSON.stringify({ type: 'run.finished', runId: 'r1', seq: 11, ts: 2_000, data: { status: 'completed' } });
    appendFileSync(log, next.slice(0, 20));
    await new Promise((r) => setTimeout(r, 200));
    appendFileSync(log, `${next.slice(20)}\n{"type":"nonsense"}\n${JSON.stringify({ type: 'warning', runId: 'r1', seq: 12, ts: 2_001, data: { message: 'x' } })}\n`);
    const got = (await live).filter((e) => e.event === 'run');
    expect(got.map((e) => [e.id, JSON.parse(e.data).type])).toEqual([
      ['11', 'run.finished'],
      ['12', 'warning'],
    ]);
    const detail = JSON.parse((await request('/api/runs/r1', { headers: auth })).body);
    expect(detail.invalidLines).toBe(1);
    expect((await request('/api/runs/r1/stream?after=x', { headers: auth })).status).toBe(400);
  });

  it('streams many events a message when asked (batch=1, the page), from an index, then what is appended', async () => {
    const { ws } = await withRun();
    const runs = (events: Array<{ id?: string; event: string; data: string }>) => events.filter((e) => e.event === 'runs').map((e) => ({ id: e.id, ...(JSON.parse(e.data) as { first: number; events: RunEvent[] }) }));
    const all = runs(await readStream('/api/runs/r1/stream?batch=1', { ...auth }, (e) => e.some((x) => x.event === 'files')));
    expect(all.map((m) => [m.id, m.first, m.events.length])).toEqual([[String(EVENTS.length - 1), 0, EVENTS.length]]);
    expect(all[0]!.events.map((e) => e.seq)).toEqual(EVENTS.map((_, i) => i));
    const after = runs(await readStream('/api/runs/r1/stream?after=8&batch=1', { ...auth }, (e) => e.some((x) => x.event === 'files')));
    expect(after.map((m) => [m.id, m.first, m.events.map((e) => e.seq)])).toEqual([['10', 9, [9, 10]]]);
    // live: what the log gains comes in one message per read of it
    const live = readStream('/api/runs/r1/stream?after=10&batch=1', { ...auth }, (e) => e.some((x) => x.event === 'runs'));
    const more = [11, 12].map((seq) => JSON.stringify({ type: 'warning', runId: 'r1', seq, ts: 2_000 + seq, data: { message: `w${seq}` } }));
    appendFileSync(join(ws, '.a2a', 'runs', 'r1', 'events.jsonl'), `${more.join('\n')}\n`);
    expect(runs(await live).map((m) => [m.id, m.first, m.events.map((e) => e.seq)])).toEqual([['12', 11, [11, 12]]]);
    const wrong = await request('/api/runs/r1/stream?batch=yes', { headers: auth });
    expect(wrong.status).toBe(400);
    expect(wrong.body).toContain('batch');
  });

  it('filters the audit trail by actor, action and decision, and exports it', async () => {
    await withRun();
    const get = async (q: string) => JSON.parse((await request(`/api/runs/r1/audit${q ? `?${q.slice(1)}` : ''}`, { headers: auth })).body) as RunEvent[];
    expect((await get('')).length).toBe(3);
    expect((await get('&decision=denied')).map((r) => r.data.action)).toEqual(['git_push']);
    expect((await get('&action=command_execution')).map((r) => r.seq)).toEqual([4]);
    expect((await get('&action=subtask.spawned')).map((r) => r.seq)).toEqual([6]);
    expect((await get('&actor=w-a.1')).map((r) => r.seq)).toEqual([5, 6]);
    expect((await get('&actor=ann')).map((r) => r.seq)).toEqual([4]);
    const md = await request('/api/runs/r1/audit?format=md&decision=approved', { headers: auth });
    expect(md.headers['content-disposition']).toContain('r1-audit.md');
    expect(md.body).toContain('command_execution');
    expect(md.body).not.toContain('git_push');
    const jsonl = await request('/api/runs/r1/audit?format=json', { headers: auth });
    expect(jsonl.body.trim().split('\n')).toHaveLength(3);
    const wrong = await request('/api/runs/r1/audit?decision=maybe', { headers: auth });
    expect(wrong.status).toBe(400);
    expect(JSON.parse(wrong.body).error).toContain('decision');
  });

  it('serves every statechart the page draws', async () => {
    await withRun();
    const charts = JSON.parse((await request('/api/charts', { headers: auth })).body) as Record<string, { states: Array<{ id: string }> }>;
    expect(Object.keys(charts)).toEqual(expect.arrayContaining(['worker', 'subtask', 'sdlcWorkflow', 'orchestrator']));
    expect(charts.worker!.states.map((s) => s.id)).toEqual(expect.arrayContaining(['worker.running.waitingForPermission']));
  });
});

describe("the page's model of a run", () => {
  const run = () => {
    const r = new StudioRun();
    EVENTS.forEach((e, i) => r.apply(i, { runId: 'r1', seq: i, ts: 1_000 + i, data: {}, ...e } as RunEvent));
    return r;
  };

  it('draws the tree with model, badges, cost and budgets; an index seen twice is applied once', () => {
    const r = run();
    expect(r.view.roots).toEqual(['w-a']);
    expect(r.view.nodes.get('w-a')!.children).toEqual(['w-a.1']);
    expect(r.extras.get('w-a')!.model).toBe('fast');
    expect(r.extras.get('w-a.1')!.model).toBe('smart');
    // the permission was decided; the inquiry and the model switch stay until the result clears what waited
    expect(r.badgesOf(r.view.nodes.get('w-a')!)).toEqual([]);
    expect(r.badgesOf(r.view.nodes.get('w-a.1')!)).toEqual(['model']);
    expect(r.budgets).toEqual({ runUsd: 1 });
    expect(r.workerCosts()).toEqual([{ id: 'w-a', taskId: 'a', costUsd: 0.25 }]);
    expect(r.apply(3, { runId: 'r1', seq: 3, ts: 0, type: 'run.paused', data: { by: 'x' } })).toBe(false);
    expect(r.paused).toBe(false);
  });

  it("gives a session's transcript in order: task, model turn with its calls, permission, tool result, injected results", () => {
    const t = run().transcript('w-a');
    expect(t.map((e) => e.kind)).toEqual(['task', 'assistant', 'permission', 'permission', 'tool', 'injected']);
    expect(t[1]!.calls).toEqual([{ id: 'c1', name: 'run_command', arguments: '{"command":"make"}' }]);
    expect(t[3]!.text).toBe('command_execution approved by human ann');
    expect(t[5]!.text).toContain('Sub-task w-a.1 completed');
    const child = run().transcript('w-a.1');
    expect(child.map((e) => e.kind)).toEqual(['task', 'management', 'inquiry', 'result']);
  });

  it("gives a session's whole permission history: asked, each hop up, decided and by whom, however each event names the requester", () => {
    const r = new StudioRun();
    const events: Array<Partial<RunEvent>> = [
      { type: 'worker.deployed', subTaskId: 'w-b', taskId: 'b', depth: 0, agentType: 'coder', data: { prompt: 'b' } },
      { type: 'subtask.spawned', subTaskId: 'w-b.1', parentId: 'w-b', taskId: 'b', depth: 1, agentType: 'coder', data: { prompt: 'b1' } },
      // the sub-task asks; its parent passes it up (the hop names the requester as its session)
      { type: 'permission.requested', subTaskId: 'w-b.1', data: { requestId: 'p1', action: 'git_push', detail: 'origin', requesterId: 'w-b.1' } },
      { type: 'permission.forwarded', subTaskId: 'w-b.1', data: { requestId: 'p1', action: 'git_push', from: 'w-b.1', to: 'w-b', hop: 1 } },
      // a person decides at the orchestrator (the decision names the requester as its session)
      { type: 'permission.decided', subTaskId: 'w-b.1', data: { requestId: 'p1', action: 'git_push', approved: true, decidedBy: 'human', decider: 'root (studio)' } },
      // a second request, decided by the parent (its event is the parent's; the requester in its data)
      { type: 'permission.requested', subTaskId: 'w-b.1', data: { requestId: 'p2', action: 'file_write', detail: 'a.txt', requesterId: 'w-b.1' } },
      { type: 'permission.decided', subTaskId: 'w-b', data: { requestId: 'p2', action: 'file_write', approved: false, decidedBy: 'parent', decider: 'w-b', requesterId: 'w-b.1' } },
    ];
    events.forEach((e, i) => r.apply(i, { runId: 'r1', seq: i, ts: 1_000 + i, ...e } as RunEvent));
    expect(r.permissions('w-b.1').map((e) => `${e.type}:${String(e.data.requestId)}`)).toEqual(['permission.requested:p1', 'permission.forwarded:p1', 'permission.decided:p1', 'permission.requested:p2', 'permission.decided:p2']);
    expect(r.permissions('w-b')).toEqual([]);
    // who decided, written one way in the transcript and the tree
    expect(r.transcript('w-b.1').filter((t) => t.kind === 'permission').map((t) => t.text)).toEqual(expect.arrayContaining(['git_push approved by human root (studio)']));
    expect(r.view.nodes.get('w-b.1')!.note).toBe('file_write denied by parent w-b');
  });
});

describe('a2a studio (the command)', () => {
  it('prints the URL with its token where no redaction blanks it, and warns when bound beyond loopback', async () => {
    const ws = tempDir();
    const io = capture();
    const url = capture();
    let page = 0;
    const code = await studioCommand({ workspace: ws, host: '0.0.0.0', port: 0 }, { ...(io.io as object as { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }), url: (url.io as { stdout: NodeJS.WritableStream }).stdout }, async () => {
      const m = /open (http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48})\n/.exec(url.out());
      expect(m, url.out()).not.toBeNull();
      page = (await fetch(m![1]!, { redirect: 'manual' })).status;
    });
    expect(code).toBe(0);
    expect(page).toBe(303); // the token exchanged for the page's cookie
    expect(io.err()).toContain('a2a studio: warning: serving on 0.0.0.0, not loopback');
    expect(io.err()).toContain('The token is then the only protection');
  });

  it('keeps a token given in A2A_STUDIO_TOKEN out of its output', async () => {
    const io = capture();
    process.env.A2A_STUDIO_TOKEN = 'chosen-token-123456';
    try {
      let status = 0;
      await studioCommand({ workspace: tempDir(), port: 0 }, { ...(io.io as object as { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream }), url: (io.io as { stdout: NodeJS.WritableStream }).stdout }, async () => {
        const base = /open (http:\/\/127\.0\.0\.1:\d+\/)\?token=<A2A_STUDIO_TOKEN>/.exec(io.out())![1]!;
        status = (await fetch(`${base}api/runs`, { headers: { authorization: 'Bearer chosen-token-123456' } })).status;
      });
      expect(status).toBe(200);
      expect(io.out()).not.toContain('chosen-token-123456');
      expect(io.err()).toBe('');
    } finally {
      delete process.env.A2A_STUDIO_TOKEN;
    }
  });
});
