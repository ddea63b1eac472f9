/** The tests generated from the worker chart's graph (test/model/suite.ts). */
import { modelSuite } from './suite.js';

modelSuite(['worker']);
