/**
 * Traces of a run, exported over OTLP/HTTP to a receiver inside the test and checked against the
 * run's own events: the OAuth example (a worker, three parallel sub-tasks, one of which crashes,
 * an idle inquiry), a plan with a secret in its prompt (content attributes, redacted), the
 * standard OTEL_* variables (JSON, headers), and what is refused.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { defineAgent, defineTool, scriptedModel, startRun, z } from '../../index.js';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { secrets } from '../../actors/config/secrets.js';
import { spanIdOf, traceIdOf, tracingEnabled } from '../../actors/observation/tracing.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { capture, tempDir } from '../helpers.js';
import { spanTree, startReceiver, type ReceivedSpan, type Receiver } from './receiver.js';

const ERROR = 2;

function oauthWorkspace(): string {
  const ws = tempDir('a2a-otel-');
  cpSync(resolve('examples/oauth'), ws, { recursive: true });
  return ws;
}

const by = (spans: ReceivedSpan[], name: string) => spans.filter((s) => s.name === name);
const sessionSpan = (spans: ReceivedSpan[], id: string) => spans.filter((s) => s.name.startsWith('invoke_agent ') && s.attributes['gen_ai.agent.id'] === id);

describe('traces of the OAuth example', () => {
  let rx: Receiver;
  let events: RunEvent[];
  let spans: ReceivedSpan[];
  let runId: string;

  beforeAll(async () => {
    rx = await startReceiver();
    const ws = oauthWorkspace();
    events = [];
    const run = await startRun({ target: ws, workspace: ws, store: 'memory', otel: rx.url, notify: () => {}, onEvent: (e) => events.push(e as RunEvent) });
    runId = run.id;
    const outcome = await run.done;
    expect(outcome.status).toBe('completed');
    // the run's spans are exported before `done` settles, unless the collector took more than 5 s
    spans = [...(await rx.runExported(traceIdOf(runId)))];
  });

  afterAll(async () => {
    await rx.close();
  });

  it('is one trace, rooted at the orchestrator, whose ids derive from the run id', () => {
    expect(spans.length).toBeGreaterThan(20);
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([traceIdOf(runId)]));
    const ids = new Set(spans.map((s) => s.spanId));
    expect(ids.size).toBe(spans.length);
    const roots = spans.filter((s) => !s.parentSpanId);
    expect(roots.map((s) => s.name)).toEqual(['invoke_agent orchestrator']);
    expect(roots[0]!.spanId).toBe(spanIdOf(runId, 'orchestrator'));
    // the run's log says which trace (the studio links a run and its sessions to the tracing backend with it)
    expect(events.find((e) => e.type === 'run.started')?.data.traceId).toBe(traceIdOf(runId));
    const worker = sessionSpan(spans, 'w-design')[0]!;
    expect(worker.spanId).toBe(spanIdOf(runId, 'w-design'));
    expect(roots[0]!.attributes).toMatchObject({ 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'orchestrator', 'gen_ai.conversation.id': runId, 'a2a.run.status': 'completed' });
    // every other span hangs from one of the trace's spans
    for (const s of spans) if (s.parentSpanId) expect(ids.has(s.parentSpanId), `parent of ${s.name}`).toBe(true);
    // and every gen_ai span names the run as its conversation
    for (const s of spans.filter((x) => x.attributes['gen_ai.operation.name'])) expect(s.attributes['gen_ai.conversation.id']).toBe(runId);
    expect(roots[0]!.resource['service.name']).toBe('a2a');
  });

  it('has one invoke_agent span per session, under its owner, timed by its spawn and its result', () => {
    const spawned = events.filter((e) => e.type === 'worker.deployed' || e.type === 'subtask.spawned');
    expect(spawned.map((e) => e.subTaskId).sort()).toEqual(['w-design', 'w-design.1', 'w-design.2', 'w-design.3']);
    const task = by(spans, 'task design');
    expect(task).toHaveLength(1);
    expect(task[0]!.parentSpanId).toBe(spanIdOf(runId, 'orchestrator'));
    for (const e of spawned) {
      const found = sessionSpan(spans, e.subTaskId!);
      expect(found, e.subTaskId).toHaveLength(1);
      const span = found[0]!;
      expect(span.spanId).toBe(spanIdOf(runId, e.subTaskId!));
      expect(span.name).toBe(`invoke_agent ${e.agentType!.replace(/^@/, '')}`);
      expect(span.parentSpanId).toBe(e.type === 'worker.deployed' ? task[0]!.spanId : sessionSpan(spans, e.parentId!)[0]!.spanId);
      const result = events.find((r) => r.type === 'subtask.result' && r.subTaskId === e.subTaskId)!;
      expect(Math.abs(span.startMs - e.ts)).toBeLessThan(2);
      expect(Math.abs(span.endMs - result.ts)).toBeLessThan(2);
      expect(span.attributes['a2a.result.status']).toBe(result.data.status);
      if (result.data.status === 'failed') {
        expect(span.status.code).toBe(ERROR);
        expect(span.attributes['error.type']).toBe('failed');
      } else {
        expect(span.status.code).not.toBe(ERROR);
      }
    }
    // the database sub-task crashed: its span says so
    expect(events.find((r) => r.type === 'subtask.result' && r.data.status === 'failed')).toBeDefined();
  });

  it('has a chat span per model call, with its provider, model, tokens and cost, under its session', () => {
    const chats = spans.filter((s) => s.name.startsWith('chat '));
    for (const id of ['w-design', 'w-design.1', 'w-design.2', 'w-design.3']) {
      const parent = sessionSpan(spans, id)[0]!.spanId;
      const mine = chats.filter((c) => c.parentSpanId === parent);
      const calls = events.filter((e) => e.type === 'model.called' && e.subTaskId === id && e.data.discarded !== true);
      const ok = mine.filter((c) => c.status.code !== ERROR);
      expect(ok.length, `chat spans of ${id}`).toBe(calls.length);
      expect(ok.reduce((n, c) => n + Number(c.attributes['gen_ai.usage.input_tokens']), 0)).toBe(calls.reduce((n, e) => n + Number(e.data.inputTokens), 0));
      expect(ok.reduce((n, c) => n + Number(c.attributes['gen_ai.usage.output_tokens']), 0)).toBe(calls.reduce((n, e) => n + Number(e.data.outputTokens), 0));
      for (const c of mine) {
        expect(c.kind).toBe(3); // CLIENT
        expect(c.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'a2a.scripted', 'gen_ai.request.model': 'scripted', 'gen_ai.conversation.id': runId });
      }
    }
    // the crashed sub-task's last call failed: its chat span carries the error
    const failed = chats.filter((c) => c.status.code === ERROR);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.attributes['error.type']).toBeTruthy();
    expect(failed[0]!.parentSpanId).toBe(sessionSpan(spans, events.find((r) => r.type === 'subtask.result' && r.data.status === 'failed')!.subTaskId!)[0]!.spanId);
  });

  it('has an execute_tool span per tool call, with its call id, under its session', () => {
    const tools = spans.filter((s) => s.name.startsWith('execute_tool '));
    const called = events.filter((e) => e.type === 'tool.called');
    expect(tools.map((t) => t.attributes['gen_ai.tool.call.id']).sort()).toEqual(called.map((e) => e.data.callId).sort());
    for (const e of called) {
      const span = tools.find((t) => t.attributes['gen_ai.tool.call.id'] === e.data.callId)!;
      expect(span.name).toBe(`execute_tool ${e.data.name}`);
      expect(span.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': e.data.name, 'gen_ai.tool.type': 'function' });
      expect(span.parentSpanId).toBe(sessionSpan(spans, e.subTaskId!)[0]!.spanId);
    }
  });

  it('has a span for the idle inquiry, from its sending to its answer', () => {
    const sent = events.filter((e) => e.type === 'inquiry.sent');
    expect(sent).toHaveLength(1);
    const inquiries = spans.filter((s) => s.name.startsWith('inquiry '));
    expect(inquiries).toHaveLength(1);
    const answered = events.find((e) => e.type === 'inquiry.answered')!;
    expect(inquiries[0]!.parentSpanId).toBe(sessionSpan(spans, sent[0]!.subTaskId!)[0]!.spanId);
    expect(Math.abs(inquiries[0]!.startMs - sent[0]!.ts)).toBeLessThan(2);
    expect(Math.abs(inquiries[0]!.endMs - answered.ts)).toBeLessThan(2);
  });

  it('carries no prompt or output text unless asked to', () => {
    const prompt = JSON.parse(readFileSync(resolve('examples/oauth/plan.json'), 'utf8')).tasks[0].prompt as string;
    const texts = spans.flatMap((s) => [...Object.values(s.attributes), ...s.events.flatMap((e) => Object.values(e.attributes))]).filter((v): v is string => typeof v === 'string');
    expect(texts.some((t) => t.includes(prompt.slice(0, 30)))).toBe(false);
    for (const s of spans) {
      for (const key of ['gen_ai.input.messages', 'gen_ai.output.messages', 'gen_ai.system_instructions', 'gen_ai.tool.call.arguments', 'gen_ai.tool.call.result']) expect(s.attributes[key], `${s.name} ${key}`).toBeUndefined();
    }
    // printed when a test fails, and handy to read
    expect(spanTree(spans)).toMatch(/^invoke_agent orchestrator/);
  });

  it('turns tracing off again once the run has ended', () => {
    expect(tracingEnabled()).toBe(false);
  });
});

describe('trace settings', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const key of Object.keys(process.env)) if (key.startsWith('OTEL_')) delete process.env[key];
    Object.assign(process.env, saved);
  });

  it('with content on: prompts, outputs and tool arguments as attributes, with secrets redacted', async () => {
    const rx = await startReceiver();
    try {
      const key = 'sk-live-0123456789abcdefABCDEF0123';
      secrets.add('TRACE_TEST_KEY', key);
      const run = await startRun({
        plan: { id: 'p', tasks: [{ id: 't', prompt: `Call the billing API with the key ${key} and report.` }] },
        workspace: tempDir(),
        store: 'memory',
        otel: rx.url,
        otelContent: true,
        notify: () => {},
      });
      expect((await run.done).status).toBe('completed');
      await rx.runExported();
      const worker = rx.spans.find((s) => s.name.startsWith('invoke_agent ') && s.attributes['a2a.role'] === 'worker')!;
      expect(String(worker.attributes['gen_ai.input.messages'])).toContain('Call the billing API with the key [redacted:TRACE_TEST_KEY]');
      expect(worker.attributes['gen_ai.output.messages']).toBeDefined();
      const chat = rx.spans.find((s) => s.name.startsWith('chat '))!;
      expect(String(chat.attributes['gen_ai.input.messages'])).toContain('[redacted:TRACE_TEST_KEY]');
      expect(chat.attributes['gen_ai.system_instructions']).toBeDefined();
      const all = JSON.stringify(rx.spans);
      expect(all).not.toContain(key);
    } finally {
      await rx.close();
    }
  });

  it('honours OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL=http/json and _HEADERS (never printed)', async () => {
    const rx = await startReceiver();
    try {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
      process.env.OTEL_EXPORTER_OTLP_PROTOCOL = 'http/json';
      process.env.OTEL_EXPORTER_OTLP_HEADERS = 'x-collector-key=hdr-0123456789abcdef';
      process.env.OTEL_SERVICE_NAME = 'billing-agents';
      secrets.add('OTEL_EXPORTER_OTLP_HEADERS', 'hdr-0123456789abcdef');
      const lines: string[] = [];
      const run = await startRun({ task: 'Say hello.', workspace: tempDir(), store: 'memory', notify: (l) => lines.push(l) });
      expect((await run.done).status).toBe('completed');
      expect(rx.contentTypes.every((t) => t.startsWith('application/json'))).toBe(true);
      await rx.runExported();
      expect(rx.headers[0]!['x-collector-key']).toBe('hdr-0123456789abcdef');
      expect(rx.spans.find((s) => !s.parentSpanId)!.resource['service.name']).toBe('billing-agents');
      expect(lines.join('\n')).toContain(`${rx.url}/v1/traces (http/json)`);
      expect(lines.join('\n')).not.toContain('hdr-0123456789abcdef');
    } finally {
      await rx.close();
    }
  });

  it('with otel: true and no endpoint, makes its spans with the program\'s own tracer provider', async () => {
    const { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } = await import('@opentelemetry/sdk-trace');
    const { trace } = await import('@opentelemetry/api');
    const memory = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter: memory })] });
    expect(trace.setGlobalTracerProvider(provider)).toBe(true);
    try {
      const run = await startRun({ task: 'Say hello.', workspace: tempDir(), store: 'memory', otel: true, notify: () => {} });
      expect((await run.done).status).toBe('completed');
      const names = memory.getFinishedSpans().map((s) => s.name);
      expect(names).toEqual(expect.arrayContaining(['invoke_agent orchestrator', 'task task', 'chat scripted']));
      expect(tracingEnabled()).toBe(false);
    } finally {
      trace.disable();
      await provider.shutdown();
    }
  });

  it('says when the collector does not take the spans, and holds the run\'s end no longer than OTEL_BSP_EXPORT_TIMEOUT', async () => {
    // a port nothing listens on: the exporter would retry until OTEL_EXPORTER_OTLP_TIMEOUT (10 s)
    const closed = await startReceiver();
    const url = closed.url;
    await closed.close();
    process.env.OTEL_BSP_EXPORT_TIMEOUT = '1000';
    const lines: string[] = [];
    const t0 = Date.now();
    const run = await startRun({ task: 'Say hello.', workspace: tempDir(), store: 'memory', otel: url, notify: (l) => lines.push(l) });
    expect((await run.done).status).toBe('completed');
    expect(Date.now() - t0).toBeLessThan(4_000);
    expect(lines.join('\n')).toMatch(new RegExp(`a2a: tracing: \\d+ spans were not exported: the collector at ${url.replace(/[.]/g, '\\.')}/v1/traces \\(http/protobuf\\) did not take them within 1 s`));
    expect(tracingEnabled()).toBe(false);
  });

  it('never prints a user name and password given in the endpoint URL', async () => {
    const rx = await startReceiver();
    try {
      const lines: string[] = [];
      const withCredentials = rx.url.replace('http://', 'http://collector:hunter2-very-secret@');
      const run = await startRun({ task: 'Say hello.', workspace: tempDir(), store: 'memory', otel: withCredentials, notify: (l) => lines.push(l) });
      expect((await run.done).status).toBe('completed');
      expect(lines.join('\n')).toContain(`go to ${rx.url}/v1/traces (http/protobuf)`);
      expect(lines.join('\n')).not.toContain('hunter2');
      // and the spans arrived (the exporter sent the credentials as basic auth, to the receiver only)
      expect((await rx.runExported()).length).toBeGreaterThan(0);
    } finally {
      await rx.close();
    }
  });

  it('exports nothing with otel: false, even with the variables set', async () => {
    const rx = await startReceiver();
    try {
      process.env.OTEL_EXPORTER_OTLP_ENDPOINT = rx.url;
      const run = await startRun({ task: 'Say hello.', workspace: tempDir(), store: 'memory', otel: false, notify: () => {} });
      expect((await run.done).status).toBe('completed');
      expect(rx.spans).toEqual([]);
      expect(tracingEnabled()).toBe(false);
    } finally {
      await rx.close();
    }
  });

  it('refuses bad settings before anything runs, naming what is wrong and what is allowed', async () => {
    const ws = tempDir();
    const cases: Array<{ args?: string[]; env?: Record<string, string>; says: RegExp }> = [
      { args: ['--otel', 'ftp://collector:21'], says: /--otel: "ftp:\/\/collector:21" is a ftp: URL; .*http:\/\/ or https:\/\// },
      { args: ['--otel', 'not a url'], says: /--otel: "not a url" is not a URL/ },
      { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, says: /OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" is not supported; use http\/protobuf \(the default\) or http\/json/ },
      { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' }, says: /OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" is a localhost: URL/ },
      { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_SAMPLER: 'sometimes' }, says: /OTEL_TRACES_SAMPLER: "sometimes" is not supported; use one of always_on, always_off, traceidratio/ },
      { env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'zipkin' }, says: /OTEL_TRACES_EXPORTER: "zipkin" is not supported; use otlp \(or none\)/ },
    ];
    for (const c of cases) {
      Object.assign(process.env, c.env ?? {});
      const out = capture();
      const code = await main(['run', 'Say hello.', '--workspace', ws, '--run-id', `bad-${cases.indexOf(c)}`, '--no-tree', ...(c.args ?? [])], out.io);
      expect(code, out.err()).not.toBe(0);
      expect(out.err()).toMatch(c.says);
      for (const key of Object.keys(c.env ?? {})) delete process.env[key];
      expect(tracingEnabled()).toBe(false);
    }
    // nothing was started: no run was recorded
    expect(new FileRunStore(ws).list()).toEqual([]);
    // a2a serve and a2a host refuse them before they listen or connect
    const serve = capture();
    expect(await main(['serve', '--a2a', '--workspace', ws, '--otel', 'ftp://collector:21'], serve.io)).toBe(2);
    expect(serve.err()).toMatch(/a2a serve: --otel: "ftp:\/\/collector:21" is a ftp: URL/);
    const host = capture();
    expect(await main(['host', '--nats', 'nats://127.0.0.1:1', '--agents', 'coder', '--workspace', ws, '--otel', 'ftp://collector:21'], host.io)).not.toBe(0);
    expect(host.err()).toMatch(/--otel: "ftp:\/\/collector:21" is a ftp: URL/);
  });
});

describe('spans of permission waits, a person\'s answers and merges', () => {
  it('puts a tool\'s permission wait inside its execute_tool span, and the person\'s answer under the requester', async () => {
    const rx = await startReceiver();
    try {
      const deploy = defineTool({ name: 'deploy', description: 'Deploys', parameters: z.object({ service: z.string() }), permission: 'command_execution', describe: ({ service }) => `deploy ${service}`, run: ({ service }) => `${service} deployed` });
      const run = await startRun({
        plan: { id: 'ops', tasks: [{ id: 'a', agent: '@helper', prompt: 'deploy api' }, { id: 'b', agent: '@helper', prompt: 'deploy db' }] },
        agents: [defineAgent({ name: 'helper', description: 'Uses tools', tools: ['deploy', 'a2a_subtask_complete'] })],
        tools: [deploy],
        model: scriptedModel({
          rules: [
            { prompt: 'deploy api', turns: [{ toolCalls: [{ name: 'deploy', arguments: { service: 'api' } }] }, { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'api done' } }] }] },
            { prompt: 'deploy db', turns: [{ toolCalls: [{ name: 'deploy', arguments: { service: 'db' } }] }, { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'db refused' } }] }] },
          ],
        }),
        store: 'memory',
        workspace: tempDir(),
        otel: rx.url,
        notify: () => {},
        human: (item) => ({ approved: item.title.includes('api'), by: 'bot', reason: 'policy' }),
      });
      expect((await run.done).status).toBe('completed');
      const spans = await rx.runExported();
      const permissions = spans.filter((s) => s.name === 'permission command_execution');
      expect(permissions, spanTree(spans)).toHaveLength(2);
      for (const p of permissions) {
        const tool = spans.find((s) => s.spanId === p.parentSpanId)!;
        expect(tool.name).toBe('execute_tool deploy');
        const approved = p.attributes['a2a.permission.approved'];
        expect(p.attributes['a2a.permission.decided_by']).toBe('human');
        // the denied call is an error of its tool, not of the wait
        expect(tool.status.code === ERROR).toBe(approved === false);
      }
      expect(permissions.map((p) => p.attributes['a2a.permission.approved']).sort()).toEqual([false, true]);
      const asked = spans.filter((s) => s.name === 'await_human permission');
      expect(asked).toHaveLength(2);
      for (const a of asked) {
        const requester = spans.find((s) => s.spanId === a.parentSpanId)!;
        expect(requester.name).toBe('invoke_agent helper');
        expect(a.attributes['a2a.human.by']).toBe('bot');
        // the person's answer came within the tool's wait
        const wait = permissions.find((p) => spans.find((s) => s.spanId === p.parentSpanId)!.parentSpanId === requester.spanId)!;
        expect(a.startMs).toBeGreaterThanOrEqual(wait.startMs - 1);
        expect(a.endMs).toBeLessThanOrEqual(wait.endMs + 1);
      }
    } finally {
      await rx.close();
    }
  });

  it('has the git steps of a task (worktree, commit, merge) under its task span', async () => {
    const rx = await startReceiver();
    try {
      const repo = tempDir('a2a-otel-git-');
      cpSync(resolve('examples/git-edits/repo'), repo, { recursive: true });
      const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' });
      git('init', '-q', '-b', 'main');
      git('add', '-A');
      git('-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'init');
      const c = capture();
      expect(await main(['run', resolve('examples/git-edits'), '--workspace', repo, '--run-id', 'otel-git-1', '--no-tree', '--otel', rx.url], c.io), c.err() + c.out()).toBe(0);
      const spans = await rx.runExported();
      for (const task of ['farewell', 'docs']) {
        const taskSpan = spans.find((s) => s.name === `task ${task}`)!;
        expect(taskSpan.attributes['a2a.task.state']).toBe('succeeded');
        const steps = spans.filter((s) => s.parentSpanId === taskSpan.spanId).sort((a, b) => a.startMs - b.startMs).map((s) => s.name);
        expect(steps, spanTree(spans)).toEqual(['git worktree add', 'invoke_agent ' + (task === 'farewell' ? 'coder' : 'documentation-writer'), 'git commit', `merge a2a/otel-git-1/${task}`, 'git worktree remove']);
        const merge = spans.find((s) => s.name === `merge a2a/otel-git-1/${task}`)!;
        expect(merge.attributes['a2a.git.into']).toBe('main');
        expect(merge.endMs).toBeGreaterThan(merge.startMs);
      }
    } finally {
      await rx.close();
    }
  });
});

describe('the core path', () => {
  it('imports no OpenTelemetry package: the API loads when tracing is turned on, the SDK and exporter when traces are exported', () => {
    // static value imports (not `import type`, not `import()`) reachable from the CLI and the library's entry
    const seen = new Set<string>();
    const packages = new Set<string>();
    const walk = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      for (const m of source.matchAll(/^\s*(?:import|export)\s(?!type\s)[^;]*?\sfrom\s+'([^']+)'|^\s*import\s+'([^']+)'/gm)) {
        const spec = (m[1] ?? m[2])!;
        if (spec.startsWith('.')) walk(resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
        else packages.add(spec);
      }
    };
    walk(resolve('bin/a2a.ts'));
    walk(resolve('index.ts'));
    expect(seen.size).toBeGreaterThan(100);
    expect([...packages].filter((p) => p.startsWith('@opentelemetry/'))).toEqual([]);
    for (const heavy of ['adapters/otel/sdk.ts', 'adapters/otel/offThread.ts', 'adapters/otel/recordSpans.ts', 'actors/observation/spans.ts']) expect(seen.has(resolve(heavy)), heavy).toBe(false);
    // and at run time: test/otel/offPath.test.ts
  });
});
