import type { FastifyInstance } from 'fastify';
import { Type } from '@sinclair/typebox';
import { ApiKeyCreate, ModelCardCreate, TenantCreate } from '@agentfleet/schemas';
import { ApiError, type Platform } from '@agentfleet/core';
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

  /** Official model resources for the tenant's active cards (credentials never appear). */
  app.get('/v1/models', async (req) => {
    const cards = await p.models.list(tenantOf(req));
    const data = cards.map((c) => ({
      type: 'model',
      id: c.model_id,
      display_name: c.model_id,
      created_at: c.created_at,
    }));
    return {
      data,
      has_more: false,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
    };
  });
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req) => {
    const card = (await p.models.list(tenantOf(req))).find((c) => c.model_id === req.params.id);
    if (!card) throw new ApiError('not_found', `model ${req.params.id} not found`);
    return {
      type: 'model',
      id: card.model_id,
      display_name: card.model_id,
      created_at: card.created_at,
    };
  });
}
