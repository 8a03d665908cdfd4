/** The web console's records as stored (control store: a cookie is resolved before its tenant is known). */

export type ConsoleRole = 'admin' | 'member' | 'viewer';

/** One console sign-in: the cookie carries only `_id` (encrypted); revocable here. */
export interface ConsoleSessionDoc {
  _id: string;
  tenant_id: string;
  /** `operator`: the operator key; `key`: a tenant API key; `user`: an OIDC/GitHub user. */
  principal_kind: 'operator' | 'key' | 'user';
  key_id: string | null;
  user_id: string | null;
  role: ConsoleRole;
  /** Sent by the browser as `x-csrf-token` on every write; readable only through /me. */
  csrf_token: string;
  created_at: string;
  /** Slides forward on use (ConsoleService.resolve), never past `max_expires_at`. */
  expires_at: string;
  max_expires_at: string;
  revoked_at: string | null;
}

/** A person who signs in through an identity provider; one record per identity (issuer + subject). */
export interface ConsoleUserDoc {
  _id: string;
  /** `<issuer> <subject>`: unique. */
  identity_key: string;
  issuer: string;
  subject: string;
  /** Lower-cased, as the provider verified it at the last sign-in. */
  email: string;
  name: string;
  created_at: string;
  last_sign_in_at: string;
}

/** A user's role in one tenant; `_id` is `<tenant_id>/<user_id>`. */
export interface MembershipDoc {
  _id: string;
  tenant_id: string;
  user_id: string;
  role: ConsoleRole;
  created_at: string;
}

/** An email invited to a tenant; accepted at that email's first verified sign-in. */
export interface InvitationDoc {
  _id: string;
  tenant_id: string;
  email: string;
  role: ConsoleRole;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  accepted_by: string | null;
}

/** A tenant's allowed email domain: a verified email there joins with `role`. `_id` `<tenant>/<domain>`. */
export interface AllowedDomainDoc {
  _id: string;
  tenant_id: string;
  domain: string;
  role: ConsoleRole;
}

/** A completed identity-provider callback (`_id` = the sign-in attempt's id): a replay finds it. */
export interface UsedSignInDoc {
  _id: string;
  expires_at: string;
}

/** One `session.error` as the dashboard lists it (tenant store; `_id` = the event's id). */
export interface SessionErrorDoc {
  _id: string;
  tenant_id: string;
  session_id: string;
  seq: number;
  type: string;
  message: string;
  created_at: string;
  /** For the retention sweep (core/src/console/dashboard.ts). */
  created_ms: number;
}
