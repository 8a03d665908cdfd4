/**
 * `mcp_oauth_validate`: a live probe of an `mcp_oauth` credential against its MCP server,
 * answered in the SDK's BetaManagedAgentsCredentialValidation shape. Guarantees:
 * - the probe is the MCP handshake through the official SDK client (Streamable HTTP):
 *   `initialize`, then `tools/list`, with the credential's current access token, under the
 *   egress policy (the MCP proxy's upstream fetch);
 * - a 401 or 403 runs the same refresh flow as the proxy (./oauthRefresh.ts: live token if it
 *   moved on, else the token endpoint; rotated tokens persisted; one refresh per credential at
 *   a time) and probes again with the renewed token;
 * - status: `valid` when the (last) probe succeeded; `invalid` when the server rejected the
 *   token and no refresh recovered it, or no access token is stored; `unknown` when the server
 *   could not be reached or answered something else;
 * - `refresh` is the attempt's BetaManagedAgentsRefreshObject (null when none was tried);
 *   `mcp_probe` names the failing step with its scrubbed HTTP answer (null on success).
 * Proved by test/e2e/mcp/mcp-proxy-validate.test.ts and test/e2e/sdk/sdk_suite/test_mcp_oauth.py.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { ResolvedCredential } from '../vaults/vaults.js';
import type { HttpFetch } from '../egress/dispatcher.js';
import type { OAuthRefresher } from './oauthRefresh.js';
import { captureResponse } from './oauthScrub.js';
import type { CapturedHttpResponse, CredentialValidation, RefreshRecord } from './oauthTypes.js';

type Probe =
  | { ok: true }
  | { ok: false; method: string; http: CapturedHttpResponse | null; rejected: boolean };

const PROBE_TIMEOUT_MS = 15_000;

/** The MCP handshake with `token`; on failure, the step and the server's (scrubbed) answer. */
async function probe(
  fetch: HttpFetch,
  url: string,
  token: string,
  secrets: Array<string | undefined>,
): Promise<Probe> {
  let method = 'initialize';
  let failure: Response | null = null;
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: async (u, init) => {
      const headers = new Headers(init?.headers);
      headers.set('authorization', `Bearer ${token}`);
      const res = await fetch(String(u), { ...init, headers, redirect: 'manual' });
      if (!res.ok && !(init?.method === 'GET' && res.status === 405) && !failure)
        failure = res.clone();
      return res;
    },
  });
  const client = new Client({ name: 'agentfleet-credential-probe', version: '1.0.0' });
  try {
    await client.connect(transport, { timeout: PROBE_TIMEOUT_MS });
    method = 'tools/list';
    await client.listTools(undefined, { timeout: PROBE_TIMEOUT_MS });
    return { ok: true };
  } catch {
    const res = failure as Response | null;
    if (!res) return { ok: false, method, http: null, rejected: false };
    const http = await captureResponse(res, secrets);
    return { ok: false, method, http, rejected: res.status === 401 || res.status === 403 };
  } finally {
    await client.close().catch(() => {});
  }
}

export async function validateOAuthCredential(
  deps: { fetch: () => Promise<HttpFetch>; refresher: OAuthRefresher },
  tenant: string,
  cred: ResolvedCredential,
): Promise<CredentialValidation> {
  const auth = cred.auth as unknown as { mcp_server_url: string; refresh: unknown };
  const answer = (
    status: CredentialValidation['status'],
    mcp_probe: CredentialValidation['mcp_probe'],
    refresh: RefreshRecord | null,
  ): CredentialValidation => ({
    type: 'vault_credential_validation',
    credential_id: cred.credential_id,
    vault_id: cred.vault_id,
    has_refresh_token: !!(auth.refresh && cred.secrets.refresh_token),
    status,
    mcp_probe,
    refresh,
    validated_at: new Date().toISOString(),
  });
  const token = cred.secrets.access_token;
  if (!token) return answer('invalid', null, null);
  const secrets = [token, cred.secrets.refresh_token, cred.secrets.client_secret];
  const failed = (p: Exclude<Probe, { ok: true }>) => ({ method: p.method, http_response: p.http });
  let fetch: HttpFetch;
  try {
    fetch = await deps.fetch();
  } catch {
    return answer('unknown', { method: 'initialize', http_response: null }, null);
  }
  const first = await probe(fetch, auth.mcp_server_url, token, secrets);
  if (first.ok) return answer('valid', null, null);
  if (!first.rejected) return answer('unknown', failed(first), null);
  const renewed = await deps.refresher.renew(tenant, cred.credential_id, token);
  if (!renewed.ok)
    return answer(renewed.refresh ? 'invalid' : 'unknown', failed(first), renewed.refresh);
  const again = await probe(fetch, auth.mcp_server_url, renewed.accessToken, [
    ...secrets,
    renewed.accessToken,
  ]);
  if (again.ok) return answer('valid', null, renewed.refresh);
  return answer(again.rejected ? 'invalid' : 'unknown', failed(again), renewed.refresh);
}
