/**
 * Subjects, names and keys, checked with the rules NATS applies: the in-process transport
 * (memory.ts) refuses what NATS would, and the NATS adapter (nats.ts) says so before the server
 * does, in the same words.
 */
import { A2AError } from '../../actors/errors.js';

const NAME = /^[A-Za-z0-9_-]+$/;
const KV_KEY = /^[-/=.\w]+$/;

/** Checks a subject; wildcards (`*` a token, `>` the last token) only when `wildcards`. */
export function assertSubject(subject: string, what: string, wildcards: boolean): string[] {
  const tokens = typeof subject === 'string' ? subject.split('.') : [];
  const bad = (why: string) => new A2AError('VALIDATION_ERROR', `invalid ${what} "${subject}": ${why}`, { where: what });
  if (typeof subject !== 'string' || subject.length === 0) throw bad('it is empty');
  if (/\s/.test(subject)) throw bad('subjects cannot contain whitespace');
  tokens.forEach((token, i) => {
    if (token.length === 0) throw bad('empty token (leading, trailing or double ".")');
    if (token === '*' || token === '>') {
      if (!wildcards) throw bad('wildcards are not allowed here');
      if (token === '>' && i !== tokens.length - 1) throw bad('">" must be the last token');
    } else if (token.includes('*') || token.includes('>')) {
      throw bad('"*" and ">" must be whole tokens');
    }
  });
  return tokens;
}

/** Names of queues, consumers and buckets: letters, digits, "_" and "-" (valid NATS stream names). */
export function assertName(name: string, what: string): void {
  if (typeof name !== 'string' || !NAME.test(name)) {
    throw new A2AError('VALIDATION_ERROR', `invalid ${what} "${name}": use letters, digits, "_" and "-"`, { where: what });
  }
}

/** Consumer names: what JetStream accepts as a durable name (printable, no ".", "*", ">", "/", "\\"). */
export function assertConsumerName(name: string, queue: string): void {
  if (typeof name !== 'string' || !/^[!-~]+$/.test(name) || /[.*>/\\]/.test(name)) {
    throw new A2AError('VALIDATION_ERROR', `invalid consumer name "${name}" on queue ${queue}: printable ASCII without ".", "*", ">", "/" or "\\"`, {
      where: `${queue}/${name}`,
    });
  }
}

export function assertKey(key: string, bucket: string): void {
  if (typeof key !== 'string' || !KV_KEY.test(key) || key.startsWith('.') || key.endsWith('.')) {
    throw new A2AError('VALIDATION_ERROR', `invalid key "${key}" in bucket ${bucket}: use letters, digits and "-/_=." (not first or last)`, {
      where: `${bucket}/${key}`,
    });
  }
}

/** A prefix of keys to remove at once (KeyValue.deleteUnder): key tokens, ending with ".". */
export function assertPrefix(prefix: string, bucket: string): void {
  if (typeof prefix !== 'string' || !prefix.endsWith('.') || prefix.length < 2) {
    throw new A2AError('VALIDATION_ERROR', `invalid key prefix "${prefix}" in bucket ${bucket}: give whole key tokens ending with "."`, { where: `${bucket}/${prefix}` });
  }
  assertKey(prefix.slice(0, -1), bucket);
}

/** Whether `subject` (no wildcards) matches `pattern`. */
export function subjectMatches(pattern: string, subject: string): boolean {
  return tokensMatch(pattern.split('.'), subject.split('.'));
}

/** Whether the subject's tokens match the pattern's (`*` one token, `>` the rest). */
export function tokensMatch(pattern: string[], subject: string[]): boolean {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '>') return subject.length > i;
    if (i >= subject.length) return false;
    if (pattern[i] !== '*' && pattern[i] !== subject[i]) return false;
  }
  return pattern.length === subject.length;
}
