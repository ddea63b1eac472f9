// Runs before each test file. The files of a worker share its process and its modules
// (vitest.config.ts: isolate is off, which saves 90 s of imports), so each file starts from the
// same state: the globals and the environment the worker started with, no secrets registered, no
// OpenTelemetry globals (a tracer provider, a propagator) left by another file.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secrets } from '../actors/config/secrets.js';

const worker = globalThis as { a2aTestEnv?: NodeJS.ProcessEnv; a2aTestGlobals?: Set<string> };
// the globals a file added (a DOM for Mermaid makes the OpenAI SDK refuse to start: "a browser-like
// environment"), but Vitest's own
const globals = (worker.a2aTestGlobals ??= new Set([...Object.getOwnPropertyNames(globalThis), 'a2aTestEnv', 'a2aTestGlobals']));
for (const name of Object.getOwnPropertyNames(globalThis)) {
  if (!globals.has(name) && !name.startsWith('__vitest') && !name.startsWith('__vite')) delete (globalThis as Record<string, unknown>)[name];
}
const pristine = (worker.a2aTestEnv ??= { ...process.env });
for (const name of Object.keys(process.env)) if (!(name in pristine)) delete process.env[name];
Object.assign(process.env, pristine);
secrets.clear();
// where @opentelemetry/api 1.x keeps what was registered globally
delete (globalThis as Record<symbol, unknown>)[Symbol.for('opentelemetry.js.api.1')];

// Tests never read the developer's own user config (~/.config/a2a): point it at an empty dir.
process.env.A2A_CONFIG_HOME = mkdtempSync(join(tmpdir(), 'a2a-user-config-'));

// Every run event emitted through a run's bus, in every test, must match the schema of its type
// (machines/runEvents.ts): the library's typed events may not drift from what the emitters send.
import { afterAll } from 'vitest';
import { RunEventBus } from '../actors/observation/events.js';
import { runEventDataProblem } from '../machines/runEvents.js';

const drifted: string[] = [];
const emit = (RunEventBus.prototype.emit as { unchecked?: RunEventBus['emit'] }).unchecked ?? RunEventBus.prototype.emit;
RunEventBus.prototype.emit = Object.assign(function checked(this: RunEventBus, event: Parameters<RunEventBus['emit']>[0]) {
  const problem = runEventDataProblem({ type: event.type, data: event.data ?? {} });
  if (problem && drifted.length < 20) drifted.push(`${event.type}: ${problem} (data: ${JSON.stringify(event.data).slice(0, 300)})`);
  return emit.call(this, event);
}, { unchecked: emit });
afterAll(() => {
  if (drifted.length) throw new Error(`run events that do not match their type's schema (machines/runEvents.ts):\n${drifted.join('\n')}`);
});
