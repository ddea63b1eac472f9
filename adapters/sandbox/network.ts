/**
 * `network: true` without the host's network: the command's own network namespace (bwrap
 * `--unshare-net`), given egress by slirp4netns, a user-mode network stack that connects out from
 * this process's side. `--disable-host-loopback` leaves no way to the host's loopback services
 * (databases, the NATS server, the studio): 127.0.0.1 inside is the sandbox's own, and the
 * gateway 10.0.2.2 that would lead to the host's loopback refuses. DNS is slirp4netns's 10.0.2.3
 * (the sandbox's /etc/resolv.conf says so).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { A2AError } from '../../actors/errors.js';

const READY_TIMEOUT_MS = 10_000;

let slirpPath: string | null | undefined;

/** slirp4netns's path (looked up once per process), or null when it is not installed. */
export function findSlirp(): string | null {
  if (slirpPath === undefined) slirpPath = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean).map((d) => join(d, 'slirp4netns')), '/usr/bin/slirp4netns'].find((p) => existsSync(p)) ?? null;
  return slirpPath;
}

let resolvConf: string | null = null;

/** bwrap arguments for the namespace's DNS: a resolv.conf naming slirp4netns's resolver. */
export function egressArgs(): string[] {
  if (!resolvConf) {
    const dir = mkdtempSync(join(tmpdir(), 'a2a-net-'));
    resolvConf = join(dir, 'resolv.conf');
    writeFileSync(resolvConf, 'nameserver 10.0.2.3\n');
  }
  return ['--ro-bind', resolvConf, '/etc/resolv.conf'];
}

/**
 * Waits (a moment at most) until bwrap has brought up the namespace's loopback: slirp4netns
 * configuring the namespace at the same time makes bwrap's own setup fail ("loopback: Failed
 * RTM_NEWADDR"). The loopback is up once it has its IPv6 address (or, without IPv6, after the wait).
 */
async function loopbackUp(pid: number): Promise<void> {
  const deadline = Date.now() + 300;
  while (Date.now() < deadline) {
    const text = await readFile(`/proc/${pid}/net/if_inet6`, 'utf8').catch(() => null);
    if (text === null || /\blo$/m.test(text)) return;
    await new Promise((r) => setTimeout(r, 3));
  }
}

/** Connects the network namespace of `pid` to the outside (egress only); resolves to what stops it. */
export async function egressFor(slirp: string, pid: number): Promise<() => void> {
  await loopbackUp(pid);
  return new Promise((resolve, reject) => {
    const child = spawn(slirp, ['--configure', '--mtu=65520', '--disable-host-loopback', '--ready-fd=3', String(pid), 'tap0'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const stop = () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    };
    const timer = setTimeout(() => {
      stop();
      reject(new A2AError('TOOL_NOT_ALLOWED', `the sandbox's network (slirp4netns) was not ready within ${READY_TIMEOUT_MS} ms; nothing was run.`));
    }, READY_TIMEOUT_MS);
    (child.stdio[3] as NodeJS.ReadableStream).once('data', () => {
      clearTimeout(timer);
      resolve(stop);
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new A2AError('TOOL_NOT_ALLOWED', `could not start slirp4netns for the sandbox's network: ${error.message}; nothing was run.`));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new A2AError('TOOL_NOT_ALLOWED', `slirp4netns ended (${code}) before the sandbox's network was ready: ${err.trim().split('\n').slice(-3).join(' ')}; nothing was run.`));
    });
  });
}
