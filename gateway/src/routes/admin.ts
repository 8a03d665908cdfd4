import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Type } from '@sinclair/typebox';
import {
  ApiKeyCreate,
  ModelCardCreate,
  ModelsListRequest,
  TenantCreate,
} from '@agentfleet/schemas';
import {
  ApiError,
  checkWorkerCaller,
  modelInfos,
  pageModels,
  type ModelPageQuery,
} from '@agentfleet/core';
import { bodyOf, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

const cardCreate = bodyOf(ModelCardCreate);
const cardRotate = bodyOf(Type.Partial(ModelCardCreate, { additionalProperties: false }));
const modelsList = bodyOf(ModelsListRequest);
const keyCreate = bodyOf(ApiKeyCreate);
const tenantCreate = bodyOf(TenantCreate);

/** The credential a request presents: a Bearer token or x-api-key. */
function presented(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^Bearer /i.test(auth)) return auth.slice(7).trim();
  const key = req.headers['x-api-key'];
  return typeof key === 'string' && key ? key : undefined;
}

/**
 * `svc` extension endpoints, served under /v1/svc/... and un-prefixed where the spec says so.
 * Model cards in full (rotation, the internal key route, models/list) are proved by
 * test/e2e/models/model-cards-full.test.ts.
 */
export function adminRoutes(
  app: FastifyInstance,
  p: Pick<GatewayServices, 'models' | 'auth' | 'config'>,
) {
  // The runtime catalog; api_key is the deprecated live-discovery path (core/src/models/catalog.ts).
  app.post('/v1/svc/models/list', { config: { beta: true } }, async (req, reply) => {
    const body = modelsList(req);
    const data = await p.models.listModels(tenantOf(req), body);
    if (body.api_key !== undefined) reply.header('deprecation', 'true');
    return { data, has_more: false };
  });
  for (const base of ['/v1/svc', '/v1']) {
    app.get(`${base}/model_cards`, { config: { beta: true } }, async (req) => ({
      data: await p.models.list(tenantOf(req)),
      has_more: false,
    }));
    app.post(`${base}/model_cards`, { config: { beta: true } }, async (req) => {
      const { card, probe } = await p.models.create(tenantOf(req), cardCreate(req));
      return { ...card, probe };
    });
    app.post<{ Params: { id: string } }>(
      `${base}/model_cards/:id`,
      { config: { beta: true } },
      async (req) => p.models.rotate(tenantOf(req), req.params.id, cardRotate(req)),
    );
    // Internal, agent workers only: its own caller check (core/src/models/cardKeys.ts), no API key.
    app.get<{ Params: { id: string } }>(
      `${base}/model_cards/:id/key`,
      { config: { public: true } },
      async (req) => {
        checkWorkerCaller(presented(req), p.config.rootSecret);
        return p.models.readCardKey(req.params.id);
      },
    );
    app.delete<{ Params: { id: string } }>(
      `${base}/model_cards/:id`,
      { config: { beta: true } },
      async (req) => {
        await p.models.remove(tenantOf(req), req.params.id);
        return { id: req.params.id, type: 'model_card_deleted' };
      },
    );
    app.get(`${base}/api_keys`, { config: { beta: true } }, async (req) => ({
      data: await p.auth.listKeys(tenantOf(req)),
      has_more: false,
    }));
    app.post(`${base}/api_keys`, { config: { beta: true } }, async (req) =>
      p.auth.createKey(tenantOf(req), keyCreate(req)),
    );
    app.delete<{ Params: { id: string } }>(
      `${base}/api_keys/:id`,
      { config: { beta: true } },
      async (req) => {
        await p.auth.revokeKey(tenantOf(req), req.params.id);
        return { id: req.params.id, type: 'api_key_deleted' };
      },
    );
  }
  // Operator-only: tenants are created by the deployment's operator key.
  app.post('/v1/svc/tenants', { config: { beta: true, operator: true } }, async (req) =>
    p.auth.createTenant(tenantCreate(req).name),
  );

  /**
   * Official model resources (BetaModelInfo) for the tenant's cards and the vendor fallback's
   * models (core/src/models/info.ts); credentials never appear.
   */
  const infos = async (tenant: string) =>
    modelInfos(await p.models.list(tenant), p.models.hasVendorFallback);
  app.get('/v1/models', async (req) =>
    pageModels(await infos(tenantOf(req)), req.query as ModelPageQuery),
  );
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req) => {
    const model = (await infos(tenantOf(req))).find((m) => m.id === req.params.id);
    if (!model) throw new ApiError('not_found', `model ${req.params.id} not found`);
    return model;
  });
}
