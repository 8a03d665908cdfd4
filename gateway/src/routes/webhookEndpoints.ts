/**
 * A tenant's webhook endpoints (`svc` extension, beta header required): create (answers the
 * secret once), list, retrieve, update (POST or PATCH; `disabled: false` re-enables), delete,
 * rotate_secret (answers the new secret once) and the endpoint's deliveries. Tenant-scoped
 * through core/src/webhooks/endpoints.ts. Proved by test/e2e/webhooks/webhooks-endpoints.test.ts and
 * test/e2e/auth/tenancy-routes.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  WebhookEndpointCreate,
  WebhookEndpointListQuery,
  WebhookEndpointUpdate,
} from '@agentfleet/schemas';
import type { GatewayServices } from '../services.js';
import { bodyOf, queryOf, tenantOf } from '../http.js';

const createBody = bodyOf(WebhookEndpointCreate);
const updateBody = bodyOf(WebhookEndpointUpdate);
const listQuery = queryOf(WebhookEndpointListQuery);

type EndpointReq = { Params: { id: string } };
const beta = { config: { beta: true } };
const BASE = '/v1/svc/webhook_endpoints';

export function webhookEndpointRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'webhooks'>) {
  const e = p.webhooks.endpoints;
  app.post(BASE, beta, async (req) => e.create(tenantOf(req), createBody(req)));
  app.get(BASE, beta, async (req) => e.list(tenantOf(req), listQuery(req)));
  app.get<EndpointReq>(`${BASE}/:id`, beta, async (req) => e.get(tenantOf(req), req.params.id));
  const update = async (req: FastifyRequest<EndpointReq>) =>
    e.update(tenantOf(req), req.params.id, updateBody(req));
  app.post<EndpointReq>(`${BASE}/:id`, beta, update);
  app.patch<EndpointReq>(`${BASE}/:id`, beta, update);
  app.delete<EndpointReq>(`${BASE}/:id`, beta, async (req) =>
    e.remove(tenantOf(req), req.params.id),
  );
  app.post<EndpointReq>(`${BASE}/:id/rotate_secret`, beta, async (req) =>
    e.rotateSecret(tenantOf(req), req.params.id),
  );
  app.get<EndpointReq>(`${BASE}/:id/deliveries`, beta, async (req) =>
    e.deliveries(tenantOf(req), req.params.id, listQuery(req)),
  );
}
