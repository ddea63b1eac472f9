/**
 * A run's control subject, the parts the cross-process tests do not reach: how its log is paged
 * into replies (a reply holds what one NATS message may, an event too large goes without its
 * data, indices never shift), who `by` is, and a studio asked for a run that neither its
 * workspace nor the namespace has. The requests themselves, with per-process users, are in
 * hostUsers.test.ts; the page, in test/studio/browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlBy, eventsPage } from '../../adapters/transport/runControl.js';
import { startStudio } from '../../adapters/studio/server.js';
import { watchNamespace } from '../../adapters/studio/nats.js';
import { connectNats } from '../../adapters/transport/nats.js';
import type { RunEvent } from '../../machines/protocol/index.js';
import { tempDir } from '../helpers.js';
import { pageBundle } from '../studio/kit.js';
import { startNatsServer, type NatsServer } from './server.js';

const event = (seq: number, text = ''): RunEvent => ({ type: 'warning', runId: 'r', seq, ts: seq, data: { message: text } });

describe('eventsPage', () => {
  it('should page the log by the bytes of a reply, at least one event each, and say when more are left', () => {
    const log = Array.from({ length: 10 }, (_, i) => event(i, 'x'.repeat(100)));
    const size = JSON.stringify(log[0]).length;
    const first = eventsPage(log, -1, size * 4);
    expect(first).toMatchObject({ from: 0, more: true });
    expect(first.events.map((e) => e.seq)).toEqual([0, 1, 2, 3]);
    const rest = eventsPage(log, 3, 1);
    expect(rest).toMatchObject({ from: 4, more: true });
    expect(rest.events.map((e) => e.seq)).toEqual([4]);
    expect(eventsPage(log, 9)).toEqual({ from: 10, events: [], more: false });
    expect(eventsPage(log, -1).events).toHaveLength(10);
  });

  it('should send an event larger than a NATS message without its data, at its index', () => {
    const log = [event(0), event(1, 'y'.repeat(800 * 1024)), event(2)];
    const page = eventsPage(log, 0);
    expect(page.events.map((e) => e.seq)).toEqual([1, 2]);
    expect(String(page.events[0]!.data.omitted)).toMatch(/^this event's data \(\d+ bytes\) is larger than one NATS message holds: read it in the run's log/);
    expect(log[1]!.data.message).toHaveLength(800 * 1024);
  });
});

describe('controlBy', () => {
  it('should name the NATS user who asked, with the person the request names beside it', () => {
    expect(controlBy('ann (studio)', 'studio-ops')).toBe('ann (studio) via studio-ops');
    expect(controlBy('studio-ops', 'studio-ops')).toBe('studio-ops');
  });
});

describe('a studio with --nats', () => {
  let server: NatsServer;
  beforeAll(async () => {
    server = await startNatsServer();
  });
  afterAll(() => server?.stop());

  it('should answer 404 for a run neither its workspace nor the namespace has, saying where it looked', async () => {
    const transport = await connectNats({ servers: server.url, namespace: 'default', name: 'studio-test' });
    const nats = await watchNamespace(transport, { servers: server.url, namespace: 'default' });
    const ws = tempDir('a2a-studio-nats-');
    const studio = await startStudio({ workspace: ws, indexed: false, pageScript: pageBundle(), nats });
    try {
      const res = await fetch(`http://127.0.0.1:${studio.port}/api/runs/ghost`, { headers: { authorization: `Bearer ${studio.token}` } });
      expect(res.status).toBe(404);
      expect(((await res.json()) as { error: string }).error).toMatch(/^no run "ghost" in .*\.a2a\/runs, and no process of namespace "default" answers for it on NATS \(no responders on subject "a2a\.default\.control\.ghost\.studio" \(NATS 127\.0\.0\.1:\d+\)\)$/);
    } finally {
      await studio.close();
      await nats.close();
      await transport.close();
    }
  });

  it('should refuse a user name that cannot end a control subject, naming the setting', async () => {
    const transport = await connectNats({ servers: server.url, namespace: 'default', name: 'studio-test' });
    try {
      await expect(watchNamespace(transport, { servers: server.url, namespace: 'default', controlUser: 'ann (studio)' })).rejects.toThrow(/the studio's NATS user name "ann \(studio\)" cannot name a control subject: .* \(A2A_NATS_NAME\)/);
    } finally {
      await transport.close();
    }
  });
});
