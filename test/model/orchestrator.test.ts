/** The tests generated from the orchestrator chart's graph (test/model/suite.ts). */
import { modelSuite } from './suite.js';

modelSuite(['orchestrator']);
