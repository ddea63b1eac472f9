/**
 * `a2a artifacts [runId] [--type t] [--show id[@version]] [--json]`: what the agents of a run
 * wrote to its artifact store (seed 003). It reads the run's files; a run deployed over NATS keeps
 * its artifacts in the KV bucket instead, read (never written) with `--nats <url>`.
 */
import { existsSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { ArtifactType, type ArtifactMeta } from '../../machines/protocol/index.js';
import type { ArtifactBackend } from '../../machines/ports.js';
import { ArtifactStore } from '../../actors/organiser/artifacts.js';
import { A2AError } from '../../actors/errors.js';
import { realClock } from '../../adapters/clock.js';
import { FileRunStore } from '../../adapters/store/file.js';
import { locateRun } from './manage.js';
import { FileArtifactBackend } from '../../adapters/store/artifactFiles.js';
import { ARTIFACT_BUCKET, KvArtifactBackend } from '../../adapters/store/artifactKv.js';
import { natsCredentials } from '../../adapters/assembly/nats.js';

export const ARTIFACT_TYPES: readonly string[] = ArtifactType.options;

export interface ArtifactsOptions {
  type?: string;
  /** `id` or `id@version`. */
  show?: string;
  json?: boolean;
  workspace?: string;
  nats?: string;
  namespace?: string;
  note?: (text: string) => void;
}

export async function artifactsCommand(runIdArg: string | undefined, options: ArtifactsOptions, io: { stdout: NodeJS.WritableStream }): Promise<number> {
  let runs = new FileRunStore(resolve(options.workspace ?? process.cwd()));
  // a run with a workspace of its own (an example's fresh repository), found by id or as the latest
  if (!options.workspace && (runIdArg ? !existsSync(runs.dir(runIdArg)) : runs.list().length === 0)) {
    try {
      runs = locateRun({}, runIdArg, true).store;
    } catch {
      // not indexed either: the messages below say what there is here
    }
  }
  const type = options.type === undefined ? undefined : ArtifactType.safeParse(options.type).data;
  if (options.type !== undefined && !type) throw new A2AError('VALIDATION_ERROR', `--type "${options.type}" is not an artifact type; types: ${ARTIFACT_TYPES.join(', ')}`, { where: '--type' });
  const runId = runIdArg ?? runs.list().at(-1)?.runId;
  if (!runId) throw new A2AError('NOT_FOUND', `no run in ${runs.root}; name one with --run <runId>`);
  if (!runIdArg) options.note?.(`run ${runId} (the latest; name another with --run <runId>)`);

  const files = new FileArtifactBackend(runs.root);
  const local = existsSync(runs.dir(runId));
  if (!local && !options.nats) {
    const there = existsSync(runs.root) ? readdirSync(runs.root, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => d.name) : [];
    throw new A2AError('NOT_FOUND', `no run "${runId}" in ${runs.root}; ${there.length ? `runs there: ${there.sort().join(', ')}` : 'there is none'} (a run deployed over NATS: add --nats <url>)`);
  }
  // the run's files first; a NATS run's artifacts are in the KV bucket
  const closers: Array<() => Promise<void>> = [];
  let backend: ArtifactBackend = files;
  if (options.nats && (!local || (await files.ids(runId)).length === 0)) {
    const { connectNats } = await import('../../adapters/transport/nats.js');
    const transport = await connectNats({ servers: options.nats, namespace: options.namespace ?? 'default', name: 'a2a-artifacts', ...natsCredentials() });
    closers.push(() => transport.close());
    backend = new KvArtifactBackend(() => transport.readKeyValue(ARTIFACT_BUCKET));
  }
  try {
    const store = new ArtifactStore(backend, runId, realClock);
    if (options.show !== undefined) return await show(store, options.show, options.json === true, io.stdout);
    const found = await store.list({ ...(type ? { type } : {}), includeArchived: true });
    if (options.json) io.stdout.write(`${JSON.stringify(found, null, 2)}\n`);
    else if (found.length === 0) io.stdout.write(`run ${runId} has no artifacts${type ? ` of type ${type}` : ''} (${backend.where})\n`);
    else io.stdout.write(table(found));
    return 0;
  } finally {
    for (const close of closers) await close();
  }
}

async function show(store: ArtifactStore, what: string, json: boolean, out: NodeJS.WritableStream): Promise<number> {
  const m = /^([^@]+)(?:@(.*))?$/.exec(what);
  const version = m?.[2] === undefined ? undefined : Number(m[2]);
  if (!m || (version !== undefined && (!Number.isInteger(version) || version < 1))) {
    throw new A2AError('VALIDATION_ERROR', `--show "${what}": give an artifact id, optionally with a version: code-2 or code-2@1`, { where: '--show' });
  }
  const content = await store.read(m[1]!, version);
  out.write(json ? `${JSON.stringify(content, null, 2)}\n` : content.content.endsWith('\n') ? content.content : `${content.content}\n`);
  return 0;
}

function table(metas: ArtifactMeta[]): string {
  const rows = [
    ['ID', 'TYPE', 'VER', 'STATUS', 'ROLE', 'BRIEF'],
    ...metas.map((a) => [a.id, a.type, String(a.version), a.archived ? `${a.status} (archived)` : a.status, a.producerRole, a.summary.brief]),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}
