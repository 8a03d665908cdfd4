import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { ValidationError } from '@agentfleet/schemas';
import { ApiError, ulid, type Logger, type Platform } from '@agentfleet/core';
import { errorBody, hasBeta, parseQuery } from './http.js';
import { openStreams } from './sse.js';
import { agentRoutes } from './routes/agents.js';
import { environmentRoutes } from './routes/environments.js';
import { sessionRoutes } from './routes/sessions.js';
import { adminRoutes } from './routes/admin.js';
import { fileRoutes, fileServicesOf, type FileServices } from './routes/files.js';
import { openApiRoute, recordRoutes } from './openapi/index.js';
import { frameworkErrors, MAX_PARAM_LENGTH } from './frameworkErrors.js';

/** Health, readiness (reflects store, bus and coordination connectivity) and Prometheus metrics. */
export function opsRoutes(app: FastifyInstance, p: Platform): void {
  app.get('/healthz', { config: { public: true } }, async () => ({ ok: true }));
  app.get('/readyz', { config: { public: true } }, async (_req, reply) => {
    const [store, bus, coordination] = await Promise.all([p.store.healthy(), p.bus.healthy(), p.coordination.healthy()].map((x) => x.catch(() => false)));
    const ok = store && bus && coordination;
    return reply.code(ok ? 200 : 503).send({ ok, checks: { store, bus, coordination } });
  });
  app.get('/metrics', { config: { public: true } }, async (_req, reply) => {
    p.metrics.sseStreams.set(openStreams.size);
    return reply.type('text/plain; version=0.0.4; charset=utf-8').send(p.metrics.registry.render());
  });
}

/** The process surface of a worker: only ops routes. */
export async function buildOpsApp(p: Platform): Promise<FastifyInstance> {
  const app = Fastify({ logger: false, forceCloseConnections: 'idle' });
  opsRoutes(app, p);
  return app;
}

export interface AppOptions {
  log: Logger;
  /** Extra route registrations (GraphQL) that share auth and error handling. */
  plugins?: Array<(app: FastifyInstance, p: Platform) => Promise<void> | void>;
  /** Files and session outputs; defaults to the platform's own (`p.files`, `p.outputs`) when it has them. */
  files?: FileServices;
}

/** The HTTP surface: REST /v1 (and GraphQL via plugins) with one auth, error and rate-limit path. */
export async function buildApp(p: Platform, opts: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    bodyLimit: 32 * 1024 * 1024,
    genReqId: () => `req_${ulid()}`,
    // On close, idle keep-alive sockets are destroyed instead of waited on.
    forceCloseConnections: 'idle',
    routerOptions: { ignoreTrailingSlash: true, querystringParser: parseQuery, maxParamLength: MAX_PARAM_LENGTH },
    // Router errors (over-long path segments, malformed percent-encoding) in the API error shape.
    frameworkErrors,
  });
  // Every route registered from here on is in the route table (OpenAPI document, tenancy test).
  recordRoutes(app);

  app.addHook('onRequest', async (req, reply) => {
    reply.header('request-id', req.id);
    const cfg = req.routeOptions.config ?? {};
    if (cfg.public) return;
    const headerKey = req.headers['x-api-key'];
    const auth = req.headers.authorization;
    const bearer = typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
    // The spec names x-api-key; the official SDK (1.12) sends Authorization: Bearer. Both are served.
    const key = typeof headerKey === 'string' ? headerKey : bearer;
    if (!key) throw new ApiError('unauthorized', 'missing x-api-key header');
    const principal = await p.auth.authenticate(key);
    if (!principal) throw new ApiError('unauthorized', 'invalid API key');
    if (principal.environmentId) {
      // Environment service keys: Bearer only, and only under that environment's work routes.
      throw new ApiError('forbidden', "environment service keys are valid only as Bearer on their environment's /work endpoints");
    }
    if (cfg.operator && !principal.operator) throw new ApiError('forbidden', 'this endpoint requires the operator API key');
    req.principal = principal;
    const rl = await p.coordination.rateLimiter.consume(`rl:${principal.tenantId}`, p.config.rateLimit.perMinute, 60_000);
    reply.header('x-ratelimit-limit', rl.limit).header('x-ratelimit-remaining', rl.remaining).header('x-ratelimit-reset', rl.resetAt);
    if (!rl.allowed) {
      reply.header('retry-after', Math.max(1, rl.resetAt - Math.floor(Date.now() / 1000)));
      throw new ApiError('rate_limited', `rate limit of ${rl.limit} requests per minute exceeded for this tenant`);
    }
  });

  app.addHook('preHandler', async (req) => {
    if (req.routeOptions.config?.beta && !hasBeta(req)) {
      throw new ApiError('invalid_request', 'anthropic-beta: this extension endpoint requires the beta header anthropic-beta (or vendor-beta): managed-agents-2026-04-01');
    }
  });

  app.setErrorHandler((err: FastifyError & { field?: string }, req, reply) => {
    const id = String(req.id);
    if (err instanceof ApiError) return reply.code(err.status).send(errorBody(err.type, err.message, id, err.details));
    if (err instanceof ValidationError) return reply.code(400).send(errorBody('invalid_request', err.message, id, { field: err.field }));
    if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.name === 'SyntaxError') return reply.code(400).send(errorBody('invalid_request', `body: malformed JSON (${err.message})`, id));
    if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return reply.code(400).send(errorBody('invalid_request', 'body: a JSON object is required', id));
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return reply.code(400).send(errorBody('invalid_request', `content-type: ${req.headers['content-type']} is not supported; send application/json`, id));
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.code(413).send(errorBody('invalid_request', 'body: exceeds the 32 MiB limit', id));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return reply.code(400).send(errorBody('invalid_request', err.message, id));
    opts.log.error('unhandled error', { request_id: id, method: req.method, url: req.url, err: String(err.stack ?? err) });
    return reply.code(500).send(errorBody('internal_error', 'internal error', id));
  });

  // Streams never end on their own: end them so close() completes.
  app.addHook('preClose', async () => {
    for (const s of [...openStreams]) s.close();
  });

  app.setNotFoundHandler((req, reply) => reply.code(404).send(errorBody('not_found', `no route ${req.method} ${req.url.split('?')[0]}`, String(req.id))));

  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    p.metrics.httpRequests.inc({ method: req.method, route, status: reply.statusCode });
    p.metrics.httpDuration.observe(reply.elapsedTime / 1000, { method: req.method, route });
  });
  opsRoutes(app, p);

  agentRoutes(app, p);
  environmentRoutes(app, p);
  sessionRoutes(app, p);
  adminRoutes(app, p);
  const files = opts.files ?? fileServicesOf(p);
  if (files) fileRoutes(app, p, files);
  for (const plugin of opts.plugins ?? []) await plugin(app, p);
  openApiRoute(app);
  // Registered last: the streams the hooks above ended leave idle keep-alive sockets behind.
  app.addHook('preClose', async () => {
    await new Promise((r) => setTimeout(r, 20));
    app.server.closeIdleConnections();
  });
  return app;
}
