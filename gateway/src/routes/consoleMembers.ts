/**
 * A tenant's console members, invitations and sign-in policy (core/src/console/members.ts), and
 * the operator's list of tenants. Reads: any signed-in role or API key of the tenant; writes:
 * tenant admins (a console admin, a tenant API key, the operator key) — the member and viewer
 * roles are refused by ../consoleAuth.ts before these handlers run. The operator addresses
 * another tenant with `tenant_id` (query or body); anyone else naming a tenant not their own
 * is 403. Proved by test/e2e/console/console-members.test.ts and console-oidc.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError, checkRole } from '@agentfleet/core';
import type { GatewayServices } from '../services.js';
import { tenantOf } from '../http.js';

type Services = Pick<GatewayServices, 'members' | 'auth'>;
type Req = FastifyRequest<{ Querystring: { tenant_id?: string }; Body: { tenant_id?: unknown } }>;

export function consoleMemberRoutes(app: FastifyInstance, p: Services) {
  const tenant = async (req: Req): Promise<string> => {
    const named =
      (req.body as { tenant_id?: unknown } | undefined)?.tenant_id ?? req.query.tenant_id;
    const own = tenantOf(req);
    if (named === undefined || named === own) return own;
    if (typeof named !== 'string')
      throw new ApiError('invalid_request', 'tenant_id: a string', { field: 'tenant_id' });
    if (!req.principal.operator)
      throw new ApiError('forbidden', `tenant_id: this credential acts for tenant ${own} only`, {
        field: 'tenant_id',
      });
    if (!(await p.auth.tenantExists(named)))
      throw new ApiError('not_found', `tenant ${named} not found`, { field: 'tenant_id' });
    return named;
  };
  const base = '/v1/svc/console';
  app.get(`${base}/members`, async (req) => p.members.list(await tenant(req as Req)));
  app.patch<{ Params: { user_id: string } }>(`${base}/members/:user_id`, async (req) => {
    const role = checkRole((req.body as { role?: unknown } | undefined)?.role);
    return p.members.setRole(await tenant(req as unknown as Req), req.params.user_id, role);
  });
  app.delete<{ Params: { user_id: string } }>(`${base}/members/:user_id`, async (req) =>
    p.members.remove(await tenant(req as unknown as Req), req.params.user_id),
  );
  app.get(`${base}/invitations`, async (req) => p.members.invitationsOf(await tenant(req as Req)));
  app.post(`${base}/invitations`, async (req) =>
    p.members.invite(await tenant(req as Req), (req.body ?? {}) as Record<string, unknown>),
  );
  app.delete<{ Params: { id: string } }>(`${base}/invitations/:id`, async (req) =>
    p.members.revokeInvitation(await tenant(req as unknown as Req), req.params.id),
  );
  app.get(`${base}/sign_in_policy`, async (req) => p.members.policy(await tenant(req as Req)));
  app.put(`${base}/sign_in_policy`, async (req) =>
    p.members.setPolicy(await tenant(req as Req), (req.body ?? {}) as Record<string, unknown>),
  );

  // The operator's tenants page.
  app.get<{ Querystring: { limit?: string; after_id?: string } }>(
    '/v1/svc/tenants',
    { config: { beta: true, operator: true } },
    async (req) => p.auth.listTenants(req.query),
  );
}
