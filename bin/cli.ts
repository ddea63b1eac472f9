/**
 * The `a2a` command line (bin/a2a.ts runs it). `bin/` is the only place where concrete adapters
 * are chosen and wired.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import { A2AError, isA2AError } from '../actors/errors.js';
import type { RunIo } from './commands/run.js';
import { redactText, secrets } from '../actors/config/secrets.js';
import { ArtifactType } from '../machines/protocol/index.js';
import { GRAPH_FORMATS, GRAPH_MACHINES } from './commands/graphNames.js';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The version in the package.json above this file (bin/ when run from source, dist/bin/ when built). */
function packageVersion(): string {
  for (let dir = dirname(fileURLToPath(import.meta.url)); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'a2a' && pkg.version) return pkg.version;
    } catch {
      // not here: one level up
    }
  }
  return 'unknown';
}

/**
 * Every command that works on a run takes `--run <runId>`; those with a run-id argument accept
 * either (not two different ones).
 */
function runOf(positional: string | undefined, option: string | undefined): string | undefined {
  if (positional && option && positional !== option) {
    throw new A2AError('VALIDATION_ERROR', `two runs named: ${positional} and --run ${option}; name it once`, { where: '--run' });
  }
  return positional ?? option;
}

/**
 * Each command's module is loaded when that command runs, never at start: the SDKs behind them
 * (NATS, OpenAI, Anthropic, simple-git, the inspector's websocket, the A2A SDK, @xstate/graph)
 * cost 0.8 s of a start that printing `--version` or running a local plan does not need.
 */
const commands = {
  run: () => import('./commands/run.js'),
  host: () => import('./commands/host.js'),
  gateway: () => import('./commands/gateway.js'),
  monitor: () => import('./commands/monitor.js'),
  manage: () => import('./commands/manage.js'),
  artifacts: () => import('./commands/artifacts.js'),
  agents: () => import('./commands/agents.js'),
  config: () => import('./commands/config.js'),
  graph: () => import('./commands/graph.js'),
  inspect: () => import('./commands/inspect.js'),
  stop: () => import('./commands/stop.js'),
  nats: () => import('./commands/nats.js'),
};

/** Each command's examples, shown at the end of its help. */
const EXAMPLES: Record<string, string[]> = {
  run: ['a2a run examples/oauth', 'a2a run plan.json --model fast', 'a2a run "add a --verbose flag to the CLI" --agent @coder', 'a2a run --workflow sdlc "a URL shortener with tests"', 'a2a run --resume <runId>'],
  host: ['a2a host --nats nats://127.0.0.1:4222 --namespace team --agents coder,reviewer'],
  gateway: ['a2a gateway --nats nats://127.0.0.1:4222 --namespace team --serve coder=coding_agent,reviewer=review_agent'],
  monitor: ['a2a monitor --nats nats://127.0.0.1:4222 --namespace team'],
  status: ['a2a status', 'a2a status --run <runId> --json'],
  artifacts: ['a2a artifacts', 'a2a artifacts <runId> --show code-2@1'],
  inbox: ['a2a inbox', 'a2a inbox approve 1', 'a2a inbox answer 2 "use PostgreSQL"'],
  reassign: ['a2a reassign login @debugger'],
  redirect: ['a2a redirect login "keep the public API unchanged"'],
  reinit: ['a2a reinit login "start over with the OAuth device flow"'],
  pause: ['a2a pause', 'a2a pause <runId>'],
  resume: ['a2a resume', 'a2a resume login'],
  retry: ['a2a retry'],
  model: ['a2a model login smart'],
  audit: ['a2a audit', 'a2a audit <runId> --format md'],
  agents: ['a2a agents', 'a2a agents --json'],
  config: ['a2a config validate', 'a2a config export --out team.yaml', 'a2a config import team.yaml --dry-run'],
  graph: ['a2a graph worker', 'a2a graph orchestrator --format json', 'a2a graph idleInquiry --format paths'],
  inspect: ['a2a inspect', 'a2a inspect --port 0'],
  studio: ['a2a studio', 'a2a studio --port 7420', 'a2a studio --nats nats://127.0.0.1:4222 --namespace team'],
  serve: ['a2a serve --a2a', 'a2a serve --a2a --port 7430 --agent coder', 'A2A_SERVE_TOKEN=… a2a serve --a2a --host 0.0.0.0'],
  mcp: ['a2a mcp', 'a2a mcp --http --port 7410', 'claude mcp add a2a -- npx a2a mcp   (Claude Code: a2a as its MCP server)'],
  stop: ['a2a stop', 'a2a stop <runId>'],
  nats: ['a2a nats users --out /etc/nats/a2a --host alpha=coder,reviewer --host beta=coder', 'a2a nats users --out ./nats --host alpha --gateway gw --agent ext1 --passwords'],
};

/** A repeatable option's values. */
const collect = (value: string, list: string[]) => [...list, value];

const int = (name: string, min = 0) => (value: string) => {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`${name} must be an integer >= ${min}, got "${value}"`);
  return n;
};

/** Runs the CLI; returns the exit code instead of exiting, so that tests can call it. */
/**
 * The stream, printing with secrets replaced by markers. Everything else (isTTY, columns, events)
 * is the stream's own, so that a terminal is still a terminal.
 */
function redacting<T extends NodeJS.WritableStream>(stream: T): T {
  return new Proxy(stream, {
    get(target, property, receiver) {
      if (property === 'write') {
        return (chunk: unknown, ...rest: unknown[]) =>
          (target.write as (...args: unknown[]) => boolean).call(target, typeof chunk === 'string' ? redactText(chunk) : chunk, ...rest);
      }
      const value = Reflect.get(target, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

export async function main(argv: string[], given: RunIo = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  // the secrets of this process's environment, and everything it prints redacted (actors/config/secrets.ts)
  secrets.addFromEnv(process.env);
  const io: RunIo = { ...given, stdout: redacting(given.stdout), stderr: redacting(given.stderr) };
  let code = 0;
  const note = (text: string) => void io.stderr.write(`a2a: ${text}\n`);
  const program = new Command()
    .name('a2a')
    .description('An actor runtime for teams of LLM agents: an orchestrator, workers and sub-tasks as XState actors.')
    .version(packageVersion(), '-V, --version', 'print the version')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });

  program
    .command('run')
    .description('Run a plan (file or directory with plan.json) or a single task given in quotes; or continue a killed run with --resume')
    .argument('[target]', 'plan.json, a directory holding plan.json, or "a task in quotes"')
    .option('--resume <runId>', 'continue a run that was killed, from its checkpoint and inbox journal')
    .option('--model <profile>', 'model profile (or model name) for workers whose task names none')
    .option('--workflow <name>', 'run a workflow instead of a plan: sdlc (the target is the goal in quotes, or a workflow.json)')
    .option('--nats <url>', 'deploy workers to hosts (a2a host) over this NATS server; credentials from A2A_NATS_USER/PASSWORD/TOKEN/INBOX_PREFIX')
    .option('--namespace <ns>', 'NATS namespace shared with the hosts (default: default)')
    .addOption(new Option('--questions <who>', 'who answers worker questions').choices(['policy', 'model', 'human']))
    .addOption(new Option('--on-complete <action>', "what happens to a finished worker's branch").choices(['merge', 'pr', 'review', 'keep']))
    .addOption(new Option('--worktrees <mode>', 'a git worktree per worker (auto: when the workspace is a git repository)').choices(['auto', 'on', 'off']))
    .option('--agent <type>', 'agent type for a task, or for plan tasks that name none (e.g. @coder, claude:reviewer)')
    .option('--json', 'print one JSON event per line (each with runId and correlation ids) instead of the tree')
    .option('--no-tree', 'print the log without redrawing the tree, even on a terminal')
    .option('--standalone', 'run a single task as a standalone session (no orchestrator; sub-tasks nest one level)')
    .option('--script <file>', 'scripted-model script (JSON) to use')
    .option('--config <file>', 'configuration file (default: a2a.config.json or .yaml in the workspace)')
    .option('--workspace <dir>', 'workspace directory (default: the current directory)')
    .option('--run-id <id>', 'use this run id instead of a generated one')
    .option('--inspect [ws-url]', 'send the run to the Stately inspector (see `a2a inspect`; default ws://127.0.0.1:8080)')
    .option('--otel <url>', 'export traces (OpenTelemetry, OTLP/HTTP) to this endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT when set)')
    .option('--otel-content', 'with traces: prompts, outputs, tool arguments and results as span attributes (redacted)')
    .addOption(new Option('--max-depth <n>', 'deepest sub-task level').argParser(int('--max-depth')))
    .addOption(new Option('--max-parallel <n>', 'sub-tasks of one parent running at once').argParser(int('--max-parallel', 1)))
    .addOption(new Option('--max-subtasks <n>', 'sub-tasks per worker in total').argParser(int('--max-subtasks')))
    .addOption(new Option('--spawn-rate <n>', 'spawns per minute per worker').argParser(int('--spawn-rate', 1)))
    .addOption(new Option('--max-workers <n>', 'workers running at once').argParser(int('--max-workers', 1)))
    .addOption(new Option('--max-turns <n>', 'model calls per session').argParser(int('--max-turns', 1)))
    .addOption(new Option('--subtask-timeout <ms>', 'deadline of each sub-task').argParser(int('--subtask-timeout', 1)))
    .addOption(new Option('--idle-threshold <ms>', 'idle time before an idle inquiry').argParser(int('--idle-threshold')))
    .addOption(new Option('--inquiry-delay <ms>', 'grace period before the inquiry is sent').argParser(int('--inquiry-delay')))
    .addOption(new Option('--inquiry-timeout <ms>', 'time to answer an inquiry').argParser(int('--inquiry-timeout', 1)))
    .action(async (target: string | undefined, options) => {
      code = await (await commands.run()).runCommand(target, options, io);
    });

  program
    .command('host')
    .description('A headless actor host: serves agent types for every run of a NATS namespace, drains on SIGTERM')
    .requiredOption('--nats <url>', 'NATS server (credentials from A2A_NATS_USER/PASSWORD/TOKEN/INBOX_PREFIX)')
    .requiredOption('--agents <types>', 'agent types to serve, comma-separated (e.g. coder,reviewer)')
    .addOption(new Option('--concurrency <n>', 'sessions taken from the queue at once').argParser(int('--concurrency', 1)))
    .option('--namespace <ns>', 'namespace (default: default)')
    .option('--id <hostId>', 'host id (default: hostname-pid)')
    .option('--workspace <dir>', 'workspace (config, agents, worktrees)')
    .option('--config <file>', 'configuration file')
    .option('--script <file>', 'scripted-model script')
    .option('--otel <url>', 'export traces (OpenTelemetry, OTLP/HTTP) to this endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT when set)')
    .option('--otel-content', 'with traces: prompts, outputs, tool arguments and results as span attributes (redacted)')
    .addOption(new Option('--drain <ms>', 'on SIGTERM, how long running sessions may finish before they are handed back').argParser(int('--drain')))
    .addOption(new Option('--heartbeat <ms>', 'heartbeat interval (a host silent for 3 is taken as dead)').argParser(int('--heartbeat', 100)))
    .action(async (options) => {
      code = await (await commands.host()).hostCommand(options, io);
    });

  program
    .command('gateway')
    .description('Serve agent types with external agents speaking the external-agent protocol (register, take tasks, report) over NATS; drains on SIGTERM')
    .requiredOption('--nats <url>', 'NATS server (credentials from A2A_NATS_USER/PASSWORD/TOKEN/INBOX_PREFIX)')
    .requiredOption('--serve <map>', 'a2a agent = the external agent_type, comma-separated (e.g. coder=coding_agent,reviewer=review_agent)')
    .option('--namespace <ns>', 'namespace (default: default)')
    .option('--prefix <subject>', 'subject prefix of the external-agent routing (default: a2a.<ns>.swarm)')
    .option('--id <hostId>', 'gateway (host) id (default: gateway-hostname-pid)')
    .addOption(new Option('--ack-timeout <ms>', 'how long an agent has to acknowledge a task (default 30000)').argParser(int('--ack-timeout', 1)))
    .addOption(new Option('--task-timeout <ms>', 'how long an agent may work on a task before it is reassigned (default 1800000)').argParser(int('--task-timeout', 1)))
    .addOption(new Option('--heartbeat <ms>', 'the agents\' heartbeat interval; silent for 3 is unresponsive (default 30000)').argParser(int('--heartbeat', 10)))
    .addOption(new Option('--max-attempts <n>', 'offers of a task before it fails (default 3)').argParser(int('--max-attempts', 1)))
    .addOption(new Option('--agent-wait <ms>', 'how long a task waits for an agent with free capacity (default 300000)').argParser(int('--agent-wait', 1)))
    .addOption(new Option('--concurrency <n>', 'tasks taken from the queue at once (default 64)').argParser(int('--concurrency', 1)))
    .addOption(new Option('--drain <ms>', 'on SIGTERM, how long running tasks may finish before they are handed back').argParser(int('--drain')))
    .option('--shared-subject', 'also accept the spec\'s shared <prefix>.orchestrator.messages, whose sender_id nobody can verify (default: refused; agents publish on <prefix>.orchestrator.messages.<agent_id>)')
    .action(async (options) => {
      code = await (await commands.gateway()).gatewayCommand(options, io);
    });

  /** A NATS subject token: what a namespace or a run id may be made of when the monitor subscribes to it. */
  const token = (name: string) => (value: string) => {
    if (!/^[A-Za-z0-9_-]+$/.test(value)) throw new InvalidArgumentError(`${name} may contain letters, digits, "_" and "-" only, got "${value}"`);
    return value;
  };
  program
    .command('monitor')
    .description('Watch runs across hosts live over NATS: the tree with the host of each session, host liveness and load, metrics')
    .requiredOption('--nats <url>', 'NATS server (credentials from A2A_NATS_USER/PASSWORD/TOKEN/INBOX_PREFIX, and JS_API_PREFIX when its account imports JetStream)')
    .addOption(new Option('--namespace <ns>', 'namespace (default: default)').argParser(token('--namespace')))
    .addOption(new Option('--run <runId>', 'watch this run only (default: every run of the namespace)').argParser(token('--run')))
    .option('--json', 'print NDJSON: one line per event ("kind":"event"), per host change ("kind":"host") and periodic snapshots ("kind":"snapshot")')
    .option('--until-done', 'exit after the --run run finished (with a final snapshot)')
    .addOption(new Option('--for <ms>', 'exit after this long').argParser(int('--for', 1)))
    .addOption(new Option('--interval <ms>', 'snapshot period with --json, refresh period of the view (default 1000)').argParser(int('--interval', 50)))
    .action(async (options) => {
      code = await (await commands.monitor()).monitorCommand(options, io);
    });

  program
    .command('status')
    .description('A run\'s tasks, worker states, inbox depth and metrics, what waits for a person, and the conversations')
    .argument('[runId]', 'run (default: the latest in progress, else the latest); or --run')
    .option('--run <runId>', 'run (default: the latest in progress, else the latest)')
    .option('--json', 'print as JSON')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (runId: string | undefined, options) => {
      const run = runOf(runId, options.run);
      code = (await commands.manage()).statusCommand({ ...options, ...(run ? { run } : {}), note }, io.stdout);
    });

  program
    .command('artifacts')
    .description("A run's artifacts (plans, structure, code, reviews, docs, test results): a table, or one's content with --show")
    .argument('[runId]', 'run (default: the latest); or --run')
    .option('--run <runId>', 'run (default: the latest)')
    .addOption(new Option('--type <type>', 'only artifacts of this type').choices([...ArtifactType.options]))
    .option('--show <id[@version]>', 'print the content of an artifact (default: its latest version)')
    .option('--json', 'print the records (or with --show the stored content) as JSON')
    .option('--workspace <dir>', 'workspace directory')
    .option('--nats <url>', 'for a run deployed over NATS: read its artifacts from the KV bucket (read only)')
    .addOption(new Option('--namespace <ns>', 'NATS namespace (default: default)').argParser(token('--namespace')))
    .action(async (runId: string | undefined, options) => {
      code = await (await commands.artifacts()).artifactsCommand(runOf(runId, options.run), { ...options, note }, io);
    });

  program
    .command('inbox')
    .description('What waits for a person in a run in progress: list, approve, deny (permissions), answer (questions)')
    .argument('[action]', 'list (default), approve, deny, answer')
    .argument('[ids...]', 'item ids or their numbers in the list; for answer: <id> "<text>"')
    .option('--all', 'with approve: every pending permission request')
    .option('--reason <text>', 'why (kept in the audit trail)')
    .option('--run <runId>', 'run (default: the latest in progress)')
    .option('--json', 'list as JSON')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (action: string | undefined, ids: string[], options) => {
      code = await (await commands.manage()).inboxCommand(action, ids, { ...options, note }, io.stdout);
    });

  const VALUES: Record<string, string> = {
    agent: 'the agent type to run it as, e.g. @debugger (see a2a agents)',
    instructions: 'the new instructions, in quotes',
    profile: 'a model profile (see a2a config validate), or a model name',
  };
  const manage = (name: string, command: 'reassign' | 'redirect' | 'reinitialize' | 'resume' | 'switch_model', description: string, valueName?: string) => {
    const c = program.command(name).description(description).argument('<task>', 'plan task id');
    if (valueName) c.argument(`<${valueName}>`, VALUES[valueName]);
    c.option('--run <runId>', 'run (default: the latest in progress)')
      .option('--workspace <dir>', 'workspace directory')
      .action(async (task: string, ...rest: unknown[]) => {
        const value = valueName ? (rest[0] as string) : undefined;
        const options = rest[valueName ? 1 : 0] as { run?: string; workspace?: string };
        code = await (await commands.manage()).manageCommand(command, task, value, { ...options, note }, io.stdout);
      });
  };
  manage('reassign', 'reassign', 'Give a running worker another agent type (new instructions and tools; its conversation is kept)', 'agent');
  manage('redirect', 'redirect', 'Send a running worker new instructions without resetting it', 'instructions');
  manage('reinit', 'reinitialize', 'Restart a running worker from scratch with new instructions (its sub-tasks are cancelled)', 'instructions');
  program
    .command('pause')
    .description('Pause a run: its agents finish their current model call and wait; a workflow stops at its next step boundary (survives --resume)')
    .argument('[runId]', 'run (default: the latest in progress); or --run')
    .option('--run <runId>', 'run (default: the latest in progress)')
    .option('--reason <text>', 'why, for the record')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (runId: string | undefined, options: { workspace?: string; reason?: string; run?: string }) => {
      code = await (await commands.manage()).runControlCommand('pause', runOf(runId, options.run), { ...options, note }, io.stdout);
    });
  program
    .command('resume')
    .description('Resume a paused run (or a workflow in ERROR where it was); given a task id, resume the worker its circuit breaker or a spent budget paused')
    .argument('[target]', 'a run id (default: the latest in progress), or a task id')
    .option('--run <runId>', 'run of the task (default: the latest in progress)')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (target: string | undefined, options: { run?: string; workspace?: string }) => {
      code = await (await commands.manage()).resumeCommand(target, { ...options, note }, io.stdout);
    });
  program
    .command('retry')
    .description("Run again the step a workflow in ERROR failed in (workflow.onError: wait)")
    .argument('[runId]', 'run (default: the latest in progress); or --run')
    .option('--run <runId>', 'run (default: the latest in progress)')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (runId: string | undefined, options: { workspace?: string; run?: string }) => {
      code = await (await commands.manage()).runControlCommand('retry', runOf(runId, options.run), { ...options, note }, io.stdout);
    });
  manage('model', 'switch_model', "Switch a running worker to another model profile (its conversation is kept, summarized if it does not fit)", 'profile');

  program
    .command('audit')
    .description('Export a run\'s audit trail: every A2A operation with its full context')
    .argument('[runId]', 'run (default: the latest); or --run')
    .option('--run <runId>', 'run (default: the latest)')
    .addOption(new Option('--format <format>', 'output format').choices(['json', 'md']).default('json'))
    .option('--workspace <dir>', 'workspace directory')
    .action(async (runId: string | undefined, options) => {
      code = (await commands.manage()).auditCommand(runOf(runId, options.run), { ...options, note }, io.stdout);
    });

  program
    .command('agents')
    .description('List the agent registry (built-in, workspace .github/agents/, user config)')
    .option('--json', 'print as JSON')
    .option('--config <file>', 'configuration file')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (options) => {
      code = (await commands.agents()).agentsCommand(options, io.stdout);
    });

  const config = program.command('config').description('The workflow\'s roles and the model profiles: validate them, export them to a portable document, import one');
  config
    .command('validate')
    .description('Load the configuration as a run would and check the roles\' agents and profiles and the reviewers (exit 1 when invalid)')
    .option('--workspace <dir>', 'workspace directory')
    .option('--config <file>', 'configuration file (default: a2a.config.json or .yaml in the workspace)')
    .option('--json', 'print the result as JSON: { isValid, errors, warnings }')
    .action(async (options) => {
      code = (await commands.config()).configValidateCommand(options, io);
    });
  config
    .command('export')
    .description('Write the effective roles and the profiles as { version: 1, workflow, models } (never a key)')
    .option('--workspace <dir>', 'workspace directory')
    .option('--config <file>', 'configuration file (default: a2a.config.json or .yaml in the workspace)')
    .addOption(new Option('--format <format>', 'output format (default: json, or yaml for an --out file ending in .yaml)').choices(['json', 'yaml']))
    .option('--out <file>', 'write to this file instead of printing')
    .action(async (options) => {
      code = (await commands.config()).configExportCommand(options, io);
    });
  config
    .command('import')
    .description('Merge a document\'s workflow and models sections into the workspace config file (nothing is written when the result would be invalid)')
    .argument('<file>', 'a document written by a2a config export (JSON or YAML)')
    .option('--workspace <dir>', 'workspace directory')
    .option('--dry-run', 'print the resulting config file instead of writing it')
    .action(async (file: string, options) => {
      code = (await commands.config()).configImportCommand(file, options, io);
    });

  program
    .command('graph')
    .description('Print a machine\'s graph: a Mermaid stateDiagram-v2, JSON, or the paths the model-based tests run')
    .argument('<machine>', GRAPH_MACHINES.join(', '))
    .addOption(new Option('--format <format>', 'output format').choices([...GRAPH_FORMATS]).default('mermaid'))
    .action(async (machine: string, options) => {
      code = (await commands.graph()).graphCommand(machine, options, io.stdout);
    });

  program
    .command('inspect')
    .description('Start the relay for the Stately inspector: open the printed page, then run with --inspect')
    .addOption(new Option('--port <n>', 'port (0: any free port)').argParser(int('--port')).default(8080))
    .option('--host <host>', 'interface to listen on (the events carry whole conversations: loopback unless you mean it)', '127.0.0.1')
    .action(async (options) => {
      code = await (await commands.inspect()).inspectCommand(options, io.stdout);
    });

  program
    .command('mcp')
    .description('Serve a2a over MCP, for an editor\'s agent (Claude Code, Cursor, VS Code): start runs, watch them, answer what they ask, read results')
    .option('--http', 'serve Streamable HTTP (MCP 2026-07-28, and earlier revisions statelessly) on 127.0.0.1 with a token (A2A_MCP_TOKEN, else one written to ~/.config/a2a/mcp-token) instead of stdio')
    .addOption(new Option('--port <n>', 'HTTP port (default: any free port)').argParser(int('--port')))
    .option('--host <host>', 'HTTP interface to listen on (default 127.0.0.1; another one needs A2A_MCP_TOKEN)')
    .option('--workspace <dir>', 'workspace directory (default: the current directory)')
    .action(async (options) => {
      // the MCP SDK is loaded only for this command
      const { mcpCommand } = await import('./commands/mcp.js');
      code = await mcpCommand(options, { stderr: io.stderr }, packageVersion());
    });

  program
    .command('serve')
    .description('Serve a2a over the Agent2Agent protocol (--a2a): other agents send it tasks, follow them, answer its questions, cancel them')
    .option('--a2a', 'the Agent2Agent protocol (JSON-RPC and REST, v1.0 and v0.3)')
    .addOption(new Option('--port <n>', 'port (default: any free port)').argParser(int('--port')))
    .option('--host <host>', 'interface to listen on (default 127.0.0.1; another one needs A2A_SERVE_TOKEN)')
    .option('--url <url>', 'the URL the agent card gives (behind a proxy; default: the address listened on)')
    .option('--agent <type>', 'the agent type of a message that names no skill (default: the config\'s default agent)')
    .option('--workspace <dir>', 'workspace directory (default: the current directory)')
    .option('--script <file>', 'script for the scripted model')
    .option('--model <profile>', 'model profile for the workers')
    .option('--config <file>', 'config file')
    .option('--nats <url>', 'run the tasks on a NATS deployment (hosts take their sub-tasks)')
    .option('--namespace <ns>', 'the NATS namespace (default: default)')
    .option('--otel <url>', 'export traces (OpenTelemetry, OTLP/HTTP) to this endpoint (default: OTEL_EXPORTER_OTLP_ENDPOINT when set)')
    .option('--otel-content', 'with traces: prompts, outputs, tool arguments and results as span attributes (redacted)')
    .addOption(new Option('--max-tasks <n>', 'tasks run at once; one more is rejected, saying so (default 32)').argParser(int('--max-tasks', 1)))
    .addOption(new Option('--retain-days <n>', 'days a finished task\'s record is kept (default 7)').argParser(int('--retain-days')))
    .action(async (options) => {
      const { serveCommand } = await import('./commands/serve.js');
      code = await serveCommand(options, { stderr: io.stderr }, packageVersion());
    });

  program
    .command('studio')
    .description('A web page to watch and steer runs: the live tree, transcripts, the inbox with approvals, audit, cost, workflows (and a NATS namespace with --nats)')
    .addOption(new Option('--port <n>', 'port (default: any free port)').argParser(int('--port')))
    .option('--host <host>', 'interface to bind (default 127.0.0.1; another one warns: the token is then the only protection)')
    .option('--nats <url>', 'also show the live runs and hosts of a NATS namespace, and open and steer its runs through their control subjects (as NATS user A2A_NATS_NAME, else A2A_NATS_USER)')
    .option('--namespace <ns>', 'the NATS namespace (default: default)')
    .option('--inspector <url>', 'the Stately inspector page sessions link to (a2a inspect; default http://127.0.0.1:8080)')
    .option('--trace-url <template>', 'link runs and sessions traced with --otel to your tracing backend: an http(s) URL with {traceId} (and {spanId}), e.g. http://127.0.0.1:16686/trace/{traceId}?uiFind={spanId} (Jaeger); also A2A_TRACE_URL')
    .option('--workspace <dir>', 'workspace directory (default: the current directory)')
    .action(async (options) => {
      const { studioCommand } = await import('./commands/studio.js');
      code = await studioCommand(options, { ...io, url: given.stdout });
    });

  program
    .command('stop')
    .description('Emergency stop of a run in progress: the whole tree is cancelled and every child reports cancelled')
    .argument('[runId]', 'run to stop (default: the latest run in progress); or --run')
    .option('--run <runId>', 'run to stop (default: the latest run in progress)')
    .option('--workspace <dir>', 'workspace directory')
    .action(async (runId: string | undefined, options) => {
      code = (await commands.stop()).stopCommand(runOf(runId, options.run), { ...options, note }, io.stdout);
    });

  const nats = program.command('nats').description('NATS deployment helpers');
  nats
    .command('users')
    .description('Write a nats-server configuration with one user per process (orchestrator, each host and gateway, the monitor, studios, external agents) and the least rights each needs, and each process\'s credentials')
    .requiredOption('--out <dir>', 'directory for server.conf (and, with nkeys, a <user>.nk seed file and <user>.env per process, mode 0600)')
    .option('--namespace <ns>', 'namespace', 'default')
    .option('--host <id[=agents]>', 'a host (a2a host --id <id>); =coder,reviewer pins the agent types whose spawns it may take (repeatable)', collect, [])
    .option('--gateway <id[=agents]>', 'a gateway (a2a gateway --id <id>), as --host (repeatable)', collect, [])
    .option('--agent <id>', 'an external agent (seed 004) (repeatable)', collect, [])
    .option('--studio <name>', 'a studio (a2a studio --nats) that may steer the runs (approve, answer, pause, stop …) as user studio-<name> (repeatable)', collect, [])
    .addOption(new Option('--runs <n>', 'runs of the namespace at once: the run box slots the orchestrator may read').argParser(int('--runs')).default(16))
    .option('--passwords', 'users with passwords read from the server\'s environment ($A2A_<USER>_PASSWORD) instead of nkeys')
    .option('--listen <addr>', 'the server\'s listen address', '127.0.0.1:4222')
    .option('--store <dir>', 'JetStream store directory', '/var/lib/nats/a2a')
    .option('--force', 'replace files already there')
    .action(async (options) => {
      code = (await commands.nats()).natsUsersCommand(options, io.stdout);
    });

  // every command that connects to NATS may be told to connect off loopback without credentials or TLS
  for (const command of program.commands) {
    if (command.options.some((o) => o.long === '--nats')) command.option('--insecure', 'connect to a NATS server that is not loopback without credentials or TLS (refused otherwise; A2A_NATS_INSECURE=1 does the same)');
  }
  const insecureBefore = process.env.A2A_NATS_INSECURE;
  program.hook('preAction', (_program, action) => {
    if ((action.opts() as { insecure?: boolean }).insecure) process.env.A2A_NATS_INSECURE = '1';
  });

  for (const command of program.commands) {
    const examples = EXAMPLES[command.name()];
    // a command's sub-commands (a2a nats users) show their group's
    if (examples) for (const c of [command, ...command.commands]) c.addHelpText('after', `\nExamples:\n${examples.map((e) => `  $ ${e}`).join('\n')}\n`);
  }
  program.addHelpText('after', `\nExamples:\n  $ a2a run examples/oauth\n  $ a2a run "fix the failing test in src/" --agent @debugger\n  $ a2a status\n\nEach command has its own help: a2a help <command>.\n`);

  try {
    await program.parseAsync(argv, { from: 'user' });
    return code;
  } catch (error) {
    const e = error as { code?: string; exitCode?: number; message?: string };
    if (typeof e.code === 'string' && e.code.startsWith('commander.')) {
      // help is not an error; everything else commander rejects is a usage error
      return e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help' ? 0 : 2;
    }
    if (isA2AError(error)) {
      io.stderr.write(`a2a: ${error.message}\n`);
      return error.fault === 'user' ? 2 : 1;
    }
    io.stderr.write(`a2a: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return 1;
  } finally {
    // a program that calls main() twice (the tests) gets the setting it had
    if (insecureBefore === undefined) delete process.env.A2A_NATS_INSECURE;
    else process.env.A2A_NATS_INSECURE = insecureBefore;
  }
}
