/**
 * Shapes of the MCP OAuth refresh flow and of `mcp_oauth_validate`, as the SDK (1.12) names
 * them in resources/beta/vaults/credentials.d.ts: BetaManagedAgentsRefreshHTTPResponse,
 * BetaManagedAgentsRefreshObject, BetaManagedAgentsMCPProbe and
 * BetaManagedAgentsCredentialValidation. A captured body is always scrubbed of tokens
 * (./oauthScrub.ts) before it is put in one of these.
 */
import type { ResolvedCredential } from '../vaults/vaults.js';

/** An HTTP answer captured for a refresh or a probe (SDK BetaManagedAgentsRefreshHTTPResponse). */
export interface CapturedHttpResponse {
  body: string;
  body_truncated: boolean;
  content_type: string;
  status_code: number;
}
/** The SDK's BetaManagedAgentsRefreshObject. */
export interface RefreshRecord {
  status: 'succeeded' | 'failed' | 'connect_error' | 'no_refresh_token';
  http_response: CapturedHttpResponse | null;
}
/** The SDK's BetaManagedAgentsCredentialValidation. */
export interface CredentialValidation {
  type: 'vault_credential_validation';
  credential_id: string;
  vault_id: string;
  has_refresh_token: boolean;
  status: 'valid' | 'invalid' | 'unknown';
  mcp_probe: { method: string; http_response: CapturedHttpResponse | null } | null;
  refresh: RefreshRecord | null;
  validated_at: string;
}
export type CredentialValidator = (
  tenant: string,
  credential: ResolvedCredential,
) => Promise<CredentialValidation>;
