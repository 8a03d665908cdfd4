export { TurnRunner } from './turnRunner.js';
export { buildHistory, HistoryBuilder } from './history.js';
export { ToolExecutor, toolSpecs, classify } from './tools.js';
export { startWorker, type RunningWorker } from './startWorker.js';
export { SessionLogCache, DEFAULT_LOG_CACHE_BYTES } from './sessionLogCache.js';
export { OpenCalls } from './openCalls.js';
export { TurnControl } from './turnControl.js';
export { TurnAborted } from './turnEvents.js';
