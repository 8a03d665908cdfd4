/**
 * OpenAPI entries of the dream routes (gateway/src/routes/dreams.ts). test/e2e/api/openapi.test.ts
 * fails when a route lacks an entry or an entry names no route.
 */
import { Dream, DreamCreate, DreamListQuery, Id, ListPage } from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'memory';
const dream = { id: Id('drm_') };
const oneDream = { description: 'The dream.', content: json(Dream) };

export const DREAM_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/dreams': {
    operationId: 'createDream',
    summary:
      'Start a dream: reorganise a memory store from past sessions (into a new store or in place)',
    description:
      'Exactly one `memory_store` input and one `sessions` input (1–100 ids). The dream runs on the workers; poll it until `completed`, `failed` or `canceled`. `output_behavior` `create_new` (default) writes a new store; `update_existing` (with `memory_store_id` = the input store) writes the result into the input store, skipping memories changed since the dream read them (the dream then fails `memory_conflict` naming them); 409 (`x-should-retry: false`) while another `update_existing` dream on that store has not fully stopped.',
    tag,
    body: {
      schema: DreamCreate,
      required: true,
      example: {
        inputs: [
          { type: 'memory_store', memory_store_id: 'memstore_01J0000000000000000000000' },
          { type: 'sessions', session_ids: ['sess_01J0000000000000000000000'] },
        ],
        model: 'claude-sonnet-4-5',
      },
    },
    ok: oneDream,
    conflict: true,
  },
  'GET /v1/dreams': {
    operationId: 'listDreams',
    summary: 'List dreams (newest first; archived ones only with include_archived)',
    tag,
    query: DreamListQuery,
    ok: { description: 'A page of dreams.', content: json(ListPage(Dream)) },
  },
  'GET /v1/dreams/:id': {
    operationId: 'getDream',
    summary: 'Retrieve a dream (archived ones too)',
    tag,
    params: dream,
    ok: oneDream,
  },
  'POST /v1/dreams/:id/archive': {
    operationId: 'archiveDream',
    summary: 'Archive a completed, failed or canceled dream (400 while pending or running)',
    tag,
    params: dream,
    ok: oneDream,
  },
  'POST /v1/dreams/:id/cancel': {
    operationId: 'cancelDream',
    summary: 'Cancel a pending or running dream (400 once completed or failed)',
    tag,
    params: dream,
    ok: oneDream,
  },
};
