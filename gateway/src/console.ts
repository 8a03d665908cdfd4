import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import fastifyStatic from '@fastify/static';

/**
 * The web console's static files (console/dist, built by `npm run build`) at /console:
 * `/` redirects to /console/; hashed files under /console/assets are immutable for a year;
 * every other /console path answers index.html (no-cache) so the SPA routes itself. Every
 * answer carries a strict Content-Security-Policy (same-origin only, no inline script, no
 * framing). The routes are public: the console signs in through /v1/svc/console/session.
 * Without a build, /console answers a plain 404 saying to run `npm run build`.
 *
 * Proven by: test/e2e/console/console-browser.test.ts (CSP header, cache headers, fallback).
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const here = dirname(fileURLToPath(import.meta.url));
/** console/dist next to gateway/ (gateway/src or gateway/dist → ../../console/dist). */
export const CONSOLE_DIST = resolve(here, '../../console/dist');

function secure(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'same-origin');
}

export function consoleRoutes(app: FastifyInstance, dist = CONSOLE_DIST): void {
  const built = existsSync(join(dist, 'index.html'));
  if (built) app.register(fastifyStatic, { root: dist, serve: false });
  const config = { public: true };

  app.get('/', { config }, async (_req, reply) => reply.redirect('/console/', 302));

  const serve = async (path: string, reply: FastifyReply) => {
    secure(reply);
    if (!built)
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send('The console is not built: run `npm run build` (builds console/dist).\n');
    const asset = path.startsWith('assets/') && existsSync(join(dist, path));
    if (asset) {
      reply.header('cache-control', 'public, max-age=31536000, immutable');
      return reply.sendFile(path, { cacheControl: false });
    }
    if (path && !path.includes('..') && existsSync(join(dist, path)) && path !== 'index.html')
      return reply.header('cache-control', 'no-cache').sendFile(path, { cacheControl: false });
    if (path.startsWith('assets/'))
      return reply.code(404).type('text/plain; charset=utf-8').send('Not found\n');
    return reply
      .header('cache-control', 'no-cache')
      .sendFile('index.html', { cacheControl: false });
  };
  // The router may treat /console/ as /console (ignoreTrailingSlash): only the bare form redirects.
  app.get('/console', { config }, async (req, reply) =>
    req.url.split('?')[0]!.endsWith('/') ? serve('', reply) : reply.redirect('/console/', 302),
  );
  app.get<{ Params: { '*': string } }>('/console/*', { config }, async (req, reply) =>
    serve(req.params['*'] ?? '', reply),
  );
}
