import Fastify, { type FastifyInstance } from 'fastify';
import { ApiError, createLogger } from '@agentfleet/core';
import { errorHandler } from './errorHandler.js';
import {
  authenticateRequest,
  authFailureLimiter,
  type Authenticators,
  type RateLimits,
} from './requestGuards.js';
import type { GatewayServices } from './services.js';
import { openStreams } from './sse.js';
import { serverTimeouts } from './connectionGuard.js';

/**
 * Where Prometheus metrics are served (tested in test/e2e/api/api-hardening.test.ts, "/metrics"):
 * - without METRICS_LISTEN: GET /metrics on the API port (gateway) or the ops port (worker),
 *   answering only the operator API key (401 without a key, 403 for a tenant key);
 * - with METRICS_LISTEN=host:port: only on that address, without auth (a scrape port the
 *   operator keeps off the tenants' network); the API port has no /metrics then.
 */

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** What /metrics renders: the registry, with the gauges read at scrape time. */
export type MetricsSources = Pick<GatewayServices, 'metrics' | 'auth'>;

function render(p: MetricsSources): string {
  p.metrics.sseStreams.set(openStreams.size);
  p.metrics.registry.gauge(
    'agentfleet_auth_key_cache_entries',
    'API keys held in the bounded key cache',
    () => p.auth.cacheSize,
  );
  return p.metrics.registry.render();
}

/** GET /metrics; `operator: true` leaves the key check to the app's auth hook. */
export function metricsRoute(
  app: FastifyInstance,
  p: MetricsSources,
  opts: { operator: boolean },
): void {
  app.get(
    '/metrics',
    { config: opts.operator ? { operator: true } : { public: true } },
    async (_req, reply) => reply.type(CONTENT_TYPE).send(render(p)),
  );
}

/**
 * For apps without the gateway's auth hook (a worker's ops app): routes configured `operator`
 * require the operator key, with the same failed-authentication limit per address.
 */
export function operatorOnlyMetrics(app: FastifyInstance, p: RateLimits & Authenticators): void {
  const failures = authFailureLimiter(p);
  app.setErrorHandler(errorHandler(createLogger(p.config.logLevel, { component: 'ops-http' })));
  app.addHook('onRequest', async (req, reply) => {
    if (!req.routeOptions.config?.operator) return;
    const principal = await authenticateRequest(p, failures, req, reply);
    if (!principal.operator)
      throw new ApiError('forbidden', 'this endpoint requires the operator API key');
  });
}

/** The METRICS_LISTEN server: /metrics only, no auth. */
export async function buildMetricsApp(
  p: MetricsSources & Pick<GatewayServices, 'config'>,
): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    ...serverTimeouts(p.config.http),
  });
  metricsRoute(app, p, { operator: false });
  return app;
}
