/** The tests generated from the subtask chart's graph (test/model/suite.ts). */
import { modelSuite } from './suite.js';

modelSuite(['subtask']);
