import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentRegistry, parseAgentType } from '../../actors/config/registry.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { loadRegistry } from '../../adapters/config.js';
import { tempDir } from '../helpers.js';

const tools = new ToolCatalog().names();

describe('parseAgentType', () => {
  it('should parse @name, bare names and backend prefixes', () => {
    expect(parseAgentType('@coder')).toEqual({ raw: '@coder', backend: 'default', agentName: 'coder' });
    expect(parseAgentType('coder')).toEqual({ raw: 'coder', backend: 'default', agentName: 'coder' });
    expect(parseAgentType('claude:reviewer')).toEqual({ raw: 'claude:reviewer', backend: 'claude', agentName: 'reviewer' });
    expect(parseAgentType('openai:@architect')).toEqual({ raw: 'openai:@architect', backend: 'openai', agentName: 'architect' });
    expect(parseAgentType('anthropic:coder').backend).toBe('claude');
  });

  it('should reject an unknown backend and malformed names, saying what is allowed', () => {
    expect(() => parseAgentType('gemini:coder')).toThrowErrorMatchingInlineSnapshot(
      `[A2AError: Unknown backend "gemini" in agent type "gemini:coder". Allowed prefixes: claude, anthropic, openai, scripted, or none (e.g. "@coder").]`,
    );
    expect(() => parseAgentType('@Co der')).toThrow(/not well formed/);
  });
});

describe('agent registry', () => {
  it('should have the built-in agents, each with a description and a system prompt', () => {
    const registry = loadRegistry({ workspace: tempDir(), knownTools: tools });
    expect(registry.names()).toEqual(['agent', 'architect', 'code-sceptic', 'coder', 'debugger', 'documentation-writer', 'researcher', 'reviewer']);
    for (const a of registry.list()) {
      expect(a.capability.source).toBe('builtin');
      expect(a.capability.description.length).toBeGreaterThan(10);
      expect(a.systemPrompt).toMatch(/^You are/);
    }
  });

  it('should layer workspace files, registry-overrides.md and the user config over the built-ins, field by field', () => {
    const ws = tempDir();
    mkdirSync(join(ws, '.github', 'agents'), { recursive: true });
    writeFileSync(
      join(ws, '.github', 'agents', 'security.agent.md'),
      '---\nname: security\ndescription: Finds vulnerabilities.\nstrengths: [threat models]\ntools: [a2a_subtask_complete]\n---\nYou are the security reviewer.\n',
    );
    writeFileSync(join(ws, '.github', 'agents', 'coder.agent.md'), '---\nname: coder\nweaknesses: [CSS]\n---\n');
    writeFileSync(join(ws, '.github', 'agents', 'registry-overrides.md'), '---\nagents:\n  reviewer:\n    strengths: [naming]\n---\n');
    const registry = loadRegistry({ workspace: ws, knownTools: tools, userAgents: { reviewer: { description: 'User reviewer.' } } });
    expect(registry.get('security').capability).toMatchObject({ source: 'workspace', strengths: ['threat models'], canSpawnSubTasks: false });
    const coder = registry.get('coder');
    expect(coder.capability.weaknesses).toEqual(['CSS']); // overridden
    expect(coder.capability.strengths.length).toBeGreaterThan(0); // kept from the built-in
    expect(coder.systemPrompt).toMatch(/^You are the coder/); // empty body keeps the prompt
    expect(registry.get('reviewer').capability).toMatchObject({ description: 'User reviewer.', strengths: ['naming'], source: 'user' });
  });

  it('should name the file and field of an invalid agent definition', () => {
    const ws = tempDir();
    mkdirSync(join(ws, '.github', 'agents'), { recursive: true });
    const file = join(ws, '.github', 'agents', 'bad.agent.md');
    writeFileSync(file, '---\nname: bad\ndescription: x\ncanSpawnSubTasks: sometimes\ncolour: blue\n---\n');
    let message = '';
    try {
      loadRegistry({ workspace: ws, knownTools: tools });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain(`${file}: invalid agent definition:`);
    expect(message).toContain('  - canSpawnSubTasks: Invalid input: expected boolean, received string');
    expect(message).toContain('  - (root): Unrecognized key: "colour"');
    expect(message).toContain('Allowed fields: name, description, strengths, weaknesses, preferredModels, canSpawnSubTasks, maxSubTaskDepth, tools');
    writeFileSync(file, '---\nname: bad\ndescription: x\ntools: [rm_rf]\n---\n');
    expect(() => loadRegistry({ workspace: ws, knownTools: tools })).toThrow(/bad\.agent\.md: agent "bad" lists unknown tools: rm_rf\. Known tools: a2a_/);
    writeFileSync(file, 'no frontmatter');
    expect(() => loadRegistry({ workspace: ws, knownTools: tools })).toThrow(/expected YAML frontmatter/);
  });

  it('should list the available types when resolving an unknown one', () => {
    const registry = new AgentRegistry(tools);
    registry.apply('coder', { description: 'codes' }, 'builtin', 'test');
    expect(() => registry.resolve('@wizard')).toThrow('Unknown agent type "@wizard". Available types: @coder');
  });
});
