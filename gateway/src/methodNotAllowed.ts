import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorBody } from './http.js';
import { routeTableOf } from './openapi/routeTable.js';

/**
 * The gateway's not-found handler: a path some route declares, asked with a method none of
 * them declares, is a 405 `method_not_allowed` in the API error shape with an `Allow` header
 * listing the methods declared for that path (e.g. `PUT /v1/agents` → `Allow: GET, POST`);
 * every other unmatched request is a 404 `not_found`. It reads the route table
 * (./openapi/routeTable.ts), so every route, with or without path parameters, is covered
 * without a list kept by hand. HEAD and OPTIONS keep their answers (a GET route answers HEAD;
 * anything else is a 404), and the handler runs after the request guards, as a 404 did.
 * Tested in test/e2e/api/method-not-allowed.test.ts.
 */

/** The order methods are listed in `Allow`. */
const ORDER = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** `/v1/agents/:id` → a regex of the whole path; a trailing `*` matches one or more segments. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((seg) =>
      seg === '*'
        ? '.+'
        : seg.startsWith(':')
          ? '[^/]+'
          : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'),
    )
    .join('/');
  return new RegExp(`^${source}$`);
}

export function notFoundHandler(app: FastifyInstance) {
  let compiled: Array<{ method: string; pattern: RegExp }> | null = null;
  let compiledFrom = -1;
  const allowedFor = (path: string): string[] => {
    const table = routeTableOf(app);
    if (!compiled || compiledFrom !== table.length) {
      compiled = table.map((r) => ({ method: r.method, pattern: patternOf(r.url) }));
      compiledFrom = table.length;
    }
    const methods = new Set(compiled.filter((r) => r.pattern.test(path)).map((r) => r.method));
    return [...methods].sort(
      (a, b) => (ORDER.indexOf(a) + 1 || 99) - (ORDER.indexOf(b) + 1 || 99) || a.localeCompare(b),
    );
  };
  return (req: FastifyRequest, reply: FastifyReply) => {
    const raw = req.url.split('?')[0]!;
    // The router ignores one trailing slash; so does this lookup.
    const path = raw.length > 1 && raw.endsWith('/') ? raw.slice(0, -1) : raw;
    const allowed = req.method === 'HEAD' || req.method === 'OPTIONS' ? [] : allowedFor(path);
    if (allowed.length) {
      return reply
        .code(405)
        .header('allow', allowed.join(', '))
        .send(
          errorBody(
            'method_not_allowed',
            `method: ${req.method} is not allowed on ${raw}; allowed: ${allowed.join(', ')}`,
            String(req.id),
          ),
        );
    }
    return reply
      .code(404)
      .send(errorBody('not_found', `no route ${req.method} ${raw}`, String(req.id)));
  };
}
