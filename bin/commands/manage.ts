/**
 * Commands on a run in progress (or finished), from any shell on this machine:
 *   a2a status [--run id]                         tasks, worker states, inbox metrics, what waits
 *   a2a inbox [list|approve|deny|answer] …        what waits for a person, and answering it
 *   a2a reassign|redirect|reinit|resume|model <task> …  managing a worker
 *   a2a audit [runId] --format json|md            the audit trail
 * Reads go to the run's files; changes go to the running process through its control directory.
 */
import { resolve } from 'node:path';
import { userInfo } from 'node:os';
import type { RunEvent } from '../../machines/protocol/index.js';
import { A2AError } from '../../actors/errors.js';
import { renderAuditMarkdown } from '../../actors/durability/audit.js';
import type { RunStatus } from '../../actors/observation/runStatus.js';
import { describeWait } from '../../actors/people/humanGate.js';
import { sendControl, type ControlReply, type ControlRequest } from '../../adapters/runHost.js';
import { FileRunStore, type RunRecord } from '../../adapters/store/file.js';
import { indexedRuns } from '../../adapters/store/runIndex.js';

export interface RunSelector {
  workspace?: string;
  run?: string;
  /** Told which run was taken when none was named (the CLI writes it to stderr). */
  note?: (text: string) => void;
}

const me = () => process.env.A2A_USER ?? userInfo().username ?? 'cli';

function storeOf(options: RunSelector): FileRunStore {
  return new FileRunStore(resolve(options.workspace ?? process.cwd()));
}

/** The run named, or the latest in progress (or the latest at all, when `anyStatus`). */
export function selectRun(store: FileRunStore, runId: string | undefined, anyStatus = false): RunRecord {
  if (runId) return store.read(runId);
  const runs = store.list();
  const running = runs.filter((r) => r.status === 'running');
  const chosen = running.at(-1) ?? (anyStatus ? runs.at(-1) : undefined);
  if (!chosen) throw new A2AError('NOT_FOUND', `no run ${anyStatus ? '' : 'in progress '}in ${store.root}; name one with --run <runId>`);
  return chosen;
}

/**
 * The run and its store: in the workspace given (or this directory), else, without --workspace,
 * a run indexed with a workspace of its own (an example's fresh repository) by id or as the
 * latest in progress.
 */
export function locateRun(options: RunSelector, runId: string | undefined, anyStatus = false): { store: FileRunStore; record: RunRecord } {
  const found = findRun(options, runId, anyStatus);
  if (!runId) options.note?.(`run ${found.record.runId} (the latest${anyStatus ? '' : ' in progress'}; name another with --run <runId>)`);
  return found;
}

function findRun(options: RunSelector, runId: string | undefined, anyStatus: boolean): { store: FileRunStore; record: RunRecord } {
  const store = storeOf(options);
  try {
    return { store, record: selectRun(store, runId, anyStatus) };
  } catch (error) {
    if (options.workspace) throw error;
    for (const entry of indexedRuns()) {
      if (runId && entry.runId !== runId) continue;
      const elsewhere = new FileRunStore(entry.workspace);
      try {
        const record = elsewhere.read(entry.runId);
        if (runId || record.status === 'running' || anyStatus) return { store: elsewhere, record };
      } catch {
        // gone: its workspace was removed
      }
    }
    throw error;
  }
}

function readStatus(store: FileRunStore, record: RunRecord): RunStatus {
  const status = store.readStatus(record.runId) as RunStatus | null;
  if (!status) throw new A2AError('NOT_FOUND', `run ${record.runId} has no status yet (it writes one with its first checkpoint)`);
  return status;
}

function reply(result: ControlReply, out: NodeJS.WritableStream): number {
  if (!result.ok) throw new A2AError('VALIDATION_ERROR', result.error);
  out.write(`${result.message}\n`);
  return 0;
}

const ms = (n: number) => (n >= 1000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`);

export function statusCommand(options: RunSelector & { json?: boolean }, out: NodeJS.WritableStream): number {
  const { store, record } = locateRun(options, options.run, true);
  const status = readStatus(store, record);
  if (options.json) {
    out.write(`${JSON.stringify({ record: { ...record, summary: undefined }, status }, null, 2)}\n`);
    return 0;
  }
  const m = status.inbox.metrics;
  const lines = [
    `run ${record.runId} · ${record.status} · orchestrator ${status.state} · as of ${new Date(status.savedAt).toISOString()}`,
    ...(record.paused ? [`paused by ${record.paused.by} at ${new Date(record.paused.at).toISOString()} (a2a resume ${record.runId})`] : []),
    ...(status.workflow
      ? [
          '',
          'workflow',
          `  state ${status.workflow.state}${status.workflow.step && status.workflow.step !== status.workflow.state ? ` (step ${status.workflow.step}, round ${status.workflow.round})` : ` (round ${status.workflow.round})`}${status.workflow.ended ? ` · ended ${status.workflow.ended.status}` : ''}`,
          `  active agents ${status.workflow.activeAgents.length}${status.workflow.activeAgents.length ? `: ${status.workflow.activeAgents.map((a) => `${a.role} (${a.workerId})`).join(', ')}` : ''}`,
          `  artifacts ${status.workflow.artifacts} (a2a artifacts ${record.runId})`,
          ...(status.workflow.error ? [`  error: ${status.workflow.error}`] : []),
        ]
      : []),
    '',
    'tasks',
    ...status.tasks.map((t) => `  ${t.id.padEnd(Math.max(16, ...status.tasks.map((x) => x.id.length)))} ${t.state.padEnd(10)} ${t.agentType.padEnd(16)} ${t.workerId}${t.session ? ` (${t.session})` : ''}`),
    '',
    'inbox',
    `  depth ${m.depth} (max ${m.maxDepth}) · accepted ${m.accepted} · handled ${m.handled} · duplicates refused ${m.duplicates}`,
    `  wait: mean ${ms(m.handled ? m.waitTotalMs / m.handled : 0)}, max ${ms(m.waitMaxMs)} · processing: mean ${ms(m.handled ? m.processTotalMs / m.handled : 0)}, max ${ms(m.processMaxMs)}`,
    ...(status.inbox.inFlight ? [`  handling  ${status.inbox.inFlight.priority.padEnd(8)} ${status.inbox.inFlight.type.padEnd(18)} ${status.inbox.inFlight.id}`] : []),
    ...status.inbox.queued.map((q) => `  queued    ${q.priority.padEnd(8)} ${q.type.padEnd(18)} ${q.id}`),
    '',
    `waiting for a person: ${status.pending.length}`,
    ...status.pending.map((i, n) => `  ${n + 1}. [${i.kind}] ${i.title}  (${i.id})`),
  ];
  const conversations = Object.entries(status.conversations);
  if (conversations.length > 0) {
    lines.push('', 'conversations');
    for (const [task, entries] of conversations) {
      lines.push(`  ${task}`);
      for (const e of entries) lines.push(`    ${e.from} (${e.kind}): ${e.text.replace(/\s+/g, ' ').slice(0, 160)}`);
    }
  }
  out.write(`${lines.join('\n')}\n`);
  return 0;
}

export async function inboxCommand(
  action: string | undefined,
  ids: string[],
  options: RunSelector & { all?: boolean; reason?: string; json?: boolean },
  out: NodeJS.WritableStream,
): Promise<number> {
  const { store, record } = locateRun(options, options.run);
  const verb = action ?? 'list';
  if (verb === 'list') {
    const status = readStatus(store, record);
    if (options.json) {
      out.write(`${JSON.stringify(status.pending, null, 2)}\n`);
      return 0;
    }
    if (status.pending.length === 0) {
      out.write(`nothing waits for a person in run ${record.runId}\n`);
      return 0;
    }
    out.write(`run ${record.runId}: ${status.pending.length} waiting for a person\n`);
    status.pending.forEach((i, n) => {
      // an item of a run from before asking times were kept has none: only its default is known
      out.write(`  ${n + 1}. [${i.kind}] ${i.title}\n     id ${i.id} · from ${i.requesterId} (task ${i.taskId}) · ${i.askedAt ? describeWait(i, Date.now()) : `then ${i.onTimeout.text}`}\n`);
    });
    return 0;
  }
  const by = me();
  const reason = options.reason ? { reason: options.reason } : {};
  if (verb === 'approve' && options.all) {
    if (ids.length > 0) throw new A2AError('VALIDATION_ERROR', 'give either --all or ids, not both');
    return reply(await sendControl(store, record.runId, { command: 'approve_all', by, ...reason }), out);
  }
  if (verb === 'approve' || verb === 'deny') {
    if (ids.length === 0) throw new A2AError('VALIDATION_ERROR', `name what to ${verb}: an id or its number from \`a2a inbox list\`${verb === 'approve' ? ', or --all' : ''}`);
    for (const id of ids) reply(await sendControl(store, record.runId, { command: 'answer', id, approved: verb === 'approve', by, ...reason }), out);
    return 0;
  }
  if (verb === 'answer') {
    const [id, ...words] = ids;
    const text = words.join(' ').trim();
    if (!id || !text) throw new A2AError('VALIDATION_ERROR', 'usage: a2a inbox answer <id> "<your answer>"');
    return reply(await sendControl(store, record.runId, { command: 'answer', id, text, by }), out);
  }
  throw new A2AError('VALIDATION_ERROR', `unknown inbox action "${verb}"; use list, approve, deny or answer`);
}

export async function manageCommand(
  command: 'reassign' | 'redirect' | 'reinitialize' | 'resume' | 'switch_model',
  taskId: string,
  value: string | undefined,
  options: RunSelector,
  out: NodeJS.WritableStream,
): Promise<number> {
  const { store, record } = locateRun(options, options.run);
  const by = me();
  let request: ControlRequest;
  if (command === 'resume') request = { command, taskId, by };
  else if (!value?.trim()) {
    throw new A2AError(
      'VALIDATION_ERROR',
      command === 'reassign'
        ? 'usage: a2a reassign <task> <agent type>, e.g. a2a reassign api @debugger'
        : command === 'switch_model'
          ? 'usage: a2a model <task> <profile>, e.g. a2a model api fast'
          : `usage: a2a ${command === 'redirect' ? 'redirect' : 'reinit'} <task> "<instructions>"`,
    );
  } else if (command === 'reassign') request = { command, taskId, agent: value, by };
  else if (command === 'switch_model') request = { command, taskId, profile: value, by };
  else request = { command, taskId, instructions: value, by };
  return reply(await sendControl(store, record.runId, request), out);
}

/**
 * `a2a pause [runId]`, `a2a resume [runId]`, `a2a retry [runId]`: the whole run. The run's
 * process answers (a refusal names the state: INVALID_STATE_TRANSITION, WORKFLOW_PAUSED).
 */
export async function runControlCommand(command: 'pause' | 'unpause' | 'retry', runId: string | undefined, options: RunSelector & { reason?: string }, out: NodeJS.WritableStream): Promise<number> {
  const { store, record } = locateRun(options, runId ?? options.run);
  const by = me();
  const request: ControlRequest = command === 'pause' ? { command, by, ...(options.reason ? { reason: options.reason } : {}) } : { command, by };
  return reply(await sendControl(store, record.runId, request), out);
}

/** `a2a resume <target>`: a run id resumes that paused run; anything else names a task whose worker is resumed. */
export async function resumeCommand(target: string | undefined, options: RunSelector, out: NodeJS.WritableStream): Promise<number> {
  const store = storeOf(options);
  const isRun = (id: string) => store.list().some((r) => r.runId === id) || (!options.workspace && indexedRuns().some((e) => e.runId === id));
  if (target === undefined || isRun(target)) return runControlCommand('unpause', target, options, out);
  return manageCommand('resume', target, undefined, options, out);
}

export function auditCommand(runId: string | undefined, options: { workspace?: string; format?: string; output?: string }, out: NodeJS.WritableStream): number {
  const { store, record } = locateRun(options, runId, true);
  const records = store.logLines(record.runId, 'audit') as RunEvent[];
  const format = options.format ?? 'json';
  if (format === 'json') {
    for (const r of records) out.write(`${JSON.stringify(r)}\n`);
  } else if (format === 'md') {
    out.write(renderAuditMarkdown(record.runId, records));
  } else {
    throw new A2AError('VALIDATION_ERROR', `unknown format "${format}"; use json or md`);
  }
  return 0;
}
