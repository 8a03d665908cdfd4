/**
 * Outcomes: `user.define_outcome`, its send-time checks (./define.ts), the session's outcome
 * state (./records.ts) and the grader's request and verdict (./grader.ts). The worker's turn
 * runs the evaluation cycles (workers/src/turn/outcome.ts).
 */
export * from './records.js';
export { prepareOutcome, withOutcomeState, type RubricFileReader } from './define.js';
export {
  graderMessages,
  parseVerdict,
  GRADER_SYSTEM,
  type Evidence,
  type Verdict,
} from './grader.js';
