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
