import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mergeLayers, parseConfig } from '../../actors/config/config.js';
import { loadConfig } from '../../adapters/config.js';
import { tempDir } from '../helpers.js';

describe('configuration', () => {
  it('should default every limit and timing as documented', () => {
    const config = parseConfig([]);
    expect(config.limits).toMatchObject({ maxDepth: 2, maxDepthStandalone: 1, maxParallelSubtasks: 5, maxSubtasksPerWorker: 10, spawnRatePerMinute: 20 });
    expect(config.idle).toEqual({ idleThresholdMs: 30_000, inquiryDelayMs: 5_000, inquiryTimeoutMs: 60_000, maxInquiries: 3 });
  });

  it('should merge layers field by field, later layers winning', () => {
    expect(mergeLayers([{ limits: { maxDepth: 1, maxTurns: 9 } }, { limits: { maxDepth: 3 } }])).toEqual({ limits: { maxDepth: 3, maxTurns: 9 } });
    const ws = tempDir();
    writeFileSync(join(ws, 'a2a.config.yaml'), 'limits:\n  maxParallelSubtasks: 3\nidle:\n  idleThresholdMs: 1000\n');
    const { config } = loadConfig({ workspace: ws, extra: [{ source: 'flags', data: { limits: { maxParallelSubtasks: 7 } } }] });
    expect(config.limits.maxParallelSubtasks).toBe(7);
    expect(config.idle.idleThresholdMs).toBe(1000);
  });

  it('should name the file, field and what is allowed when a value is wrong', () => {
    const ws = tempDir();
    const file = join(ws, 'a2a.config.json');
    writeFileSync(file, JSON.stringify({ limits: { maxDepth: 20, maxParallel: 3 } }));
    expect(() => loadConfig({ workspace: ws })).toThrowError(
      `${file}: invalid configuration:\n  - limits.maxDepth: Too big: expected number to be <=8\n  - limits: Unrecognized key: "maxParallel"`,
    );
    writeFileSync(file, '{ not json');
    expect(() => loadConfig({ workspace: ws })).toThrow(`${file} is not valid JSON`);
  });

  it('should default the sandbox to bubblewrap, passing no extra variables', () => {
    expect(parseConfig([]).sandbox).toEqual({ mode: 'bubblewrap', env: [], readOnlyPaths: [], limits: { memoryMB: 4096, processes: 512, fileMB: 1024, tmpMB: 512 } });
  });

  it('should refuse an unknown sandbox key, naming the file and field', () => {
    const ws = tempDir();
    const file = join(ws, 'a2a.config.yaml');
    writeFileSync(file, 'sandbox:\n  mode: off\n  network: true\n');
    expect(() => loadConfig({ workspace: ws })).toThrowError(
      `${file}: invalid configuration:\n  - sandbox.mode: Invalid option: expected one of "bubblewrap"|"none"\n  - sandbox: Unrecognized key: "network"`,
    );
  });

  it('should refuse to pass credentials to commands, whatever the sandbox.env list says', () => {
    const ws = tempDir();
    const file = join(ws, 'a2a.config.yaml');
    for (const name of ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'A2A_NATS_PASSWORD', 'A2A_NATS_TOKEN', 'GITHUB_TOKEN', 'AWS_SECRET_ACCESS_KEY', 'DB_PASSWORD']) {
      writeFileSync(file, `sandbox:\n  env: [CI, ${name}]\n`);
      expect(() => loadConfig({ workspace: ws })).toThrowError(
        `${file}: invalid configuration:\n  - sandbox.env[1]: ${name} holds a credential (API keys, NATS credentials, tokens and passwords are never passed to commands)`,
      );
    }
    writeFileSync(file, 'sandbox:\n  env: [CI, MY_GH]\ngit:\n  github: { repo: a/b, tokenEnv: MY_GH }\n');
    expect(() => loadConfig({ workspace: ws })).toThrowError(`${file}: invalid configuration:\n  - sandbox.env: MY_GH is git.github.tokenEnv, a credential: it is never passed to commands`);
    writeFileSync(file, 'sandbox:\n  env: [CI, NODE_OPTIONS]\n  readOnlyPaths: [/opt/node]\n');
    expect(loadConfig({ workspace: ws }).config.sandbox).toMatchObject({ mode: 'bubblewrap', env: ['CI', 'NODE_OPTIONS'], readOnlyPaths: ['/opt/node'] });
  });
});
