import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ApiKeyCreate, ModelCardCreate, TenantCreate } from '@agentfleet/schemas';
import {
  ApiError,
  modelInfos,
  pageModels,
  type ModelPageQuery,
  type Platform,
} from '@agentfleet/core';
import { bodyOf, tenantOf } from '../http.js';

const cardCreate = bodyOf(ModelCardCreate);
const cardRotate = bodyOf(Type.Partial(ModelCardCreate, { additionalProperties: false }));
const keyCreate = bodyOf(ApiKeyCreate);
const tenantCreate = bodyOf(TenantCreate);

/** `svc` extension endpoints, served under /v1/svc/... and un-prefixed where the spec says so. */
export function adminRoutes(app: FastifyInstance, p: Platform) {
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
   * models (core/src/domain/modelInfo.ts); credentials never appear.
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
