/**
 * Eval runs (`svc` extension, also un-prefixed `/v1/evals`): start, list, retrieve, cancel and
 * compare, every handler tenant-scoped through core/src/evals/service.ts; the cases run on the
 * workers (workers/src/jobs/evalRunner.ts). A console viewer may read but not start or cancel.
 * Proved by test/e2e/evals/evals.test.ts and test/e2e/evals/evals-crash.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EvalListQuery } from '@agentfleet/schemas';
import { ApiError } from '@agentfleet/core';
import { queryOf, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

type IdReq = FastifyRequest<{ Params: { id: string }; Querystring: Record<string, unknown> }>;
const beta = { config: { beta: true } };
const listQuery = queryOf(EvalListQuery);

function writer(req: FastifyRequest): string {
  if (req.principal.console?.role === 'viewer')
    throw new ApiError('forbidden', 'the viewer role makes no changes');
  return tenantOf(req);
}

export function evalRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'evals'>): void {
  const e = p.evals;
  for (const base of ['/v1/svc/evals', '/v1/evals']) {
    app.post(base, beta, async (req) => e.create(writer(req), req.body));
    app.get(base, beta, async (req) => e.list(tenantOf(req), listQuery(req)));
    app.get(`${base}/:id`, beta, async (req: IdReq) => e.get(tenantOf(req), req.params.id));
    app.post(`${base}/:id/cancel`, beta, async (req: IdReq) =>
      e.cancel(writer(req), req.params.id),
    );
    app.get(`${base}/:id/compare`, beta, async (req: IdReq) =>
      e.compare(tenantOf(req), req.params.id, req.query?.with),
    );
  }
}
