/**
 * What traces must not carry: `a2a run "<task with a key>" --otel http://user:password@…` with
 * content capture off, its spans received by an OTLP receiver on loopback, every byte of every
 * request searched for the key, the task's text and the endpoint's password.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { a2aProcess, killAll } from '../nats/cluster.js';
import { tempDir } from '../helpers.js';
import { exportedResource, withoutCredentials } from '../../adapters/otel/sdk.js';
import { startReceiver, type Receiver } from './receiver.js';

const KEY = 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd';
const TASK = `Say hello to the leak check. key ${KEY}`;
const PASSWORD = 'pw-Zq8vN3xL';

let rx: Receiver;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  killAll();
  await rx.close();
});

describe('traces carry no secret and no command line', () => {
  it('sends no byte of the key, the task text or the endpoint password (content capture off)', async () => {
    const ws = tempDir('a2a-otel-leak-');
    const endpoint = rx.url.replace('http://', `http://tracer:${PASSWORD}@`);
    const run = a2aProcess(['run', TASK, '--workspace', ws, '--otel', endpoint, '--no-tree'], ws);
    await run.exited;
    await rx.runExported(undefined, 20_000);
    const bytes = Buffer.concat(rx.bodies);
    expect(bytes.length).toBeGreaterThan(0);
    for (const needle of [KEY, 'Say hello to the leak check', PASSWORD, 'sk-proj-']) expect(bytes.includes(Buffer.from(needle)), `"${needle}" in the exported traces`).toBe(false);
    expect(run.out()).not.toContain(PASSWORD);
  }, 30_000);

  it('passes every span attribute, event and status message through the redactor of the logs', async () => {
    const { OffThreadExporter } = await import('../../adapters/otel/offThread.js');
    const { secrets } = await import('../../actors/config/secrets.js');
    secrets.add('SHORT_SERVICE_TOKEN', 'k9Q');
    const exporter = new OffThreadExporter({ url: `${rx.url}/v1/traces`, protocol: 'http/json', target: rx.url, resource: { 'service.name': 'leak-check' }, maxQueueSize: 100, maxExportBatchSize: 10, scheduledDelayMillis: 10, onProblem: () => {} });
    // a secret the process learns once the export thread runs: the thread redacts with it too
    secrets.add('LATE_SERVICE_TOKEN', 'late-Vq7rT2mW9x');
    const before = rx.bodies.length;
    exporter.push({
      n: 'tool run_command', k: 1, t: '0af7651916cd43dd8448eb211c80319c', s: 'b7ad6b7169203331', f: 1, st: [1, 0], et: [2, 0], da: 0,
      a: { 'a2a.detail': `curl -H "Authorization: Bearer ${'Z'.repeat(24)}" with k9Q`, 'a2a.key': KEY, 'a2a.late': 'sent with late-Vq7rT2mW9x' },
      c: { code: 2, message: `failed: password=${PASSWORD}` },
      ev: [{ name: 'exception', time: [1, 5], attributes: { 'exception.message': `refused ${KEY}` } }],
    });
    expect(await exporter.forceFlush(5_000)).toBe(true);
    await exporter.shutdown(2_000);
    const bytes = Buffer.concat(rx.bodies.slice(before));
    expect(bytes.includes(Buffer.from('tool run_command')), 'the span arrived').toBe(true);
    for (const needle of [KEY, PASSWORD, 'ZZZZZZZZZZZZZZZZ', 'k9Q', 'late-Vq7rT2mW9x']) expect(bytes.includes(Buffer.from(needle)), `"${needle}" in the exported span`).toBe(false);
    expect(bytes.includes(Buffer.from('[redacted:SHORT_SERVICE_TOKEN]'))).toBe(true);
    expect(bytes.includes(Buffer.from('[redacted:LATE_SERVICE_TOKEN]'))).toBe(true);
  });

  it('exports only allowlisted detector attributes, redacted, with credentials out of URLs', () => {
    const out = exportedResource({
      'process.command_args': ['node', 'a2a', 'run', TASK],
      'process.command_line': `node a2a run ${TASK}`,
      'process.command': 'a2a',
      'process.executable.path': '/usr/bin/node',
      'process.owner': 'root',
      'process.pid': 42,
      'host.name': 'box',
      'service.name': 'svc',
      'deployment.environment': `https://u:${PASSWORD}@example.invalid/x`,
    });
    expect(out).toEqual({ 'process.pid': 42, 'host.name': 'box', 'service.name': 'svc', 'deployment.environment': 'https://example.invalid/x' });
    expect(withoutCredentials('see http://a:b@h:1/p and nats://u@h')).toBe('see http://h:1/p and nats://h');
  });
});
