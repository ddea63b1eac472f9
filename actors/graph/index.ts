/** The machines of machines/, by name, with their graphs, diagrams and generated paths. */
import type { AnyStateMachine } from 'xstate';
import { idleInquiryMachine } from '../../machines/idleInquiry.machine.js';
import { orchestratorMachine } from '../../machines/orchestrator.machine.js';
import { subtaskMachine } from '../../machines/subtask.machine.js';
import { workerMachine } from '../../machines/worker.machine.js';
import { taskBranchMachine } from '../../machines/taskBranch.machine.js';
import { externalTaskMachine } from '../../machines/externalTask.machine.js';
import { sdlcWorkflowMachine } from '../../machines/sdlcWorkflow.machine.js';
import { chartModels } from './charts/index.js';

export const machines: Record<string, AnyStateMachine> = {
  orchestrator: orchestratorMachine,
  worker: workerMachine,
  subtask: subtaskMachine,
  idleInquiry: idleInquiryMachine,
  taskBranch: taskBranchMachine,
  externalTask: externalTaskMachine,
  sdlcWorkflow: sdlcWorkflowMachine,
};

export { chartModels };
export { toGraphJson, toMermaid } from './render.js';
export { describePath, generatePaths, machineGraph } from './paths.js';
