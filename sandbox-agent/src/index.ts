/**
 * @agentfleet/sandbox-agent, host entry: what host code (core's sandbox drivers) needs from the
 * in-sandbox programs: the protocol's shared definitions, the line splitter, the in-memory tar,
 * the confinement code shared by the local driver and the Nomad launcher, and sandboxProgram,
 * the path of a program's bundled file. The programs themselves are agent/main.ts and
 * launcher/main.ts, bundled into dist/agent.mjs and dist/launcher.mjs.
 */
export * from './protocol.js';
export { lineSplitter } from './lineSplitter.js';
export * from './tar.js';
export { sandboxProgram, type SandboxProgramName } from './program.js';
export * from './limits/cgroups.js';
export * from './limits/confinement.js';
export * from './limits/diskQuota.js';
export * from './limits/seccomp.js';
export * from './limits/hostUser.js';
export type { SandboxLimitName, SandboxResources, WarningLog, ExecClient } from './limits/types.js';
