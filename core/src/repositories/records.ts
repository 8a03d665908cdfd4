/**
 * Repository resources of a session: `github_repository` (the SDK's name) or
 * `code_host_repository` (the spec's), one git repository over HTTPS cloned into the session's
 * sandbox at `mount_path` during warmup (./checkout.ts). Served as the SDK's
 * BetaManagedAgentsGitHubRepositoryResource: the authorization token is never in a record, a
 * response or an event; it is sealed under the root secret in the session document's
 * `repository_tokens` (resource id → sealed token) and reaches the repository host only through
 * the session's egress proxy (./egress.ts).
 * Proved by test/e2e/sessions/session-repository.test.ts.
 */
import { invalid } from '../errors.js';
import { newId } from '../ids.js';

export const REPOSITORY_TYPES = ['github_repository', 'code_host_repository'] as const;
export type RepositoryType = (typeof REPOSITORY_TYPES)[number];

export type RepositoryCheckout = { type: 'branch'; name: string } | { type: 'commit'; sha: string };

/** As stored in SessionDoc.resources and served. */
export interface SessionRepositoryResource {
  id: string;
  type: RepositoryType;
  url: string;
  mount_path: string;
  checkout: RepositoryCheckout | null;
  created_at: string;
  updated_at: string;
}

/** The SealedBox purpose of a repository token: bound to its resource id. */
export const tokenPurpose = (resourceId: string) => `session-repository-token:${resourceId}`;

export const isRepositoryType = (t: unknown): t is RepositoryType =>
  REPOSITORY_TYPES.includes(t as RepositoryType);

export const isRepositoryResource = (r: unknown): r is SessionRepositoryResource =>
  isRepositoryType((r as { type?: unknown })?.type);

/** A branch name git accepts as a ref component (git check-ref-format, conservatively). */
const BRANCH =
  /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock(?:\/|$))(?!\/)(?!.*\/$)(?!.*\.$)[A-Za-z0-9._\/-]{1,255}$/;
const SHA = /^[0-9a-f]{7,64}$/;
const MAX_TOKEN = 8192;

export interface DeclaredRepository {
  type: string;
  url: string;
  authorization_token?: string;
  checkout?: { type: string; name?: unknown; sha?: unknown } | null;
  mount_path?: string | null;
}

/**
 * The repository URL as cloned: https only, no user or password in it (the token goes in
 * `authorization_token`), no query or fragment. Throws a 400 naming `field`.
 */
export function repositoryUrl(raw: string, field: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw invalid(field, 'must be an absolute https URL of a git repository');
  }
  if (u.protocol !== 'https:')
    throw invalid(field, `must be an https URL (got ${u.protocol.replace(':', '')})`);
  if (u.username || u.password)
    throw invalid(field, 'must not carry credentials; pass the token as authorization_token');
  if (u.search || u.hash) throw invalid(field, 'must not have a query or fragment');
  const parts = u.pathname.split('/').filter(Boolean);
  if (!parts.length || parts.some((p) => p === '..' || p === '.'))
    throw invalid(field, 'must name a repository path (e.g. https://github.com/owner/repo)');
  return u;
}

/** `/workspace/<repo name>` from the URL's last path segment, without `.git`. */
export function defaultMountPath(u: URL): string {
  const last = u.pathname.split('/').filter(Boolean).pop()!;
  return `/workspace/${decodeURIComponent(last).replace(/\.git$/, '') || 'repository'}`;
}

/** A repository resource from its params, and its token (to seal), or a 400 naming the field. */
export function resolveRepository(
  declared: DeclaredRepository,
  field: string,
  now: string,
): { resource: SessionRepositoryResource; token: string | null } {
  const type = declared.type as RepositoryType;
  const u = repositoryUrl(declared.url, `${field}.url`);
  const mount = declared.mount_path ?? defaultMountPath(u);
  if (
    !mount.startsWith('/') ||
    mount === '/' ||
    mount.split('/').some((p) => p === '..' || p === '.') ||
    /[\0\n\r]/.test(mount) ||
    mount.length > 1024
  )
    throw invalid(`${field}.mount_path`, 'must be an absolute path without . or .. segments');
  if (/^\/(mnt\/session|mnt\/memory|proc|sys|dev|etc|usr|bin|sbin|lib|tmp)(\/|$)/.test(mount))
    throw invalid(`${field}.mount_path`, `${mount} is reserved; use a path under /workspace`);
  let checkout: RepositoryCheckout | null = null;
  const c = declared.checkout;
  if (c) {
    if (c.type === 'branch') {
      if (typeof c.name !== 'string' || !BRANCH.test(c.name))
        throw invalid(`${field}.checkout.name`, 'must be a valid git branch name');
      checkout = { type: 'branch', name: c.name };
    } else if (c.type === 'commit') {
      if (typeof c.sha !== 'string' || !SHA.test(c.sha))
        throw invalid(`${field}.checkout.sha`, 'must be a commit sha (7 to 64 lower-case hex)');
      checkout = { type: 'commit', sha: c.sha };
    } else throw invalid(`${field}.checkout.type`, "must be 'branch' or 'commit'");
  }
  const token = declared.authorization_token ?? null;
  if (token !== null) checkToken(token, `${field}.authorization_token`);
  return {
    resource: {
      id: newId('sres_'),
      type,
      url: u.href,
      mount_path: mount,
      checkout,
      created_at: now,
      updated_at: now,
    },
    token,
  };
}

/** A token that can travel in one HTTP header, or a 400 naming `field`. */
export function checkToken(token: string, field: string): void {
  if (!token.length || token.length > MAX_TOKEN || /[\0-\x1f\x7f\s]/.test(token))
    throw invalid(
      field,
      `must be 1 to ${MAX_TOKEN} characters without spaces or control characters`,
    );
}
