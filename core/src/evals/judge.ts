/**
 * Judging one finished case (core/src/evals). Each judge the case names gives a check:
 * - `expected_text`: passes when the agent's messages after the prompt contain the text
 *   (whitespace runs compared as one space; case-sensitive);
 * - `rubric`: the outcome grader's verdict on the case's session (the case was sent as a
 *   `user.define_outcome` with `max_iterations: 1`): `satisfied` passes, anything else fails
 *   with the grader's explanation;
 * - `check_command`: run in the case's sandbox (cwd /workspace, 120 s); exit 0 passes, else the
 *   exit status and the output's tail are the reason.
 * score = passed checks / checks; passed = every check passed. Proved by
 * test/e2e/evals/evals.test.ts.
 */
import type { EventDoc } from '../events/records.js';
import type { SessionDoc } from '../sessions/records.js';
import type { EvalCaseDoc, EvalCheckDoc } from './records.js';

/** What running a check command in a case's sandbox answers. */
export interface CheckResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}
/** Runs a command in the sandbox of (tenant, session, environment); the worker supplies it. */
export type CheckRunner = (
  ref: { tenantId: string; sessionId: string; environmentId: string },
  command: string,
) => Promise<CheckResult>;

export const CHECK_TIMEOUT_MS = 120_000;
const TAIL = 600;
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The text of the agent's messages in `events`. */
export function agentText(events: EventDoc[]): string {
  const parts: string[] = [];
  for (const e of events) {
    if (e.type !== 'agent.message') continue;
    const content = (e.payload as { content?: Array<{ type?: string; text?: unknown }> }).content;
    for (const b of content ?? [])
      if (b?.type === 'text' && typeof b.text === 'string') parts.push(b.text);
  }
  return parts.join('\n');
}

export function expectedTextCheck(expected: string, answer: string): EvalCheckDoc {
  const found = squash(answer).includes(squash(expected));
  return {
    type: 'expected_text',
    passed: found,
    reason: found
      ? 'the answer contains the expected text'
      : 'the expected text is not in the answer',
  };
}

export function rubricCheck(session: SessionDoc): EvalCheckDoc {
  const outcomes = Object.values(session.outcomes ?? {}).sort(
    (a, b) => b.defined_seq - a.defined_seq,
  );
  const o = outcomes[0];
  if (!o) return { type: 'rubric', passed: false, reason: 'the session has no outcome to judge' };
  const passed = o.result === 'satisfied';
  return {
    type: 'rubric',
    passed,
    reason: o.explanation ?? `the outcome ended ${o.result}`,
  };
}

const tail = (s: string) => (s.length > TAIL ? `…${s.slice(-TAIL)}` : s);

export async function commandCheck(
  run: CheckRunner | null,
  c: EvalCaseDoc,
  session: SessionDoc,
): Promise<EvalCheckDoc> {
  if (!run)
    return { type: 'check_command', passed: false, reason: 'no sandbox runs check commands here' };
  let r: CheckResult;
  try {
    r = await run(
      { tenantId: c.tenant_id, sessionId: session._id, environmentId: session.environment_id },
      c.check_command!,
    );
  } catch (err) {
    return {
      type: 'check_command',
      passed: false,
      reason: `the check could not run: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (r.exitCode === 0) return { type: 'check_command', passed: true, reason: 'exit 0' };
  const status = r.timedOut
    ? `timed out after ${CHECK_TIMEOUT_MS / 1000} s`
    : r.signal
      ? `killed by ${r.signal}`
      : `exit ${r.exitCode}`;
  const out = tail((r.stderr || r.stdout).trim());
  return { type: 'check_command', passed: false, reason: out ? `${status}: ${out}` : status };
}

/** The case's verdict from its checks. */
export function verdict(checks: EvalCheckDoc[]) {
  const passedN = checks.filter((c) => c.passed).length;
  const failed = checks.find((c) => !c.passed);
  const rubric = checks.find((c) => c.type === 'rubric');
  return {
    passed: !failed,
    score: checks.length ? Math.round((passedN / checks.length) * 10_000) / 10_000 : 0,
    reason: failed
      ? `${failed.type}: ${failed.reason}`
      : rubric
        ? rubric.reason
        : `${checks.length} of ${checks.length} checks passed`,
  };
}
