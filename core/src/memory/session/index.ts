/** Memory stores in sessions: the session resource, the warmup mount and the idle write-back. */
export * from './resources.js';
export * from './mount.js';
export * from './readers.js';
export * from './writeBack.js';
export * from './prompt.js';
