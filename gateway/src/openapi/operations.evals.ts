/**
 * OpenAPI entries of the eval routes (../routes/evals.ts), under both `/v1/svc/evals` and the
 * un-prefixed `/v1/evals`. test/e2e/api/openapi.test.ts fails when a route lacks an entry;
 * test/e2e/evals/evals.test.ts proves the behaviour.
 */
import { Type } from '@sinclair/typebox';
import {
  EvalComparison,
  EvalCreate,
  EvalListQuery,
  EvalRun,
  Id,
  ListPage,
} from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'evals';
const params = { id: Id('eval_') };
const oneRun = { description: 'The eval run.', content: json(EvalRun) };

function forBase(base: string, prefix: string): Record<string, OperationDoc> {
  return {
    [`POST ${base}`]: {
      operationId: `${prefix}StartEval`,
      summary: 'Start an eval: one agent version over a set of cases, each its own session',
      description:
        'Cases inline (`cases`) or a JSONL file (`cases_file_id`), each with a prompt and at least one judge: `rubric` (the outcome grader, one iteration), `check_command` (exit 0 in the case’s sandbox) and/or `expected_text` (contained in the answer). At most `concurrency` cases (default 4) run at once, and EVAL_TENANT_CONCURRENCY per tenant.',
      tag,
      body: {
        schema: EvalCreate,
        required: true,
        example: {
          agent: 'agent_01example',
          environment_id: 'env_01example',
          cases: [{ id: 'hello', prompt: 'Say hello.', expected_text: 'hello' }],
        },
      },
      ok: oneRun,
    },
    [`GET ${base}`]: {
      operationId: `${prefix}ListEvals`,
      summary: 'List eval runs (newest first)',
      tag,
      query: EvalListQuery,
      ok: { description: 'A page of eval runs.', content: json(ListPage(EvalRun)) },
    },
    [`GET ${base}/:id`]: {
      operationId: `${prefix}GetEval`,
      summary:
        'An eval run: progress, and per case pass/fail, score, reason, usage, cost, duration',
      tag,
      params,
      ok: oneRun,
    },
    [`POST ${base}/:id/cancel`]: {
      operationId: `${prefix}CancelEval`,
      summary: 'Cancel an eval run: queued cases cancelled, running sessions interrupted',
      tag,
      params,
      ok: oneRun,
    },
    [`GET ${base}/:id/compare`]: {
      operationId: `${prefix}CompareEvals`,
      summary: 'Compare two eval runs case by case (fixed, regressed, same)',
      tag,
      params,
      query: Type.Object({ with: Id('eval_') }),
      ok: { description: 'The comparison.', content: json(EvalComparison) },
    },
  };
}

export const EVAL_OPERATIONS: Record<string, OperationDoc> = {
  ...forBase('/v1/svc/evals', 'svc'),
  ...forBase('/v1/evals', 'vendor'),
};
