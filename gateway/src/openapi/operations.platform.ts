/**
 * OpenAPI entries of the platform routes: health, readiness, metrics and the document itself;
 * the tenant's models and a provider's catalog; the operator's tenant creation; model cards
 * (with the workers' internal key route) and API keys (served under
 * /v1/svc and un-prefixed under /v1). test/e2e/api/openapi.test.ts fails when a route lacks an entry or
 * an entry names no route.
 */
import { Type } from '@sinclair/typebox';
import {
  ModelListQuery,
  ApiKeyCreate,
  ApiKeyCreated,
  ApiKeyObject,
  Deleted,
  FullList,
  Health,
  ModelCardCreate,
  ModelCardCreated,
  ModelCardKey,
  ModelCardOut,
  ModelList,
  ModelsListRequest,
  CatalogModelOut,
  ErrorBody,
  ModelObject,
  Readiness,
  TenantCreate,
  TenantCreated,
} from '@agentfleet/schemas';
import { json, CardId, KeyId, type OperationDoc } from './operationHelpers.js';

export const META_OPERATIONS: Record<string, OperationDoc> = {
  // ---- ops and meta
  'GET /': {
    operationId: 'consoleRoot',
    summary: 'Redirects to the web console (/console/)',
    tag: 'ops',
    ok: { status: 302, description: 'Redirect to /console/.', content: {} },
  },
  'GET /console': {
    operationId: 'consoleIndex',
    summary: 'Redirects to /console/',
    tag: 'ops',
    ok: { status: 302, description: 'Redirect to /console/.', content: {} },
  },
  'GET /console/*': {
    operationId: 'consoleFiles',
    summary: 'The web console (static files; other paths answer its index.html)',
    tag: 'ops',
    params: { filename: Type.String({ minLength: 1 }), nested_path: Type.String() },
    ok: {
      description: 'An HTML page (index.html for any path not under assets/) or a built asset.',
      content: { 'text/html': null, 'text/javascript': null, 'text/css': null },
    },
    more: {
      404: {
        description:
          'No such built asset, or no build (the text says to run npm run build); a path the router refuses is the JSON error.',
        content: { 'text/plain': null, 'application/json': ErrorBody },
      },
    },
  },
  'GET /healthz': {
    operationId: 'health',
    summary: 'Liveness',
    tag: 'ops',
    ok: { description: 'The process is up.', content: json(Health) },
  },
  'GET /readyz': {
    operationId: 'readiness',
    summary: 'Readiness: store, bus and coordination reachable',
    tag: 'ops',
    ok: { description: 'Every dependency answers.', content: json(Readiness) },
    more: { 503: { description: 'A dependency does not answer.', content: json(Readiness) } },
  },
  'GET /metrics': {
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    tag: 'ops',
    ok: {
      description: 'Prometheus text exposition format.',
      content: { 'text/plain': Type.String() },
    },
  },
  'GET /v1/openapi.json': {
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tag: 'meta',
    ok: {
      description: 'The document.',
      content: json(Type.Object({ openapi: Type.String() }, { additionalProperties: true })),
    },
  },
};

export const MODEL_AND_OPERATOR_OPERATIONS: Record<string, OperationDoc> = {
  // ---- the tenant's models
  'GET /v1/models': {
    operationId: 'listModels',
    summary: "The tenant's models: its model cards, then the fallback vendor key's models",
    tag: 'models',
    query: ModelListQuery,
    ok: { description: 'One page of models.', content: json(ModelList) },
  },
  'GET /v1/models/:id': {
    operationId: 'getModel',
    summary: 'One model by its model card handle',
    tag: 'models',
    params: { id: Type.String({ minLength: 1 }) },
    ok: { description: 'The model.', content: json(ModelObject) },
  },

  'POST /v1/svc/models/list': {
    operationId: 'listProviderModels',
    summary: "A provider's runtime catalog (api_key: deprecated live discovery)",
    tag: 'models',
    body: { schema: ModelsListRequest, required: true, example: { provider: 'anthropic' } },
    ok: { description: 'The catalog.', content: json(FullList(CatalogModelOut)) },
  },

  // ---- operator
  'POST /v1/svc/tenants': {
    operationId: 'createTenant',
    summary: 'Create a tenant and its first API key (operator key only)',
    tag: 'tenants',
    body: { schema: TenantCreate, required: true, example: { name: 'acme' } },
    ok: {
      description: 'The tenant id and its first key (shown once).',
      content: json(TenantCreated),
    },
  },
};

// Model cards and API keys are served under /v1/svc and un-prefixed under /v1.
for (const [base, suffix] of [
  ['/v1/svc', 'Svc'],
  ['/v1', ''],
] as const) {
  Object.assign(MODEL_AND_OPERATOR_OPERATIONS, {
    [`GET ${base}/model_cards`]: {
      operationId: `listModelCards${suffix}`,
      summary: "List the tenant's model cards",
      tag: 'model_cards',
      ok: { description: 'Every card (keys never served).', content: json(FullList(ModelCardOut)) },
    },
    [`POST ${base}/model_cards`]: {
      operationId: `createModelCard${suffix}`,
      summary: 'Create a model card (probes the provider with the key)',
      tag: 'model_cards',
      body: {
        schema: ModelCardCreate,
        required: true,
        example: {
          model_id: 'my-model',
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          api_key: 'sk-example',
        },
      },
      ok: { description: 'The card and the probe outcome.', content: json(ModelCardCreated) },
      conflict: true,
    },
    [`POST ${base}/model_cards/:id`]: {
      operationId: `rotateModelCard${suffix}`,
      summary: 'Update a model card (rotate its key)',
      tag: 'model_cards',
      params: { id: CardId },
      body: {
        schema: Type.Partial(ModelCardCreate, { additionalProperties: false }),
        required: true,
        example: { api_key: 'sk-rotated' },
      },
      ok: { description: 'The card.', content: json(ModelCardOut) },
    },
    [`GET ${base}/model_cards/:id/key`]: {
      operationId: `getModelCardKey${suffix}`,
      summary: "A card's cleartext key: internal, agent workers only",
      description:
        'Not an API-key route: the caller presents the internal worker credential (derived from PLATFORM_ROOT_SECRET, core/src/models/cardKeys.ts) as Bearer or x-api-key; every other caller, tenants and the operator included, gets 403.',
      tag: 'model_cards',
      params: { id: CardId },
      ok: { description: 'The key.', content: json(ModelCardKey) },
      more: { 403: { description: 'Not the worker credential.', content: json(ErrorBody) } },
    },
    [`DELETE ${base}/model_cards/:id`]: {
      operationId: `deleteModelCard${suffix}`,
      summary: 'Delete a model card',
      tag: 'model_cards',
      params: { id: CardId },
      ok: { description: 'Deleted.', content: json(Deleted('model_card_deleted')) },
    },
    [`GET ${base}/api_keys`]: {
      operationId: `listApiKeys${suffix}`,
      summary: "List the tenant's API keys",
      tag: 'api_keys',
      ok: {
        description: 'Every active key (values never served).',
        content: json(FullList(ApiKeyObject)),
      },
    },
    [`POST ${base}/api_keys`]: {
      operationId: `createApiKey${suffix}`,
      summary: 'Create an API key (optionally an environment service key)',
      tag: 'api_keys',
      body: { schema: ApiKeyCreate, required: true, example: { name: 'ci' } },
      ok: { description: 'The key, its value shown once.', content: json(ApiKeyCreated) },
    },
    [`DELETE ${base}/api_keys/:id`]: {
      operationId: `revokeApiKey${suffix}`,
      summary: 'Revoke an API key (refused at once)',
      tag: 'api_keys',
      params: { id: KeyId },
      ok: { description: 'Revoked.', content: json(Deleted('api_key_deleted')) },
    },
  } satisfies Record<string, OperationDoc>);
}
