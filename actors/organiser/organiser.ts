/**
 * The organiser (seed 003): the two effects of the SDLC workflow chart.
 *
 * - `recordStep`: a step's workers settled; what they produced becomes artifacts (the ones they
 *   wrote with a2a_write_artifact, else their result as the step's artifact type), reviews set the
 *   status of what they reviewed, test results say passed or failed. Idempotent: a phase run again
 *   after a restore finds what the worker already has and records nothing twice.
 * - `decide`: the organiser's model reads the minimal context (task, state, artifact summaries,
 *   agent statuses, to-dos, history; never an artifact's content) and answers with a
 *   `workflow_decision` tool call (and in STRUCTURE_CREATION a `work_distribution`). Both are
 *   parsed with their zod schemas; the chart checks the decision against its transitions.
 */
import { createHash } from 'node:crypto';
import { fromPromise } from 'xstate';
import { z } from 'zod';
import type { Clock, EventSink, Model } from '../../machines/ports.js';
import type { CostControl, EffectJournals } from '../session/agentLoop.js';
import { WorkDistribution, WorkflowDecision, type ModelReply, type ArtifactMeta, type ArtifactType, type ParsedAgentType, type SubTaskResult } from '../../machines/protocol/index.js';
import { reviewVerdict } from '../../machines/orchestrator.machine.js';
import type { DecideOutput, OrganiserView, RecordInput, RecordOutput } from '../../machines/sdlcWorkflow.machine.js';
import { STEP_ARTIFACT, type OrganiserArtifact, type TaskOutcome, type WorkingState } from '../../machines/sdlcSteps.js';
import { artifactEvent, parseTestCounts, type ArtifactStore } from './artifacts.js';
import { A2AError, inlineIssues } from '../errors.js';

export const ORGANISER_AGENT: ParsedAgentType = { raw: '@organiser', backend: 'default', agentName: 'organiser' };

const REVIEW_STEPS: WorkingState[] = ['PLAN_REVIEW', 'CODE_REVIEW'];

/** What a review step judges: the latest plan, or the code artifacts. */
function reviewed(state: WorkingState, all: ArtifactMeta[]): ArtifactMeta[] {
  if (state === 'PLAN_REVIEW') return all.filter((a) => a.type === 'implementation_plan').slice(-1);
  return all.filter((a) => a.type === 'code');
}

const contentOf = (r: SubTaskResult | null) => (r?.output.trim() ? r.output : `(no output: ${r?.status ?? 'no result'})`);

/** Files a worker's branch changed (git runs), besides those its artifact names. */
function changedFiles(r: SubTaskResult | null): string[] {
  return r?.diffStats?.files ?? [];
}

export function createRecordStep(o: { artifacts: ((runId: string) => ArtifactStore) | null; clock: Clock; events?: EventSink }) {
  // A phase stopped (PAUSE) and entered again (RESUME) invokes the recorder again while the first
  // one may still be writing: the same step's recording is shared, never run twice at once.
  const inFlight = new Map<string, Promise<RecordOutput>>();
  return fromPromise<RecordOutput, RecordInput>(({ input }) => {
    const key = `${input.runId}:${input.state}:${input.round}`;
    let running = inFlight.get(key);
    if (!running) {
      running = record(o, input).finally(() => inFlight.delete(key));
      inFlight.set(key, running);
    }
    return running;
  });
}

async function record(o: { artifacts: ((runId: string) => ArtifactStore) | null; clock: Clock; events?: EventSink }, input: RecordInput): Promise<RecordOutput> {
  {
    if (!o.artifacts) throw new A2AError('CONFIGURATION_INVALID', 'this run has no artifact store: the workflow needs one (a2a run gives every run one)');
    const store = o.artifacts(input.runId);
    const type: ArtifactType = STEP_ARTIFACT[input.state];
    const before = await store.list({ includeArchived: true });
    let created = 0;
    const mine: ArtifactMeta[] = [];
    /** Each recorded artifact's outcome (same order as `mine`). */
    const from: TaskOutcome[] = [];
    const files = new Set<string>();
    for (const outcome of input.outcomes) {
      if (outcome.state !== 'succeeded') continue;
      // what the worker wrote itself (a2a_write_artifact), or, recorded earlier, its result
      const written = (await store.list({ producer: outcome.workerId, includeArchived: true })).filter((a) => a.type === type);
      let artifact = written.at(-1);
      // found, not written now: announced again (the log keeps the first; a run killed before
      // its log took the first announcement gets it now)
      if (artifact) o.events?.emit(artifactEvent(artifact, artifact.version === 1 ? 'created' : 'updated'));
      if (!artifact) {
        const related = before.filter((a) => a.type === 'implementation_plan' || a.type === 'pseudocode').slice(-2).map((a) => a.id);
        // a revision continues the artifact of the files it changed (else the latest of its type)
        const changed = changedFiles(outcome.result);
        const ofType = before.filter((a) => a.type === type);
        const previous = ofType.filter((a) => a.summary.filesAffected.some((f) => changed.includes(f))).at(-1) ?? ofType.at(-1);
        const revising = (input.state === 'PLAN_REVISION' || input.state === 'CODE_FIXING') && previous;
        artifact = revising
          ? await store.revise(previous.id, { content: contentOf(outcome.result), producer: outcome.workerId, producerRole: outcome.role, files: changedFiles(outcome.result).length ? changedFiles(outcome.result) : previous.summary.filesAffected })
          : await store.create({ type, content: contentOf(outcome.result), producer: outcome.workerId, producerRole: outcome.role, related, files: changedFiles(outcome.result) });
      }
      created++;
      mine.push(artifact);
      from.push(outcome);
      for (const f of [...artifact.summary.filesAffected, ...changedFiles(outcome.result)]) files.add(f);
    }

    let verdict: RecordOutput['verdict'] = null;
    let issuesFound = 0;
    if (REVIEW_STEPS.includes(input.state)) {
      // every reviewer must approve (a reviewer that failed approves nothing)
      const verdicts = from.map((t) => (t.result ? reviewVerdict(t.result).approved : false));
      const approved = verdicts.length === input.outcomes.length && verdicts.length > 0 && verdicts.every(Boolean);
      verdict = approved ? 'approved' : 'needs_revision';
      for (const [i, review] of mine.entries()) {
        const ok = verdicts[i] ?? false;
        if (review.status !== (ok ? 'approved' : 'needs_revision')) await store.setStatus(review.id, ok ? 'approved' : 'needs_revision');
        issuesFound += review.summary.metrics?.issuesFound ?? (ok ? 0 : 1);
      }
      for (const target of reviewed(input.state, before)) {
        for (const review of mine) await store.addReviewer(target.id, review.producer);
        await store.setStatus(target.id, approved ? 'approved' : 'needs_revision');
      }
    }
    if (input.state === 'TESTING') {
      // the recorder reads the report itself (the organiser only ever sees its summary)
      const counts = await Promise.all(mine.map(async (a) => parseTestCounts((await store.read(a.id)).content) ?? { passed: 0, failed: a.summary.metrics?.testsFailed ?? 0 }));
      const failed = counts.reduce((n, c) => n + (c.failed ?? 0), 0);
      const passed = counts.reduce((n, c) => n + (c.passed ?? 0), 0);
      verdict = failed === 0 && passed > 0 ? 'passed' : 'failed';
      issuesFound = failed;
      for (const a of mine) await store.setStatus(a.id, verdict === 'passed' ? 'approved' : 'rejected');
    }
    const code = (await store.list({ type: 'code', includeArchived: true })).reduce((n, a) => n + (a.summary.metrics?.linesOfCode ?? 0), 0);
    // what nobody touched for a while leaves the organiser's context (seed 003: archiveAfterHours)
    if (input.archiveAfterMs !== undefined) await store.archive(input.archiveAfterMs);
    return {
      artifacts: await store.organiserView(100),
      created,
      verdict,
      files: [...files].sort(),
      linesOfCode: code,
      issuesFound,
      at: o.clock.now(),
    };
  }
}

const ORGANISER_SYSTEM = [
  'You are the organiser of a software team working through an SDLC workflow: planning, plan review, structure, implementation, code review, fixing, documentation, testing.',
  'You never see the content of the work, only summaries of artifacts, and you decide what happens next.',
  'Answer with exactly one call of the workflow_decision tool: "approve" moves on, "request_revision" sends the work back (plan revision, code fixing),',
  '"transition" names nextState (one of the allowed states), "wait" waits. Give your reasoning in one or two sentences.',
  'Approve a review step only when every review approved; approve testing only when the tests passed.',
  'In STRUCTURE_CREATION also call work_distribution: split the files between the primary coder and the secondary coders.',
].join('\n');

const DECISION_TOOL = {
  name: 'workflow_decision',
  description: 'The next step of the workflow.',
  parameters: withoutSchemaKey(z.toJSONSchema(WorkflowDecision, { io: 'input' }) as Record<string, unknown>),
};
const DISTRIBUTION_TOOL = {
  name: 'work_distribution',
  description: 'Which files the primary coder implements and which the secondary coders implement in parallel.',
  parameters: withoutSchemaKey(z.toJSONSchema(WorkDistribution, { io: 'input' }) as Record<string, unknown>),
};

function withoutSchemaKey(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = schema;
  return rest;
}

/**
 * The organiser's prompt. Its first line names the state and this step's artifacts with their
 * statuses, so that a person (or a scripted model) can tell the situation at a glance.
 */
/** Bounds of the organiser's prompt: besides the seed's counts, a size per part (a verbose worker cannot flood it). */
const PROMPT = { goal: 4_000, detailed: 10, brief: 200, statuses: 50, files: 100 } as const;
const clipText = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text);

export function organiserPrompt(view: OrganiserView): string {
  const stepArtifacts = view.artifacts.filter((a) => view.stepArtifacts.includes(a.id));
  // the newest artifacts in full summary; older ones by their brief alone, shortened
  const detailedFrom = Math.max(0, view.artifacts.length - PROMPT.detailed);
  const artifactLine = (a: OrganiserArtifact, i: number) =>
    i >= detailedFrom
      ? `- ${a.id} v${a.version} ${a.type} [${a.status}] by ${a.producerRole}: ${a.brief}${a.keyPoints.length ? ` (${a.keyPoints.join('; ')})` : ''}${a.metrics ? ` ${JSON.stringify(a.metrics)}` : ''}`
      : `- ${a.id} v${a.version} ${a.type} [${a.status}] by ${a.producerRole}: ${clipText(a.brief, PROMPT.brief)}`;
  const files = view.distribute?.files ?? [];
  const headline = `Decide the next step of the workflow in state ${view.workflowState} (round ${view.round}) after: ${stepArtifacts.map((a) => `${a.id} v${a.version} ${a.type} ${a.status}`).join(', ') || 'nothing new'}.`;
  const lines = [
    headline,
    '',
    `User task: ${clipText(view.userTask, PROMPT.goal)}`,
    `Allowed next states: ${view.allowed.join(', ')}`,
    `Rounds: plan revisions ${view.rounds.planRevisions} of ${view.rounds.maxPlanRevisions}, code fixing ${view.rounds.fixRounds} of ${view.rounds.maxFixRounds}`,
    `History: ${view.workflowHistory.join(' → ')}`,
    '',
    'Artifacts (summaries):',
    ...view.artifacts.map(artifactLine),
    '',
    'Agents:',
    ...view.agentStatuses.slice(-PROMPT.statuses).map((s) => `- ${s.role} (${s.taskId}): ${s.status}`),
    'To-do:',
    ...view.todoList.map((t) => `- ${t.id}: ${t.description} [${t.status}]`),
  ];
  if (view.distribute) {
    const named = files.slice(0, PROMPT.files).join(', ') + (files.length > PROMPT.files ? ` and ${files.length - PROMPT.files} more` : '');
    lines.push('', `Files to distribute (${view.distribute.secondaryCoders} secondary coders at most): ${named || '(none listed)'}`);
  }
  if (view.refused) lines.push('', `Your previous answer could not be used: ${view.refused}`);
  return lines.join('\n');
}

const estimateTokens = (text: string) => Math.ceil(text.length / 4);

function parseCall<T>(schema: z.ZodType<T>, name: string, args: unknown): T {
  const parsed = schema.safeParse(args);
  if (!parsed.success) throw new A2AError('VALIDATION_ERROR', `the organiser's ${name} is invalid: ${inlineIssues(parsed.error.issues)}`, { where: name });
  return parsed.data;
}

/**
 * The organiser's call in flight for each run, by its prompt. A pause stops the `deciding` phase
 * (and its invoke) while the call is under way: aborting it would throw away a reply the provider
 * bills, and the resumed phase would pay for the same question again. So the call is not tied to
 * the invoke: it goes on through a pause, and the invoke of the resumed phase, asking the same
 * question (the same prompt), takes its reply. A call whose question is no longer asked (the run
 * moved on) is aborted when the next one starts.
 */
interface Asked {
  content: string;
  reply: Promise<ModelReply>;
  controller: AbortController;
}

/** The organiser's calls in the effect journal: its "session", and its steps keyed by the question. */
const ORGANISER_SESSION = 'organiser';
const questionKey = (content: string, tools: unknown) => `o${createHash('sha256').update(content).update(JSON.stringify(tools)).digest('hex').slice(0, 24)}`;

export function createDecide(o: { model: Model | null; modelName?: string; clock: Clock; events?: EventSink; costs?: CostControl; effects?: EffectJournals }) {
  const asked = new Map<string, Asked>();
  const ask = (runId: string, content: string, call: (signal: AbortSignal) => Promise<ModelReply>): Asked => {
    const current = asked.get(runId);
    if (current?.content === content) return current;
    current?.controller.abort(new A2AError('WORKFLOW_STOPPED', 'the organiser was asked another question'));
    const controller = new AbortController();
    const entry: Asked = { content, reply: call(controller.signal), controller };
    entry.reply.catch(() => undefined);
    asked.set(runId, entry);
    return entry;
  };
  return fromPromise<DecideOutput, OrganiserView & { runId: string }>(async ({ input, signal }) => {
    if (!o.model) throw new A2AError('CONFIGURATION_INVALID', 'no organiser model is configured (workflow.organiser.profile, or the default profile)');
    const model = o.model;
    const content = organiserPrompt(input);
    const tools = [DECISION_TOOL, ...(input.distribute ? [DISTRIBUTION_TOOL] : [])];
    // priced and counted like every agent's call (the run's usage and cost include the organiser), once, when it returns
    const priceAndTell = (reply: ModelReply) => {
      const costUsd = o.costs?.ledger.record({ sessionId: 'organiser', workerId: `${input.runId}.organiser`, model: o.modelName ?? model.id, usage: reply.usage });
      o.events?.emit({
        type: 'model.called',
        subTaskId: 'organiser',
        agentType: ORGANISER_AGENT.raw,
        data: {
          turn: input.round,
          text: reply.text.slice(0, 500),
          toolCalls: reply.toolCalls.map((c) => c.name),
          inputTokens: reply.usage.inputTokens,
          outputTokens: reply.usage.outputTokens,
          ...(reply.usage.cacheReadTokens ? { cacheReadTokens: reply.usage.cacheReadTokens } : {}),
          ...(reply.usage.cacheWriteTokens ? { cacheWriteTokens: reply.usage.cacheWriteTokens } : {}),
          ...(costUsd !== undefined ? { costUsd } : {}),
        },
      });
    };
    // a reply an earlier life of the run received for this very question (killed before its
    // checkpoint): given back from the effect journal, not asked or paid again
    const journal = o.effects?.journal(input.runId) ?? null;
    const key = journal ? questionKey(content, tools) : '';
    const recorded = journal?.take(ORGANISER_SESSION, key)?.reply?.out.reply;
    const entry: Pick<Asked, 'reply'> = recorded
      ? { reply: Promise.resolve(recorded) }
      : ask(input.runId, content, (callSignal) =>
          model.call({ system: ORGANISER_SYSTEM, messages: [{ role: 'user', content }], tools, agentType: ORGANISER_AGENT, sessionId: 'organiser', depth: 0 }, { signal: callSignal }).then(async (reply) => {
            priceAndTell(reply);
            await journal?.write({ t: 'reply', s: ORGANISER_SESSION, k: key, agent: ORGANISER_SESSION, out: { injected: [], reply, consumedInbox: 0, consumedUpTo: null } });
            return reply;
          }),
        );
    // the invoke stopped (a pause, the run's end): the call goes on for the phase that asks again
    const reply = await new Promise<ModelReply>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      entry.reply.then(resolve, reject);
    });
    if (asked.get(input.runId) === entry) asked.delete(input.runId);
    // arguments the adapter could not read: say so, rather than "a field is missing"
    const unreadable = reply.toolCalls.find((c) => c.argumentsError !== undefined);
    if (unreadable) throw new A2AError('VALIDATION_ERROR', `the organiser's ${unreadable.name} call could not be read: ${unreadable.argumentsError}`, { where: unreadable.name });
    const decisionCall = reply.toolCalls.find((c) => c.name === 'workflow_decision');
    if (!decisionCall) {
      throw new A2AError('VALIDATION_ERROR', `the organiser answered without a workflow_decision call${reply.text ? ` ("${reply.text.slice(0, 200)}")` : ''}`, { where: 'workflow_decision' });
    }
    const decision = parseCall(WorkflowDecision, 'workflow_decision', decisionCall.arguments);
    const distributionCall = input.distribute ? reply.toolCalls.find((c) => c.name === 'work_distribution') : undefined;
    const distribution = distributionCall ? parseCall(WorkDistribution, 'work_distribution', distributionCall.arguments) : undefined;
    return {
      decision,
      ...(distribution ? { distribution } : {}),
      contextTokens: estimateTokens(ORGANISER_SYSTEM) + estimateTokens(content) + estimateTokens(JSON.stringify(tools)),
      at: o.clock.now(),
    };
  });
}
