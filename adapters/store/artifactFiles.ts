/**
 * Artifacts as files, beside the run's other files (adapters/store/file.ts):
 *   <workspace>/.a2a/runs/<runId>/artifacts/<id>/meta.<revision>.json   the record; the highest revision is current
 *   <workspace>/.a2a/runs/<runId>/artifacts/<id>/v<n>.json              version n's content, written once
 *
 * Every file is created complete and exclusively: written to a temp file, then hard-linked to its
 * name, which fails when the name exists. That one operation is both the atomic write (a reader
 * never sees half a record) and the compare-and-set of several processes on one disk: creating
 * `meta.<r+1>.json` succeeds for one writer at revision r only, and `v<n>.json` claims version n
 * (or, for n = 1, the id). No lock file, so nothing is left locked by a killed process.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readdir, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactId, RunId, type ArtifactContent, type ArtifactMeta } from '../../machines/protocol/index.js';
import type { ArtifactBackend, StoredRecord } from '../../machines/ports.js';
import { A2AError } from '../../actors/errors.js';
import { stateJson } from '../../actors/config/secrets.js';

const META = /^meta\.([1-9][0-9]*)\.json$/;
const code = (error: unknown) => (error as NodeJS.ErrnoException | null)?.code;

export class FileArtifactBackend implements ArtifactBackend {
  readonly where: string;

  /** `runsRoot`: `<workspace>/.a2a/runs` (FileRunStore's `root`). */
  constructor(private readonly runsRoot: string) {
    this.where = `files under ${runsRoot}`;
  }

  /** The run's artifact directory. */
  dir(runId: string): string {
    if (!RunId.safeParse(runId).success) throw new A2AError('VALIDATION_ERROR', `invalid run id "${runId}": use letters, digits, "_" and "-"`, { where: 'runId' });
    return join(this.runsRoot, runId, 'artifacts');
  }

  #artifactDir(runId: string, id: string): string {
    // ids become path segments: only `<type>-<n>` ever does
    if (!ArtifactId.safeParse(id).success) throw new A2AError('ARTIFACT_NOT_FOUND', `"${id}" is not an artifact id ("<type>-<n>", e.g. "code-3")`, { where: 'id' });
    return join(this.dir(runId), id);
  }

  async ids(runId: string): Promise<string[]> {
    const names = await readdir(this.dir(runId)).catch((error: unknown) => (code(error) === 'ENOENT' ? [] : Promise.reject(error)));
    return names.filter((n) => ArtifactId.safeParse(n).success);
  }

  async readMeta(runId: string, id: string): Promise<StoredRecord | null> {
    const dir = this.#artifactDir(runId, id);
    const revision = await currentRevision(dir);
    return revision === 0 ? null : readRecord(join(dir, `meta.${revision}.json`), revision);
  }

  async writeMeta(runId: string, id: string, meta: ArtifactMeta, revision: number): Promise<number | null> {
    const dir = this.#artifactDir(runId, id);
    await mkdir(dir, { recursive: true });
    if ((await currentRevision(dir)) !== revision) return null;
    return (await createExclusive(dir, `meta.${revision + 1}.json`, meta)) ? revision + 1 : null;
  }

  async createContent(runId: string, id: string, version: number, content: ArtifactContent): Promise<boolean> {
    const dir = this.#artifactDir(runId, id);
    await mkdir(dir, { recursive: true });
    return createExclusive(dir, `v${version}.json`, content);
  }

  async readContent(runId: string, id: string, version: number): Promise<StoredRecord | null> {
    return readRecord(join(this.#artifactDir(runId, id), `v${version}.json`), version);
  }
}

async function currentRevision(dir: string): Promise<number> {
  const names = await readdir(dir).catch((error: unknown) => (code(error) === 'ENOENT' ? [] : Promise.reject(error)));
  return names.reduce((max, n) => Math.max(max, Number(META.exec(n)?.[1] ?? 0)), 0);
}

async function readRecord(file: string, revision: number): Promise<StoredRecord | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if (code(error) === 'ENOENT') return null;
    throw error;
  }
  try {
    return { value: JSON.parse(text) as unknown, revision, key: file };
  } catch (error) {
    throw new A2AError('VALIDATION_ERROR', `${file} is not a valid artifact record: it is not JSON (${(error as Error).message})`, { where: file, cause: error });
  }
}

/** Creates `dir/name` with the JSON of `value`, complete, unless it exists (then false). */
async function createExclusive(dir: string, name: string, value: unknown): Promise<boolean> {
  const file = join(dir, name);
  const text = `${stateJson(value)}\n`;
  const tmp = join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  await writeFile(tmp, text, { flag: 'wx' });
  try {
    await link(tmp, file);
    return true;
  } catch (error) {
    if (code(error) === 'EEXIST') return false;
    // a file system without hard links: exclusive create, written in place
    if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV'].includes(code(error) ?? '')) throw error;
    try {
      await writeFile(file, text, { flag: 'wx' });
      return true;
    } catch (fallback) {
      if (code(fallback) === 'EEXIST') return false;
      throw fallback;
    }
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}
