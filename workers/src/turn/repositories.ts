/**
 * A session with repository resources has them in place before its model is first asked: the
 * turn warms the sandbox (which clones through the egress proxy, core/src/repositories), and a
 * repository that cannot be cloned or checked out ends the turn with one session.error of the
 * SDK's repository type (repository_authentication_error, _forbidden_, _not_found_,
 * _checkout_, _clone_) carrying `repository_url`, before any model request. Other warmup
 * failures are left to the tools that need the sandbox, as for any session.
 * Proved by test/e2e/sessions/session-repository.test.ts.
 */
import {
  isRepositoryResource,
  RepositoryError,
  type EventDraft,
  type SandboxManager,
  type SessionDoc,
  type SessionRef,
} from '@agentfleet/core';

/** The session.error to append when the session's repositories could not be prepared, or null. */
export async function repositoriesReady(
  sandbox: SandboxManager | null,
  session: SessionRef,
  s: Pick<SessionDoc, 'resources'>,
): Promise<EventDraft | null> {
  if (!sandbox || !s.resources.some(isRepositoryResource)) return null;
  try {
    await sandbox.run(session, async () => undefined);
    return null;
  } catch (err) {
    if (!(err instanceof RepositoryError)) return null;
    return {
      type: 'session.error',
      payload: {
        error: {
          type: err.errorType,
          message: err.message,
          repository_url: err.repositoryUrl,
          retry_status: { type: 'terminal' },
        },
      },
    };
  }
}
