/**
 * The session proxy's default credential lookup (issue 10): the session's `vault_ids`, read
 * live on every request, and the first `static_bearer` or `mcp_oauth` credential whose
 * `mcp_server_url` host matches (core/src/domain/vaults.ts credentialForHost) become an
 * injected `Authorization: Bearer …`. Nothing is cached, so a rotation or an archived vault
 * takes effect on the next request. The other credential types have no egress effect yet and
 * are refused at create (core/src/domain/vaultCredentials.ts). Proved by
 * test/sandbox-ca.test.ts › "a session's vault credential is injected".
 */
import type { Platform } from '../platform.js';
import type { CredentialLookup } from './proxyHelpers.js';

export function vaultCredentialLookup(p: Platform): CredentialLookup {
  return async (host, ctx) => {
    const s = await p.collections.sessions.get(ctx.tenantId, ctx.sessionId);
    const vaultIds = s?.vault_ids ?? [];
    if (!s || s.deleted_at || !vaultIds.length) return null;
    const cred = await p.vaults.credentialForHost(ctx.tenantId, vaultIds, host);
    const token =
      cred?.type === 'static_bearer'
        ? cred.secrets.token
        : cred?.type === 'mcp_oauth'
          ? cred.secrets.access_token
          : undefined;
    return token ? { header: 'authorization', value: `Bearer ${token}` } : null;
  };
}
