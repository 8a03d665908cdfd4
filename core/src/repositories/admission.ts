/**
 * Where a repository resource can be honoured (spec Work rule 3: a repository makes credential
 * egress mandatory): only a sandbox whose traffic leaves through the session's egress proxy,
 * which injects the token, can clone it. Checked at session create, before anything is
 * allocated; a deployment without that enforcement point answers a 400 naming the field.
 * Proved by test/e2e/sessions/session-repository.test.ts.
 */
import type { BaseImageSupport } from '../environments/baseImage.js';

export interface RepositorySupport extends BaseImageSupport {
  /** SANDBOX_NOMAD_PROXY_ADVERTISE is set: Nomad sandboxes reach the session proxy. */
  nomadProxy?: boolean;
}

/**
 * Why a cloud session on this environment cannot have a repository resource, or null (a
 * self_hosted one is refused earlier: core/src/api/unsupported.ts refuseOnSelfHosted).
 */
export function repositoryEgressProblem(
  support: RepositorySupport,
  env: { base_image?: string | null },
): string | null {
  if (support.sandboxDriver === 'none')
    return 'repository resources need a sandbox, and this deployment runs none (SANDBOX_DRIVER=none)';
  if (support.sandboxDriver === 'nomad' && !support.nomadProxy)
    return 'repository resources need the session egress proxy, and Nomad sandboxes here have no network (set SANDBOX_NOMAD_PROXY_ADVERTISE)';
  if (support.sandboxDriver === 'nomad' && env.base_image != null)
    return "repository resources need the session egress proxy, and a base_image sandbox has Docker's bridge network instead";
  return null;
}
