/**
 * The warmup step that puts a session's repositories in place (spec Work rule 3), run by the
 * sandbox manager after the outbound context is set (core/src/sandbox/manager/warmup.ts):
 * - a repository whose mount path already holds a git work tree (a restored workspace
 *   checkpoint, or a sandbox still warm) is left as it is: no clone;
 * - otherwise `git clone` runs in the sandbox, through the session's egress proxy, which
 *   injects the repository's token by host and path (./egress.ts): the sandbox never holds it;
 *   then the checkout (branch: `--branch`; commit: a detached checkout of the sha);
 * - any failure fails the warmup with a RepositoryError whose `errorType` is the SDK's
 *   session error type (repository_authentication_error, _forbidden_, _not_found_,
 *   _checkout_, _clone_), never skipped.
 * Proved by test/e2e/sessions/session-repository.test.ts.
 */
import { SANDBOX_PATHS } from '../sandbox/shared.js';
import { shellQuote as q } from '../util.js';
import type { SandboxAgentApi } from '../sandbox/port.js';
import { SandboxWarmupError } from '../sandbox/manager/types.js';
import type { SessionRepositoryResource } from './records.js';

export type RepositoryErrorType =
  | 'repository_authentication_error'
  | 'repository_forbidden_error'
  | 'repository_not_found_error'
  | 'repository_checkout_error'
  | 'repository_clone_error';

export class RepositoryError extends SandboxWarmupError {
  constructor(
    readonly errorType: RepositoryErrorType,
    readonly repositoryUrl: string,
    message: string,
    path: string,
  ) {
    super('repositories', message, path);
  }
}

/**
 * The git environment of the clone: no prompt, no system config, and every host through the
 * proxy (the sandbox's NO_PROXY exempts loopback, which inside the sandbox is the sandbox).
 */
const GIT_ENV = {
  GIT_TERMINAL_PROMPT: '0',
  GIT_CONFIG_NOSYSTEM: '1',
  NO_PROXY: '',
  no_proxy: '',
};
/** git trusts the sandbox's CA bundle (the egress CA in it) when the driver mounted one. */
const TRUST = `if [ -r ${SANDBOX_PATHS.caBundle} ]; then export GIT_SSL_CAINFO=${SANDBOX_PATHS.caBundle}; fi;`;

/** The SDK's error type for git's complaint (clone stage; checkout is classified by the caller). */
export function classifyGitFailure(stderr: string): RepositoryErrorType {
  const s = stderr.toLowerCase();
  if (/connect tunnel failed|proxy/.test(s)) return 'repository_clone_error';
  if (
    /authentication failed|could not read username|returned error: 401|terminal prompts disabled/.test(
      s,
    )
  )
    return 'repository_authentication_error';
  if (/returned error: 403|permission denied|forbidden/.test(s))
    return 'repository_forbidden_error';
  if (/remote branch .* not found|could not find remote branch/.test(s))
    return 'repository_checkout_error';
  if (/returned error: 404|repository not found|not found/.test(s))
    return 'repository_not_found_error';
  return 'repository_clone_error';
}

const lastLines = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => l.trim())
    .slice(-3)
    .join(' | ')
    .slice(0, 1000);

/** Clones (or keeps) each repository; resolves to how many were cloned and kept. */
export async function prepareRepositories(
  api: SandboxAgentApi,
  repos: readonly SessionRepositoryResource[],
  timeoutMs = 600_000,
): Promise<{ cloned: number; kept: number }> {
  let cloned = 0;
  let kept = 0;
  for (const r of repos) {
    const dir = q(r.mount_path);
    const present = await api.exec({
      command: `test -e ${dir}/.git`,
      timeoutMs: 30_000,
    });
    if (present.exitCode === 0) {
      kept++;
      continue;
    }
    const branch = r.checkout?.type === 'branch' ? ` --branch ${q(r.checkout.name)}` : '';
    const clone = await api.exec({
      command: `${TRUST} rm -rf -- ${dir} && mkdir -p -- "$(dirname -- ${dir})" && git clone --quiet${branch} -- ${q(r.url)} ${dir}`,
      env: GIT_ENV,
      timeoutMs,
    });
    if (clone.exitCode !== 0)
      throw new RepositoryError(
        classifyGitFailure(clone.stderr),
        r.url,
        `cloning ${r.url} into ${r.mount_path} failed: ${lastLines(clone.stderr) || `exit code ${clone.exitCode}`}`,
        r.mount_path,
      );
    if (r.checkout?.type === 'commit') {
      const co = await api.exec({
        command: `${TRUST} git -C ${dir} checkout --quiet --detach ${q(r.checkout.sha)}`,
        env: GIT_ENV,
        timeoutMs: 120_000,
      });
      if (co.exitCode !== 0)
        throw new RepositoryError(
          'repository_checkout_error',
          r.url,
          `checking out commit ${r.checkout.sha} of ${r.url} failed: ${lastLines(co.stderr) || `exit code ${co.exitCode}`}`,
          r.mount_path,
        );
    }
    // Commits the agent makes need an identity; the repository's own config, not a global one.
    await api.exec({
      command: `git -C ${dir} config user.name >/dev/null || git -C ${dir} config user.name agent; git -C ${dir} config user.email >/dev/null || git -C ${dir} config user.email agent@agentfleet.invalid`,
      env: GIT_ENV,
      timeoutMs: 30_000,
    });
    cloned++;
  }
  return { cloned, kept };
}
