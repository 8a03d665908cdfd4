/**
 * SANDBOX_HOST_UID / SANDBOX_HOST_GID (the sandbox section, core/src/config/sandbox.ts): the
 * unprivileged host user a local (bwrap) sandbox runs as when the platform runs as root
 * (sandbox/drivers/bubblewrap/hostUser.ts). Default uid 100000 (outside the ranges
 * distributions give accounts), gid the same; uid 0 is refused. Not root: bwrap runs as the
 * platform's own user, and setting either is a problem (it could not be honoured). Proved by
 * core/test/config.sandboxUser.test.ts and test/e2e/sandbox/sandbox-isolation.test.ts.
 */
import { group, int, readContext, readSchema, section, settingsByEnv, type Env } from './schema.js';

const HostUser = section({
  uid: int('SANDBOX_HOST_UID', {
    default: 100_000,
    min: 1,
    max: 2 ** 31 - 2,
    description:
      'the unprivileged host user local sandboxes run as when the platform runs as root (see [security.md](security.md)); refused when it does not run as root',
  }),
  gid: int('SANDBOX_HOST_GID', {
    defaultFrom: (ctx) => ctx.get('SANDBOX_HOST_UID') as number,
    docDefault: 'the uid',
    min: 1,
    max: 2 ** 31 - 2,
    description: 'the group of that user; refused when the platform does not run as root',
  }),
});
const HOST_USER_SETTINGS = settingsByEnv([HostUser]);

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
  return readSchema(HostUser, readContext(env, '', HOST_USER_SETTINGS, problems)) as {
    uid: number;
    gid: number;
  };
}

export const SandboxHostUserSchema = group(HostUser.properties, {
  when: ['uid', 'gid'],
  read: (ctx) => parseSandboxHostUser(ctx.env, ctx.problems),
});
