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
 * never cached, never logged. Proved by test/e2e/sessions/session-repository.test.ts.
 */
import type { SecretBox } from '../crypto.js';
import type { Collections } from '../store/collections.js';
import type { EgressCredentials, EgressInjection } from '../egress/proxy/helpers.js';
import { normalizeHost } from '../egress/policy.js';
import { isRepositoryResource, tokenPurpose } from './records.js';

/** Whether `path` (a request's) is the repository at `repoPath` or under it. */
export function underRepository(repoPath: string, path: string): boolean {
  const base = repoPath.replace(/\/+$/, '').replace(/\.git$/, '');
  return [base, `${base}.git`].some((b) => path === b || path.startsWith(`${b}/`));
}

/** The session's repository credential for a request to `host` (`path`: its URL path). */
export async function repositoryInjection(
  p: { collections: Pick<Collections, 'sessions'>; secrets: SecretBox },
  tenantId: string,
  sessionId: string,
  host: string,
  path: string | undefined,
): Promise<EgressInjection | null> {
  const s = await p.collections.sessions.get(tenantId, sessionId);
  if (!s || s.deleted_at || !s.repository_tokens) return null;
  const h = normalizeHost(host);
  for (const r of s.resources) {
    if (!isRepositoryResource(r)) continue;
    const sealed = s.repository_tokens[r.id];
    if (!sealed) continue;
    const u = new URL(r.url);
    if (normalizeHost(u.hostname) !== h) continue;
    if (path !== undefined && !underRepository(u.pathname, path)) continue;
    const token = p.secrets.open(sealed, tokenPurpose(r.id));
    const basic = Buffer.from(`x-access-token:${token}`).toString('base64');
    return { headers: { authorization: `Basic ${basic}` }, substitutions: [] };
  }
  return null;
}

/**
 * The repository tokens first, then `others` (the session's vault credentials): a repository's
 * own token wins for its paths; the vault's headers and substitutions still apply beneath it.
 */
export function withRepositoryCredentials(
  p: { collections: Pick<Collections, 'sessions'>; secrets: SecretBox },
  others: EgressCredentials,
): EgressCredentials {
  return async (host, ctx) => {
    const [repo, rest] = await Promise.all([
      repositoryInjection(p, ctx.tenantId, ctx.sessionId, host, ctx.path),
      others(host, ctx),
    ]);
    if (!repo) return rest;
    return {
      headers: { ...(rest?.headers ?? {}), ...repo.headers },
      substitutions: rest?.substitutions ?? [],
    };
  };
}
