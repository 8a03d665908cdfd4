// The CJS build of graphql, as Apollo and graphql-sse use (see schema.ts); the graphql-armor
// plugins load the same one (their CJS builds require 'graphql').
import {
  GraphQLError,
  Kind,
  validate,
  visit,
  type DocumentNode,
  type GraphQLSchema,
  type ValidationContext,
  type ValidationRule,
} from 'graphql/index.js';
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth';
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases';
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit';
import { MaxTokensParserWLexer } from '@escape.tech/graphql-armor-max-tokens';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '@agentfleet/core';
import { chargeTenant, type RateLimits } from '../requestGuards.js';

/**
 * GraphQL document limits, with graphql-armor (tested in test/e2e/graphql/graphql-limits.test.ts):
 * - tokens (GRAPHQL_MAX_TOKENS): counted while parsing, before anything else looks at the
 *   document, so a huge query (thousands of aliases) costs one bounded parse;
 * - depth (GRAPHQL_MAX_DEPTH), aliases (GRAPHQL_MAX_ALIASES) and cost (GRAPHQL_MAX_COST):
 *   validation rules of Apollo (queries, mutations) and graphql-sse (subscriptions);
 * - cost: graphql-armor's cost model (objects 2, scalars 1, ×1.5 per level) multiplied by the
 *   page size, which graphql-armor reads from `first`/`last` and this schema calls `limit`
 *   (literal or variable): `sessionEvents(limit: 1000) { nodes { id type data } }` costs about
 *   11,750. Queries over GRAPHQL_MAX_COST are refused; the others take
 *   floor(cost / GRAPHQL_COST_PER_RATE_LIMIT_TOKEN) tokens of the tenant's rate limit on top of
 *   the request's one (429 rate_limited when over, as for REST).
 * Refusals are GraphQL errors (`extensions.code` GRAPHQL_VALIDATION_FAILED, `type`
 * invalid_request, `limit` naming which) with HTTP 400, never a 500.
 */

export type GraphqlLimits = Config['graphqlLimits'];

const limitError = (message: string, limit: string) =>
  new GraphQLError(message.replace(/^Syntax Error: /, ''), {
    extensions: {
      code: 'GRAPHQL_VALIDATION_FAILED',
      type: 'invalid_request',
      http_status: 400,
      limit,
    },
  });

/** graphql-armor's rules, reporting refusals as validation errors instead of throwing. */
export function armorRules(limits: GraphqlLimits): ValidationRule[] {
  const report = (limit: string) => ({
    propagateOnRejection: false,
    onReject: [
      (ctx: ValidationContext | null, err: Error) =>
        ctx?.reportError(limitError(err.message, limit)),
    ],
  });
  return [
    maxDepthRule({ n: limits.maxDepth, ...report('depth') }),
    maxAliasesRule({ n: limits.maxAliases, ...report('aliases') }),
    costLimitRule({ maxCost: limits.maxCost, ...report('cost') }),
  ] as unknown as ValidationRule[];
}

/** The GraphQL request in an HTTP request: body for POST, query string for GET. */
function operationOf(
  req: FastifyRequest,
): { query: string; operationName?: string; variables: Record<string, unknown> } | null {
  const src = (req.method === 'GET' ? req.query : req.body) as Record<string, unknown> | undefined;
  if (!src || typeof src !== 'object' || typeof src.query !== 'string') return null;
  let variables = src.variables;
  if (typeof variables === 'string') {
    try {
      variables = JSON.parse(variables);
    } catch {
      variables = undefined;
    }
  }
  return {
    query: src.query,
    operationName: typeof src.operationName === 'string' ? src.operationName : undefined,
    variables:
      variables && typeof variables === 'object' && !Array.isArray(variables)
        ? (variables as Record<string, unknown>)
        : {},
  };
}

/**
 * The document as graphql-armor's cost model should see it: only the operation that runs (and
 * fragments), with each `limit` argument presented as `first`, its value resolved from the
 * variables when it is one.
 */
function forCosting(
  doc: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): DocumentNode | null {
  const ops = doc.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION);
  const op = operationName
    ? ops.find((o) => o.name?.value === operationName)
    : ops.length === 1
      ? ops[0]
      : undefined;
  if (!op) return null;
  const only: DocumentNode = {
    ...doc,
    definitions: doc.definitions.filter((d) => d.kind !== Kind.OPERATION_DEFINITION || d === op),
  };
  return visit(only, {
    Argument(node) {
      if (node.name.value !== 'limit') return undefined;
      let value = node.value;
      if (value.kind === Kind.VARIABLE) {
        const v = variables[value.name.value];
        if (!Number.isInteger(v)) return undefined;
        value = { kind: Kind.INT, value: String(v) };
      }
      return { ...node, name: { ...node.name, value: 'first' }, value };
    },
  });
}

/** The cost of the operation a request runs (0 when it cannot be told: the handler reports why). */
export function operationCost(
  schema: GraphQLSchema,
  doc: DocumentNode,
  operationName: string | undefined,
  variables: Record<string, unknown>,
): number {
  const costed = forCosting(doc, operationName, variables);
  if (!costed) return 0;
  let cost = 0;
  validate(schema, costed, [
    costLimitRule({
      maxCost: Number.MAX_SAFE_INTEGER,
      onAccept: [(_ctx: unknown, r: { n: number }) => void (cost = Math.max(cost, r.n))],
    }) as unknown as ValidationRule,
  ]);
  return cost;
}

export interface Refusal {
  status: number;
  body: { errors: Array<ReturnType<GraphQLError['toJSON']>> };
}

/**
 * Runs before Apollo and graphql-sse on every GraphQL request: the token limit, the cost limit
 * (limit-aware, see above) and the cost charge against the tenant's rate limit. Returns the
 * refusal to send, or null to go on (documents that do not parse are left to the handler,
 * which reports them in its own format). Throws ApiError rate_limited when the tenant is over.
 */
export async function preflight(
  schema: GraphQLSchema,
  p: RateLimits,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<Refusal | null> {
  const op = operationOf(req);
  if (!op) return null;
  const limits = p.config.graphqlLimits;
  let doc: DocumentNode;
  try {
    doc = new MaxTokensParserWLexer(op.query, { n: limits.maxTokens }).parseDocument();
  } catch (err) {
    const message = String((err as Error)?.message ?? err);
    if (!/Token limit of \d+ exceeded/.test(message)) return null;
    return { status: 400, body: { errors: [limitError(message, 'tokens').toJSON()] } };
  }
  // A console viewer reads only (gateway/src/consoleAuth.ts lets its GraphQL POSTs through).
  if (
    req.principal.console?.role === 'viewer' &&
    doc.definitions.some((d) => d.kind === 'OperationDefinition' && d.operation === 'mutation')
  )
    return {
      status: 403,
      body: {
        errors: [
          new GraphQLError('the viewer role makes no changes (mutations are refused)', {
            extensions: { code: 'FORBIDDEN', type: 'forbidden', http_status: 403 },
          }).toJSON(),
        ],
      },
    };
  const cost = operationCost(schema, doc, op.operationName, op.variables);
  if (cost > limits.maxCost) {
    return {
      status: 400,
      body: {
        errors: [
          limitError(
            `Query Cost limit of ${limits.maxCost} exceeded, found ${Math.ceil(cost)} (page sizes given as limit count as multipliers).`,
            'cost',
          ).toJSON(),
        ],
      },
    };
  }
  const extra = Math.floor(cost / p.config.rateLimit.graphqlCostPerToken);
  if (extra > 0) await chargeTenant(p, reply, req.principal.tenantId, extra);
  return null;
}
