// Tests never read the developer's own user config (~/.config/a2a): point it at an empty dir.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.A2A_CONFIG_HOME = mkdtempSync(join(tmpdir(), 'a2a-user-config-'));

// Every run event emitted through a run's bus, in every test, must match the schema of its type
// (machines/runEvents.ts): the library's typed events may not drift from what the emitters send.
import { afterAll } from 'vitest';
import { RunEventBus } from '../actors/events.js';
import { runEventDataProblem } from '../machines/runEvents.js';

const drifted: string[] = [];
const emit = RunEventBus.prototype.emit;
RunEventBus.prototype.emit = function checked(this: RunEventBus, event) {
  const problem = runEventDataProblem({ type: event.type, data: event.data ?? {} });
  if (problem && drifted.length < 20) drifted.push(`${event.type}: ${problem} (data: ${JSON.stringify(event.data).slice(0, 300)})`);
  return emit.call(this, event);
};
afterAll(() => {
  if (drifted.length) throw new Error(`run events that do not match their type's schema (machines/runEvents.ts):\n${drifted.join('\n')}`);
});
