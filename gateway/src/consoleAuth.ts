/**
 * Console cookie authentication for the request guards (./requestGuards.ts). Guarantees,
 * tested in test/e2e/console/console-auth.test.ts:
 * - a request with no API key but an `af_console` cookie acts as that console session's
 *   principal; a tampered, revoked or expired cookie is 401 and counts as a failed
 *   authentication (the same limiter as unknown keys); with the console off (fleet mode
 *   without CONSOLE_SESSION_SECRET) a cookie is refused the same way;
 * - every non-GET/HEAD request authenticated by the cookie carries `x-csrf-token` equal to the
 *   session's token (from /v1/svc/console/me), else 403 naming x-csrf-token;
 * - a viewer makes no writes (non-GET → 403; GraphQL reads are POSTs, so /graphql is let
 *   through here and its mutations are refused by the GraphQL preflight, graphql/limits.ts);
 *   a member makes no writes to API keys, model cards, tenants, members, invitations or the
 *   sign-in policy.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiError,
  CONSOLE_COOKIE,
  safeEqual,
  type AuthFailureLimiter,
  type Principal,
} from '@agentfleet/core';
import { refuseUnknownCredential } from './requestGuards.js';
import type { GatewayServices } from './services.js';

/** The named cookie of a request (default `af_console`), if any. */
export function consoleCookie(req: FastifyRequest, name = CONSOLE_COOKIE): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** The Set-Cookie value for a console cookie (empty value and Max-Age=0 clears it). */
export function setCookieHeader(
  p: Pick<GatewayServices, 'config'>,
  value: string,
  maxAgeSeconds: number,
): string {
  const secure = p.config.publicUrl?.startsWith('https:') ? '; Secure' : '';
  return `${CONSOLE_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secure}`;
}

const MEMBER_DENIED =
  /^\/v1\/(svc\/)?(api_keys|model_cards|admin|tenants|console\/(members|invitations|sign_in_policy))(\/|$)/;
const GRAPHQL = /^\/graphql(\/stream)?$/;

/** Resolves the cookie to its principal and applies the CSRF and role rules; throws 401/403. */
export async function authenticateCookie(
  p: Pick<GatewayServices, 'console'>,
  failures: AuthFailureLimiter,
  req: FastifyRequest,
  reply: FastifyReply,
  cookie: string,
): Promise<Principal> {
  const hit = p.console ? await p.console.resolve(cookie) : null;
  if (!hit)
    return refuseUnknownCredential(
      failures,
      req,
      reply,
      p.console
        ? 'invalid or expired console session (af_console cookie)'
        : 'the console is off on this deployment (CONSOLE_SESSION_SECRET is not set)',
    );
  const c = hit.principal.console!;
  if (req.method === 'GET' || req.method === 'HEAD') return hit.principal;
  const token = req.headers['x-csrf-token'];
  if (typeof token !== 'string' || !safeEqual(token, c.csrf))
    throw new ApiError(
      'forbidden',
      'x-csrf-token: a console write needs the csrf_token of GET /v1/svc/console/me in this header',
    );
  const path = req.url.split('?')[0]!;
  // Signing out and switching tenant change no tenant data: every role may.
  const own = /^\/v1\/svc\/console\/(sign_out|sign_out_everywhere|switch_tenant)$/.test(path);
  if (c.role === 'viewer' && !own && !GRAPHQL.test(path))
    throw new ApiError('forbidden', 'the viewer role makes no changes');
  if (c.role === 'member' && MEMBER_DENIED.test(path))
    throw new ApiError(
      'forbidden',
      'the member role cannot change API keys, model cards or members',
    );
  return hit.principal;
}
