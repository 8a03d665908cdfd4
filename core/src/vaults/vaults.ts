/**
 * Vaults (tenant-scoped credential bundles) and their credentials: the spec's "Vault and
 * credentials" and the SDK's `beta.vaults` / `beta.vaults.credentials`. Guarantees:
 * - tenant-scoped: another tenant's vault or credential answers 404 exactly like a missing one;
 * - a vault holds at most 20 credentials (archived ones count until deleted): the slot is
 *   reserved with a conditional increment on the vault, so concurrent creates cannot pass 20;
 * - secrets are sealed (AES-256-GCM under PLATFORM_ROOT_SECRET, ./credentials.ts) and
 *   never served: responses and lists render the public part only;
 * - `credentialForHost` reads the store on every call (no cache), so a rotation through update
 *   applies to the next upstream request; archived vaults and credentials never match;
 * - session `vault_ids` must name the tenant's live vaults (`checkVaultIds`).
 * - the MCP proxy's refresh flow re-reads (`credentialLive`), persists rotated tokens sealed
 *   (`storeRefreshedTokens`) and records each refresh outcome (`recordRefreshOutcome`; one that
 *   did not succeed emits vault_credential.refresh_failed);
 * - `mcp_oauth_validate` runs the wired MCP probe (core/src/mcp/validate.ts) on mcp_oauth
 *   credentials only (another type: 400 naming credential_id).
 * Proved by test/e2e/credentials/vaults.test.ts, test/mcp-proxy*.test.ts and test/e2e/sdk/sdk_suite/test_vaults.py,
 * test_mcp_oauth.py.
 */
import type {
  Credential,
  CredentialCreate,
  CredentialUpdate,
  Vault,
  VaultCreate,
  VaultListQuery,
  VaultUpdate,
} from '@agentfleet/schemas';
import type { SecretBox } from '../crypto.js';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { nowIso } from '../util.js';
import type { Collections } from '../store/collections.js';
import type { VaultCredentialDoc, VaultDoc } from './records.js';
import { applyMetadataPatch } from '../api/metadata.js';
import type {
  CredentialValidation,
  CredentialValidator,
  RefreshRecord,
} from '../mcp/oauthTypes.js';
import { pageById, type Page } from '../api/pagination.js';
import { notSupportedYet } from '../api/unsupported.js';
import {
  applyUpdate,
  hostOf,
  splitCreate,
  type CredentialSecrets,
  type PublicAuth,
} from './credentials.js';

export const VAULT_PREFIX = 'vlt_';
export const CREDENTIAL_PREFIX = 'vcrd_';
export const MAX_CREDENTIALS_PER_VAULT = 20;
const PURPOSE = 'vault-credential';

/** A credential as the egress/MCP proxy needs it: public auth plus opened secrets. */
export interface ResolvedCredential {
  credential_id: string;
  vault_id: string;
  type: string;
  auth: PublicAuth;
  secrets: CredentialSecrets;
}

/** Session `vault_ids`: each must be one of the tenant's vaults, not archived (400 `vault_ids[i]`). */
export async function checkVaultIds(
  c: Collections,
  tenant: string,
  ids: string[] | undefined,
): Promise<void> {
  if (!ids?.length) return;
  const found = new Map(
    (await c.vaults.find(tenant, { _id: { $in: ids } })).map((v) => [v._id, v] as const),
  );
  ids.forEach((id, i) => {
    const v = found.get(id);
    if (!v) throw invalid(`vault_ids[${i}]`, `vault ${id} not found`);
    if (v.archived_at) throw invalid(`vault_ids[${i}]`, `vault ${id} is archived`);
  });
}

/** The webhooks port as vaults need it (platform.webhooks; emit never throws). */
export interface VaultWebhooks {
  emit(tenant: string, type: string, data: { id: string; vault_id?: string }): Promise<void>;
}

export class VaultService {
  constructor(
    private readonly c: Collections,
    private readonly box: SecretBox,
  ) {}

  // ---- vaults
  /** The spec's inline `credentials` are all validated before anything is stored. */
  async create(tenant: string, b: VaultCreate): Promise<Vault> {
    const displayName = b.display_name ?? b.name;
    if (!displayName) throw invalid('display_name', "is required (or the spec's name)");
    if (b.display_name && b.name && b.display_name !== b.name)
      throw invalid('name', 'must equal display_name when both are given');
    (b.credentials ?? []).forEach((cr, i) => {
      try {
        splitCreate(cr.auth);
      } catch (err) {
        const field = err instanceof ApiError ? err.details?.field : undefined;
        if (typeof field !== 'string') throw err;
        throw invalid(
          `credentials[${i}].${field}`,
          (err as ApiError).message.slice(field.length + 2),
        );
      }
    });
    const now = nowIso();
    const doc: Omit<VaultDoc, 'tenant_id'> = {
      _id: newId(VAULT_PREFIX),
      display_name: displayName,
      credential_count: 0,
      metadata: applyMetadataPatch({}, b.metadata ?? {}),
      archived_at: null,
      created_at: now,
      updated_at: now,
    };
    await this.c.vaults.insert(tenant, doc);
    await this.webhooks?.emit(tenant, 'vault.created', { id: doc._id });
    for (const cr of b.credentials ?? []) await this.createCredential(tenant, doc._id, cr);
    return renderVault({ ...doc, tenant_id: tenant });
  }

  private async vaultDoc(tenant: string, id: string): Promise<VaultDoc> {
    const v = await this.c.vaults.get(tenant, id);
    if (!v) throw notFound('vault', id);
    return v;
  }

  async get(tenant: string, id: string): Promise<Vault> {
    return renderVault(await this.vaultDoc(tenant, id));
  }

  async list(tenant: string, q: VaultListQuery): Promise<Page<Vault>> {
    const filter: Record<string, unknown> = q.include_archived ? {} : { archived_at: null };
    const page = await pageById(this.c.vaults, tenant, filter, q);
    return { ...page, data: page.data.map(renderVault) };
  }

  async update(tenant: string, id: string, b: VaultUpdate): Promise<Vault> {
    const v = await this.vaultDoc(tenant, id);
    if (v.archived_at) throw invalid('id', `vault ${id} is archived`);
    const set: Record<string, unknown> = { updated_at: nowIso() };
    if (b.display_name != null) set.display_name = b.display_name;
    if (b.metadata !== undefined) set.metadata = applyMetadataPatch(v.metadata, b.metadata);
    const after = await this.c.vaults.findOneAndUpdate(
      tenant,
      { _id: id },
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!after) throw notFound('vault', id);
    return renderVault(after);
  }

  /** Deletes the vault and every credential in it. */
  async remove(tenant: string, id: string): Promise<{ id: string; type: 'vault_deleted' }> {
    await this.vaultDoc(tenant, id);
    await this.c.vaultCredentials.deleteMany(tenant, { vault_id: id });
    if (await this.c.vaults.deleteOne(tenant, { _id: id }))
      await this.webhooks?.emit(tenant, 'vault.deleted', { id });
    return { id, type: 'vault_deleted' };
  }

  async archive(tenant: string, id: string): Promise<Vault> {
    await this.vaultDoc(tenant, id);
    const now = nowIso();
    const r = await this.c.vaults.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified) await this.webhooks?.emit(tenant, 'vault.archived', { id });
    return this.get(tenant, id);
  }

  // ---- credentials
  async createCredential(tenant: string, vaultId: string, b: CredentialCreate) {
    const v = await this.vaultDoc(tenant, vaultId);
    if (v.archived_at) throw invalid('vault_id', `vault ${vaultId} is archived`);
    const { auth, secrets } = splitCreate(b.auth);
    const metadata = applyMetadataPatch({}, b.metadata ?? {});
    const reserved = await this.c.vaults.findOneAndUpdate(
      tenant,
      { _id: vaultId, credential_count: { $lt: MAX_CREDENTIALS_PER_VAULT } },
      { $inc: { credential_count: 1 } },
      { returnDocument: 'after' },
    );
    if (!reserved)
      throw invalid(
        'vault_id',
        `vault ${vaultId} already holds ${MAX_CREDENTIALS_PER_VAULT} credentials (the limit); delete one first`,
      );
    const now = nowIso();
    const doc: Omit<VaultCredentialDoc, 'tenant_id'> = {
      _id: newId(CREDENTIAL_PREFIX),
      vault_id: vaultId,
      display_name: b.display_name ?? null,
      auth,
      host: hostOf(auth),
      secrets_sealed: this.box.seal(JSON.stringify(secrets), PURPOSE),
      metadata,
      archived_at: null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.c.vaultCredentials.insert(tenant, doc);
    } catch (err) {
      await this.release(tenant, vaultId);
      throw err;
    }
    await this.webhooks?.emit(tenant, 'vault_credential.created', {
      id: doc._id,
      vault_id: vaultId,
    });
    return renderCredential({ ...doc, tenant_id: tenant });
  }

  private release(tenant: string, vaultId: string) {
    return this.c.vaults.updateOne(
      tenant,
      { _id: vaultId, credential_count: { $gt: 0 } },
      { $inc: { credential_count: -1 } },
    );
  }

  private async credDoc(tenant: string, vaultId: string, id: string) {
    const d = await this.c.vaultCredentials.findOne(tenant, { _id: id, vault_id: vaultId });
    if (!d) throw notFound('credential', id);
    return d;
  }

  async getCredential(tenant: string, vaultId: string, id: string): Promise<Credential> {
    return renderCredential(await this.credDoc(tenant, vaultId, id));
  }

  async listCredentials(
    tenant: string,
    vaultId: string,
    q: VaultListQuery,
  ): Promise<Page<Credential>> {
    await this.vaultDoc(tenant, vaultId);
    const filter: Record<string, unknown> = { vault_id: vaultId };
    if (!q.include_archived) filter.archived_at = null;
    const page = await pageById(this.c.vaultCredentials, tenant, filter, q);
    return { ...page, data: page.data.map(renderCredential) };
  }

  /** Rotation and renames; the sealed secrets are re-sealed when a secret changes. */
  async updateCredential(
    tenant: string,
    vaultId: string,
    id: string,
    b: CredentialUpdate,
  ): Promise<Credential> {
    const d = await this.credDoc(tenant, vaultId, id);
    if (d.archived_at) throw invalid('credential_id', `credential ${id} is archived`);
    const set: Record<string, unknown> = { updated_at: nowIso() };
    if (b.auth) {
      const auth = structuredClone(d.auth);
      const secrets = this.open(d);
      applyUpdate(auth, secrets, b.auth);
      set.auth = auth;
      set.secrets_sealed = this.box.seal(JSON.stringify(secrets), PURPOSE);
    }
    if (b.display_name !== undefined) set.display_name = b.display_name;
    if (b.metadata !== undefined) set.metadata = applyMetadataPatch(d.metadata, b.metadata);
    const after = await this.c.vaultCredentials.findOneAndUpdate(
      tenant,
      { _id: id, vault_id: vaultId },
      { $set: set },
      { returnDocument: 'after' },
    );
    if (!after) throw notFound('credential', id);
    return renderCredential(after);
  }

  async removeCredential(tenant: string, vaultId: string, id: string) {
    await this.credDoc(tenant, vaultId, id);
    const r = await this.c.vaultCredentials.deleteOne(tenant, { _id: id, vault_id: vaultId });
    if (r > 0) await this.release(tenant, vaultId);
    if (r > 0)
      await this.webhooks?.emit(tenant, 'vault_credential.deleted', { id, vault_id: vaultId });
    return { id, type: 'vault_credential_deleted' as const };
  }

  async archiveCredential(tenant: string, vaultId: string, id: string): Promise<Credential> {
    await this.credDoc(tenant, vaultId, id);
    const now = nowIso();
    const r = await this.c.vaultCredentials.updateOne(
      tenant,
      { _id: id, vault_id: vaultId, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    if (r.modified)
      await this.webhooks?.emit(tenant, 'vault_credential.archived', { id, vault_id: vaultId });
    return this.getCredential(tenant, vaultId, id);
  }

  /**
   * `mcp_oauth_validate`: probes the credential's MCP server (the validator the platform wires,
   * core/src/mcp/validate.ts). 404 first; a credential of another type is a 400 naming it.
   */
  async validateCredential(
    tenant: string,
    vaultId: string,
    id: string,
  ): Promise<CredentialValidation> {
    const d = await this.credDoc(tenant, vaultId, id);
    if (d.auth.type !== 'mcp_oauth')
      throw invalid(
        'credential_id',
        `credential ${id} is of type ${d.auth.type}; mcp_oauth_validate validates mcp_oauth credentials only`,
      );
    if (d.archived_at) throw invalid('credential_id', `credential ${id} is archived`);
    if (!this.validator)
      throw notSupportedYet('credential_id', 'validating MCP OAuth credentials (no MCP client)');
    return this.validator(tenant, this.resolved(d));
  }

  private validator: CredentialValidator | null = null;
  /** Wired by the platform (server/src/platform.ts): the MCP probe behind validateCredential. */
  useValidator(v: CredentialValidator): void {
    this.validator = v;
  }

  private webhooks: VaultWebhooks | null = null;
  /** Wired by the platform: vault and credential lifecycle webhooks (core/src/webhooks). */
  useWebhooks(w: VaultWebhooks): void {
    this.webhooks = w;
  }

  // ---- the MCP proxy's OAuth refresh flow (core/src/mcp/oauthRefresh.ts)
  /** The credential `id` as stored now (no cache), or null when it is gone or archived. */
  async credentialLive(tenant: string, id: string): Promise<ResolvedCredential | null> {
    const d = await this.c.vaultCredentials.findOne(tenant, { _id: id, archived_at: null });
    return d ? this.resolved(d) : null;
  }

  /**
   * Persists a refresh's rotated tokens, sealed: the new access_token, the new refresh_token
   * when the token endpoint returned one (else the stored one stays), and expires_at.
   */
  async storeRefreshedTokens(
    tenant: string,
    id: string,
    t: { access_token: string; refresh_token?: string; expires_at: string | null },
  ): Promise<void> {
    const d = await this.c.vaultCredentials.findOne(tenant, { _id: id });
    if (!d) throw notFound('credential', id);
    const secrets = this.open(d);
    secrets.access_token = t.access_token;
    if (t.refresh_token) secrets.refresh_token = t.refresh_token;
    const now = nowIso();
    await this.c.vaultCredentials.updateOne(
      tenant,
      { _id: id },
      {
        $set: {
          secrets_sealed: this.box.seal(JSON.stringify(secrets), PURPOSE),
          auth: { ...d.auth, expires_at: t.expires_at },
          updated_at: now,
        },
      },
    );
  }

  /**
   * Records the outcome of the newest refresh attempt on the credential document (never
   * served; the SDK's BetaManagedAgentsRefreshObject shape, the excerpt already scrubbed).
   */
  async recordRefreshOutcome(tenant: string, id: string, outcome: RefreshRecord): Promise<void> {
    const d = await this.c.vaultCredentials.findOneAndUpdate(
      tenant,
      { _id: id },
      { $set: { last_refresh: { ...outcome, at: nowIso() } } },
    );
    // Any outcome but succeeded: the credential holds no usable token (test/e2e/webhooks/webhooks-types.test.ts).
    if (d && outcome.status !== 'succeeded')
      await this.webhooks?.emit(tenant, 'vault_credential.refresh_failed', {
        id,
        vault_id: d.vault_id,
      });
  }

  /** The newest recorded refresh outcome of credential `id` (tests, operators), or null. */
  async lastRefreshOutcome(
    tenant: string,
    id: string,
  ): Promise<(RefreshRecord & { at: string }) | null> {
    const d = (await this.c.vaultCredentials.findOne(tenant, { _id: id })) as
      (VaultCredentialDoc & { last_refresh?: RefreshRecord & { at: string } }) | null;
    return d?.last_refresh ?? null;
  }

  // ---- live lookups for the egress and MCP proxies
  private open(d: VaultCredentialDoc): CredentialSecrets {
    return JSON.parse(this.box.open(d.secrets_sealed, PURPOSE)) as CredentialSecrets;
  }

  private resolved(d: VaultCredentialDoc): ResolvedCredential {
    return {
      credential_id: d._id,
      vault_id: d.vault_id,
      type: d.auth.type,
      auth: d.auth,
      secrets: this.open(d),
    };
  }

  /** The session's live vaults, in `vaultIds` order (missing and archived ones skipped). */
  private async liveVaults(tenant: string, vaultIds: string[]): Promise<string[]> {
    if (!vaultIds.length) return [];
    const live = new Set(
      (await this.c.vaults.find(tenant, { _id: { $in: vaultIds }, archived_at: null })).map(
        (v) => v._id,
      ),
    );
    return vaultIds.filter((id) => live.has(id));
  }

  /**
   * The `static_bearer` or `mcp_oauth` credential bound to `host` (the hostname of its
   * mcp_server_url, case-insensitive) in the first of `vaultIds` that has one (oldest
   * credential first), read from the store on every call; null when none matches.
   */
  async credentialForHost(
    tenant: string,
    vaultIds: string[],
    host: string,
  ): Promise<ResolvedCredential | null> {
    const h = host.toLowerCase().replace(/\.$/, '');
    for (const vaultId of await this.liveVaults(tenant, vaultIds)) {
      const [d] = await this.c.vaultCredentials.find(
        tenant,
        { vault_id: vaultId, host: h, archived_at: null },
        { sort: { _id: 1 }, limit: 1 },
      );
      if (d) return this.resolved(d);
    }
    return null;
  }

  /**
   * Every active credential of the session's live vaults (environment_variable, cap_cli and
   * command_secret included), opened, read on every call. For the egress proxy's placeholder
   * substitution and the capability registry, which match them by their own rules.
   */
  async credentialsOf(tenant: string, vaultIds: string[]): Promise<ResolvedCredential[]> {
    const out: ResolvedCredential[] = [];
    for (const vaultId of await this.liveVaults(tenant, vaultIds))
      for (const d of await this.c.vaultCredentials.find(
        tenant,
        { vault_id: vaultId, archived_at: null },
        { sort: { _id: 1 } },
      ))
        out.push(this.resolved(d));
    return out;
  }
}

export function renderVault(v: VaultDoc): Vault {
  return {
    id: v._id,
    type: 'vault',
    display_name: v.display_name,
    name: v.display_name,
    metadata: v.metadata,
    archived_at: v.archived_at,
    created_at: v.created_at,
    updated_at: v.updated_at,
  };
}

export function renderCredential(d: VaultCredentialDoc): Credential {
  return {
    id: d._id,
    type: 'vault_credential',
    vault_id: d.vault_id,
    display_name: d.display_name,
    auth: d.auth as unknown as Credential['auth'],
    metadata: d.metadata,
    archived_at: d.archived_at,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}
