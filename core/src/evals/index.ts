export { EvalService, type EvalDeps } from './service.js';
export { EvalWork, relayEvalIdles } from './work.js';
export { CHECK_TIMEOUT_MS, type CheckResult, type CheckRunner } from './judge.js';
export type { EvalCaseDoc, EvalRunDoc } from './records.js';
