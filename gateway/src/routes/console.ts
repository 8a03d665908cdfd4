/**
 * The console's sign-in routes (/v1/svc/console/...): key sign-in, who am I, sign out. The
 * cookie contract and its guarantees: core/src/console/console.ts and ../consoleAuth.ts;
 * proved by test/e2e/console/console-auth.test.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, type AuthFailureLimiter, type ConsoleSessionDoc } from '@agentfleet/core';
import { setCookieHeader } from '../consoleAuth.js';
import { refuseUnknownCredential } from '../requestGuards.js';
import type { GatewayServices } from '../services.js';

type ConsoleServices = Pick<GatewayServices, 'console' | 'config'>;

/** `failures`: the app's failed-authentication limiter (the one the request guards count in). */
export function consoleSignInRoutes(
  app: FastifyInstance,
  p: ConsoleServices,
  failures: AuthFailureLimiter,
) {
  const session = async (req: FastifyRequest): Promise<ConsoleSessionDoc> => {
    const id = req.principal.console?.sessionId;
    const s = id ? await p.console.session(id) : null;
    if (!s)
      throw new ApiError('forbidden', 'this endpoint needs a console sign-in (af_console cookie)');
    return s;
  };
  const clear = (reply: FastifyReply) => reply.header('set-cookie', setCookieHeader(p, '', 0));

  app.get('/v1/svc/console/config', { config: { public: true } }, async () => ({
    providers: [],
    key_sign_in: true,
  }));

  app.post('/v1/svc/console/session', { config: { public: true } }, async (req, reply) => {
    const body = req.body as { api_key?: unknown } | undefined;
    const key = body?.api_key;
    if (typeof key !== 'string' || key.length === 0)
      throw new ApiError('invalid_request', 'api_key: a string is required', { field: 'api_key' });
    const s = await p.console.signInWithKey(key);
    if (!s)
      return refuseUnknownCredential(
        failures,
        req,
        reply,
        'invalid API key (environment service keys cannot sign in)',
      );
    const maxAge = Math.floor((Date.parse(s.max_expires_at) - Date.now()) / 1000);
    reply.header('set-cookie', setCookieHeader(p, await p.console.cookieValue(s), maxAge));
    return p.console.me(s);
  });

  app.get('/v1/svc/console/me', async (req) => p.console.me(await session(req)));

  app.post('/v1/svc/console/sign_out', async (req, reply) => {
    await p.console.revoke((await session(req))._id);
    clear(reply);
    return { signed_out: true };
  });

  app.post('/v1/svc/console/sign_out_everywhere', async (req, reply) => {
    await p.console.revokeAllOf(await session(req));
    clear(reply);
    return { signed_out: true };
  });
}
