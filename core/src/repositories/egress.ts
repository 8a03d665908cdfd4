/**
 * A session's repository tokens at its egress proxy. For a request to the host of one of the
 * session's repository resources that has a token, whose path is that repository's (its URL
 * path, with or without `.git`, and anything under it: git's smart-HTTP `info/refs`,
 * `git-upload-pack`, `git-receive-pack`), the proxy sets
 * `Authorization: Basic base64("x-access-token:<token>")` — what GitHub, GitHub Enterprise,
 * GitLab and Gitea accept from git over HTTPS. At CONNECT time (no path yet) the host alone
 * decides, so the tunnel is intercepted; each request inside is then matched by path, and a
 * request to another path of the same host passes without the token. Tokens are opened per
 * request (a rotation through sessions.resources.update takes effect on the next request),
 * never cached, never logged. A resource without a token uses the tenant's code-host install
 * that covers the repository (a GitHub App installation token), minted when needed. Proved by test/e2e/sessions/session-repository.test.ts.
 */
import type { SecretBox } from '../crypto.js';
import type { CliRegistry } from '../egress/cliRegistry.js';
import type { EgressCredentials, EgressInjection } from '../egress/proxy/helpers.js';
import { injectionFor, type SessionVaults } from '../egress/injection/vaultInjection.js';
import type { SessionDoc } from '../sessions/records.js';
import { normalizeHost } from '../egress/policy.js';
import { isRepositoryResource, tokenPurpose } from './records.js';

/** Whether `path` (a request's) is the repository at `repoPath` or under it. */
export function underRepository(repoPath: string, path: string): boolean {
  const base = repoPath.replace(/\/+$/, '').replace(/\.git$/, '');
  return [base, `${base}.git`].some((b) => path === b || path.startsWith(`${b}/`));
}

/**
 * Where a repository resource without its own token gets one: the tenant's code-host install
 * that covers the repository (core/src/integrations IntegrationService.repositoryToken: a GitHub
 * installation token, minted per use), or null.
 */
export type InstallTokenSource = (tenantId: string, repoUrl: string) => Promise<string | null>;

/** The repository credential of session `s` for a request to `host` (`path`: its URL path). */
export async function repositoryInjection(
  p: { secrets: SecretBox; installToken?: InstallTokenSource },
  s: SessionDoc,
  host: string,
  path: string | undefined,
): Promise<EgressInjection | null> {
  const h = normalizeHost(host);
  let repositoryHost = false;
  for (const r of s.resources) {
    if (!isRepositoryResource(r)) continue;
    const u = new URL(r.url);
    if (normalizeHost(u.hostname) !== h) continue;
    repositoryHost = true;
    if (path !== undefined && !underRepository(u.pathname, path)) continue;
    const sealed = s.repository_tokens?.[r.id];
    const token = sealed
      ? p.secrets.open(sealed, tokenPurpose(r.id))
      : ((await p.installToken?.(s.tenant_id, r.url)) ?? null);
    if (!token) continue;
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    return { headers: { authorization: `Basic ${basic}` }, substitutions: [] };
  }
  // A repository host is intercepted at CONNECT even with no token for it, so its TLS is
  // verified by the proxy (EGRESS_CA_CERTS) and each request inside is matched by path.
  return repositoryHost && path === undefined
    ? { headers: {}, substitutions: [], intercept: true }
    : null;
}

/**
 * The proxy's per-request lookup: the session document read once, then its repository tokens
 * (a repository's own token wins for its paths) over its vault credentials (headers and
 * substitutions still apply beneath). A deleted session gets nothing.
 */
export function sessionEgressCredentials(
  p: SessionVaults & { secrets: SecretBox; installToken?: InstallTokenSource },
  registry: () => CliRegistry,
): EgressCredentials {
  return async (host, ctx) => {
    const s = await p.collections.sessions.get(ctx.tenantId, ctx.sessionId);
    if (!s || s.deleted_at) return null;
    const [repo, creds] = await Promise.all([
      s.resources.some(isRepositoryResource)
        ? repositoryInjection(p, s, host, ctx.path)
        : Promise.resolve(null),
      s.vault_ids?.length ? p.vaults.credentialsOf(ctx.tenantId, s.vault_ids) : Promise.resolve([]),
    ]);
    const rest = creds.length ? injectionFor(creds, host, registry()) : null;
    if (!repo) return rest;
    return {
      headers: { ...(rest?.headers ?? {}), ...repo.headers },
      substitutions: rest?.substitutions ?? [],
      ...(repo.intercept ? { intercept: true } : {}),
    };
  };
}
