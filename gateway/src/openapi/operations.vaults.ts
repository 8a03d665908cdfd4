/**
 * OpenAPI entries of the vault and credential routes (gateway/src/routes/vaults.ts).
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import {
  Credential,
  CredentialCreate,
  CredentialListQuery,
  CredentialUpdate,
  CredentialValidation,
  Deleted,
  Id,
  ListPage,
  Vault,
  VaultCreate,
  VaultListQuery,
  VaultUpdate,
} from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const VaultId = Id('vlt_');
const CredId = Id('vcrd_');
const tag = 'vaults';
const vaultParams = { id: VaultId };
const credParams = { id: VaultId, credential_id: CredId };
const vaultUpdate = { schema: VaultUpdate, required: true, example: { display_name: 'renamed' } };
const oneVault = { description: 'The vault.', content: json(Vault) };
const oneCred = { description: 'The credential (no secret field).', content: json(Credential) };

export const VAULT_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/vaults': {
    operationId: 'createVault',
    summary: 'Create a vault',
    tag,
    body: { schema: VaultCreate, required: true, example: { display_name: 'team' } },
    ok: oneVault,
  },
  'GET /v1/vaults': {
    operationId: 'listVaults',
    summary: 'List vaults',
    tag,
    query: VaultListQuery,
    ok: { description: 'A page of vaults.', content: json(ListPage(Vault)) },
  },
  'GET /v1/vaults/:id': {
    operationId: 'getVault',
    summary: 'Retrieve a vault',
    tag,
    params: vaultParams,
    ok: oneVault,
  },
  'POST /v1/vaults/:id': {
    operationId: 'updateVault',
    summary: 'Update a vault (the SDK sends POST)',
    tag,
    params: vaultParams,
    body: vaultUpdate,
    ok: oneVault,
  },
  'PATCH /v1/vaults/:id': {
    operationId: 'updateVaultPatch',
    summary: 'Update a vault',
    tag,
    params: vaultParams,
    body: vaultUpdate,
    ok: oneVault,
  },
  'DELETE /v1/vaults/:id': {
    operationId: 'deleteVault',
    summary: 'Delete a vault and its credentials',
    tag,
    params: vaultParams,
    ok: { description: 'Deleted.', content: json(Deleted('vault_deleted')) },
  },
  'POST /v1/vaults/:id/archive': {
    operationId: 'archiveVault',
    summary: 'Archive a vault',
    tag,
    params: vaultParams,
    ok: oneVault,
  },
  'POST /v1/vaults/:id/credentials': {
    operationId: 'createCredential',
    summary: 'Create a credential (at most 20 per vault; secrets are write-only)',
    tag,
    params: vaultParams,
    body: {
      schema: CredentialCreate,
      required: true,
      example: {
        auth: {
          type: 'static_bearer',
          token: 'example-token',
          mcp_server_url: 'https://mcp.example.com/mcp',
        },
      },
    },
    ok: oneCred,
  },
  'GET /v1/vaults/:id/credentials': {
    operationId: 'listCredentials',
    summary: 'List credentials (no secret material)',
    tag,
    params: vaultParams,
    query: CredentialListQuery,
    ok: { description: 'A page of credentials.', content: json(ListPage(Credential)) },
  },
  'GET /v1/vaults/:id/credentials/:credential_id': {
    operationId: 'getCredential',
    summary: 'Retrieve a credential',
    tag,
    params: credParams,
    ok: oneCred,
  },
  'POST /v1/vaults/:id/credentials/:credential_id': {
    operationId: 'updateCredential',
    summary: 'Update a credential (rotation: applies to the next upstream request)',
    tag,
    params: credParams,
    body: { schema: CredentialUpdate, required: true, example: { display_name: 'renamed' } },
    ok: oneCred,
  },
  'DELETE /v1/vaults/:id/credentials/:credential_id': {
    operationId: 'deleteCredential',
    summary: 'Delete a credential',
    tag,
    params: credParams,
    ok: { description: 'Deleted.', content: json(Deleted('vault_credential_deleted')) },
  },
  'POST /v1/vaults/:id/credentials/:credential_id/archive': {
    operationId: 'archiveCredential',
    summary: 'Archive a credential',
    tag,
    params: credParams,
    ok: oneCred,
  },
  'POST /v1/vaults/:id/credentials/:credential_id/mcp_oauth_validate': {
    operationId: 'validateCredential',
    summary: 'Validate an mcp_oauth credential against its MCP server (refreshing on 401/403)',
    tag,
    params: credParams,
    ok: {
      description:
        'The verdict (valid, invalid, unknown), the failing probe step and the refresh outcome; no token.',
      content: json(CredentialValidation),
    },
  },
};
