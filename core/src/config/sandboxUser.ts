/**
 * SANDBOX_HOST_UID / SANDBOX_HOST_GID, for core/src/config/config.ts: the unprivileged host user a
 * local (bwrap) sandbox runs as when the platform runs as root (adapters/bubblewrap/hostUser.ts).
 * Default uid 100000 (outside the ranges distributions give accounts), gid the same; uid 0 is
 * refused. Not root: bwrap runs as the platform's own user, and setting either is a problem
 * (it could not be honoured). Proved by core/test/config.sandboxUser.test.ts and
 * test/sandbox-isolation.test.ts.
 */
import { int, type Env } from './http.js';

export function parseSandboxHostUser(
  env: Env,
  problems: string[],
  isRoot = process.getuid?.() === 0,
): { uid: number; gid: number } | null {
  const set = ['SANDBOX_HOST_UID', 'SANDBOX_HOST_GID'].filter((n) => env[n]);
  if (!isRoot) {
    for (const n of set)
      problems.push(
        `${n} needs the platform to run as root (otherwise sandboxes run as its own user)`,
      );
    return null;
  }
  const uid = int(env, 'SANDBOX_HOST_UID', 100_000, problems, 1, 2 ** 31 - 2);
  return { uid, gid: int(env, 'SANDBOX_HOST_GID', uid, problems, 1, 2 ** 31 - 2) };
}
