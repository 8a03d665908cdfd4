/**
 * Who may sign in to which tenant: users (one per identity), memberships with a role,
 * invitations by email and allowed email domains per tenant. Guarantees
 * (test/e2e/console/console-oidc.test.ts, console-members.test.ts):
 * - `admit` creates nothing for an identity that no membership, invitation or allowed domain
 *   names (a stranger); an unverified email is never matched against invitations or domains;
 * - an invitation is accepted once, by the first verified sign-in with its email, before it
 *   expires; an allowed domain admits a verified email of exactly that domain with its role;
 * - a tenant keeps at least one admin: the last admin can be neither demoted nor removed.
 */
import { ApiError } from '../errors.js';
import { newId } from '../ids.js';
import type { Collections } from '../store/collections.js';
import type { Identity } from './identity.js';
import type { ConsoleRole, ConsoleUserDoc, InvitationDoc, MembershipDoc } from './records.js';

export const ROLES: readonly ConsoleRole[] = ['admin', 'member', 'viewer'];
/** An invitation not accepted within this long lapses. */
export const INVITATION_TTL_MS = 14 * 24 * 3600_000;
const MAX_DOMAINS = 20;
const EMAIL =
  /^[^\s@]{1,64}@([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+)$/;
const DOMAIN = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

type C = Pick<
  Collections,
  'consoleUsers' | 'memberships' | 'invitations' | 'allowedDomains' | 'tenants'
>;

export interface Admission {
  user: ConsoleUserDoc;
  memberships: MembershipDoc[];
}

export function checkRole(v: unknown, field = 'role'): ConsoleRole {
  if (typeof v !== 'string' || !(ROLES as string[]).includes(v))
    throw new ApiError('invalid_request', `${field}: one of ${ROLES.join(', ')}`, { field });
  return v as ConsoleRole;
}

export function checkEmail(v: unknown, field = 'email'): string {
  const email = typeof v === 'string' ? v.trim().toLowerCase() : '';
  if (email.length > 254 || !EMAIL.test(email))
    throw new ApiError('invalid_request', `${field}: an email address is required`, { field });
  return email;
}

export class MemberService {
  constructor(private readonly c: C) {}

  /** The user and memberships an identity signs in with; null: not a member (nothing written). */
  async admit(id: Identity): Promise<Admission | null> {
    const identityKey = `${id.issuer} ${id.subject}`;
    const now = new Date().toISOString();
    const existing = await this.c.consoleUsers.findOne({ identity_key: identityKey });
    const memberships = existing ? await this.c.memberships.find({ user_id: existing._id }) : [];
    const joins: Array<{ tenant_id: string; role: ConsoleRole; invitation?: InvitationDoc }> = [];
    if (id.email && id.emailVerified) {
      const have = new Set(memberships.map((m) => m.tenant_id));
      const invites = await this.c.invitations.find({ email: id.email, accepted_at: null });
      for (const inv of invites) {
        if (Date.parse(inv.expires_at) <= Date.now() || have.has(inv.tenant_id)) continue;
        have.add(inv.tenant_id);
        joins.push({ tenant_id: inv.tenant_id, role: inv.role, invitation: inv });
      }
      const domain = id.email.split('@')[1]!;
      for (const d of await this.c.allowedDomains.find({ domain })) {
        if (have.has(d.tenant_id)) continue;
        have.add(d.tenant_id);
        joins.push({ tenant_id: d.tenant_id, role: d.role });
      }
    }
    if (!existing && joins.length === 0) return null;
    let user: ConsoleUserDoc;
    if (existing) {
      user = {
        ...existing,
        last_sign_in_at: now,
        name: id.name,
        email: id.email ?? existing.email,
      };
      await this.c.consoleUsers.updateOne(
        { _id: existing._id },
        { $set: { last_sign_in_at: now, name: user.name, email: user.email } },
      );
    } else {
      user = {
        _id: newId('usr_'),
        identity_key: identityKey,
        issuer: id.issuer,
        subject: id.subject,
        email: id.email!,
        name: id.name,
        created_at: now,
        last_sign_in_at: now,
      };
      await this.c.consoleUsers.insertOne(user);
    }
    for (const j of joins) {
      if (j.invitation) {
        // Accepted once: a concurrent sign-in that lost the race does not join through it.
        const taken = await this.c.invitations.updateOne(
          { _id: j.invitation._id, accepted_at: null },
          { $set: { accepted_at: now, accepted_by: user._id } },
        );
        if (!taken.matched) continue;
      }
      const m: MembershipDoc = {
        _id: `${j.tenant_id}/${user._id}`,
        tenant_id: j.tenant_id,
        user_id: user._id,
        role: j.role,
        created_at: now,
      };
      await this.c.memberships.updateOne({ _id: m._id }, { $setOnInsert: m } as never, {
        upsert: true,
      });
      memberships.push(m);
    }
    if (memberships.length === 0) return null;
    return { user, memberships };
  }

  membership(tenantId: string, userId: string): Promise<MembershipDoc | null> {
    return this.c.memberships.findOne({ _id: `${tenantId}/${userId}` });
  }

  async membershipsOf(userId: string) {
    const ms = await this.c.memberships.find({ user_id: userId });
    const out = [];
    for (const m of ms) {
      const t = await this.c.tenants.findOne({ _id: m.tenant_id });
      out.push({ tenant_id: m.tenant_id, tenant_name: t?.name ?? m.tenant_id, role: m.role });
    }
    return out;
  }

  user(id: string): Promise<ConsoleUserDoc | null> {
    return this.c.consoleUsers.findOne({ _id: id });
  }

  async list(tenantId: string) {
    const ms = await this.c.memberships.find({ tenant_id: tenantId }, { sort: { _id: 1 } });
    const out = [];
    for (const m of ms) {
      const u = await this.c.consoleUsers.findOne({ _id: m.user_id });
      out.push(memberView(m, u));
    }
    return { data: out };
  }

  async setRole(tenantId: string, userId: string, role: ConsoleRole) {
    const m = await this.mustFind(tenantId, userId);
    if (m.role === 'admin' && role !== 'admin') await this.keepAnAdmin(tenantId);
    await this.c.memberships.updateOne({ _id: m._id }, { $set: { role } });
    return memberView({ ...m, role }, await this.c.consoleUsers.findOne({ _id: userId }));
  }

  async remove(tenantId: string, userId: string) {
    const m = await this.mustFind(tenantId, userId);
    if (m.role === 'admin') await this.keepAnAdmin(tenantId);
    await this.c.memberships.deleteOne({ _id: m._id });
    return { user_id: userId, deleted: true };
  }

  async invitationsOf(tenantId: string) {
    const list = await this.c.invitations.find({ tenant_id: tenantId }, { sort: { _id: 1 } });
    return { data: list.map(invitationView) };
  }

  async invite(tenantId: string, body: { email?: unknown; role?: unknown }) {
    const email = checkEmail(body.email);
    const role = checkRole(body.role ?? 'member');
    const open = await this.c.invitations.find({ tenant_id: tenantId, email, accepted_at: null });
    for (const o of open) await this.c.invitations.deleteOne({ _id: o._id });
    const now = Date.now();
    const inv: InvitationDoc = {
      _id: newId('inv_'),
      tenant_id: tenantId,
      email,
      role,
      created_at: new Date(now).toISOString(),
      expires_at: new Date(now + INVITATION_TTL_MS).toISOString(),
      accepted_at: null,
      accepted_by: null,
    };
    await this.c.invitations.insertOne(inv);
    return invitationView(inv);
  }

  async revokeInvitation(tenantId: string, id: string) {
    const n = await this.c.invitations.deleteOne({ _id: id, tenant_id: tenantId });
    if (!n) throw new ApiError('not_found', `invitation ${id} not found`);
    return { id, deleted: true };
  }

  async policy(tenantId: string) {
    const ds = await this.c.allowedDomains.find({ tenant_id: tenantId }, { sort: { _id: 1 } });
    return {
      allowed_email_domains: ds.map((d) => d.domain),
      default_role: ds[0]?.role ?? 'member',
    };
  }

  async setPolicy(
    tenantId: string,
    body: { allowed_email_domains?: unknown; default_role?: unknown },
  ) {
    const raw = body.allowed_email_domains;
    if (!Array.isArray(raw) || raw.length > MAX_DOMAINS)
      throw new ApiError(
        'invalid_request',
        `allowed_email_domains: an array of at most ${MAX_DOMAINS} domains`,
        { field: 'allowed_email_domains' },
      );
    const domains = raw.map((d, i) => {
      const v = typeof d === 'string' ? d.trim().toLowerCase() : '';
      if (v.length > 253 || !DOMAIN.test(v))
        throw new ApiError(
          'invalid_request',
          `allowed_email_domains[${i}]: a domain name such as example.com`,
          { field: `allowed_email_domains[${i}]` },
        );
      return v;
    });
    const role = checkRole(body.default_role ?? 'member', 'default_role');
    const wanted = new Set(domains);
    for (const d of await this.c.allowedDomains.find({ tenant_id: tenantId }))
      if (!wanted.has(d.domain)) await this.c.allowedDomains.deleteOne({ _id: d._id });
    for (const domain of wanted)
      await this.c.allowedDomains.updateOne(
        { _id: `${tenantId}/${domain}` },
        { $set: { tenant_id: tenantId, domain, role } },
        { upsert: true },
      );
    return this.policy(tenantId);
  }

  private async mustFind(tenantId: string, userId: string): Promise<MembershipDoc> {
    const m = await this.membership(tenantId, userId);
    if (!m) throw new ApiError('not_found', `member ${userId} not found in this tenant`);
    return m;
  }

  private async keepAnAdmin(tenantId: string): Promise<void> {
    const admins = await this.c.memberships.count({ tenant_id: tenantId, role: 'admin' });
    if (admins <= 1)
      throw new ApiError('conflict', "this is the tenant's last admin: make another admin first");
  }
}

function memberView(m: MembershipDoc, u: ConsoleUserDoc | null) {
  return {
    user_id: m.user_id,
    email: u?.email ?? null,
    name: u?.name ?? null,
    role: m.role,
    created_at: m.created_at,
  };
}

function invitationView(i: InvitationDoc) {
  return {
    id: i._id,
    email: i.email,
    role: i.role,
    created_at: i.created_at,
    expires_at: i.expires_at,
    accepted_at: i.accepted_at,
  };
}
