/**
 * The console's sign-in routes: the sign-in options, key sign-in, identity-provider sign-in
 * (/v1/svc/oauth/:provider/{authorize,callback} and the un-prefixed /v1/oauth/... forms), who am
 * I, switching tenant, sign out. The cookie contract and its guarantees:
 * core/src/console/console.ts and ../consoleAuth.ts; the providers: core/src/console/identity.ts.
 * Proved by test/e2e/console/console-auth.test.ts, console-oidc.test.ts, console-github.test.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiError,
  SIGN_IN_COOKIE,
  SIGN_IN_TTL_MS,
  SignInError,
  createLogger,
  type AuthFailureLimiter,
  type ConsoleService,
  type ConsoleSessionDoc,
} from '@agentfleet/core';
import { consoleCookie, setCookieHeader } from '../consoleAuth.js';
import { refuseUnknownCredential } from '../requestGuards.js';
import type { GatewayServices } from '../services.js';
import { signInPage } from './consolePages.js';

type ConsoleServices = Pick<GatewayServices, 'console' | 'config' | 'identity' | 'members'>;

const PROVIDER_NAMES: Record<string, string> = { oidc: 'your identity provider', github: 'GitHub' };

/** `failures`: the app's failed-authentication limiter (the one the request guards count in). */
export function consoleSignInRoutes(
  app: FastifyInstance,
  p: ConsoleServices,
  failures: AuthFailureLimiter,
) {
  const log = createLogger(p.config.logLevel, { component: 'console' });
  const on = (): ConsoleService => {
    if (!p.console)
      throw new ApiError(
        'invalid_request',
        'the console is off on this deployment: set CONSOLE_SESSION_SECRET (required in fleet mode)',
      );
    return p.console;
  };
  const session = async (req: FastifyRequest): Promise<ConsoleSessionDoc> => {
    const id = req.principal.console?.sessionId;
    const s = id && p.console ? await p.console.session(id) : null;
    if (!s)
      throw new ApiError('forbidden', 'this endpoint needs a console sign-in (af_console cookie)');
    return s;
  };
  const clear = (reply: FastifyReply) => reply.header('set-cookie', setCookieHeader(p, '', 0));
  const signedIn = async (reply: FastifyReply, s: ConsoleSessionDoc) => {
    const maxAge = Math.floor((Date.parse(s.max_expires_at) - Date.now()) / 1000);
    reply.header('set-cookie', setCookieHeader(p, await on().cookieValue(s), maxAge));
  };

  app.get('/v1/svc/console/config', { config: { public: true } }, async () => ({
    enabled: !!p.console,
    providers: p.identity.list().map((id) => ({
      id,
      name: id === 'github' ? 'GitHub' : 'Single sign-on',
      authorize_url: `/v1/svc/oauth/${id}/authorize`,
    })),
    key_sign_in: true,
  }));

  app.post('/v1/svc/console/session', { config: { public: true } }, async (req, reply) => {
    const body = req.body as { api_key?: unknown } | undefined;
    const key = body?.api_key;
    if (typeof key !== 'string' || key.length === 0)
      throw new ApiError('invalid_request', 'api_key: a string is required', { field: 'api_key' });
    const s = await on().signInWithKey(key);
    if (!s)
      return refuseUnknownCredential(
        failures,
        req,
        reply,
        'invalid API key (environment service keys cannot sign in)',
      );
    await signedIn(reply, s);
    return on().me(s);
  });

  for (const base of ['/v1/svc/oauth', '/v1/oauth']) {
    app.get<{ Params: { provider: string }; Querystring: { return_to?: string } }>(
      `${base}/:provider/authorize`,
      { config: { public: true } },
      async (req, reply) => {
        const c = on();
        const provider = req.params.provider;
        if (!p.identity.has(provider))
          throw new ApiError(
            'not_found',
            `provider: ${provider} is not configured here (configured: ${p.identity.list().join(', ') || 'none'})`,
            { field: 'provider' },
          );
        const returnTo = safeReturnTo(req.query.return_to);
        let begun;
        try {
          begun = await p.identity.begin(provider, `${base}/${provider}/callback`, returnTo);
        } catch (err) {
          if (err instanceof SignInError) return page(reply, 502, 'failed', err.message);
          throw err;
        }
        reply.header(
          'set-cookie',
          signInCookie(p, await c.sealSignIn(begun.pending), SIGN_IN_TTL_MS / 1000),
        );
        return reply.header('cache-control', 'no-store').redirect(begun.url, 302);
      },
    );

    app.get<{ Params: { provider: string } }>(
      `${base}/:provider/callback`,
      { config: { public: true } },
      async (req, reply) => {
        const c = on();
        reply.header('set-cookie', signInCookie(p, '', 0));
        const query = new URL(req.url, 'http://callback.invalid').searchParams;
        const pending = await c.unsealSignIn(consoleCookie(req, SIGN_IN_COOKIE));
        if (!pending || pending.provider !== req.params.provider)
          return page(
            reply,
            400,
            'failed',
            'This sign-in was not started in this browser, or it took longer than 10 minutes. Start again.',
          );
        if (query.get('state') !== pending.state)
          return page(
            reply,
            400,
            'failed',
            'The sign-in answer does not match this browser’s sign-in (state). Start again.',
          );
        const error = query.get('error');
        if (error)
          return page(
            reply,
            400,
            'failed',
            `${PROVIDER_NAMES[pending.provider]} did not sign you in: ${(query.get('error_description') ?? error).slice(0, 300)}`,
          );
        // Each attempt completes once: a replayed callback (same cookie and state) stops here.
        if (!(await c.consumeSignIn(pending.id)))
          return page(reply, 400, 'failed', 'This sign-in was already completed. Start again.');
        let identity;
        try {
          identity = await p.identity.complete(pending, query);
        } catch (err) {
          if (!(err instanceof SignInError)) throw err;
          log.warn('console sign-in refused', { provider: pending.provider, reason: err.message });
          return page(reply, 400, 'failed', err.message);
        }
        const admitted = await p.members.admit(identity);
        if (!admitted) {
          log.info('console sign-in of a non-member', { provider: pending.provider });
          return page(
            reply,
            403,
            'not_member',
            identity.email ?? identity.name,
            identity.emailVerified,
          );
        }
        const s = await c.signInUser(admitted.user, admitted.memberships);
        // fastify appends set-cookie values: the sign-in cookie cleared, the console one set.
        await signedIn(reply, s);
        return reply.header('cache-control', 'no-store').redirect(pending.returnTo, 302);
      },
    );
  }

  app.get('/v1/svc/console/me', async (req) => on().me(await session(req)));

  app.post('/v1/svc/console/switch_tenant', async (req) => {
    const body = req.body as { tenant_id?: unknown } | undefined;
    const tenantId = body?.tenant_id;
    if (typeof tenantId !== 'string' || !tenantId)
      throw new ApiError('invalid_request', 'tenant_id: a string is required', {
        field: 'tenant_id',
      });
    const s = await session(req);
    if (s.principal_kind !== 'user')
      throw new ApiError('forbidden', 'a key sign-in acts for its key’s tenant only');
    return on().me(await on().switchTenant(s, tenantId));
  });

  app.post('/v1/svc/console/sign_out', async (req, reply) => {
    await on().revoke((await session(req))._id);
    clear(reply);
    return { signed_out: true };
  });

  app.post('/v1/svc/console/sign_out_everywhere', async (req, reply) => {
    await on().revokeAllOf(await session(req));
    clear(reply);
    return { signed_out: true };
  });
}

/** The pending sign-in cookie: only the callback paths (under /v1/) ever receive it. */
function signInCookie(p: Pick<GatewayServices, 'config'>, value: string, maxAge: number): string {
  const secure = p.config.publicUrl?.startsWith('https:') ? '; Secure' : '';
  return `${SIGN_IN_COOKIE}=${value}; Path=/v1/; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`;
}

/** Only a path of the console itself: never another origin (an open redirect). */
function safeReturnTo(v: unknown): string {
  return typeof v === 'string' && /^\/console\/[A-Za-z0-9/_#.\-]*$/.test(v) && !v.includes('..')
    ? v
    : '/console/';
}

function page(
  reply: FastifyReply,
  status: number,
  kind: 'failed' | 'not_member',
  detail: string,
  verified = true,
) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
    .type('text/html; charset=utf-8')
    .send(signInPage(kind, detail, verified));
}
