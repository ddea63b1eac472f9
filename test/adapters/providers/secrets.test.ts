import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { redact, redactError, resolveApiKey } from '../../../adapters/model/secrets.js';
import { tempDir } from '../../helpers.js';
import { KEY } from './fixtures.js';

const secretsFile = (content: string) => {
  const file = join(tempDir('a2a-secrets-'), 'secrets.json');
  writeFileSync(file, content);
  return file;
};

describe('API keys', () => {
  it('should read the key from the environment before the secrets file', () => {
    const file = secretsFile(JSON.stringify({ openai: 'from-file', anthropic: 'anthropic-from-file' }));
    expect(resolveApiKey('openai', { env: { OPENAI_API_KEY: ' from-env\n' }, secretsFile: file })).toBe('from-env');
    expect(resolveApiKey('openai', { env: { OPENAI_API_KEY: '' }, secretsFile: file })).toBe('from-file');
    expect(resolveApiKey('anthropic', { env: {}, secretsFile: file })).toBe('anthropic-from-file');
  });

  it('should name the variable and the file it looked in when the key is missing', () => {
    const file = secretsFile(JSON.stringify({ openai: KEY }));
    expect(() => resolveApiKey('anthropic', { env: { OPENAI_API_KEY: KEY }, secretsFile: file })).toThrowError(
      `no API key for anthropic: set ANTHROPIC_API_KEY or add "anthropic" to ${file}`,
    );
    expect(() => resolveApiKey('openai', { env: {}, secretsFile: join(tempDir(), 'absent.json') })).toThrowError(/set OPENAI_API_KEY or add "openai" to .*absent\.json/);
    expect(() => resolveApiKey('openai', { env: {} })).toThrowError('no API key for openai: set OPENAI_API_KEY (no secrets file configured)');
    try {
      resolveApiKey('openai', { env: {} });
    } catch (error) {
      expect(error).toMatchObject({ code: 'CONFIGURATION_INVALID', fault: 'user', where: 'OPENAI_API_KEY' });
    }
  });

  it('should reject a broken secrets file without quoting its content', () => {
    const broken = secretsFile(`{ "openai": "${KEY}", }`);
    expect(() => resolveApiKey('openai', { env: {}, secretsFile: broken })).toThrowError(`the secrets file ${broken} is not valid JSON`);
    try {
      resolveApiKey('openai', { env: {}, secretsFile: broken });
    } catch (error) {
      expect(inspect(error)).not.toContain(KEY);
    }
    expect(() => resolveApiKey('openai', { env: {}, secretsFile: secretsFile(JSON.stringify({ openai: 42 })) })).toThrowError('"openai" must be a string');
    expect(() => resolveApiKey('openai', { env: {}, secretsFile: secretsFile('["x"]') })).toThrowError('must hold an object');
  });

  it('should redact every occurrence of every secret, longest first', () => {
    expect(redact(`key ${KEY} and again ${KEY}; short abc`, [KEY, 'abc', ''])).toBe('key *** and again ***; short ***');
    expect(redact('sk-long-secret', ['sk-long', 'sk-long-secret'])).toBe('***');
  });

  it('should redact an error in place down its cause chain', () => {
    const inner = new Error(`connect failed for ${KEY}`);
    const outer = Object.assign(new Error(`wrapped ${KEY}`, { cause: inner }), { body: { echoed: KEY }, headers: new Headers({ 'x-echo': KEY }), status: 400 });
    expect(redactError(outer, [KEY])).toBe(outer);
    const shown = inspect(outer, { depth: 10, showHidden: true });
    expect(shown).not.toContain(KEY);
    expect(outer).toMatchObject({ message: 'wrapped ***', body: { echoed: '***' }, status: 400 });
    expect(outer.headers.get('x-echo')).toBe('***');
    expect(inner.message).toBe('connect failed for ***');
  });
});
