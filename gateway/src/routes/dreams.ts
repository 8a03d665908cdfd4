/**
 * Dream routes (SDK 1.12 `client.beta.dreams`: create, retrieve, list, archive, cancel), every
 * handler tenant-scoped through core/src/dreams/service.ts; the job itself runs on the workers.
 * Proved by test/dreams.test.ts and test/python/sdk_suite/test_dreams.py.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DreamCreate, DreamListQuery } from '@agentfleet/schemas';
import type { Platform } from '@agentfleet/core';
import { bodyOf, queryOf, tenantOf } from '../http.js';

const createBody = bodyOf(DreamCreate);
const listQuery = queryOf(DreamListQuery);
type DreamReq = FastifyRequest<{ Params: { id: string } }>;

export function dreamRoutes(app: FastifyInstance, p: Platform) {
  const d = p.dreams;
  app.post('/v1/dreams', async (req) => d.create(tenantOf(req), createBody(req)));
  app.get('/v1/dreams', async (req) => d.list(tenantOf(req), listQuery(req)));
  app.get('/v1/dreams/:id', async (req: DreamReq) => d.get(tenantOf(req), req.params.id));
  app.post('/v1/dreams/:id/archive', async (req: DreamReq) =>
    d.archive(tenantOf(req), req.params.id),
  );
  app.post('/v1/dreams/:id/cancel', async (req: DreamReq) =>
    d.cancel(tenantOf(req), req.params.id),
  );
}
