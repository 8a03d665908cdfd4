/**
 * `archiveOpen`: a directory as a tar.gz stream (the tar CLI, or the built-in tar over a walk of
 * the directory), optionally leaving out files over a size or unchanged since the host's copy.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import { pipeline } from 'node:stream/promises';
import { AgentError, STREAM_CHUNK_BYTES } from '../protocol.js';
import { entryHeaders, pad512 } from '../tar.js';
import { running } from './exec.js';
import { readDirSafe } from './glob.js';
import { absPath, fsError, num, type Params } from './params.js';
import {
  checkStreamRoom,
  closeStream,
  MAX_WALK_ENTRIES,
  registerStream,
  type OpenStream,
} from './streams.js';
import { tarCli } from './tarCli.js';

export function spawnTar(
  args: string[],
  op: string,
  dir: string,
  okCodes: number[],
): { child: ChildProcess; done: Promise<void>; stderr: () => string } {
  const child = spawn(tarCli()!, args, { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  running.add(child);
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => {
    if (stderr.length < 4000) stderr += c.toString('utf8');
  });
  child.stdin!.on('error', () => {});
  const done = new Promise<void>((resolve, reject) => {
    child.once('error', (err) => reject(fsError(err, op, dir)));
    child.once('close', (code) => {
      running.delete(child);
      if (code !== null && okCodes.includes(code)) resolve();
      else
        reject(
          new AgentError(
            'io',
            `${op}: ${dir}: tar exited with ${code}: ${stderr.trim().slice(0, 1000)}`,
            { path: dir },
          ),
        );
    });
  });
  done.catch(() => {});
  return { child, done, stderr: () => stderr };
}

export interface WalkItem {
  rel: string;
  type: 'file' | 'directory' | 'symlink';
  size: number;
  mode: number;
  mtime: number;
  linkname?: string;
}

/** Everything under `root` (lstat: symlinks are not followed), files over `maxFileBytes` left out. */
export async function walkForArchive(
  root: string,
  maxFileBytes: number,
  skipped: Array<{ name: string; size: number; reason: 'too_large' }>,
  unchanged: Map<string, string> = new Map(),
): Promise<WalkItem[]> {
  const items: WalkItem[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const d of await readDirSafe(dir)) {
      if (items.length >= MAX_WALK_ENTRIES)
        throw new AgentError(
          'too_large',
          `archive: ${root}: more than ${MAX_WALK_ENTRIES} entries`,
          { path: root },
        );
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
        items.push({ rel: name, type: 'directory', size: 0, mode: st.mode & 0o7777, mtime });
        await walk(full, name);
      } else if (st.isSymbolicLink()) {
        let linkname = '';
        try {
          linkname = await fsp.readlink(full);
        } catch {
          continue;
        }
        items.push({ rel: name, type: 'symlink', size: 0, mode: 0o777, mtime, linkname });
      } else if (st.isFile()) {
        if (st.size > maxFileBytes) skipped.push({ name, size: st.size, reason: 'too_large' });
        else if (unchanged.get(name) === `${st.size}:${mtime}`)
          continue; // the host has this version
        else items.push({ rel: name, type: 'file', size: st.size, mode: st.mode & 0o7777, mtime });
      }
    }
  };
  await walk(root, '');
  return items;
}

/** The built-in tar writer over a walk: each file read in chunks, exactly its listed size. */
export async function* builtinTar(root: string, items: WalkItem[]): AsyncGenerator<Buffer> {
  for (const it of items) {
    const entry = {
      name: it.rel,
      type: it.type,
      mode: it.mode,
      mtime: it.mtime,
      ...(it.linkname !== undefined ? { linkname: it.linkname } : {}),
    };
    if (it.type !== 'file') {
      yield Buffer.concat(entryHeaders(entry, 0));
      continue;
    }
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(path.posix.join(root, it.rel), 'r');
    } catch {
      continue; // unreadable: skipped, like tar --ignore-failed-read
    }
    try {
      yield Buffer.concat(entryHeaders(entry, it.size));
      let left = it.size;
      while (left > 0) {
        const buf = Buffer.alloc(Math.min(left, STREAM_CHUNK_BYTES));
        const { bytesRead } = await fh.read(buf, 0, buf.length, null);
        // a file that shrank meanwhile is padded with zeros: the header's size is what counts
        if (bytesRead === 0) buf.fill(0);
        const n = bytesRead || buf.length;
        yield buf.subarray(0, n);
        left -= n;
      }
      const pad = pad512(it.size);
      if (pad) yield Buffer.alloc(pad);
    } finally {
      await fh.close();
    }
  }
  yield Buffer.alloc(1024);
}

export async function archiveOpenOp(p: Params) {
  checkStreamRoom('archiveOpen');
  const dir = absPath(p, 'dir', 'archiveOpen');
  const maxFileBytes = num(
    p,
    'maxFileBytes',
    'archiveOpen',
    Number.MAX_SAFE_INTEGER,
    0,
    Number.MAX_SAFE_INTEGER,
  );
  const unchanged = new Map<string, string>();
  if (p.unchanged !== undefined && p.unchanged !== null) {
    if (typeof p.unchanged !== 'object' || Array.isArray(p.unchanged))
      throw new AgentError(
        'invalid_params',
        "archiveOpen: 'unchanged' must be an object of name → 'size:mtime'",
        { argument: 'unchanged' },
      );
    for (const [k, v] of Object.entries(p.unchanged as Params))
      if (typeof v === 'string') unchanged.set(k, v);
  }
  const filtered = (p.maxFileBytes !== undefined && p.maxFileBytes !== null) || unchanged.size > 0;
  let st: Stats;
  try {
    st = await fsp.stat(dir);
  } catch (err) {
    throw fsError(err, 'archive', dir);
  }
  if (!st.isDirectory())
    throw new AgentError('not_directory', `archive: ${dir} is not a directory`, { path: dir });
  const skipped: Array<{ name: string; size: number; reason: 'too_large' }> = [];
  const items =
    filtered || !tarCli() ? await walkForArchive(dir, maxFileBytes, skipped, unchanged) : null;
  let s: OpenStream;
  if (tarCli()) {
    // exit code 1: a file changed while it was read; the archive is still whole
    const base = ['-czf', '-', '--numeric-owner', '--ignore-failed-read', '-C', dir];
    const t = spawnTar(
      items ? [...base, '--null', '--no-recursion', '-T', '-'] : [...base, '.'],
      'archive',
      dir,
      [0, 1],
    );
    if (items) t.child.stdin!.end(Buffer.from(items.map((i) => `./${i.rel}\0`).join(''), 'utf8'));
    else t.child.stdin!.end();
    // piped at once: a child that exits before the first streamRead would otherwise have its
    // unread output discarded (child_process resumes stdio nobody listens to)
    const out = new PassThrough({ highWaterMark: STREAM_CHUNK_BYTES });
    t.child.stdout!.pipe(out);
    s = registerStream({
      op: 'archive',
      dir,
      readable: out,
      child: t.child,
      stderr: '',
      done: t.done,
    });
  } else {
    const gz = zlib.createGzip();
    const source = Readable.from(builtinTar(dir, items!));
    const done = pipeline(source, gz).catch((err) => {
      throw fsError(err, 'archive', dir);
    });
    done.catch(() => {});
    s = registerStream({ op: 'archive', dir, readable: gz, stderr: '', done });
  }
  return { stream: s.id, skipped };
}

/** Up to `max` bytes from a paused readable; `eof` once it has ended. */
