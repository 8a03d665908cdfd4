export { EvalService, relayEvalIdles, type EvalDeps } from './service.js';
export { CHECK_TIMEOUT_MS, type CheckResult, type CheckRunner } from './judge.js';
export type { EvalCaseDoc, EvalRunDoc } from './records.js';
