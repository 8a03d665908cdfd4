export { DreamService, DREAM_PREFIX, type DreamRunner, type DreamDeps } from './service.js';
export { renderDream, type Dream, type DreamDoc } from './docs.js';
export { DreamFailure, parseAnswer, DREAM_SYSTEM } from './run.js';
