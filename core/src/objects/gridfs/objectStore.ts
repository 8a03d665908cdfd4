/**
 * GridFS object store (fleet mode: the same MongoDB as the document store, so processes on
 * different machines share snapshots, outputs and files). Works on MongoDB 5–8 and FerretDB v1
 * (no multi-document transactions are used).
 *
 * Layout, for bucket `<b>` (default `objects`):
 *   <b>.files / <b>.chunks   the GridFS bucket; every put writes a new file under a fresh id
 *                            (metadata.key names the key it was written for)
 *   <b>.keys                 one document per key: { _id: key, fileId, size, contentType?, modifiedAt }
 *
 * Guarantees (proved by core/test/objectStore.contract.ts through core/test/objectStore.test.ts,
 * "ObjectStore contract: gridfs", and the GridFS-only cases there):
 * - put/putStream are atomic: the bytes go to a new GridFS file first; only when it is complete
 *   is the key switched to it with one single-document update (findOneAndUpdate, upsert), and
 *   then the previous file is deleted. A reader sees the old object or the new one, never a
 *   part. A source that fails, or exceeds `maxBytes` (ObjectTooLargeError), leaves the old
 *   object in place and none of its chunks behind.
 * - Durable once a put resolves: every write uses write concern { w: 'majority', j: true }.
 * - get() that races an overwrite (its file deleted between reading the key and the bytes)
 *   reads the key again. A getStream() already flowing when its object is overwritten or
 *   deleted fails with an error; it never ends short silently (the driver's stream would: the
 *   byte count is checked against the key's size; objectStore.test.ts "bytes that end short of
 *   the size ... are an error").
 * - list(prefix) returns keys in key order (JavaScript string order, like the directory store).
 * - Keys are validated like the directory store's (validateObjectKey); unlike a directory, a
 *   key may also be a prefix "directory" of another key.
 * - Files left by a process that died between writing and switching (never referenced by a
 *   key) are removed when a store opens, once older than `orphanGraceMs` (default 1 hour, so a
 *   put still in progress on another process is never touched).
 */
import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import mongoose from 'mongoose';
import { ObjectTooLargeError, type ObjectInfo, type ObjectStore } from '../port.js';
import { InvalidObjectKeyError, validateObjectKey } from '../keys.js';

type Db = mongoose.mongo.Db;
type ObjectId = mongoose.mongo.ObjectId;

interface KeyDoc {
  _id: string;
  fileId: ObjectId;
  size: number;
  contentType?: string;
  modifiedAt: string;
}

export interface GridFsObjectStoreOptions {
  /** The database holding the bucket (e.g. the control database of the document store). */
  db: Db;
  /** Bucket name; default `objects`. */
  bucketName?: string;
  /** Unreferenced files older than this are removed when the store opens; default 1 hour. */
  orphanGraceMs?: number;
  /** GridFS chunk size; default the driver's 255 KiB. */
  chunkSizeBytes?: number;
}

const WRITE_CONCERN = { w: 'majority', j: true } as const;
const READ_RETRIES = 5;

/** An error of the driver meaning "this file (or one of its chunks) is gone". */
function isVanishedFile(err: unknown): boolean {
  const msg = err instanceof Error ? err.message : '';
  return /FileNotFound|file not found|ChunkIsMissing|ExpectedChunk|chunk.*missing|missing.*chunk/i.test(
    msg,
  );
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function createGridFsObjectStore(opts: GridFsObjectStoreOptions): ObjectStore {
  const { db } = opts;
  const bucketName = opts.bucketName ?? 'objects';
  const graceMs = opts.orphanGraceMs ?? 60 * 60 * 1000;
  const bucket = new mongoose.mongo.GridFSBucket(db, {
    bucketName,
    writeConcern: WRITE_CONCERN,
    ...(opts.chunkSizeBytes ? { chunkSizeBytes: opts.chunkSizeBytes } : {}),
  });
  const keys = db.collection<KeyDoc>(`${bucketName}.keys`);
  const files = db.collection<{ _id: ObjectId; uploadDate: Date; metadata?: { key?: string } }>(
    `${bucketName}.files`,
  );
  const chunks = db.collection<{ files_id: ObjectId }>(`${bucketName}.chunks`);

  /** Removes a file's document and chunks; a file already gone is fine. */
  const removeFile = async (id: ObjectId) => {
    await files.deleteOne({ _id: id }, { writeConcern: WRITE_CONCERN });
    await chunks.deleteMany({ files_id: id }, { writeConcern: WRITE_CONCERN });
  };

  const sweepOrphans = async () => {
    const cutoff = new Date(Date.now() - graceMs);
    const old = await files
      .find({ uploadDate: { $lt: cutoff } }, { projection: { _id: 1 } })
      .limit(1000)
      .toArray();
    if (old.length === 0) return;
    const referenced = new Set(
      (
        await keys
          .find({ fileId: { $in: old.map((f) => f._id) } }, { projection: { fileId: 1 } })
          .toArray()
      ).map((k) => k.fileId.toHexString()),
    );
    for (const f of old) if (!referenced.has(f._id.toHexString())) await removeFile(f._id);
  };

  let ready: Promise<void> | null = null;
  const init = () =>
    (ready ??= sweepOrphans().catch((err) => {
      ready = null;
      throw err;
    }));

  const infoOf = (d: KeyDoc): ObjectInfo => ({
    key: d._id,
    size: d.size,
    modifiedAt: d.modifiedAt,
    ...(d.contentType ? { contentType: d.contentType } : {}),
  });

  /**
   * Writes `source` to a new file; on any failure nothing of it remains. Each chunk's write is
   * awaited (GridFS inserts a chunk document when its buffer fills), so when the source fails no
   * insert is in flight and removing the file's chunks leaves none behind.
   */
  const writeFile = async (
    key: string,
    source: AsyncIterable<Uint8Array>,
    maxBytes: number,
  ): Promise<{ id: ObjectId; size: number }> => {
    const id = new mongoose.mongo.ObjectId();
    const upload = bucket.openUploadStreamWithId(id, key, { metadata: { key } });
    upload.on('error', () => {}); // every failure is seen through the write callbacks and finished()
    const write = (chunk: Uint8Array) =>
      new Promise<void>((res, rej) =>
        upload.write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength), (err) =>
          err ? rej(err) : res(),
        ),
      );
    let size = 0;
    try {
      for await (const chunk of source) {
        size += chunk.byteLength;
        if (size > maxBytes) throw new ObjectTooLargeError(key, maxBytes);
        await write(chunk);
      }
      upload.end();
      await finished(upload);
    } catch (err) {
      upload.destroy();
      await removeFile(id).catch(() => {});
      throw err;
    }
    return { id, size };
  };

  /** Points `key` at the new file, then deletes the file it pointed at before. */
  const switchKey = async (
    key: string,
    id: ObjectId,
    size: number,
    contentType: string | undefined,
  ) => {
    const set: Partial<KeyDoc> = { fileId: id, size, modifiedAt: new Date().toISOString() };
    let before: KeyDoc | null;
    try {
      before = await keys.findOneAndUpdate(
        { _id: key },
        contentType
          ? { $set: { ...set, contentType } }
          : { $set: set, $unset: { contentType: '' } },
        { upsert: true, returnDocument: 'before', writeConcern: WRITE_CONCERN },
      );
    } catch (err) {
      await removeFile(id).catch(() => {});
      throw err;
    }
    if (before && !before.fileId.equals(id)) await removeFile(before.fileId);
  };

  const putStream: ObjectStore['putStream'] = async (key, data, options) => {
    validateObjectKey(key);
    await init();
    const { id, size } = await writeFile(key, data, options?.maxBytes ?? Number.MAX_SAFE_INTEGER);
    await switchKey(key, id, size, options?.contentType);
    return { size };
  };

  /**
   * The driver's download stream ends quietly when trailing chunks are gone (a file deleted while
   * being read, past the cursor's first batch): a read that ends short of the size is an error.
   */
  const shortRead = (key: string, got: number, size: number) =>
    new Error(
      `ChunkIsMissing: object '${key}' ended after ${got} of ${size} bytes (replaced or deleted while read)`,
    );

  const readAll = async (doc: KeyDoc): Promise<Uint8Array> => {
    const parts: Buffer[] = [];
    for await (const c of bucket.openDownloadStream(doc.fileId)) parts.push(c as Buffer);
    const buf = Buffer.concat(parts);
    if (buf.length !== doc.size) throw shortRead(doc._id, buf.length, doc.size);
    return new Uint8Array(buf.buffer, buf.byteOffset, buf.length);
  };

  return {
    async put(key, data, options) {
      await putStream(
        key,
        (async function* () {
          yield data;
        })(),
        options,
      );
    },
    putStream,
    async get(key) {
      validateObjectKey(key);
      await init();
      for (let attempt = 0; ; attempt++) {
        const doc = await keys.findOne({ _id: key });
        if (!doc) return null;
        try {
          return await readAll(doc);
        } catch (err) {
          // overwritten or deleted while reading: read the key again
          if (!isVanishedFile(err) || attempt >= READ_RETRIES) throw err;
        }
      }
    },
    async getStream(key) {
      validateObjectKey(key);
      await init();
      for (let attempt = 0; ; attempt++) {
        const doc = await keys.findOne({ _id: key });
        if (!doc) return null;
        // the first chunk is read before returning, so a file replaced in between is retried here
        const download = bucket.openDownloadStream(doc.fileId);
        const iterator = download[Symbol.asyncIterator]();
        let first: IteratorResult<Buffer>;
        try {
          first = await iterator.next();
        } catch (err) {
          download.destroy();
          if (!isVanishedFile(err) || attempt >= READ_RETRIES) throw err;
          continue;
        }
        async function* bytes() {
          let got = 0;
          try {
            if (!first.done) {
              got += first.value.length;
              yield first.value;
              for (let r = await iterator.next(); !r.done; r = await iterator.next()) {
                got += r.value.length;
                yield r.value;
              }
            }
            if (got !== doc!.size) throw shortRead(key, got, doc!.size);
          } finally {
            download.destroy();
          }
        }
        return Readable.from(bytes(), { objectMode: false });
      }
    },
    async head(key) {
      validateObjectKey(key);
      await init();
      const doc = await keys.findOne({ _id: key });
      return doc ? infoOf(doc) : null;
    },
    async delete(key) {
      validateObjectKey(key);
      await init();
      const before = await keys.findOneAndDelete({ _id: key }, { writeConcern: WRITE_CONCERN });
      if (before) await removeFile(before.fileId);
    },
    async list(prefix) {
      if (
        typeof prefix !== 'string' ||
        prefix.includes('\0') ||
        prefix.startsWith('/') ||
        prefix.split('/').some((s) => s === '..' || s === '.')
      ) {
        throw new InvalidObjectKeyError(`invalid object key prefix '${prefix}'`);
      }
      await init();
      const filter = prefix ? { _id: { $regex: `^${escapeRegex(prefix)}` } } : {};
      const docs = await keys.find(filter).toArray();
      return docs
        .filter((d) => d._id.startsWith(prefix))
        .sort((a, b) => (a._id < b._id ? -1 : a._id > b._id ? 1 : 0))
        .map(infoOf);
    },
  };
}
