/**
 * The embedded store's optional `transaction` (store/port.ts): several documents commit
 * together, a throw writes nothing and rejects with what was thrown, an insert conflict inside
 * it rolls back the whole of it (not only the failing document), it is one write of its group,
 * a reopened store holds what it committed, and a collection of another store is refused.
 * The event log appends through it (core/src/events/log.ts appendAtomically): see
 * test/e2e/sessions/session-log-head.test.ts for the log head behind the log after a crashed two-write append.
 */
import { describe, expect, it } from 'vitest';
import { openEmbeddedStore } from '../src/store/embedded/documentStore.js';
import { DuplicateKeyError } from '../src/store/port.js';
import { useTempDirs } from './fixtures/tempDirs.js';

interface Item {
  _id: string;
  n: number;
  k?: string;
}

const tempDir = useTempDirs('embedded-tx-');

describe('embedded store transaction', () => {
  it('commits reads, inserts and updates of several collections together; a reopen keeps them', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir });
    const heads = store.collection<Item>({ name: 'heads' });
    const rows = store.collection<Item>({ name: 'rows' });
    await heads.insertOne({ _id: 'h', n: 0 });
    const got = await store.transaction((tx) => {
      const head = tx(heads).findOne({ _id: 'h' })!;
      tx(rows).insertMany([
        { _id: 'r1', n: head.n + 1 },
        { _id: 'r2', n: head.n + 2 },
      ]);
      return tx(heads).updateOne({ _id: 'h' }, { $max: { n: head.n + 2 } });
    });
    expect(got).toEqual({ matched: 1, modified: 1 });
    await store.close();
    const again = await openEmbeddedStore({ dir });
    expect(await again.collection<Item>({ name: 'heads' }).findOne({ _id: 'h' })).toEqual({
      _id: 'h',
      n: 2,
    });
    expect((await again.collection<Item>({ name: 'rows' }).find({})).map((r) => r._id)).toEqual([
      'r1',
      'r2',
    ]);
    await again.close();
  });

  it('a throw after writes writes nothing and rejects with the thrown error', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<Item>({ name: 'c' });
    await c.insertOne({ _id: 'a', n: 1 });
    const boom = new Error('refused after writing');
    await expect(
      store.transaction((tx) => {
        tx(c).updateOne({ _id: 'a' }, { $set: { n: 99 } });
        tx(c).insertMany([{ _id: 'b', n: 2 }]);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await c.find({})).toEqual([{ _id: 'a', n: 1 }]);
    await store.close();
  });

  it('a unique conflict in insertMany rolls back the documents before it and the other writes', async () => {
    const store = await openEmbeddedStore({});
    const c = store.collection<Item>({
      name: 'u',
      indexes: [{ fields: { k: 1 }, unique: true }],
    });
    await c.insertOne({ _id: 'taken', n: 0, k: 'x' });
    const err = await store
      .transaction((tx) => {
        tx(c).updateOne({ _id: 'taken' }, { $set: { n: 5 } });
        tx(c).insertMany([
          { _id: 'new1', n: 1, k: 'y' },
          { _id: 'new2', n: 2, k: 'x' },
        ]);
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DuplicateKeyError);
    expect(await c.find({})).toEqual([{ _id: 'taken', n: 0, k: 'x' }]);
    await store.close();
  });

  it('is one write of its group: a failing transaction leaves the writes around it', async () => {
    const store = await openEmbeddedStore({ dir: await tempDir() });
    const c = store.collection<Item>({ name: 'g' });
    const results = await Promise.allSettled([
      c.insertOne({ _id: 'before', n: 1 }),
      store.transaction((tx) => {
        tx(c).insertMany([{ _id: 'inside', n: 2 }]);
        throw new Error('no');
      }),
      store.transaction((tx) => tx(c).insertMany([{ _id: 'kept', n: 3 }])),
      c.insertOne({ _id: 'after', n: 4 }),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(store.stats().syncs).toBe(1);
    expect((await c.find({}, { sort: { n: 1 } })).map((d) => d._id)).toEqual([
      'before',
      'kept',
      'after',
    ]);
    await store.close();
  });

  it('updateOne with a function of the document: called once with it (frozen), its update applied; a throw in it aborts; no match, no call, no upsert', async () => {
    const dir = await tempDir();
    const store = await openEmbeddedStore({ dir });
    const c = store.collection<Item>({ name: 'fn' });
    await c.insertOne({ _id: 'a', n: 1, k: 'x' });
    const seen: Item[] = [];
    const r = await store.transaction((tx) =>
      tx(c).updateOne({ _id: 'a' }, (doc) => {
        seen.push({ ...doc });
        expect(Object.isFrozen(doc)).toBe(true);
        return { $inc: { n: doc.n * 10 }, $unset: { k: 1 } };
      }),
    );
    expect(r).toEqual({ matched: 1, modified: 1 });
    expect(seen).toEqual([{ _id: 'a', n: 1, k: 'x' }]);
    expect(await c.findOne({ _id: 'a' })).toEqual({ _id: 'a', n: 11 });
    const err = await store
      .transaction((tx) => {
        tx(c).insertMany([{ _id: 'b', n: 0 }]);
        return tx(c).updateOne({ _id: 'a' }, () => {
          throw new Error('refused by the reader');
        });
      })
      .catch((e: unknown) => e);
    expect((err as Error).message).toBe('refused by the reader');
    let calls = 0;
    const none = await store.transaction((tx) =>
      tx(c).updateOne(
        { _id: 'zz' },
        () => {
          calls++;
          return { $set: { n: 1 } };
        },
        { upsert: true },
      ),
    );
    expect(none).toEqual({ matched: 0, modified: 0 });
    expect(calls).toBe(0);
    // An invalid update returned by the function is refused like any other.
    await expect(
      store.transaction((tx) => tx(c).updateOne({ _id: 'a' }, () => ({ $bad: { n: 1 } }) as never)),
    ).rejects.toThrow(/unsupported update operator/);
    expect(await c.find({}, { sort: { _id: 1 } })).toEqual([{ _id: 'a', n: 11 }]);
    await store.close();
  });

  it('refuses a collection of another store', async () => {
    const a = await openEmbeddedStore({});
    const b = await openEmbeddedStore({});
    const foreign = b.collection<Item>({ name: 'x' });
    await expect(a.transaction((tx) => tx(foreign).findOne({}))).rejects.toThrow(
      /not of this store/,
    );
    await Promise.all([a.close(), b.close()]);
  });
});
