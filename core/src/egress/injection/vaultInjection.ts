/**
 * The session proxy's default credentials: the session's `vault_ids`, read live on
 * every request (core/src/vaults/vaults.ts credentialsOf: active credentials of live vaults,
 * opened; nothing cached, so a rotation or an archived vault takes effect on the next request).
 * For a request to `host`:
 * - `static_bearer` / `mcp_oauth`: the first whose `mcp_server_url` hostname is `host` sets
 *   `Authorization: Bearer <token | access_token>` (vault order, oldest credential first);
 * - `cap_cli`: a credential whose CLI (core/src/egress/cliRegistry.ts) talks to `host` sets
 *   that CLI's header (e.g. gh: `Authorization: token <t>`), unless a bearer above already set it;
 * - `environment_variable`: its placeholder is replaced by its secret where its networking and
 *   injection_location allow (./placeholders.ts);
 * - `command_secret` has no egress effect: it reaches one simple command's environment
 *   (./commandSecrets.ts).
 * Headers replace the sandbox's under the same name. Nothing matching: the request passes
 * unchanged (and HTTPS stays a raw tunnel). Object-store hosts are never intercepted
 * (../proxy/intercept.ts), and the session's network policy and the egress policy run before
 * any of this: a credential never opens a host or a private address.
 * Proved by test/e2e/credentials/sandbox-ca.test.ts › "a session's vault credential is injected" and
 * test/e2e/credentials/sandbox-credentials.test.ts.
 */
import type { ResolvedCredential, VaultService } from '../../vaults/vaults.js';
import type { Collections } from '../../store/collections.js';
import { hostOf } from '../../vaults/credentials.js';
import { CLI_REGISTRY, type CliRegistry } from '../cliRegistry.js';
import { normalizeHost } from '../policy.js';
import { substitutionsFor } from './placeholders.js';
import type { EgressInjection } from '../proxy/helpers.js';
import { hostMatches } from '../proxy/policy.js';

/** What reading a session's vault credentials needs: its session document and the vaults. */
export interface SessionVaults {
  collections: Pick<Collections, 'sessions'>;
  vaults: Pick<VaultService, 'credentialsOf'>;
}

/** The session's active vault credentials, opened, read now (none for a deleted session). */
export async function sessionCredentials(
  p: SessionVaults,
  tenantId: string,
  sessionId: string,
): Promise<ResolvedCredential[]> {
  const s = await p.collections.sessions.get(tenantId, sessionId);
  const vaultIds = s?.vault_ids ?? [];
  if (!s || s.deleted_at || !vaultIds.length) return [];
  return p.vaults.credentialsOf(tenantId, vaultIds);
}

/** What the session's credentials inject into a request to `host`. */
export function injectionFor(
  creds: readonly ResolvedCredential[],
  host: string,
  registry: CliRegistry = CLI_REGISTRY,
): EgressInjection {
  const h = normalizeHost(host);
  const headers: Record<string, string> = {};
  const bearer = creds.find(
    (c) => (c.type === 'static_bearer' || c.type === 'mcp_oauth') && hostOf(c.auth) === h,
  );
  const token = bearer?.secrets.token ?? bearer?.secrets.access_token;
  if (token) headers.authorization = `Bearer ${token}`;
  for (const c of creds) {
    if (c.type !== 'cap_cli' || !c.secrets.token) continue;
    const spec = Object.hasOwn(registry, String(c.auth.cli_id))
      ? registry[String(c.auth.cli_id)]
      : undefined;
    if (!spec || !spec.hosts.some((p) => hostMatches(p, h))) continue;
    headers[spec.header] ??= `${spec.prefix}${c.secrets.token}`;
  }
  return { headers, substitutions: substitutionsFor(creds, h) };
}
