import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, AuthFailureLimiter, isSessionsToken, type Principal } from '@agentfleet/core';
import {
  checkClaimCapability,
  checkEnvironmentKey,
  claimedSessionPrincipal,
} from './claimedSession.js';
import { queryProblem } from './http.js';
import { ProxiedClients, trustedProxies } from './connectionGuard.js';
import type { GatewayServices } from './services.js';
import { authenticateCookie, consoleCookie } from './consoleAuth.js';

/** The rate limits' configuration and their shared counters. */
export type RateLimits = Pick<GatewayServices, 'config' | 'coordination'>;
/** Who a presented credential is: API keys, and the Work API's claimed-session bearers. */
export type Authenticators = Pick<GatewayServices, 'auth' | 'work' | 'console'>;

/**
 * The gateway's request guards, run in the onRequest hook before any route (REST, GraphQL,
 * SSE). Guarantees, each tested in test/e2e/api/api-hardening.test.ts:
 * - a query string with a reserved or malformed key is refused with 400 naming the key
 *   ("query strings");
 * - `multipart/form-data` without a boundary is refused with 400 ("multipart");
 * - a valid key always passes; a key that does not resolve counts as a failure of the client
 *   address and of the global budget, and past AUTH_FAILURES_PER_MINUTE (that address) or
 *   AUTH_FAILURES_GLOBAL_PER_MINUTE (all addresses) gets 429 `rate_limited` with Retry-After
 *   instead of 401; keys longer than MAX_API_KEY_LENGTH are failures without a lookup
 *   ("failed authentications"; test/e2e/auth/auth-limiter.test.ts);
 * - the client address is the TCP peer, or behind a TRUST_PROXY proxy the X-Forwarded-For
 *   client (test/e2e/auth/auth-limiter.test.ts "TRUST_PROXY");
 * - every authenticated request takes one token of its tenant's rate limit and reports it in
 *   X-RateLimit-* headers (SSE responses included); GraphQL operations take more by cost
 *   (chargeTenant, see graphql/limits.ts).
 * - the SDK's `workspace_id` (header `anthropic-workspace-id`, or `vendor-workspace-id`): a key
 *   belongs to one tenant, which is its workspace, so a value naming another workspace is
 *   refused with 403 and every authenticated response names the workspace in that header
 *   (test/workspace-header.test.ts).
 * - environment service keys and claimed-session bearers (Work API) are confined to their
 *   scopes by ./claimedSession.ts (test/e2e/work/work-keys.test.ts, test/e2e/work/work-bearer.test.ts).
 */

export const RATE_WINDOW_MS = 60_000;

/** The API key a request presents: x-api-key, or Authorization: Bearer (what the official SDK sends). */
export function presentedKey(req: FastifyRequest): string | undefined {
  const headerKey = req.headers['x-api-key'];
  const auth = req.headers.authorization;
  const bearer =
    typeof auth === 'string' && auth.startsWith('Bearer ') ? auth.slice(7).trim() : undefined;
  return typeof headerKey === 'string' ? headerKey : bearer;
}

/**
 * Takes `weight` tokens of the tenant's per-minute rate limit, sets the X-RateLimit-* headers,
 * and throws 429 (with Retry-After) when the tenant is over.
 */
export async function chargeTenant(
  p: RateLimits,
  reply: FastifyReply,
  tenantId: string,
  weight = 1,
): Promise<void> {
  const rl = await p.coordination.rateLimiter.consume(
    `rl:${tenantId}`,
    p.config.rateLimit.perMinute,
    RATE_WINDOW_MS,
    weight,
  );
  reply
    .header('x-ratelimit-limit', rl.limit)
    .header('x-ratelimit-remaining', rl.remaining)
    .header('x-ratelimit-reset', rl.resetAt);
  if (!rl.allowed) {
    reply.header('retry-after', Math.max(1, rl.resetAt - Math.floor(Date.now() / 1000)));
    throw new ApiError(
      'rate_limited',
      `rate limit of ${rl.limit} requests per minute exceeded for this tenant`,
    );
  }
}

const MULTIPART = /^\s*multipart\/form-data\s*(;|$)/i;
const BOUNDARY = /;\s*boundary=(?:"[^"]{1,70}"|[^\s;"]{1,70})\s*(;|$)/i;

/** 400 for malformed query keys and for multipart bodies without a boundary. */
export function checkRequestShape(req: FastifyRequest): void {
  const q = queryProblem(req.query);
  if (q) throw new ApiError('invalid_request', q.message, { field: q.key.slice(0, 100) });
  const ct = req.headers['content-type'];
  if (typeof ct === 'string' && MULTIPART.test(ct) && !BOUNDARY.test(ct)) {
    throw new ApiError(
      'invalid_request',
      'content-type: multipart/form-data needs a boundary parameter (multipart/form-data; boundary=…)',
      { field: 'content-type' },
    );
  }
}

/** The failed-authentication limiter of one app, with the configured budgets. */
export const authFailureLimiter = (p: RateLimits) =>
  new AuthFailureLimiter(
    p.coordination.rateLimiter,
    p.config.rateLimit.authFailuresPerMinute,
    p.config.rateLimit.authFailuresGlobalPerMinute,
  );

/**
 * Resolves the request's principal, or throws 401 / 429. The key is looked up first (a hash
 * lookup, cached for valid keys): a key that resolves always passes, whatever failed before from
 * its address. Only a key that does not resolve meets the failure limiter: counted against the
 * client address (`req.ip`: the TCP peer, or X-Forwarded-For's client when the peer is a
 * TRUST_PROXY proxy) and the global budget, and answered 429 with Retry-After instead of 401
 * once either is spent.
 */
export async function authenticateRequest(
  p: Authenticators,
  failures: AuthFailureLimiter,
  req: FastifyRequest,
  reply: FastifyReply,
): Promise<Principal> {
  const key = presentedKey(req);
  // No key but a console cookie: the console session's principal (./consoleAuth.ts).
  const cookie = key ? undefined : consoleCookie(req);
  if (cookie) return authenticateCookie(p, failures, req, reply, cookie);
  if (!key) throw new ApiError('unauthorized', 'missing x-api-key header');
  // A Work claim's sessions_token (Bearer only) resolves to its live claim (./claimedSession.ts).
  const claimToken = isSessionsToken(key) && req.headers['x-api-key'] === undefined;
  const principal = claimToken
    ? await claimedSessionPrincipal(p.work, key)
    : await p.auth.authenticate(key);
  if (principal) return principal;
  return refuseUnknownCredential(
    failures,
    req,
    reply,
    claimToken
      ? 'invalid sessions token (unknown, or its work item was claimed again since)'
      : 'invalid API key',
  );
}

/**
 * A presented credential that did not resolve: counted as a failed authentication of the
 * client address (and of all addresses), then 429 with Retry-After once a budget is spent,
 * else 401 with `message`. Every credential check takes this one path: the guard's keys and
 * the console's key sign-in (./routes/console.ts) share one limiter per app.
 */
export async function refuseUnknownCredential(
  failures: AuthFailureLimiter,
  req: FastifyRequest,
  reply: FastifyReply,
  message: string,
): Promise<never> {
  const refusal = await failures.fail(req.ip);
  if (refusal) {
    reply.header('retry-after', refusal.seconds);
    throw new ApiError(
      'rate_limited',
      refusal.scope === 'address'
        ? `too many failed authentications from this address (limit ${refusal.limit} per minute); retry after ${refusal.seconds} s`
        : `too many failed authentications from all addresses (limit ${refusal.limit} per minute); retry after ${refusal.seconds} s`,
    );
  }
  throw new ApiError('unauthorized', message);
}

const WORKSPACE_HEADERS = ['anthropic-workspace-id', 'vendor-workspace-id'] as const;

/** The SDK's workspace_id must name the key's own tenant (its workspace); the answer names it. */
function checkWorkspace(req: FastifyRequest, reply: FastifyReply, tenantId: string): void {
  for (const h of WORKSPACE_HEADERS) {
    const v = req.headers[h];
    if (v === undefined) continue;
    if (v !== tenantId)
      throw new ApiError(
        'forbidden',
        `${h}: this API key belongs to workspace ${tenantId} and cannot act on another workspace`,
      );
  }
  reply.header('anthropic-workspace-id', tenantId);
}

/**
 * A request through a trusted proxy takes one of its client's slots until its response is done
 * (connectionGuard.ts ProxiedClients); none left: 429, and the proxy's connection stays open for
 * its other clients (test/e2e/api/connection-limits.test.ts "behind a trusted proxy").
 */
function takeClientSlot(clients: ProxiedClients, req: FastifyRequest, reply: FastifyReply): void {
  const give = clients.take(req.ip);
  if (!give) {
    reply.header('retry-after', 1);
    throw new ApiError(
      'rate_limited',
      `too many requests in flight from this client address (limit ${clients.perAddress}, HTTP_MAX_CONNECTIONS_PER_ADDRESS)`,
    );
  }
  reply.raw.once('close', give);
}

/** Registers the guards and the auth/rate-limit hook on the gateway app. */
export function registerRequestGuards(
  app: FastifyInstance,
  p: RateLimits & Authenticators,
): AuthFailureLimiter {
  const failures = authFailureLimiter(p);
  const trusted = trustedProxies(p.config.http.trustProxy);
  const proxied = trusted && new ProxiedClients(p.config.http.maxConnectionsPerAddress);
  // fastify's req.routeOptions builds a new object on every read: read it once per request.
  app.decorateRequest('routeCfg', null);
  app.addHook('onRequest', async (req, reply) => {
    reply.header('request-id', req.id);
    if (proxied && trusted(req.socket.remoteAddress)) takeClientSlot(proxied, req, reply);
    const cfg = (req.routeCfg = req.routeOptions.config ?? {});
    if (cfg.public) return checkRequestShape(req);
    const principal = await authenticateRequest(p, failures, req, reply);
    // A claimed-session bearer: its capability table, with the live claim (./claimedSession.ts).
    if (principal.claim) await checkClaimCapability(p.work, req, principal.claim);
    // Environment service keys: Bearer only, and only under that environment's work routes.
    else if (principal.environmentId) checkEnvironmentKey(req, principal);
    else if (cfg.operator && !principal.operator)
      throw new ApiError('forbidden', 'this endpoint requires the operator API key');
    checkWorkspace(req, reply, principal.tenantId);
    req.principal = principal;
    await chargeTenant(p, reply, principal.tenantId);
    checkRequestShape(req);
  });
  return failures;
}
