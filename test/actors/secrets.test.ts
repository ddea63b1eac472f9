/**
 * The redactor: markers in place of secrets, and JSON that stays valid and means what it meant;
 * state (read back later) loses only the process's known secrets, never code that looks like one.
 */
import { describe, expect, it } from 'vitest';
import { jsonRedactorSource, SecretRedactor, type KnownSecret } from '../../actors/config/secrets.js';

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

describe('short secrets and errors nobody caught', () => {
  it('redacts a secret of any length where it stands alone, and leaves words that contain it', () => {
    const r = new SecretRedactor();
    r.add('NATS_PASSWORD', 'pw7');
    r.add('SHORT_TOKEN', 'x+y.z');
    expect(r.text('login with pw7, then pw7.')).toBe('login with [redacted:NATS_PASSWORD], then [redacted:NATS_PASSWORD].');
    expect(r.text('pw7s and apw7 stay; "pw7" goes')).toBe('pw7s and apw7 stay; "[redacted:NATS_PASSWORD]" goes');
    expect(r.text('t=x+y.z;')).toBe('t=[redacted:SHORT_TOKEN];');
    expect(JSON.parse(r.json({ url: 'nats://a2a:pw7@10.0.0.5:4222' }, undefined, 'state'))).toEqual({ url: 'nats://a2a:[redacted:NATS_PASSWORD]@10.0.0.5:4222' });
  });

  it('passes an uncaught exception and an unhandled rejection through the redactor before stderr, and exits 1', async () => {
    const { spawnSync } = await import('node:child_process');
    for (const how of ['throw', 'reject']) {
      const program = `
        const { redactUncaught } = await import('./bin/fatal.ts');
        const { secrets } = await import('./actors/config/secrets.ts');
        secrets.addFromEnv(process.env);
        redactUncaught();
        setTimeout(() => { const e = new Error('connect failed for a2a:' + process.env.A2A_NATS_PASSWORD + ' with sk-proj-' + 'A'.repeat(24)); ${how === 'throw' ? 'throw e' : 'void Promise.reject(e)'}; }, 1);`;
      const out = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { encoding: 'utf8', env: { ...process.env, A2A_NATS_PASSWORD: 'pw7' }, timeout: 8_000 });
      expect(out.status, out.stderr).toBe(1);
      expect(out.stderr).toContain('connect failed for a2a:[redacted:A2A_NATS_PASSWORD] with [redacted]');
      expect(out.stderr).not.toMatch(/pw7|AAAAAAAA/);
    }
  });
});

describe('JSON text (trace batches)', () => {
  it('redacts known secrets (as written and as JSON escapes them), short ones as words, and shapes, and stays valid JSON', () => {
    const r = new SecretRedactor();
    r.add('DB_PASSWORD', 'pw7');
    r.add('QUOTED_SECRET', 'ab"cd\\efgh');
    const value = {
      attrs: { 'a2a.detail': 'login pw7 and apw7', quoted: 'x ab"cd\\efgh y', token: 12345678, 'gen_ai.usage.input_tokens': 12345678, password: 'hunter2hunter2' },
      status: { message: 'call failed with token=abcdefgh123 and sk-proj-ABCDEFGHIJKLMNOPQRSTUV' },
    };
    const out = r.jsonText(JSON.stringify(value));
    const parsed = JSON.parse(out) as typeof value;
    expect(parsed.attrs).toEqual({ 'a2a.detail': 'login [redacted:DB_PASSWORD] and apw7', quoted: 'x [redacted:QUOTED_SECRET] y', token: 12345678, 'gen_ai.usage.input_tokens': 12345678, password: '[redacted]' });
    expect(parsed.status.message).toBe('call failed with token=[redacted] and [redacted]');
  });

  it('redacts alike on the thread that exports traces (jsonRedactorSource, given forRedactorThread) and here (jsonText)', () => {
    const r = new SecretRedactor();
    const onWorker = () => ((0, eval)(jsonRedactorSource) as (known: KnownSecret[]) => (text: string) => string)(r.forRedactorThread());
    const samples = [
      { a: 'token=abcdefgh123 and api_key: "zzzzzzzzzz"', password: 'hunter2hunter2', secret: 'x', n: { 'api-key': 12345678 } },
      { b: 'curl -H "Authorization: Bearer ' + 'Z'.repeat(24) + '"', c: 'sk-ant-' + 'a'.repeat(20) + ' ghp_' + 'b'.repeat(22) + ' github_pat_' + 'c'.repeat(22) },
      { d: 'xoxb-' + '1'.repeat(12) + ' AKIA' + 'A'.repeat(16) + ' AIza' + 'q'.repeat(35), e: 'nothing here', f: ['SECRET = verylongvalue', 'Token:abc'] },
      { g: 'login pw7 and apw7, x ab"cd\\efgh y, the long one: correct-horse-battery-staple', h: 'pw7' },
    ];
    const version = r.version;
    for (const [name, value] of [['DB_PASSWORD', 'pw7'], ['QUOTED_SECRET', 'ab"cd\\efgh'], ['LONG_SECRET', 'correct-horse-battery-staple']] as const) r.add(name, value);
    expect(r.version).not.toBe(version);
    const redact = onWorker();
    for (const sample of samples) {
      const text = JSON.stringify(sample);
      expect(redact(text)).toBe(r.jsonText(text));
      expect(redact(text)).not.toBe(text);
    }
    expect(redact(JSON.stringify(samples[3]))).toContain('[redacted:QUOTED_SECRET]');
    expect(r.forRedactorThread().map((s) => s.name)).toEqual(r.names());
  });
});
