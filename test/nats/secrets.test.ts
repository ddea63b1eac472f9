/**
 * Secrets do not cross NATS in clear either: a run across two host processes whose sessions put
 * the API key into their text and results, with a NATS password in every process's environment;
 * a subscriber to every subject of the server (events, reports, spawns, KV snapshots) sees
 * neither value, only their markers.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { connect } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { a2aHost, capture, killAll, served } from './cluster.js';
import { startNatsServer, type NatsServer } from './server.js';
import { tempDir } from '../helpers.js';

const KEY = 'sk-test-SECRET123';
const NATS_SECRET = 'nats-pass-SECRET456';
let server: NatsServer | null = null;

afterEach(async () => {
  killAll();
  await server?.stop();
  server = null;
  delete process.env.OPENAI_API_KEY;
});

describe('secrets over NATS', () => {
  it('are in no message on any subject: events, reports, spawns, snapshots', async () => {
    server = await startNatsServer();
    const ws = tempDir('a2a-nats-secrets-');
    writeFileSync(join(ws, 'plan.json'), JSON.stringify({ id: 'sec', tasks: [{ id: 'design', agent: '@architect', prompt: `Use ${KEY} for the client` }] }));
    writeFileSync(
      join(ws, 'script.json'),
      JSON.stringify({
        rules: [
          {
            agent: 'architect',
            depth: 0,
            turns: [
              { text: `Splitting the work around ${KEY}.`, toolCalls: [{ name: 'a2a_spawn_subtask', arguments: { agentType: '@coder', prompt: `Wire in ${KEY}`, expectedOutput: 'code', blocking: true } }] },
              { toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: `done with ${KEY}` } }] },
            ],
          },
          { agent: 'coder', turns: [{ delayMs: 300, text: `Wiring ${KEY} in`, toolCalls: [{ name: 'a2a_subtask_complete', arguments: { output: `${KEY} wired in` } }] }] },
        ],
      }),
    );
    const seen: string[] = [];
    const nc = await connect({ servers: server.url });
    const sub = nc.subscribe('>');
    void (async () => {
      for await (const m of sub) seen.push(`${m.subject} ${new TextDecoder().decode(m.data)}`);
    })();
    const env = { ...process.env, OPENAI_API_KEY: KEY, A2A_DEPLOY_PASSWORD: NATS_SECRET };
    await Promise.all([served(a2aHost(server.url, ws, 'host-a', 'architect', { env })), served(a2aHost(server.url, ws, 'host-b', 'coder', { env }))]);
    process.env.OPENAI_API_KEY = KEY;
    const c = capture();
    const code = await main(['run', join(ws, 'plan.json'), '--nats', server.url, '--script', join(ws, 'script.json'), '--workspace', ws, '--run-id', 'sec-1', '--no-tree'], c.io);
    expect(code, c.out() + c.err()).toBe(0);
    await nc.flush();
    await nc.close();
    expect(seen.length).toBeGreaterThan(50);
    // snapshots of the sessions crossed too (their conversations hold the key's marker)
    expect(seen.some((m) => m.startsWith('$KV.a2a_default_snapshots.') && m.includes('[redacted:OPENAI_API_KEY]'))).toBe(true);
    expect(seen.filter((m) => m.includes('SECRET123') || m.includes('SECRET456')).map((m) => m.slice(0, 120))).toEqual([]);
  }, 20_000);
});
