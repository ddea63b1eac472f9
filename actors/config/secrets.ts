/**
 * Secrets never leave a process in clear. Every value the process knows to be a secret (API keys
 * from the environment or the secrets file, NATS credentials, the GitHub token, any variable
 * whose name says it is one) and anything shaped like a credential are replaced by a marker
 * (`[redacted:OPENAI_API_KEY]`, `[redacted]`) in one place: `toJson` and `redactText`, which every
 * writer uses — the run's files (events, audit, checkpoint, inbox journal, run.json, status), what
 * it prints (the live tree, `--json`, `a2a audit`), what crosses NATS (events, reports,
 * snapshots), and what a tool hands back to the model.
 *
 * Why one process-wide set: a secret is a fact about the process (its environment, its files),
 * and every writer, wherever it sits, must know all of them; passing the set to each would leave
 * the next writer someone adds unprotected.
 */

/** Variable names that hold secrets, whatever their value looks like. */
const SECRET_NAME = /(^|_)(API_?KEY|ACCESS_?KEY|SECRET(_ACCESS)?_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASS|CREDENTIALS?|PRIVATE_?KEY)$/i;

/** Credentials that say what they are by their prefix: never ordinary code or prose. */
const TOKEN_SHAPES: RegExp[] = [
  /\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}/g, // OpenAI, Anthropic
  /\bgh[pousr]_[A-Za-z0-9]{20,}/g, // GitHub tokens
  /\bgithub_pat_[A-Za-z0-9_]{20,}/g,
  /\bxox[abpr]-[A-Za-z0-9-]{10,}/g, // Slack
  /\bAKIA[0-9A-Z]{16}\b/g, // AWS access key id
  /\bAIza[0-9A-Za-z_-]{35}\b/g, // Google API key (Gemini)
];

/** Shapes of credentials that must never reach a log, whoever's they are. */
const SHAPES: RegExp[] = [
  ...TOKEN_SHAPES,
  /(\bBearer\s+)[A-Za-z0-9._~+/-]{16,}=*/gi,
  /((?:api[_-]?key|token|secret|password)["']?\s*[:=]\s*["']?)[^\s"',}\]\\]{8,}/gi,
];

/**
 * The shapes as they appear in JSON text: inside a string (`token=abc…`), or as a key and its string
 * value (`"password":"…"`); never a number (`"token":12345678` stays valid JSON).
 */
const JSON_SHAPES: RegExp[] = [
  ...TOKEN_SHAPES,
  /(\bBearer\s+)[A-Za-z0-9._~+/-]{16,}=*/gi,
  /((?:api[_-]?key|token|secret|password)\s*[:=]\s*)[^\s"',}\]\\]{8,}/gi,
  /((?:api[_-]?key|token|secret|password)"\s*:\s*")[^"\\]{8,}/gi,
];

/**
 * A secret shorter than this is replaced only where it stands alone (no letter or digit on either
 * side): a short password is still redacted, ordinary words that contain it are not blanked out.
 */
const MIN_SECRET_LENGTH = 8;

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * What to replace. `records`: known secret values and credential shapes, for what people read
 * (logs, the audit, events, printed output). `state`: known secret values only, for what is read
 * back (checkpoints, the journal, messages between processes, a tool's output to the model): a
 * shape also matches ordinary code (`token: getToken()`), and state must come back as it was.
 * `content`: known secret values and the tokens that name themselves (`sk-…`, `ghp_…`, `AKIA…`),
 * for what agents hand each other and people read alike (artifacts): code stays code, and a key
 * pasted from a `.env` file still goes.
 */
export type RedactionMode = 'records' | 'state' | 'content';

export class SecretRedactor {
  /** name → value, longest value first (so that no tail of one survives another's marker); a short one matched as a word. */
  #secrets: Array<{ name: string; value: string; word?: RegExp }> = [];
  #version = 0;

  /** Registers a secret under the name that says where it came from (never its value); any length. */
  add(name: string, value: string | undefined | null): void {
    const v = value?.trim();
    // a flag (`SOME_TOKEN=1`, `USE_PASSWORD=true`) is no secret: redacting it would blank out every "1"
    if (!v || /^(?:true|false|yes|no|on|off|\d)$/i.test(v) || this.#secrets.some((s) => s.value === v)) return;
    const word = v.length < MIN_SECRET_LENGTH ? new RegExp(`(?<![A-Za-z0-9])${escapeRegExp(v)}(?![A-Za-z0-9])`, 'g') : undefined;
    this.#secrets.push({ name: name.replace(/[^A-Za-z0-9_.-]/g, '_'), value: v, ...(word ? { word } : {}) });
    this.#secrets.sort((a, b) => b.value.length - a.value.length);
    this.#version++;
  }

  /** Registers every variable of `env` whose name says it holds a secret. */
  addFromEnv(env: NodeJS.ProcessEnv): void {
    for (const [name, value] of Object.entries(env)) if (SECRET_NAME.test(name)) this.add(name, value);
  }

  /** Forgets every secret: for tests that start from none (a process keeps its own for its life). */
  clear(): void {
    this.#secrets = [];
    this.#version++;
  }

  /** The names registered (for messages and tests; never the values). */
  names(): string[] {
    return this.#secrets.map((s) => s.name);
  }

  /** Changes with every secret added (or the set cleared): a thread that redacts for this one (`forRedactorThread`) is sent the set again. */
  get version(): number {
    return this.#version;
  }

  /**
   * The known secrets, values and all, for `jsonRedactorSource` on another thread of this process
   * that redacts JSON text on this one's behalf (the trace export's worker: adapters/otel/offThread.ts).
   * Nothing else may ask: this is the one way a value leaves the redactor.
   */
  forRedactorThread(): KnownSecret[] {
    return this.#secrets.map((s) => ({ name: s.name, value: s.value, ...(s.word ? { word: s.word.source } : {}) }));
  }

  /** `text` with every known secret (and, for records, every credential shape) replaced by a marker. */
  text(text: string, mode: RedactionMode = 'records'): string {
    let out = this.#known(text, false);
    if (mode !== 'state') {
      for (const shape of mode === 'records' ? SHAPES : TOKEN_SHAPES) {
        out = out.replace(shape, (match: string, prefix?: unknown) => (typeof prefix === 'string' && match.startsWith(prefix) ? `${prefix}[redacted]` : '[redacted]'));
      }
    }
    return out;
  }

  /** `text` with every known secret replaced by its marker (also as JSON escapes it, for JSON text); a short one only as a word. */
  #known(text: string, escaped: boolean): string {
    let out = text;
    for (const { name, value, word } of this.#secrets) {
      const marker = `[redacted:${name}]`;
      if (out.includes(value)) out = word ? out.replace(word, marker) : out.split(value).join(marker);
      const inJson = escaped ? JSON.stringify(value).slice(1, -1) : value;
      if (inJson !== value && out.includes(inJson)) out = out.split(inJson).join(marker);
    }
    return out;
  }

  /**
   * JSON text, redacted in place (records mode): each known secret as it is and as JSON escapes
   * it, then the credential shapes (none of which crosses a quote). For text made by
   * JSON.stringify that is too large to walk value by value at its rate (trace batches): the
   * JSON stays valid, as `json` keeps it.
   */
  jsonText(text: string): string {
    let out = this.#known(text, true);
    for (const shape of JSON_SHAPES) {
      out = out.replace(shape, (match: string, prefix?: unknown) => (typeof prefix === 'string' && match.startsWith(prefix) ? `${prefix}[redacted]` : '[redacted]'));
    }
    return out;
  }

  /**
   * JSON of `value`, redacted. The strings of the value are redacted (not the JSON text, where a
   * pattern could eat a number or a quote, and a secret holding a quote is escaped): the JSON
   * stays valid and means what it meant, with markers in place of secrets.
   */
  json(value: unknown, space?: number, mode: RedactionMode = 'records'): string {
    // records (small, and shapes need the strings as they are) are walked; state (checkpoints can
    // be large) only when its JSON holds a known secret
    if (mode === 'state') {
      const text = JSON.stringify(value, null, space) ?? 'null';
      if (!this.#holdsSecret(text)) return text;
    }
    return JSON.stringify(this.deep(value, mode), null, space) ?? 'null';
  }

  /** Whether JSON text holds a known secret (as it is, or escaped: a secret may hold a quote or a backslash). */
  #holdsSecret(text: string): boolean {
    return this.#secrets.some((s) => text.includes(s.value) || text.includes(JSON.stringify(s.value).slice(1, -1)));
  }

  /** A copy of `value` with every string (keys too) redacted; iterative, so that no nesting overflows it. */
  deep<T>(value: T, mode: RedactionMode = 'records'): T {
    const fix = (v: unknown): unknown => (typeof v === 'string' ? this.text(v, mode) : v);
    if (value === null || typeof value !== 'object') return fix(value) as T;
    const root: unknown = Array.isArray(value) ? [] : {};
    const stack: Array<[unknown, Record<string | number, unknown>]> = [[value, root as Record<string, unknown>]];
    while (stack.length > 0) {
      const [from, to] = stack.pop()!;
      for (const [k, v] of Object.entries(from as Record<string, unknown>)) {
        const key = Array.isArray(from) ? Number(k) : this.text(k, mode);
        if (v !== null && typeof v === 'object') {
          if (typeof (v as { toJSON?: unknown }).toJSON === 'function') {
            to[key] = fix((v as { toJSON(): unknown }).toJSON());
            continue;
          }
          const copy: Record<string, unknown> | unknown[] = Array.isArray(v) ? [] : {};
          to[key] = copy;
          stack.push([v, copy as Record<string, unknown>]);
        } else if (v !== undefined && typeof v !== 'function') {
          to[key] = fix(v);
        }
      }
    }
    return root as T;
  }
}

/** A known secret as `forRedactorThread` hands it over (`word`: the source of the pattern of a short one). */
export interface KnownSecret {
  name: string;
  value: string;
  word?: string;
}

/**
 * `jsonText` as the source of a JavaScript expression, for a thread that redacts JSON text on
 * this one's behalf: evaluated there, it is a function of the known secrets
 * (`forRedactorThread()`) that returns the redactor. The same steps as `#known(text, true)` and
 * `jsonText`, with the shapes of `JSON_SHAPES` itself; test/actors/secrets.test.ts holds the two
 * to the same output.
 */
export const jsonRedactorSource = `((known) => {
  const secrets = known.map((s) => ({ marker: '[redacted:' + s.name + ']', value: s.value, escaped: JSON.stringify(s.value).slice(1, -1), word: s.word === undefined ? undefined : new RegExp(s.word, 'g') }));
  const shapes = [${JSON_SHAPES.map((r) => `new RegExp(${JSON.stringify(r.source)}, ${JSON.stringify(r.flags)})`).join(', ')}];
  const shapeMarker = (match, prefix) => (typeof prefix === 'string' && match.startsWith(prefix) ? prefix + '[redacted]' : '[redacted]');
  return (text) => {
    let out = text;
    for (const { marker, value, escaped, word } of secrets) {
      if (out.includes(value)) out = word ? out.replace(word, marker) : out.split(value).join(marker);
      if (escaped !== value && out.includes(escaped)) out = out.split(escaped).join(marker);
    }
    for (const shape of shapes) out = out.replace(shape, shapeMarker);
    return out;
  };
})`;

/** This process's secrets (bin/ registers them at start: the environment, keys it resolves). */
export const secrets = new SecretRedactor();

/** JSON of a record people read (log, audit, event, status): known secrets and credential shapes become markers. */
export function toJson(value: unknown, space?: number): string {
  return secrets.json(value, space, 'records');
}

/** JSON of state that is read back (checkpoint, journal, a message between processes): known secrets become markers. */
export function stateJson(value: unknown, space?: number): string {
  return secrets.json(value, space, 'state');
}

/** Text people read: known secrets and credential shapes become markers. */
export function redactText(text: string): string {
  return secrets.text(text, 'records');
}

/** Text read back (a tool's output to the model): known secrets become markers, nothing else changes. */
export function redactSecrets(text: string): string {
  return secrets.text(text, 'state');
}
