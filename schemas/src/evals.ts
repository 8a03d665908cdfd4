import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Obj } from './common.js';

/**
 * Eval runs (`/v1/svc/evals`, `/v1/evals`): one agent version over a set of cases, each case
 * its own session, judged by a rubric (the outcome grader), a check command (exit 0 in the
 * case's sandbox) and/or expected text. Behaviour: core/src/evals; docs/evals.md.
 */
export const MAX_EVAL_CASES = 500;
export const MAX_EVAL_CONCURRENCY = 50;

export const EvalCaseInput = Obj({
  id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_.:-]+$' })),
  prompt: Type.String({ minLength: 1, maxLength: 100_000 }),
  rubric: Type.Optional(Type.String({ minLength: 1, maxLength: 50_000 })),
  check_command: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000 })),
  expected_text: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000 })),
});
export type EvalCaseInput = Static<typeof EvalCaseInput>;

export const EvalCreate = Obj({
  agent: Type.Union([
    Type.String({ minLength: 1, maxLength: 128 }),
    Obj({
      type: Type.Optional(Type.Literal('agent')),
      id: Type.String({ minLength: 1, maxLength: 128 }),
      version: Type.Optional(Type.Integer({ minimum: 1 })),
    }),
  ]),
  environment_id: Type.String({ minLength: 1, maxLength: 128 }),
  cases: Type.Optional(Type.Array(EvalCaseInput, { minItems: 1, maxItems: MAX_EVAL_CASES })),
  /** A file (Files API) of JSONL cases, one case object per line; instead of `cases`. */
  cases_file_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  concurrency: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_EVAL_CONCURRENCY })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});
export type EvalCreate = Static<typeof EvalCreate>;

export const EvalRunStatus = Type.Union([
  Type.Literal('queued'),
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
  Type.Literal('failed'),
]);
export type EvalRunStatus = Static<typeof EvalRunStatus>;

export const EvalCaseStatus = Type.Union([
  Type.Literal('queued'),
  Type.Literal('starting'),
  Type.Literal('running'),
  Type.Literal('judging'),
  Type.Literal('completed'),
  Type.Literal('errored'),
  Type.Literal('cancelled'),
]);
export type EvalCaseStatus = Static<typeof EvalCaseStatus>;

const Usage = Obj({
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cache_read_input_tokens: Type.Integer(),
  cache_creation_input_tokens: Type.Integer(),
});

/** One judge's verdict on a case. */
export const EvalCheck = Obj({
  type: Type.Union([
    Type.Literal('rubric'),
    Type.Literal('check_command'),
    Type.Literal('expected_text'),
  ]),
  passed: Type.Boolean(),
  reason: Type.String(),
});

export const EvalCaseResult = Obj({
  id: Type.String(),
  status: EvalCaseStatus,
  passed: Nullable(Type.Boolean()),
  score: Nullable(Type.Number()),
  reason: Nullable(Type.String()),
  checks: Type.Array(EvalCheck),
  session_id: Nullable(Type.String()),
  usage: Usage,
  cost: Nullable(Type.Number()),
  duration_ms: Nullable(Type.Integer()),
});
export type EvalCaseResult = Static<typeof EvalCaseResult>;

export const EvalSummary = Obj({
  passed: Type.Integer(),
  failed: Type.Integer(),
  errored: Type.Integer(),
  cancelled: Type.Integer(),
  pending: Type.Integer(),
  total: Type.Integer(),
  score: Nullable(Type.Number()),
  usage: Usage,
  cost: Nullable(Type.Number()),
});

export const EvalRun = Obj({
  id: Type.String(),
  type: Type.Literal('eval_run'),
  name: Nullable(Type.String()),
  status: EvalRunStatus,
  agent: Obj({ type: Type.Literal('agent'), id: Type.String(), version: Type.Integer() }),
  environment_id: Type.String(),
  concurrency: Type.Integer(),
  currency: Type.String(),
  cases: Type.Array(EvalCaseResult),
  summary: EvalSummary,
  created_at: Type.String(),
  updated_at: Type.String(),
  ended_at: Nullable(Type.String()),
});
export type EvalRun = Static<typeof EvalRun>;

export const EvalListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  agent_id: Type.Optional(Type.String({ maxLength: 128 })),
});
export type EvalListQuery = Static<typeof EvalListQuery>;

/** Two runs side by side, case by case (matched by case id). */
export const EvalComparison = Obj({
  type: Type.Literal('eval_comparison'),
  base: Obj({ id: Type.String(), agent: EvalRun.properties.agent, summary: EvalSummary }),
  other: Obj({ id: Type.String(), agent: EvalRun.properties.agent, summary: EvalSummary }),
  cases: Type.Array(
    Obj({
      id: Type.String(),
      base: Nullable(EvalCaseResult),
      other: Nullable(EvalCaseResult),
      change: Type.Union([
        Type.Literal('fixed'),
        Type.Literal('regressed'),
        Type.Literal('same'),
        Type.Literal('only_base'),
        Type.Literal('only_other'),
        Type.Literal('pending'),
      ]),
    }),
  ),
  summary: Obj({
    fixed: Type.Integer(),
    regressed: Type.Integer(),
    same: Type.Integer(),
    unmatched: Type.Integer(),
  }),
});
export type EvalComparison = Static<typeof EvalComparison>;
