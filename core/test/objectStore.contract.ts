/**
 * Semantics every ObjectStore adapter must pass (core/src/objects/port.ts): the directory
 * store and GridFS, through core/test/objectStore.test.ts.
 *
 * `open` is called before each test and returns a store; `reopen` closes it and returns a new
 * store over the same data (durability); `leftovers` counts stored bytes no key refers to
 * (directory: temp files; GridFS: files and chunks no key points at), so a failed put can be
 * shown to leave nothing behind; `cleanup` closes and removes what is open. Every test uses
 * its own key prefix, so the suite can run against a shared store.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ObjectTooLargeError, type ObjectStore } from '../src/objects/port.js';

export interface ObjectStoreHandle {
  store: ObjectStore;
  reopen: () => Promise<ObjectStore>;
  leftovers: () => Promise<number>;
  cleanup: () => Promise<void>;
}

let seq = 0;
const uniquePrefix = () => `t_${Date.now().toString(36)}_${process.pid}_${seq++}/`;
const KIB = 1024;

async function* chunksOf(data: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let i = 0; i < data.length; i += size) yield data.subarray(i, i + size);
}

async function* failingAfter(data: Uint8Array): AsyncIterable<Uint8Array> {
  yield data;
  throw new Error('source broke');
}

async function readStream(s: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(Buffer.from(c as Uint8Array));
  return Buffer.concat(parts);
}

export function objectStoreContract(name: string, open: () => Promise<ObjectStoreHandle>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let h: ObjectStoreHandle;
    let store: ObjectStore;
    let p: string;
    beforeEach(async () => {
      h = await open();
      store = h.store;
      p = uniquePrefix();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('put then get, head and getStream return the bytes, size and content type', async () => {
      const data = randomBytes(1000);
      const before = Date.now();
      await store.put(`${p}a.bin`, data, { contentType: 'application/x-test' });
      expect(Buffer.from((await store.get(`${p}a.bin`))!).equals(data)).toBe(true);
      const info = await store.head(`${p}a.bin`);
      expect(info).toMatchObject({
        key: `${p}a.bin`,
        size: 1000,
        contentType: 'application/x-test',
      });
      expect(Date.parse(info!.modifiedAt)).toBeGreaterThanOrEqual(before - 2000);
      expect((await readStream((await store.getStream(`${p}a.bin`))!)).equals(data)).toBe(true);
    });

    it('an empty object round-trips; a missing key is null for get, getStream and head', async () => {
      await store.put(`${p}empty`, new Uint8Array(0));
      expect((await store.get(`${p}empty`))!.byteLength).toBe(0);
      expect(await store.head(`${p}empty`)).toMatchObject({ size: 0 });
      expect(await store.head(`${p}empty`)).not.toHaveProperty('contentType');
      expect(await store.get(`${p}missing`)).toBeNull();
      expect(await store.getStream(`${p}missing`)).toBeNull();
      expect(await store.head(`${p}missing`)).toBeNull();
    });

    it('takes plain Uint8Arrays as well as Buffers, in put and putStream', async () => {
      const plain = new Uint8Array(300 * KIB).map((_, i) => i % 251);
      await store.put(`${p}u8`, plain);
      expect(Buffer.from((await store.get(`${p}u8`))!).equals(Buffer.from(plain))).toBe(true);
      async function* plainChunks() {
        for (let i = 0; i < plain.length; i += 100 * KIB)
          yield new Uint8Array(plain.slice(i, i + 100 * KIB));
      }
      expect(await store.putStream(`${p}u8s`, plainChunks())).toEqual({ size: plain.length });
      expect(Buffer.from((await store.get(`${p}u8s`))!).equals(Buffer.from(plain))).toBe(true);
    });

    it('an overwrite replaces bytes and content type (no type given: none kept)', async () => {
      await store.put(`${p}k`, Buffer.from('old'), { contentType: 'text/plain' });
      await store.put(`${p}k`, Buffer.from('newer'), { contentType: 'application/json' });
      expect(Buffer.from((await store.get(`${p}k`))!).toString()).toBe('newer');
      expect(await store.head(`${p}k`)).toMatchObject({ size: 5, contentType: 'application/json' });
      await store.put(`${p}k`, Buffer.from('plain'));
      expect(await store.head(`${p}k`)).not.toHaveProperty('contentType');
      expect(await store.list(p)).toHaveLength(1);
      expect(await h.leftovers()).toBe(0);
    });

    it('putStream stores a multi-chunk source and reports its size; getStream reads it back', async () => {
      const data = randomBytes(700 * KIB + 13); // several GridFS chunks (255 KiB)
      const { size } = await store.putStream(`${p}big.bin`, chunksOf(data, 64 * KIB), {
        contentType: 'application/octet-stream',
      });
      expect(size).toBe(data.length);
      expect(await store.head(`${p}big.bin`)).toMatchObject({
        size: data.length,
        contentType: 'application/octet-stream',
      });
      expect((await readStream((await store.getStream(`${p}big.bin`))!)).equals(data)).toBe(true);
      expect(Buffer.from((await store.get(`${p}big.bin`))!).equals(data)).toBe(true);
    });

    it('a failing source stores nothing and keeps the old object and its type', async () => {
      await store.put(`${p}keep`, Buffer.from('original'), { contentType: 'text/plain' });
      await expect(
        store.putStream(`${p}keep`, failingAfter(randomBytes(300 * KIB)), {
          contentType: 'image/png',
        }),
      ).rejects.toThrow('source broke');
      await expect(
        store.putStream(`${p}fresh`, failingAfter(randomBytes(300 * KIB))),
      ).rejects.toThrow('source broke');
      expect(Buffer.from((await store.get(`${p}keep`))!).toString()).toBe('original');
      expect(await store.head(`${p}keep`)).toMatchObject({ size: 8, contentType: 'text/plain' });
      expect(await store.head(`${p}fresh`)).toBeNull();
      expect(await h.leftovers()).toBe(0);
    });

    it('a source longer than maxBytes fails with ObjectTooLargeError and stores nothing; exactly maxBytes is stored', async () => {
      await store.put(`${p}cap`, Buffer.from('before'));
      const err = await store
        .putStream(`${p}cap`, chunksOf(randomBytes(600 * KIB), 64 * KIB), { maxBytes: 512 * KIB })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ObjectTooLargeError);
      expect(err).toMatchObject({ key: `${p}cap`, maxBytes: 512 * KIB });
      expect(Buffer.from((await store.get(`${p}cap`))!).toString()).toBe('before');
      expect(await h.leftovers()).toBe(0);
      const exact = randomBytes(512 * KIB);
      expect(
        await store.putStream(`${p}cap`, chunksOf(exact, 100 * KIB), { maxBytes: 512 * KIB }),
      ).toEqual({ size: 512 * KIB });
      expect(Buffer.from((await store.get(`${p}cap`))!).equals(exact)).toBe(true);
    });

    it('delete removes the object; deleting a missing key is a no-op', async () => {
      await store.put(`${p}d/one`, Buffer.from('1'));
      await store.put(`${p}d/two`, Buffer.from('2'));
      await store.delete(`${p}d/one`);
      await store.delete(`${p}d/one`);
      await store.delete(`${p}never`);
      expect(await store.get(`${p}d/one`)).toBeNull();
      expect(await store.head(`${p}d/one`)).toBeNull();
      expect((await store.list(p)).map((o) => o.key)).toEqual([`${p}d/two`]);
      expect(await h.leftovers()).toBe(0);
    });

    it('list(prefix) returns exactly the keys starting with the prefix, in key order, with sizes', async () => {
      const keys = [`${p}b/2`, `${p}a`, `${p}b/10`, `${p}bc/x/y`, `${p}b/1`, `${p}c`];
      for (const [i, k] of keys.entries()) await store.put(k, new Uint8Array(i + 1));
      expect((await store.list(p)).map((o) => o.key)).toEqual([...keys].sort());
      expect((await store.list(`${p}b/`)).map((o) => o.key)).toEqual([
        `${p}b/1`,
        `${p}b/10`,
        `${p}b/2`,
      ]);
      expect((await store.list(`${p}b`)).map((o) => o.key)).toEqual([
        `${p}b/1`,
        `${p}b/10`,
        `${p}b/2`,
        `${p}bc/x/y`,
      ]);
      expect((await store.list(`${p}b/1`)).map((o) => [o.key, o.size])).toEqual([
        [`${p}b/1`, 5],
        [`${p}b/10`, 3],
      ]);
      expect(await store.list(`${p}zzz`)).toEqual([]);
    });

    it('refuses keys that are not relative paths, naming the key', async () => {
      for (const bad of ['', '/abs', `${p}../up`, `${p}a//b`, `${p}a\\b`, `${p}./x`]) {
        await expect(store.put(bad, Buffer.from('x')), JSON.stringify(bad)).rejects.toThrow(
          /invalid object key/,
        );
        await expect(store.get(bad)).rejects.toThrow(/invalid object key/);
      }
      await expect(store.list('../')).rejects.toThrow(/invalid object key prefix/);
    });

    it('readers racing overwrites see a whole old or new version, never a part', async () => {
      const versions = [0, 1, 2, 3].map((i) => Buffer.alloc(300 * KIB + i, i + 1)); // multi-chunk each
      await store.put(`${p}race`, versions[0]!);
      const seen = new Set<number>();
      let writing = true;
      const writer = (async () => {
        for (let round = 0; round < 6; round++)
          for (const v of versions) await store.put(`${p}race`, v);
        writing = false;
      })();
      const reader = async () => {
        while (writing) {
          const got = Buffer.from((await store.get(`${p}race`))!);
          const which = versions.findIndex((v) => v.equals(got));
          expect(which, `read ${got.length} bytes that match no version`).toBeGreaterThanOrEqual(0);
          seen.add(which);
          const streamed = await readStream((await store.getStream(`${p}race`))!).catch(() => null);
          // a stream may fail if its version is replaced mid-read, but never ends short
          if (streamed) expect(versions.some((v) => v.equals(streamed))).toBe(true);
        }
      };
      await Promise.all([writer, reader(), reader()]);
      expect(seen.size).toBeGreaterThan(0);
      expect(Buffer.from((await store.get(`${p}race`))!).equals(versions[3]!)).toBe(true);
      expect(await h.leftovers()).toBe(0);
    });

    it('concurrent puts of one key leave one whole winner and nothing orphaned', async () => {
      const versions = [0, 1, 2, 3, 4].map((i) => Buffer.alloc(260 * KIB + i, 0x41 + i));
      await Promise.all(versions.map((v) => store.put(`${p}many`, v)));
      const got = Buffer.from((await store.get(`${p}many`))!);
      expect(versions.some((v) => v.equals(got))).toBe(true);
      expect(await store.head(`${p}many`)).toMatchObject({ size: got.length });
      expect(await h.leftovers()).toBe(0);
    });

    it('objects survive reopening the store (durable once put resolves)', async () => {
      await store.put(`${p}durable`, Buffer.from('kept'), { contentType: 'text/plain' });
      await store.putStream(`${p}durable2`, chunksOf(randomBytes(300 * KIB), 50 * KIB));
      store = await h.reopen();
      expect(Buffer.from((await store.get(`${p}durable`))!).toString()).toBe('kept');
      expect(await store.head(`${p}durable`)).toMatchObject({ contentType: 'text/plain' });
      expect(await store.head(`${p}durable2`)).toMatchObject({ size: 300 * KIB });
    });
  });
}
