/** Vaults and credentials as stored (secrets sealed). */

export interface VaultDoc {
  _id: string;
  tenant_id: string;
  display_name: string;
  /** Credentials held (archived ones too); reserved with a conditional $inc, at most 20. */
  credential_count: number;
  metadata: Record<string, string>;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface VaultCredentialDoc {
  _id: string;
  tenant_id: string;
  vault_id: string;
  display_name: string | null;
  /** The public part of `auth` (no secret field); see schemas/src/vaults.ts CredentialAuth. */
  auth: Record<string, unknown> & { type: string };
  /** Lower-cased hostname the credential binds to (mcp_server_url's), or null. */
  host: string | null;
  /** JSON object of the secret fields, sealed (SecretBox, purpose `vault-credential`). */
  secrets_sealed: string;
  metadata: Record<string, string>;
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}
