/**
 * `/v1/svc/mcp-proxy/:sid/:server` (GET, POST, PUT, PATCH, DELETE, OPTIONS; HEAD with GET):
 * the MCP proxy over HTTP, a thin adapter over `McpProxy.forward` (caller `http`).
 * Guarantees:
 * - only the operator key (`Authorization: Bearer <API_KEY>`, the spec's local-runtime child;
 *   compared in constant time by AuthService) is accepted: none or an unknown key → 401, a
 *   tenant key → 403 (the request guards, route config `operator`). The key is deployment-wide,
 *   so the session is found across tenants (`McpProxy.sessionTenant`); an unknown id → 404;
 * - the claimed-session bearer of a Work claim (`sessions_token`, as Bearer) reaches its own
 *   session's path only (`claimedSessionCaller`; the guard: gateway/src/claimedSession.ts);
 * - the body is raw text whatever its content-type (never JSON-parsed here), at most
 *   MCP_PROXY_MAX_BODY_BYTES (413 in the error shape, naming `body`);
 * - the upstream answer streams back (SSE included); the caller going away aborts it;
 * - HTTP+SSE servers (the SDK's SSEServerTransport): `/v1/svc/mcp-proxy/:sid/:server/*` forwards
 *   the rest of the path plus the query as the forward's `path` (same origin as the server's
 *   url only, else 400 naming `path`), and an SSE answer's `endpoint` event is rewritten by the
 *   proxy to `/v1/svc/mcp-proxy/<sid>/<server><upstream path>`, so an SDK SSEClientTransport
 *   connected to the proxy URL POSTs its messages back through this route.
 * Proved by test/e2e/mcp/mcp-proxy.test.ts and test/e2e/mcp/mcp-proxy-sse.test.ts.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from '../http.js';
import type { GatewayServices } from '../services.js';

type ProxyReq = FastifyRequest<{ Params: { sid: string; server: string } }>;

export const MCP_PROXY_PATH = '/v1/svc/mcp-proxy/:sid/:server';
/** The same, for an HTTP+SSE server's message endpoint (or any path on the server's origin). */
export const MCP_PROXY_SUBPATH = `${MCP_PROXY_PATH}/*`;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** How much of an over-limit body is read (and discarded) so the 413 can be delivered. */
const DRAIN_LIMIT = 32 * 1024 * 1024;

/**
 * The session a claimed-session bearer (Work API `sessions_token`) may reach, or null for the
 * operator key. The request guards already held the bearer to its own session's proxy path,
 * with the live claim (gateway/src/claimedSession.ts; test/e2e/work/work-bearer.test.ts).
 */
export function claimedSessionCaller(
  req: FastifyRequest,
): { tenantId: string; sessionId: string } | null {
  const claim = req.principal?.claim;
  return claim ? { tenantId: claim.tenantId, sessionId: claim.sessionId } : null;
}

/**
 * Reads the raw request body as text, at most `max` bytes; over that, the rest is discarded
 * (not kept, so the 413 reaches a client that is still sending) and 'too_large' is answered.
 */
function rawBody(req: FastifyRequest, max: number): Promise<string | null | 'too_large'> {
  const stream = req.body as Readable | undefined;
  if (!stream || typeof stream.on !== 'function') return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        chunks.length = 0;
        resolve('too_large');
        // A sender that keeps going past the gateway's own body limit is cut off.
        if (size > max + DRAIN_LIMIT) stream.destroy();
      } else chunks.push(c);
    });
    stream.on('end', () => resolve(size ? Buffer.concat(chunks).toString('utf8') : null));
    stream.on('error', reject);
  });
}

/**
 * From the raw request URL (encoding kept): the proxy base `/v1/svc/mcp-proxy/<sid>/<server>`
 * and, under the `/*` route, the rest of the path plus the query (the forward's `path`).
 */
export function splitProxyUrl(rawUrl: string, sub: boolean): { base: string; path?: string } {
  const q = rawUrl.indexOf('?');
  const pathname = q < 0 ? rawUrl : rawUrl.slice(0, q);
  const segments = pathname.split('/'); // ['', 'v1', 'svc', 'mcp-proxy', sid, server, ...]
  const base = segments.slice(0, 6).join('/');
  if (!sub) return { base };
  return { base, path: `/${segments.slice(6).join('/')}${q < 0 ? '' : rawUrl.slice(q)}` };
}

function callerHeaders(req: FastifyRequest): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers))
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}

export async function mcpProxyRoutes(
  app: FastifyInstance,
  p: Pick<GatewayServices, 'mcpProxy' | 'config'>,
): Promise<void> {
  await app.register(async (scope) => {
    // Raw text for every content-type (MCP JSON-RPC included): the handler reads the stream.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    for (const url of [MCP_PROXY_PATH, MCP_PROXY_SUBPATH])
      scope.route({
        method: METHODS,
        url,
        config: { operator: true },
        handler: async (req: ProxyReq, reply: FastifyReply) => {
          const id = String(req.id);
          const { sid, server } = req.params;
          const claimed = claimedSessionCaller(req);
          const tenantId =
            claimed?.sessionId === sid ? claimed.tenantId : await p.mcpProxy.sessionTenant(sid);
          if (!tenantId)
            return reply.code(404).send(errorBody('not_found', `session ${sid} not found`, id));
          const max = p.config.mcpProxy.maxBodyBytes;
          const body = await rawBody(req, max);
          if (body === 'too_large')
            return reply.code(413).send(
              errorBody(
                'invalid_request',
                `body: exceeds the MCP proxy's limit of ${max} bytes`,
                id,
                {
                  field: 'body',
                  limit: max,
                },
              ),
            );
          const { base, path } = splitProxyUrl(req.raw.url ?? req.url, url === MCP_PROXY_SUBPATH);
          const abort = new AbortController();
          reply.raw.on('close', () => abort.abort());
          const res = await p.mcpProxy.forward({
            tenantId,
            sessionId: sid,
            server,
            method: req.method,
            headers: callerHeaders(req),
            body,
            caller: 'http',
            signal: abort.signal,
            requestId: id,
            endpointBase: base,
            ...(path !== undefined ? { path } : {}),
          });
          reply.code(res.status);
          res.headers.forEach((value, key) => void reply.header(key, value));
          if (!res.body) return reply.send();
          return reply.send(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream));
        },
      });
  });
}
