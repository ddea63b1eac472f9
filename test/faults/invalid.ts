/**
 * Invalid messages, generated from a valid one and its schema: every candidate is checked against
 * the schema (`isValid`) and only those it refuses are kept, so each one is a message the receiver
 * must turn away. The kinds: text that is not JSON, a wrong top-level type, a field missing, a
 * field of the wrong type, an unknown field, a string of ~900 kB, nesting thousands of levels deep,
 * `__proto__` / `constructor` keys. Seeded: the same seed gives the same messages.
 */

/** A message to send: JSON-serializable data, or raw text (not JSON, or JSON too deep to build as a value). */
export type Payload = { data: unknown } | { raw: string };

type Path = Array<string | number>;

function leaves(value: unknown, path: Path = [], depth = 0, out: Path[] = []): Path[] {
  if (path.length > 0) out.push(path);
  if (depth >= 4 || value === null || typeof value !== 'object') return out;
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) leaves(child, [...path, Array.isArray(value) ? Number(key) : key], depth + 1, out);
  return out;
}

function clone<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function at(value: unknown, path: Path): { parent: Record<string | number, unknown>; key: string | number } | null {
  let node = value as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) {
    node = node?.[key] as Record<string | number, unknown>;
    if (node === null || typeof node !== 'object') return null;
  }
  return { parent: node, key: path.at(-1)! };
}

const PLACEHOLDER = '__a2a_fuzz_placeholder__';
const NOT_JSON = ['{', '{"kind":', 'garbage', '\u0000\u0001', '[1,2', '}{', 'undefined', 'NaN', "{'single':'quotes'}"];
const WRONG_TOP: unknown[] = [42, 'text', [], null, true, [{}], 0];

function wrongTypeFor(value: unknown, pick: () => number): unknown {
  const options: unknown[] =
    typeof value === 'string' ? [12345, true, null, {}, []] : typeof value === 'number' ? ['12', true, null, {}, -1.5e308] : typeof value === 'boolean' ? ['yes', 1, null] : Array.isArray(value) ? [{}, 'list', 7] : value && typeof value === 'object' ? [[], 'object', 3] : ['x', 1, {}];
  return options[Math.floor(pick() * options.length)];
}

/**
 * `count` invalid variants of `valid` (each refused by `isValid`), in a seeded order of kinds.
 * `bigStrings` limits how many ~900 kB messages there are (they are slow to send).
 */
export function invalidVariants(valid: unknown, isValid: (value: unknown) => boolean, random: () => number, count: number, options: { bigStrings?: number } = {}): Payload[] {
  const out: Payload[] = [];
  const paths = leaves(valid);
  let big = options.bigStrings ?? 3;
  const keep = (p: Payload) => {
    if ('data' in p && isValid(p.data)) return;
    if ('raw' in p) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(p.raw);
      } catch {
        out.push(p);
        return;
      }
      if (isValid(parsed)) return;
    }
    out.push(p);
  };
  for (let guard = 0; out.length < count && guard < count * 20; guard++) {
    const kind = Math.floor(random() * 8);
    const path = paths[Math.floor(random() * paths.length)] ?? [];
    switch (kind) {
      case 0:
        keep({ raw: NOT_JSON[Math.floor(random() * NOT_JSON.length)]! });
        break;
      case 1:
        keep({ data: WRONG_TOP[Math.floor(random() * WRONG_TOP.length)] });
        break;
      case 2: {
        const data = clone(valid);
        const where = at(data, path);
        if (where) delete where.parent[where.key];
        keep({ data });
        break;
      }
      case 3: {
        const data = clone(valid);
        const where = at(data, path);
        if (where) where.parent[where.key] = wrongTypeFor(where.parent[where.key], random);
        keep({ data });
        break;
      }
      case 4: {
        const data = clone(valid) as Record<string, unknown>;
        const where = at(data, path);
        if (where && where.parent && typeof where.parent === 'object' && !Array.isArray(where.parent)) where.parent[`unexpected_${Math.floor(random() * 1e6)}`] = 'surprise';
        else if (data && typeof data === 'object') data[`unexpected_${Math.floor(random() * 1e6)}`] = 'surprise';
        keep({ data });
        break;
      }
      case 5: {
        if (big <= 0) break;
        const data = clone(valid);
        const where = at(data, path);
        if (!where) break;
        where.parent[where.key] = 'x'.repeat(900_000);
        big--;
        keep({ data });
        break;
      }
      case 6: {
        // thousands of levels: built as text (a value this deep would overflow JSON.stringify)
        const data = clone(valid);
        const where = at(data, path);
        if (!where) break;
        where.parent[where.key] = PLACEHOLDER;
        const depth = 2_000 + Math.floor(random() * 8_000);
        keep({ raw: JSON.stringify(data).replace(`"${PLACEHOLDER}"`, `${'['.repeat(depth)}1${']'.repeat(depth)}`) });
        break;
      }
      case 7: {
        // keys that pollute a prototype when copied carelessly
        const text = JSON.stringify(valid);
        const polluted = random() < 0.5 ? `{"__proto__":{"polluted":true,"type":"CANCEL"},${text.slice(1)}` : `{"constructor":{"prototype":{"polluted":true}},${text.slice(1)}`;
        if (text.startsWith('{') && text.length > 2) keep({ raw: polluted });
        else keep({ raw: `{"__proto__":{"polluted":true}}` });
        break;
      }
    }
  }
  return out;
}
