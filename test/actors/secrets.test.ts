/**
 * The redactor: markers in place of secrets, and JSON that stays valid and means what it meant;
 * state (read back later) loses only the process's known secrets, never code that looks like one.
 */
import { describe, expect, it } from 'vitest';
import { SecretRedactor } from '../../actors/secrets.js';

function redactor() {
  const r = new SecretRedactor();
  r.add('DB_PASSWORD', '12345678');
  r.add('QUOTED_SECRET', 'ab"cd\\efgh');
  return r;
}

describe('SecretRedactor', () => {
  it('should keep JSON valid and numbers as they are, whatever a pattern would match in its text', () => {
    const r = redactor();
    const value = { metadata: { token: 123456789012, password: 12345678 }, at: 1712345678901, sessionToken: -12345678 };
    expect(JSON.parse(r.json(value))).toEqual(value);
  });

  it('should replace a known secret in any string, also one holding a quote or a backslash', () => {
    const r = redactor();
    expect(r.json({ s: 'pw 12345678 here', t: 'x ab"cd\\efgh y' })).toBe('{"s":"pw [redacted:DB_PASSWORD] here","t":"x [redacted:QUOTED_SECRET] y"}');
    expect(r.json({ t: 'x ab"cd\\efgh y' }, undefined, 'state')).toBe('{"t":"x [redacted:QUOTED_SECRET] y"}');
  });

  it('should redact credential shapes in records, and leave them in state read back later', () => {
    const r = redactor();
    expect(JSON.parse(r.json({ code: 'password = "hunter2hunter2"' }))).toEqual({ code: 'password = "[redacted]"' });
    const code = { args: { content: 'const apiKey = process.env.API_KEY;\ntoken: getToken()' } };
    expect(JSON.parse(r.json(code, undefined, 'state'))).toEqual(code);
  });

  it('should walk any nesting without overflowing the stack', () => {
    let deep: unknown = 'pw 12345678';
    for (let i = 0; i < 20_000; i++) deep = [deep];
    expect(() => redactor().deep({ x: deep })).not.toThrow();
  });
});
