import { LRUCache } from 'lru-cache';
import { ApiError, notFound } from '../errors.js';
import { randomToken, safeEqual, sha256 } from '../crypto.js';
import { newId, PREFIX } from '../ids.js';
import type { Collections } from '../store/collections.js';
import type { ApiKeyDoc } from './records.js';
import { nowIso } from '../util.js';
import type { RateLimiter } from '../coordination/port.js';
import type { SessionClaim } from '../work/work.js';

export interface Principal {
  tenantId: string;
  keyId: string;
  operator: boolean;
  /** Set for environment service keys: valid only under that environment's work routes. */
  environmentId: string | null;
  /**
   * Set for a claimed-session bearer (a Work claim's `sessions_token`, core/src/work): the live
   * claim it resolved to on this request. Its capabilities: gateway/src/claimedSession.ts.
   */
  claim?: SessionClaim;
  /** Set for a console cookie (core/src/console): its session, role and CSRF token. */
  console?: { sessionId: string; role: 'admin' | 'member' | 'viewer'; csrf: string };
}

export const DEFAULT_TENANT = 'tnt_default';
const KEY_PREFIX = 'afk_';
/** Longer presented keys are refused without a lookup (ours are 47 characters). */
export const MAX_API_KEY_LENGTH = 256;
/** Resolved keys kept in memory, at most, and for how long (revocation bites within this). */
export const KEY_CACHE_MAX = 10_000;
export const KEY_CACHE_TTL_MS = 2_000;

/**
 * API keys: only a SHA-256 hash is stored; the value is returned once, at creation.
 *
 * The key cache is an LRU bounded at KEY_CACHE_MAX entries, keyed by the key's hash, holding
 * only keys that resolved to a principal: invalid keys never enter it, so no stream of distinct
 * invalid keys can grow it (test/e2e/api/api-hardening.test.ts, "failed authentications"). A revoked
 * key is refused at once by the process that revoked it and within KEY_CACHE_TTL_MS elsewhere.
 * Environment service keys never enter the cache: their revocation bites everywhere at once.
 */
export class AuthService {
  private readonly cache = new LRUCache<string, Principal>({
    max: KEY_CACHE_MAX,
    ttl: KEY_CACHE_TTL_MS,
  });
  constructor(
    private readonly c: Collections,
    private operatorKeyHash: string,
  ) {}

  /** A rotated operator key (agentfleet rotate-operator-key on a running server): the old key is refused from now on. */
  replaceOperatorKeyHash(hash: string): void {
    this.operatorKeyHash = hash;
  }

  /** Entries in the key cache (the agentfleet_auth_key_cache_entries gauge). */
  get cacheSize(): number {
    return this.cache.size;
  }

  async bootstrap(): Promise<void> {
    await this.c.tenants.updateOne(
      { _id: DEFAULT_TENANT },
      { $setOnInsert: { name: 'default', created_at: nowIso() } },
      { upsert: true },
    );
  }

  /** Resolves a key; the operator key (API_KEY) belongs to the default tenant. */
  async authenticate(key: string): Promise<Principal | null> {
    if (key.length > MAX_API_KEY_LENGTH) return null;
    const hash = sha256(key);
    if (safeEqual(hash, this.operatorKeyHash))
      return { tenantId: DEFAULT_TENANT, keyId: 'operator', operator: true, environmentId: null };
    const hit = this.cache.get(hash);
    if (hit) return hit;
    const doc = await this.c.apiKeys.findOne({ hash });
    if (!doc || doc.revoked_at) return null;
    const p: Principal = {
      tenantId: doc.tenant_id,
      keyId: doc._id,
      operator: false,
      environmentId: doc.environment_id,
    };
    // Environment service keys are looked up on every request: revoking one blocks its next
    // poll on every gateway at once (test/e2e/work/work-keys.test.ts, "revoking the key blocks poll").
    if (!doc.environment_id) this.cache.set(hash, p);
    return p;
  }

  async createTenant(
    name: string,
  ): Promise<{ tenant_id: string; api_key: string; key_id: string }> {
    const tenantId = newId(PREFIX.tenant);
    await this.c.tenants.insertOne({ _id: tenantId, name, created_at: nowIso() });
    const k = await this.createKey(tenantId, { name: `${name} admin` });
    return { tenant_id: tenantId, api_key: k.key, key_id: k.id };
  }

  async createKey(tenant: string, body: { name: string; environment_id?: string }) {
    if (body.environment_id) {
      const env = await this.c.environments.get(tenant, body.environment_id);
      if (!env)
        throw new ApiError(
          'invalid_request',
          `environment_id: environment ${body.environment_id} not found`,
        );
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

  async tenantExists(id: string): Promise<boolean> {
    return !!(await this.c.tenants.findOne({ _id: id }));
  }

  /** Tenants by id, `limit` (1–100, default 20) after `after_id`: the operator's tenants page. */
  async listTenants(q: { limit?: string; after_id?: string }) {
    const limit = q.limit === undefined ? 20 : Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100)
      throw new ApiError('invalid_request', 'limit: an integer from 1 to 100', { field: 'limit' });
    const filter = q.after_id ? { _id: { $gt: q.after_id } } : {};
    const rows = await this.c.tenants.find(filter, { sort: { _id: 1 }, limit: limit + 1 });
    const data = rows
      .slice(0, limit)
      .map((t) => ({ id: t._id, name: t.name, created_at: t.created_at }));
    return {
      data,
      has_more: rows.length > limit,
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
    };
  }

  async listKeys(tenant: string) {
    return (
      await this.c.apiKeys.find({ tenant_id: tenant, revoked_at: null }, { sort: { _id: 1 } })
    ).map(renderKey);
  }

  async revokeKey(tenant: string, id: string) {
    const n = await this.c.apiKeys.updateOne(
      { _id: id, tenant_id: tenant, revoked_at: null },
      { $set: { revoked_at: nowIso() } },
    );
    if (!n.matched) throw notFound('api key', id);
    this.cache.clear();
  }
}

/** Why unknown keys are being refused for now, and for how many more seconds. */
export interface AuthRefusal {
  scope: 'address' | 'global';
  seconds: number;
  limit: number;
}

/**
 * Failed authentications: at most `perMinute` per client address and `globalPerMinute` of all
 * addresses together per fixed minute window, counted in the coordination rate limiter (shared
 * by every gateway in fleet mode). It is consulted only for keys that did not resolve: a valid
 * key never meets it (gateway/src/requestGuards.ts looks the key up first). Once an address,
 * or everyone, is over, this process answers that address's (or every address's) unknown keys
 * with 429 until the window ends, from a local, bounded record (no round trip per request).
 * Tested in test/e2e/auth/auth-limiter.test.ts and test/e2e/api/api-hardening.test.ts ("failed authentications").
 */
export class AuthFailureLimiter {
  /** address → epoch ms until which its unknown keys are refused. */
  private readonly blocked = new LRUCache<string, number>({ max: 10_000 });
  /** Epoch ms until which every address's unknown keys are refused (the global budget is spent). */
  private globalUntil = 0;
  constructor(
    private readonly limiter: RateLimiter,
    readonly perMinute: number,
    readonly globalPerMinute: number,
  ) {}

  /** The refusal in force for unknown keys from `address`, or null when they are looked at now. */
  refusal(address: string): AuthRefusal | null {
    const now = Date.now();
    const until = this.blocked.get(address);
    if (until !== undefined && until <= now) this.blocked.delete(address);
    else if (until !== undefined)
      return { scope: 'address', seconds: secondsLeft(until, now), limit: this.perMinute };
    if (this.globalUntil > now)
      return {
        scope: 'global',
        seconds: secondsLeft(this.globalUntil, now),
        limit: this.globalPerMinute,
      };
    return null;
  }

  /** Counts one failed authentication of `address`; the refusal it brings on, or null while under both budgets. */
  async fail(address: string): Promise<AuthRefusal | null> {
    const already = this.refusal(address);
    if (already) return already;
    const own = await this.limiter.consume(`authfail:${address}`, this.perMinute, 60_000);
    if (!own.allowed) this.blocked.set(address, own.resetAt * 1000);
    else {
      const all = await this.limiter.consume('authfail-all', this.globalPerMinute, 60_000);
      if (!all.allowed) this.globalUntil = all.resetAt * 1000;
    }
    return this.refusal(address);
  }
}

const secondsLeft = (until: number, now: number) => Math.max(1, Math.ceil((until - now) / 1000));

const renderKey = (d: ApiKeyDoc) => ({
  id: d._id,
  type: 'api_key' as const,
  name: d.name,
  key_prefix: d.prefix,
  environment_id: d.environment_id,
  created_at: d.created_at,
});
