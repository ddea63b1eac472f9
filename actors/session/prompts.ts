/**
 * What the model reads: the system prompt (the agent's own prompt, how it works in the team, and
 * what the other agents are good at), the task message, and the synthetic messages that wake a
 * parent with its children's results, inquiries and answers.
 */
import type { InboxItem } from '../../machines/ports.js';
import type { SessionSpec, SubTaskResult, TaskUpdate } from '../../machines/protocol/index.js';
import type { AgentDefinition, AgentRegistry } from '../config/registry.js';
import { MAILBOX_LIMIT } from './family.js';

/** Results longer than this are cut in the injected message; the full text stays queryable. */
const MAX_INJECTED_OUTPUT = 20_000;

export const IDLE_INQUIRY_TEXT = [
  'You appear to be idle. Respond now with one of the following:',
  '1. If you have completed your task: call a2a_subtask_complete with your result.',
  '2. If you are blocked and need information: say exactly what you need.',
  '3. If you encountered an error: describe what went wrong.',
  '4. If you are still working: say what you are doing now.',
  'Do not remain silent: whoever gave you this task is waiting for your status.',
].join('\n');

function teamSection(registry: AgentRegistry, self: string): string {
  const lines = registry
    .list()
    .filter((a) => a.capability.id !== self)
    .map((a) => {
      const c = a.capability;
      const strengths = c.strengths.length ? ` Good at: ${c.strengths.join('; ')}.` : '';
      const weaknesses = c.weaknesses.length ? ` Not for: ${c.weaknesses.join('; ')}.` : '';
      return `- @${c.id}: ${c.description}${strengths}${weaknesses}`;
    });
  return `## The other agents\n${lines.join('\n')}`;
}

function protocolSection(definition: AgentDefinition, spec: SessionSpec, tools: string[]): string {
  const has = (t: string) => tools.includes(t);
  const lines: string[] = [];
  if (spec.role === 'worker') {
    lines.push(`You are @${definition.capability.id}, a worker deployed by the orchestrator for plan task "${spec.correlation.taskId}".`);
  } else {
    lines.push(
      `You are @${definition.capability.id}, a sub-task at depth ${spec.depth} spawned by ${spec.owner.ownerId}. Your work is advisory: return what your parent expects, it decides what to do with it.`,
    );
  }
  lines.push(
    'When you are done, call a2a_subtask_complete with your result (status success, partial or failed). A reply without any tool call does not finish your task: it leaves you idle, and you will be asked why.',
  );
  if (has('a2a_spawn_subtask') || has('a2a_spawn_parallel_subtasks')) {
    lines.push(
      `You can delegate parts of the work to other agents: a2a_spawn_subtask waits for one result; a2a_spawn_parallel_subtasks returns the ids at once and each result arrives as an update before your next step (or wait with a2a_await_subtasks). Sub-tasks may nest down to depth ${spec.maxDepth}; you are at depth ${spec.depth}. Choose the agent type that fits each part.`,
    );
  }
  if (has('a2a_notify_orchestrator')) {
    lines.push(
      `Use a2a_notify_orchestrator to report status, ask a question, or report an error to ${spec.owner.ownerType === 'orchestrator' ? 'the orchestrator' : `your parent ${spec.owner.ownerId}`}; answers arrive as messages.`,
    );
  }
  if (has('a2a_write_artifact')) {
    lines.push(
      'Work products others build on (a plan, the file structure, code, a review, documentation, test results) go to the run\'s artifact store with a2a_write_artifact; a2a_list_artifacts and a2a_read_artifact show what the others wrote (ids like "code-2"). Name artifact ids in your result instead of repeating their content.',
    );
  }
  return `## How you work in this team\n${lines.map((l) => `- ${l}`).join('\n')}`;
}

/** System prompts depend only on agent, role, depth, owner and (a worker's) task: cache them (thousands of children share one). */
export class SystemPrompts {
  readonly #cache = new Map<string, string>();
  constructor(private readonly registry: AgentRegistry) {}

  for(definition: AgentDefinition, spec: SessionSpec, tools: string[]): string {
    // a worker's prompt names its plan task
    const task = spec.role === 'worker' ? spec.correlation.taskId : '';
    const key = `${definition.capability.id}|${spec.role}|${spec.depth}|${spec.maxDepth}|${spec.owner.ownerType}|${spec.owner.ownerId}|${task}|${tools.join(',')}`;
    let prompt = this.#cache.get(key);
    if (prompt === undefined) {
      prompt = [definition.systemPrompt, protocolSection(definition, spec, tools), teamSection(this.registry, definition.capability.id)]
        .filter(Boolean)
        .join('\n\n');
      if (this.#cache.size > 1000) this.#cache.clear();
      this.#cache.set(key, prompt);
    }
    return prompt;
  }
}

export function taskMessage(spec: SessionSpec): string {
  const parts = [spec.prompt];
  if (spec.expectedOutput) parts.push(`Expected output: ${spec.expectedOutput}`);
  if (spec.targetFiles?.length) parts.push(`Files you may change: ${spec.targetFiles.join(', ')}`);
  return parts.join('\n\n');
}

function clip(text: string): string {
  return text.length > MAX_INJECTED_OUTPUT
    ? `${text.slice(0, MAX_INJECTED_OUTPUT)}\n…(${text.length - MAX_INJECTED_OUTPUT} more characters; call a2a_await_subtasks with this id for the full result)`
    : text;
}

function describeDiff(r: SubTaskResult): string {
  const d = r.diffStats;
  if (!d) return '';
  return `\n  Changed: ${d.changedFiles} file(s), +${d.insertions} −${d.deletions}${d.files?.length ? ` (${d.files.slice(0, 10).join(', ')}${d.files.length > 10 ? ', …' : ''})` : ''}`;
}

function describeUpdate(u: TaskUpdate): string {
  const who = `Sub-task ${u.subTaskId} (${u.agentType})`;
  switch (u.type) {
    case 'completed': {
      const r = u.result!;
      const file = r.outputFile ? `\n  Output file: ${r.outputFile}` : '';
      return `${who} completed (${r.status}):\n${clip(r.output)}${file}${describeDiff(r)}`;
    }
    case 'failed': {
      const r = u.result!;
      return `${who} ${r.status === 'cancelled' ? 'was cancelled' : r.status === 'timeout' ? 'timed out' : 'FAILED'}: ${r.error ?? 'no reason given'}${r.output ? `\n  Last output: ${clip(r.output)}` : ''}${describeDiff(r)}\n  Decide whether to retry it, work around it, or continue without it.`;
    }
    case 'idle_response':
      return `${who} went idle and answered the inquiry: ${JSON.stringify(u.message ?? '')}\n  Reply with a2a_send_subtask_message if it needs something, or cancel it with a2a_cancel_subtask.`;
    case 'idle':
      return `${who} is idle.`;
    case 'progress':
      if (u.kind === 'question') return `${who} asks: ${JSON.stringify(u.message ?? '')}\n  Answer with a2a_send_subtask_message.`;
      if (u.kind === 'error') return `${who} reports an error: ${JSON.stringify(u.message ?? '')}`;
      return `${who} status: ${JSON.stringify(u.message ?? '')}`;
  }
}

function describeInbox(item: InboxItem): string {
  switch (item.kind) {
    case 'inquiry':
      return `[idle inquiry ${item.attempt ?? 1} of ${item.maxInquiries ?? 1}] ${IDLE_INQUIRY_TEXT}`;
    case 'resume':
      return `You were paused (${item.text}) and have been resumed by ${item.from}. Change your approach before you retry.`;
    case 'message':
      return `Message from ${item.from}: ${item.text}`;
  }
}

const INJECTION_HEAD = '[a2a] Since your last step:\n\n';

/**
 * The messages others sent a session (`Message from <who>: <text>`), read back out of a user
 * message: an injection's message items without their framing, or a plain message as it is.
 * (A remote A2A agent's driver forwards exactly what the parent said.)
 */
export function messagesIn(content: string): string[] {
  if (!content.startsWith(INJECTION_HEAD)) return [content];
  return content
    .slice(INJECTION_HEAD.length)
    .replace(/\n\n(All your sub-tasks have finished\.|\d+ of your sub-tasks are still running; their results will follow\.)$/, '')
    // items are joined by a blank line and "- "; a message's own text may hold the same, so a
    // split is made only where an item a session's inbox can hold begins
    .split(/\n\n- (?=Message from [^:\n]+: |\[idle inquiry \d+ of \d+\] |You were paused \()/)
    .map((item, i) => (i === 0 ? item.replace(/^- /, '') : item))
    .flatMap((item) => {
      const found = /^Message from [^:]+: ([\s\S]*)$/.exec(item);
      return found ? [found[1]!] : [];
    });
}

/** One synthetic user message for everything that arrived since the last model call, or null. */
export function injectionText(inbox: InboxItem[], updates: TaskUpdate[], live = 0, dropped = 0): string | null {
  if (inbox.length === 0 && updates.length === 0) return null;
  const lines = [
    ...(dropped > 0 ? [`${dropped} older status update(s) from your sub-tasks were dropped: at most ${MAILBOX_LIMIT} wait for you (results, questions and errors are never dropped).`] : []),
    ...updates.map(describeUpdate),
    ...inbox.map(describeInbox),
  ];
  const status =
    updates.length === 0 ? '' : live > 0 ? `\n\n${live} of your sub-tasks are still running; their results will follow.` : '\n\nAll your sub-tasks have finished.';
  return `${INJECTION_HEAD}${lines.map((l) => `- ${l}`).join('\n\n')}${status}`;
}
