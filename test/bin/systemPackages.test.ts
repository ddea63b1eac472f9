/**
 * `npm test`'s pretest (test/systemPackages.mjs): the suite starts only when the programs it
 * drives are there; otherwise it stops before any test, with exit code 2 and the one command that
 * installs them. (Installing itself is not exercised here: it would change the machine.)
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '..', 'systemPackages.mjs');

function check(env: Record<string, string>, as: 'root' | 'nobody' = 'root') {
  const command = as === 'root' ? [process.execPath, SCRIPT] : ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', process.execPath, SCRIPT];
  const result = spawnSync(command[0]!, command.slice(1), { encoding: 'utf8', env: { ...process.env, ...env }, cwd: '/' });
  return { code: result.status, err: result.stderr };
}

describe('npm test: the system programs', () => {
  it('should let the suite start when every program is there', () => {
    expect(check({})).toEqual({ code: 0, err: '' });
  });

  it('should stop at once (exit 2) with the command to run when one is missing and installing is not allowed', () => {
    const { code, err } = check({ A2A_TEST_MISSING: 'chromium,bwrap', A2A_NO_INSTALL: '1' });
    expect(code).toBe(2);
    expect(err).toContain('bwrap, chromium are missing');
    expect(err).toContain("sudo sh -c 'apt-get update && apt-get install -y bubblewrap chromium'");
  });

  it('should stop at once (exit 2) and say it needs root when it runs as another user', () => {
    const { code, err } = check({ A2A_TEST_MISSING: 'nats-server' }, 'nobody');
    expect(code).toBe(2);
    expect(err).toMatch(/nats-server is missing .*installing them needs root\. Run:\n\n {2}sudo sh -c 'apt-get update && apt-get install -y nats-server'/s);
  });

  it('should name a variable that points at no program', () => {
    const { code, err } = check({ CHROMIUM_BIN: '/nonexistent/chromium' });
    expect(code).toBe(2);
    expect(err).toContain('CHROMIUM_BIN is set to "/nonexistent/chromium", which is not an executable file');
  });
});
