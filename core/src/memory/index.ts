export {
  MemoryService,
  sha256Hex,
  type MemorySearchHook,
  type MemoryUpdateInput,
} from './memory.js';
export {
  nextSweepAt,
  sweepUnderLease,
  SWEEP_LEASE_KEY,
  SWEEP_SCHEDULE,
  sweepVersions,
  VERSION_RETENTION_MS,
} from './sweep.js';
export {
  renderMemory,
  renderStore as renderMemoryStore,
  renderVersion as renderMemoryVersion,
} from './render.js';
export type { Memory, MemoryStore, MemoryVersion } from './render.js';
export type { MemoryListItem } from './listing.js';
export { checkMemoryPath, checkPathPrefix } from './paths.js';
export * from './records.js';
