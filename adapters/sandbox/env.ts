/**
 * The environment a command sees: an allowlist, never the runtime's own environment (it holds API
 * keys and NATS credentials). The same in the sandbox and in the unconfined opt-out.
 */

/** Names passed through from the runtime's environment when set. */
const PASSED = ['PATH', 'LANG', 'TERM', 'TZ'];
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * PATH, LANG, LC_*, TERM and TZ from `from`, HOME=/tmp (private in the sandbox), no terminal
 * prompts from git, and the names the configuration adds (`sandbox.env`, checked not to be secrets).
 */
export function commandEnv(extra: readonly string[], from: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const env: Record<string, string> = { PATH: DEFAULT_PATH };
  for (const [name, value] of Object.entries(from)) {
    if (value === undefined) continue;
    if (PASSED.includes(name) || name.startsWith('LC_') || extra.includes(name)) env[name] = value;
  }
  env.HOME = '/tmp';
  env.GIT_TERMINAL_PROMPT = '0';
  return env;
}
