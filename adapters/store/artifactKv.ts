/**
 * Artifacts in a key-value bucket (the `KeyValue` port): in process (adapters/transport/memory.ts)
 * or NATS JetStream KV (adapters/transport/nats.ts), where the run's process and every host read
 * and write the same artifacts.
 *   <runId>.meta.<id>            the record, changed by compare-and-set on its revision
 *   <runId>.content.<id>.<n>     version n's content, created only if absent (claims the version)
 * Records are keyed `meta` first so that listing a run's artifacts is a subject filter the
 * server applies (`<runId>.meta.>`), whatever number of versions they have.
 */
import type { ArtifactContent, ArtifactMeta } from '../../machines/protocol/index.js';
import type { ArtifactBackend, KeyValue, KeyValueReader, StoredRecord } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';

export const ARTIFACT_BUCKET = 'artifacts';

/** NATS refuses messages over its max_payload (1 MiB by default); a little is kept for the subject and headers. */
export const DEFAULT_MAX_VALUE_BYTES = 1024 * 1024 - 4 * 1024;

type Bucket = KeyValue | KeyValueReader;

export class KvArtifactBackend implements ArtifactBackend {
  readonly where: string;
  readonly #bucket: string;
  readonly #maxValueBytes: number;
  readonly #open: () => Promise<Bucket>;
  #opened: Promise<Bucket> | null = null;

  /**
   * `kv`: the bucket, or how to open it on first use (a run or host that never touches an
   * artifact then needs no right to the bucket, and pays no round trip at start). A
   * `KeyValueReader` (what `a2a artifacts` opens) reads only: writes are refused.
   */
  constructor(kv: Bucket | (() => Promise<Bucket>), options: { bucket?: string; maxValueBytes?: number } = {}) {
    this.#open = typeof kv === 'function' ? kv : async () => kv;
    this.#bucket = options.bucket ?? ARTIFACT_BUCKET;
    this.#maxValueBytes = options.maxValueBytes ?? DEFAULT_MAX_VALUE_BYTES;
    this.where = `KV bucket ${this.#bucket}`;
  }

  async ids(runId: string): Promise<string[]> {
    const prefix = `${runId}.meta.`;
    return (await (await this.#kv()).keys(prefix)).map((k) => k.slice(prefix.length));
  }

  async readMeta(runId: string, id: string): Promise<StoredRecord | null> {
    return this.#read(`${runId}.meta.${id}`);
  }

  async writeMeta(runId: string, id: string, meta: ArtifactMeta, revision: number): Promise<number | null> {
    return this.#update(`${runId}.meta.${id}`, meta, revision, `the record of ${id}`);
  }

  async createContent(runId: string, id: string, version: number, content: ArtifactContent): Promise<boolean> {
    return (await this.#update(`${runId}.content.${id}.${version}`, content, 0, `${id} version ${version}`)) !== null;
  }

  async readContent(runId: string, id: string, version: number): Promise<StoredRecord | null> {
    return this.#read(`${runId}.content.${id}.${version}`);
  }

  /** The bucket, opened once; a failed open is tried again next time (a server back, a right granted). */
  #kv(): Promise<Bucket> {
    this.#opened ??= this.#open().catch((error: unknown) => {
      this.#opened = null;
      throw error;
    });
    return this.#opened;
  }

  async #read(key: string): Promise<StoredRecord | null> {
    const entry = await (await this.#kv()).get(key);
    return entry ? { value: entry.value, revision: entry.revision, key: `${this.#bucket}/${key}` } : null;
  }

  async #update(key: string, value: unknown, revision: number, what: string): Promise<number | null> {
    const kv = await this.#kv();
    if (!('update' in kv)) throw new A2AError('AGENT_ERROR', `${this.where} is open read-only here: ${what} cannot be written`, { where: `${this.#bucket}/${key}` });
    const bytes = Buffer.byteLength(JSON.stringify(value));
    if (bytes > this.#maxValueBytes) throw this.#tooLarge(key, what, bytes);
    try {
      return await kv.update(key, value, revision);
    } catch (error) {
      // a server configured with a smaller max_payload than assumed here
      if (/max_payload|maximum payload/i.test(error instanceof Error ? `${error.message} ${String((error as { cause?: unknown }).cause ?? '')}` : String(error))) {
        throw this.#tooLarge(key, what, bytes, error);
      }
      throw error;
    }
  }

  #tooLarge(key: string, what: string, bytes: number, cause?: unknown): A2AError {
    return new A2AError(
      'VALIDATION_ERROR',
      `${what} is ${bytes} bytes as JSON, more than a value of ${this.where} may hold (${this.#maxValueBytes} bytes; the NATS server's max_payload): keep large outputs in files and name them in the artifact`,
      { where: `${this.#bucket}/${key}`, ...(cause === undefined ? {} : { cause }) },
    );
  }
}
