/**
 * The audit trail: every A2A operation (a worker deployed, a sub-task spawned, a result, an
 * update, a permission asked and decided, a question and its answer, a reassign, redirect,
 * reinitialize or resume, a stuck report, a stop) as one JSON line with its full context (run,
 * plan, task, worker, sub-task, parent, depth, agent type, and the event's data). Secrets are
 * redacted where every record is serialized (actors/config/secrets.ts).
 */
import { RUN_EVENT_KINDS, type RunEvent, type RunEventType } from '../../machines/protocol/index.js';
import { decisionText } from '../observation/runView.js';

/** The types the audit trail keeps: those RUN_EVENT_KINDS marks audited (machines/protocol/events.ts). */
export const AUDITED: ReadonlySet<RunEventType> = new Set((Object.keys(RUN_EVENT_KINDS) as RunEventType[]).filter((t) => RUN_EVENT_KINDS[t].audited));

/** Records are written through the run log's serializer (secrets.ts), which redacts them. */
export { redactText } from '../config/secrets.js';

export function isAudited(event: RunEvent): boolean {
  return AUDITED.has(event.type);
}

const cell = (v: unknown) =>
  String(v ?? '')
    .replace(/\|/g, '\\|')
    .replace(/\s+/g, ' ')
    .slice(0, 160);

/** What a record says, in one line for the Markdown export. */
function summary(e: RunEvent): string {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case 'permission.requested':
      return `${String(d.action)}: ${String(d.detail ?? '')}`;
    case 'permission.forwarded':
      return `${String(d.action)} passed up from ${String(d.from)} to ${String(d.to)} (hop ${String(d.hop)}): ${String(d.detail ?? '')}`;
    case 'permission.decided':
      return `${String(d.action ?? d.requestId)} ${decisionText(d)}${d.reason ? `: ${String(d.reason)}` : ''}`;
    case 'worker.redirected':
      return `by ${String(d.by)}${d.reason ? ` because ${String(d.reason)}` : ''}: ${String(d.instructions ?? '')}`;
    case 'worker.reassigned':
      return `${String(d.from)} → ${String(d.to)} by ${String(d.by)}`;
    case 'stuck.detected':
      return String(d.reason ?? '');
    case 'subtask.result':
      // a failed result's output is often empty: its error says what went wrong
      return `${String(d.status)}: ${[d.output, d.error].filter((v) => typeof v === 'string' && v.length > 0).join(' — error: ')}`;
    case 'update.queued':
      return `${String(d.updateType)}${d.kind ? ` (${String(d.kind)})` : ''} from ${String(d.from)}${d.message ? `: ${String(d.message)}` : ''}`;
    case 'inquiry.sent':
      return `idle: inquiry ${String(d.attempt ?? '')}`.trim();
    case 'inquiry.answered':
      return String(d.text ?? '');
    case 'inbox.accepted':
      return `${String(d.type)} (${String(d.priority)}) ${String(d.id)}${d.replayed ? ', replayed' : ''}`;
    case 'question.asked':
      return String(d.question ?? '');
    case 'question.answered':
      return `by ${String(d.by)}: ${String(d.answer ?? '')}`;
    case 'human.asked':
      return String(d.title ?? '');
    case 'human.answered':
      return `${String(d.title ?? d.id)}: ${d.approved === false ? 'denied' : 'approved'} by ${String(d.by)}`;
    default: {
      const text = d.prompt ?? d.message ?? d.reason ?? d.status ?? '';
      return String(text);
    }
  }
}

export function renderAuditMarkdown(runId: string, records: RunEvent[]): string {
  const lines = [
    `# Audit of run ${runId}`,
    '',
    `${records.length} operation(s).`,
    '',
    '| # | time | operation | task | session | parent | depth | agent | what |',
    '|---|------|-----------|------|---------|--------|-------|-------|------|',
  ];
  for (const r of records) {
    lines.push(
      `| ${r.seq} | ${new Date(r.ts).toISOString()} | ${r.type} | ${cell(r.taskId)} | ${cell(r.subTaskId ?? r.workerId)} | ${cell(r.parentId)} | ${cell(r.depth)} | ${cell(r.agentType)} | ${cell(summary(r))} |`,
    );
  }
  return `${lines.join('\n')}\n`;
}
