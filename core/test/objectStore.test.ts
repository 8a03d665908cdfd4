/**
 * The object-store contract (objectStore.contract.ts) against every adapter: the directory store
 * always; GridFS against a real server when MONGODB_URL is set (FerretDB v1 in CI: `npm run
 * infra:up`; skipped without it, and CI fails on skipped real-adapter tests). Every GridFS test
 * uses its own bucket in a database of its own run, dropped at the end.
 *
 * Selection: OBJECT_STORE defaults to gridfs when MongoDB is configured, dir otherwise; a bad
 * value, or gridfs without MongoDB, is a config problem naming OBJECT_STORE.
 *
 * GridFS-only cases: bytes ending short of the object's size (its chunks deleted under a reader)
 * are an error for get and getStream (the driver would end quietly); files left by a put that died before switching its key are removed by the next store
 * that opens (after the grace period), and a file still being written is not.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import mongoose from 'mongoose';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { createDirectoryObjectStore } from '../src/objects/directory.js';
import { openMongoStore, type MongoStore } from '../src/store/mongo/documentStore.js';
import { createGridFsObjectStore } from '../src/objects/gridfs/objectStore.js';
import { objectStoreContract } from './objectStore.contract.js';

const url = process.env.MONGODB_URL;
const runId = `${Date.now().toString(36)}_${process.pid}`;
const dbName = `af_objects_${runId}`;
let bucketSeq = 0;

objectStoreContract('directory', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'objstore-contract-'));
  return {
    store: createDirectoryObjectStore(dir),
    reopen: async () => createDirectoryObjectStore(dir),
    leftovers: async () => (await readdir(join(dir, 'tmp')).catch(() => [])).length,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
});

/** Stored GridFS files no key points at, plus chunks of no file. */
async function gridFsLeftovers(db: mongoose.mongo.Db, bucket: string): Promise<number> {
  const fileIds = (
    await db
      .collection(`${bucket}.files`)
      .find({}, { projection: { _id: 1 } })
      .toArray()
  ).map((f) => String(f._id));
  const referenced = new Set(
    (await db.collection(`${bucket}.keys`).find({}).toArray()).map((k) => String(k.fileId)),
  );
  const files = new Set(fileIds);
  const chunkOwners = (
    await db
      .collection(`${bucket}.chunks`)
      .find({}, { projection: { files_id: 1 } })
      .toArray()
  ).map((c) => String(c.files_id));
  return (
    fileIds.filter((id) => !referenced.has(id)).length +
    chunkOwners.filter((id) => !files.has(id)).length
  );
}

describe.skipIf(!url)('gridfs object store', () => {
  const open: MongoStore[] = [];
  const connect = async () => {
    const s = await openMongoStore({ url: url!, dbName });
    open.push(s);
    return s;
  };
  const dbOf = (s: MongoStore) => s.connection.getClient().db(dbName);

  afterAll(async () => {
    const s = await openMongoStore({ url: url!, dbName });
    try {
      await dbOf(s).dropDatabase();
    } finally {
      await s.close();
      for (const o of open) await o.close().catch(() => {});
    }
  });

  objectStoreContract('gridfs', async () => {
    const bucketName = `b${bucketSeq++}`;
    let conn = await connect();
    return {
      store: createGridFsObjectStore({ db: dbOf(conn), bucketName }),
      reopen: async () => {
        await conn.close();
        conn = await connect();
        return createGridFsObjectStore({ db: dbOf(conn), bucketName });
      },
      leftovers: () => gridFsLeftovers(dbOf(conn), bucketName),
      cleanup: () => conn.close(),
    };
  });

  it('bytes that end short of the size (trailing chunks deleted under a reader) are an error, never a short read', async () => {
    const conn = await connect();
    const db = dbOf(conn);
    const bucketName = `short${bucketSeq++}`;
    const store = createGridFsObjectStore({ db, bucketName, chunkSizeBytes: 1024 });
    await store.put('t/long', Buffer.alloc(300 * 1024, 9));
    // what a reader past the cursor's first batch meets when the file is deleted under it
    const { fileId } = (await db
      .collection(`${bucketName}.keys`)
      .findOne({ _id: 't/long' as never }))!;
    expect(
      (
        await db
          .collection(`${bucketName}.chunks`)
          .deleteMany({ files_id: fileId, n: { $gte: 150 } })
      ).deletedCount,
    ).toBe(150);
    await expect(store.get('t/long')).rejects.toThrow(
      /ChunkIsMissing: object 't\/long' ended after 153600 of 307200 bytes/,
    );
    const stream = (await store.getStream('t/long'))!;
    let got = 0;
    await expect(
      (async () => {
        for await (const c of stream) got += (c as Buffer).length;
      })(),
    ).rejects.toThrow(/ChunkIsMissing/);
    expect(got).toBe(150 * 1024);
  });

  it('removes files of a put that died before switching its key, once past the grace period', async () => {
    const conn = await connect();
    const db = dbOf(conn);
    const bucketName = `orphans${bucketSeq++}`;
    const store = createGridFsObjectStore({ db, bucketName });
    await store.put('t/kept', Buffer.from('kept'));
    // what a crashed put leaves: a complete GridFS file that no key points at
    const raw = new mongoose.mongo.GridFSBucket(db, { bucketName });
    await pipeline(
      Readable.from([Buffer.alloc(300 * 1024, 7)]),
      raw.openUploadStream('t/crashed', { metadata: { key: 't/crashed' } }),
    );
    expect(await gridFsLeftovers(db, bucketName)).toBe(1);
    // within the grace period (a put may still be running elsewhere): left alone
    await createGridFsObjectStore({ db, bucketName }).list('t/');
    expect(await gridFsLeftovers(db, bucketName)).toBe(1);
    // past it: removed on open, the referenced object untouched
    const later = createGridFsObjectStore({ db, bucketName, orphanGraceMs: 0 });
    expect((await later.list('t/')).map((o) => o.key)).toEqual(['t/kept']);
    expect(await gridFsLeftovers(db, bucketName)).toBe(0);
    expect(await db.collection(`${bucketName}.chunks`).countDocuments({})).toBe(1);
    expect(Buffer.from((await later.get('t/kept'))!).toString()).toBe('kept');
  });
});

describe('object store selection (OBJECT_STORE)', () => {
  const base = {
    DATA_DIR: join(tmpdir(), `objstore-config-${runId}`),
    API_KEY: 'op-key',
    PLATFORM_ROOT_SECRET: 'x'.repeat(40),
  };
  const mongo = { MONGODB_URL: 'mongodb://127.0.0.1:1/agentfleet' };
  const problemsOf = (env: Record<string, string>) => {
    try {
      loadConfig('all', { ...base, ...env });
      return [];
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
  };
  afterAll(() => rm(base.DATA_DIR, { recursive: true, force: true }));

  it('gridfs when MongoDB is configured, the directory otherwise; an explicit choice wins', () => {
    expect(loadConfig('all', { ...base }).objectStore).toBe('dir');
    expect(loadConfig('all', { ...base, ...mongo }).objectStore).toBe('gridfs');
    expect(loadConfig('all', { ...base, ...mongo, OBJECT_STORE: 'dir' }).objectStore).toBe('dir');
    expect(
      loadConfig('all', { ...base, STORE_BACKENDS: JSON.stringify({ default: mongo.MONGODB_URL }) })
        .objectStore,
    ).toBe('gridfs');
  });

  it('a bad OBJECT_STORE, or gridfs without MongoDB, is a config problem naming it', () => {
    expect(problemsOf({ OBJECT_STORE: 's3' })).toEqual(["OBJECT_STORE must be 'dir' or 'gridfs'"]);
    expect(problemsOf({ OBJECT_STORE: 'gridfs' })).toEqual([
      'OBJECT_STORE=gridfs needs MongoDB (MONGODB_URL)',
    ]);
    expect(problemsOf({ ...mongo, OBJECT_STORE: 'gridfs' })).toEqual([]);
  });
});
