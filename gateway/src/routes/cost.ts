/**
 * The cost report (`svc` extension): `GET /v1/svc/cost_report` and its price card, `GET` /
 * `PUT /v1/svc/cost_report/pricing` — the deployment's spend, so the operator API key only
 * (x-api-key or Authorization: Bearer; a tenant key or console member: 403, the request
 * guards' `operator` route config). Rules and shapes: core/src/cost. Proved by
 * test/e2e/cost/cost-report.test.ts.
 */
import type { FastifyInstance } from 'fastify';
import type { GatewayServices } from '../services.js';

type Services = Pick<GatewayServices, 'cost'>;
const operator = { config: { beta: true, operator: true } };

export function costRoutes(app: FastifyInstance, p: Services): void {
  app.get('/v1/svc/cost_report', operator, async (req) =>
    p.cost.report((req.query ?? {}) as Record<string, unknown>),
  );
  app.get('/v1/svc/cost_report/pricing', operator, async () => p.cost.getPricing());
  app.put('/v1/svc/cost_report/pricing', operator, async (req) => p.cost.putPricing(req.body));
}
