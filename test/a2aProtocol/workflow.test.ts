/**
 * The organiser's SDLC workflow served as a skill (`sdlc-workflow`): the message is its goal, its
 * states come back as WORKING messages and its artifacts as A2A artifacts, as they are made; the
 * end is one terminal state.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveA2A, type RunningA2AServer } from '../../adapters/a2aProtocol/server.js';
import { parseScript } from '../../adapters/model/scripted.js';
import { EXAMPLE, exampleRepo, exampleScript } from '../workflow/example.js';
import { clientOf, drain, lastStatusText, message, send, states, taskIdOf } from './fixtures.js';

let server: RunningA2AServer;
let events: Awaited<ReturnType<typeof drain>>;

beforeAll(async () => {
  const example = JSON.parse(readFileSync(join(EXAMPLE, 'workflow.json'), 'utf8')) as { goal: string; config: { workflow: object } };
  server = await serveA2A({
    workspace: exampleRepo('a2a-serve-sdlc-'),
    version: '1',
    notify: () => undefined,
    run: { scriptData: parseScript(exampleScript(), 'the example\'s script'), settings: { permissions: { auto_approve: ['command_execution', 'branch_merge'] }, git: { worktrees: 'off' }, workflow: example.config.workflow } as never },
  });
  events = await drain(send(await clientOf(server.url), message(example.goal, { skill: 'sdlc-workflow' })));
}, 20_000);

afterAll(() => server?.close());

describe('the SDLC workflow as an A2A skill', () => {
  it('is on the card', async () => {
    const card = (await (await fetch(`${server.url}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json()) as { skills: Array<{ id: string }> };
    expect(card.skills.map((s) => s.id)).toContain('sdlc-workflow');
  });

  it('streams the workflow\'s states and artifacts, and ends COMPLETED once', async () => {
    const texts = events.filter((e) => e.payload?.$case === 'statusUpdate').map((e) => lastStatusText([e]));
    const workflowStates = texts.filter((t) => t.startsWith('workflow: ')).map((t) => t.slice(10).split(' ')[0]);
    expect(workflowStates[0]).toBe('PLANNING');
    expect(workflowStates.at(-1)).toBe('COMPLETED');
    expect(states(events).filter((s) => ['COMPLETED', 'FAILED', 'CANCELED'].includes(s))).toEqual(['COMPLETED']);
    const task = await (await clientOf(server.url)).getTask({ tenant: '', id: taskIdOf(events) });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const names = task.artifacts.map((a) => a.name);
    // one A2A artifact per workflow artifact, at its latest version: the plan was revised once
    expect(names.some((n) => /^implementation_plan implementation_plan-1 v2 /.test(n))).toBe(true);
    expect(new Set(task.artifacts.map((a) => a.artifactId)).size).toBe(task.artifacts.length);
    expect(names).toContain('completion');
  });
});
