import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { MongoClient } from 'mongodb';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FileService, ObjectStore } from '@agentfleet/core';
import type { TestPlatform } from '../../kit/harness.js';

import {
  http,
  json,
  MAX_FILE_BYTES,
  multipart,
  tenantWithSession,
  upload,
  useFilesPlatform,
  type Part,
} from './filesHelpers.js';

const platform = useFilesPlatform();
let t: TestPlatform;
let url: string;
let objects: ObjectStore;
let files: FileService;
beforeAll(() => {
  ({ t, url, objects, files } = platform());
});

describe('uploads stream into the object store with the MAX_FILE_BYTES cap', () => {
  /** Half-written objects: the directory store's temp files, or GridFS files no key points at (fleet mode). */
  const tmpFiles = async () => {
    const p = t.server.platform;
    if (p.config.objectStore === 'dir')
      return (await readdir(join(p.config.objectStoreDir, 'tmp')).catch(() => [])).length;
    const mongo = p.store as unknown as {
      connection: { getClient(): MongoClient };
      dbName: string;
    };
    const db = mongo.connection.getClient().db(mongo.dbName);
    const referenced = new Set(
      (await db.collection('objects.keys').find({}).toArray()).map((k) => String(k.fileId)),
    );
    const files = await db
      .collection('objects.files')
      .find({}, { projection: { _id: 1 } })
      .toArray();
    return files.filter((f) => !referenced.has(String(f._id))).length;
  };

  it('a file of exactly the cap is stored; one byte more, or many MiB more, is 400 naming file and stores nothing', async () => {
    const a = await tenantWithSession('files-cap');
    const exact = await json(
      await upload(a.apiKey, [
        { name: 'file', filename: 'exact.bin', data: randomBytes(MAX_FILE_BYTES) },
      ]),
    );
    expect(exact.status).toBe(200);
    expect(exact.body.size_bytes).toBe(MAX_FILE_BYTES);
    const dl = await a.files.beta.files.download(exact.body.id);
    expect(Buffer.from(await dl.arrayBuffer()).length).toBe(MAX_FILE_BYTES);
    for (const size of [MAX_FILE_BYTES + 1, 8 * 1024 * 1024]) {
      const r = await json(
        await upload(a.apiKey, [
          { name: 'file', filename: 'big.bin', data: Buffer.alloc(size, 7) },
        ]),
      );
      expect(r.status, String(size)).toBe(400);
      expect(r.body.error.details, String(size)).toEqual({ field: 'file' });
      expect(r.body.error.message, String(size)).toContain(`${MAX_FILE_BYTES}-byte limit`);
    }
    expect((await objects.list(`files/${a.tenantId}/`)).map((o) => o.size)).toEqual([
      MAX_FILE_BYTES,
    ]);
    expect(await tmpFiles()).toBe(0);
  });

  it('a body cut off in the middle of the file is a 4xx and leaves nothing half-written', async () => {
    const a = await tenantWithSession('files-cut');
    const m = multipart([{ name: 'file', filename: 'cut.bin', data: randomBytes(200_000) }]);
    const cut = m.body.subarray(0, 150_000);
    const r = await json(
      await http('/v1/files', a.apiKey, {
        method: 'POST',
        body: cut,
        headers: { 'content-type': m.contentType },
      }),
    );
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.body.error.type).toBe('invalid_request');
    expect(await objects.list(`files/${a.tenantId}/`)).toEqual([]);
    expect(await tmpFiles()).toBe(0);
  });

  it('bytes already streamed are removed when a field after the file is refused', async () => {
    const a = await tenantWithSession('files-late-field');
    for (const [parts, field] of [
      [
        [
          { name: 'file', filename: 'a.bin', data: randomBytes(100_000) },
          { name: 'session_id', data: 'sess_nope' },
        ],
        'session_id',
      ],
      [
        [
          { name: 'file', filename: 'a.bin', data: randomBytes(100_000) },
          { name: 'expires_in_seconds', data: 'soon' },
        ],
        'expires_in_seconds',
      ],
      [
        [
          { name: 'file', filename: 'a.bin', data: randomBytes(100_000) },
          { name: 'file', filename: 'b.bin', data: 'b' },
        ],
        'file',
      ],
    ] as Array<[Part[], string]>) {
      const r = await json(await upload(a.apiKey, parts));
      expect(r.status, field).toBe(400);
      expect(r.body.error.details, field).toEqual({ field });
    }
    expect(await objects.list(`files/${a.tenantId}/`)).toEqual([]);
    expect((await a.files.beta.files.list()).data).toEqual([]);
    expect(await tmpFiles()).toBe(0);
  });
});
