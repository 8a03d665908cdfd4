/**
 * The built-in tar's extract side: unpacks parsed tar entries into a directory (used by
 * extractStream.ts when the sandbox has no tar CLI). Names with `..` and entries under a symlink
 * pointing out of the directory are skipped: nothing lands outside it. Proved by the built-in tar
 * test of core/test/sandbox.local.test.ts.
 */
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import type { TarEntry } from '../tar.js';

export function safeRelative(name: string): string | null {
  const parts = name.split('/').filter((s) => s && s !== '.');
  if (!parts.length || parts.includes('..')) return null;
  return parts.join('/');
}

export async function extractEntries(dir: string, entries: TarEntry[]): Promise<void> {
  const root = await fsp.realpath(dir);
  const inside = async (p: string) => {
    const real = await fsp.realpath(p).catch(() => null);
    return real !== null && (real === root || real.startsWith(`${root}/`));
  };
  const dirModes: Array<[string, number]> = [];
  for (const e of entries) {
    const rel = safeRelative(e.name);
    if (!rel) continue;
    const dest = path.posix.join(root, rel);
    const parent = path.posix.dirname(dest);
    await fsp.mkdir(parent, { recursive: true });
    if (!(await inside(parent))) continue; // a symlink in the archive pointing out of `dir`
    if (e.type === 'directory') {
      await fsp.mkdir(dest, { recursive: true });
      dirModes.push([dest, e.mode || 0o755]);
      continue;
    }
    await fsp.rm(dest, { force: true }).catch(() => {});
    if (e.type === 'symlink') await fsp.symlink(e.linkname ?? '', dest);
    else if (e.type === 'hardlink') {
      const target = safeRelative(e.linkname ?? '');
      if (target) await fsp.link(path.posix.join(root, target), dest).catch(() => {});
    } else {
      await fsp.writeFile(dest, e.data, { mode: e.mode || 0o644 });
      await fsp.chmod(dest, e.mode || 0o644);
      if (e.mtime) await fsp.utimes(dest, e.mtime, e.mtime).catch(() => {});
    }
  }
  for (const [d, mode] of dirModes.reverse()) await fsp.chmod(d, mode | 0o700).catch(() => {});
}
