/**
 * The SDLC workflow across processes: the organiser and the orchestrator in `a2a run --nats`, the
 * team on two `a2a host` processes (over a real nats-server started by the test). The artifacts
 * live in the JetStream KV bucket: what the architect writes on one host, the run's recorder and
 * the other host read.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { FileRunStore } from '../../adapters/store/file.js';
import type { RunSummary } from '../../machines/orchestrator.machine.js';
import { a2aHost, capture, killAll, served } from './cluster.js';
import { startNatsServer, type NatsServer } from './server.js';
import { exampleWorkspace } from '../workflow/example.js';
let server: NatsServer | null = null;

afterEach(async () => {
  killAll();
  await server?.stop();
  server = null;
});

describe('the SDLC workflow over NATS', () => {
  it('should run examples/sdlc with its team on two hosts, artifacts shared through the KV bucket', async () => {
    server = await startNatsServer();
    const ws = exampleWorkspace('a2a-sdlc-nats-');
    // the hosts' own config approves commands, as the workflow's does for the run
    writeFileSync(join(ws, 'a2a.config.json'), JSON.stringify({ permissions: { auto_approve: ['command_execution'] } }));
    const hosts = [a2aHost(server.url, ws, 'planners', 'architect,code-sceptic'), a2aHost(server.url, ws, 'builders', 'coder,documentation-writer,debugger')];
    await Promise.all(hosts.map(served));
    const c = capture();
    const code = await main(['run', join(ws, 'workflow.json'), '--nats', server.url, '--workspace', ws, '--run-id', 'sdlc-nats', '--no-tree'], c.io);
    expect(code, `${c.out().slice(-3000)}${c.err()}\n${hosts.map((h) => h.out().slice(-1500)).join('\n---\n')}`).toBe(0);
    const store = new FileRunStore(ws);
    const summary = store.read('sdlc-nats').summary as RunSummary;
    expect(summary.workflow).toMatchObject({ status: 'completed', state: 'COMPLETED' });
    const events = store.events('sdlc-nats');
    // the architect's own artifact (written on host "planners") and its revision are in the run's log
    const changes = events.filter((e) => e.type === 'artifact.created' || e.type === 'artifact.updated').map((e) => `${String(e.data.artifactId)}@${String(e.data.version)}`);
    expect(changes.slice(0, 3)).toEqual(['implementation_plan-1@1', 'review_report-1@1', 'implementation_plan-1@2']);
    expect(changes).toHaveLength(16);
    // every step's workers ran on the hosts
    expect(events.filter((e) => e.type === 'subtask.placed').map((e) => String(e.data.host))).toEqual(expect.arrayContaining(['planners', 'builders']));
    const listed = capture();
    expect(await main(['artifacts', 'sdlc-nats', '--workspace', ws, '--nats', server.url], listed.io), listed.err()).toBe(0);
    expect(listed.out()).toMatch(/implementation_plan-1\s+implementation_plan\s+2\s+approved/);
  }, 20_000);
});
