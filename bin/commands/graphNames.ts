/**
 * The names `a2a graph` takes, apart from the command (bin/commands/graph.ts), whose graphs load
 * @xstate/graph and every chart: the CLI's help lists them without loading either.
 */

/** The machines `a2a graph` draws (a test checks that it is the list actors/graph/index.ts has). */
export const GRAPH_MACHINES = ['orchestrator', 'worker', 'subtask', 'idleInquiry', 'taskBranch', 'externalTask', 'sdlcWorkflow'] as const;

/** The output formats of `a2a graph`. */
export const GRAPH_FORMATS = ['mermaid', 'json', 'paths'] as const;
