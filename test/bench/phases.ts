/**
 * Where a profiled frame belongs, for `npm run bench:profile` (profile.ts): its group of code
 * (XState, GC, the project, other), its name by its place in the TypeScript sources, and the
 * phase of a sub-task it serves (spawn, first model step, tool step, completion, delivery to
 * the parent, settle). A frame is a V8 profile's call frame (CPU or allocation profile) whose
 * project positions worker.ts mapped back to the sources.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export interface Frame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** The project's directory (with its trailing slash). */
export const root = fileURLToPath(new URL('../../', import.meta.url));

export type Group = 'XState' | 'GC' | 'project' | 'other';
export function groupOf(frame: Frame, projectRoot = root): Group {
  if (frame.functionName === '(garbage collector)') return 'GC';
  const url = frame.url.replace(/^file:\/\//, '');
  if (url.includes('/node_modules/xstate/') || url.includes('/node_modules/@xstate/')) return 'XState';
  if (url.startsWith(projectRoot) && !url.includes('/node_modules/')) return 'project';
  return 'other';
}

// -- naming a frame by its place in the sources ------------------------------------------------------

const sourceFiles = new Map<string, ts.SourceFile | null>();
function sourceFile(path: string): ts.SourceFile | null {
  if (!sourceFiles.has(path)) sourceFiles.set(path, existsSync(path) ? ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true) : null);
  return sourceFiles.get(path)!;
}

/** A function's name as its source gives it: its own, or what it is assigned to or passed to (`x: assign(fn)` is `x`, `p.then(fn)` is `then(…)`). */
function nameOf(node: ts.Node): string {
  const own = (node as { name?: ts.Node }).name;
  if (own && (ts.isIdentifier(own) || ts.isPrivateIdentifier(own) || ts.isStringLiteral(own))) return own.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent;
  const named = (p: ts.Node | undefined) =>
    p && (ts.isPropertyAssignment(p) || ts.isVariableDeclaration(p) || ts.isPropertyDeclaration(p)) && (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) ? p.name.text : null;
  if (named(parent)) return named(parent)!;
  if (parent && ts.isCallExpression(parent)) {
    const holder = named(parent.parent);
    if (holder) return holder;
    const callee = parent.expression;
    if (ts.isPropertyAccessExpression(callee)) return `${callee.name.text}(…)`;
    if (ts.isIdentifier(callee)) return `${callee.text}(…)`;
  }
  return '(anonymous)';
}

/** The names of the functions (and classes, and objects assigned to a name: a tool's definition) around a place in a file, outermost first. */
const chains = new Map<string, string[]>();
export function lexicalChain(path: string, line: number, column: number): string[] {
  const key = `${path}:${line}:${column}`;
  let chain = chains.get(key);
  if (chain) return chain;
  chain = [];
  const sf = sourceFile(path);
  const starts = sf?.getLineStarts() ?? [];
  if (sf && line >= 0 && line < starts.length) {
    // clamped to the line: a frame left at its generated place (no source map) is at least in its file
    const pos = Math.min(starts[line]! + Math.max(0, column), (starts[line + 1] ?? sf.end) - 1);
    const visit = (node: ts.Node): void => {
      if (pos < node.getStart(sf) || pos >= node.end) return;
      if (ts.isFunctionLike(node) || ts.isClassLike(node)) chain!.push(nameOf(node));
      else if (ts.isVariableDeclaration(node) && node.initializer && ts.isObjectLiteralExpression(node.initializer) && ts.isIdentifier(node.name)) chain!.push(node.name.text);
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  chains.set(key, chain);
  return chain;
}

/** The project's file a frame is in (relative to the project), or null. */
export function projectFile(frame: Frame): string | null {
  const url = frame.url.replace(/^file:\/\//, '');
  return url.startsWith(root) && !url.includes('/node_modules/') ? relative(root, url) : null;
}

// -- the phases of a sub-task ---------------------------------------------------------------------------

export const PHASES = ['spawn', 'first model step', 'tool step', 'completion', 'delivery to the parent', 'settle'] as const;
export type Phase = (typeof PHASES)[number];

/**
 * Which project functions belong to which phase: by file, then by the name of the function or
 * of one around it (innermost first); `*` is the rest of the file. A file not listed (the
 * registry, the errors) is the phase of whatever called it. The parent's own steps (its spawn
 * call, its await, its last reply) are in the phases they resemble, except its wrap-up once
 * every child has settled: `settle`.
 */
const RULES: Record<string, Record<string, Phase>> = {
  // the parent's spawn call builds the children's specs; its supervisor admits them and makes their actors
  'actors/tools/a2a.ts': { childSpec: 'spawn', shared: 'spawn', childCorrelation: 'spawn', spawnParallel: 'spawn', spawnSubtask: 'spawn', '*': 'tool step' },
  'actors/tools/types.ts': { '*': 'spawn' },
  'actors/people/permissions.ts': { childPermissions: 'spawn' },
  'actors/session/limits.ts': { '*': 'spawn' },
  'actors/session/supervisor.ts': {
    spawn: 'spawn',
    tryStart: 'spawn',
    startMember: 'spawn',
    makeMember: 'spawn',
    makeSlice: 'spawn',
    nextSliceLater: 'spawn',
    createChild: 'spawn',
    later: 'spawn',
    armDeadline: 'spawn',
    startQueued: 'spawn',
    stopAll: 'settle',
    answerWatch: 'settle',
    '*': 'delivery to the parent',
  },
  'actors/session/family.ts': { closeWatch: 'settle', withdraw: 'settle', persisted: 'settle', '*': 'delivery to the parent' },
  'actors/scheduler.ts': { '*': 'spawn' },
  // the session: its context is made when its actor is; its first step asks the model
  'machines/session.ts': { context: 'spawn', '*': 'completion' },
  'machines/session.setup.ts': {
    requestSpawn: 'spawn',
    recordSpawnResult: 'spawn',
    sendModelRequest: 'first model step',
    stepOf: 'first model step',
    sendToolRequest: 'tool step',
    holdBatch: 'delivery to the parent',
    watchAwaited: 'settle',
    recordAwaitResult: 'settle',
    withChildResults: 'settle',
    '*': 'completion',
  },
  'actors/session/agentLoop.ts': {
    runInline: 'tool step',
    runTool: 'tool step',
    runStep: 'tool step',
    execute: 'tool step',
    permitFor: 'tool step',
    reply: 'completion',
    end: 'completion',
    tell: 'completion',
    // the step's ending (`made.then(…).then(reply)`): the allocation sampler does not see `reply`
    // when V8 inlined it there (its first `then`, the model's reply waiting for runInline, does little)
    'then(…)': 'completion',
    '*': 'first model step',
  },
  'actors/session/prompts.ts': { '*': 'first model step' },
  'actors/session/summarize.ts': { '*': 'first model step' },
  'actors/observation/cost.ts': { '*': 'first model step' },
  'actors/people/pause.ts': { '*': 'first model step' },
  'adapters/model/scripted.ts': { '*': 'first model step' },
  'actors/tools/index.ts': { '*': 'tool step' },
  'actors/config/secrets.ts': { '*': 'tool step' },
  'actors/xstateInternals.ts': { '*': 'delivery to the parent' },
  'actors/run.ts': { '*': 'settle' },
  'test/bench/scenarios.ts': { '*': 'settle' },
};

export function phaseOfFrame(frame: Frame): Phase | null {
  const file = projectFile(frame);
  const rules = file ? RULES[file] : undefined;
  if (!rules) return null;
  const chain = lexicalChain(join(root, file!), frame.lineNumber, frame.columnNumber);
  for (let i = chain.length - 1; i >= 0; i--) {
    if (Object.hasOwn(rules, chain[i]!)) return rules[chain[i]!]!;
  }
  return rules['*'] ?? null;
}

