/**
 * The artifact tools (seed 003): agents write their plans, code, reviews and test results to the
 * run's artifact store, and read each other's, instead of passing whole contents through the
 * organiser. The producer is the calling session; its role is its workflow role when it has one,
 * else its agent's name.
 */
import { z } from 'zod';
import { ArtifactStatus, ArtifactType, type ArtifactMeta, type SessionSpec } from '../../machines/protocol/index.js';
import type { ArtifactStore } from '../organiser/artifacts.js';
import { A2AError } from '../errors.js';
import type { ToolContext, ToolDefinition } from './types.js';

function storeOf(ctx: ToolContext): ArtifactStore {
  const runId = ctx.spec.correlation.runId;
  if (!ctx.artifacts) {
    throw new A2AError('CONFIGURATION_INVALID', `this run has no artifact store: artifacts of run ${runId} cannot be written or read here; report your result with a2a_subtask_complete instead`);
  }
  return ctx.artifacts(runId);
}

/** The role the organiser knows the session by (a workflow role, when the session has one). */
function roleOf(spec: SessionSpec): string {
  const workflowRole = (spec as SessionSpec & { workflowRole?: unknown }).workflowRole;
  return (typeof workflowRole === 'string' && workflowRole.length > 0 ? workflowRole : spec.agent.agentName).slice(0, 64);
}

/**
 * The shape of an id, checked here so that a malformed one is refused naming its argument; the
 * store checks the type names. (Not the protocol's full pattern: every tool schema is sent to the
 * model on every call, and that pattern, repeated per id argument, costs tokens on each.)
 */
const Id = z.string().max(64).regex(/^[a-z_]+-[1-9][0-9]*$/, 'an artifact id: "<type>-<n>", e.g. "code-3"');

const WriteArgs = z.object({
  type: ArtifactType,
  content: z.string().min(1).describe('The full content (Markdown, code, test output); the organiser sees a summary.'),
  files: z.array(z.string().min(1).max(500)).max(200).optional().describe('Files it concerns, besides "file: <path>" lines of the content.'),
  related: z.array(Id).max(100).optional().describe('Ids it builds on: the plan it follows, the code a review judges.'),
  status: ArtifactStatus.optional().describe('Default completed.'),
  reviseId: Id.optional().describe('Write a new version of this artifact (same type).'),
});
const writeArtifact: ToolDefinition<typeof WriteArgs> = {
  name: 'a2a_write_artifact',
  description: 'Store a work product (plan, structure, code, review, docs, test results, error report) in the run\'s artifact store, or a new version of one. Returns its id and version.',
  parameters: WriteArgs,
  execute: async (args, ctx) => {
    const store = storeOf(ctx);
    const who = { producer: ctx.spec.id, producerRole: roleOf(ctx.spec) };
    let meta: ArtifactMeta;
    if (args.reviseId) {
      const current = await store.get(args.reviseId);
      if (current.type !== args.type) {
        throw new A2AError('VALIDATION_ERROR', `type: ${args.reviseId} is a ${current.type} artifact; a revision keeps its type (give type "${current.type}", or leave out reviseId for a new artifact)`, { where: 'type' });
      }
      meta = await store.revise(args.reviseId, { content: args.content, ...who, status: args.status, files: args.files, related: args.related });
    } else {
      meta = await store.create({ type: args.type, content: args.content, ...who, status: args.status, related: args.related, files: args.files });
    }
    return { isError: false, content: JSON.stringify({ id: meta.id, version: meta.version, status: meta.status, brief: meta.summary.brief }) };
  },
};

const ReadArgs = z.object({
  id: Id,
  version: z.number().int().min(1).optional().describe('Default the latest.'),
});
const readArtifact: ToolDefinition<typeof ReadArgs> = {
  name: 'a2a_read_artifact',
  idempotent: true,
  description: 'Read the full content of an artifact (the latest version, or the one given).',
  parameters: ReadArgs,
  execute: async (args, ctx) => {
    const store = storeOf(ctx);
    const meta = await store.get(args.id);
    const content = await store.read(args.id, args.version ?? meta.version);
    const files = meta.summary.filesAffected;
    const head = `${meta.id} version ${content.version} of ${meta.version} (${meta.type}, ${meta.status}${meta.archived ? ', archived' : ''}) by ${content.producer}${files.length ? `; files: ${files.join(', ')}` : ''}`;
    return { isError: false, content: `${head}\n\n${content.content}` };
  },
};

const ListArgs = z.object({
  type: ArtifactType.optional(),
  producer: z.string().min(1).optional().describe('A session id.'),
  producerRole: z.string().min(1).optional(),
  status: ArtifactStatus.optional(),
});
const listArtifacts: ToolDefinition<typeof ListArgs> = {
  name: 'a2a_list_artifacts',
  idempotent: true,
  description: 'List the run\'s artifacts (id, type, version, status, producer role, brief), oldest first.',
  parameters: ListArgs,
  execute: async (args, ctx) => {
    const found = await storeOf(ctx).list(args);
    return {
      isError: false,
      content: JSON.stringify(found.map((m) => ({ id: m.id, type: m.type, version: m.version, status: m.status, producerRole: m.producerRole, brief: m.summary.brief }))),
    };
  },
};

export const artifactTools: ReadonlyArray<ToolDefinition<z.ZodType>> = [writeArtifact, readArtifact, listArtifacts] as unknown as ReadonlyArray<ToolDefinition<z.ZodType>>;
