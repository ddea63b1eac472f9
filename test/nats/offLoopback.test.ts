/**
 * Safe by default off loopback: a NATS server that is not this machine's loopback is refused
 * without credentials and TLS, before any connection is tried (so these tests send nothing beyond
 * loopback), unless --insecure says otherwise; and TLS works as configured (a CA made here with
 * openssl, a nats-server on loopback that requires TLS).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../bin/cli.js';
import { natsCredentials } from '../../adapters/assembly/nats.js';
import { connectNats } from '../../adapters/transport/nats.js';
import { assertSafeOffLoopback, isLoopbackUrl } from '../../adapters/transport/natsServers.js';
import { capture } from './cluster.js';
import { startNatsServer, type NatsServer } from './server.js';

describe('which servers are loopback, from the URL alone', () => {
  it('tells loopback from everything else', () => {
    for (const url of ['nats://127.0.0.1:4222', '127.0.0.1:4222', 'nats://localhost:4222', 'tls://127.9.8.7', 'nats://[::1]:4222', 'nats://user:pw@127.0.0.1:4222']) expect(isLoopbackUrl(url), url).toBe(true);
    for (const url of ['nats://10.0.0.5:4222', 'nats://nats.example.org:4222', 'nats://0.0.0.0:4222', 'nats://[fe80::1]:4222', 'nats://127.0.0.1.nip.io:4222', 'nats://localhost.evil.example:4222', 'not a url']) expect(isLoopbackUrl(url), url).toBe(false);
  });

  it('names what is missing, and lets --insecure through', () => {
    const refused = (servers: string, security = {}) => {
      try {
        assertSafeOffLoopback(servers, security);
        return '';
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(refused('nats://127.0.0.1:4222')).toBe('');
    const both = refused('nats://127.0.0.1:4222,nats://10.0.0.5:4222');
    expect(both).toContain('refusing to connect to NATS at nats://10.0.0.5:4222, which is not loopback, without credentials (A2A_NATS_USER and A2A_NATS_PASSWORD, A2A_NATS_TOKEN, A2A_NATS_NKEY naming an nkey seed file, or A2A_NATS_CREDS');
    expect(both).toContain('and TLS (a tls:// URL');
    expect(both).toContain('pass --insecure (A2A_NATS_INSECURE=1)');
    expect(refused('nats://10.0.0.5:4222', { token: 't0ken-t0ken' })).toMatch(/without TLS \(a tls:\/\/ URL.*Add it,/);
    expect(refused('tls://10.0.0.5:4222')).toMatch(/without credentials \(.*Add it,/);
    // the password in a URL is never shown
    expect(refused('nats://ann:hunter2@10.0.0.5:4222')).not.toContain('hunter2');
    expect(refused('tls://ann:hunter2@10.0.0.5:4222')).toBe('');
    expect(refused('tls://10.0.0.5:4222', { user: 'ann', pass: 'x' })).toBe('');
    expect(refused('nats://10.0.0.5:4222', { credsFile: '/x.creds', tls: { caFile: '/ca.pem' } })).toBe('');
    expect(refused('nats://10.0.0.5:4222', { nkeyFile: '/host-alpha.nk', tls: { caFile: '/ca.pem' } })).toBe('');
    expect(refused('nats://10.0.0.5:4222', { insecure: true })).toBe('');
  });

  it('reads the TLS files, the creds file and --insecure from the environment, and refuses a bad flag', () => {
    expect(natsCredentials({ A2A_NATS_TLS_CA: '/ca.pem', A2A_NATS_CREDS: '/h.creds', A2A_NATS_INSECURE: '1' })).toMatchObject({ tls: { caFile: '/ca.pem' }, credsFile: '/h.creds', insecure: true });
    expect(natsCredentials({ A2A_NATS_NKEY: '/h.nk' })).toMatchObject({ nkeyFile: '/h.nk' });
    expect(() => natsCredentials({ A2A_NATS_INSECURE: 'yes please' })).toThrow('A2A_NATS_INSECURE must be 1 or true (or 0, false, unset), got "yes please"');
  });

  it('refuses `a2a host` and `a2a run` to a server off loopback before connecting, and says how to proceed', async () => {
    const host = capture();
    expect(await main(['host', '--nats', 'nats://10.1.2.3:4222', '--agents', 'coder'], host.io)).toBe(2);
    expect(host.err()).toContain('refusing to connect to NATS at nats://10.1.2.3:4222, which is not loopback');
    const ws = mkdtempSync(join(tmpdir(), 'a2a-offloop-'));
    try {
      const run = capture();
      expect(await main(['run', 'Say hello.', '--nats', 'nats://nats.example.org:4222', '--workspace', ws, '--no-tree'], run.io)).toBe(2);
      expect(run.err()).toContain('refusing to connect to NATS at nats://nats.example.org:4222');
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  });
});

describe('TLS, and --insecure', () => {
  let server: NatsServer;
  let plain: NatsServer;
  const dir = mkdtempSync(join(tmpdir(), 'a2a-tls-'));
  const ca = join(dir, 'ca.pem');
  beforeAll(async () => {
    // a CA, and a certificate it signs for 127.0.0.1
    const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=a2a test CA');
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
    writeFileSync(join(dir, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
    ssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'ext.cnf');
    server = await startNatsServer({ jetstream: false, config: `tls { cert_file: ${JSON.stringify(join(dir, 'server.pem'))}, key_file: ${JSON.stringify(join(dir, 'server.key'))} }` });
    plain = await startNatsServer({ jetstream: false });
  }, 20_000);
  afterAll(async () => {
    await server?.stop();
    await plain?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('connects over TLS with the CA it is given, and fails clearly without it', async () => {
    const url = `tls://127.0.0.1:${server.port}`;
    const transport = await connectNats({ servers: url, reconnect: false, ...natsCredentials({ A2A_NATS_TLS_CA: ca }) });
    const got = new Promise<unknown>((resolve) => transport.subscribe('a2a.tls.check', (m) => resolve(m.data)));
    await new Promise((r) => setTimeout(r, 50));
    await transport.publish('a2a.tls.check', { over: 'tls' });
    expect(await got).toEqual({ over: 'tls' });
    await transport.close();
    await expect(connectNats({ servers: url, reconnect: false })).rejects.toThrow(/could not connect to NATS at tls:\/\/127\.0\.0\.1:\d+: .*(certificate|self.signed|issuer)/i);
  });

  it('refuses a creds file that is not one, naming it', async () => {
    const bad = join(dir, 'host.creds');
    writeFileSync(bad, 'not a creds file\n');
    await expect(connectNats({ servers: `nats://127.0.0.1:${plain.port}`, credsFile: bad, reconnect: false })).rejects.toThrow(`the NATS creds file ${bad} (A2A_NATS_CREDS) cannot be used: it holds no user JWT and nkey seed`);
  });

  it('connects to a server that is not loopback by its URL when told --insecure (0.0.0.0 reaches this machine)', async () => {
    const url = `nats://0.0.0.0:${plain.port}`;
    await expect(connectNats({ servers: url, reconnect: false })).rejects.toThrow(/which is not loopback/);
    const transport = await connectNats({ servers: url, reconnect: false, ...natsCredentials({ A2A_NATS_INSECURE: '1' }) });
    expect(transport.serverRequiresAuth).toBe(false);
    await transport.close();
  });
});
