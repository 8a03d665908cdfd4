/**
 * The MongoDB adapter against a real server (FerretDB v1 in CI: `bash test/kit/infra/ferretdb.sh up`
 * writes MONGODB_URL to ~/.cache/agentfleet/infra/mongo.env). Skipped without MONGODB_URL. The
 * restart test also needs MONGODB_RESTART_CMD (e.g. `bash test/kit/infra/ferretdb.sh restart`).
 * Every run uses its own database, dropped at the end.
 */
import { exec } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { openMongoStore, type MongoStore } from '../src/store/mongo/documentStore.js';
import { DuplicateKeyError, type CollectionSpec, type Doc } from '../src/store/port.js';
import { storeContract } from './store.contract.js';

const url = process.env.MONGODB_URL;
const restartCmd = process.env.MONGODB_RESTART_CMD;
/** The restart test may use its own server (MONGODB_RESTART_URL) so other test files are not disturbed. */
const restartUrl = process.env.MONGODB_RESTART_URL || url;
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const runId = `${Date.now().toString(36)}_${process.pid}`;
const dbName = `af_test_${runId}`;
const usedDbs = new Set<string>([dbName]);

interface Item extends Doc {
  k?: number | string;
  n?: number;
  [key: string]: unknown;
}

describe.skipIf(!url)('mongo store', () => {
  afterAll(async () => {
    const store = await openMongoStore({ url: url! });
    try {
      const client = store.connection.getClient();
      for (const name of usedDbs) await client.db(name).dropDatabase();
    } finally {
      await store.close();
    }
  });

  storeContract('mongo', async () => {
    let current = await openMongoStore({ url: url!, dbName });
    return {
      store: current,
      reopen: async () => {
        await current.close();
        current = await openMongoStore({ url: url!, dbName });
        return current;
      },
      cleanup: () => current.close(),
    };
  });

  it('names the violated index like MongoDB and carries the key', async () => {
    const store = await openMongoStore({ url: url!, dbName });
    try {
      const c = store.collection<Item>({
        name: `names_${runId}`,
        indexes: [
          { fields: { email: 1 }, unique: true },
          { fields: { session_id: 1, seq: 1 }, unique: true },
          { fields: { n: -1 } },
        ],
      });
      await c.insertOne({ _id: 'a', email: 'a@x', session_id: 's', seq: 1 });
      await c.insertOne({ _id: 'b', email: 'b@x', session_id: 's', seq: 2 });
      const fail = async (p: Promise<unknown>) => {
        const err = await p.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(DuplicateKeyError);
        return err as DuplicateKeyError;
      };
      let e = await fail(c.insertOne({ _id: 'a', email: 'new@x' }));
      expect([e.collection, e.index]).toEqual([c.name, '_id_']);
      e = await fail(c.insertOne({ _id: 'c', email: 'a@x' }));
      expect([e.index, e.key]).toEqual(['email_1', { email: 'a@x' }]);
      e = await fail(c.insertOne({ _id: 'c', email: 'c@x', session_id: 's', seq: 2 }));
      expect([e.index, e.key]).toEqual(['session_id_1_seq_1', { session_id: 's', seq: 2 }]);
      e = await fail(c.updateOne({ _id: 'b' }, { $set: { email: 'a@x' } }));
      expect(e.index).toBe('email_1');
      e = await fail(c.findOneAndUpdate({ _id: 'b' }, { $set: { seq: 1 } }));
      expect(e.index).toBe('session_id_1_seq_1');
      e = await fail(c.updateOne({ _id: 'z' }, { $set: { email: 'b@x' } }, { upsert: true }));
      expect([e.index, e.key]).toEqual(['email_1', { email: 'b@x' }]);
      e = await fail(
        c.updateOne({ _id: 'a', seq: 99 }, { $set: { email: 'q@x' } }, { upsert: true }),
      );
      expect(e.index).toBe('_id_');
      e = await fail(
        c.insertMany([
          { _id: 'm1', email: 'm1' },
          { _id: 'm2', email: 'm2' },
          { _id: 'a', email: 'm3' },
          { _id: 'm4' },
        ]),
      );
      expect([e.index, e.insertedCount]).toEqual(['_id_', 2]);
      e = await fail(
        c.insertMany([
          { _id: 'n1', email: 'n1', session_id: 't', seq: 1 },
          { _id: 'n2', email: 'n2', session_id: 's', seq: 1 },
        ]),
      );
      expect([e.index, e.insertedCount, e.key]).toEqual([
        'session_id_1_seq_1',
        1,
        { session_id: 's', seq: 1 },
      ]);
      expect((await c.find({}, { sort: { _id: 1 } })).map((d) => d._id)).toEqual([
        'a',
        'b',
        'm1',
        'm2',
        'n1',
      ]);
      // Declaring the same indexes again (another process, a restart) is a no-op.
      const again = store.collection<Item>({
        name: c.name,
        indexes: [{ fields: { email: 1 }, unique: true }],
      });
      await store.ready();
      expect(await again.count({})).toBe(5);
    } finally {
      await store.close();
    }
  });

  it('stores plain JSON: undefined fields are dropped, generated upsert ids are strings', async () => {
    const store = await openMongoStore({ url: url!, dbName });
    try {
      const c = store.collection<Item>({ name: `json_${runId}` });
      await c.insertOne({
        _id: 'u',
        n: 1,
        gone: undefined,
        deep: { x: undefined, y: [1, 'a', null, { z: true }] },
      });
      expect(await c.findOne({ _id: 'u' })).toStrictEqual({
        _id: 'u',
        n: 1,
        deep: { y: [1, 'a', null, { z: true }] },
      });
      const r = await c.updateOne({ k: 'gen' }, { $set: { n: 1 } }, { upsert: true });
      expect(r.upsertedId).toMatch(/^[0-9a-f]{24}$/);
      const doc = await c.findOneAndUpdate(
        { k: 'gen2' },
        { $inc: { n: 1 } },
        { upsert: true, returnDocument: 'after' },
      );
      expect(typeof doc?._id).toBe('string');
      expect(await c.count({ _id: { $in: [r.upsertedId!, doc!._id] } })).toBe(2);
    } finally {
      await store.close();
    }
  });

  it('$inc past 2^31 does not wrap (counters are 64-bit), and reads back plain numbers', async () => {
    const store = await openMongoStore({ url: url!, dbName });
    try {
      const c = store.collection<Item>({ name: `inc_${runId}` });
      await c.updateOne({ _id: 'big' }, { $inc: { n: 1 } }, { upsert: true });
      for (let i = 0; i < 3; i++) await c.updateOne({ _id: 'big' }, { $inc: { n: 2_000_000_000 } });
      const doc = await c.findOneAndUpdate(
        { _id: 'big' },
        { $inc: { n: -1 } },
        { returnDocument: 'after' },
      );
      expect(doc?.n).toBe(6_000_000_000);
      expect(await c.count({ n: 6_000_000_000 })).toBe(1);
      await c.updateOne({ _id: 'big' }, { $inc: { n: 0.5 } });
      expect((await c.findOne({ _id: 'big' }))?.n).toBe(6_000_000_000.5);
    } finally {
      await store.close();
    }
  });

  it('opens other databases on the same connection, isolated from each other', async () => {
    const base = await openMongoStore({ url: url!, dbName });
    const tenantA = `${dbName}_ta`,
      tenantB = `${dbName}_tb`;
    usedDbs.add(tenantA).add(tenantB);
    try {
      const a = base.forDatabase(tenantA);
      const b = await openMongoStore({ connection: base.connection, dbName: tenantB });
      expect([a.dbName, b.dbName]).toEqual([tenantA, tenantB]);
      const spec: CollectionSpec = {
        name: 'things',
        indexes: [{ fields: { k: 1 }, unique: true }],
      };
      const aThings = a.collection<Item>(spec);
      await aThings.insertOne({ _id: 'x', k: 1 });
      await b.collection<Item>(spec).insertOne({ _id: 'x', k: 1 });
      await b.collection<Item>(spec).insertOne({ _id: 'y', k: 2 });
      expect(await a.collection<Item>(spec).count({})).toBe(1);
      expect(await b.collection<Item>(spec).count({})).toBe(2);
      await expect(a.collection<Item>(spec).insertOne({ _id: 'z', k: 1 })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
      // Closing a store that shares the connection leaves the connection and the others usable.
      await a.close();
      expect(await a.healthy()).toBe(false);
      await expect(aThings.count({})).rejects.toThrow(/closed/);
      expect(() => a.collection<Item>(spec)).toThrow(/closed/);
      expect(await b.healthy()).toBe(true);
      expect(await base.collection<Item>({ name: 'things' }).count({})).toBe(0);
      await b.close();
      expect(await base.healthy()).toBe(true);
    } finally {
      await base.close();
    }
    expect(await base.healthy()).toBe(false);
  });

  it('keeps every resolved write of concurrent writers across a reopen', async () => {
    let store: MongoStore = await openMongoStore({ url: url!, dbName });
    const spec: CollectionSpec = {
      name: `reopen_${runId}`,
      indexes: [{ fields: { k: 1 }, unique: true }],
    };
    try {
      const c = store.collection<Item>(spec);
      await c.insertOne({ _id: 'ctr', k: 'ctr', n: 0 });
      const writers = Array.from({ length: 8 }, async (_, w) => {
        for (let i = 0; i < 25; i++) {
          await c.insertOne({ _id: `w${w}-${i}`, k: w * 100 + i, n: i });
          await c.updateOne({ _id: 'ctr' }, { $inc: { n: 1 } });
          if (i % 5 === 0) await c.deleteOne({ _id: `w${w}-${i}` });
          if (i % 7 === 0)
            await c.findOneAndUpdate({ _id: `w${w}-${i}` }, { $set: { seen: true } });
        }
      });
      await Promise.all(writers);
      await c.insertMany(
        Array.from({ length: 30 }, (_, i) => ({ _id: `bulk${i}`, k: 10_000 + i })),
      );
      await store.close();

      store = await openMongoStore({ url: url!, dbName });
      const r = store.collection<Item>(spec);
      expect((await r.findOne({ _id: 'ctr' }))?.n).toBe(200);
      expect(await r.count({ _id: { $regexish: 1 } } as never).catch(() => -1)).toBe(-1);
      const ids = new Set((await r.find({})).map((d) => d._id));
      for (let w = 0; w < 8; w++) {
        for (let i = 0; i < 25; i++) expect(ids.has(`w${w}-${i}`), `w${w}-${i}`).toBe(i % 5 !== 0);
      }
      expect(await r.count({ seen: true })).toBe(8 * 3); // i = 7, 14, 21 (0 was deleted first)
      expect(await r.count({ k: { $gte: 10_000 } })).toBe(30);
      expect(ids.size).toBe(1 + 8 * 20 + 30);
    } finally {
      await store.close();
    }
  });

  it.skipIf(!restartCmd)(
    'keeps working across a server restart; nothing acknowledged is lost',
    async () => {
      const store = await openMongoStore({ url: restartUrl!, dbName });
      try {
        const c = store.collection<Item>({
          name: `restart_${runId}`,
          indexes: [{ fields: { k: 1 }, unique: true }],
        });
        await c.insertOne({ _id: 'ctr', k: 'ctr', n: 0 });
        for (let i = 0; i < 20; i++) await c.insertOne({ _id: `pre${i}`, k: i });

        // Writers keep going while the server stops and starts again; a write in flight at the
        // moment of the stop may fail (its outcome is unknown), none that resolved may be lost.
        const acked: string[] = [];
        let incsAcked = 0,
          incsTried = 0,
          failures = 0,
          stop = false;
        const writer = async (w: number) => {
          for (let i = 0; !stop; i++) {
            const id = `w${w}-${i}`;
            try {
              await c.insertOne({ _id: id, k: `${w}-${i}` });
              acked.push(id);
            } catch {
              failures++;
            }
            incsTried++;
            try {
              await c.updateOne({ _id: 'ctr' }, { $inc: { n: 1 } });
              incsAcked++;
            } catch {
              failures++;
            }
          }
        };
        const writers = [0, 1, 2].map(writer);
        await new Promise((r) => setTimeout(r, 300));
        const before = acked.length;
        const t0 = Date.now();
        const { stderr } = await promisify(exec)(restartCmd!, { cwd: repoRoot, timeout: 60_000 });
        const restartMs = Date.now() - t0;
        const during = acked.length - before;
        await new Promise((r) => setTimeout(r, 300));
        stop = true;
        await Promise.all(writers);
        const drainedMs = Date.now() - t0;
        // The same store object works after the restart: its readiness comes back by itself
        // (the driver reconnects; a probe may read not-ready for a few seconds, never for good).
        let healthyMs = -1;
        for (const end = Date.now() + 30_000; Date.now() < end;) {
          if (await store.healthy()) {
            healthyMs = Date.now() - t0;
            break;
          }
          await new Promise((r) => setTimeout(r, 250));
        }
        console.info(
          `restart took ${restartMs} ms (${stderr.trim().split('\n').pop()}); ${acked.length} inserts acknowledged (${during} during the restart), ${failures} failed writes; writers drained ${drainedMs} ms and the store was healthy ${healthyMs} ms after the restart began`,
        );
        expect(healthyMs, 'healthy again within 30 s of the writers draining').toBeGreaterThan(0);
        await c.insertOne({ _id: 'after', k: 'after' });
        expect(await c.updateOne({ _id: 'ctr' }, { $inc: { n: 1 } })).toEqual({
          matched: 1,
          modified: 1,
        });
        await expect(c.insertOne({ _id: 'dup', k: 3 })).rejects.toBeInstanceOf(DuplicateKeyError);

        const present = new Set((await c.find({})).map((d) => d._id));
        expect(
          acked.filter((id) => !present.has(id)),
          'acknowledged inserts lost',
        ).toEqual([]);
        for (let i = 0; i < 20; i++) expect(present.has(`pre${i}`)).toBe(true);
        const n = (await c.findOne({ _id: 'ctr' }))!.n!;
        expect(n).toBeGreaterThanOrEqual(incsAcked + 1);
        expect(n).toBeLessThanOrEqual(incsTried + 1);
        expect(acked.length).toBeGreaterThan(before);
      } finally {
        await store.close();
      }
    },
    120_000,
  );
});
