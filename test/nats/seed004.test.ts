/**
 * External agents that speak seed 004 ("Orchestrator Integration Specification for Coding Agent")
 * working inside a2a runs through `a2a gateway`, over a real nats-server started here. The agents
 * are plain NATS clients written in this file from the spec's JSON examples: they register,
 * heartbeat, acknowledge (or reject, or ignore) tasks, report progress, ask for clarification,
 * answer status and capability requests, and return task results.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import type { GatewayCommandOptions } from '../../bin/commands/gateway.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { connectNats } from '../../adapters/transport/nats.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import type { SessionSpec } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { startNatsServer, type NatsServer } from './server.js';
import * as kit from './seed004Kit.js';
import { captureIo as capture, expectValid, registered, specFor, waitUntil as waitFor, type Wire } from './seed004Kit.js';

// Timings: generous by default (a loaded machine must not make an agent look silent), short only
// where a test is about them: 1 s to acknowledge, heartbeats every 250 ms (silent 750 ms: unresponsive).
const ACK_MS = 1_000;
const SHORT_HEARTBEAT_MS = 250;
const DEFAULT = { ackTimeout: 5_000, heartbeat: 1_000 };

let server: NatsServer;
const cleanups: Array<() => Promise<unknown>> = [];
const track: kit.Track = (cleanup) => void cleanups.push(cleanup);

beforeAll(async () => {
  server = await startNatsServer();
});
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
});
afterAll(async () => {
  await server?.stop();
});

/** An external agent on this file's server (no authentication). */
class SeedAgent extends kit.SeedAgent {
  constructor(id: string, prefix: string, options: ConstructorParameters<typeof kit.SeedAgent>[2]) {
    super(id, prefix, options, track);
  }
}

const startGateway = (ns: string, extra: Partial<GatewayCommandOptions> = {}) => kit.startGateway({ url: server.url, ns, track, options: { ...DEFAULT, ...extra } });

/** The owner's side of a remote session, on a connection of its own. */
async function ownerOf(ns: string, spec: SessionSpec) {
  const transport = await connectNats({ servers: server.url, namespace: ns, name: `owner-${ns}` });
  track(() => transport.close());
  return kit.ownerOf({ transport, ns, spec, track });
}

// ---------------------------------------------------------------------------------------------

describe('seed 004 agents in a2a runs (a2a gateway over NATS)', () => {
  it('does a run\'s @coder task on the registered external agent: ack, progress, a clarification answered, the result in the summary', async () => {
    const ns = 'seed-a';
    const { gateway, out, prefix } = await startGateway(ns);
    let queryId = '';
    const agent = await new SeedAgent('coding_agent_12345', prefix, {
      max: 3,
      onMessage: (m, a) => {
        if (m.message_type === 'task') {
          a.ack(m, 'accepted');
          a.progress(m.payload.task_id, 0.5, 'Completed implementation, running tests');
          queryId = a.ask(m.payload.task_id, 'Should the API endpoint return JSON or XML?', ['JSON', 'XML', 'Both']);
        }
        if (m.message_type === 'response' && m.payload.query_type === 'clarification' && m.correlation_id === queryId) {
          a.progress(m.payload.task_id, 0.9, `answered: ${m.payload.answer}`);
          a.complete(m.payload.task_id);
        }
      },
    }).start(server.url);
    agent.register();
    agent.startHeartbeats();
    await registered(gateway, agent.id);

    const ws = tempDir('a2a-seed004-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'seed', tasks: [{ id: 'api', agent: '@coder', prompt: 'Add a GET /data endpoint to api/views.py', expectedOutput: 'the endpoint and its tests' }] }));
    writeFileSync(join(ws, 'script.json'), JSON.stringify({ rules: [] }));
    // the orchestrator answers workers' questions by policy
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ orchestrator: { questions: 'policy', policyAnswer: 'JSON, following REST conventions' } }));
    const c = capture();
    const code = await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--namespace', ns, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'seed-a', '--no-tree'], c.io);
    expect(code, c.out() + c.err() + out()).toBe(0);

    // the task the agent got: the spec's task JSON, built from the worker's session
    const task = expectValid(agent.received('task')[0]!);
    expect(task.message_type).toBe('task');
    if (task.message_type !== 'task') throw new Error('not a task');
    expect(task.payload).toMatchObject({
      task_id: `${ns}.w-api`,
      type: 'implementation',
      priority: 3,
      description: 'Add a GET /data endpoint to api/views.py',
      requirements: ['the endpoint and its tests'],
      assigned_to: 'coding_agent_12345',
      context: { metadata: { runId: 'seed-a', planTaskId: 'api', owner: 'orchestrator' } },
    });
    // the clarification was answered by the orchestrator's policy, correlated to the query
    const answer = agent.received('response', (m) => m.correlation_id === queryId)[0]!;
    expectValid(answer);
    expect(answer.payload).toMatchObject({ query_type: 'clarification', task_id: `${ns}.w-api`, answer: 'JSON, following REST conventions' });

    const store = new FileRunStore(ws);
    const summary = store.read('seed-a').summary as RunSummary;
    const result = summary.tasks[0]!.result!;
    expect(result.status).toBe('success');
    expect(result.output).toContain('files modified: api/views.py');
    expect(result.output).toContain('files created: api/tests/test_views.py');
    expect(result.output).toContain('pull request: https://github.com/org/repo/pull/123');
    expect(result.output).toContain('commit: abc123def456');
    expect(result.metadata).toMatchObject({ agentId: 'coding_agent_12345', seed004: { execution_time: 45.67, metrics: { lines_added: 250 } } });
    const events = store.events('seed-a');
    expect(events.some((e) => e.type === 'question.asked' && String(e.data.question).startsWith('Should the API endpoint return JSON or XML?'))).toBe(true);
    expect(events.some((e) => e.type === 'question.answered' && e.data.answer === 'JSON, following REST conventions')).toBe(true);
    expect(events.some((e) => e.type === 'subtask.placed' && e.subTaskId === 'w-api' && e.data.host === `gw-${ns}`)).toBe(true);
    expect(out()).toContain('agent coding_agent_12345 registered: coding_agent, max 3 task(s)');
  }, 30_000);

  it('gives a task the agent with the most free capacity; a rejection sends it to the next agent', async () => {
    const ns = 'seed-b';
    const { gateway, prefix } = await startGateway(ns);
    const a = await new SeedAgent('agent_a', prefix, { max: 3, onMessage: (m, self) => m.message_type === 'task' && self.ack(m, 'rejected', 'Repository not accessible') }).start(server.url);
    const b = await new SeedAgent('agent_b', prefix, {
      max: 2,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        self.ack(m, 'accepted');
        self.complete(m.payload.task_id);
      },
    }).start(server.url);
    for (const x of [a, b]) {
      x.register();
      x.startHeartbeats();
    }
    await registered(gateway, 'agent_a', 'agent_b');
    const owner = await ownerOf(ns, specFor(ns, 'st-b1'));
    const result = await owner.result();
    expect(result.status).toBe('success');
    // agent_a (3 free) was asked first, rejected, and was never asked again
    expect(a.received('task')).toHaveLength(1);
    expect(b.received('task')).toHaveLength(1);
    expect(a.inbox[0]!.at).toBeLessThanOrEqual(b.inbox.find((r) => r.message.message_type === 'task')!.at);
    expect(result.metadata).toMatchObject({ history: [{ agentId: 'agent_a', outcome: 'rejected', reason: 'Repository not accessible' }, { agentId: 'agent_b', outcome: 'completed' }] });
    expect(gateway.agents().find((x) => x.id === 'agent_b')!.assigned).toEqual([]);
  }, 20_000);

  it('reassigns a task an agent never acknowledges after the ack timeout, and cancels it there', async () => {
    const ns = 'seed-c';
    const { gateway, prefix } = await startGateway(ns, { ackTimeout: ACK_MS });
    const silent = await new SeedAgent('agent_a', prefix, { max: 3 }).start(server.url);
    const b = await new SeedAgent('agent_b', prefix, {
      max: 1,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        self.ack(m, 'accepted');
        self.complete(m.payload.task_id);
      },
    }).start(server.url);
    for (const x of [silent, b]) {
      x.register();
      x.startHeartbeats();
    }
    await registered(gateway, 'agent_a', 'agent_b');
    const owner = await ownerOf(ns, specFor(ns, 'st-c1'));
    const result = await owner.result();
    expect(result.status).toBe('success');
    const offered = silent.inbox.find((r) => r.message.message_type === 'task')!;
    const cancel = await silent.waitFor('a cancel', 'cancel');
    expectValid(cancel);
    expect(cancel.payload).toMatchObject({ task_id: `run-${ns}.st-c1`, reason: 'reassigned: no acknowledgment' });
    const reoffered = b.inbox.find((r) => r.message.message_type === 'task')!;
    expect(reoffered.at - offered.at).toBeGreaterThanOrEqual(ACK_MS - 20);
    expect(result.metadata).toMatchObject({ history: [{ agentId: 'agent_a', outcome: 'no_ack' }, { agentId: 'agent_b', outcome: 'completed' }] });
    expect(owner.updates().some((u) => u.message === 'agent_a: no acknowledgment; the task is offered again')).toBe(true);
  }, 20_000);

  it('reassigns the task of an agent that stops sending heartbeats', async () => {
    const ns = 'seed-c2';
    const { gateway, prefix, out } = await startGateway(ns, { heartbeat: SHORT_HEARTBEAT_MS });
    const a = await new SeedAgent('agent_a', prefix, {
      max: 3,
      heartbeatMs: SHORT_HEARTBEAT_MS / 5,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        self.ack(m, 'accepted');
        self.progress(m.payload.task_id, 0.1, 'cloning');
        self.stopHeartbeats(); // and never says anything again
      },
    }).start(server.url);
    const b = await new SeedAgent('agent_b', prefix, {
      max: 1,
      heartbeatMs: SHORT_HEARTBEAT_MS / 5,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        self.ack(m, 'accepted');
        self.complete(m.payload.task_id);
      },
    }).start(server.url);
    for (const x of [a, b]) {
      x.register();
      x.startHeartbeats();
    }
    await registered(gateway, 'agent_a', 'agent_b');
    const owner = await ownerOf(ns, specFor(ns, 'st-c2'));
    const result = await owner.result();
    expect(result.status).toBe('success');
    expect(result.metadata).toMatchObject({ history: [{ agentId: 'agent_a', outcome: 'lost' }, { agentId: 'agent_b', outcome: 'completed' }] });
    expect((await a.waitFor('a cancel', 'cancel')).payload).toMatchObject({ task_id: `run-${ns}.st-c2`, reason: 'reassigned: unresponsive' });
    expect(owner.updates().some((u) => u.message === 'agent_a: 10% cloning')).toBe(true);
    expect(out()).toMatch(/agent agent_a is unresponsive \(silent for \d+ ms\): reassigning st-c2/);
    expect(gateway.agents().find((x) => x.id === 'agent_a')!.responsive).toBe(false);
  }, 20_000);

  it('reassigns a task an agent works on past the task timeout', async () => {
    const ns = 'seed-c3';
    const { gateway, prefix } = await startGateway(ns, { taskTimeout: 600 });
    const slow = await new SeedAgent('agent_a', prefix, { max: 3, onMessage: (m, self) => m.message_type === 'task' && self.ack(m, 'accepted') }).start(server.url);
    const b = await new SeedAgent('agent_b', prefix, {
      max: 1,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        self.ack(m, 'accepted');
        self.complete(m.payload.task_id);
      },
    }).start(server.url);
    for (const x of [slow, b]) {
      x.register();
      x.startHeartbeats();
    }
    await registered(gateway, 'agent_a', 'agent_b');
    const owner = await ownerOf(ns, specFor(ns, 'st-c3'));
    const result = await owner.result();
    expect(result.status).toBe('success');
    expect(result.metadata).toMatchObject({ history: [{ agentId: 'agent_a', outcome: 'task_timeout' }, { agentId: 'agent_b', outcome: 'completed' }] });
    const task = expectValid(slow.received('task')[0]!);
    // the task told the agent its deadline
    if (task.message_type !== 'task') throw new Error('not a task');
    expect(Date.parse(task.payload.deadline!)).toBeGreaterThan(Date.now() - 10_000);
    expect((await slow.waitFor('a cancel', 'cancel')).payload).toMatchObject({ task_id: `run-${ns}.st-c3`, reason: 'reassigned: task timeout' });
  }, 20_000);

  it('sends a cancel to the agent when the owner cancels; only the assigned agent may report on a task', async () => {
    const ns = 'seed-d';
    const { gateway, prefix } = await startGateway(ns);
    const a = await new SeedAgent('agent_a', prefix, {
      max: 3,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        self.ack(m, 'accepted');
        self.progress(m.payload.task_id, 0.25, 'started');
      },
    }).start(server.url);
    const other = await new SeedAgent('agent_b', prefix, { max: 1 }).start(server.url);
    for (const x of [a, other]) {
      x.register();
      x.startHeartbeats();
    }
    await registered(gateway, 'agent_a', 'agent_b');
    const owner = await ownerOf(ns, specFor(ns, 'st-d1'));
    await waitFor('the progress to reach the owner', () => owner.updates().some((u) => u.message === 'agent_a: 25% started'));

    // another agent reports on agent_a's task: refused, and the owner hears nothing of it
    const intrusion = other.send(other.envelope('progress', { task_id: `run-${ns}.st-d1`, progress: 1, message: 'done, trust me' })) as Wire;
    const refused = await other.waitFor('an error', 'error', (m) => m.correlation_id === intrusion.message_id);
    expect(refused.payload).toMatchObject({ error_type: 'system_error', error_code: 'E_NOT_ASSIGNED', task_id: `run-${ns}.st-d1` });

    owner.session.send({ type: 'CANCEL', reason: 'Priority change' });
    const cancel = await a.waitFor('a cancel', 'cancel');
    expectValid(cancel);
    expect(cancel.payload).toEqual({ task_id: `run-${ns}.st-d1`, reason: 'Priority change' });
    const result = await owner.result();
    expect(result).toMatchObject({ taskId: 'st-d1', status: 'cancelled', error: 'Priority change' });
    expect(owner.updates().some((u) => u.message?.includes('trust me'))).toBe(false);

    // the task is over: a late report about it is refused
    const late = a.send(a.envelope('progress', { task_id: `run-${ns}.st-d1`, progress: 0.5, message: 'still going' })) as Wire;
    const unknown = await a.waitFor('an error', 'error', (m) => m.correlation_id === late.message_id);
    expect(unknown.payload).toMatchObject({ error_code: 'E_UNKNOWN_TASK' });
    await waitFor('agent_a to be free', () => gateway.agents().find((x) => x.id === 'agent_a')!.assigned.length === 0);
  }, 20_000);

  it('passes a collaboration request to a connected agent of the type it names, tells the owner, and says so when none is connected', async () => {
    const ns = 'seed-collab';
    const { gateway, prefix } = await startGateway(ns);
    const a = await new SeedAgent('agent_a', prefix, {
      max: 2,
      onMessage: (m, self) => {
        if (m.message_type === 'task') self.ack(m, 'accepted');
      },
    }).start(server.url);
    const reviewer = await new SeedAgent('agent_r', prefix, { max: 1 }).start(server.url);
    a.register();
    reviewer.send(reviewer.envelope('registration', { ...reviewer.registration().payload, agent_type: 'review_agent', capabilities: ['code_review'] }));
    for (const x of [a, reviewer]) x.startHeartbeats();
    await registered(gateway, 'agent_a', 'agent_r');
    const owner = await ownerOf(ns, specFor(ns, 'st-c1'));
    const task = await a.waitFor('the task', 'task');
    const taskId = task.payload.task_id as string;

    const ask = a.send(a.envelope('collaboration_request', { collaboration_type: 'code_review', task_id: taskId, target_agent_type: 'review_agent', context: { files_to_review: ['api/views.py'], focus_areas: ['security'] } })) as Wire;
    const passed = await reviewer.waitFor('the collaboration request', 'collaboration_request');
    expectValid(passed);
    expect(passed).toMatchObject({ recipient_id: 'agent_r', correlation_id: ask.message_id });
    expect(passed.payload).toEqual({ collaboration_type: 'code_review', task_id: taskId, target_agent_type: 'review_agent', context: { files_to_review: ['api/views.py'], focus_areas: ['security'] }, requester_id: 'agent_a' });
    await waitFor('the owner to be told', () => owner.updates().some((u) => u.message === 'agent_a: asks for code_review by a review_agent: passed to agent_r'));

    // a type nobody connected serves: the requester is told, and so is the owner
    const lonely = a.send(a.envelope('collaboration_request', { collaboration_type: 'security_audit', task_id: taskId, target_agent_type: 'security_agent' })) as Wire;
    const refusal = await a.waitFor('the refusal', 'error', (m) => m.correlation_id === lonely.message_id);
    expect(refusal.payload).toMatchObject({ error_code: 'E_NO_COLLABORATOR', task_id: taskId, error_message: "collaboration request not passed on: no security_agent agent is connected; the task's owner was told" });
    await waitFor('the owner to be told of that too', () => owner.updates().some((u) => u.message === 'agent_a: asks for security_audit by a security_agent: no security_agent agent is connected, so it is passed on as a note'));
    expect(reviewer.received('collaboration_request')).toHaveLength(1);
  }, 20_000);

  it('answers status and capability requests with the agent\'s own answers, and times out on silence', async () => {
    const ns = 'seed-e';
    const { gateway, prefix } = await startGateway(ns);
    const a = await new SeedAgent('agent_a', prefix, {
      max: 3,
      onMessage: (m, self) => {
        if (m.message_type === 'status_request') {
          self.send(
            self.envelope(
              'status_response',
              {
                agent_id: self.id,
                status: 'active',
                current_tasks: [{ task_id: 'elsewhere-1', status: 'in_progress', progress: 0.5, started_at: '2024-01-01T00:00:00Z' }],
                completed_tasks: 42,
                failed_tasks: 2,
                available_capacity: 2,
                uptime: 3600,
                last_error: null,
              },
              { correlation_id: m.message_id },
            ),
          );
        }
        if (m.message_type === 'query' && m.payload.query_type === 'capabilities') {
          self.send(
            self.envelope(
              'response',
              {
                query_type: 'capabilities',
                supported_task_types: ['implementation', 'refactoring'],
                max_concurrent_tasks: 3,
                current_load: 1,
                available_capacity: 2,
                supported_frameworks: ['Django', 'FastAPI'],
                confidence_score: 0.95,
              },
              { correlation_id: m.message_id },
            ),
          );
        }
      },
    }).start(server.url);
    const mute = await new SeedAgent('agent_mute', prefix, { max: 1 }).start(server.url);
    a.register();
    mute.register();
    await registered(gateway, 'agent_a', 'agent_mute');

    const status = await gateway.requestStatus('agent_a');
    expect(status).toMatchObject({ agent_id: 'agent_a', status: 'active', completed_tasks: 42, available_capacity: 2 });
    expect(status.current_tasks[0]).toMatchObject({ task_id: 'elsewhere-1', progress: 0.5 });
    const request = expectValid(a.received('status_request')[0]!);
    expect(request.payload).toEqual({ include_task_details: true });

    const caps = await gateway.queryCapabilities('agent_a', { requiredCapabilities: ['refactoring', 'django'], taskContext: { framework: 'Django', complexity: 'high' } });
    expect(caps).toMatchObject({ query_type: 'capabilities', supported_frameworks: ['Django', 'FastAPI'], confidence_score: 0.95 });
    const query = expectValid(a.received('query')[0]!);
    expect(query.payload).toMatchObject({ query_type: 'capabilities', required_capabilities: ['refactoring', 'django'] });
    // the answers refresh the registry's view of its load: 3 at most, 1 in use
    expect(gateway.agents().find((x) => x.id === 'agent_a')!.availableCapacity).toBe(2);

    await expect(gateway.requestStatus('agent_mute', { timeoutMs: 200 })).rejects.toThrow('agent_mute did not answer the status request within 200 ms');
    await expect(gateway.queryCapabilities('nobody')).rejects.toThrow('no registered agent "nobody"');
    // a broadcast reaches every agent on agent.all
    const id = await gateway.broadcastStatusRequest();
    await mute.waitFor('the broadcast', 'status_request', (m) => m.message_id === id);
  }, 20_000);

  it('answers invalid messages with an error naming the problem, and changes nothing', async () => {
    const ns = 'seed-f';
    const { gateway, prefix } = await startGateway(ns);
    const a = await new SeedAgent('agent_a', prefix, { max: 2 }).start(server.url);
    a.register();
    a.startHeartbeats();
    await registered(gateway, 'agent_a');
    await waitFor('a heartbeat of agent_a', () => gateway.agents()[0]!.status === 'healthy');
    const before = JSON.stringify(gateway.agents().map(({ lastSeen: _l, ...rest }) => rest));

    const errorFor = async (id: string) => {
      const error = await a.waitFor(`the error for ${id}`, 'error', (m) => m.correlation_id === id);
      expectValid(error);
      expect(error.recipient_id).toBe('agent_a');
      expect(error.payload.error_type).toBe('system_error');
      return error.payload as { error_code: string; error_message: string };
    };

    // not JSON (the sender and message id are still recovered for the reply)
    a.send('{"message_id": "bad-json-1", "sender_id": "agent_a", "message_type": "heartbeat", "payload": {');
    expect(await errorFor('bad-json-1')).toMatchObject({ error_code: 'E_INVALID_MESSAGE', error_message: expect.stringContaining('not valid JSON') });

    // a missing field
    const missing = a.send(a.envelope('heartbeat', { current_tasks: 0, available_capacity: 2, status: 'healthy' })) as Wire;
    expect((await errorFor(missing.message_id)).error_message).toBe('invalid message: payload.agent_id: is required (expected string)');

    // a wrong enum: the allowed values are named
    const badEnum = a.send(a.envelope('acknowledgment', { task_id: 'x', status: 'maybe' })) as Wire;
    expect((await errorFor(badEnum.message_id)).error_message).toBe('invalid message: payload.status: expected one of "accepted", "rejected" (got "maybe")');
    const badType = a.send(a.envelope('hello', {})) as Wire;
    expect((await errorFor(badType.message_id)).error_message).toContain('message_type: expected one of "registration", "task", "acknowledgment"');
    const badNumber = a.send(a.envelope('progress', { task_id: 'x', progress: 7, message: 'seven' })) as Wire;
    expect((await errorFor(badNumber.message_id)).error_message).toMatch(/^invalid message: payload\.progress: .*1.* \(got 7\)$/);

    // an invalid registration registers nothing
    const badRegistration = a.send(a.envelope('registration', { agent_id: 'agent_a', agent_type: 'coding_agent', capabilities: [], max_concurrent_tasks: 0 })) as Wire;
    expect((await errorFor(badRegistration.message_id)).error_message).toMatch(/^invalid message: payload\.max_concurrent_tasks: /);

    // an unknown task
    const unknownTask = a.send(a.envelope('task_result', { task_id: 'no-such-task', status: 'completed', result_type: 'success' })) as Wire;
    expect(await errorFor(unknownTask.message_id)).toMatchObject({ error_code: 'E_UNKNOWN_TASK', error_message: 'payload.task_id: "no-such-task" is not a task in progress here' });

    // messages only the orchestrator sends, and senders that never registered
    const confused = a.send(a.envelope('cancel', { task_id: 'x' })) as Wire;
    expect((await errorFor(confused.message_id)).error_code).toBe('E_UNEXPECTED_MESSAGE');
    const stranger = await new SeedAgent('agent_stranger', prefix, { max: 1 }).start(server.url);
    const hello = stranger.send(stranger.envelope('heartbeat', { agent_id: 'agent_stranger' })) as Wire;
    const notRegistered = await stranger.waitFor('an error', 'error', (m) => m.correlation_id === hello.message_id);
    expect(notRegistered.payload).toMatchObject({ error_code: 'E_NOT_REGISTERED', suggested_action: 'Send a registration message first' });

    // an invalid error report is not answered (no error ping-pong); a valid one is only logged
    a.send(a.envelope('error', { error_type: 'oops' }));
    const report = a.send(a.envelope('error', { error_type: 'resource_error', error_code: 'E001', error_message: 'disk full', recoverable: true })) as Wire;
    // a marker message after them: its reply arrives after anything they could have caused
    const marker = a.send(a.envelope('acknowledgment', { task_id: 'x', status: 'nope' })) as Wire;
    await errorFor(marker.message_id);
    expect(a.received('error', (m) => m.correlation_id === report.message_id)).toEqual([]);
    expect(a.received('error')).toHaveLength(9);

    expect(JSON.stringify(gateway.agents().map(({ lastSeen: _l, ...rest }) => rest))).toBe(before);
    expect(gateway.agents().map((x) => x.id)).toEqual(['agent_a']);
  }, 20_000);

  it('refuses a registration in a protocol version it does not speak, with an error naming it; registers one it does', async () => {
    const ns = 'seed-v';
    const { gateway, prefix } = await startGateway(ns);
    const a = await new SeedAgent('agent_v', prefix, { max: 1 }).start(server.url);
    const refusalOf = async (message: Wire) => {
      const error = await a.waitFor(`the error for ${String(message.message_id)}`, 'error', (m) => m.correlation_id === message.message_id);
      expectValid(error);
      return error.payload as { error_code: string; error_message: string; suggested_action?: string };
    };
    const future = a.send(a.envelope('registration', { ...a.registration().payload, version: '2.1.0' })) as Wire;
    expect(await refusalOf(future)).toMatchObject({
      error_code: 'E_UNSUPPORTED_VERSION',
      error_message: 'payload.version: major version 2 ("2.1.0") is not supported: this orchestrator speaks protocol 1.0, and accepts majors 0 and 1',
      suggested_action: 'Register with a version of protocol 1.0 (major 1)',
    });
    const garbled = a.send(a.envelope('registration', { ...a.registration().payload, version: 'latest' })) as Wire;
    expect((await refusalOf(garbled)).error_message).toBe('payload.version: "latest" is not a version (expected <major>.<minor>.<patch>, e.g. "1.0.0")');
    expect(gateway.agents()).toEqual([]);
    // the seed's own example (0.1.0) and this protocol's version register
    a.send(a.envelope('registration', { ...a.registration().payload, version: '1.0' }));
    await registered(gateway, 'agent_v');
  });

  it('refuses an agent that speaks as another on its own subject: an error to it, the other agent\'s task and result untouched', async () => {
    const ns = 'seed-g';
    const { gateway, prefix, out } = await startGateway(ns);
    let betaTask: Wire | null = null;
    const beta = await new SeedAgent('beta', prefix, {
      max: 1,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        betaTask = m;
        self.ack(m, 'accepted');
      },
    }).start(server.url);
    beta.register();
    beta.startHeartbeats();
    await registered(gateway, 'beta');
    const owner = await ownerOf(ns, specFor(ns, 'st-g1'));
    const task = await waitFor('beta to accept its task', () => betaTask && gateway.agents().find((a) => a.id === 'beta')!.assigned.length === 1 && betaTask);
    const taskId = task.payload.task_id as string;
    const alpha = await new SeedAgent('alpha', prefix, { max: 2 }).start(server.url);
    alpha.register();
    await registered(gateway, 'alpha');

    const refusal = async (sent: Wire) => {
      const error = await alpha.waitFor(`the error for ${sent.message_id}`, 'error', (m) => m.correlation_id === sent.message_id);
      expectValid(error);
      expect(error.recipient_id).toBe('alpha');
      return error.payload as { error_code: string; error_message: string; suggested_action?: string };
    };
    // beta's result, in beta's name, on alpha's subject
    const forged = alpha.send({ ...beta.result(taskId, { files_modified: ['backdoor.py'] }) }) as Wire;
    expect(await refusal(forged)).toEqual(
      expect.objectContaining({
        error_code: 'E_IDENTITY_MISMATCH',
        error_message: `sender_id: must be "alpha", the agent whose subject ${prefix}.orchestrator.messages.alpha it came on (got "beta")`,
        suggested_action: 'Speak only as yourself: "alpha"',
      }),
    );
    // its own name, another's in the payload
    const heartbeat = alpha.send(alpha.envelope('heartbeat', { agent_id: 'beta', status: 'unhealthy', available_capacity: 0 })) as Wire;
    expect((await refusal(heartbeat)).error_message).toMatch(/^payload\.agent_id: must be "alpha", .* \(got "beta"\)$/);
    const reRegister = alpha.send(beta.envelope('registration', { agent_id: 'beta', agent_type: 'coding_agent', capabilities: [], max_concurrent_tasks: 50 })) as Wire;
    expect((await refusal(reRegister)).error_code).toBe('E_IDENTITY_MISMATCH');
    const cancelIt = alpha.send(beta.envelope('error', { error_type: 'task_failure', task_id: taskId, error_code: 'E_GIVE_UP', error_message: 'beta gives up' })) as Wire;
    // in its own name about beta's task: not its task
    const ownName = alpha.send(alpha.result(taskId)) as Wire;
    expect(await refusal(ownName)).toMatchObject({ error_code: 'E_NOT_ASSIGNED' });
    // a broken message in beta's name: the error goes to alpha, whose subject it came on
    const broken = alpha.send(beta.envelope('progress', { task_id: taskId, progress: 7 })) as Wire;
    expect((await refusal(broken)).error_code).toBe('E_INVALID_MESSAGE');

    // beta heard nothing of it, its registration and task are as they were (the forged error was not answered either)
    expect(beta.received('error')).toEqual([]);
    expect(alpha.received('error', (m) => m.correlation_id === cancelIt.message_id)).toEqual([]);
    expect(gateway.agents().find((a) => a.id === 'beta')).toMatchObject({ maxConcurrent: 1, assigned: [taskId], responsive: true, status: 'healthy' });
    expect(owner.done()).toBe(false);
    beta.complete(taskId);
    const result = await owner.result();
    expect(result.status).toBe('success');
    expect(result.output).not.toContain('backdoor.py');
    expect(result.metadata).toMatchObject({ agentId: 'beta', history: [{ agentId: 'beta', outcome: 'completed' }] });
    expect(out()).toContain('refused a message from alpha');
    expect(out()).not.toContain('gives up');
  }, 20_000);

  it('refuses the spec\'s shared subject, naming the agent\'s own; accepts it with --shared-subject, saying identities are then unverified', async () => {
    const strict = await startGateway('seed-h');
    const shared = `${strict.prefix}.orchestrator.messages`;
    const a = await new SeedAgent('agent_a', strict.prefix, { max: 1 }).start(server.url);
    const registration = a.sendOn(shared, a.registration()) as Wire;
    const error = await a.waitFor('an error', 'error', (m) => m.correlation_id === registration.message_id);
    expectValid(error);
    expect(error.payload).toMatchObject({
      error_code: 'E_SHARED_SUBJECT',
      error_message: `${shared} names no agent, so nothing said there is accepted: publish on your own subject, ${shared}.agent_a`,
    });
    expect(strict.gateway.agents()).toEqual([]);
    expect(strict.err()).not.toContain('--shared-subject');

    const open = await startGateway('seed-h2', { sharedSubject: true });
    expect(open.err()).toContain(`a2a: warning: --shared-subject: messages on ${open.prefix}.orchestrator.messages are accepted with their sender_id unverified`);
    expect(open.out()).toContain(`agents talk on ${open.prefix}.orchestrator.messages.* and ${open.prefix}.orchestrator.messages`);
    const b = await new SeedAgent('agent_b', open.prefix, { max: 1 }).start(server.url);
    b.sendOn(`${open.prefix}.orchestrator.messages`, b.registration());
    b.register(); // its own subject works as well
    await registered(open.gateway, 'agent_b');
  }, 20_000);

  it('drops a replayed message: 20 copies of a registration register once, 20 of a task_result give one result', async () => {
    const ns = 'seed-i';
    const { gateway, prefix, out } = await startGateway(ns);
    let taskId = '';
    const a = await new SeedAgent('agent_a', prefix, {
      max: 1,
      onMessage: (m, self) => {
        if (m.message_type !== 'task') return;
        taskId = m.payload.task_id;
        self.ack(m, 'accepted');
      },
    }).start(server.url);
    const registration = a.registration();
    for (let i = 0; i < 20; i++) a.send(registration);
    a.startHeartbeats();
    await registered(gateway, 'agent_a');
    const owner = await ownerOf(ns, specFor(ns, 'st-i1'));
    await waitFor('the task to be accepted', () => taskId && out().includes(`task ${taskId} accepted by agent_a`));
    const result = a.result(taskId);
    for (let i = 0; i < 20; i++) a.send(result);
    expect((await owner.result()).status).toBe('success');
    // a marker after them: its error reply comes after anything the copies could have caused
    const marker = a.send(a.envelope('acknowledgment', { task_id: taskId, status: 'maybe' })) as Wire;
    await a.waitFor('the marker\'s error', 'error', (m) => m.correlation_id === marker.message_id);

    const lines = out().split('\n');
    expect(lines.filter((l) => l.includes('agent agent_a registered'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('re-registered'))).toEqual([]);
    expect(lines.filter((l) => l.includes(`task ${taskId} completed by agent_a`))).toHaveLength(1);
    // one line per replayed message, not per copy
    expect(lines.filter((l) => l.includes('replay dropped'))).toEqual([
      `gateway: replay dropped: registration ${registration.message_id} from agent_a was already handled`,
      `gateway: replay dropped: task_result ${result.message_id} from agent_a was already handled`,
    ]);
    // the copies after the result were not refused as about an unknown task: they were dropped
    expect(a.received('error').map((m) => m.correlation_id)).toEqual([marker.message_id]);
  }, 20_000);
});
