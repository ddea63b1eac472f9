/**
 * Cancellation reaches the call in flight. The agent loop runs in each session's own actor (no
 * loop actor, no AbortController until something asks for one), so these check it end to end: a
 * parent cancels its sub-task while the sub-task waits for its model (the real OpenAI client
 * against a local stub that never answers) or runs a long command (the bubblewrap sandbox, as in
 * a real run), and the call's AbortSignal fires: the HTTP request is closed, the process is gone.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { OpenAIModel } from '../../adapters/model/openai.js';
import { complete, harness, spawnParallel } from '../helpers.js';
import { startOpenAIStub, type Stub } from '../adapters/providers/stubs.js';

const exec = promisify(execFile);
let stub: Stub | undefined;
afterEach(async () => {
  await stub?.close();
  stub = undefined;
});

/**
 * Polls until `done` holds (real time: HTTP and processes), failing with `what` after `ms`: a
 * safety net for a loaded machine, not the measure (the run's own work needs the event loop while
 * this waits, so the check never blocks it).
 */
async function until(done: () => boolean | Promise<boolean>, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a process whose command line holds `text` runs (ps run asynchronously: a synchronous one held the run's event loop for most of each poll on a busy machine). */
const running = async (text: string) => (await exec('ps', ['-eo', 'args'], { encoding: 'utf8' })).stdout.split('\n').some((l) => l.includes(text));
const marker = () => `${process.pid % 1000}${String(Date.now()).slice(-6)}`;

/** The parent: spawn one child, give it a (simulated) second, cancel it, complete. */
const parentTurns = (child: string, agentType = '@agent') => [
  spawnParallel([{ agentType, prompt: child }]),
  { delayMs: 1000, toolCalls: [{ name: 'a2a_cancel_subtask', arguments: { ids: '$children', reason: 'not needed any more' } }] },
  complete('done without it'),
];

describe('cancelling a sub-task reaches the call in flight', () => {
  it('should abort a slow model call: the request is closed and the sub-task ends cancelled at once', async () => {
    stub = await startOpenAIStub(() => ({ hang: true }));
    const slow = new OpenAIModel({ apiKey: 'sk-test-cancel', baseURL: stub.baseURL, model: 'gpt-test', timeoutMs: 600_000, maxRetries: 0 });
    const h = harness({
      script: { rules: [{ agent: 'agent', depth: 0, turns: parentTurns('think slowly') }] },
      // the parent on the scripted model, its child on the real client against the stub
      resolve: (scripted) => (spec) => (spec.depth === 0 ? { model: scripted, name: 'scripted', profile: 'default' } : { model: slow, name: 'gpt-test', profile: 'slow' }),
    });
    const run = h.standalone('delegate, then change your mind');
    await until(() => stub!.requests.length === 1, 'the sub-task called its model');
    const call = stub.requests[0]!;
    expect(call.signal.aborted).toBe(false);
    // the parent's second turn comes a (simulated) second later and cancels: the sub-task ends
    const child = `${run.spec.id}.1`;
    await h.until(() => h.of('subtask.result', child).length > 0);
    expect(h.of('subtask.result', child).map((e) => [e.data.status, e.data.error])).toEqual([['cancelled', 'not needed any more']]);
    await until(() => call.signal.aborted, 'the model request was closed');
    await h.until(() => run.result() !== null);
    expect(run.result()).toMatchObject({ status: 'success', output: 'done without it' });
    // one request, never answered, never retried
    expect(stub.requests).toHaveLength(1);
  });

  it('should end a long run_command: its process is killed and the sub-task ends cancelled', async () => {
    const tag = `30.${marker()}`;
    const h = harness({
      script: {
        rules: [
          { agent: 'coder', depth: 0, turns: parentTurns('run the long job', '@coder') },
          { agent: 'coder', depth: 1, turns: [{ toolCalls: [{ name: 'run_command', arguments: { command: `sleep ${tag}` } }] }, complete('never')] },
        ],
      },
      config: { permissions: { auto_approve: ['command_execution', 'subtask_spawning'] } },
      io: true,
    });
    const run = h.run({ tasks: [{ id: 't', agent: '@coder', prompt: 'delegate the long job, then change your mind' }] });
    await until(() => running(`sleep ${tag}`), `sleep ${tag} started`);
    // the parent's second turn comes a (simulated) second later and cancels: the sub-task ends
    await h.until(() => h.of('subtask.result', 'w-t.1').length > 0);
    expect(h.of('subtask.result', 'w-t.1').map((e) => e.data.status)).toEqual(['cancelled']);
    await until(async () => !(await running(`sleep ${tag}`)), `sleep ${tag} still runs after the cancel`);
    await h.until(() => run.summary() !== null);
    expect(run.summary()!.tasks.find((t) => t.id === 't')).toMatchObject({ state: 'succeeded', result: { output: 'done without it' } });
  });
});
