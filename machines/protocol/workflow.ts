/**
 * Seed 003: the organiser's workflow and its artifact store.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';
import { RunId } from './common.js';

// ---------------------------------------------------------------------------------------------
// Seed 003: the organiser's workflow and its artifact store

/** The SDLC workflow's states, as the seed names them (the chart: machines/sdlcWorkflow.machine.ts). */
export const WorkflowState = z.enum([
  'IDLE',
  'PLANNING',
  'PLAN_REVIEW',
  'PLAN_REVISION',
  'STRUCTURE_CREATION',
  'CODE_IMPLEMENTATION',
  'CODE_REVIEW',
  'CODE_FIXING',
  'DOCUMENTATION',
  'TESTING',
  'COMPLETED',
  'PAUSED',
  'ERROR',
]);
export type WorkflowState = z.infer<typeof WorkflowState>;

/** The states in which agents work (steps); IDLE, COMPLETED, PAUSED and ERROR are not steps. */
export const WorkingState = WorkflowState.exclude(['IDLE', 'COMPLETED', 'PAUSED', 'ERROR']);
export type WorkingState = z.infer<typeof WorkingState>;

/** What the organiser decides after a step (seed 003 `WorkflowDecision`); checked against the chart. */
export const WorkflowDecision = z.strictObject({
  action: z.enum(['transition', 'approve', 'request_revision', 'wait']),
  /** Only with `transition`: the state to go to (one the current state allows). */
  nextState: WorkflowState.optional(),
  reasoning: z.string().trim().min(1).max(4_000),
});
export type WorkflowDecision = z.infer<typeof WorkflowDecision>;

/** How the organiser splits the files of the structure between the coders (seed 003 `WorkDistribution`). */
export const WorkDistribution = z.strictObject({
  /** Files the primary coder implements. */
  primary: z.array(z.string().min(1).max(500)).max(200),
  /** Files for the secondary coders, implemented in parallel (one group per coder). */
  secondary: z.array(z.string().min(1).max(500)).max(200),
  reasoning: z.string().max(4_000).optional(),
});
export type WorkDistribution = z.infer<typeof WorkDistribution>;

/** What a finished workflow reports (seed 003 `CompletionSummary`). */
export const CompletionSummary = z.strictObject({
  totalTimeMs: z.number().int().min(0),
  stepsCompleted: z.number().int().min(0),
  artifactsCreated: z.number().int().min(0),
  filesModified: z.array(z.string()),
  linesOfCode: z.number().int().min(0),
  issuesFound: z.number().int().min(0),
  issuesFixed: z.number().int().min(0),
});
export type CompletionSummary = z.infer<typeof CompletionSummary>;

/** The seed's artifact types. */
export const ArtifactType = z.enum(['user_task', 'implementation_plan', 'pseudocode', 'code', 'review_report', 'documentation', 'test_results', 'error_report']);
export type ArtifactType = z.infer<typeof ArtifactType>;

export const ArtifactStatus = z.enum(['in_progress', 'completed', 'needs_revision', 'approved', 'rejected']);
export type ArtifactStatus = z.infer<typeof ArtifactStatus>;

/** `<type>-<n>`, numbered per run: `implementation_plan-1`, `code-3`. */
export const ArtifactId = z
  .string()
  .max(64)
  .regex(/^(user_task|implementation_plan|pseudocode|code|review_report|documentation|test_results|error_report)-[1-9][0-9]*$/, 'an artifact id: "<type>-<n>", e.g. "code-3"');
export type ArtifactId = z.infer<typeof ArtifactId>;

/** What the organiser sees of an artifact instead of its content (seed 003 `ArtifactSummary`). */
export const ArtifactSummary = z.strictObject({
  /** One or two sentences. */
  brief: z.string().max(400),
  keyPoints: z.array(z.string().max(300)).max(5),
  filesAffected: z.array(z.string().max(500)).max(200),
  metrics: z
    .strictObject({
      linesOfCode: z.number().int().min(0).optional(),
      testsCount: z.number().int().min(0).optional(),
      testsFailed: z.number().int().min(0).optional(),
      issuesFound: z.number().int().min(0).optional(),
    })
    .optional(),
});
export type ArtifactSummary = z.infer<typeof ArtifactSummary>;

/** An artifact's record (its latest version); the content of every version is stored apart. */
export const ArtifactMeta = z.strictObject({
  id: ArtifactId,
  runId: RunId,
  type: ArtifactType,
  status: ArtifactStatus,
  /** 1, 2, …: a revision is a new version, older ones stay readable. */
  version: z.number().int().min(1),
  /** The session that wrote the latest version (or "organiser", "user"). */
  producer: z.string().min(1).max(200),
  /** The workflow role of the producer (architect, sceptic …, or a custom role). */
  producerRole: z.string().min(1).max(64),
  summary: ArtifactSummary,
  /** Artifacts this one builds on (the plan a pseudocode follows, the code a review judges). */
  related: z.array(ArtifactId).max(100),
  reviewedBy: z.array(z.string().max(200)).max(100),
  /** Characters of the latest version's content. */
  size: z.number().int().min(0),
  createdAt: z.number(),
  modifiedAt: z.number(),
  /** Archived artifacts leave the organiser's context; their content stays readable. */
  archived: z.boolean(),
});
export type ArtifactMeta = z.infer<typeof ArtifactMeta>;

/** One stored version's content (KV value or file), with the version it is. */
export const ArtifactContent = z.strictObject({
  id: ArtifactId,
  version: z.number().int().min(1),
  content: z.string(),
  producer: z.string().min(1).max(200),
  at: z.number(),
  /**
   * The artifact's record as this version makes it, written with the content in the same (atomic)
   * write: a writer stopped before the record's own write leaves no invisible id and no orphan
   * version, since the next reader completes the record from it.
   */
  record: ArtifactMeta.optional(),
});
export type ArtifactContent = z.infer<typeof ArtifactContent>;
