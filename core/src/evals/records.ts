/**
 * Eval run records (core/src/evals). A run is one document; each case is a document of its own
 * (`eval_cases`), so every step of a case is a compare-and-swap on one document:
 *
 *   queued ──dispatch (slot free)──▶ starting ──claimed, session created──▶ running
 *      │                               │  (session id fixed at dispatch)      │ session idle
 *      │                               └─ create refused (4xx) ─▶ errored      ▼
 *      │                                                                    judging ──▶ completed
 *      └────────────── cancel (any non-final state) ─────────────────────▶ cancelled
 *
 * `claim`/`claimed_until` hold a worker's claim on `starting` and `judging`; a claim past its
 * time is taken over by the eval scan. A case's session id is written when the case is
 * dispatched, before any session exists, so a retaken case finds its session instead of making
 * a second one.
 */
import type { EvalCaseStatus, EvalRunStatus } from '@agentfleet/schemas';

export interface EvalUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}

export const zeroUsage = (): EvalUsage => ({
  input_tokens: 0,
  output_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
});

export interface EvalRunDoc {
  _id: string;
  tenant_id: string;
  name: string | null;
  status: EvalRunStatus;
  agent: { id: string; version: number };
  environment_id: string;
  concurrency: number;
  total: number;
  created_at: string;
  updated_at: string;
  ended_at: string | null;
}

export type CheckType = 'rubric' | 'check_command' | 'expected_text';

export interface EvalCheckDoc {
  type: CheckType;
  passed: boolean;
  reason: string;
}

export interface EvalCaseDoc {
  /** `<eval id>/<index>`: the bus commands name a case by this. */
  _id: string;
  tenant_id: string;
  eval_id: string;
  index: number;
  /** The case's own id (given, or `case_<n>`), unique in its run. */
  case_id: string;
  prompt: string;
  rubric: string | null;
  check_command: string | null;
  expected_text: string | null;
  status: EvalCaseStatus;
  claim: string | null;
  /** Epoch ms until which `claim` holds; 0: unclaimed. */
  claimed_until: number;
  /** Epoch ms of the dispatch (a lost start command is re-sent by the scan after a while). */
  dispatched_ms: number;
  attempts: number;
  session_id: string | null;
  /** The seq of the prompt in the session once it was sent: an idle after it ends the case. */
  prompt_seq: number | null;
  started_at: string | null;
  ended_at: string | null;
  passed: boolean | null;
  score: number | null;
  reason: string | null;
  checks: EvalCheckDoc[];
  usage: EvalUsage;
  cost: number | null;
  duration_ms: number | null;
  updated_at: string;
}

export const FINAL_CASE: EvalCaseStatus[] = ['completed', 'errored', 'cancelled'];
export const ACTIVE_CASE: EvalCaseStatus[] = ['starting', 'running', 'judging'];
export const LIVE_RUN: EvalRunStatus[] = ['queued', 'running'];

export function renderCase(c: EvalCaseDoc) {
  return {
    id: c.case_id,
    status: c.status,
    passed: c.passed,
    score: c.score,
    reason: c.reason,
    checks: c.checks,
    session_id: c.session_id,
    usage: c.usage,
    cost: c.cost,
    duration_ms: c.duration_ms,
  };
}

/**
 * The run's totals. `usage` sums every case's; `cost` is set once no case is pending and every
 * case that used tokens has a cost (null otherwise: a missing price is never a zero).
 */
export function summarize(cases: EvalCaseDoc[]) {
  const usage = zeroUsage();
  let cost: number | null = 0;
  let scored = 0;
  let scoreSum = 0;
  const n = { passed: 0, failed: 0, errored: 0, cancelled: 0, pending: 0 };
  for (const c of cases) {
    let used = 0;
    for (const k of Object.keys(usage) as Array<keyof EvalUsage>) {
      usage[k] += c.usage[k];
      used += c.usage[k];
    }
    if (c.status === 'completed') {
      if (c.passed) n.passed++;
      else n.failed++;
    } else if (c.status === 'errored') n.errored++;
    else if (c.status === 'cancelled') n.cancelled++;
    else n.pending++;
    if (used > 0) cost = c.cost === null || cost === null ? null : cost + c.cost;
    if (c.score !== null) {
      scored++;
      scoreSum += c.score;
    }
  }
  return {
    ...n,
    total: cases.length,
    score: scored ? Math.round((scoreSum / scored) * 10_000) / 10_000 : null,
    usage,
    cost: cost === null || n.pending ? null : Math.round(cost * 1e6) / 1e6,
  };
}

export function renderRun(r: EvalRunDoc, cases: EvalCaseDoc[], currency: string) {
  return {
    id: r._id,
    type: 'eval_run' as const,
    name: r.name,
    status: r.status,
    agent: { type: 'agent' as const, id: r.agent.id, version: r.agent.version },
    environment_id: r.environment_id,
    concurrency: r.concurrency,
    currency,
    cases: cases.map(renderCase),
    summary: summarize(cases),
    created_at: r.created_at,
    updated_at: r.updated_at,
    ended_at: r.ended_at,
  };
}
export type RenderedRun = ReturnType<typeof renderRun>;
