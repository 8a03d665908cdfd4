/** Environments as stored. */

export interface EnvironmentDoc {
  _id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  kind: 'cloud' | 'self_hosted';
  base_image: string | null;
  packages: Record<string, string[]>;
  network: {
    allowlist: string[];
    denylist: string[];
    unrestricted: boolean;
    allow_mcp_servers: boolean;
    allow_package_managers: boolean;
  };
  env: Record<string, string>;
  metadata: Record<string, string>;
  scope: 'organization' | 'account';
  archived_at: string | null;
  created_at: string;
  updated_at: string;
}
