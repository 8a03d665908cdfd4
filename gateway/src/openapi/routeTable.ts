import type { FastifyInstance, RouteOptions } from 'fastify';

/**
 * The route table: every route the app registers (method + path + its auth/beta config), as
 * fastify reports it through `onRoute`, in registration order. The OpenAPI document is built
 * from it and the tenant-isolation test iterates it, so a new route is documented and tried
 * for cross-tenant access without anyone listing it by hand.
 *
 * Proven by: test/e2e/api/openapi.test.ts ("documents every registered route"),
 * test/e2e/auth/tenancy-routes.test.ts (iterates this table).
 */
export interface RouteEntry {
  method: string;
  /** The fastify path, e.g. `/v1/agents/:id` (a trailing `*` is a multi-segment wildcard). */
  url: string;
  /** Unauthenticated (health, readiness, the OpenAPI document). */
  public: boolean;
  /** Only the operator key. */
  operator: boolean;
  /** Requires the beta header. */
  beta: boolean;
}

const tables = new WeakMap<FastifyInstance, RouteEntry[]>();

/**
 * Starts recording the routes of `app` and every scope registered under it. Call it right
 * after creating the instance, before any route is added. HEAD routes fastify derives from GET
 * routes (exposeHeadRoutes) are not recorded: they answer like the GET without a body.
 */
export function recordRoutes(app: FastifyInstance): RouteEntry[] {
  const table: RouteEntry[] = [];
  tables.set(app, table);
  app.addHook('onRoute', (opts: RouteOptions) => {
    const cfg = (opts.config ?? {}) as { public?: boolean; operator?: boolean; beta?: boolean };
    for (const method of ([] as string[]).concat(opts.method)) {
      const url = opts.url;
      if (
        method === 'HEAD' &&
        (opts as { isHeadRoute?: boolean }).isHeadRoute !== false &&
        table.some((r) => r.method === 'GET' && r.url === url)
      )
        continue;
      if (table.some((r) => r.method === method && r.url === url)) continue;
      table.push({ method, url, public: !!cfg.public, operator: !!cfg.operator, beta: !!cfg.beta });
    }
  });
  return table;
}

/** The routes recorded for `app` (empty when `recordRoutes` was not called on it). */
export function routeTableOf(app: FastifyInstance): readonly RouteEntry[] {
  return tables.get(app) ?? [];
}

/** `/v1/agents/:id` → `/v1/agents/{id}`; a trailing `*` (nested output paths) becomes `{filename}/{nested_path}` (two or more segments; one segment is the `:filename` route). */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{filename}/{nested_path}');
}
