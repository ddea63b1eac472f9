/**
 * The artifact store over NATS JetStream KV: two processes (two connections) share a run's
 * artifacts, claim ids without collisions, and a value over the server's max_payload is a clear
 * error. `a2a artifacts --nats` reads them read-only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from 'xstate';
import { ArtifactStore } from '../../actors/organiser/artifacts.js';
import { isA2AError } from '../../actors/errors.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../../adapters/store/artifactKv.js';
import { connectNats, type NatsConnectedTransport } from '../../adapters/transport/nats.js';
import { main } from '../../bin/cli.js';
import { tempDir } from '../helpers.js';
import { startNatsServer, type NatsServer } from './server.js';

let server: NatsServer | null = null;
const transports: NatsConnectedTransport[] = [];

afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.close()));
  await server?.stop();
  server = null;
});

async function storeOn(s: NatsServer, runId: string): Promise<ArtifactStore> {
  const transport = await connectNats({ servers: s.url, namespace: 'art' });
  transports.push(transport);
  return new ArtifactStore(new KvArtifactBackend(() => transport.keyValue(ARTIFACT_BUCKET)), runId, new SimulatedClock());
}

describe('artifacts over NATS KV', () => {
  it('should let two processes see each other\'s artifacts and claim distinct ids at once', async () => {
    server = await startNatsServer();
    const a = await storeOn(server, 'shared');
    const b = await storeOn(server, 'shared');
    await a.create({ type: 'implementation_plan', content: '# Plan\n- one', producer: 'w-plan', producerRole: 'architect' });
    expect((await b.read('implementation_plan-1')).content).toBe('# Plan\n- one');
    await b.revise('implementation_plan-1', { content: '# Plan v2', producer: 'w-plan.1' });
    expect(await a.get('implementation_plan-1')).toMatchObject({ version: 2, producer: 'w-plan.1' });

    const created = await Promise.all([0, 1, 2, 3].flatMap((i) => [a, b].map((s) => s.create({ type: 'code', content: `c${i}`, producer: 'w-code', producerRole: 'coder' }))));
    expect(new Set(created.map((m) => m.id)).size).toBe(8);
    expect((await a.list({ type: 'code' })).map((m) => m.id).sort()).toEqual(created.map((m) => m.id).sort());

    let out = '';
    const io = { stdout: { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream, stderr: process.stderr };
    expect(await main(['artifacts', 'shared', '--show', 'implementation_plan-1@1', '--nats', server.url, '--namespace', 'art', '--workspace', tempDir()], io)).toBe(0);
    expect(out).toBe('# Plan\n- one\n');
  });

  it('should refuse a value over the server\'s max_payload with a clear error', async () => {
    server = await startNatsServer({ config: 'max_payload: 8192' });
    const store = await storeOn(server, 'small');
    const e = await store.create({ type: 'code', content: 'x'.repeat(20_000), producer: 'w', producerRole: 'coder' }).catch((error: unknown) => error as Error);
    expect(isA2AError(e, 'VALIDATION_ERROR')).toBe(true);
    expect((e as Error).message).toMatch(/^code-1 version 1 is 2\d{4} bytes as JSON, more than a value of KV bucket artifacts may hold/);
    // nothing half-written: the run has no artifact
    expect(await store.list()).toEqual([]);
  });
});
