/**
 * OpenAPI entries of the cost report routes (../routes/cost.ts; operator key only).
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry; test/e2e/cost/cost-report.test.ts
 * proves the behaviour.
 */
import { Type, type TSchema } from '@sinclair/typebox';
import { BILLING_ERROR_TYPES } from '@agentfleet/core';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'cost';
const Str = Type.String();
const Num = Type.Number();
const Nullable = (s: TSchema) => Type.Union([s, Type.Null()]);
const Usage = Type.Object(
  {
    input_tokens: Num,
    output_tokens: Num,
    cache_read_input_tokens: Num,
    cache_creation_input_tokens: Num,
  },
  { additionalProperties: false },
);
const Evidence = {
  source: Type.Union([
    Type.Literal('provider_billed'),
    Type.Literal('provider_metered'),
    Type.Literal('svc_metered'),
    Type.Literal('estimated'),
  ]),
  granularity: Type.Union([
    Type.Literal('account'),
    Type.Literal('project'),
    Type.Literal('environment'),
    Type.Literal('runtime'),
    Type.Literal('session'),
  ]),
  is_invoice_grade: Type.Boolean(),
  data_completeness: Type.Union([
    Type.Literal('complete'),
    Type.Literal('partial'),
    Type.Literal('unavailable'),
  ]),
  reconciled_at: Nullable(Str),
  currency: Str,
};
const Row = Type.Object(
  {
    ...Evidence,
    calls: Nullable(Num),
    usage: Nullable(Usage),
    provider: Type.Optional(Str),
    project: Type.Optional(Nullable(Str)),
    tenant_id: Type.Optional(Nullable(Str)),
    agent_id: Type.Optional(Nullable(Str)),
    session_id: Type.Optional(Nullable(Str)),
    model: Type.Optional(Str),
    day: Type.Optional(Str),
    kind: Type.Optional(Str),
    cost: Nullable(Num),
    estimated_cost: Nullable(Num),
    missing_rates: Type.Optional(Type.Array(Str)),
  },
  { additionalProperties: false },
);
const Dataset = Type.Object(
  {
    name: Str,
    provider: Nullable(Str),
    status: Type.Union([Type.Literal('complete'), Type.Literal('unavailable')]),
    is_invoice_grade: Type.Boolean(),
    reconciled_at: Nullable(Str),
    windows: Nullable(Num),
    requests: Nullable(Num),
    error: Nullable(
      Type.Object(
        {
          type: Type.Union(BILLING_ERROR_TYPES.map((t) => Type.Literal(t))),
          message: Str,
          retryable: Type.Boolean(),
          provider_status: Nullable(Num),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
const Report = Type.Object(
  {
    type: Type.Literal('cost_report'),
    starting_at: Str,
    ending_at: Str,
    group_by: Type.Array(Str),
    ...Evidence,
    calls: Num,
    usage: Usage,
    total_cost: Nullable(Num),
    total_estimated_cost: Nullable(Num),
    /** With billing sources: the price card's currency, that of total_estimated_cost. */
    estimated_currency: Type.Optional(Str),
    rows: Type.Array(Row),
    datasets: Type.Optional(Type.Array(Dataset)),
  },
  { additionalProperties: false },
);
const Rate = Type.Number({ minimum: 0, maximum: 1_000_000 });
const Rates = Type.Object(
  {
    input_tokens: Type.Optional(Rate),
    output_tokens: Type.Optional(Rate),
    cache_read_input_tokens: Type.Optional(Rate),
    cache_creation_input_tokens: Type.Optional(Rate),
  },
  { additionalProperties: false },
);
const Services = Type.Record(
  Type.String({ pattern: '^(anthropic|openai)/[a-z0-9.-]{1,40}$' }),
  Rates,
  {
    description: '"<provider>/<model>" → rates per million tokens',
  },
);
const Card = Type.Object(
  {
    type: Type.Literal('price_card'),
    currency: Str,
    services: Services,
    updated_at: Nullable(Str),
  },
  { additionalProperties: false },
);

export const COST_OPERATIONS: Record<string, OperationDoc> = {
  'GET /v1/svc/cost_report': {
    operationId: 'svcCostReport',
    summary:
      'Model spend of the deployment: the runtime ledger priced by the price card, and the providers’ billed cost',
    description:
      'Times are cut to whole UTC hours. source=ledger (default): the ledger only, total_cost null. ' +
      'source=billed|all: the configured billing sources’ provider_billed rows (grouped by model, day, project only), ' +
      'total_cost set only when every billing dataset is complete in one currency; datasets lists each read. ' +
      'total_estimated_cost is set only when every ledger row is priced in the card currency.',
    tag,
    query: Type.Object({
      source: Type.Optional(
        Type.Union([Type.Literal('ledger'), Type.Literal('billed'), Type.Literal('all')]),
      ),
      starting_at: Type.String({ format: 'date-time' }),
      ending_at: Type.Optional(Type.String({ format: 'date-time' })),
      group_by: Type.Optional(
        Type.String({
          description:
            'comma-separated: tenant, agent, session, model, day, kind (source=ledger); model, day, project (billed, all)',
        }),
      ),
      tenant_id: Type.Optional(Str),
      agent_id: Type.Optional(Str),
      session_id: Type.Optional(Str),
      kind: Type.Optional(
        Type.Union([
          Type.Literal('turn'),
          Type.Literal('compaction'),
          Type.Literal('grader'),
          Type.Literal('dream'),
        ]),
      ),
    }),
    ok: { description: 'The report.', content: json(Report) },
  },
  'GET /v1/svc/cost_report/pricing': {
    operationId: 'svcGetPriceCard',
    summary: 'The price card (default: the vendors’ list prices in USD)',
    tag,
    ok: { description: 'The card.', content: json(Card) },
  },
  'PUT /v1/svc/cost_report/pricing': {
    operationId: 'svcPutPriceCard',
    summary:
      'Replaces the price card (strict: unknown services or rates, negative or non-numeric values are 400)',
    tag,
    body: {
      schema: Type.Object(
        { currency: Type.String({ pattern: '^[A-Z]{3}$' }), services: Services },
        {
          additionalProperties: false,
        },
      ),
      example: {
        currency: 'USD',
        services: { 'anthropic/claude-sonnet-4-5': { input_tokens: 3, output_tokens: 15 } },
      },
    },
    ok: { description: 'The stored card.', content: json(Card) },
  },
};
