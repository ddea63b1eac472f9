/**
 * What the artifact store does to a content before it keeps it (sanitize) and what the organiser
 * sees instead of it (summarize). Both are pure: text in, text or summary out.
 *
 * Why summaries are computed here and not asked of a model: the organiser's context must stay
 * small and cheap (seed 003: "summaries only, never content"), and a summary that parses the
 * content's own shape (a vitest line, review checkboxes) is exact where a model's would guess.
 */
import { ArtifactSummary, type ArtifactType } from '../../machines/protocol/index.js';
import { A2AError } from '../errors.js';
import { secrets } from '../config/secrets.js';

/** Largest content kept (UTF-8 bytes, after sanitizing): larger outputs belong in files. */
export const MAX_ARTIFACT_BYTES = 1024 * 1024;

const MAX_BRIEF = 400;
const MAX_POINT = 300;
const MAX_POINTS = 5;
const MAX_FILES = 200;
const MAX_FILE = 500;

// ---------------------------------------------------------------------------------------------
// Sanitizing

/** Terminal escape sequences (colours of test output, cursor moves, titles): noise in a record. */
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;
/** Control characters but tab and newline; C1 controls; bidi overrides (a "trojan source" reads differently than it runs). */
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/g;

const mib = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;

/**
 * The content as it is stored: the process's known secrets and self-naming tokens (`sk-…`,
 * `ghp_…`) replaced by markers, terminal escapes and control characters removed (tab and newline
 * stay; `\r\n` and a lone `\r` become `\n`), at most MAX_ARTIFACT_BYTES. Code that merely looks
 * like a credential (`token: getToken()`) is left as it is: other agents build on it.
 */
export function sanitizeArtifactContent(content: string): string {
  // a cheap bound first, so that no regular expression runs over a huge text
  if (content.length > 4 * MAX_ARTIFACT_BYTES) throw tooLarge(Buffer.byteLength(content));
  const clean = secrets.text(content.replace(/\r\n?/g, '\n').replace(ANSI, '').replace(CONTROL, ''), 'content');
  const bytes = Buffer.byteLength(clean);
  if (bytes > MAX_ARTIFACT_BYTES) throw tooLarge(bytes);
  return clean;
}

function tooLarge(bytes: number): A2AError {
  return new A2AError(
    'VALIDATION_ERROR',
    `artifact content is ${mib(bytes)}; the limit is ${mib(MAX_ARTIFACT_BYTES)}: write large outputs (logs, generated files) to files in the worktree and name them in the artifact (files)`,
    { where: 'content' },
  );
}

// ---------------------------------------------------------------------------------------------
// Summaries

const clip = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
const lines = (content: string) => content.split('\n').map((l) => l.trim());
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** At most two sentences of `text`, within the brief's length. */
function brief(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const sentences = flat.split(/(?<=[.!?])\s+/);
  return clip(sentences.slice(0, 2).join(' '), MAX_BRIEF);
}

const stripMarkdown = (line: string) => line.replace(/^#{1,6}\s+/, '').replace(/[*_`]/g, '').trim();
const firstLine = (content: string) => lines(content).find((l) => l.length > 0 && !/^(```|---+|===+)/.test(l)) ?? '';
const heading = (content: string, levels = '1,6') => lines(content).find((l) => new RegExp(`^#{${levels}}\\s+\\S`).test(l));
const title = (content: string) => stripMarkdown(heading(content, '1,2') ?? firstLine(content)) || '(empty)';

/** Bullet and numbered points (`- x`, `* x`, `1. x`), checkboxes included. */
function bullets(content: string): string[] {
  return lines(content)
    .map((l) => /^(?:[-*+]|\d+[.)])\s+(.*\S)/.exec(l)?.[1])
    .filter((p): p is string => p !== undefined)
    .map((p) => stripMarkdown(p.replace(/^\[[ xX]\]\s*/, '')));
}

const points = (items: string[]) => items.filter((p) => p.length > 0).slice(0, MAX_POINTS).map((p) => clip(p, MAX_POINT));

/** File names the content announces: `file: src/a.ts`, `## src/a.ts`, `// File: a.js`. */
function filesIn(content: string): string[] {
  const found: string[] = [];
  for (const line of lines(content)) {
    const l = line.replace(/\*\*/g, ''); // **File:** a.ts
    const m = /^(?:(?:\/\/|#|--|\*)\s*)?file\s*:\s*`?([^\s`]+)`?/i.exec(l) ?? /^#{1,6}\s+`?([\w./-]+\.[A-Za-z][A-Za-z0-9]{0,7})`?\s*$/.exec(l);
    if (m?.[1]) found.push(m[1]);
  }
  return found;
}

function mergeFiles(...lists: Array<string[] | undefined>): string[] {
  const all = [...new Set(lists.flatMap((l) => l ?? []).map((f) => f.trim()).filter((f) => f.length > 0))];
  return all.slice(0, MAX_FILES).map((f) => clip(f, MAX_FILE));
}

const listed = (files: string[]) => (files.length <= 3 ? files.join(', ') : `${files.slice(0, 3).join(', ')} and ${files.length - 3} more`);

/** Lines that are code: not blank, not fences, not file markers. */
function linesOfCode(content: string): number {
  return lines(content).filter((l) => l.length > 0 && !l.startsWith('```') && !/^(?:(?:\/\/|#)\s*)?file\s*:/i.test(l) && !/^#{1,6}\s+`?[\w./-]+\.[A-Za-z][A-Za-z0-9]{0,7}`?$/.test(l)).length;
}

// -- review reports ------------------------------------------------------------------------------

const ISSUE = /^(?:[-*+]\s+\[ \]|(?:[-*+]|\d+[.)])?\s*\**(?:issue|bug|problem|finding)\b\s*(?:#?\d+)?\**\s*[:.-]|(?:[-*+]|\d+[.)])?\s*\**\[?(?:blocker|critical|high|major|medium|minor|low)\]?\**\s*[:\]-])/i;

function reviewVerdict(content: string): string | null {
  const explicit = /^\W*(?:verdict|decision|recommendation|outcome)\W*[:\-]\s*\**(.+?)\**\s*$/im.exec(content)?.[1];
  if (explicit) return clip(explicit.replace(/[*_`]/g, '').trim(), 80);
  if (/needs?[ _-]revision|request(?:ed|ing|s)? changes|changes requested|not approved/i.test(content)) return 'needs revision';
  if (/\breject(?:ed)?\b/i.test(content)) return 'rejected';
  if (/\bapprove[ds]?\b|\blgtm\b/i.test(content)) return 'approved';
  return null;
}

// -- test results ---------------------------------------------------------------------------------

interface TestCounts {
  passed: number;
  failed: number;
  skipped: number;
  total: number | null;
}

/** The number before `word`, its last occurrence (`Fixed 3 failed tests. Now: 12 passed, 0 failed` → 0 failed). */
const count = (text: string, word: RegExp): number => {
  const m = lastMatch(text, new RegExp(`(\\d+)\\s+${word.source}`, 'gi'));
  return m ? Number(m) : 0;
};

/**
 * Counts from the summary lines of the usual runners: jest (`Tests: 1 failed, 2 passed, 3
 * total`), vitest (`Tests  1 failed | 2 passed (3)`), node:test (`# pass 2` / `ℹ fail 1`), mocha
 * (`2 passing`, `1 failing`), and a bare `N passed, M failed` otherwise.
 */
export function parseTestCounts(content: string): TestCounts | null {
  // a suite or file that failed to run (a syntax error, a crash in setup) is a failure even when
  // every test that ran passed: jest's `Test Suites: 1 failed`, vitest's `Test Files  1 failed`
  const brokenSuites = count(lastMatch(content, /^\s*Test Suites:\s+(.+)$/gm) ?? '', /failed/) + count(lastMatch(content, /^\s*Test Files\s{2,}(.+)$/gm) ?? '', /failed/);
  const withSuites = (c: TestCounts): TestCounts => (brokenSuites > 0 && c.failed === 0 ? { ...c, failed: brokenSuites } : c);
  // the last summary wins: a report may quote an earlier run before the final one
  const jest = lastMatch(content, /^\s*Tests:\s+(.+)$/gm);
  if (jest) return withSuites({ passed: count(jest, /passed/), failed: count(jest, /failed/), skipped: count(jest, /(?:skipped|todo)/), total: /(\d+)\s+total/.exec(jest) ? Number(/(\d+)\s+total/.exec(jest)![1]) : null });
  const vitest = lastMatch(content, /^\s*Tests\s{2,}(.+)$/gm);
  if (vitest) return withSuites({ passed: count(vitest, /passed/), failed: count(vitest, /failed/), skipped: count(vitest, /(?:skipped|todo)/), total: /\((\d+)\)/.exec(vitest) ? Number(/\((\d+)\)/.exec(vitest)![1]) : null });
  const node = (word: string) => new RegExp(`^\\s*(?:#|ℹ)\\s*${word}\\s+(\\d+)\\s*$`, 'm').exec(content)?.[1];
  if (node('pass') !== undefined || node('fail') !== undefined) {
    const total = node('tests');
    return { passed: Number(node('pass') ?? 0), failed: Number(node('fail') ?? 0), skipped: Number(node('skipped') ?? 0) + Number(node('todo') ?? 0), total: total === undefined ? null : Number(total) };
  }
  if (/^\s*\d+\s+(?:passing|failing)\b/m.test(content)) return { passed: count(content, /passing/), failed: count(content, /failing/), skipped: count(content, /pending/), total: null };
  // a bare `N passed, M failed`: the last line that says both (or either) is the result
  const bare = lastMatch(content, /^.*\d+\s+(?:passed|failed)\b.*$/gim);
  if (bare) return withSuites({ passed: count(bare, /passed/), failed: count(bare, /failed/), skipped: count(bare, /skipped/), total: null });
  return null;
}

/** The first group (else the whole match) of the last match of a global regex. */
function lastMatch(text: string, re: RegExp): string | undefined {
  let last: RegExpExecArray | null = null;
  for (let m = re.exec(text); m; m = re.exec(text)) last = m;
  return last ? (last[1] ?? last[0]) : undefined;
}

/** Lines naming a failure: `✗ name`, `× name`, `FAIL file`, `not ok 3 - name`, `1) name` of mocha. */
const FAILURE = /^(?:[✗×✖❌]\s*|FAIL\b\s*|not ok\b\s*|\d+\)\s+)(.+)$/;

// -- the summary -----------------------------------------------------------------------------------

/** What the organiser sees of an artifact: a brief (≤ 2 sentences), ≤ 5 key points, files, metrics. */
export function summarizeArtifact(type: ArtifactType, content: string, files?: string[]): ArtifactSummary {
  const text = content.trim();
  const summary = ((): ArtifactSummary => {
    switch (type) {
      case 'user_task':
        return { brief: brief(firstLine(text) || '(empty)'), keyPoints: points(bullets(text)), filesAffected: mergeFiles(files) };
      case 'implementation_plan':
        return { brief: brief(`Plan: ${title(text)}.`), keyPoints: points(bullets(text)), filesAffected: mergeFiles(files, filesIn(text)) };
      case 'pseudocode': {
        const found = mergeFiles(files, filesIn(text));
        return {
          brief: brief(found.length > 0 ? `Structure of ${plural(found.length, 'file')}: ${listed(found)}.` : `Pseudocode: ${title(text)}.`),
          keyPoints: points(bullets(text).length > 0 ? bullets(text) : found),
          filesAffected: found,
        };
      }
      case 'code': {
        const found = mergeFiles(files, filesIn(text));
        const loc = linesOfCode(text);
        return {
          brief: brief(`Code: ${plural(loc, 'line')}${found.length > 0 ? ` in ${plural(found.length, 'file')}: ${listed(found)}` : ''}.`),
          keyPoints: points(found),
          filesAffected: found,
          metrics: { linesOfCode: loc },
        };
      }
      case 'review_report': {
        const issues = lines(text).filter((l) => ISSUE.test(l));
        const verdict = reviewVerdict(text);
        return {
          brief: brief(`Review: ${plural(issues.length, 'issue')} found${verdict ? `; verdict: ${verdict}` : ''}.`),
          keyPoints: points(issues.map((l) => stripMarkdown(l.replace(/^(?:[-*+]|\d+[.)])\s+(?:\[ \]\s*)?/, '')))),
          filesAffected: mergeFiles(files, filesIn(text)),
          metrics: { issuesFound: issues.length },
        };
      }
      case 'documentation':
        return {
          brief: brief(`Documentation: ${title(text)}.`),
          keyPoints: points(lines(text).filter((l) => /^#{2,3}\s+\S/.test(l)).map(stripMarkdown)),
          filesAffected: mergeFiles(files, filesIn(text)),
        };
      case 'test_results': {
        const counts = parseTestCounts(text);
        const failures = lines(text).map((l) => FAILURE.exec(l)?.[1]?.trim()).filter((l): l is string => !!l);
        if (!counts) return { brief: brief(`Test results: ${firstLine(text) || '(empty)'}`), keyPoints: points(failures), filesAffected: mergeFiles(files) };
        const total = counts.total ?? counts.passed + counts.failed + counts.skipped;
        const parts = [`${counts.passed} passed`, `${counts.failed} failed`, ...(counts.skipped > 0 ? [`${counts.skipped} skipped`] : [])];
        return {
          brief: brief(`Tests: ${parts.join(', ')} (${total} total).`),
          keyPoints: points(failures),
          filesAffected: mergeFiles(files),
          metrics: { testsCount: total, testsFailed: counts.failed },
        };
      }
      case 'error_report':
        return { brief: brief(firstLine(text) || '(empty)'), keyPoints: points(bullets(text)), filesAffected: mergeFiles(files, filesIn(text)) };
    }
  })();
  // the schema is the contract: a summary that breaks it is a bug here, caught where it is made
  return ArtifactSummary.parse(summary);
}
