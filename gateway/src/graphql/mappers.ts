import {
  ValidationError,
  compileBody,
  type Agent,
  type Environment,
  type ModelConfig,
  type SessionEventOut,
} from '@agentfleet/schemas';
import { invalid, type Page, type renderSession } from '@agentfleet/core';
import type { Static, TSchema } from '@sinclair/typebox';

/** REST objects (snake_case, as the services render them) → GraphQL objects (camelCase). */

type SessionOut = ReturnType<typeof renderSession>;

export const toModel = (m: ModelConfig) => ({
  id: m.id,
  effort: m.effort?.type ?? null,
  speed: m.speed ?? null,
  inferenceGeo: m.inference_geo ?? null,
});

export const toAgent = (a: Agent) => ({
  id: a.id,
  version: a.version,
  name: a.name,
  description: a.description,
  model: toModel(a.model),
  system: a.system,
  tools: a.tools,
  skills: a.skills,
  mcpServers: a.mcp_servers,
  environmentId: a.environment_id,
  memoryStoreId: a.memory_store_id,
  harness: a.harness,
  metadata: a.metadata,
  executionIdentity: a.execution_identity,
  multiagent: a.multiagent,
  archived: a.archived,
  archivedAt: a.archived_at,
  createdAt: a.created_at,
  updatedAt: a.updated_at,
});

export const toEnvironment = (e: Environment) => ({
  id: e.id,
  name: e.name,
  description: e.description,
  config: e.config,
  baseImage: e.base_image,
  packages: e.packages,
  network: e.network,
  env: e.env,
  metadata: e.metadata,
  scope: e.scope,
  archivedAt: e.archived_at,
  createdAt: e.created_at,
  updatedAt: e.updated_at,
});

export const toSession = (s: SessionOut) => ({
  id: s.id,
  title: s.title,
  status: s.status.toUpperCase(),
  agentId: s.agent_id,
  agentVersion: s.agent_version,
  agent: {
    id: s.agent.id,
    version: s.agent.version,
    name: s.agent.name,
    description: s.agent.description,
    model: toModel(s.agent.model),
    system: s.agent.system,
    tools: s.agent.tools,
    skills: s.agent.skills,
    mcpServers: s.agent.mcp_servers,
  },
  environmentId: s.environment_id,
  metadata: s.metadata,
  resources: s.resources,
  vaultIds: s.vault_ids,
  budget: s.budget,
  usage: {
    inputTokens: s.usage.input_tokens,
    outputTokens: s.usage.output_tokens,
    cacheReadInputTokens: s.usage.cache_read_input_tokens,
    cacheCreationInputTokens: s.usage.cache_creation_input_tokens,
  },
  outcomeEvaluations: s.outcome_evaluations.map((o) => ({
    outcomeId: o.outcome_id,
    description: o.description,
    result: o.result,
    iteration: o.iteration,
    explanation: o.explanation,
    completedAt: o.completed_at,
  })),
  archivedAt: s.archived_at,
  terminatedAt: s.terminated_at,
  createdAt: s.created_at,
  updatedAt: s.updated_at,
});

export const toEvent = (e: SessionEventOut) => ({
  id: e.id,
  seq: e.seq,
  type: e.type,
  sessionId: e.session_id,
  createdAt: e.created_at,
  data: e.data,
});

export const toConnection = <T, U>(
  page: Pick<Page<T>, 'data' | 'has_more' | 'next_page'> & { prev_page?: string | null },
  map: (t: T) => U,
) => ({
  nodes: page.data.map(map),
  hasMore: page.has_more,
  nextPage: page.next_page,
  prevPage: page.prev_page ?? null,
});

/**
 * Validates GraphQL arguments with a REST query schema, so limits and cursors are checked by the
 * same rules: `names` maps argument names to the REST keys. Null or absent arguments are left
 * out; an error names the GraphQL argument (afterSeq, not after_seq).
 */
export function argsOf<S extends TSchema>(schema: S, names: Record<string, string>) {
  const v = compileBody(schema);
  const back = Object.fromEntries(Object.entries(names).map(([g, r]) => [r, g]));
  return (args: Record<string, unknown>): Static<S> => {
    const q: Record<string, unknown> = {};
    for (const [g, r] of Object.entries(names))
      if (args[g] !== undefined && args[g] !== null) q[r] = args[g];
    try {
      return v(q);
    } catch (err) {
      if (!(err instanceof ValidationError)) throw err;
      const rest = /^[^.[]*/.exec(err.field)![0];
      const gql = back[rest];
      if (!gql || gql === rest) throw err;
      const field = gql + err.field.slice(rest.length);
      throw new ValidationError(
        err.message.startsWith(err.field)
          ? field + err.message.slice(err.field.length)
          : err.message,
        field,
      );
    }
  };
}

/** Validates a JSON `input` argument with a REST body schema (same messages as REST). */
export function inputOf<S extends TSchema>(schema: S) {
  const v = compileBody(schema);
  return (input: unknown): Static<S> => {
    if (typeof input !== 'object' || input === null || Array.isArray(input))
      throw invalid('input', 'must be a JSON object');
    return v(input);
  };
}

/** The cost report (core/src/cost/ledger.ts) with camelCase top-level fields; rows as served by REST. */
export const toCostReport = (
  r: Awaited<ReturnType<import('@agentfleet/core').CostService['report']>>,
) => ({
  startingAt: r.starting_at,
  endingAt: r.ending_at,
  groupBy: r.group_by,
  source: r.source,
  granularity: r.granularity,
  isInvoiceGrade: r.is_invoice_grade,
  dataCompleteness: r.data_completeness,
  reconciledAt: r.reconciled_at,
  currency: r.currency,
  calls: r.calls,
  usage: r.usage,
  totalCost: r.total_cost,
  totalEstimatedCost: r.total_estimated_cost,
  rows: r.rows,
  datasets: 'datasets' in r ? r.datasets : null,
});
