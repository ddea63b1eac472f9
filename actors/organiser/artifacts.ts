/**
 * The artifact store (seed 003): what the agents of a run produce (plans, pseudocode, code,
 * reviews, documentation, test results, error reports), kept apart from any conversation. Agents
 * read full contents on demand (lazy, with an LRU cache of loaded contents); the organiser sees
 * summaries only, so that its context stays small however much the team writes.
 *
 * Records live behind the `ArtifactBackend` port (files under the run's directory, or a key-value
 * bucket shared by hosts over NATS). Several processes may write the same run at once: ids and
 * versions are claimed with the backend's create-if-absent, records changed by compare-and-set,
 * and everything read back is parsed with its schema before it is used.
 */
import { z } from 'zod';
import { ArtifactContent, ArtifactId, ArtifactMeta, ArtifactStatus, ArtifactType, RunId, type ArtifactSummary } from '../../machines/protocol/index.js';
import type { ArtifactBackend, Clock, StoredRecord } from '../../machines/ports.js';
import { sanitizeArtifactContent, summarizeArtifact } from './artifactContent.js';
import { A2AError, inlineIssues } from '../errors.js';
import { errorText } from '../../machines/errorText.js';

export { MAX_ARTIFACT_BYTES, parseTestCounts, sanitizeArtifactContent, summarizeArtifact } from './artifactContent.js';

export interface NewArtifact {
  type: ArtifactType;
  content: string;
  /** The session that wrote it (or "organiser", "user"). */
  producer: string;
  /** Its workflow role (architect, sceptic …), what the organiser reasons with. */
  producerRole: string;
  /** Default `completed`. */
  status?: ArtifactStatus;
  /** Artifacts it builds on; each must exist. */
  related?: string[];
  /** Files it concerns, besides those its content names. */
  files?: string[];
}

export interface ArtifactRevision {
  content: string;
  producer: string;
  /** Default: the role of the previous version's producer. */
  producerRole?: string;
  /** Default `completed`: a revision is a finished new version, to be reviewed again. */
  status?: ArtifactStatus;
  /** Default: the files of the previous version (its content may name more). */
  files?: string[];
  /** More artifacts it builds on (added to the existing ones): the review a fix answers. */
  related?: string[];
}

export interface ArtifactQuery {
  type?: ArtifactType;
  producer?: string;
  producerRole?: string;
  status?: ArtifactStatus;
  /** Default false: archived artifacts have left the organiser's context. */
  includeArchived?: boolean;
}

/** What the organiser sees of one artifact: never its content. */
export type OrganiserArtifact = Pick<ArtifactMeta, 'id' | 'type' | 'version' | 'status' | 'producerRole'> &
  Pick<ArtifactSummary, 'brief' | 'keyPoints' | 'metrics'> & { filesAffectedCount: number };

const Files = ArtifactMeta.shape.summary.shape.filesAffected;
const NewArtifactArgs = z.object({
  type: ArtifactType,
  content: z.string(),
  producer: ArtifactMeta.shape.producer,
  producerRole: ArtifactMeta.shape.producerRole,
  status: ArtifactStatus.optional(),
  related: z.array(ArtifactId).max(100).optional(),
  files: Files.optional(),
});
const RevisionArgs = z.object({
  content: z.string(),
  producer: ArtifactMeta.shape.producer,
  producerRole: ArtifactMeta.shape.producerRole.optional(),
  status: ArtifactStatus.optional(),
  files: Files.optional(),
  related: z.array(ArtifactId).max(100).optional(),
});
const QueryArgs = z.object({
  type: ArtifactType.optional(),
  producer: z.string().optional(),
  producerRole: z.string().optional(),
  status: ArtifactStatus.optional(),
  includeArchived: z.boolean().optional(),
});

function parseArgs<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const first = parsed.error.issues[0];
  throw new A2AError('VALIDATION_ERROR', `invalid ${what}: ${inlineIssues(parsed.error.issues)}`, first ? { where: first.path.join('.') || what } : {});
}

/** Contents are immutable once written: a small LRU of loaded ones (`id@version`) saves reads. */
class ContentCache {
  readonly #entries = new Map<string, ArtifactContent>();
  hits = 0;
  misses = 0;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): ArtifactContent | undefined {
    const found = this.#entries.get(key);
    if (found === undefined) {
      this.misses += 1;
      return undefined;
    }
    this.hits += 1;
    // Map keeps insertion order: re-inserting makes it the most recently used
    this.#entries.delete(key);
    this.#entries.set(key, found);
    return found;
  }

  put(key: string, content: ArtifactContent): void {
    if (this.capacity <= 0) return;
    this.#entries.delete(key);
    this.#entries.set(key, content);
    while (this.#entries.size > this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
  }
}

const numberOf = (id: string) => Number(id.slice(id.lastIndexOf('-') + 1));
const typeOf = (id: string) => id.slice(0, id.lastIndexOf('-'));
const byId = (a: string, b: string) => typeOf(a).localeCompare(typeOf(b)) || numberOf(a) - numberOf(b);
const byCreation = (a: ArtifactMeta, b: ArtifactMeta) => a.createdAt - b.createdAt || byId(a.id, b.id);

/** Compare-and-set rounds before giving up: only a storm of writers to one artifact gets there. */
const MAX_ROUNDS = 100;

/** Told of every artifact created or revised (run events: `artifact.created`, `artifact.updated`). */
export type ArtifactListener = (meta: ArtifactMeta, change: 'created' | 'updated') => void;

/**
 * The run event of an artifact change: id, type, version, status, producer, summary; never the
 * content. It carries its run id (a host serves several runs), and an id per version so that a
 * re-emission is dropped.
 */
export function artifactEvent(meta: ArtifactMeta, change: 'created' | 'updated') {
  return {
    type: `artifact.${change}` as const,
    id: `artifact:${meta.runId}:${meta.id}@${meta.version}`,
    runId: meta.runId,
    data: { artifactId: meta.id, artifactType: meta.type, version: meta.version, status: meta.status, producer: meta.producer, producerRole: meta.producerRole, brief: meta.summary.brief, files: meta.summary.filesAffected.length },
  };
}

export class ArtifactStore {
  readonly #cache: ContentCache;
  readonly #onChange: ArtifactListener | undefined;

  constructor(
    private readonly backend: ArtifactBackend,
    readonly runId: string,
    private readonly clock: Clock,
    options: { cacheSize?: number; onChange?: ArtifactListener } = {},
  ) {
    const valid = RunId.safeParse(runId);
    if (!valid.success) throw new A2AError('VALIDATION_ERROR', `invalid run id "${runId}" for the artifact store: ${inlineIssues(valid.error.issues)}`, { where: 'runId' });
    this.#cache = new ContentCache(options.cacheSize ?? 50);
    this.#onChange = options.onChange;
  }

  /** Content cache counters: hits and misses of `read`, and contents held. */
  get cacheStats(): { hits: number; misses: number; size: number } {
    return { hits: this.#cache.hits, misses: this.#cache.misses, size: this.#cache.size };
  }

  /** Stores a new artifact as version 1 with the next free `<type>-<n>` id of the run. */
  async create(a: NewArtifact): Promise<ArtifactMeta> {
    const args = parseArgs(NewArtifactArgs, a, 'artifact');
    const content = this.#sanitize(args.content);
    if (args.related?.length) await this.#requireExisting(args.related);
    const summary = summarizeArtifact(args.type, content, args.files);
    const now = this.clock.now();
    // claim an id by creating its first version: whoever creates it first owns the number
    const taken = (await this.#io('list artifact ids', () => this.backend.ids(this.runId))).filter((id) => id.startsWith(`${args.type}-`));
    let n = Math.max(0, ...taken.map(numberOf).filter(Number.isInteger)) + 1;
    let record: ArtifactContent | null = null;
    let meta!: ArtifactMeta;
    for (let round = 0; record === null; round++, n++) {
      if (round === MAX_ROUNDS) throw this.#contended(`a new ${args.type} id`);
      meta = ArtifactMeta.parse({
        id: `${args.type}-${n}`,
        runId: this.runId,
        type: args.type,
        status: args.status ?? 'completed',
        version: 1,
        producer: args.producer,
        producerRole: args.producerRole,
        summary,
        related: [...new Set(args.related ?? [])],
        reviewedBy: [],
        size: content.length,
        createdAt: now,
        modifiedAt: now,
        archived: false,
      });
      // the content and the record it makes, in one write: it claims the id (see ArtifactContent.record)
      const candidate: ArtifactContent = { id: meta.id, version: 1, content, producer: args.producer, at: now, record: meta };
      if (await this.#io(`write ${candidate.id}`, () => this.backend.createContent(this.runId, candidate.id, 1, candidate))) record = candidate;
      // the id is taken: by a writer stopped before its record, whose record is completed here
      else await this.#recordIfAny(candidate.id);
    }
    const written = await this.#io(`write ${meta.id}`, () => this.backend.writeMeta(this.runId, meta.id, meta, 0));
    // the id's first version was ours alone: a record already there is ours, completed by a reader
    if (written === null) {
      const found = await this.#recordIfAny(meta.id, false);
      if (!found || found.meta.createdAt !== meta.createdAt || found.meta.producer !== meta.producer) {
        throw new A2AError('AGENT_ERROR', `artifact ${meta.id} of run ${this.runId} got a record from another writer while it was created (${this.backend.where})`);
      }
    }
    this.#cache.put(`${meta.id}@1`, record);
    if (written !== null) this.#onChange?.(meta, 'created');
    return meta;
  }

  /** Stores a new version (the next free number); older versions stay readable. Un-archives it. */
  async revise(id: string, r: ArtifactRevision): Promise<ArtifactMeta> {
    const args = parseArgs(RevisionArgs, r, `revision of ${id}`);
    const { meta: current } = await this.#record(id);
    const content = this.#sanitize(args.content);
    if (args.related?.length) await this.#requireExisting(args.related);
    const summary = summarizeArtifact(current.type, content, args.files ?? current.summary.filesAffected);
    const now = this.clock.now();
    const revisedBy = (meta: ArtifactMeta, version: number): ArtifactMeta => {
      const related = [...new Set([...meta.related, ...(args.related ?? [])])];
      // a concurrent revision with a higher number is the latest: it keeps its summary
      if (meta.version > version) return { ...meta, related, modifiedAt: now };
      return {
        ...meta,
        version,
        producer: args.producer,
        producerRole: args.producerRole ?? meta.producerRole,
        status: args.status ?? 'completed',
        summary,
        related,
        size: content.length,
        modifiedAt: now,
        archived: false,
      };
    };
    let record: ArtifactContent | null = null;
    for (let version = current.version + 1, round = 0; record === null; version++, round++) {
      if (round === MAX_ROUNDS) throw this.#contended(`a new version of ${id}`);
      // with the record it makes: a writer stopped before the record's write leaves it to the next reader
      const candidate: ArtifactContent = { id: current.id, version, content, producer: args.producer, at: now, record: ArtifactMeta.parse(revisedBy(current, version)) };
      if (await this.#io(`write ${id} v${version}`, () => this.backend.createContent(this.runId, id, version, candidate))) record = candidate;
    }
    const mine = record;
    this.#cache.put(`${id}@${mine.version}`, mine);
    const revised = await this.#change(id, (meta) => (meta.version >= mine.version && meta.modifiedAt === now && meta.producer === args.producer ? null : revisedBy(meta, mine.version)));
    this.#onChange?.({ ...revised, version: mine.version }, 'updated');
    return revised;
  }

  async setStatus(id: string, status: ArtifactStatus): Promise<ArtifactMeta> {
    const s = parseArgs(ArtifactStatus, status, 'status');
    return this.#change(id, (meta) => (meta.status === s ? null : { ...meta, status: s, modifiedAt: this.clock.now() }));
  }

  /** Notes who reviewed it (once per reviewer). */
  async addReviewer(id: string, reviewer: string): Promise<ArtifactMeta> {
    const who = parseArgs(ArtifactMeta.shape.reviewedBy.element.min(1), reviewer, 'reviewer');
    return this.#change(id, (meta) => {
      if (meta.reviewedBy.includes(who)) return null;
      if (meta.reviewedBy.length >= 100) throw new A2AError('VALIDATION_ERROR', `artifact ${id} already has 100 reviewers; no more are recorded`, { where: 'reviewedBy' });
      return { ...meta, reviewedBy: [...meta.reviewedBy, who], modifiedAt: this.clock.now() };
    });
  }

  /** The artifact's record (its latest version); ARTIFACT_NOT_FOUND names the ids there are. */
  async get(id: string): Promise<ArtifactMeta> {
    return (await this.#record(id)).meta;
  }

  /** A version's full content (default: the latest), loaded on demand and cached. */
  async read(id: string, version?: number): Promise<ArtifactContent> {
    const v = version ?? (await this.get(id)).version;
    if (!Number.isInteger(v) || v < 1) throw new A2AError('VALIDATION_ERROR', `invalid version ${v} of ${id}: versions are 1, 2, …`, { where: 'version' });
    const key = `${id}@${v}`;
    const cached = this.#cache.get(key);
    if (cached) return cached;
    this.#checkId(id);
    const stored = await this.#io(`read ${key}`, () => this.backend.readContent(this.runId, id, v));
    if (!stored) {
      const meta = await this.get(id);
      throw new A2AError('ARTIFACT_NOT_FOUND', `artifact ${id} has no version ${v}: its versions are 1 to ${meta.version}`, { where: 'version' });
    }
    const content = parseStored(ArtifactContent, stored, 'artifact content');
    if (content.id !== id || content.version !== v) throw invalidRecord(stored.key, `it holds ${content.id} v${content.version}, not ${id} v${v}`);
    this.#cache.put(key, content);
    return content;
  }

  /** The run's artifacts that match, in the order they were created. */
  async list(query: ArtifactQuery = {}): Promise<ArtifactMeta[]> {
    const q = parseArgs(QueryArgs, query, 'artifact query');
    const all = await this.#all();
    return all.filter(
      (m) =>
        (q.includeArchived === true || !m.archived) &&
        (q.type === undefined || m.type === q.type) &&
        (q.producer === undefined || m.producer === q.producer) &&
        (q.producerRole === undefined || m.producerRole === q.producerRole) &&
        (q.status === undefined || m.status === q.status),
    );
  }

  /**
   * Archives the artifacts not changed for `olderThanMs`: they leave the organiser's view, their
   * contents stay readable. Returns the ids archived now.
   */
  async archive(olderThanMs: number): Promise<string[]> {
    const before = this.clock.now() - olderThanMs;
    const old = (m: ArtifactMeta) => !m.archived && m.modifiedAt <= before;
    const archived: string[] = [];
    for (const meta of (await this.#all()).filter(old)) {
      // decided again on each compare-and-set round: another writer may have changed it meanwhile
      let mine = false;
      await this.#change(meta.id, (m) => {
        mine = old(m);
        return mine ? { ...m, archived: true } : null;
      });
      if (mine) archived.push(meta.id);
    }
    return archived;
  }

  /** The organiser's context: the newest `max` artifacts not archived, summaries only. */
  async organiserView(max = 100): Promise<OrganiserArtifact[]> {
    const active = await this.list();
    return active.slice(Math.max(0, active.length - max)).map((m) => ({
      id: m.id,
      type: m.type,
      version: m.version,
      status: m.status,
      producerRole: m.producerRole,
      brief: m.summary.brief,
      keyPoints: m.summary.keyPoints,
      filesAffectedCount: m.summary.filesAffected.length,
      ...(m.summary.metrics ? { metrics: m.summary.metrics } : {}),
    }));
  }

  // -- plumbing -------------------------------------------------------------------------------------

  #sanitize(content: string): string {
    const clean = sanitizeArtifactContent(content);
    if (clean.trim().length === 0) throw new A2AError('VALIDATION_ERROR', 'artifact content is empty (after control characters were removed)', { where: 'content' });
    return clean;
  }

  #checkId(id: string): void {
    if (!ArtifactId.safeParse(id).success) {
      throw new A2AError('ARTIFACT_NOT_FOUND', `"${id}" is not an artifact id: ids are "<type>-<n>" (e.g. "code-3", "implementation_plan-1"); list them with a2a_list_artifacts or \`a2a artifacts ${this.runId}\``, { where: 'id' });
    }
  }

  async #record(id: string): Promise<{ meta: ArtifactMeta; revision: number }> {
    const found = await this.#recordIfAny(id);
    if (!found) throw await this.#notFound(id);
    return found;
  }

  async #recordIfAny(id: string, complete = true): Promise<{ meta: ArtifactMeta; revision: number } | null> {
    this.#checkId(id);
    for (let round = 0; ; round++) {
      const stored = await this.#io(`read ${id}`, () => this.backend.readMeta(this.runId, id));
      const found = stored ? { meta: parseStored(ArtifactMeta, stored, 'artifact record'), revision: stored.revision } : null;
      if (found && (found.meta.id !== id || found.meta.runId !== this.runId)) throw invalidRecord(stored!.key, `it holds ${found.meta.id} of run ${found.meta.runId}, not ${id} of run ${this.runId}`);
      if (!complete || round === MAX_ROUNDS) return found;
      // a version newer than the record (its writer stopped between its two writes): completed here
      const next = await this.#io(`read ${id} v${(found?.meta.version ?? 0) + 1}`, () => this.backend.readContent(this.runId, id, (found?.meta.version ?? 0) + 1));
      const intended = next ? parseStored(ArtifactContent, next, 'artifact content').record : undefined;
      if (!intended) return found;
      const completed: ArtifactMeta = found ? { ...intended, related: [...new Set([...found.meta.related, ...intended.related])], reviewedBy: found.meta.reviewedBy } : intended;
      if ((await this.#io(`write ${id}`, () => this.backend.writeMeta(this.runId, id, completed, found?.revision ?? 0))) !== null) {
        this.#onChange?.(completed, found ? 'updated' : 'created');
      }
    }
  }

  async #all(): Promise<ArtifactMeta[]> {
    const ids = await this.#io('list artifact ids', () => this.backend.ids(this.runId));
    // an id without a record: being created, or its writer stopped before the record (completed by #recordIfAny)
    const found = await Promise.all(ids.filter((id) => ArtifactId.safeParse(id).success).map((id) => this.#recordIfAny(id)));
    return found.flatMap((r) => (r ? [r.meta] : [])).sort(byCreation);
  }

  async #notFound(id: string): Promise<A2AError> {
    const ids = await this.backend.ids(this.runId).catch(() => [] as string[]);
    const known = ids.filter((i) => ArtifactId.safeParse(i).success).sort(byId);
    const there = known.length === 0 ? 'it has none yet' : `its artifacts: ${known.slice(0, 20).join(', ')}${known.length > 20 ? ` and ${known.length - 20} more` : ''}`;
    return new A2AError('ARTIFACT_NOT_FOUND', `no artifact "${id}" in run ${this.runId}; ${there}. List them with a2a_list_artifacts or \`a2a artifacts ${this.runId}\``, { where: 'id' });
  }

  async #requireExisting(ids: string[]): Promise<void> {
    const known = new Set(await this.#io('list artifact ids', () => this.backend.ids(this.runId)));
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length > 0) {
      throw new A2AError('ARTIFACT_NOT_FOUND', `related: no artifact ${missing.join(', ')} in run ${this.runId}${known.size ? `; its artifacts: ${[...known].sort(byId).slice(0, 20).join(', ')}` : ' (it has none yet)'}`, { where: 'related' });
    }
  }

  /** Read, change, compare-and-set, again on conflict; `change` returns null when there is nothing to do. */
  async #change(id: string, change: (meta: ArtifactMeta) => ArtifactMeta | null): Promise<ArtifactMeta> {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const { meta, revision } = await this.#record(id);
      const next = change(meta);
      if (next === null) return meta;
      const valid = ArtifactMeta.parse(next);
      if ((await this.#io(`write ${id}`, () => this.backend.writeMeta(this.runId, id, valid, revision))) !== null) return valid;
    }
    throw this.#contended(`the record of ${id}`);
  }

  #contended(what: string): A2AError {
    return new A2AError('AGENT_ERROR', `gave up writing ${what} in run ${this.runId} after ${MAX_ROUNDS} conflicting writers (${this.backend.where})`);
  }

  /** Backend failures become errors that say what the store was doing, and where. */
  async #io<T>(what: string, op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (error) {
      if (error instanceof A2AError) throw error;
      throw new A2AError('AGENT_ERROR', `artifact store (${this.backend.where}): could not ${what} of run ${this.runId}: ${errorText(error)}`, { cause: error });
    }
  }
}

function invalidRecord(key: string, why: string): A2AError {
  return new A2AError('VALIDATION_ERROR', `${key} is not a valid artifact record: ${why}`, { where: key });
}

function parseStored<T>(schema: z.ZodType<T>, stored: StoredRecord, what: string): T {
  const parsed = schema.safeParse(stored.value);
  if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `${stored.key} is not a valid ${what}: ${inlineIssues(parsed.error.issues)}`, { where: stored.key });
  return parsed.data;
}

/**
 * A store per run over one backend, as the runtime's tools ask for them (a host serves many
 * runs). The stores of the last `keep` runs asked for are kept, with their caches.
 */
export function artifactStores(backend: ArtifactBackend, clock: Clock, options: { cacheSize?: number; keep?: number; onChange?: ArtifactListener } = {}): (runId: string) => ArtifactStore {
  const stores = new Map<string, ArtifactStore>();
  const keep = options.keep ?? 8;
  return (runId) => {
    let store = stores.get(runId);
    if (store) stores.delete(runId);
    else store = new ArtifactStore(backend, runId, clock, { ...(options.cacheSize === undefined ? {} : { cacheSize: options.cacheSize }), ...(options.onChange ? { onChange: options.onChange } : {}) });
    stores.set(runId, store);
    while (stores.size > keep) stores.delete(stores.keys().next().value!);
    return store;
  };
}
