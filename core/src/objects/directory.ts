/**
 * Embedded object store: one file per object under `<dir>/data/<key>` (readable with plain
 * tools), the optional content type beside it under `<dir>/meta/<key>`. A put writes a temp
 * file under `<dir>/tmp`, fsyncs it, renames it into place and fsyncs the directory, so a reader
 * sees the old object or the new one and the object survives a crash once put() resolves.
 *
 * Keys are `/`-separated relative paths: no empty, `.` or `..` segment, no leading `/`, no
 * backslash or NUL, at most 1024 bytes. A key cannot also be the prefix "directory" of another
 * key (`a` and `a/b`): such a put fails with an error naming the key.
 *
 * putStream writes chunks as they arrive into the temp file (a failing or oversize source leaves
 * nothing: the temp file is removed); getStream reads from an open handle. Tested by the
 * object-store contract (core/test/objectStore.contract.ts, "ObjectStore contract: directory" in
 * core/test/objectStore.test.ts), core/test/sandbox.outputs.test.ts ("directory object store:
 * streamed puts and gets") and test/e2e/files/files.test.ts (uploads). Its key validation (./keys.ts) is shared
 * with the GridFS store (core/src/objects/gridfs/objectStore.ts).
 */
import { randomBytes } from 'node:crypto';
import * as fsp from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ObjectTooLargeError, type ObjectInfo, type ObjectStore } from './port.js';
import { InvalidObjectKeyError, validateObjectKey } from './keys.js';

async function fsyncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, 'r');
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

export function createDirectoryObjectStore(dir: string): ObjectStore {
  const dataRoot = join(dir, 'data');
  const metaRoot = join(dir, 'meta');
  const tmpRoot = join(dir, 'tmp');
  let ready: Promise<void> | null = null;
  const init = () =>
    (ready ??= (async () => {
      await fsp.mkdir(dataRoot, { recursive: true });
      await fsp.mkdir(metaRoot, { recursive: true });
      await fsp.mkdir(tmpRoot, { recursive: true });
      // temp files of puts interrupted by a crash
      for (const f of await fsp.readdir(tmpRoot)) await fsp.rm(join(tmpRoot, f), { force: true });
    })());

  /** Writes a temp file with `fill`, fsyncs it, renames it to `target`; the temp file never survives. */
  const atomicWrite = async (
    target: string,
    data: Uint8Array | ((h: fsp.FileHandle) => Promise<void>),
    key: string,
  ) => {
    const tmp = join(tmpRoot, `${randomBytes(8).toString('hex')}.tmp`);
    try {
      const h = await fsp.open(tmp, 'w', 0o600);
      try {
        if (typeof data === 'function') await data(h);
        else await h.writeFile(data);
        await h.sync();
      } finally {
        await h.close();
      }
      for (let attempt = 0; ; attempt++) {
        try {
          await fsp.mkdir(dirname(target), { recursive: true });
          await fsp.rename(tmp, target);
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          // a concurrent delete may remove the (then empty) parent between mkdir and rename
          if (code === 'ENOENT' && attempt < 3) continue;
          if (
            code === 'EISDIR' ||
            code === 'ENOTDIR' ||
            code === 'EEXIST' ||
            code === 'ENOTEMPTY'
          ) {
            throw new InvalidObjectKeyError(
              `object key '${key}' conflicts with another key (a key cannot also be a prefix directory of other keys)`,
            );
          }
          throw err;
        }
      }
      await fsyncDir(dirname(target));
    } finally {
      await fsp.rm(tmp, { force: true });
    }
  };

  /** Copies `source` into `h`, failing with ObjectTooLargeError past `maxBytes`. */
  const copyInto =
    (source: AsyncIterable<Uint8Array>, key: string, maxBytes: number, counted: { size: number }) =>
    async (h: fsp.FileHandle) => {
      for await (const chunk of source) {
        counted.size += chunk.byteLength;
        if (counted.size > maxBytes) throw new ObjectTooLargeError(key, maxBytes);
        await h.write(chunk);
      }
    };

  const removeEmptyParents = async (root: string, file: string) => {
    for (let d = dirname(file); d.length > root.length && d.startsWith(root); d = dirname(d)) {
      try {
        await fsp.rmdir(d);
      } catch {
        return;
      }
    }
  };

  const infoOf = async (key: string): Promise<ObjectInfo | null> => {
    try {
      const st = await fsp.stat(join(dataRoot, key));
      if (!st.isFile()) return null;
      let contentType: string | undefined;
      try {
        contentType = (await fsp.readFile(join(metaRoot, key), 'utf8')) || undefined;
      } catch {
        /* none */
      }
      return {
        key,
        size: st.size,
        modifiedAt: st.mtime.toISOString(),
        ...(contentType ? { contentType } : {}),
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return null;
      throw err;
    }
  };

  return {
    async put(key, data, options) {
      validateObjectKey(key);
      await init();
      if (options?.contentType)
        await atomicWrite(join(metaRoot, key), Buffer.from(options.contentType, 'utf8'), key);
      else await fsp.rm(join(metaRoot, key), { force: true }).catch(() => {});
      await atomicWrite(join(dataRoot, key), data, key);
    },
    async putStream(key, data, options) {
      validateObjectKey(key);
      await init();
      const counted = { size: 0 };
      const maxBytes = options?.maxBytes ?? Number.MAX_SAFE_INTEGER;
      // the bytes first: a source that fails leaves the old object and its type untouched
      await atomicWrite(join(dataRoot, key), copyInto(data, key, maxBytes, counted), key);
      if (options?.contentType)
        await atomicWrite(join(metaRoot, key), Buffer.from(options.contentType, 'utf8'), key);
      else await fsp.rm(join(metaRoot, key), { force: true }).catch(() => {});
      return { size: counted.size };
    },
    async getStream(key) {
      validateObjectKey(key);
      await init();
      let h: fsp.FileHandle;
      try {
        h = await fsp.open(join(dataRoot, key), 'r');
        if (!(await h.stat()).isFile()) {
          await h.close();
          return null;
        }
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') return null;
        throw err;
      }
      // an open handle: a concurrent put (rename) or delete does not cut the stream short
      return h.createReadStream({ autoClose: true });
    },
    async get(key) {
      validateObjectKey(key);
      await init();
      try {
        const buf = await fsp.readFile(join(dataRoot, key));
        return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR') return null;
        throw err;
      }
    },
    async head(key) {
      validateObjectKey(key);
      await init();
      return infoOf(key);
    },
    async delete(key) {
      validateObjectKey(key);
      await init();
      const file = join(dataRoot, key);
      try {
        await fsp.unlink(file);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'EISDIR' && code !== 'ENOTDIR') throw err;
      }
      await fsp.rm(join(metaRoot, key), { force: true }).catch(() => {});
      await removeEmptyParents(dataRoot, file);
      await removeEmptyParents(metaRoot, join(metaRoot, key));
    },
    async list(prefix) {
      if (
        prefix.includes('\0') ||
        prefix.startsWith('/') ||
        prefix.split('/').some((s) => s === '..' || s === '.')
      ) {
        throw new InvalidObjectKeyError(`invalid object key prefix '${prefix}'`);
      }
      await init();
      // start the walk at the deepest directory the prefix names completely
      const base = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '';
      const keys: string[] = [];
      const walk = async (rel: string): Promise<void> => {
        let entries;
        try {
          entries = await fsp.readdir(join(dataRoot, rel), { withFileTypes: true });
        } catch {
          return;
        }
        for (const e of entries) {
          const k = rel ? `${rel}/${e.name}` : e.name;
          if (e.isDirectory()) {
            if (k.startsWith(prefix) || prefix.startsWith(`${k}/`)) await walk(k);
          } else if (e.isFile() && k.startsWith(prefix)) keys.push(k);
        }
      };
      await walk(base);
      keys.sort();
      const out: ObjectInfo[] = [];
      for (const k of keys) {
        const info = await infoOf(k);
        if (info) out.push(info);
      }
      return out;
    },
  };
}
