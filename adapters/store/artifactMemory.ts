/**
 * Artifacts in memory: the store of a run started with `store: 'memory'` (the library API). The
 * same compare-and-set contract as the file and KV backends; values are copied in and out as
 * JSON, so that nothing a caller keeps can change a stored record.
 */
import type { ArtifactContent, ArtifactMeta } from '../../machines/protocol/index.js';
import type { ArtifactBackend, StoredRecord } from '../../machines/ports.js';

interface Entry {
  meta: { text: string; revision: number } | null;
  versions: Map<number, string>;
}

export class MemoryArtifactBackend implements ArtifactBackend {
  readonly where = 'memory (this process)';
  readonly #runs = new Map<string, Map<string, Entry>>();

  #entry(runId: string, id: string, create: boolean): Entry | undefined {
    let run = this.#runs.get(runId);
    if (!run && create) this.#runs.set(runId, (run = new Map()));
    let entry = run?.get(id);
    if (!entry && create) run!.set(id, (entry = { meta: null, versions: new Map() }));
    return entry;
  }

  async ids(runId: string): Promise<string[]> {
    return [...(this.#runs.get(runId)?.keys() ?? [])];
  }

  async readMeta(runId: string, id: string): Promise<StoredRecord | null> {
    const meta = this.#entry(runId, id, false)?.meta;
    return meta ? { value: JSON.parse(meta.text) as unknown, revision: meta.revision, key: `${runId}/${id}/meta` } : null;
  }

  async writeMeta(runId: string, id: string, meta: ArtifactMeta, revision: number): Promise<number | null> {
    const entry = this.#entry(runId, id, true)!;
    if ((entry.meta?.revision ?? 0) !== revision) return null;
    entry.meta = { text: JSON.stringify(meta), revision: revision + 1 };
    return revision + 1;
  }

  async createContent(runId: string, id: string, version: number, content: ArtifactContent): Promise<boolean> {
    const entry = this.#entry(runId, id, true)!;
    if (entry.versions.has(version)) return false;
    entry.versions.set(version, JSON.stringify(content));
    return true;
  }

  async readContent(runId: string, id: string, version: number): Promise<StoredRecord | null> {
    const text = this.#entry(runId, id, false)?.versions.get(version);
    return text === undefined ? null : { value: JSON.parse(text) as unknown, revision: version, key: `${runId}/${id}/v${version}` };
  }
}
