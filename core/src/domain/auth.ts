import { ApiError, notFound } from '../errors.js';
import { randomToken, safeEqual, sha256 } from '../crypto.js';
import { newId, PREFIX } from '../ids.js';
import type { ApiKeyDoc, Collections } from './collections.js';
import { nowIso } from '../util.js';

export interface Principal {
  tenantId: string;
  keyId: string;
  operator: boolean;
  /** Set for environment service keys: valid only under that environment's work routes. */
  environmentId: string | null;
}

export const DEFAULT_TENANT = 'tnt_default';
const KEY_PREFIX = 'afk_';

/** API keys: only a SHA-256 hash is stored; the value is returned once, at creation. */
export class AuthService {
  private readonly cache = new Map<string, { p: Principal | null; at: number }>();
  constructor(private readonly c: Collections, private readonly operatorKeyHash: string) {}

  async bootstrap(): Promise<void> {
    await this.c.tenants.updateOne({ _id: DEFAULT_TENANT }, { $setOnInsert: { name: 'default', created_at: nowIso() } }, { upsert: true });
  }

  /** Resolves a key; the operator key (API_KEY) belongs to the default tenant. Cached 2 s so revocation bites fast. */
  async authenticate(key: string): Promise<Principal | null> {
    if (safeEqual(sha256(key), this.operatorKeyHash)) return { tenantId: DEFAULT_TENANT, keyId: 'operator', operator: true, environmentId: null };
    const hit = this.cache.get(key);
    if (hit && Date.now() - hit.at < 2_000) return hit.p;
    const doc = await this.c.apiKeys.findOne({ hash: sha256(key) });
    const p = doc && !doc.revoked_at ? { tenantId: doc.tenant_id, keyId: doc._id, operator: false, environmentId: doc.environment_id } : null;
    if (this.cache.size > 10_000) this.cache.clear();
    this.cache.set(key, { p, at: Date.now() });
    return p;
  }

  async createTenant(name: string): Promise<{ tenant_id: string; api_key: string; key_id: string }> {
    const tenantId = newId(PREFIX.tenant);
    await this.c.tenants.insertOne({ _id: tenantId, name, created_at: nowIso() });
    const k = await this.createKey(tenantId, { name: `${name} admin` });
    return { tenant_id: tenantId, api_key: k.key, key_id: k.id };
  }

  async createKey(tenant: string, body: { name: string; environment_id?: string }) {
    if (body.environment_id) {
      const env = await this.c.environments.get(tenant, body.environment_id);
      if (!env) throw new ApiError('invalid_request', `environment_id: environment ${body.environment_id} not found`);
    }
    const key = `${KEY_PREFIX}${randomToken(32)}`;
    const doc: ApiKeyDoc = {
      _id: newId(PREFIX.apiKey),
      tenant_id: tenant,
      name: body.name,
      hash: sha256(key),
      prefix: key.slice(0, 10),
      environment_id: body.environment_id ?? null,
      operator: false,
      created_at: nowIso(),
      revoked_at: null,
    };
    await this.c.apiKeys.insertOne(doc);
    return { ...renderKey(doc), key };
  }

  async listKeys(tenant: string) {
    return (await this.c.apiKeys.find({ tenant_id: tenant, revoked_at: null }, { sort: { _id: 1 } })).map(renderKey);
  }

  async revokeKey(tenant: string, id: string) {
    const n = await this.c.apiKeys.updateOne({ _id: id, tenant_id: tenant, revoked_at: null }, { $set: { revoked_at: nowIso() } });
    if (!n.matched) throw notFound('api key', id);
    this.cache.clear();
  }
}

const renderKey = (d: ApiKeyDoc) => ({
  id: d._id,
  type: 'api_key' as const,
  name: d.name,
  key_prefix: d.prefix,
  environment_id: d.environment_id,
  created_at: d.created_at,
});
