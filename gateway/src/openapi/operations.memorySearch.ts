/**
 * OpenAPI entry of memory search (gateway/src/routes/memorySearch.ts). test/e2e/api/openapi.test.ts
 * fails when a route lacks an entry or an entry names no route.
 */
import { Id } from '@agentfleet/schemas';
import { MemorySearchRequest, MemorySearchResponse } from '../routes/memorySearch.js';
import { json, type OperationDoc } from './operationHelpers.js';

export const MEMORY_SEARCH_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/memory_stores/:id/search': {
    operationId: 'searchMemoryStore',
    summary: "Search a memory store's memories",
    description:
      "Semantic search over the store's embedding model (the store's `embedding_model`, a model card with `pi_config.embedding: true`, else the platform's MEMORY_EMBEDDING_MODEL); lexical (BM25-style) when none applies. `mode` says which was used; a lexical answer says why in `fallback_reason`.",
    tag: 'memory',
    params: { id: Id('memstore_') },
    body: {
      schema: MemorySearchRequest,
      required: true,
      example: { query: 'deployment runbook', limit: 5 },
    },
    ok: {
      description: 'The best-ranked memories, best first.',
      content: json(MemorySearchResponse),
    },
  },
};
