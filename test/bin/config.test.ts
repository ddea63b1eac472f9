/**
 * `a2a config validate | export | import` through the CLI's `main`, on workspaces in temp dirs
 * (the user config is an empty dir: test/setup.ts).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { main } from '../../bin/cli.js';
import { STANDARD_ROLES } from '../../actors/config/config.js';
import { secrets } from '../../actors/config/secrets.js';
import { loadConfig } from '../../adapters/config.js';
import { capture, tempDir } from '../helpers.js';


async function run(args: string[]) {
  const c = capture();
  const code = await main(args, c.io);
  return { code, out: c.out(), err: c.err() };
}

function workspace(config?: unknown, name = 'a2a.config.json'): string {
  const ws = tempDir('a2a-config-');
  if (config !== undefined) writeFileSync(join(ws, name), typeof config === 'string' ? config : JSON.stringify(config, null, 2));
  return ws;
}

const PROFILES = {
  sonnet: { provider: 'anthropic', model: 'claude-sonnet-4-20250514', tier: 'standard' },
  mini: { provider: 'openai', model: 'gpt-4.1-mini', tier: 'small' },
};

/** A configuration a team would write: profiles, a default, a role on another profile, a custom reviewer. */
const TEAM = {
  limits: { maxDepth: 2 },
  models: { profiles: PROFILES, default: 'sonnet', assign: { agents: { reviewer: 'mini' } } },
  workflow: {
    roles: { sceptic: 'mini', securityReviewer: { agent: '@reviewer', description: 'Looks for security holes' } },
    reviewers: ['sceptic', 'securityReviewer'],
    maxFixRounds: 4,
    testCommand: 'npm test',
  },
};

async function validate(ws: string) {
  const r = await run(['config', 'validate', '--workspace', ws, '--json']);
  return { code: r.code, result: JSON.parse(r.out) as { isValid: boolean; errors: string[]; warnings: string[] } };
}

describe('a2a config validate', () => {
  it('should accept a valid configuration, list the effective roles and exit 0', async () => {
    const ws = workspace(TEAM);
    const r = await run(['config', 'validate', '--workspace', ws]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`Configuration: ${join(ws, 'a2a.config.json')}`);
    expect(r.out).toMatch(/sceptic\s+@code-sceptic\s+mini/);
    expect(r.out).toMatch(/securityReviewer\s+@reviewer\s+mini/);
    expect(r.out).toMatch(/architect\s+@architect\s+sonnet/);
    expect(r.out).toMatch(/^Valid/m);
    expect((await validate(ws)).result).toEqual({ isValid: true, errors: [], warnings: [] });
  });

  it('should name the file and the field of a role whose profile is unknown, and exit 1', async () => {
    const ws = workspace({ models: { profiles: PROFILES }, workflow: { roles: { sceptic: 'ghost' } } });
    const { code, result } = await validate(ws);
    expect(code).toBe(1);
    expect(result.isValid).toBe(false);
    expect(result.errors).toEqual([`${join(ws, 'a2a.config.json')}: workflow.roles.sceptic.profile: unknown profile "ghost" (profiles: sonnet, mini, scripted (built in))`]);
  });

  it('should report an agent that is not in the registry, with the available types', async () => {
    const ws = workspace({ workflow: { roles: { debugger: { agent: '@wizard' } } } });
    const { code, result } = await validate(ws);
    expect(code).toBe(1);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toContain('a2a.config.json: workflow.roles.debugger.agent: Unknown agent type "@wizard". Available types: @agent, @architect');
  });

  it('should report reviewers that are not roles, and an organiser profile that does not exist', async () => {
    const ws = workspace({ workflow: { roles: { perf: { agent: '@reviewer', description: 'Speed' } }, organiser: { profile: 'big' }, reviewers: ['sceptic', 'security'] } });
    const { code, result } = await validate(ws);
    expect(code).toBe(1);
    expect(result.errors).toEqual([
      expect.stringContaining('workflow.organiser.profile: unknown profile "big" (profiles: scripted (built in); none is configured)'),
      expect.stringMatching(/a2a\.config\.json: workflow\.reviewers\[1\]: "security" is not a role \(standard roles: architect, .*debugger; configured: perf\)$/),
    ]);
  });

  it('should report a schema error of a layer as an error naming the file and the field, with what is allowed', async () => {
    const ws = workspace({ workflow: { maxFixRounds: 'many', rolez: {} } });
    const { code, result } = await validate(ws);
    expect(code).toBe(1);
    expect(result.errors.every((e) => e.startsWith(`${join(ws, 'a2a.config.json')}: workflow`))).toBe(true);
    expect(result.errors.join('\n')).toContain('workflow.maxFixRounds');
    expect(result.errors.join('\n')).toContain('"rolez"');
  });

  it('should warn about a profile nothing uses and a debugger that cannot run commands, and still exit 0', async () => {
    const ws = workspace({ models: { profiles: { ...PROFILES, spare: { provider: 'openai', model: 'gpt-4.1' } }, default: 'sonnet', assign: { agents: { reviewer: 'mini' } } }, workflow: { roles: { debugger: { agent: '@architect' } } } });
    const { code, result } = await validate(ws);
    expect(code).toBe(0);
    expect(result.warnings).toEqual([
      expect.stringContaining('workflow.roles.debugger.agent: the debugger runs the tests, but @architect cannot use run_command'),
      expect.stringContaining('models.profiles.spare: no role, agent, task type or default uses this profile'),
    ]);
  });

  it('should read the file given with --config instead of the workspace one', async () => {
    const ws = workspace(TEAM);
    const other = join(workspace(), 'other.yaml');
    writeFileSync(other, 'workflow:\n  reviewers: [nobody]\n');
    const r = await run(['config', 'validate', '--workspace', ws, '--config', other]);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`${other}: workflow.reviewers[0]: "nobody" is not a role`);
  });
});

describe('a2a config export', () => {
  it('should write every standard role with its agent and profile, the custom roles and the profiles, as JSON', async () => {
    const ws = workspace(TEAM);
    const r = await run(['config', 'export', '--workspace', ws]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.out);
    expect(Object.keys(doc)).toEqual(['version', 'workflow', 'models']);
    expect(doc.version).toBe(1);
    expect(Object.keys(doc.workflow.roles)).toEqual([...STANDARD_ROLES, 'securityReviewer']);
    expect(doc.workflow.roles).toMatchObject({
      architect: { agent: '@architect', profile: 'sonnet' },
      sceptic: { agent: '@code-sceptic', profile: 'mini' },
      debugger: { agent: '@debugger', profile: 'sonnet' },
      securityReviewer: { agent: '@reviewer', profile: 'mini', description: 'Looks for security holes' },
    });
    expect(doc.workflow).toMatchObject({ organiser: { profile: 'sonnet' }, reviewers: ['sceptic', 'securityReviewer'], maxFixRounds: 4, maxPlanRevisions: 2, testCommand: 'npm test' });
    expect(doc.models).toEqual({ profiles: PROFILES, default: 'sonnet', assign: { agents: { reviewer: 'mini' } } });
    expect(doc).not.toHaveProperty('limits');
  });

  it('should round-trip through import into a fresh workspace, as JSON and as YAML, to the same effective configuration', async () => {
    for (const format of ['json', 'yaml'] as const) {
      const from = workspace(TEAM);
      const to = workspace();
      const file = join(from, `team.${format}`);
      expect((await run(['config', 'export', '--workspace', from, '--format', format, '--out', file])).code).toBe(0);
      const text = readFileSync(file, 'utf8');
      expect(format === 'yaml' ? parseYaml(text) : JSON.parse(text)).toMatchObject({ version: 1 });
      if (format === 'yaml') expect(text).toMatch(/^version: 1\n/);
      const imported = await run(['config', 'import', file, '--workspace', to]);
      expect(imported.code).toBe(0);
      expect(imported.out).toContain(`into ${join(to, 'a2a.config.json')}`);
      const again = await run(['config', 'export', '--workspace', to, '--format', format]);
      expect(again.out).toBe(text);
      const effective = (ws: string) => {
        const { config } = loadConfig({ workspace: ws });
        return { models: { profiles: config.models.profiles, default: config.models.default, assign: config.models.assign }, reviewers: config.workflow.reviewers };
      };
      expect(effective(to)).toEqual(effective(from));
    }
  });

  it('should never write a key: credentials in a profile URL are left out, a known secret is a marker, a key field is refused', async () => {
    const KEY = 'sk-exportTEST-0123456789abcdef';
    secrets.add('OPENAI_API_KEY', KEY);
    const ws = workspace({
      models: {
        profiles: { proxy: { provider: 'openai', model: 'gpt-4.1', baseURL: `https://team:${KEY}@llm.example/v1?api_key=${KEY}&region=eu` } },
        default: 'proxy',
      },
      workflow: { roles: { custom: { agent: '@reviewer', description: `Reviews with ${KEY}` } } },
    });
    const out = join(ws, 'export.json');
    const r = await run(['config', 'export', '--workspace', ws, '--out', out]);
    expect(r.code).toBe(0);
    const text = readFileSync(out, 'utf8');
    expect(text).not.toContain(KEY);
    expect(r.out + r.err).not.toContain(KEY);
    const doc = JSON.parse(text);
    expect(doc.models.profiles.proxy.baseURL).toBe('https://llm.example/v1?region=eu');
    expect(doc.workflow.roles.custom.description).toBe('Reviews with [redacted:OPENAI_API_KEY]');
    expect(r.err).toContain('a2a: note: models.profiles.proxy.baseURL: credentials in the URL were left out');

    // a profile has no key field: a config that tries one is invalid, and nothing is exported
    const withKey = workspace({ models: { profiles: { k: { provider: 'openai', model: 'gpt-4.1', apiKey: KEY } } } });
    const refused = await run(['config', 'export', '--workspace', withKey, '--out', join(withKey, 'x.json')]);
    expect(refused.code).toBe(2);
    expect(refused.err).toContain('models.profiles.k: Unrecognized key: "apiKey" (allowed: provider, model, baseURL');
    expect(refused.out + refused.err).not.toContain(KEY);
    expect(existsSync(join(withKey, 'x.json'))).toBe(false);
  });
});

describe('a2a config import', () => {
  const doc = (d: unknown, ws = workspace()) => {
    const file = join(ws, 'doc.json');
    writeFileSync(file, JSON.stringify(d));
    return file;
  };

  it('should refuse a document of another version, or with bad fields, naming the field and what is allowed, and write nothing', async () => {
    const ws = workspace(TEAM);
    const before = readFileSync(join(ws, 'a2a.config.json'), 'utf8');
    const v2 = await run(['config', 'import', doc({ version: 2, workflow: { roles: {} } }), '--workspace', ws]);
    expect(v2.code).toBe(2);
    expect(v2.err).toMatch(/doc\.json: version: 2 is not a version this a2a reads \(supported: 1\)/);
    const bad = await run(['config', 'import', doc({ version: 1, models: { profiles: { x: { provider: 'gemini', model: 'm', key: 'k' } } }, workflow: { roles: { sceptic: { agnt: '@coder' } } } }), '--workspace', ws]);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('invalid configuration document:');
    expect(bad.err).toContain('models.profiles.x.provider: Invalid option: expected one of "openai"|"anthropic"|"google"|"scripted"');
    expect(bad.err).toContain('models.profiles.x: Unrecognized key: "key" (allowed: provider, model, baseURL');
    expect(bad.err).toContain('workflow.roles.sceptic: Unrecognized key: "agnt" (allowed: agent, profile, description)');
    expect(readFileSync(join(ws, 'a2a.config.json'), 'utf8')).toBe(before);
    expect(readdirSync(ws)).toEqual(['a2a.config.json']); // no temp file left either
  });

  it('should write nothing when the merged configuration would be invalid, and say why', async () => {
    const ws = workspace(TEAM);
    const before = readFileSync(join(ws, 'a2a.config.json'), 'utf8');
    const r = await run(['config', 'import', doc({ version: 1, workflow: { roles: { architect: { agent: '@coder', profile: 'ghost' } } } }), '--workspace', ws]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`the configuration would be invalid after importing it; ${join(ws, 'a2a.config.json')} was not changed`);
    expect(r.err).toContain('workflow.roles.architect.profile: unknown profile "ghost" (profiles: sonnet, mini, scripted (built in))');
    expect(readFileSync(join(ws, 'a2a.config.json'), 'utf8')).toBe(before);
  });

  it('should replace the roles and profiles it names and keep every other section and entry', async () => {
    const ws = workspace({ ...TEAM, git: { onComplete: 'keep' }, models: { ...TEAM.models, budgets: { runUsd: 5 } } });
    const file = doc({ version: 1, models: { profiles: { mini: { provider: 'anthropic', model: 'claude-3-5-haiku-latest' } } }, workflow: { roles: { sceptic: { agent: '@reviewer' } }, maxWaits: 5 } });
    const r = await run(['config', 'import', file, '--workspace', ws]);
    expect(r.code).toBe(0);
    const after = JSON.parse(readFileSync(join(ws, 'a2a.config.json'), 'utf8'));
    expect(after).toEqual({
      limits: { maxDepth: 2 },
      git: { onComplete: 'keep' },
      models: { profiles: { sonnet: PROFILES.sonnet, mini: { provider: 'anthropic', model: 'claude-3-5-haiku-latest' } }, default: 'sonnet', assign: { agents: { reviewer: 'mini' } }, budgets: { runUsd: 5 } },
      workflow: { ...TEAM.workflow, roles: { ...TEAM.workflow.roles, sceptic: { agent: '@reviewer' } }, maxWaits: 5 },
    });
    expect(readdirSync(ws)).toEqual(['a2a.config.json']); // no temp file left either
  });

  it('should print the result and write nothing with --dry-run', async () => {
    const ws = workspace();
    const r = await run(['config', 'import', doc({ version: 1, models: { profiles: PROFILES, default: 'mini' } }, ws), '--workspace', ws, '--dry-run']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toEqual({ models: { profiles: PROFILES, default: 'mini' } });
    expect(r.err).toContain(`dry run: ${join(ws, 'a2a.config.json')} was not created`);
    expect(existsSync(join(ws, 'a2a.config.json'))).toBe(false);
  });

  it('should keep a YAML workspace config YAML, with its comments and other sections', async () => {
    const yaml = '# team settings\nlimits:\n  maxDepth: 2 # shallow trees\nworkflow:\n  maxFixRounds: 5\n';
    const ws = workspace(yaml, 'a2a.config.yaml');
    const r = await run(['config', 'import', doc({ version: 1, models: { profiles: PROFILES }, workflow: { roles: { sceptic: 'mini' } } }), '--workspace', ws]);
    expect(r.code).toBe(0);
    expect(existsSync(join(ws, 'a2a.config.json'))).toBe(false);
    const text = readFileSync(join(ws, 'a2a.config.yaml'), 'utf8');
    expect(text).toMatch(/^# team settings\nlimits:\n {2}maxDepth: 2 # shallow trees\n/);
    expect(parseYaml(text)).toEqual({ limits: { maxDepth: 2 }, workflow: { maxFixRounds: 5, roles: { sceptic: 'mini' } }, models: { profiles: PROFILES } });
    expect((await validate(ws)).result.isValid).toBe(true);
  });
});
