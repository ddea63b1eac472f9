#!/usr/bin/env node
/**
 * Runs before the test suite (`npm test`'s pretest): the system programs the tests drive for real
 * are present, or are installed now, or the suite does not start.
 *
 * - `nats-server` (the NATS tests start their own servers), `bwrap` (run_command's sandbox),
 *   `chromium` (the studio's browser tests, never a downloaded browser) and `git`.
 * - What is missing is installed with one `apt-get update` and one `apt-get install`, as root (or
 *   with `sudo -n` when that works without a password).
 * - When it cannot be installed here (no apt-get, no root, apt-get failed), nothing runs: the
 *   script exits 2 at once, naming the one command that installs what is missing.
 * - `A2A_NO_INSTALL=1` never installs: it only checks.
 *
 * Plain Node (no TypeScript, no dependency): it must work right after `npm ci`, on every Node the
 * package supports.
 */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

const onPath = (name) => (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, name));

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Each program the tests need: where the tests look for it (in their order) and its Debian package. */
const needs = [
  { program: 'nats-server', pkg: 'nats-server', env: 'NATS_SERVER_BIN', places: () => ['/usr/sbin/nats-server', ...onPath('nats-server')] },
  { program: 'bwrap', pkg: 'bubblewrap', places: () => [...onPath('bwrap'), '/usr/bin/bwrap'] },
  { program: 'chromium', pkg: 'chromium', env: 'CHROMIUM_BIN', places: () => ['/usr/bin/chromium'] },
  { program: 'git', pkg: 'git', places: () => onPath('git') },
  // run_command's network: true gets a network namespace of its own with egress only (no host loopback)
  { program: 'slirp4netns', pkg: 'slirp4netns', places: () => [...onPath('slirp4netns'), '/usr/bin/slirp4netns'] },
  { program: 'prlimit', pkg: 'util-linux', places: () => [...onPath('prlimit'), '/usr/bin/prlimit'] },
];

/** The program's path, or null; a variable that names a file which is not executable is an error now, not later. */
function locate(need) {
  const fromEnv = need.env ? process.env[need.env] : undefined;
  if (fromEnv) {
    if (executable(fromEnv)) return fromEnv;
    stop(`${need.env} is set to "${fromEnv}", which is not an executable file: point it at a ${need.program} binary, or unset it to use the system's.`);
  }
  return need.places().find(executable) ?? null;
}

function stop(message) {
  process.stderr.write(`\nnpm test: ${message}\n\n`);
  process.exit(2);
}

// its own test names programs to take as missing (test/bin/systemPackages.test.ts)
const pretendMissing = new Set((process.env.A2A_TEST_MISSING ?? '').split(',').filter(Boolean));
const missing = () => needs.filter((need) => pretendMissing.has(need.program) || !locate(need));

let absent = missing();
if (absent.length > 0) {
  const pkgs = absent.map((need) => need.pkg);
  const command = `apt-get update && apt-get install -y ${pkgs.join(' ')}`;
  const what = `${absent.map((need) => need.program).join(', ')} ${absent.length === 1 ? 'is' : 'are'} missing (the tests drive them for real, they never skip)`;
  const hasApt = onPath('apt-get').some(executable);
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const sudo = !isRoot && onPath('sudo').some(executable) && spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' }).status === 0;
  if (process.env.A2A_NO_INSTALL === '1') stop(`${what}; A2A_NO_INSTALL=1 forbids installing them. Install them with:\n\n  sudo sh -c '${command}'`);
  if (!hasApt) stop(`${what}, and this machine has no apt-get. Install the packages ${pkgs.join(', ')} with your system's package manager (nats-server also from https://github.com/nats-io/nats-server/releases, then set NATS_SERVER_BIN; CHROMIUM_BIN names another Chromium).`);
  if (!isRoot && !sudo) stop(`${what}, and installing them needs root. Run:\n\n  sudo sh -c '${command}'\n\nthen npm test again.`);
  process.stderr.write(`npm test: ${what}: installing ${pkgs.join(' ')} with apt-get\n`);
  const run = (args) => {
    const [bin, ...rest] = sudo ? ['sudo', '-n', ...args] : args;
    const result = spawnSync(bin, rest, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    if (result.status !== 0) stop(`\`${args.join(' ')}\` failed (exit ${result.status ?? result.signal}). Install the packages by hand:\n\n  ${sudo ? `sudo sh -c '${command}'` : command}`);
  };
  run(['apt-get', 'update', '-qq']);
  run(['apt-get', 'install', '-y', '-qq', ...pkgs]);
  absent = missing();
  if (absent.length > 0) stop(`apt-get installed ${pkgs.join(' ')}, but ${absent.map((need) => need.program).join(', ')} still cannot be found.`);
}

// bwrap present is not enough: the kernel must let it make namespaces (containers and some
// distributions forbid unprivileged user namespaces). Said here once, instead of 40 failing tests.
const bwrap = locate(needs[1]);
const scratch = mkdtempSync(join(tmpdir(), 'a2a-bwrap-check-'));
const check = spawnSync(bwrap, ['--ro-bind', '/', '/', '--unshare-all', '--die-with-parent', '/bin/true'], { encoding: 'utf8', cwd: scratch });
rmSync(scratch, { recursive: true, force: true });
if (check.status !== 0) {
  stop(`${bwrap} is installed but cannot make a sandbox here: ${(check.stderr || check.error?.message || `exit ${check.status}`).trim()}. ` +
    'The sandbox tests need unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or run as root).');
}
