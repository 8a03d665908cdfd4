/**
 * A session's package layer at sandbox start: the layer of the packages in the session's
 * environment SNAPSHOT (what the environment held when the session started), built if needed.
 * A build that fails appends one `session.error` to the session (type `unknown_error`, retry
 * status `terminal`: the same lists would fail again; the message names the manager and the
 * packages) and fails the sandbox start, so the tool that needed the sandbox ends with an error
 * result and the turn goes on; nothing is served as a 5xx.
 *
 * Tested: test/e2e/environments/env-packages.test.ts ("a nonexistent package ends the sandbox start with
 * session.error naming it", "gem without a gem tool on the host is a clear error").
 */
import type { EventLog } from '../../events/log.js';
import type { Logger } from '../../log.js';
import type { SessionRef } from '../port.js';
import type { PackageLayers } from './layers.js';
import type { PackageLists } from './spec.js';

export function sessionLayerResolver(layers: PackageLayers, events: EventLog, log: Logger) {
  /** The last build error reported per session (one session.error per distinct failure). */
  const reported = new Map<string, string>();
  return async (
    ref: SessionRef,
    packages: PackageLists | null | undefined,
  ): Promise<{ hostDir: string } | null> => {
    try {
      const hostDir = await layers.layerFor(packages);
      return hostDir ? { hostDir } : null;
    } catch (err) {
      const message = `the environment's packages could not be installed: ${(err as Error).message}`;
      if (reported.get(ref.sessionId) !== message) {
        if (reported.size > 10_000) reported.clear();
        reported.set(ref.sessionId, message);
        await events
          .append(ref.tenantId, ref.sessionId, [
            {
              type: 'session.error',
              payload: {
                error: { type: 'unknown_error', message, retry_status: { type: 'terminal' } },
              },
            },
          ])
          .catch((e) =>
            log.warn('appending the package build error failed', {
              sessionId: ref.sessionId,
              error: (e as Error).message,
            }),
          );
      }
      throw new Error(message);
    }
  };
}
