/**
 * One chart model per machine in machines/: the events that can reach it (with the payload
 * variants its guards distinguish), an abstraction of its context that keeps the graph finite,
 * inert doubles for its children (their events are path steps), and the invariants of every
 * step. test/model runs the paths generated from them; `a2a graph --format paths` prints them.
 * ("Chart models", not "models": the word means the LLMs everywhere else.)
 */
import { subtaskMachine } from '../../../machines/subtask.machine.js';
import { workerMachine } from '../../../machines/worker.machine.js';
import type { MachineModel } from '../paths.js';
import { externalTaskModel } from './externalTask.js';
import { idleInquiryModel } from './idleInquiry.js';
import { orchestratorModel } from './orchestrator.js';
import { sdlcModel } from './sdlcWorkflow.js';
import { sessionModel } from './session.js';
import { taskBranchModel } from './taskBranch.js';

export const chartModels: MachineModel[] = [
  sdlcModel,
  orchestratorModel,
  sessionModel('worker', workerMachine),
  sessionModel('subtask', subtaskMachine),
  idleInquiryModel,
  taskBranchModel,
  externalTaskModel,
];
