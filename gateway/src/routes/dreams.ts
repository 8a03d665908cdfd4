/**
 * Dream routes (SDK 1.12 `client.beta.dreams`: create, retrieve, list, archive, cancel), every
 * handler tenant-scoped through core/src/dreams/dreams.ts; the job itself runs on the workers.
 * A create refused because another `update_existing` dream holds the store is a 409 with
 * `x-should-retry: false`. Proved by test/e2e/memory/dreams.test.ts, test/e2e/memory/dreams-update.test.ts and
 * test/e2e/sdk/sdk_suite/test_dreams.py.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DreamCreate, DreamListQuery } from '@agentfleet/schemas';
import { ApiError, type MemoryActor } from '@agentfleet/core';
import { bodyOf, queryOf, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

const createBody = bodyOf(DreamCreate);
const listQuery = queryOf(DreamListQuery);
type DreamReq = FastifyRequest<{ Params: { id: string } }>;

export function dreamRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'dreams'>) {
  const d = p.dreams;
  app.post('/v1/dreams', async (req, reply) => {
    // update_existing writes as the creating key (the versions' created_by).
    const actor: MemoryActor = req.principal.claim
      ? { type: 'session_actor', session_id: req.principal.claim.sessionId }
      : { type: 'api_actor', api_key_id: req.principal.keyId };
    try {
      return await d.create(tenantOf(req), createBody(req), actor);
    } catch (err) {
      // The store is held by another dream: retrying at once cannot help (SDK: x-should-retry).
      if (err instanceof ApiError && err.type === 'conflict')
        reply.header('x-should-retry', 'false');
      throw err;
    }
  });
  app.get('/v1/dreams', async (req) => d.list(tenantOf(req), listQuery(req)));
  app.get('/v1/dreams/:id', async (req: DreamReq) => d.get(tenantOf(req), req.params.id));
  app.post('/v1/dreams/:id/archive', async (req: DreamReq) =>
    d.archive(tenantOf(req), req.params.id),
  );
  app.post('/v1/dreams/:id/cancel', async (req: DreamReq) =>
    d.cancel(tenantOf(req), req.params.id),
  );
}
