/**
 * Fleet mode keeps snapshots, outputs and files in GridFS on the shared MongoDB, so processes
 * on different machines share them: two platforms with separate data dirs (two "machines")
 * sharing only MongoDB (and, in CI, Kafka and Redis) see each other's uploads. Runs when
 * MONGODB_URL is set (CI: `npm run infra:up`); the adapter itself is proved by
 * core/test/objectStore.test.ts ("ObjectStore contract: gridfs").
 *
 * Placement: with PER_TENANT_DB_ENABLED a tenant's objects live in its own database, beside its
 * documents (core/src/objects/gridfs/tenantObjects.ts), never in the control database.
 */
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toFile } from '@anthropic-ai/sdk';
import { REAL, realAdapterEnv, startPlatform, type TestPlatform } from '../../kit/harness.js';

const mongoUrl = process.env.MONGODB_URL;

/** Files under a directory store's data root (none, when objects live in GridFS). */
async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) {
      if (e.isDirectory()) await walk(join(d, e.name));
      else out.push(join(d, e.name));
    }
  };
  await walk(dir);
  return out;
}

describe.skipIf(!mongoUrl)(
  'fleet object store: GridFS shared by platforms on different machines',
  () => {
    const ns = `ob${Math.random().toString(36).slice(2, 8)}`;
    let a: TestPlatform;
    let b: TestPlatform;
    let mongo: MongoClient;
    let dbUrl: string;
    beforeAll(async () => {
      const u = new URL(mongoUrl!.replace(/^mongodb:/, 'http:'));
      u.pathname = `/${ns}`;
      dbUrl = u.toString().replace(/^http:/, 'mongodb:');
      const env = REAL ? realAdapterEnv(ns) : { MONGODB_URL: dbUrl, FLEET_NAMESPACE: ns };
      a = await startPlatform({ env });
      b = await startPlatform({ env });
      mongo = new MongoClient(mongoUrl!);
      await mongo.connect();
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await mongo
        ?.db(ns)
        .dropDatabase()
        .catch(() => {});
      await mongo?.close();
    });

    it('a file uploaded through one platform downloads through the other; a delete there is seen here', async () => {
      expect(a.server.platform.config.objectStore).toBe('gridfs');
      const tenant = await a.newTenant('shared-objects');
      const onB = b.clientFor(tenant.apiKey);
      const data = randomBytes(600 * 1024 + 5); // several GridFS chunks
      const meta = await tenant.client.beta.files.upload({
        file: await toFile(data, 'shared.bin', { type: 'application/octet-stream' }),
      });
      expect(meta.size_bytes).toBe(data.length);

      expect(await onB.beta.files.retrieveMetadata(meta.id)).toEqual(meta);
      const dl = await onB.beta.files.download(meta.id);
      expect(Buffer.from(await dl.arrayBuffer()).equals(data)).toBe(true);
      // the bytes are in MongoDB, not in either machine's directory
      expect(await filesUnder(a.server.platform.config.objectStoreDir)).toEqual([]);
      expect(await filesUnder(b.server.platform.config.objectStoreDir)).toEqual([]);
      const keys = await mongo.db(ns).collection('objects.keys').find({}).toArray();
      expect(keys.map((k) => k._id)).toEqual([expect.stringContaining(tenant.tenantId)]);
      expect(keys[0]!.size).toBe(data.length);

      expect(await onB.beta.files.delete(meta.id)).toEqual({ id: meta.id, type: 'file_deleted' });
      await expect(tenant.client.beta.files.download(meta.id)).rejects.toMatchObject({
        status: 404,
      });
      expect(await a.server.platform.objects.list('')).toEqual([]);
      expect(await mongo.db(ns).collection('objects.chunks').countDocuments({})).toBe(0);
    });
  },
);

describe.skipIf(!mongoUrl)('fleet object store: tenant placement', () => {
  const ns = `op${Math.random().toString(36).slice(2, 8)}`;
  let t: TestPlatform;
  let mongo: MongoClient;
  let tenantDb = '';
  beforeAll(async () => {
    const u = new URL(mongoUrl!.replace(/^mongodb:/, 'http:'));
    u.pathname = `/${ns}`;
    const base = REAL
      ? realAdapterEnv(ns)
      : { MONGODB_URL: u.toString().replace(/^http:/, 'mongodb:'), FLEET_NAMESPACE: ns };
    t = await startPlatform({ env: { ...base, PER_TENANT_DB_ENABLED: 'true' } });
    mongo = new MongoClient(mongoUrl!);
    await mongo.connect();
  });
  afterAll(async () => {
    await t?.close();
    for (const db of [ns, tenantDb].filter(Boolean))
      await mongo
        ?.db(db)
        .dropDatabase()
        .catch(() => {});
    await mongo?.close();
  });

  it("a tenant with its own database keeps its files' bytes there, not in the control database", async () => {
    const tenant = await t.newTenant('placed-objects');
    tenantDb = `${ns}_${tenant.tenantId}`;
    const data = randomBytes(300 * 1024);
    const meta = await tenant.client.beta.files.upload({ file: await toFile(data, 'placed.bin') });
    const dl = await tenant.client.beta.files.download(meta.id);
    expect(Buffer.from(await dl.arrayBuffer()).equals(data)).toBe(true);
    const inTenantDb = await mongo.db(tenantDb).collection('objects.keys').find({}).toArray();
    expect(inTenantDb.map((k) => k._id)).toEqual([`files/${tenant.tenantId}/${meta.id}`]);
    expect(await mongo.db(tenantDb).collection('objects.chunks').countDocuments({})).toBe(2);
    expect(await mongo.db(ns).collection('objects.keys').countDocuments({})).toBe(0);
    expect(await mongo.db(ns).collection('objects.chunks').countDocuments({})).toBe(0);
    // a list across tenants (the snapshot sweep's kind) still sees it
    expect((await t.server.platform.objects.list('files/')).map((o) => o.key)).toEqual([
      `files/${tenant.tenantId}/${meta.id}`,
    ]);
  });
});
