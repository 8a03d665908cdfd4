/**
 * Credential `auth` bodies split into what is served and what is sealed. Guarantees:
 * - every secret field (token, access_token, refresh_token, client_secret, secret_value) goes
 *   only into the sealed JSON (SecretBox, AES-256-GCM, purpose `vault-credential`); the public
 *   part has no secret field, so no response or list can carry one;
 * - an update keeps the stored type (a different `auth.type` is a 400) and replaces only the
 *   fields it names; the next `credentialForHost` sees the rotation (nothing is cached);
 * - a `cap_cli` credential names a CLI of the capability registry
 *   (core/src/egress/cliRegistry.ts); any other cli_id is a 400 on `auth.cli_id` listing the
 *   known ids, so an accepted credential always has an egress effect;
 * - an `environment_variable` credential gets, at create, a random placeholder
 *   (`afv_ph_<32 hex>`, sealed with its secrets, kept across updates, never derived from the
 *   secret): the only value the sandbox ever sees for it (core/src/egress/injection/placeholders.ts).
 *   A `cap_cli` token variable's placeholder is derived from the credential id (the proxy
 *   replaces that header whatever it holds, so it need not be unguessable).
 * Proved by test/e2e/credentials/vaults.test.ts and test/e2e/credentials/sandbox-credentials.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { CredentialAuthCreate, CredentialAuthUpdate } from '@agentfleet/schemas';
import { CLI_REGISTRY, knownCliIds } from '../egress/cliRegistry.js';
import { invalid } from '../errors.js';

/** Opened secret material of one credential, by field. */
export interface CredentialSecrets {
  token?: string;
  access_token?: string;
  refresh_token?: string;
  client_secret?: string;
  secret_value?: string;
  /** environment_variable: what the sandbox sees instead of secret_value (not a secret). */
  placeholder?: string;
}

/** A new environment_variable placeholder: random, unrelated to the secret. */
export const newPlaceholder = () => `afv_ph_${randomBytes(16).toString('hex')}`;
export type PublicAuth = Record<string, unknown> & { type: string };

function httpUrl(value: string, field: string): URL {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw invalid(field, 'must be an absolute http(s) URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:')
    throw invalid(field, 'must be an absolute http(s) URL');
  if (u.username || u.password) throw invalid(field, 'must not carry user information');
  return u;
}

function time(value: string | null | undefined, field: string): string | null {
  if (value === undefined || value === null) return null;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}[Tt ]/.test(value) || Number.isNaN(ms))
    throw invalid(field, 'must be an RFC 3339 date-time');
  return new Date(ms).toISOString();
}

function injection(loc: { body?: boolean; header?: boolean }, field: string) {
  if (!loc.body && !loc.header) throw invalid(field, 'at least one of body, header must be true');
  return { body: !!loc.body, header: !!loc.header };
}

/** Lower-cased hostname the credential binds to (static_bearer, mcp_oauth), else null. */
export const hostOf = (auth: PublicAuth): string | null =>
  typeof auth.mcp_server_url === 'string'
    ? new URL(auth.mcp_server_url).hostname.toLowerCase()
    : null;

/** A create body → its public part and its secrets (validated; fields named `auth.…`). */
export function splitCreate(a: CredentialAuthCreate): {
  auth: PublicAuth;
  secrets: CredentialSecrets;
} {
  switch (a.type) {
    case 'static_bearer':
      httpUrl(a.mcp_server_url, 'auth.mcp_server_url');
      return {
        auth: { type: a.type, mcp_server_url: a.mcp_server_url },
        secrets: { token: a.token },
      };
    case 'mcp_oauth': {
      httpUrl(a.mcp_server_url, 'auth.mcp_server_url');
      const secrets: CredentialSecrets = { access_token: a.access_token };
      let refresh: Record<string, unknown> | null = null;
      if (a.refresh) {
        httpUrl(a.refresh.token_endpoint, 'auth.refresh.token_endpoint');
        const tea = a.refresh.token_endpoint_auth;
        refresh = {
          client_id: a.refresh.client_id,
          token_endpoint: a.refresh.token_endpoint,
          token_endpoint_auth: { type: tea.type },
          resource: a.refresh.resource ?? null,
          scope: a.refresh.scope ?? null,
        };
        secrets.refresh_token = a.refresh.refresh_token;
        if (tea.type !== 'none') secrets.client_secret = tea.client_secret;
      }
      return {
        auth: {
          type: a.type,
          mcp_server_url: a.mcp_server_url,
          expires_at: time(a.expires_at, 'auth.expires_at'),
          refresh,
        },
        secrets,
      };
    }
    case 'environment_variable':
      return {
        auth: {
          type: a.type,
          secret_name: a.secret_name,
          networking: a.networking,
          injection_location: injection(
            a.injection_location ?? { header: true, body: false },
            'auth.injection_location',
          ),
        },
        secrets: { secret_value: a.secret_value, placeholder: newPlaceholder() },
      };
    case 'cap_cli':
      if (!Object.hasOwn(CLI_REGISTRY, a.cli_id))
        throw invalid(
          'auth.cli_id',
          `unknown CLI '${a.cli_id}'; known cli_id values: ${knownCliIds().join(', ')}`,
        );
      return { auth: { type: a.type, cli_id: a.cli_id }, secrets: { token: a.token } };
    case 'command_secret':
      return {
        auth: { type: a.type, secret_name: a.secret_name, commands: a.commands },
        secrets: { secret_value: a.secret_value },
      };
  }
}

/**
 * Applies an update body to the stored public part and secrets (both modified in place).
 * Nullable fields: null or absent keeps the stored value, except `refresh: null` (removes
 * refresh support) and `scope: ''` (clears the scope).
 */
export function applyUpdate(auth: PublicAuth, secrets: CredentialSecrets, u: CredentialAuthUpdate) {
  if (u.type !== auth.type)
    throw invalid('auth.type', `cannot change from ${auth.type} to ${u.type}`);
  switch (u.type) {
    case 'static_bearer':
    case 'cap_cli':
      if (u.token != null) secrets.token = u.token;
      return;
    case 'mcp_oauth': {
      if (u.access_token != null) {
        secrets.access_token = u.access_token;
        // SDK: a new access_token without expires_at has no known expiry.
        if (u.expires_at === undefined) auth.expires_at = null;
      }
      if (u.expires_at !== undefined) auth.expires_at = time(u.expires_at, 'auth.expires_at');
      if (u.refresh === null) {
        auth.refresh = null;
        delete secrets.refresh_token;
        delete secrets.client_secret;
      } else if (u.refresh) {
        const r = auth.refresh as Record<string, any> | null;
        if (!r)
          throw invalid(
            'auth.refresh',
            'this credential has no refresh configuration; create a new credential to add one',
          );
        if (u.refresh.refresh_token != null) secrets.refresh_token = u.refresh.refresh_token;
        if (u.refresh.scope != null) r.scope = u.refresh.scope === '' ? null : u.refresh.scope;
        const tea = u.refresh.token_endpoint_auth;
        if (tea) {
          if (r.token_endpoint_auth?.type === 'none')
            throw invalid(
              'auth.refresh.token_endpoint_auth',
              'the credential uses token endpoint auth none; it has no client secret to replace',
            );
          if (tea.client_secret != null) secrets.client_secret = tea.client_secret;
        }
      }
      return;
    }
    case 'environment_variable':
      if (u.secret_value != null) secrets.secret_value = u.secret_value;
      if (u.networking != null) auth.networking = u.networking;
      if (u.injection_location)
        auth.injection_location = injection(
          { ...(auth.injection_location as object), ...u.injection_location },
          'auth.injection_location',
        );
      return;
    case 'command_secret':
      if (u.secret_value != null) secrets.secret_value = u.secret_value;
      if (u.commands != null) auth.commands = u.commands;
      return;
  }
}
