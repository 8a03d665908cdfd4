/**
 * Vault and credential routes: the SDK's paths (update is POST, archive, credentials under
 * their vault, mcp_oauth_validate) and the spec's (PATCH /v1/vaults/:id). Every handler is
 * tenant-scoped through core/src/domain/vaults.ts. Proved by test/e2e/credentials/vaults.test.ts,
 * test/e2e/auth/tenancy-routes.test.ts and (mcp_oauth_validate) test/e2e/mcp/mcp-proxy-validate.test.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  CredentialCreate,
  CredentialListQuery,
  CredentialUpdate,
  VaultCreate,
  VaultListQuery,
  VaultUpdate,
} from '@agentfleet/schemas';
import type { GatewayServices } from '../services.js';
import { bodyOf, queryOf, tenantOf } from '../http.js';

const createBody = bodyOf(VaultCreate);
const updateBody = bodyOf(VaultUpdate);
const listQuery = queryOf(VaultListQuery);
const credCreateBody = bodyOf(CredentialCreate);
const credUpdateBody = bodyOf(CredentialUpdate);
const credListQuery = queryOf(CredentialListQuery);

type VaultReq = { Params: { id: string } };
type CredReq = { Params: { id: string; credential_id: string } };

export function vaultRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'vaults'>) {
  const v = p.vaults;
  app.post('/v1/vaults', async (req) => v.create(tenantOf(req), createBody(req)));
  app.get('/v1/vaults', async (req) => v.list(tenantOf(req), listQuery(req)));
  app.get<VaultReq>('/v1/vaults/:id', async (req) => v.get(tenantOf(req), req.params.id));
  const update = async (req: FastifyRequest<VaultReq>) =>
    v.update(tenantOf(req), req.params.id, updateBody(req));
  app.post<VaultReq>('/v1/vaults/:id', update);
  app.patch<VaultReq>('/v1/vaults/:id', update);
  app.delete<VaultReq>('/v1/vaults/:id', async (req) => v.remove(tenantOf(req), req.params.id));
  app.post<VaultReq>('/v1/vaults/:id/archive', async (req) =>
    v.archive(tenantOf(req), req.params.id),
  );

  app.post<CredReq>('/v1/vaults/:id/credentials', async (req) =>
    v.createCredential(tenantOf(req), req.params.id, credCreateBody(req)),
  );
  app.get<CredReq>('/v1/vaults/:id/credentials', async (req) =>
    v.listCredentials(tenantOf(req), req.params.id, credListQuery(req)),
  );
  const c = '/v1/vaults/:id/credentials/:credential_id';
  app.get<CredReq>(c, async (req) =>
    v.getCredential(tenantOf(req), req.params.id, req.params.credential_id),
  );
  app.post<CredReq>(c, async (req) =>
    v.updateCredential(tenantOf(req), req.params.id, req.params.credential_id, credUpdateBody(req)),
  );
  app.delete<CredReq>(c, async (req) =>
    v.removeCredential(tenantOf(req), req.params.id, req.params.credential_id),
  );
  app.post<CredReq>(`${c}/archive`, async (req) =>
    v.archiveCredential(tenantOf(req), req.params.id, req.params.credential_id),
  );
  app.post<CredReq>(`${c}/mcp_oauth_validate`, async (req) =>
    v.validateCredential(tenantOf(req), req.params.id, req.params.credential_id),
  );
}
