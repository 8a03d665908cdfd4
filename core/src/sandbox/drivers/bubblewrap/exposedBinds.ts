/**
 * Bind sources the sandbox host user cannot reach (anything under a directory it may not search
 * that the driver may not open up: a data dir inside a 0700 home or temporary directory, a
 * package build's Rust toolchain under /root), made reachable without changing the operator's
 * directories: for one sandbox start each is bind-mounted on the host (read-only unless bound
 * writable) at `<base>/<sandbox>/<n>`, where `<base>` is a directory of root's that the user may
 * search (EXPOSE_BASE, /run/agentfleet/sandboxes: 0711), and bwrap binds that instead; the path
 * inside the sandbox is unchanged. Once bwrap holds its binds (the sandbox is ready, or failed
 * to start), `release` unmounts them: the sandbox keeps its own copies, nothing of it stays
 * mounted on the host. `clearStaleExposures` removes what a killed process left. Needs root, like the
 * rest of the confinement. Proved by test/e2e/server/built-output.test.ts (a data dir under a 0700
 * directory), test/e2e/environments/env-packages-cargo.test.ts (the toolchain under /root) and
 * test/e2e/sandbox/sandbox-isolation.test.ts.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

export const EXPOSE_BASE = '/run/agentfleet/sandboxes';

/** Whether something is mounted at `path` (a bind mount of the same filesystem included). */
function mountedAt(path: string): boolean {
  const unescape = (s: string) =>
    s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => unescape(line.split(' ')[4] ?? '') === path);
}

const execFileAsync = promisify(execFile);

/** Runs mount/umount without holding the event loop (other sandboxes' calls go on meanwhile). */
async function run(cmd: string, args: string[]): Promise<void> {
  try {
    await execFileAsync(cmd, args, { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${(e.stderr || e.message).trim()}`);
  }
}

/** Unmounts and removes one sandbox's exposure directory; never recursive. */
async function removeExposure(dir: string): Promise<void> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const target = join(dir, name);
    while (mountedAt(target)) await run('umount', ['-l', target]);
    // an empty mount point directory, or the empty file of a file's
    await fsp.rmdir(target).catch(() => fsp.unlink(target).catch(() => {}));
  }
  await fsp.rmdir(dir).catch(() => {});
}

export interface Exposure {
  /** The reachable path standing for `source` (bind-mounted now; read-only unless `writable`). */
  expose(source: string, writable: boolean): Promise<string>;
  /** Unmounts everything exposed for this sandbox. */
  release(): Promise<void>;
}

/** The exposure of one sandbox start, under EXPOSE_BASE/<name>. */
export function sandboxExposure(name: string, base = EXPOSE_BASE): Exposure {
  const dir = join(base, name);
  let n = 0;
  let released: Promise<void> | null = null;
  return {
    async expose(source, writable) {
      const st = await fsp.stat(source);
      await fsp.mkdir(base, { recursive: true, mode: 0o711 });
      await fsp.chmod(base, 0o711);
      await fsp.mkdir(dir, { recursive: true, mode: 0o711 });
      const target = join(dir, String(n++));
      if (st.isDirectory()) await fsp.mkdir(target, { mode: 0o755 });
      else await fsp.writeFile(target, '', { flag: 'wx', mode: 0o444 });
      await run('mount', ['--bind', source, target]);
      if (!writable) await run('mount', ['-o', 'remount,bind,ro', target]);
      return target;
    },
    release() {
      return (released ??= removeExposure(dir));
    },
  };
}

/** Removes the exposures of processes that are gone (named `<pid>-…`, see the driver). */
export async function clearStaleExposures(base = EXPOSE_BASE): Promise<void> {
  const names = await fsp.readdir(base).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(name.split('-')[0]);
    if (!Number.isInteger(pid) || pid <= 0) continue;
    let alive = true;
    try {
      process.kill(pid, 0);
    } catch (err) {
      alive = (err as NodeJS.ErrnoException).code === 'EPERM';
    }
    if (!alive) await removeExposure(join(base, name)).catch(() => {});
  }
}
