import type { FastifyInstance } from 'fastify';
import { EnvironmentCreate, EnvironmentListQuery, EnvironmentUpdate } from '@agentfleet/schemas';
import type { GatewayServices } from '../services.js';
import { bodyOf, queryOf, tenantOf } from '../http.js';

const createBody = bodyOf(EnvironmentCreate);
const updateBody = bodyOf(EnvironmentUpdate);
const listQuery = queryOf(EnvironmentListQuery);

export function environmentRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'environments'>) {
  app.post('/v1/environments', async (req) =>
    p.environments.create(tenantOf(req), createBody(req)),
  );
  app.get('/v1/environments', async (req) => p.environments.list(tenantOf(req), listQuery(req)));
  app.get<{ Params: { id: string } }>('/v1/environments/:id', async (req) =>
    p.environments.get(tenantOf(req), req.params.id),
  );
  const update = async (req: any) =>
    p.environments.update(tenantOf(req), req.params.id, updateBody(req));
  app.patch<{ Params: { id: string } }>('/v1/environments/:id', update);
  app.post<{ Params: { id: string } }>('/v1/environments/:id', update);
  app.delete<{ Params: { id: string } }>('/v1/environments/:id', async (req) =>
    p.environments.remove(tenantOf(req), req.params.id),
  );
  app.post<{ Params: { id: string } }>('/v1/environments/:id/archive', async (req) =>
    p.environments.archive(tenantOf(req), req.params.id),
  );
}
