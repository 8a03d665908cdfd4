/**
 * `POST /v1/memory_stores/:id/search {query, limit}` (spec "Memory stores and files"; the SDK
 * 1.12 has no search method): the store's memories ranked for the query, semantic when an
 * embedding model applies to the store, else lexical; the answer says which (`mode`,
 * `embedding_model`). Tenant- and store-scoped: another tenant's store is a 404. `query` is 1 to
 * 10,000 characters, `limit` an integer 1..100 (default 10); anything else is a 400 naming the
 * field. Proved by test/e2e/memory/memory-search.test.ts.
 */
import type { FastifyInstance } from 'fastify';
import { Type, type Static } from '@sinclair/typebox';
import { Obj } from '@agentfleet/schemas';
import { invalid } from '@agentfleet/core';
import { bodyOf, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

export const MemorySearchRequest = Obj({
  query: Type.String({ minLength: 1, maxLength: 10_000 }),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })),
});
export type MemorySearchRequest = Static<typeof MemorySearchRequest>;

export const MemorySearchResponse = Obj({
  data: Type.Array(
    Obj({
      memory_id: Type.String(),
      path: Type.String(),
      score: Type.Number(),
      snippet: Type.String(),
    }),
  ),
  mode: Type.Union([Type.Literal('semantic'), Type.Literal('lexical')]),
  embedding_model: Type.Optional(Type.String()),
  fallback_reason: Type.Optional(Type.String()),
  unindexed: Type.Optional(Type.Integer()),
});

const searchBody = bodyOf(MemorySearchRequest);

export function memorySearchRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'memorySearch'>) {
  app.post<{ Params: { id: string } }>('/v1/memory_stores/:id/search', async (req) => {
    const body = searchBody(req);
    if (!body.query.trim()) throw invalid('query', 'must contain a non-blank character');
    return p.memorySearch.search(tenantOf(req), req.params.id, body.query, body.limit ?? 10);
  });
}
