/**
 * What the cross-process NATS tests share: `a2a` processes started from the sources (tsx), a
 * workspace whose architect splits its task into coder parts, waiting on conditions, and
 * capturing an in-process command's output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleOnce, tempDir } from '../helpers.js';
import { connectNats } from '../../adapters/transport/nats.js';
import { subjects } from '../../actors/distribution/remote.js';

export { capture } from '../helpers.js';

/**
 * The CLI from the sources, bundled once per test process with esbuild (what tsx transpiles
 * with): it starts in ~0.2 s instead of ~1.5 s under the tsx loader, which the tests that start
 * and kill many processes need to stay within their time. It lives under the package root, so
 * that packages and the built-in agents are found as from the sources.
 */
export function a2aBundle(): string {
  return bundleOnce('a2a', 'bin/a2a.ts', { platform: 'node', format: 'esm', packages: 'external', target: 'node20', splitting: true }, 'mjs');
}

export interface Proc {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number>;
}

const started: Proc[] = [];

/** Starts `a2a <args>` in `cwd` (from the sources, as a user would run the built binary). */
export function a2aProcess(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env, nodeArgs: string[] = []): Proc {
  return nodeProcess([...nodeArgs, a2aBundle(), ...args], cwd, env);
}

/** Starts `node <args>` in `cwd`, its output kept, killed by killAll (a2a, or a program of a test's own). */
export function nodeProcess(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): Proc {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const p: Proc = { child, out: () => out, exited: new Promise((r) => child.on('exit', (code, signal) => r(code ?? (signal ? 128 : -1)))) };
  started.push(p);
  return p;
}

/** `a2a host` serving `agents` for the workspace's script. */
export function a2aHost(url: string, ws: string, id: string, agents: string, options: { heartbeatMs?: number; drainMs?: number; env?: NodeJS.ProcessEnv } = {}): Proc {
  const args = ['host', '--nats', url, '--agents', agents, '--id', id, '--script', join(ws, 'script.json'), '--workspace', ws];
  args.push('--heartbeat', String(options.heartbeatMs ?? 200), '--drain', String(options.drainMs ?? 2_000));
  return a2aProcess(args, ws, options.env);
}

/** SIGKILLs every process started here that is still running (afterEach). */
export function killAll(): void {
  for (const p of started.splice(0)) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
}

export const served = (p: Proc) => waitFor('the host to serve', () => p.out().includes(' serves ') || p.child.exitCode !== null, 60_000, p.out);

export async function waitFor(what: string, ok: () => boolean, ms = 30_000, context: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${context()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/**
 * The scripted architect the cross-process tests use: it spawns `parts` @coder sub-tasks in
 * parallel ("build part 1" …), waits, and completes ("all parts built") when all have finished.
 */
export function architectSplitting(parts: number) {
  return {
    agent: 'architect',
    depth: 0,
    turns: [
      { toolCalls: [{ name: 'a2a_spawn_parallel_subtasks', arguments: { subtasks: Array.from({ length: parts }, (_, i) => ({ agentType: '@coder', prompt: `build part ${i + 1}`, expectedOutput: 'code' })) } }] },
      { text: 'waiting for the parts' },
    ],
    reactions: [{ when: 'All your sub-tasks have finished', turn: { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'all parts built' } }] } }],
  };
}

/**
 * A workspace with `plan.json` (one @architect task) and `script.json`: the architect spawns
 * `parts` @coder sub-tasks in parallel and completes when they have; each coder reports
 * `started` (unless `notify` is false), works `partMs`, and completes.
 */
export function splitWorkspace(options: { partMs: number; parts?: number; notify?: boolean; planId?: string; prefix?: string }): string {
  const ws = tempDir(options.prefix ?? 'a2a-nats-ws-');
  const parts = Array.from({ length: options.parts ?? 3 }, (_, i) => i + 1);
  writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: options.planId ?? 'dist', tasks: [{ id: 'design', agent: '@architect', prompt: 'design and build it' }] }));
  const started = options.notify === false ? [] : [{ toolCalls: [{ name: 'a2a_notify_orchestrator', arguments: { type: 'status', message: 'started' } }] }];
  writeFileSync(
    join(ws, 'script.json'),
    JSON.stringify({
      rules: [
        architectSplitting(parts.length),
        { agent: 'coder', turns: [...started, { delayMs: options.partMs, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: 'part built' } }] }] },
      ],
    }),
  );
  return ws;
}

/** Waits until the session's record in the snapshots bucket holds a checkpoint. */
export async function savedWithCheckpoint(url: string, wire: string): Promise<void> {
  const transport = await connectNats({ servers: url, namespace: 'default', name: 'test-snapshot-reader' });
  try {
    const bucket = await transport.readKeyValue(subjects('default').buckets.snapshots);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const entry = await bucket.get(wire);
      if ((entry?.value as { checkpoint?: unknown } | undefined)?.checkpoint) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for a checkpoint of ${wire} in the snapshots bucket`);
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    await transport.close();
  }
}
