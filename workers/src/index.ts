export { TurnRunner } from './turnRunner.js';
export { buildHistory } from './history.js';
