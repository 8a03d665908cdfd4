/**
 * Eval runs in GraphQL, read only (dashboards): `evalRuns`, `evalRun(id)` and
 * `evalComparison(id, with)`, the same answers as REST GET /v1/svc/evals, …/:id and
 * …/:id/compare, through the same EvalService calls (core/src/evals/service.ts), so tenancy,
 * validation and errors are REST's: another tenant's run, or an unknown id, is NOT_FOUND; a bad
 * limit or cursor is BAD_USER_INPUT naming the argument. Starting and cancelling stay REST's
 * (they are writes with a viewer rule). Its SDL extends the contract of
 * schemas/src/graphql.ts (Query, Usage, Agent, Environment). Proved by
 * test/e2e/graphql/graphql-evals.test.ts.
 */
import { EvalListQuery } from '@agentfleet/schemas';
import type { EvalService } from '@agentfleet/core';
import { isNotFound } from './errors.js';
import { argsOf, toAgent, toConnection, toEnvironment } from './mappers.js';
import type { GqlContext, Resolver } from './schema.js';

export const evalTypeDefs = /* GraphQL */ `
  enum EvalRunStatus {
    QUEUED
    RUNNING
    COMPLETED
    CANCELLED
    FAILED
  }

  enum EvalCaseStatus {
    QUEUED
    STARTING
    RUNNING
    JUDGING
    COMPLETED
    ERRORED
    CANCELLED
  }

  enum EvalCheckType {
    RUBRIC
    CHECK_COMMAND
    EXPECTED_TEXT
  }

  "A case's change from the base run to the other: FIXED (failed or errored → passed), REGRESSED, SAME, ONLY_BASE, ONLY_OTHER, PENDING (either side not ended)."
  enum EvalChange {
    FIXED
    REGRESSED
    SAME
    ONLY_BASE
    ONLY_OTHER
    PENDING
  }

  "One judge's verdict on a case."
  type EvalCheck {
    type: EvalCheckType!
    passed: Boolean!
    reason: String!
  }

  "One case of a run: its own session, judged when that session went idle."
  type EvalCase {
    id: ID!
    status: EvalCaseStatus!
    "null until judged."
    passed: Boolean
    score: Float
    reason: String
    checks: [EvalCheck!]!
    sessionId: ID
    usage: Usage!
    "Priced by the price card, in the run's currency; null when not priced."
    cost: Float
    durationMs: Int
  }

  type EvalSummary {
    passed: Int!
    failed: Int!
    errored: Int!
    cancelled: Int!
    pending: Int!
    total: Int!
    score: Float
    usage: Usage!
    cost: Float
  }

  "An eval run: one agent version over a set of cases (REST GET /v1/svc/evals/:id)."
  type EvalRun {
    id: ID!
    name: String
    status: EvalRunStatus!
    agentId: ID!
    agentVersion: Int!
    "The agent at the run's version; null once the agent is gone."
    agent: Agent
    environmentId: ID!
    environment: Environment
    concurrency: Int!
    currency: String!
    cases: [EvalCase!]!
    summary: EvalSummary!
    createdAt: String!
    updatedAt: String!
    endedAt: String
  }

  type EvalRunConnection {
    nodes: [EvalRun!]!
    hasMore: Boolean!
    nextPage: String
    prevPage: String
  }

  type EvalComparisonSide {
    id: ID!
    agentId: ID!
    agentVersion: Int!
    summary: EvalSummary!
  }

  type EvalCaseComparison {
    id: ID!
    "null: the case is not in the base run."
    base: EvalCase
    "null: the case is not in the other run."
    other: EvalCase
    change: EvalChange!
  }

  type EvalComparisonSummary {
    fixed: Int!
    regressed: Int!
    same: Int!
    unmatched: Int!
  }

  "Two runs case by case, matched by case id (REST GET /v1/svc/evals/:id/compare?with=)."
  type EvalComparison {
    base: EvalComparisonSide!
    other: EvalComparisonSide!
    cases: [EvalCaseComparison!]!
    summary: EvalComparisonSummary!
  }

  extend type Query {
    "Eval runs, newest first. limit 1..100 (default 20); agentId keeps one agent's runs."
    evalRuns(agentId: ID, limit: Int, page: String): EvalRunConnection!
    evalRun(id: ID!): EvalRun
    "The run id (the base) against the run with."
    evalComparison(id: ID!, with: ID!): EvalComparison
  }
`;

type Run = Awaited<ReturnType<EvalService['get']>>;
type Comparison = Awaited<ReturnType<EvalService['compare']>>;
type Case = Run['cases'][number];

const up = (v: string) => v.toUpperCase();
const toUsage = (u: Case['usage']) => ({
  inputTokens: u.input_tokens,
  outputTokens: u.output_tokens,
  cacheReadInputTokens: u.cache_read_input_tokens,
  cacheCreationInputTokens: u.cache_creation_input_tokens,
});

export const toEvalCase = (c: Case) => ({
  id: c.id,
  status: up(c.status),
  passed: c.passed,
  score: c.score,
  reason: c.reason,
  checks: c.checks.map((k) => ({ type: up(k.type), passed: k.passed, reason: k.reason })),
  sessionId: c.session_id,
  usage: toUsage(c.usage),
  cost: c.cost,
  durationMs: c.duration_ms,
});

const toSummary = (s: Run['summary']) => ({ ...s, usage: toUsage(s.usage) });

export const toEvalRun = (r: Run) => ({
  id: r.id,
  name: r.name,
  status: up(r.status),
  agentId: r.agent.id,
  agentVersion: r.agent.version,
  environmentId: r.environment_id,
  concurrency: r.concurrency,
  currency: r.currency,
  cases: r.cases.map(toEvalCase),
  summary: toSummary(r.summary),
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  endedAt: r.ended_at,
});

const toSide = (s: Comparison['base']) => ({
  id: s.id,
  agentId: s.agent.id,
  agentVersion: s.agent.version,
  summary: toSummary(s.summary),
});

export const toEvalComparison = (c: Comparison) => ({
  base: toSide(c.base),
  other: toSide(c.other),
  cases: c.cases.map((k) => ({
    id: k.id,
    base: k.base && toEvalCase(k.base),
    other: k.other && toEvalCase(k.other),
    change: up(k.change),
  })),
  summary: c.summary,
});

const listArgs = argsOf(EvalListQuery, { agentId: 'agent_id', limit: 'limit', page: 'page' });
const tenant = (ctx: GqlContext) => ctx.principal.tenantId;

/** A reference the run holds: null when it no longer exists (never another tenant's). */
async function orNull<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

type EvalRunOut = ReturnType<typeof toEvalRun>;

/** The eval fields of the resolver map (merged into resolvers.ts's Query). */
export const evalResolvers: { Query: Record<string, Resolver>; EvalRun: Record<string, Resolver> } =
  {
    Query: {
      evalRuns: async (_, args, ctx) =>
        toConnection(await ctx.services.evals.list(tenant(ctx), listArgs(args)), toEvalRun),
      evalRun: async (_, args, ctx) =>
        toEvalRun(await ctx.services.evals.get(tenant(ctx), args.id)),
      evalComparison: async (_, args, ctx) =>
        toEvalComparison(await ctx.services.evals.compare(tenant(ctx), args.id, args.with)),
    },
    EvalRun: {
      agent: (r: EvalRunOut, _, ctx) =>
        orNull(async () =>
          toAgent(await ctx.services.agents.get(tenant(ctx), r.agentId, r.agentVersion)),
        ),
      environment: (r: EvalRunOut, _, ctx) =>
        orNull(async () =>
          toEnvironment(await ctx.services.environments.get(tenant(ctx), r.environmentId)),
        ),
    },
  };
