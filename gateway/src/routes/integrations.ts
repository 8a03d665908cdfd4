/**
 * Integrations (`svc` extension, also un-prefixed `/v1/integrations`): list, install (the
 * provider's authorize URL), the OAuth callback (public: the single-use state is the
 * authentication), uninstall, publications; and the inbound provider webhooks (public: the
 * provider's signature is the authentication, core/src/integrations/ingest.ts), read as raw
 * bytes so the signature is checked over exactly what was sent.
 * Proved by test/e2e/integrations/*.test.ts and test/e2e/auth/tenancy-routes.test.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ApiError,
  IntegrationError,
  MAX_JSON_DEPTH,
  WEBHOOK_PATHS,
  type IntegrationId,
} from '@agentfleet/core';
import type { GatewayServices } from '../services.js';
import { tenantOf } from '../http.js';
import { jsonTextDepth } from '../jsonBody.js';

type Services = Pick<GatewayServices, 'integrations' | 'ingest'>;
type IdReq = { Params: { id: string } };
const beta = { config: { beta: true } };
/** Largest webhook body read (GitHub caps payloads at 25 MB; events we act on are far smaller). */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function resultPage(reply: FastifyReply, status: number, title: string, detail: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
    .type('text/html; charset=utf-8')
    .send(
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>` +
        `<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p></main></body></html>`,
    );
}

/** Who starts an install: the console user, or the API key. A console viewer may not. */
function installer(req: FastifyRequest): string {
  const c = req.principal.console;
  if (c?.role === 'viewer') throw new ApiError('forbidden', 'the viewer role makes no changes');
  return c ? `console:${c.sessionId}` : req.principal.keyId;
}

export function integrationRoutes(app: FastifyInstance, p: Services): void {
  const s = p.integrations;
  for (const base of ['/v1/svc/integrations', '/v1/integrations']) {
    app.get(base, beta, async (req) => s.list(tenantOf(req)));
    app.get<IdReq>(`${base}/:id/install`, beta, async (req) =>
      s.install(tenantOf(req), req.params.id, installer(req)),
    );
    app.get<IdReq>(`${base}/:id/callback`, { config: { public: true } }, async (req, reply) => {
      const query = new URL(req.url, 'http://callback.invalid').searchParams;
      try {
        const done = await s.callback(req.params.id, query);
        const names = done.installs.map((i) => i.account.name).join(', ');
        return resultPage(reply, 200, 'Installed', `${req.params.id} is installed for ${names}.`);
      } catch (err) {
        if (err instanceof IntegrationError)
          return resultPage(reply, 400, 'Not installed', err.message);
        throw err;
      }
    });
    app.post<IdReq & { Body: { install_id?: string } | null }>(
      `${base}/:id/uninstall`,
      beta,
      async (req) => {
        installer(req);
        const body = req.body ?? {};
        if (typeof body !== 'object' || Array.isArray(body))
          throw new ApiError('invalid_request', 'body: must be a JSON object', { field: 'body' });
        const extra = Object.keys(body).find((k) => k !== 'install_id');
        if (extra)
          throw new ApiError('invalid_request', `${extra}: is not a field of uninstall`, {
            field: extra,
          });
        return s.uninstall(tenantOf(req), req.params.id, body.install_id);
      },
    );
    app.get<IdReq>(`${base}/:id/publications`, beta, async (req) =>
      s.listPublications(tenantOf(req), req.params.id),
    );
    app.post<IdReq>(`${base}/:id/publications`, beta, async (req) =>
      s.createPublication(tenantOf(req), req.params.id, req.body ?? {}),
    );
    app.delete<{ Params: { id: string; pub_id: string } }>(
      `${base}/:id/publications/:pub_id`,
      beta,
      async (req) => s.deletePublication(tenantOf(req), req.params.id, req.params.pub_id),
    );
  }

  // Webhooks: raw bytes of any content type, in their own context (the JSON parser is not theirs).
  void app.register(async (hooks) => {
    hooks.removeAllContentTypeParsers();
    hooks.addContentTypeParser(
      '*',
      { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT },
      (_req, body, done) => done(null, body),
    );
    for (const [id, tail] of Object.entries(WEBHOOK_PATHS) as Array<[IntegrationId, string]>) {
      for (const base of ['/v1/svc/integrations', '/v1/integrations'])
        hooks.post(`${base}/${id}/${tail}`, { config: { public: true } }, async (req, reply) => {
          const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
          if (jsonTextDepth(raw.toString('utf8'), MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
            throw new ApiError(
              'invalid_request',
              `body: JSON nested deeper than ${MAX_JSON_DEPTH} levels`,
              { field: 'body' },
            );
          const answer = await p.ingest.handle(id, req.headers, raw, req.ip);
          if ('error' in answer) {
            if (answer.retryAfter) reply.header('retry-after', answer.retryAfter);
            throw answer.error;
          }
          return reply.code(answer.status).send(answer.body);
        });
    }
  });
}
