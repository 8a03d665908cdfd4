/**
 * The whole-archive methods `archive` and `extract`: one tar.gz of at most MAX_ARCHIVE_BYTES in
 * one message (the streaming path, archiveStream.ts / extractStream.ts, has no such bound).
 */
import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { AgentError, MAX_ARCHIVE_BYTES } from '../protocol.js';
import { createTar, parseTar, type TarEntry } from '../tar.js';
import { absPath, fsError, str, type Params } from './params.js';
import { runTar, tarCli } from './tarCli.js';

export async function collectEntries(root: string): Promise<TarEntry[]> {
  const entries: TarEntry[] = [];
  let total = 0;
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const d of await fsp.readdir(dir, { withFileTypes: true })) {
      const full = path.posix.join(dir, d.name);
      const name = rel ? `${rel}/${d.name}` : d.name;
      let st: Stats;
      try {
        st = await fsp.lstat(full);
      } catch {
        continue;
      }
      const mtime = Math.floor(st.mtimeMs / 1000);
      if (st.isDirectory()) {
        entries.push({
          name,
          type: 'directory',
          mode: st.mode & 0o7777,
          mtime,
          data: new Uint8Array(0),
        });
        await walk(full, name);
      } else if (st.isSymbolicLink()) {
        entries.push({
          name,
          type: 'symlink',
          mode: 0o777,
          mtime,
          data: new Uint8Array(0),
          linkname: await fsp.readlink(full),
        });
      } else if (st.isFile()) {
        let data: Buffer;
        try {
          data = await fsp.readFile(full);
        } catch {
          continue; // unreadable: skipped, like tar --ignore-failed-read
        }
        total += data.length;
        if (total > MAX_ARCHIVE_BYTES)
          throw new AgentError('too_large', `archive: ${root}: over ${MAX_ARCHIVE_BYTES} bytes`, {
            path: root,
          });
        entries.push({ name, type: 'file', mode: st.mode & 0o7777, mtime, data });
      }
    }
  };
  await walk(root, '');
  return entries;
}

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

export async function archiveOp(p: Params) {
  const dir = absPath(p, 'dir', 'archive');
  let st: Stats;
  try {
    st = await fsp.stat(dir);
  } catch (err) {
    throw fsError(err, 'archive', dir);
  }
  if (!st.isDirectory())
    throw new AgentError('not_directory', `archive: ${dir} is not a directory`, { path: dir });
  let gz: Buffer;
  if (tarCli()) {
    gz = await runTar(
      ['-czf', '-', '--numeric-owner', '--ignore-failed-read', '-C', dir, '.'],
      null,
      MAX_ARCHIVE_BYTES,
      'archive',
      dir,
    );
  } else {
    gz = zlib.gzipSync(createTar(await collectEntries(dir)));
    if (gz.length > MAX_ARCHIVE_BYTES)
      throw new AgentError(
        'too_large',
        `archive: ${dir}: the archive exceeds ${MAX_ARCHIVE_BYTES} bytes`,
        { path: dir },
      );
  }
  return { base64: gz.toString('base64'), bytes: gz.length };
}

export async function extractOp(p: Params) {
  const dir = absPath(p, 'dir', 'extract');
  const b64 = str(p, 'base64', 'extract');
  const data = Buffer.from(b64, 'base64');
  try {
    await fsp.mkdir(dir, { recursive: true });
  } catch (err) {
    throw fsError(err, 'extract', dir);
  }
  if (tarCli()) {
    await runTar(['-xzf', '-', '--no-same-owner', '-C', dir], data, 0, 'extract', dir);
  } else {
    let tar: Buffer;
    try {
      tar = zlib.gunzipSync(data);
    } catch (err) {
      throw new AgentError(
        'invalid_params',
        `extract: ${dir}: the archive is not gzip data (${(err as Error).message})`,
        { path: dir, argument: 'archive' },
      );
    }
    try {
      await extractEntries(dir, parseTar(tar));
    } catch (err) {
      throw fsError(err, 'extract', dir);
    }
  }
  return null;
}
