import Fastify, { type FastifyInstance } from 'fastify';
import { ApiError, type Logger } from '@agentfleet/core';
import { hasBeta, parseQuery } from './http.js';
import { errorHandler } from './errorHandler.js';
import { newRequestId } from './requestId.js';
import { registerJsonParser } from './jsonBody.js';
import { registerRequestGuards, type Authenticators, type RateLimits } from './requestGuards.js';
import { metricsRoute, operatorOnlyMetrics, type MetricsSources } from './metricsRoute.js';
import { openStreams, StreamSlots } from './sse.js';
import type { GatewayServices } from './services.js';
import type { GraphqlServices } from './graphql/index.js';
import { agentRoutes } from './routes/agents.js';
import { environmentRoutes } from './routes/environments.js';
import { vaultRoutes } from './routes/vaults.js';
import { deploymentRoutes } from './routes/deployments.js';
import { webhookEndpointRoutes } from './routes/webhookEndpoints.js';
import { skillSourceRoutes } from './routes/skillSources.js';
import { memoryStoreRoutes } from './routes/memoryStores.js';
import { dreamRoutes } from './routes/dreams.js';
import { memorySearchRoutes } from './routes/memorySearch.js';
import { sessionRoutes } from './routes/sessions.js';
import { threadRoutes } from './routes/threads.js';
import { adminRoutes } from './routes/admin.js';
import { mcpProxyRoutes } from './routes/mcpProxy.js';
import { workRoutes } from './routes/work.js';
import { fileRoutes, type FileServices } from './routes/files.js';
import { skillRoutes } from './routes/skills.js';
import { integrationRoutes } from './routes/integrations.js';
import { costRoutes } from './routes/cost.js';
import { evalRoutes } from './routes/evals.js';
import { consoleSignInRoutes } from './routes/console.js';
import { consoleMemberRoutes } from './routes/consoleMembers.js';
import { consoleRoutes } from './console.js';
import { openApiRoute, recordRoutes } from './openapi/index.js';
import { frameworkErrors, MAX_PARAM_LENGTH } from './frameworkErrors.js';
import { notFoundHandler } from './methodNotAllowed.js';
import {
  guardConnections,
  maxConnectionsFor,
  serverTimeouts,
  trustedProxies,
} from './connectionGuard.js';

/**
 * Health, readiness (reflects store, bus and coordination connectivity) and Prometheus metrics:
 * /metrics needs the operator key here, or is served only on METRICS_LISTEN (metricsRoute.ts).
 */
export type OpsServices = Pick<GatewayServices, 'store' | 'bus' | 'config'> &
  RateLimits &
  MetricsSources;

export function opsRoutes(app: FastifyInstance, p: OpsServices): void {
  app.get('/healthz', { config: { public: true } }, async () => ({ ok: true }));
  app.get('/readyz', { config: { public: true } }, async (_req, reply) => {
    const [store, bus, coordination] = await Promise.all(
      [p.store.healthy(), p.bus.healthy(), p.coordination.healthy()].map((x) =>
        x.catch(() => false),
      ),
    );
    const ok = store && bus && coordination;
    return reply.code(ok ? 200 : 503).send({ ok, checks: { store, bus, coordination } });
  });
  if (!p.config.metricsListen) metricsRoute(app, p, { operator: true });
}

/** The process surface of a worker: only ops routes (its /metrics checks the operator key itself). */
export async function buildOpsApp(p: OpsServices & Authenticators): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    forceCloseConnections: 'idle',
    ...serverTimeouts(p.config.http),
  });
  limitConnections(app, p);
  operatorOnlyMetrics(app, p);
  opsRoutes(app, p);
  return app;
}

export interface AppOptions {
  log: Logger;
  /**
   * Extra route registrations (GraphQL) that share auth and error handling, given the services
   * GraphQL resolves with and the app's open-stream slots (sse.ts StreamSlots).
   */
  plugins?: Array<AppPlugin>;
  /** Files and session outputs; defaults to the services' own (`files`, `outputs`). */
  files?: FileServices;
}

export type AppPlugin = (
  app: FastifyInstance,
  s: GraphqlServices,
  streams: StreamSlots,
) => Promise<void> | void;

/** The timeouts and caps of gateway/src/connectionGuard.ts on an app's server. */
function limitConnections(app: FastifyInstance, p: Pick<GatewayServices, 'config'>): void {
  const maxConnections = maxConnectionsFor(p.config.http);
  guardConnections(app.server, {
    maxConnections,
    perAddress: Math.min(p.config.http.maxConnectionsPerAddress, maxConnections),
    trusted: trustedProxies(p.config.http.trustProxy),
  });
}

/** The HTTP surface: REST /v1 (and GraphQL via plugins) with one auth, error and rate-limit path. */
export async function buildApp(p: GatewayServices, opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: 32 * 1024 * 1024,
    genReqId: newRequestId,
    // On close, idle keep-alive sockets are destroyed instead of waited on.
    forceCloseConnections: 'idle',
    routerOptions: {
      ignoreTrailingSlash: true,
      querystringParser: parseQuery,
      maxParamLength: MAX_PARAM_LENGTH,
    },
    // Router errors (over-long path segments, malformed percent-encoding) in the API error shape.
    frameworkErrors,
    // Header, request and keep-alive timeouts; the client address (req.ip) is X-Forwarded-For's
    // client only when the peer is a TRUST_PROXY proxy (connectionGuard.ts).
    ...serverTimeouts(p.config.http),
    trustProxy: trustedProxies(p.config.http.trustProxy) ?? false,
  });
  limitConnections(app, p);
  // Every route registered from here on is in the route table (OpenAPI document, tenancy test).
  recordRoutes(app);

  registerJsonParser(app);
  const failures = registerRequestGuards(app, p);

  // Callback-style hooks (no promise per request); routeCfg was read by the onRequest guard.
  app.addHook('preHandler', (req, _reply, done) => {
    if ((req.routeCfg ?? req.routeOptions.config)?.beta && !hasBeta(req)) {
      return done(
        new ApiError(
          'invalid_request',
          'anthropic-beta: this extension endpoint requires the beta header anthropic-beta (or vendor-beta): managed-agents-2026-04-01',
        ),
      );
    }
    done();
  });

  app.setErrorHandler(errorHandler(opts.log));

  // Streams never end on their own: end them so close() completes.
  app.addHook('preClose', async () => {
    for (const s of [...openStreams]) s.close();
  });

  // Unmatched requests: 405 with Allow on a declared path, else 404 (methodNotAllowed.ts).
  app.setNotFoundHandler(notFoundHandler(app));

  // Each (method, route pattern, status) resolves its two series once (bounded: route patterns).
  const series = new Map<
    string,
    { count: { inc(): void }; duration: { observe(seconds: number): void } }
  >();
  app.addHook('onResponse', (req, reply, done) => {
    const route = (req.routeCfg ? req.routeCfg.url : req.routeOptions.url) ?? 'unmatched';
    const method = req.method;
    const status = reply.statusCode;
    const k = `${method} ${status} ${route}`;
    let s = series.get(k);
    if (!s)
      series.set(
        k,
        (s = {
          count: p.metrics.httpRequests.series({ method, route, status }),
          duration: p.metrics.httpDuration.series({ method, route }),
        }),
      );
    s.count.inc();
    s.duration.observe(reply.elapsedTime / 1000);
    done();
  });
  opsRoutes(app, p);

  agentRoutes(app, p);
  environmentRoutes(app, p);
  workRoutes(app, p);
  vaultRoutes(app, p);
  deploymentRoutes(app, p);
  webhookEndpointRoutes(app, p);
  skillSourceRoutes(app, p);
  memoryStoreRoutes(app, p);
  dreamRoutes(app, p);
  memorySearchRoutes(app, p);
  // The tenant's open event streams of this app, REST and GraphQL together.
  const streams = new StreamSlots(p.config.http.maxStreamsPerTenant);
  sessionRoutes(app, p, streams, opts.log);
  threadRoutes(app, p, streams);
  adminRoutes(app, p);
  await mcpProxyRoutes(app, p);
  fileRoutes(app, opts.files ?? p);
  skillRoutes(app, p);
  integrationRoutes(app, p);
  costRoutes(app, p);
  evalRoutes(app, p);
  consoleSignInRoutes(app, p, failures);
  consoleMemberRoutes(app, p);
  consoleRoutes(app);
  for (const plugin of opts.plugins ?? []) await plugin(app, p, streams);
  openApiRoute(app);
  // Registered last: the streams the hooks above ended leave idle keep-alive sockets behind.
  app.addHook('preClose', async () => {
    await new Promise((r) => setTimeout(r, 20));
    app.server.closeIdleConnections();
  });
  return app;
}
