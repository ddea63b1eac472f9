/**
 * What the docs' samples are checked against, without running anything:
 *
 * - every `a2a …` command line (in a shell block, or in inline code) names a command the CLI has
 *   and only options that command takes (the commander program of bin/cli.ts, test/docs/generate.ts);
 * - every block marked `<!-- check: config -->` is a valid configuration layer, `plan` a valid
 *   plan, `agent` a valid agent file, parsed by the runtime's own loaders;
 * - every link and anchor between the pages (and from the README) resolves.
 *
 * The TypeScript programs (`<!-- example: name.ts -->`) are type-checked against the packed
 * package and run by test/library/package.test.ts.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve, sep } from 'node:path';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { parseConfig } from '../../actors/config/config.js';
import { parseAgentFile } from '../../actors/config/registry.js';
import { Plan } from '../../machines/protocol/index.js';
import { errorText } from '../../machines/errorText.js';
import { commandsOf, type Cli } from './generate.js';
import { anchors, API_DIR, codeBlocks, DOCS, inlineCode, links, ROOT, shown } from './markdown.js';

// ---------------------------------------------------------------------------------------------
// Command lines

/** Shell words of `text` up to the end of its command (`&&`, `;`, `|`, `&`, a redirect, a comment). */
export function shellWords(text: string): string[] {
  const words: string[] = [];
  let word = '';
  let quote: string | null = null;
  let started = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = null;
      else word += c;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      started = true;
      continue;
    }
    if (/\s/.test(c)) {
      if (started) words.push(word);
      word = '';
      started = false;
      continue;
    }
    if ('|;&#>'.includes(c) && !started) break;
    if (c === '|' || c === ';') {
      if (started) words.push(word);
      return words;
    }
    word += c;
    started = true;
  }
  if (started) words.push(word);
  return words;
}

/**
 * Where the CLI is run: `npx a2a`, the bin by its path, anywhere in a line; a bare `a2a` where a
 * command starts (the line's start, after `;`, `&&`, `|`, `(`, and environment assignments), so
 * that `claude mcp add a2a -- …` is not taken for one.
 */
const INVOCATION = /(?:(?:^|[\s(`;&|])(?:npx\s+a2a|node\s+(?:\S*\/)?dist\/bin\/a2a\.js|\S*node_modules\/\.bin\/a2a)|(?:^|[;&|(`]|\$\()\s*(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*a2a)\s+(?=[a-z-])/g;

/** A line of shell without its comment (a `#` that starts a word, outside quotes). */
export function withoutComment(line: string): string {
  let quote: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i);
  }
  return line;
}

/** The argument lists of every `a2a` invocation in a line of shell or an inline code span. */
export function invocations(line: string): string[][] {
  const found: string[][] = [];
  for (const m of withoutComment(line).matchAll(INVOCATION)) {
    const start = (m.index ?? 0) + m[0].length;
    found.push(shellWords(line.slice(start)));
  }
  return found;
}

/** Why `args` is not a command line the CLI takes, or null. Placeholders (`<url>`, `[runId]`, `…`) pass. */
export function commandProblem(cli: Cli, args: string[]): string | null {
  const { program } = cli;
  const first = args[0];
  if (!first || first === 'help' || first === '--help' || first === '-h' || first === '--version' || first === '-V') return null;
  let command: Command | undefined = program.commands.find((c) => c.name() === first || c.aliases().includes(first));
  let rest = args.slice(1);
  if (!command) return `"a2a ${first}": no such command (commands: ${program.commands.map((c) => c.name()).join(', ')})`;
  while (command.commands.length > 0) {
    const sub: Command | undefined = command.commands.find((c) => c.name() === rest[0]?.split('|')[0]);
    if (!sub) {
      if (rest.length === 0 || rest[0]!.startsWith('-')) return null;
      return `"a2a ${command.name()} ${rest[0]}": no such command (${command.commands.map((c) => c.name()).join(', ')})`;
    }
    command = sub;
    rest = rest.slice(1);
  }
  const known = new Set<string>(['--help', '-h']);
  for (const option of command.options) {
    if (option.long) known.add(option.long);
    if (option.short) known.add(option.short);
  }
  for (const word of rest) {
    if (!word.startsWith('-') || word === '-' || word === '--') continue;
    const name = word.split('=')[0]!;
    if (!known.has(name)) return `"${name}" is no option of "a2a ${commandsOf(program).find((c) => c.command === command)?.name ?? command.name()}" (it takes ${[...known].filter((k) => k.startsWith('--')).join(', ')})`;
  }
  return null;
}

export interface Problem {
  file: string;
  line: number;
  problem: string;
}

/** Every `a2a` command line of a page's shell blocks and inline code that the CLI would not take. */
export function commandProblems(cli: Cli, file: string): Problem[] {
  const text = readFileSync(file, 'utf8');
  const problems: Problem[] = [];
  const check = (line: string, at: number) => {
    for (const args of invocations(line)) {
      const problem = commandProblem(cli, args);
      if (problem) problems.push({ file, line: at, problem: `${problem}\n      in: ${line.trim()}` });
    }
  };
  for (const block of codeBlocks(text)) {
    if (!['sh', 'bash', 'shell', 'console'].includes(block.lang)) continue;
    block.code.split('\n').forEach((line, i) => check(line.replace(/^\$\s+/, ''), block.line + 1 + i));
  }
  for (const { code, line } of inlineCode(text)) if (/^(npx\s+)?a2a\s+[a-z-]/.test(code)) check(code, line);
  return problems;
}

/** How many `a2a` command lines a page holds (for the test's count). */
export function commandCount(file: string): number {
  const text = readFileSync(file, 'utf8');
  let n = 0;
  for (const block of codeBlocks(text)) if (['sh', 'bash', 'shell', 'console'].includes(block.lang)) for (const line of block.code.split('\n')) n += invocations(line).length;
  for (const { code } of inlineCode(text)) if (/^(npx\s+)?a2a\s+[a-z-]/.test(code)) n += invocations(code).length;
  return n;
}

// ---------------------------------------------------------------------------------------------
// Configuration, plans and agent files

export const SAMPLE_KINDS = ['config', 'plan', 'agent'] as const;

/** Why a marked sample is not what it says it is, or null. */
export function sampleProblem(kind: string, lang: string, code: string, where: string): string | null {
  try {
    if (kind === 'config') {
      const data = lang === 'json' ? (JSON.parse(code) as Record<string, unknown>) : (parseYaml(code) as Record<string, unknown>);
      parseConfig([{ source: where, data }]);
    } else if (kind === 'plan') {
      const data = lang === 'json' ? (JSON.parse(code) as unknown) : (parseYaml(code) as unknown);
      const parsed = Plan.safeParse(data);
      if (!parsed.success) return parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    } else if (kind === 'agent') {
      // a whole agent file; its body (the system prompt) may be left out of a sample
      parseAgentFile(`${code.trimEnd()}\nThe system prompt.\n`, where);
    } else {
      return `unknown sample kind "${kind}" (${SAMPLE_KINDS.join(', ')})`;
    }
    return null;
  } catch (error) {
    return errorText(error);
  }
}

export function sampleProblems(file: string): { checked: number; problems: Problem[] } {
  let checked = 0;
  const problems: Problem[] = [];
  for (const block of codeBlocks(readFileSync(file, 'utf8'))) {
    if (block.marker?.key !== 'check') continue;
    checked++;
    const problem = sampleProblem(block.marker.value, block.lang, block.code, `${shown(file)}:${block.line}`);
    if (problem) problems.push({ file, line: block.line, problem });
  }
  return { checked, problems };
}

// ---------------------------------------------------------------------------------------------
// Links

const anchorCache = new Map<string, Set<string>>();
const anchorsOf = (file: string) => {
  let found = anchorCache.get(file);
  if (!found) anchorCache.set(file, (found = anchors(readFileSync(file, 'utf8'))));
  return found;
};

/**
 * Why a link of `file` does not resolve, or null. Links to other sites are not followed (the
 * tests have no network); `/x` is a path of the site (docs/public/x, or the page docs/x.md);
 * the API pages (reference/api/) exist only once `npm run docs:build` wrote them, and are checked
 * in the built site.
 */
export function linkProblem(file: string, target: string, docs = DOCS): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) return null;
  const [path = '', anchor] = target.split('#') as [string, string | undefined];
  let resolved: string;
  if (path === '') resolved = file;
  else if (path.startsWith('/')) {
    const inPublic = join(docs, 'public', path);
    resolved = existsSync(inPublic) ? inPublic : join(docs, path.endsWith('/') ? `${path}index.md` : extname(path) ? path : `${path}.md`);
  } else resolved = resolve(dirname(file), decodeURIComponent(path));
  const inDocs = file.startsWith(`${docs}${sep}`);
  if (inDocs && !resolved.startsWith(`${docs}${sep}`)) return `leads out of docs/ (${relative(ROOT, resolved)}): the site cannot serve it; name the file in code instead`;
  const api = resolved.startsWith(`${API_DIR}${sep}`) || resolved === API_DIR;
  if (api && !existsSync(API_DIR)) return null;
  if (!existsSync(resolved)) {
    if (inDocs && !extname(resolved) && existsSync(`${resolved}.md`)) resolved = `${resolved}.md`;
    else return `${relative(ROOT, resolved)} does not exist`;
  }
  if (statSync(resolved).isDirectory()) return `${relative(ROOT, resolved)} is a directory: link its page`;
  if (anchor !== undefined) {
    if (!resolved.endsWith('.md')) return `an anchor (#${anchor}) into ${relative(ROOT, resolved)}, which is no page`;
    if (!anchorsOf(resolved).has(anchor)) return `${relative(ROOT, resolved)} has no heading #${anchor} (it has: ${[...anchorsOf(resolved)].slice(0, 40).join(', ')})`;
  }
  return null;
}

export function linkProblems(file: string): { checked: number; problems: Problem[] } {
  const found = links(readFileSync(file, 'utf8'));
  const problems: Problem[] = [];
  for (const { target, line } of found) {
    const problem = linkProblem(file, target);
    if (problem) problems.push({ file, line, problem: `[…](${target}): ${problem}` });
  }
  return { checked: found.length, problems };
}

/** Problems as a message a failing test prints: `path:line: problem`. */
export const report = (problems: Problem[]) => problems.map((p) => `${shown(p.file)}:${p.line}: ${p.problem}`).join('\n');
