/**
 * Plans: the file `a2a run` reads.
 * Part of the protocol (machines/protocol/index.ts): zod schemas, types from `z.infer`.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------
// Plans

/** Plan and task ids. No dots: a task's worker is `w-<id>` and its sub-tasks `w-<id>.<n>`. */
const Id = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_-]*$/, 'letters, digits, "_" and "-", starting with a letter or digit');

export const PlanTask = z.strictObject({
  id: Id,
  /** Agent type for the worker, e.g. `@architect` or `claude:reviewer`. Defaults to the run's agent. */
  agent: z.string().min(1).optional(),
  prompt: z.string().min(1),
  expectedOutput: z.string().optional(),
  dependsOn: z.array(Id).default([]),
  /** A model profile (or a bare model name) for this task's worker. */
  model: z.string().optional(),
  /** The kind of work (`design`, `code`, `review` …): profiles can be assigned per task type. */
  taskType: z.string().min(1).optional(),
  timeoutMs: z.number().int().positive().optional(),
});
export type PlanTask = z.infer<typeof PlanTask>;

export const Plan = z.strictObject({
  id: Id.default('plan'),
  name: z.string().optional(),
  description: z.string().optional(),
  tasks: z.array(PlanTask).min(1, 'a plan needs at least one task'),
  /** Path (relative to the plan file) of a scripted-model script, for the embedded default model. */
  script: z.string().optional(),
  /** Run configuration overrides (limits, idle timings), same shape as the config file. */
  config: z.record(z.string(), z.unknown()).optional(),
});
export type Plan = z.infer<typeof Plan>;
/** A plan as written (plan.json, or an object given to startRun): fields with defaults may be left out. */
export type PlanInput = z.input<typeof Plan>;

/** A workflow to run instead of a plan (`workflow.json`, or `a2a run --workflow sdlc "<goal>"`). */
export const WorkflowRequest = z.strictObject({
  workflow: z.literal('sdlc'),
  id: Id.default('sdlc'),
  name: z.string().optional(),
  description: z.string().optional(),
  /** What the team is to build: the organiser's user task. */
  goal: z.string().trim().min(1, 'the goal is empty: say what the team is to build').max(20_000),
  /** Path (relative to the file) of a scripted-model script, for the embedded default model. */
  script: z.string().optional(),
  /**
   * A directory (relative to the file) the run works on a fresh copy of, as a new git repository
   * in a temp dir, unless --workspace names one: an example never writes into the checkout it
   * is run from.
   */
  workspace: z.string().min(1).optional(),
  /** Run configuration overrides, same shape as the config file (roles: `workflow.roles`). */
  config: z.record(z.string(), z.unknown()).optional(),
});
export type WorkflowRequest = z.infer<typeof WorkflowRequest>;
