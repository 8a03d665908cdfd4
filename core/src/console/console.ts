import { hkdfSync } from 'node:crypto';
import { EncryptJWT, jwtDecrypt } from 'jose';
import { randomToken } from '../crypto.js';
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { AuthService, Principal } from '../auth/auth.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import type { MemberService } from './members.js';
import type { PendingSignIn } from './identity.js';
import type { ConsoleRole, ConsoleSessionDoc, ConsoleUserDoc, MembershipDoc } from './records.js';

export const CONSOLE_COOKIE = 'af_console';
/** The pending identity-provider sign-in (encrypted; Path=/v1/; 10 minutes). */
export const SIGN_IN_COOKIE = 'af_sign_in';
export const SIGN_IN_TTL_MS = 10 * 60_000;
/** A console session lives this long idle; each use past half of it renews it. */
export const CONSOLE_IDLE_MS = 12 * 3600_000;
/** No renewal carries a console session past this age. */
export const CONSOLE_MAX_MS = 7 * 24 * 3600_000;

/** What a cookie resolves to: the API principal it acts as, and its console session. */
export interface ConsolePrincipal {
  principal: Principal;
  session: ConsoleSessionDoc;
  /** Set when the session was renewed: the new cookie value to send back. */
  renewed: boolean;
}

/**
 * Console sign-in sessions. Guarantees (test/e2e/console/console-auth.test.ts):
 * - a key sign-in accepts the operator key (operator, default tenant, admin) or a tenant API
 *   key (that tenant's admin); environment service keys and unknown keys are refused (null);
 * - the cookie value is a JWE (dir + A256GCM, key = HKDF-SHA256 of the console session secret)
 *   holding only the session id: a tampered or foreign cookie resolves to nothing;
 * - a revoked, expired or over-age session resolves to nothing; a used one slides forward
 *   by CONSOLE_IDLE_MS once past half of it, never past CONSOLE_MAX_MS from sign-in;
 * - a session acting as a revoked API key resolves to nothing (the key is checked each time);
 *   a user's session takes its role from the user's membership on every request, and resolves
 *   to nothing once the membership is gone;
 * - a pending sign-in (`sealSignIn`) is readable only by this secret for SIGN_IN_TTL_MS, and
 *   `consumeSignIn` accepts each attempt once (a replayed callback is refused).
 */
export class ConsoleService {
  private readonly key: Uint8Array;
  private readonly signInKey: Uint8Array;
  constructor(
    private readonly c: Pick<
      Collections,
      'consoleSessions' | 'apiKeys' | 'tenants' | 'usedSignIns'
    >,
    private readonly auth: Pick<AuthService, 'authenticate'>,
    private readonly members: MemberService,
    secret: string,
  ) {
    this.key = new Uint8Array(hkdfSync('sha256', secret, 'agentfleet', 'console-session-v1', 32));
    this.signInKey = new Uint8Array(
      hkdfSync('sha256', secret, 'agentfleet', 'console-sign-in-v1', 32),
    );
  }

  /** Signs a user in to one of their memberships (the first, unless `tenantId` names one). */
  async signInUser(user: ConsoleUserDoc, memberships: MembershipDoc[]): Promise<ConsoleSessionDoc> {
    const m = [...memberships].sort((a, b) => a.created_at.localeCompare(b.created_at))[0]!;
    return this.create({
      tenant_id: m.tenant_id,
      principal_kind: 'user',
      key_id: null,
      user_id: user._id,
      role: m.role,
    });
  }

  /** Moves a user's console session to another tenant they are a member of. */
  async switchTenant(s: ConsoleSessionDoc, tenantId: string): Promise<ConsoleSessionDoc> {
    const m = s.user_id ? await this.members.membership(tenantId, s.user_id) : null;
    if (!m)
      throw new ApiError('not_found', `tenant_id: you are not a member of ${tenantId}`, {
        field: 'tenant_id',
      });
    await this.c.consoleSessions.updateOne(
      { _id: s._id },
      { $set: { tenant_id: tenantId, role: m.role } },
    );
    return { ...s, tenant_id: tenantId, role: m.role };
  }

  /** The `af_sign_in` cookie value of a pending sign-in. */
  sealSignIn(p: PendingSignIn): Promise<string> {
    return new EncryptJWT({ p })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setIssuedAt()
      .setExpirationTime(new Date(Date.now() + SIGN_IN_TTL_MS))
      .encrypt(this.signInKey);
  }

  /** The pending sign-in of an `af_sign_in` cookie; null when absent, foreign or expired. */
  async unsealSignIn(cookie: string | undefined): Promise<PendingSignIn | null> {
    if (!cookie || cookie.length > 4096) return null;
    try {
      const p = (await jwtDecrypt(cookie, this.signInKey)).payload.p as PendingSignIn | undefined;
      return p && typeof p.id === 'string' && typeof p.state === 'string' ? p : null;
    } catch {
      return null;
    }
  }

  /** Marks an attempt completed; false when it already was (a replay). */
  async consumeSignIn(id: string): Promise<boolean> {
    const now = Date.now();
    await this.c.usedSignIns.deleteMany({ expires_at: { $lt: new Date(now).toISOString() } });
    try {
      await this.c.usedSignIns.insertOne({
        _id: id,
        expires_at: new Date(now + 2 * SIGN_IN_TTL_MS).toISOString(),
      });
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError) return false;
      throw err;
    }
  }

  /** Signs in with an API key; null when the key is not one that may sign in. */
  async signInWithKey(apiKey: string): Promise<ConsoleSessionDoc | null> {
    const p = await this.auth.authenticate(apiKey);
    if (!p || p.environmentId || p.claim) return null;
    return this.create({
      tenant_id: p.tenantId,
      principal_kind: p.operator ? 'operator' : 'key',
      key_id: p.keyId,
      user_id: null,
      role: 'admin',
    });
  }

  private async create(
    d: Pick<ConsoleSessionDoc, 'tenant_id' | 'principal_kind' | 'key_id' | 'user_id'> & {
      role: ConsoleRole;
    },
  ): Promise<ConsoleSessionDoc> {
    const now = Date.now();
    const doc: ConsoleSessionDoc = {
      _id: newId('csess_'),
      ...d,
      csrf_token: randomToken(32),
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + CONSOLE_IDLE_MS).toISOString(),
      max_expires_at: new Date(now + CONSOLE_MAX_MS).toISOString(),
      revoked_at: null,
    };
    await this.c.consoleSessions.insertOne(doc);
    return doc;
  }

  /** The cookie value for a session (valid until the session's max age at most). */
  async cookieValue(s: ConsoleSessionDoc): Promise<string> {
    return new EncryptJWT({ sid: s._id })
      .setProtectedHeader({ alg: 'dir', enc: 'A256GCM' })
      .setIssuedAt()
      .setExpirationTime(new Date(s.max_expires_at))
      .encrypt(this.key);
  }

  /** Resolves a cookie value; null for anything that is not a live session's cookie. */
  async resolve(cookie: string): Promise<ConsolePrincipal | null> {
    if (cookie.length > 2048) return null;
    let sid: unknown;
    try {
      sid = (await jwtDecrypt(cookie, this.key)).payload.sid;
    } catch {
      return null;
    }
    if (typeof sid !== 'string') return null;
    let s = await this.c.consoleSessions.findOne({ _id: sid });
    const now = Date.now();
    if (!s || s.revoked_at || Date.parse(s.expires_at) <= now) return null;
    if (s.key_id && s.principal_kind === 'key') {
      const k = await this.c.apiKeys.findOne({ _id: s.key_id });
      if (!k || k.revoked_at) return null;
    }
    if (s.principal_kind === 'user') {
      const m = s.user_id ? await this.members.membership(s.tenant_id, s.user_id) : null;
      if (!m) return null;
      s = { ...s, role: m.role };
    }
    let renewed = false;
    const max = Date.parse(s.max_expires_at);
    if (Date.parse(s.expires_at) - now < CONSOLE_IDLE_MS / 2 && Date.parse(s.expires_at) < max) {
      const expires_at = new Date(Math.min(now + CONSOLE_IDLE_MS, max)).toISOString();
      await this.c.consoleSessions.updateOne({ _id: s._id }, { $set: { expires_at } });
      s = { ...s, expires_at };
      renewed = true;
    }
    const principal: Principal = {
      tenantId: s.tenant_id,
      keyId: s.key_id ?? `user:${s.user_id}`,
      operator: s.principal_kind === 'operator',
      environmentId: null,
      console: { sessionId: s._id, role: s.role, csrf: s.csrf_token },
    };
    return { principal, session: s, renewed };
  }

  /** The console's view of a session (GET /v1/svc/console/me): no secret but its CSRF token. */
  async me(s: ConsoleSessionDoc) {
    const tenant = await this.c.tenants.findOne({ _id: s.tenant_id });
    const t = { id: s.tenant_id, name: tenant?.name ?? s.tenant_id };
    const user = s.user_id ? await this.members.user(s.user_id) : null;
    const role = user
      ? ((await this.members.membership(s.tenant_id, user._id))?.role ?? s.role)
      : s.role;
    return {
      user: user ? { id: user._id, email: user.email, name: user.name } : null,
      operator: s.principal_kind === 'operator',
      tenant: t,
      role,
      csrf_token: s.csrf_token,
      memberships: user
        ? await this.members.membershipsOf(user._id)
        : [{ tenant_id: t.id, tenant_name: t.name, role }],
      expires_at: s.expires_at,
    };
  }

  async session(id: string): Promise<ConsoleSessionDoc | null> {
    return this.c.consoleSessions.findOne({ _id: id, revoked_at: null });
  }

  async revoke(sessionId: string): Promise<void> {
    await this.c.consoleSessions.updateOne(
      { _id: sessionId, revoked_at: null },
      { $set: { revoked_at: new Date().toISOString() } },
    );
  }

  /** Revokes every live session of the same user, or of the same key sign-in principal. */
  async revokeAllOf(s: ConsoleSessionDoc): Promise<void> {
    const filter = s.user_id
      ? { user_id: s.user_id }
      : { principal_kind: s.principal_kind, key_id: s.key_id, tenant_id: s.tenant_id };
    const live = await this.c.consoleSessions.find({ ...filter, revoked_at: null });
    for (const d of live) await this.revoke(d._id);
  }
}
