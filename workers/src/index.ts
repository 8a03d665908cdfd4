export { TurnRunner } from './turn/runner.js';
export { buildHistory, HistoryBuilder } from './turn/history.js';
export { ToolExecutor, toolSpecs, classify } from './tools/executor.js';
export { startWorker, type RunningWorker } from './startWorker.js';
export type { TurnServices, WorkerServices } from './services.js';
export { SessionLogCache, DEFAULT_LOG_CACHE_BYTES } from './turn/sessionLogCache.js';
export { OpenCalls } from './turn/openCalls.js';
export { TurnControl } from './turn/control.js';
export { TurnAborted } from './turn/events.js';
