/**
 * The host user a bwrap sandbox runs as when the platform (local driver: core's
 * adapters/bubblewrap/driver.ts) or the Nomad launcher (launcher/launcher.ts, on the client) runs
 * as root: bwrap started as root
 * maps the sandbox's uid 1000 to host uid 0, so every file a sandbox writes into a directory
 * bound read-write would be root's on the host. With a SandboxHostUser, bwrap is started
 * through `setpriv` as that unprivileged uid and gid (no supplementary groups, no capabilities),
 * so the sandbox's uid 1000 is that uid on the host: its files are that uid's, and the kernel
 * grants it nothing of root's.
 *
 * bwrap opens its bind sources as that user, so before a sandbox starts (`prepareBinds`):
 * - every directory on the way to a bind source must be searchable by it. A directory under one
 *   of `within` (the data dir, created 0700 by root) that is not is given the user's group with
 *   search only (chgrp, g+x: no listing, nothing readable); one outside them refuses the start
 *   with a message naming it (an operator's directory is not changed behind their back);
 * - a source bound read-write and owned by root (the sandbox's own directories, a package
 *   build's staging directory) is given to the user (chown; its contents are the sandbox's);
 * - the proxy socket is given to the user, who must write it to connect.
 *
 * Proved by test/e2e/sandbox/sandbox-isolation.test.ts ("runs as the unprivileged sandbox host uid"),
 * core/test/sandbox.nomad.test.ts ("the sandbox host user on the client") and by every test that
 * runs the platform's local driver as root (they all use it), package builds included
 * (test/e2e/environments/env-packages-cargo.test.ts: the toolchain under /root reached through the driver's
 * exposed binds, core's adapters/bubblewrap/exposedBinds.ts).
 */
import { spawnSync } from 'node:child_process';
import * as fsp from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';

export interface SandboxHostUser {
  uid: number;
  gid: number;
  /** Directories whose subtree the driver may make searchable for the user (the data dir). */
  within: string[];
}

export const SETPRIV = '/usr/bin/setpriv';

/** `command` started as the user: setpriv changes uid and gid, drops groups and capabilities. */
export function asHostUser(user: SandboxHostUser | null, command: string[]): string[] {
  if (!user) return command;
  return [
    SETPRIV,
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    '--clear-groups',
    '--inh-caps=-all',
    '--',
    ...command,
  ];
}

const isUnder = (p: string, root: string) => p === root || p.startsWith(root + sep);

/** Whether `user` may search a directory of this mode and ownership. */
function searchable(st: { mode: number; uid: number; gid: number }, user: SandboxHostUser) {
  if (st.uid === user.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === user.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/**
 * Makes a sandbox's bind sources reachable (and its writable ones its own): see the header. A
 * source the user cannot reach outside `within` is handed to `expose` when given (the local
 * driver bind-mounts it where the user can search: core's adapters/bubblewrap/exposedBinds.ts),
 * else the start is refused. Answers the options with exposed sources replaced.
 */
export async function prepareBinds(
  user: SandboxHostUser,
  args: string[],
  proxySocket: string | null,
  /** Directories found searchable already (kept between sandboxes: not those under `fresh`). */
  checked: Set<string>,
  /** The driver's root: the sandboxes' own directories below it are made anew for each. */
  fresh: string,
  expose?: (source: string, writable: boolean) => Promise<string>,
): Promise<string[]> {
  const within = user.within.map((w) => resolve(w));
  /** The first directory on the way to `source` the user cannot search and we may not fix. */
  const blockedOn = async (source: string): Promise<string | null> => {
    for (let dir = dirname(resolve(source)); ; dir = dirname(dir)) {
      if (!checked.has(dir)) {
        const st = await fsp.stat(dir);
        if (!searchable(st, user)) {
          // root's own directory (its group root, or the user's already: a concurrent start)
          const ours = st.uid === 0 && (st.gid === 0 || st.gid === user.gid);
          if (!within.some((w) => isUnder(dir, w)) || !ours) return dir;
          await fsp.chown(dir, 0, user.gid);
          await fsp.chmod(dir, (st.mode & 0o7777) | 0o010);
        }
        if (!isUnder(dir, fresh) || dir === fresh) checked.add(dir);
      }
      if (dir === dirname(dir)) return null;
    }
  };
  const refuse = (source: string, dir: string) =>
    new Error(
      `the sandbox host user (uid ${user.uid}) cannot reach ${source}: ${dir} is not searchable for it (make it searchable, e.g. chmod o+x, or set SANDBOX_ROOT elsewhere)`,
    );
  const out = [...args];
  const writable: string[] = [];
  for (let i = 0; i < out.length; i++) {
    const flag = out[i]!;
    const readOnly = flag === '--ro-bind' || flag === '--ro-bind-try';
    if (!readOnly && flag !== '--bind' && flag !== '--bind-try') continue;
    const source = out[++i]!;
    if (!readOnly) writable.push(source);
    const blocked = await blockedOn(source);
    if (!blocked) continue;
    if (!expose) throw refuse(source, blocked);
    out[i] = await expose(source, !readOnly);
    const still = await blockedOn(out[i]!);
    if (still) throw refuse(out[i]!, still);
  }
  // the socket is one of the bind sources above (reached or exposed); connecting needs write on it
  if (proxySocket) await fsp.chown(proxySocket, user.uid, user.gid);
  for (const source of writable) {
    const st = await fsp.stat(source);
    if (st.uid === 0) await fsp.chown(source, user.uid, user.gid);
  }
  return out;
}

/** Whether bwrap can create its namespaces as the user here (unprivileged user namespaces). */
export function checkHostUser(user: SandboxHostUser, bwrap: string): string | null {
  const r = spawnSync(
    asHostUser(user, [bwrap])[0]!,
    [
      ...asHostUser(user, [bwrap]).slice(1),
      '--unshare-all',
      '--unshare-user',
      '--die-with-parent',
      '--ro-bind',
      '/',
      '/',
      '/bin/true',
    ],
    { encoding: 'utf8', timeout: 10_000, env: {} },
  );
  if (r.status === 0) return null;
  return `bubblewrap cannot create sandbox namespaces as the sandbox host user (uid ${user.uid}): ${(r.stderr || r.error?.message || '').trim()} (unprivileged user namespaces must be allowed; set SANDBOX_HOST_UID to another uid, or see the README's Security model)`;
}
