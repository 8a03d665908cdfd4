import type { FastifyInstance } from 'fastify';
import { buildOpenApi } from './document.js';
import { routeTableOf } from './routeTable.js';

export { buildOpenApi, type OpenApiBuild } from './document.js';
export { OPERATIONS, type OperationDoc } from './operations.js';
export { openApiPath, recordRoutes, routeTableOf, type RouteEntry } from './routeTable.js';

/**
 * `GET /v1/openapi.json` (public): the OpenAPI 3.1 document of every route `app` recorded
 * (`recordRoutes`), built once on the first request, when every route is registered.
 * Proven by: test/e2e/api/openapi.test.ts.
 */
export function openApiRoute(app: FastifyInstance): void {
  let doc: string | null = null;
  app.get('/v1/openapi.json', { config: { public: true } }, async (_req, reply) => {
    doc ??= JSON.stringify(buildOpenApi(routeTableOf(app)).document);
    return reply.type('application/json; charset=utf-8').send(doc);
  });
}
