/**
 * The docs checked like code, without building the site: the README's front door, every `a2a`
 * command line against the CLI, every marked configuration, plan and agent sample against the
 * runtime's loaders, every link and anchor between the pages. (The programs are type-checked and
 * run by test/library/package.test.ts; the built site by site.test.ts.)
 */
import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { cliProgram, type Cli } from './generate.js';
import { docExamples, docFiles, README } from './markdown.js';
import { commandCount, commandProblem, commandProblems, invocations, linkProblem, linkProblems, report, sampleProblem, sampleProblems, type Problem } from './samples.js';

let cli: Cli;
beforeAll(async () => {
  cli = await cliProgram();
});

describe('the README', () => {
  const text = readFileSync(README, 'utf8');

  it('should start with the two commands a new user runs, as .ci/run runs the second', () => {
    expect(text.split('\n').slice(0, 6).join('\n')).toBe(
      [
        '# a2a: an actor runtime for teams of LLM agents',
        '',
        '```sh',
        'npm ci && npx a2a run examples/oauth     # install, then run the OAuth example: no API key, no server',
        'npm test                                  # the whole test suite',
        '```',
      ].join('\n'),
    );
    expect(readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8')).toMatch(/^npm test$/m);
  });

  it('should stay a front door: at most 250 lines, with its program and the links into the docs', () => {
    expect(text.split('\n').length).toBeLessThanOrEqual(250);
    expect(docExamples([README]).map((e) => e.name)).toEqual(['first-program.ts']);
    for (const page of ['guide/first-run.md', 'reference/cli.md', 'reference/configuration.md', 'how-to/security.md']) expect(text).toContain(`(docs/${page}`);
  });
});

describe('command lines', () => {
  it('should name only commands and options the CLI has', () => {
    const problems: Problem[] = docFiles().flatMap((file) => commandProblems(cli, file));
    expect(report(problems)).toBe('');
    // the pages hold a few hundred: a regression that finds none would pass silently
    expect(docFiles().reduce((n, file) => n + commandCount(file), 0)).toBeGreaterThan(200);
  });

  it('should refuse an unknown command, an unknown option and an option of another command', () => {
    expect(commandProblem(cli, ['run', 'plan.json', '--max-depth', '3', '--json'])).toBeNull();
    expect(commandProblem(cli, ['config', 'export', '--out', 'team.yaml'])).toBeNull();
    expect(commandProblem(cli, ['runn', 'plan.json'])).toMatch(/"a2a runn": no such command/);
    expect(commandProblem(cli, ['run', '--max-dept', '3'])).toMatch(/"--max-dept" is no option of "a2a run"/);
    expect(commandProblem(cli, ['status', '--nats', 'nats://x'])).toMatch(/"--nats" is no option of "a2a status"/);
    expect(commandProblem(cli, ['config', 'exprt'])).toMatch(/no such command/);
    expect(invocations('A2A_NATS_USER=host-alpha node dist/bin/a2a.js host --nats nats://127.0.0.1:4232 --id alpha &  # a host')).toEqual([['host', '--nats', 'nats://127.0.0.1:4232', '--id', 'alpha']]);
    expect(invocations('claude mcp add a2a -- npx a2a mcp')).toEqual([['mcp']]);
  });
});

describe('configuration, plan and agent samples', () => {
  it('should parse every marked sample with the loader a run uses', () => {
    let checked = 0;
    const problems: Problem[] = [];
    for (const file of docFiles()) {
      const found = sampleProblems(file);
      checked += found.checked;
      problems.push(...found.problems);
    }
    expect(report(problems)).toBe('');
    expect(checked).toBeGreaterThanOrEqual(8);
  });

  it('should refuse a misspelt key, a plan without tasks and an agent file with an unknown field', () => {
    expect(sampleProblem('config', 'yaml', 'limits: { maxDepth: 3 }', 'x')).toBeNull();
    expect(sampleProblem('config', 'yaml', 'limits: { maxDeph: 3 }', 'x')).toMatch(/maxDeph/);
    expect(sampleProblem('plan', 'json', '{ "id": "p", "tasks": [] }', 'x')).toMatch(/tasks/);
    expect(sampleProblem('agent', 'yaml', '---\nname: helper\ncolour: blue\n---', 'x')).toMatch(/colour/);
  });
});

describe('links', () => {
  it('should resolve every link and anchor between the README and the pages', () => {
    let checked = 0;
    const problems: Problem[] = [];
    for (const file of docFiles()) {
      const found = linkProblems(file);
      checked += found.checked;
      problems.push(...found.problems);
    }
    expect(report(problems)).toBe('');
    expect(checked).toBeGreaterThan(200);
  });

  it('should refuse a missing page, a missing anchor and a link out of docs/', () => {
    const page = docFiles().find((f) => f.endsWith('guide/sessions.md'))!;
    expect(linkProblem(page, './durability.md#durable-runs')).toBeNull();
    expect(linkProblem(page, '../how-to/security.md#the-sandbox-of-run_command')).toBeNull();
    expect(linkProblem(page, './durable.md')).toMatch(/does not exist/);
    expect(linkProblem(page, './durability.md#durable-run')).toMatch(/has no heading #durable-run/);
    expect(linkProblem(page, '../../README.md')).toMatch(/leads out of docs/);
    expect(linkProblem(README, 'docs/guide/first-run.md#using-it')).toBeNull();
  });
});
