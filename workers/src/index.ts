export { TurnRunner } from './turnRunner.js';
export { buildHistory } from './history.js';
export { ToolExecutor, toolSpecs, classify } from './tools.js';
