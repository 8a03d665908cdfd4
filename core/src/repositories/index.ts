/**
 * Repository resources of sessions: records and validation (./records.ts), the token at the
 * egress proxy (./egress.ts), the warmup clone (./checkout.ts), and where a deployment can
 * honour them (./admission.ts).
 */
import type { Collections } from '../store/collections.js';
import type { SandboxManagerDeps } from '../sandbox/manager/types.js';
import { prepareRepositories } from './checkout.js';
import { isRepositoryResource } from './records.js';

export * from './records.js';
export * from './checkout.js';
export * from './admission.js';
export {
  repositoryInjection,
  sessionEgressCredentials,
  underRepository,
  type InstallTokenSource,
} from './egress.js';

/** The sandbox manager's prepareWorkspace step: the session's repositories, cloned or kept. */
export function sessionRepositories(p: {
  collections: Pick<Collections, 'sessions'>;
}): NonNullable<SandboxManagerDeps['prepareWorkspace']> {
  return async (ref, api) => {
    const s = await p.collections.sessions.get(ref.tenantId, ref.sessionId);
    const repos = (s?.resources ?? []).filter(isRepositoryResource);
    if (repos.length) await prepareRepositories(api, repos);
  };
}
