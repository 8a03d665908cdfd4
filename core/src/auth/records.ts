/** Tenants and API keys as stored. */

export interface TenantDoc {
  _id: string;
  name: string;
  created_at: string;
}

export interface ApiKeyDoc {
  _id: string;
  tenant_id: string;
  name: string;
  hash: string;
  prefix: string;
  environment_id: string | null;
  operator: boolean;
  created_at: string;
  revoked_at: string | null;
}
