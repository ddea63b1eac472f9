import { describe, expect, it } from 'vitest';
import { injectionText, IDLE_INQUIRY_TEXT, SystemPrompts } from '../../actors/session/prompts.js';
import { ToolCatalog } from '../../actors/tools/index.js';
import { defaultGate as gate } from '../../actors/people/permissions.js';
import { harness } from '../helpers.js';

describe('tool catalog', () => {
  const h = harness({ script: { rules: [] } });
  const catalog = new ToolCatalog();
  const worker = h.standalone('x').spec;

  it('should give each agent only its own tools, and spawning tools only while it may spawn', () => {
    const reviewer = h.registry.get('reviewer');
    expect(catalog.toolsFor(reviewer, worker)).toEqual([
      'a2a_list_agents',
      'a2a_check_updates',
      'a2a_notify_orchestrator',
      'a2a_subtask_complete',
      'a2a_write_artifact',
      'a2a_read_artifact',
      'a2a_list_artifacts',
      'read_file',
      'list_files',
      'search',
      'run_command',
    ]);
    const architect = h.registry.get('architect');
    expect(catalog.toolsFor(architect, { ...worker, depth: 0, maxDepth: 2 })).toContain('a2a_spawn_parallel_subtasks');
    expect(catalog.toolsFor(architect, { ...worker, depth: 2, maxDepth: 2 })).not.toContain('a2a_spawn_subtask');
    // the researcher may spawn only to depth 1 (its own maxSubTaskDepth)
    expect(catalog.toolsFor(h.registry.get('researcher'), { ...worker, depth: 1, maxDepth: 2 })).not.toContain('a2a_spawn_subtask');
  });

  it('should describe every tool with a JSON schema of its arguments', () => {
    const spec = catalog.spec('a2a_spawn_subtask');
    expect(spec.parameters).toMatchObject({
      type: 'object',
      required: ['agentType', 'prompt', 'expectedOutput'],
      properties: { blocking: { type: 'boolean', default: true } },
    });
  });

  it('should say why a tool is refused', async () => {
    const ctx = {
      spec: { ...worker, depth: 1, maxDepth: 1 },
      worktree: h.workspace,
      signal: new AbortController().signal,
      permit: (ask: Parameters<typeof gate>[1]) => gate(worker, ask),
      locks: h.runtime.locks,
      registry: h.registry,
      family: null,
      updates: [],
      ids: h.runtime.ids,
      clock: h.clock,
      commands: null,
    };
    const outcome = await catalog.run({ id: 'c', name: 'a2a_spawn_subtask', arguments: {} }, h.registry.get('agent'), ctx);
    expect(outcome.content).toMatchInlineSnapshot(
      `"TOOL_NOT_ALLOWED: "a2a_spawn_subtask" is not available at depth 1: sub-tasks of this session may not nest deeper (limit 1). Your tools: a2a_list_agents, a2a_check_updates, a2a_notify_orchestrator, a2a_subtask_complete, a2a_write_artifact, a2a_read_artifact, a2a_list_artifacts, read_file, write_file, edit_file, list_files, search, run_command."`,
    );
    const unknown = await catalog.run({ id: 'c', name: 'rm', arguments: {} }, h.registry.get('agent'), ctx);
    expect(unknown.content).toMatch(/^TOOL_NOT_ALLOWED: Unknown tool "rm"\. Your tools: /);
    const await_ = await catalog.run({ id: 'c', name: 'a2a_await_subtasks', arguments: { ids: ['st-9'] } }, h.registry.get('agent'), { ...ctx, spec: worker });
    expect(await_.content).toBe('NOT_FOUND: Unknown sub-task id(s): st-9. You have not spawned any sub-task.');
  });
});

describe('prompts', () => {
  const h = harness({ script: { rules: [] } });

  it('should tell an agent what the other agents are good at, and how it works in the team', () => {
    const prompts = new SystemPrompts(h.registry);
    const spec = h.standalone('x').spec;
    const system = prompts.for(h.registry.get('architect'), spec, new ToolCatalog().toolsFor(h.registry.get('architect'), spec));
    expect(system).toContain('You are the architect.');
    expect(system).toContain('- @coder: Implements features and fixes in code, following a given design. Good at: Implementing features from a specification;');
    expect(system).not.toContain('- @architect:');
    expect(system).toContain('A reply without any tool call does not finish your task');
  });

  it('should name the own plan task of each worker, also for workers of one agent type (the prompt is cached)', () => {
    const prompts = new SystemPrompts(h.registry);
    const coder = h.registry.get('coder');
    const base = h.standalone('x').spec;
    const worker = (taskId: string) => ({ ...base, role: 'worker' as const, correlation: { ...base.correlation, taskId } });
    const tools = new ToolCatalog().toolsFor(coder, base);
    expect(prompts.for(coder, worker('login'), tools)).toContain('for plan task "login"');
    expect(prompts.for(coder, worker('logout'), tools)).toContain('for plan task "logout"');
  });

  it('should inject results, idle answers, questions and inquiries as one synthetic message', () => {
    const base = { parentId: 'w', agentType: '@coder', timestamp: 0 };
    const text = injectionText(
      [{ kind: 'inquiry', from: 'idleInquiry', text: '', attempt: 1, maxInquiries: 3 }],
      [
        { ...base, id: 'a', type: 'completed', subTaskId: 'st-1', result: { taskId: 'st-1', status: 'success', output: 'done!' } },
        { ...base, id: 'b', type: 'failed', subTaskId: 'st-2', result: { taskId: 'st-2', status: 'failed', output: '', error: 'boom' } },
        { ...base, id: 'c', type: 'idle_response', subTaskId: 'st-3', message: 'need the API key name' },
        { ...base, id: 'd', type: 'progress', subTaskId: 'st-4', kind: 'question', message: 'which db?' },
      ],
      2,
    )!;
    expect(text).toContain('Sub-task st-1 (@coder) completed (success):\ndone!');
    expect(text).toContain('Sub-task st-2 (@coder) FAILED: boom');
    expect(text).toContain('went idle and answered the inquiry: "need the API key name"');
    expect(text).toContain('asks: "which db?"\n  Answer with a2a_send_subtask_message.');
    expect(text).toContain(`[idle inquiry 1 of 3] ${IDLE_INQUIRY_TEXT}`);
    expect(text).toContain('2 of your sub-tasks are still running');
    expect(injectionText([], [])).toBeNull();
  });
});
