/**
 * API keys for the provider adapters: from the environment first, else from a secrets file
 * (JSON `{ "openai": "...", "anthropic": "...", "google": "..." }`). Errors say where we looked, never what we
 * found, and `redact` scrubs keys from any text (and error) that could reach a log or a model.
 */
import { readFileSync } from 'node:fs';
import { A2AError } from '../../actors/errors.js';

export type Provider = 'openai' | 'anthropic' | 'google';

/** The environment variable each provider's key is read from. */
export const API_KEY_ENV: Record<Provider, string> = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GEMINI_API_KEY',
};

/** Where to look for the key, for messages: `OPENAI_API_KEY or "openai" in <file>`. */
export function keySources(provider: Provider, secretsFile?: string): string {
  return secretsFile ? `${API_KEY_ENV[provider]} or "${provider}" in ${secretsFile}` : API_KEY_ENV[provider];
}

/** The string under `provider` (any key) in the secrets file; undefined when the file or the key is absent. */
export function fromFile(provider: string, file: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new A2AError('CONFIGURATION_INVALID', `cannot read the secrets file ${file}: ${(cause as Error).message}`, { where: file });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    // JSON.parse messages quote the text around the error, which may be a key: say no more
    throw new A2AError('CONFIGURATION_INVALID', `the secrets file ${file} is not valid JSON (expected { "openai": "...", "anthropic": "..." })`, {
      where: file,
    });
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new A2AError('CONFIGURATION_INVALID', `the secrets file ${file} must hold an object like { "openai": "...", "anthropic": "..." }`, { where: file });
  }
  const value = (data as Record<string, unknown>)[provider];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new A2AError('CONFIGURATION_INVALID', `the secrets file ${file}: "${provider}" must be a string`, { where: `${file}#${provider}` });
  }
  return value.trim() || undefined;
}

/** The provider's API key: `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` / `GEMINI_API_KEY`, else the secrets file. */
export function resolveApiKey(provider: Provider, options: { env?: NodeJS.ProcessEnv; secretsFile?: string } = {}): string {
  const variable = API_KEY_ENV[provider];
  const fromEnv = (options.env ?? process.env)[variable]?.trim();
  if (fromEnv) return fromEnv;
  const fromSecrets = options.secretsFile ? fromFile(provider, options.secretsFile) : undefined;
  if (fromSecrets) return fromSecrets;
  const looked = options.secretsFile ? ` or add "${provider}" to ${options.secretsFile}` : ' (no secrets file configured)';
  throw new A2AError('CONFIGURATION_INVALID', `no API key for ${provider}: set ${variable}${looked}`, { where: variable });
}

/** `text` with every secret replaced by `***` (longest first, so that no tail of one survives). */
export function redact(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of [...secrets].filter((s) => s.length > 0).sort((a, b) => b.length - a.length)) {
    out = out.split(secret).join('***');
  }
  return out;
}

/** The value with secrets removed, or the same value when it held none. */
function redactValue(value: unknown, secrets: string[]): unknown {
  if (typeof value === 'string') return redact(value, secrets);
  if (value instanceof Headers) {
    const entries = [...value];
    const clean = entries.map(([k, v]) => [k, redact(v, secrets)] as [string, string]);
    return clean.some(([, v], i) => v !== entries[i]![1]) ? new Headers(clean) : value;
  }
  if (value && typeof value === 'object' && !(value instanceof Error)) {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      return value;
    }
    if (json === undefined) return value;
    const clean = redact(json, secrets);
    if (clean === json) return value;
    try {
      return JSON.parse(clean);
    } catch {
      return '[removed: held a secret]';
    }
  }
  return value;
}

/**
 * Removes secrets from an error in place, down its `cause` chain: message, stack and the fields an
 * SDK error carries (response body, headers). We keep SDK errors as `cause` for debugging, and a
 * server that echoes the key back must not get it printed by `util.inspect` or a log.
 */
export function redactError<T>(error: T, secrets: string[], depth = 0): T {
  if (!(error instanceof Error) || depth > 5 || secrets.every((s) => !s)) return error;
  const fields = error as unknown as Record<string, unknown>;
  for (const key of [...Object.keys(error), 'message', 'stack']) {
    if (key === 'cause') continue;
    const before = fields[key];
    const after = redactValue(before, secrets);
    if (after !== before) {
      try {
        Object.defineProperty(error, key, { value: after, writable: true, configurable: true, enumerable: Object.keys(error).includes(key) });
      } catch {
        // a frozen field: leave it; the message we build ourselves is redacted anyway
      }
    }
  }
  redactError(fields.cause, secrets, depth + 1);
  return error;
}
