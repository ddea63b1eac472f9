/**
 * The session charts (worker, sub-task): the events that can reach a session (the agent loop's replies, its owner's commands, its children's reports), its context abstraction, and the invariants of every step.
 */
import type { AnyEventObject, AnyStateMachine } from 'xstate';
import type { ToolOutcome } from '../../../machines/ports.js';
import { PERMISSION_CATEGORY, SubTaskResult, type SessionSpec } from '../../../machines/protocol/index.js';
import type { SessionContext, SessionEvent } from '../../../machines/session.js';
import type { MachineModel, StepView } from '../paths.js';
import { inert, fail, sessionSpec, type Sample } from './shared.js';

const childSpecOf = (parent: SessionSpec): SessionSpec => ({
  ...parent,
  id: 'st-child',
  role: 'subtask',
  agent: { raw: '@coder', backend: 'default', agentName: 'coder' },
  prompt: 'build part',
  depth: parent.depth + 1,
  owner: { ownerType: 'worker', ownerId: parent.id },
  lineage: [{ agentName: parent.agent.agentName, prompt: parent.prompt }],
});

const call = (id: string) => ({ id, name: 'a2a_list_agents', arguments: {} });

function ran(content: string, effect?: ToolOutcome['effect'], isError = false): ToolOutcome {
  return { content, isError, ...(effect ? { effect } : {}) };
}

function outcome(content: string, effect?: ToolOutcome['effect'], isError = false): SessionEvent {
  return { type: 'TOOL_FINISHED', step: 1, outcome: ran(content, effect, isError) };
}

function sessionEvents(spec: SessionSpec) {
  const child = childSpecOf(spec);
  const usage = { inputTokens: 1, outputTokens: 1 };
  return (state: { context: unknown; value: unknown }): Array<Sample<SessionEvent>> => {
    const c = state.context as SessionContext;
    const reply = (toolCalls: ReturnType<typeof call>[], consumedInbox = c.inbox.length, consumedUpTo = c.batch?.upTo ?? null, ran?: ToolOutcome[]): SessionEvent => ({
      type: 'MODEL_REPLIED',
      step: c.messages.length + 1,
      output: { injected: [], reply: { text: 'reply', toolCalls, usage }, consumedInbox, consumedUpTo },
      ...(ran ? { ran } : {}),
    });
    // a reply whose leading coordination calls ran in the same step
    const ranReply = (calls: number, ...ran: ToolOutcome[]) => reply(Array.from({ length: calls }, (_, i) => call(`c${i + 1}`)), undefined, undefined, ran);
    const events: Array<Sample<SessionEvent>> = [
      reply([call('c1')]),
      reply([call('c1'), call('c2')]),
      reply([]),
      ranReply(1, ran('done', { kind: 'complete', status: 'success', output: 'the design' })),
      ranReply(2, ran('ok'), ran('done', { kind: 'complete', status: 'success', output: 'the design' })),
      ranReply(1, ran('', { kind: 'spawn', requestId: 'r1', specs: [child], blocking: true, timeoutMs: 5000 })),
      ranReply(1, ran('ok')),
      ranReply(2, ran('ok')),
      ranReply(2, ran('bad arguments', undefined, true), ran('bad arguments', undefined, true)),
      ranReply(1, ran('sent', { kind: 'notify', notification: 'question', message: 'which db?' })),
      { type: 'MODEL_FAILED', step: 1, error: 'provider down' },
      { type: 'RESTORED' },
      { type: 'EFFECT_STARTED', step: 1 },
      { type: 'EFFECT_IN_DOUBT', step: 1, tool: 'mcp__bank__charge' },
      outcome('ok'),
      outcome('bad arguments', undefined, true),
      outcome('', { kind: 'spawn', requestId: 'r1', specs: [child], blocking: true, timeoutMs: 5000 }),
      outcome('', { kind: 'spawn', requestId: 'r1', specs: [child], blocking: false, timeoutMs: 5000 }),
      outcome('done', { kind: 'complete', status: 'success', output: 'the design' }),
      outcome('sent', { kind: 'notify', notification: 'question', message: 'which db?' }),
      outcome('{}', { kind: 'ackUpdates' }),
      { type: 'TOOL_CRASHED', step: 1, error: 'bug' },
      { type: 'CANCEL', reason: 'stopped' },
      { type: 'TIMEOUT' },
      { type: 'RESUME', by: 'orchestrator' },
      { type: `xstate.after.awaitTimeout.${spec.role}.running.awaitingChildren.waiting` },
      { type: `xstate.after.inquiryDue.${spec.role}.running.idle` },
      { type: 'PERMISSION_REQUIRED', requestId: `${spec.id}:perm:1`, ask: { action: 'branch_push', detail: 'git push origin a2a/w' } },
      { type: 'REASSIGN', agent: { raw: '@coder', backend: 'default', agentName: 'coder' }, by: 'orchestrator' },
      { type: 'SWITCH_MODEL', profile: 'small', by: 'orchestrator' },
      { type: 'BUDGET_REACHED', step: 1, scope: 'worker', limitUsd: 1, spentUsd: 1.25 },
    ];
    // a restart leads back to the start with the children and the watchdog it had: offered from a
    // few states only, so that it adds their restarts to the graph and not a second copy of it
    if (c.turns === 1 && c.pendingCalls.length === 0) events.push({ type: 'REINITIALIZE', instructions: 'start over', by: 'orchestrator' });
    if (c.perms.own) {
      events.push({ type: 'PERMISSION_DECIDED', decision: { requestId: c.perms.own.id, approved: true, decidedBy: 'human', decider: 'ann' } });
      events.push({ type: 'PERMISSION_DECIDED', decision: { requestId: c.perms.own.id, approved: false, decidedBy: 'timeout', decider: 'timeout' } });
    }
    // input that arrives while the model is called (a reply that did not see it)
    if (c.inbox.length > 0) events.push(reply([], c.inbox.length - 1));
    if (c.inbox.length === 0) events.push({ type: 'MESSAGE', from: 'parent', text: 'more context' });
    // the supervisor sends one batch at a time (the next after an acknowledgement)
    if (c.batch === null && c.has.subtasks) {
      for (const live of [0, 1]) {
        events.push({
          type: 'UPDATES_AVAILABLE',
          upTo: 1,
          live,
          updates: [{ id: 'u', type: 'completed', subTaskId: 'st-child', parentId: spec.id, agentType: '@coder', timestamp: 0, result: { taskId: 'st-child', status: 'success', output: 'part' } }],
        });
      }
    }
    if (c.has.watchdog) {
      if (!c.has.inquiry) events.push({ type: 'IDLE_INQUIRY', attempt: 1, maxInquiries: 3 });
      events.push(
        { type: 'xstate.done.actor.idleInquiry', actorId: 'idleInquiry', output: { reason: 'unresponsive', inquiries: 1 } },
        { type: 'xstate.done.actor.idleInquiry', actorId: 'idleInquiry', output: { reason: 'exhausted', inquiries: 3 } },
        { type: 'xstate.error.actor.idleInquiry', actorId: 'idleInquiry', error: new Error('watchdog crashed') },
      );
    }
    if (c.has.subtasks) {
      // what the supervisor sends, and the tool effects that name children (tools check the ids
      // against the session's children first, so these never come before the first spawn)
      events.push(
        outcome('', { kind: 'await', ids: ['st-child'], timeoutMs: 5000 }),
        outcome('sent', { kind: 'message', to: 'st-child', text: 'go on' }),
        outcome('cancelling', { kind: 'cancel', ids: ['st-child'], reason: 'not needed' }),
        ranReply(1, ran('', { kind: 'await', ids: ['st-child'], timeoutMs: 5000 })),
        ranReply(2, ran('sent', { kind: 'message', to: 'st-child', text: 'go on' }), ran('cancelling', { kind: 'cancel', ids: ['st-child'], reason: 'not needed' })),
        { type: 'SPAWN_RESULT', ok: true, requestId: 'r1', started: ['st-child'], queued: [], live: 1 },
        { type: 'SPAWN_RESULT', ok: false, requestId: 'r1', error: { code: 'SUBTASK_LIMIT_EXCEEDED', message: 'too many' }, live: 0 },
        { type: 'WATCH_SATISFIED', results: [{ taskId: 'st-child', status: 'success', output: 'part' }], pending: [], unknown: [], live: 0 },
        { type: 'xstate.error.actor.subtasks', actorId: 'subtasks', error: new Error('supervisor crashed') },
      );
      // a child's permission: within this session's level, or not (passed up, its decision passed down)
      for (const action of ['file_edits_in_worktree', 'branch_push'] as const) {
        events.push({
          type: 'CHILD_PERMISSION_REQUEST',
          request: { id: `st-child:perm:${action}`, action, category: PERMISSION_CATEGORY[action], requesterId: 'st-child', agentType: '@coder', detail: 'x', correlation: child.correlation, via: ['st-child'], timestamp: 0 },
        });
      }
      for (const requestId of Object.keys(c.perms.routes)) {
        events.push({ type: 'PERMISSION_DECIDED', decision: { requestId, approved: true, decidedBy: 'orchestrator', decider: 'orchestrator' } });
      }
    }
    return events;
  };
}

/** Only what the guards read, at the resolution they read it. */
function serializeSession(state: { value: unknown; context: unknown }): string {
  const c = state.context as SessionContext;
  return JSON.stringify([
    state.value,
    Math.min(c.turns, c.spec.limits.maxTurns),
    Math.min(c.health.failures, c.spec.limits.circuitBreakerThreshold),
    Math.min(c.pendingCalls.length, 2),
    c.inbox.length > 0,
    c.batch !== null,
    c.live > 0,
    c.has.inquiry,
    c.has.watchdog,
    c.has.subtasks,
    c.waits.spawn?.blocking ?? null,
    c.result?.status ?? null,
    c.perms.own !== null,
    Object.keys(c.perms.routes).length > 0,
    Object.keys(c.perms.decided).length > 0,
    // the health counters are left out: the stuck check only reports (it changes no state), so
    // merging states that differ in them never changes where a path goes
  ]);
}

function sessionInvariants(spec: SessionSpec) {
  return (step: StepView): void => {
    const before = step.before.context as SessionContext;
    const after = step.after.context as SessionContext;
    if (after.spec.depth > after.spec.maxDepth) fail(step, `depth ${after.spec.depth} above the limit ${after.spec.maxDepth}`);

    // exactly one result, delivered to the owner, when (and only when) the session ends
    if (step.after.status === 'done') {
      if (step.doneEvents.length !== 1) fail(step, `${step.doneEvents.length} results delivered to the owner, expected exactly 1`);
      const output = SubTaskResult.safeParse(step.doneEvents[0]!.output);
      if (!output.success || output.data.taskId !== spec.id) fail(step, `the result is not a valid result for ${spec.id}`);
    } else if (step.doneEvents.length !== 0) {
      fail(step, 'a result was delivered while the session still runs');
    }

    // an idle session is never completed: only a2a_subtask_complete, or the exhausted watchdog's
    // fallback (partial, marked fallback), lead to `completed`
    if (step.after.value === 'completed' && step.before.value !== 'completed') {
      const e = step.event as { type: string; outcome?: ToolOutcome; output?: { reason: string }; ran?: ToolOutcome[] };
      const viaTool =
        (e.type === 'TOOL_FINISHED' && e.outcome?.effect?.kind === 'complete') || (e.type === 'MODEL_REPLIED' && e.ran?.at(-1)?.effect?.kind === 'complete');
      const viaFallback = e.type === 'xstate.done.actor.idleInquiry' && e.output?.reason === 'exhausted';
      if (!viaTool && !viaFallback) fail(step, `completed by ${e.type}`);
      if (viaFallback && !(after.result?.status === 'partial' && after.result.fallback)) fail(step, 'the fallback result must be a partial marked fallback');
    }

    // a child gets the agent type that was requested, never the parent's
    const e = step.event as { type: string; outcome?: ToolOutcome; ran?: ToolOutcome[] };
    const spawned = e.type === 'TOOL_FINISHED' ? e.outcome : e.type === 'MODEL_REPLIED' ? e.ran?.at(-1) : undefined;
    if (spawned?.effect?.kind === 'spawn') {
      const spawn = step.sent.find((s) => s.to === 'subtasks' && s.event.type === 'SPAWN');
      if (!spawn) fail(step, 'a spawn effect was not sent to the supervisor');
      const requested = spawned.effect.specs.map((s) => s.agent.raw);
      const sentTypes = (spawn.event as unknown as { specs: SessionSpec[] }).specs.map((s) => s.agent.raw);
      if (JSON.stringify(requested) !== JSON.stringify(sentTypes)) fail(step, `spawned ${sentTypes.join(',')} but ${requested.join(',')} was requested`);
      if (sentTypes.includes(spec.agent.raw)) fail(step, 'a child was given its parent\'s agent type');
    }

    // the watchdog counts only while the session is idle
    const wasIdle = JSON.stringify(step.before.value) === '{"running":"idle"}';
    const isIdle = JSON.stringify(step.after.value) === '{"running":"idle"}';
    // (a session without a watchdog yet starts one once it has sat idle for the threshold)
    if (isIdle && !wasIdle && before.has.watchdog && !step.sent.some((s) => s.to === 'idleInquiry' && s.event.type === 'SESSION_IDLE')) fail(step, 'entered idle without telling the watchdog');
    if (wasIdle && !isIdle && step.after.status === 'active' && before.has.watchdog && !step.sent.some((s) => s.to === 'idleInquiry' && s.event.type === 'SESSION_BUSY')) {
      fail(step, 'left idle without telling the watchdog');
    }
    if (step.event.type.startsWith('xstate.after.inquiryDue.') && !before.has.watchdog && !after.has.watchdog) fail(step, 'sat idle through the threshold and the grace period and started no watchdog');

    // a permission outside the session's level goes up and the session waits; a child's request
    // is approved here within this level, or passed up; nothing is decided twice or dropped
    if (step.event.type === 'PERMISSION_REQUIRED' && step.after.status === 'active' && JSON.stringify(step.before.value).startsWith('{"running":{"usingTools"')) {
      const requestId = (step.event as unknown as { requestId: string }).requestId;
      const asked = step.sent.some((s) => s.event.type === 'PERMISSION_REQUEST');
      const answered = step.sent.some((s) => s.to === 'loop' && s.event.type === 'PERMISSION_ANSWER');
      if (before.perms.decided[requestId]) {
        if (asked || !answered) fail(step, 'a permission decided during this tool call was asked again instead of answered');
      } else {
        if (!asked) fail(step, 'a permission the tool needs was not asked of the parent');
        if (JSON.stringify(step.after.value) !== '{"running":"waitingForPermission"}') fail(step, 'the session does not show as waiting for permission');
      }
    }
    // a restored tool step is asked again, and its journal decides afresh: never left `running`
    // (as if its effect were still under way) nor `inDoubt` from an earlier life
    if (step.event.type === 'RESTORED' && JSON.stringify(step.before.value).startsWith('{"running":{"usingTools"')) {
      if (!step.sent.some((s) => s.to === 'loop' && s.event.type === 'RUN_TOOL')) fail(step, 'a restored tool step was not asked again');
      if (JSON.stringify(step.after.value) !== '{"running":{"usingTools":"intended"}}') fail(step, `a restored tool step is in ${JSON.stringify(step.after.value)}, expected intended`);
    }
    // an effect's life only goes forward: in doubt comes from a step asked again, never from one running
    if (step.event.type === 'EFFECT_IN_DOUBT' && JSON.stringify(step.before.value) === '{"running":{"usingTools":"running"}}' && JSON.stringify(step.after.value) !== JSON.stringify(step.before.value)) {
      fail(step, 'a running call was taken for in doubt');
    }
    // a spent budget makes no model call: a worker pauses (and says why), a sub-task fails
    if (step.event.type === 'BUDGET_REACHED' && JSON.stringify(step.before.value) === '{"running":"thinking"}') {
      if (step.sent.some((s) => s.event.type === 'CALL_MODEL')) fail(step, 'a model call was made with the budget spent');
      const expected = spec.role === 'worker' ? '{"running":"paused"}' : '"failed"';
      if (JSON.stringify(step.after.value) !== expected) fail(step, `a spent budget led to ${JSON.stringify(step.after.value)}, expected ${expected}`);
      if (spec.role === 'worker' && !step.sent.some((s) => s.event.type === 'SUBTASK_UPDATE')) fail(step, 'a worker paused for its budget without telling its owner');
    }
    if (step.event.type === 'CHILD_PERMISSION_REQUEST') {
      const request = (step.event as unknown as { request: { action: string; via: string[]; needsPerson?: boolean } }).request;
      const approved = step.sent.filter((s) => s.to === 'subtasks' && s.event.type === 'PERMISSION_DECISION');
      const up = step.sent.filter((s) => s.event.type === 'PERMISSION_REQUEST');
      const within = !request.needsPerson && before.spec.permissions.level.includes(request.action as never);
      if (within ? approved.length !== 1 || up.length !== 0 : approved.length !== 0 || up.length !== 1) {
        fail(step, `a child's ${request.action} was ${approved.length} times approved here and ${up.length} times passed up`);
      }
      const via = (up[0]?.event as unknown as { request: { via: string[] } } | undefined)?.request.via;
      if (up.length === 1 && via?.at(-1) !== spec.id) fail(step, 'a request passed up does not record the session it went through');
    }
    if (step.event.type === 'PERMISSION_DECIDED') {
      const decision = (step.event as unknown as { decision: { requestId: string } }).decision;
      if (before.perms.routes[decision.requestId] && !step.sent.some((s) => s.to === 'subtasks' && s.event.type === 'PERMISSION_DECISION')) {
        fail(step, 'a decision for a child was not passed down');
      }
      if (before.perms.own?.id === decision.requestId && step.after.status === 'active') {
        const answered = step.sent.some((s) => s.to === 'loop' && s.event.type === 'PERMISSION_ANSWER');
        // waiting: the tool gets it now; still running (restored, not asked again yet): it is kept for the ask
        if (!answered && !after.perms.decided[decision.requestId]) fail(step, 'a decision for this session was dropped');
      }
    }
  };
}

export function sessionModel(name: 'worker' | 'subtask', machine: AnyStateMachine): MachineModel {
  const spec = sessionSpec(name);
  // what the chart asks of its agent loop: path steps, like the events sent to its children
  const asked: Array<{ to: string; event: AnyEventObject }> = [];
  return {
    name,
    machine: machine.provide({
      actors: { subtasks: inert, idleInquiry: inert } as never,
      actions: { loop: (_: unknown, command: AnyEventObject) => void asked.push({ to: 'loop', event: command }) } as never,
    }),
    takeSent: () => asked.splice(0),
    input: { spec },
    events: sessionEvents(spec) as MachineModel['events'],
    serialize: serializeSession,
    invariants: sessionInvariants(spec),
  };
}
