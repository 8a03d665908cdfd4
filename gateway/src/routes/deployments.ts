/**
 * Deployment and deployment run routes: the SDK's paths (`client.beta.deployments`: create,
 * retrieve, update (POST), list, archive, pause, unpause, run; `client.beta.deploymentRuns`:
 * retrieve, list), every handler tenant-scoped through core/src/deployments/service.ts.
 * `initial_events[i]` of type user.define_outcome (outcomes) is refused before validation as not
 * supported yet. Proved by test/e2e/deployments/deployments.test.ts and test/e2e/deployments/deployments-runs.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  DeploymentCreate,
  DeploymentListQuery,
  DeploymentRunListQuery,
  DeploymentUpdate,
} from '@agentfleet/schemas';
import { ApiError } from '@agentfleet/core';
import { bodyOf, optionalBody, queryOf, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

const createBody = bodyOf(DeploymentCreate);
const updateBody = optionalBody(DeploymentUpdate);
const listQuery = queryOf(DeploymentListQuery);
const runListQuery = queryOf(DeploymentRunListQuery);

type IdReq = FastifyRequest<{ Params: { id: string } }>;

/** A user.define_outcome initial event is named and refused (outcomes are sent to a session, not fired by a deployment yet). */
function refuseOutcomeEvents(body: unknown): void {
  const events = (body as { initial_events?: unknown } | null)?.initial_events;
  if (!Array.isArray(events)) return;
  events.forEach((e, i) => {
    if ((e as { type?: unknown } | null)?.type !== 'user.define_outcome') return;
    const field = `initial_events[${i}].type`;
    throw new ApiError(
      'invalid_request',
      `${field}: outcomes (user.define_outcome) in deployment initial_events are not supported yet by this deployment`,
      { field },
    );
  });
}

export function deploymentRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'deployments'>) {
  const d = p.deployments;
  app.post('/v1/deployments', async (req) => {
    refuseOutcomeEvents(req.body);
    return d.create(tenantOf(req), createBody(req));
  });
  app.get('/v1/deployments', async (req) => d.list(tenantOf(req), listQuery(req)));
  app.get('/v1/deployments/:id', async (req: IdReq) => d.get(tenantOf(req), req.params.id));
  app.post('/v1/deployments/:id', async (req: IdReq) => {
    refuseOutcomeEvents(req.body);
    return d.update(tenantOf(req), req.params.id, updateBody(req));
  });
  app.post('/v1/deployments/:id/archive', async (req: IdReq) =>
    d.archive(tenantOf(req), req.params.id),
  );
  app.post('/v1/deployments/:id/pause', async (req: IdReq) =>
    d.pause(tenantOf(req), req.params.id),
  );
  app.post('/v1/deployments/:id/unpause', async (req: IdReq) =>
    d.unpause(tenantOf(req), req.params.id),
  );
  app.post('/v1/deployments/:id/run', async (req: IdReq) => d.run(tenantOf(req), req.params.id));

  app.get('/v1/deployment_runs', async (req) => d.listRuns(tenantOf(req), runListQuery(req)));
  app.get('/v1/deployment_runs/:id', async (req: IdReq) => d.getRun(tenantOf(req), req.params.id));
}
