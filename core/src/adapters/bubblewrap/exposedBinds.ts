/**
 * Read-only bind sources the sandbox host user cannot reach (a package build's Rust toolchain
 * under the operator's /root), made reachable without changing the operator's directories: each
 * is bind-mounted read-only on the host at `<dir>/<hash of its path>` (under the driver's root,
 * which hostUser.ts makes searchable for that user's group), once, and bwrap binds that instead
 * (the path inside the sandbox is unchanged). `clear` unmounts them all: at the driver's first
 * start (what a killed process left) and at close. Needs root, like the rest of the confinement.
 * Proved by test/env-packages-cargo.test.ts (the cargo build runs as the host user with the
 * toolchain bound from /root) and test/sandbox-isolation.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';

/** Whether something is mounted at `path` (a bind mount of the same filesystem included). */
function mountedAt(path: string): boolean {
  const unescape = (s: string) =>
    s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .some((line) => unescape(line.split(' ')[4] ?? '') === path);
}

function run(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, {
    encoding: 'utf8',
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
  });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(' ')} failed: ${(r.stderr || r.error?.message || '').trim()}`,
    );
}

export function createExposedBinds(dir: string) {
  const made = new Map<string, Promise<string>>();
  return {
    /** The reachable read-only path standing for `source` (bind-mounted when first asked). */
    expose(source: string): Promise<string> {
      let p = made.get(source);
      if (!p) {
        p = (async () => {
          const target = join(dir, createHash('sha256').update(source).digest('hex').slice(0, 16));
          const st = await fsp.stat(source);
          await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
          if (st.isDirectory()) await fsp.mkdir(target, { recursive: true, mode: 0o755 });
          else await fsp.writeFile(target, '', { flag: 'a', mode: 0o444 });
          if (!mountedAt(target)) {
            run('mount', ['--bind', source, target]);
            run('mount', ['-o', 'remount,bind,ro', target]);
          }
          return target;
        })();
        p.catch(() => made.delete(source));
        made.set(source, p);
      }
      return p;
    },
    /** Unmounts every exposed source under `dir` (also those of a process that died). */
    async clear(): Promise<void> {
      made.clear();
      const names = await fsp.readdir(dir).catch(() => [] as string[]);
      for (const name of names) {
        const target = join(dir, name);
        while (mountedAt(target)) run('umount', ['-l', target]);
        // never recursive: an empty mount point directory, or the empty file of a file's
        await fsp.rmdir(target).catch(() => fsp.unlink(target).catch(() => {}));
      }
    },
  };
}
