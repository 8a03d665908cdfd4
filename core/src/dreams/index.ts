export { DreamService, DREAM_PREFIX, type DreamDeps } from './dreams.js';
export { renderDream, type Dream, type DreamDoc } from './records.js';
export { DreamFailure, parseAnswer, DREAM_SYSTEM } from './run.js';
