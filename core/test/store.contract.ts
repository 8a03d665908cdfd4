/**
 * Semantics every DocumentStore adapter must pass (embedded now, MongoDB/FerretDB later).
 *
 * `open` is called before each test and returns a store; `reopen`, when given, closes the
 * store(s) opened so far and returns a new one over the same data; `cleanup` closes whatever is
 * open and removes the data. Every test uses its own collection names, so the suite can run
 * against a shared database. Unordered results are compared after sorting.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DuplicateKeyError,
  type CollectionSpec,
  type Doc,
  type DocumentStore,
} from '../src/store/port.js';

export interface ContractHandle {
  store: DocumentStore;
  reopen?: () => Promise<DocumentStore>;
  cleanup: () => Promise<void>;
}

interface Item extends Doc {
  n?: number;
  s?: string | null;
  tags?: string[];
  nested?: { a?: number; b?: { c?: string } };
  list?: Array<{ k: string; v: number }>;
  version?: number;
  owner?: string;
  [k: string]: unknown;
}

let seq = 0;
const unique = (base: string) => `c_${base}_${Date.now().toString(36)}_${process.pid}_${seq++}`;
const ids = (docs: Doc[]) => docs.map((d) => d._id).sort();

export function storeContract(name: string, open: () => Promise<ContractHandle>): void {
  describe(`DocumentStore contract: ${name}`, () => {
    let h: ContractHandle;
    let store: DocumentStore;
    beforeEach(async () => {
      h = await open();
      store = h.store;
      await store.ready();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    const seeded = async (base: string) => {
      const c = store.collection<Item>({ name: unique(base) });
      const docs: Item[] = [
        {
          _id: 'a',
          n: 1,
          s: 'x',
          tags: ['red', 'blue'],
          nested: { a: 1, b: { c: 'p' } },
          list: [{ k: 'k1', v: 1 }],
        },
        {
          _id: 'b',
          n: 2,
          s: 'y',
          tags: ['blue'],
          nested: { a: 2 },
          list: [
            { k: 'k2', v: 2 },
            { k: 'k3', v: 3 },
          ],
        },
        { _id: 'c', n: 3, s: null, tags: [] },
        { _id: 'd', n: 10, s: 'z' },
        { _id: 'e' },
      ];
      for (const d of docs) await c.insertOne(d);
      return c;
    };

    it('inserts, finds by _id and rejects a duplicate _id without writing', async () => {
      const c = store.collection<Item>({ name: unique('insert') });
      await c.insertOne({ _id: 'one', n: 1 });
      expect(await c.findOne({ _id: 'one' })).toEqual({ _id: 'one', n: 1 });
      expect(await c.findOne({ _id: 'missing' })).toBeNull();
      await expect(c.insertOne({ _id: 'one', n: 2 })).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.find({})).toEqual([{ _id: 'one', n: 1 }]);
    });

    it('matches equality, arrays, null/missing and dotted paths', async () => {
      const c = await seeded('eq');
      expect(ids(await c.find({ n: 2 }))).toEqual(['b']);
      expect(ids(await c.find({ s: 'x', n: 1 }))).toEqual(['a']);
      expect(ids(await c.find({ tags: 'blue' }))).toEqual(['a', 'b']);
      expect(ids(await c.find({ tags: ['blue'] }))).toEqual(['b']);
      expect(ids(await c.find({ s: null }))).toEqual(['c', 'e']);
      expect(ids(await c.find({ 'nested.a': 2 }))).toEqual(['b']);
      expect(ids(await c.find({ 'nested.b.c': 'p' }))).toEqual(['a']);
      expect(ids(await c.find({ 'list.k': 'k3' }))).toEqual(['b']);
      expect(ids(await c.find({ nested: { a: 2 } }))).toEqual(['b']);
    });

    it('supports $eq $ne $in $nin $gt $gte $lt $lte $exists and $or', async () => {
      const c = await seeded('ops');
      expect(ids(await c.find({ n: { $eq: 3 } }))).toEqual(['c']);
      expect(ids(await c.find({ n: { $ne: 1 } }))).toEqual(['b', 'c', 'd', 'e']);
      expect(ids(await c.find({ tags: { $ne: 'blue' } }))).toEqual(['c', 'd', 'e']);
      expect(ids(await c.find({ s: { $ne: null } }))).toEqual(['a', 'b', 'd']);
      expect(ids(await c.find({ n: { $in: [1, 3, 99] } }))).toEqual(['a', 'c']);
      expect(ids(await c.find({ s: { $in: ['y', null] } }))).toEqual(['b', 'c', 'e']);
      expect(ids(await c.find({ tags: { $in: ['red'] } }))).toEqual(['a']);
      expect(ids(await c.find({ n: { $nin: [1, 2] } }))).toEqual(['c', 'd', 'e']);
      expect(ids(await c.find({ n: { $gt: 2 } }))).toEqual(['c', 'd']);
      expect(ids(await c.find({ n: { $gte: 2 } }))).toEqual(['b', 'c', 'd']);
      expect(ids(await c.find({ n: { $lt: 3 } }))).toEqual(['a', 'b']);
      expect(ids(await c.find({ n: { $lte: 3, $gt: 1 } }))).toEqual(['b', 'c']);
      expect(ids(await c.find({ s: { $gt: 'x' } }))).toEqual(['b', 'd']);
      expect(ids(await c.find({ 'list.v': { $gte: 3 } }))).toEqual(['b']);
      expect(ids(await c.find({ s: { $exists: true } }))).toEqual(['a', 'b', 'c', 'd']);
      expect(ids(await c.find({ n: { $exists: false } }))).toEqual(['e']);
      expect(ids(await c.find({ 'nested.b': { $exists: true } }))).toEqual(['a']);
      expect(ids(await c.find({ $or: [{ n: 1 }, { s: 'z' }] }))).toEqual(['a', 'd']);
      expect(ids(await c.find({ n: { $gt: 1 }, $or: [{ s: 'y' }, { s: 'z' }] }))).toEqual([
        'b',
        'd',
      ]);
      expect(await c.count({ n: { $gte: 2 } })).toBe(3);
      expect(await c.count({})).toBe(5);
    });

    it('rejects unknown operators', async () => {
      const c = await seeded('unknown');
      await expect(c.find({ n: { $regexish: 1 } })).rejects.toThrow(/\$regexish/);
      await expect(c.updateOne({ _id: 'a' }, { $push: { tags: 'x' } } as never)).rejects.toThrow(
        /\$push/,
      );
      expect((await c.findOne({ _id: 'a' }))?.tags).toEqual(['red', 'blue']);
    });

    it('sorts, skips and limits', async () => {
      const c = await seeded('sort');
      const byN = await c.find({ n: { $exists: true } }, { sort: { n: -1 } });
      expect(byN.map((d) => d._id)).toEqual(['d', 'c', 'b', 'a']);
      const all = await c.find({}, { sort: { n: 1 } });
      expect(all.map((d) => d._id)).toEqual(['e', 'a', 'b', 'c', 'd']);
      const page = await c.find({}, { sort: { n: 1 }, skip: 1, limit: 2 });
      expect(page.map((d) => d._id)).toEqual(['a', 'b']);
      const strings = await c.find({ s: { $in: ['x', 'y', 'z'] } }, { sort: { s: -1 } });
      expect(strings.map((d) => d._id)).toEqual(['d', 'b', 'a']);
      const first = await c.findOne({ n: { $gt: 0 } }, { sort: { n: -1 } });
      expect(first?._id).toBe('d');
      const k = store.collection<Item>({ name: unique('sort2') });
      for (const [id, g, n] of [
        ['p', 'x', 2],
        ['q', 'y', 1],
        ['r', 'x', 1],
      ] as const)
        await k.insertOne({ _id: id, g, n });
      expect((await k.find({}, { sort: { g: 1, n: 1 } })).map((d) => d._id)).toEqual([
        'r',
        'p',
        'q',
      ]);
      expect((await k.find({}, { sort: { g: -1, n: -1 }, limit: 2 })).map((d) => d._id)).toEqual([
        'q',
        'p',
      ]);
    });

    it('updateOne applies $set (dotted, creating objects), $unset, $inc, $max', async () => {
      const c = await seeded('update');
      expect(
        await c.updateOne({ _id: 'a' }, { $set: { s: 'xx', 'deep.er.x': 1, 'nested.a': 5 } }),
      ).toEqual({ matched: 1, modified: 1 });
      expect(await c.findOne({ _id: 'a' })).toMatchObject({
        s: 'xx',
        deep: { er: { x: 1 } },
        nested: { a: 5, b: { c: 'p' } },
      });
      await c.updateOne({ _id: 'a' }, { $unset: { tags: '', 'nested.b': 1 } });
      const a = await c.findOne({ _id: 'a' });
      expect(a?.tags).toBeUndefined();
      expect(a?.nested).toEqual({ a: 5 });
      await c.updateOne({ _id: 'b' }, { $inc: { n: 5, fresh: 2, 'nested.a': -1 } });
      expect(await c.findOne({ _id: 'b' })).toMatchObject({ n: 7, fresh: 2, nested: { a: 1 } });
      await c.updateOne({ _id: 'b' }, { $max: { n: 3, top: 4 } });
      expect(await c.findOne({ _id: 'b' })).toMatchObject({ n: 7, top: 4 });
      await c.updateOne({ _id: 'b' }, { $max: { n: 9 } });
      expect((await c.findOne({ _id: 'b' }))?.n).toBe(9);
      expect(await c.updateOne({ _id: 'b' }, { $set: { n: 9 } })).toEqual({
        matched: 1,
        modified: 0,
      });
      expect(await c.updateOne({ _id: 'nope' }, { $set: { n: 1 } })).toEqual({
        matched: 0,
        modified: 0,
      });
      expect(await c.updateOne({ n: { $gt: 100 } }, { $inc: { n: 1 } })).toEqual({
        matched: 0,
        modified: 0,
      });
      expect(await c.count({})).toBe(5);
    });

    it('upserts from the filter equalities, applying $setOnInsert only on insert', async () => {
      const c = store.collection<Item>({ name: unique('upsert') });
      const r1 = await c.updateOne(
        { _id: 'u1', kind: 'k' },
        { $set: { n: 1 }, $setOnInsert: { created: 1 } },
        { upsert: true },
      );
      expect(r1).toEqual({ matched: 0, modified: 0, upsertedId: 'u1' });
      expect(await c.findOne({ _id: 'u1' })).toEqual({ _id: 'u1', kind: 'k', n: 1, created: 1 });
      const r2 = await c.updateOne(
        { _id: 'u1' },
        { $set: { n: 2 }, $setOnInsert: { created: 2 } },
        { upsert: true },
      );
      expect(r2).toEqual({ matched: 1, modified: 1 });
      expect(await c.findOne({ _id: 'u1' })).toEqual({ _id: 'u1', kind: 'k', n: 2, created: 1 });
      const r3 = await c.updateOne(
        { name: 'gen', 'meta.zone': 'z1' },
        { $inc: { hits: 1 } },
        { upsert: true },
      );
      expect(typeof r3.upsertedId).toBe('string');
      expect(await c.findOne({ _id: r3.upsertedId! })).toEqual({
        _id: r3.upsertedId,
        name: 'gen',
        meta: { zone: 'z1' },
        hits: 1,
      });
      await c.updateOne({ name: 'gen' }, { $inc: { hits: 1 } }, { upsert: true });
      expect(await c.count({ name: 'gen' })).toBe(1);
      expect((await c.findOne({ name: 'gen' }))?.hits).toBe(2);
    });

    it('findOneAndUpdate returns the document before or after, honours sort and upsert', async () => {
      const c = await seeded('fau');
      const before = await c.findOneAndUpdate({ _id: 'a' }, { $inc: { n: 1 } });
      expect(before?.n).toBe(1);
      const after = await c.findOneAndUpdate(
        { _id: 'a' },
        { $inc: { n: 1 } },
        { returnDocument: 'after' },
      );
      expect(after?.n).toBe(3);
      expect(await c.findOneAndUpdate({ _id: 'zzz' }, { $set: { n: 1 } })).toBeNull();
      const top = await c.findOneAndUpdate(
        { n: { $exists: true } },
        { $set: { picked: true } },
        { sort: { n: -1 }, returnDocument: 'after' },
      );
      expect(top).toMatchObject({ _id: 'd', picked: true });
      const low = await c.findOneAndUpdate(
        { n: { $exists: true } },
        { $set: { picked: true } },
        { sort: { n: 1 } },
      );
      expect(low?._id).toBe('b');
      expect(low?.picked).toBeUndefined();
      const ins = await c.findOneAndUpdate(
        { _id: 'new' },
        { $setOnInsert: { n: 42 } },
        { upsert: true, returnDocument: 'after' },
      );
      expect(ins).toEqual({ _id: 'new', n: 42 });
      expect(
        await c.findOneAndUpdate({ _id: 'new2' }, { $set: { n: 1 } }, { upsert: true }),
      ).toBeNull();
      expect(await c.count({ _id: 'new2' })).toBe(1);
    });

    it('findOneAndUpdate with a version condition is a compare-and-swap', async () => {
      const c = store.collection<Item>({ name: unique('cas') });
      await c.insertOne({ _id: 'lease', version: 1, owner: 'none' });
      const attempt = (owner: string) =>
        c.findOneAndUpdate(
          { _id: 'lease', version: 1 },
          { $set: { owner }, $inc: { version: 1 } },
          { returnDocument: 'after' },
        );
      const results = await Promise.all([attempt('w1'), attempt('w2'), attempt('w3')]);
      const winners = results.filter((r) => r !== null);
      expect(winners).toHaveLength(1);
      expect(await c.findOne({ _id: 'lease' })).toEqual({
        _id: 'lease',
        version: 2,
        owner: winners[0]!.owner,
      });
    });

    it('applies 100 concurrent $inc without losing any', async () => {
      const c = store.collection<Item>({ name: unique('inc') });
      await c.insertOne({ _id: 'ctr', n: 0 });
      await Promise.all(
        Array.from({ length: 100 }, () => c.updateOne({ _id: 'ctr' }, { $inc: { n: 1 } })),
      );
      expect((await c.findOne({ _id: 'ctr' }))?.n).toBe(100);
    });

    it('enforces unique indexes on insert, update and upsert, writing nothing on violation', async () => {
      const c = store.collection<Item>({
        name: unique('uniq'),
        indexes: [{ fields: { email: 1 }, unique: true }],
      });
      await c.insertOne({ _id: '1', email: 'a@x' });
      await c.insertOne({ _id: '2', email: 'b@x' });
      const err = await c.insertOne({ _id: '3', email: 'a@x' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DuplicateKeyError);
      expect(await c.count({})).toBe(2);
      await expect(
        c.updateOne({ _id: '2' }, { $set: { email: 'a@x', other: 1 } }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.findOne({ _id: '2' })).toEqual({ _id: '2', email: 'b@x' });
      await expect(
        c.findOneAndUpdate({ _id: '2' }, { $set: { email: 'a@x' } }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      await expect(
        c.updateOne({ _id: '9' }, { $set: { email: 'b@x' } }, { upsert: true }),
      ).rejects.toBeInstanceOf(DuplicateKeyError);
      expect(await c.count({})).toBe(2);
      await c.updateOne({ _id: '2' }, { $set: { email: 'c@x' } });
      await c.insertOne({ _id: '3', email: 'b@x' });
      expect(await c.count({})).toBe(3);
      const again = store.collection<Item>({
        name: c.name,
        indexes: [{ fields: { email: 1 }, unique: true }],
      });
      await expect(again.insertOne({ _id: '4', email: 'c@x' })).rejects.toBeInstanceOf(
        DuplicateKeyError,
      );
    });

    it('enforces compound unique indexes such as (session_id, seq)', async () => {
      const c = store.collection<Item>({
        name: unique('events'),
        indexes: [{ fields: { session_id: 1, seq: 1 }, unique: true }],
      });
      await c.insertOne({ _id: 'e1', session_id: 's1', seq: 1 });
      await c.insertOne({ _id: 'e2', session_id: 's1', seq: 2 });
      await c.insertOne({ _id: 'e3', session_id: 's2', seq: 1 });
      // The error names the violated index (the event log tells a lost seq race from a
      // repeated event id by it).
      const index = (p: Promise<unknown>) =>
        p.then(
          () => 'written',
          (e: unknown) => (e instanceof DuplicateKeyError ? e.index : e),
        );
      expect(await index(c.insertOne({ _id: 'e4', session_id: 's1', seq: 2 }))).toBe(
        'session_id_1_seq_1',
      );
      expect(await index(c.insertOne({ _id: 'e1', session_id: 's9', seq: 9 }))).toBe('_id_');
      const moved = c.updateOne({ _id: 'e3' }, { $set: { session_id: 's1' } });
      expect(await index(moved)).toBe('session_id_1_seq_1');
      expect(await c.count({ session_id: 's1' })).toBe(2);
      const page = await c.find({ session_id: 's1', seq: { $gt: 0 } }, { sort: { seq: 1 } });
      expect(page.map((d) => d._id)).toEqual(['e1', 'e2']);
    });

    it('insertMany is ordered: stops at the first duplicate, keeps the ones before, reports insertedCount', async () => {
      const c = store.collection<any>({
        name: unique('many'),
        indexes: [{ fields: { session_id: 1, seq: 1 }, unique: true }],
      });
      await c.insertMany([
        { _id: 'a', session_id: 's', seq: 1 },
        { _id: 'b', session_id: 's', seq: 2 },
      ]);
      let err: any;
      try {
        await c.insertMany([
          { _id: 'c', session_id: 's', seq: 3 },
          { _id: 'd', session_id: 's', seq: 2 },
          { _id: 'e', session_id: 's', seq: 4 },
        ]);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(DuplicateKeyError);
      expect(err.insertedCount).toBe(1);
      expect((await c.find({}, { sort: { seq: 1 } })).map((d: any) => d._id)).toEqual([
        'a',
        'b',
        'c',
      ]);
    });

    it('deletes one or many and counts', async () => {
      const c = await seeded('delete');
      expect(await c.deleteOne({ n: { $gte: 2 } })).toBe(1);
      expect(await c.count({ n: { $gte: 2 } })).toBe(2);
      expect(await c.deleteOne({ _id: 'none' })).toBe(0);
      expect(await c.deleteMany({ n: { $exists: true } })).toBe(3);
      expect(ids(await c.find({}))).toEqual(['e']);
      expect(await c.deleteMany({})).toBe(1);
      expect(await c.count({})).toBe(0);
      await c.insertOne({ _id: 'a' });
      expect(await c.count({})).toBe(1);
    });

    it('stores any object key: dots, a leading $, NUL and % round-trip through insert, $set, upsert and reads', async () => {
      const c = store.collection<Item>({ name: unique('keys') });
      const odd = {
        'a.b': 1,
        $schema: 'x',
        'nul\u0000key': [{ 'deep.er': { $ref: '#', '100%': '%2E' } }],
        '%24': 'literal',
        plain: { 'x.y': null },
      };
      await c.insertOne({ _id: 'k1', meta: odd });
      expect((await c.findOne({ _id: 'k1' }))?.meta).toEqual(odd);
      await c.updateOne({ _id: 'k1' }, { $set: { meta: { ...odd, 'new.key': 2 } } });
      expect((await c.find({ _id: 'k1' }))[0]?.meta).toEqual({ ...odd, 'new.key': 2 });
      const after = await c.findOneAndUpdate(
        { _id: 'k2' },
        { $set: { meta: { $x: { 'y.z': 1 } } } },
        { upsert: true, returnDocument: 'after' },
      );
      expect(after?.meta).toEqual({ $x: { 'y.z': 1 } });
      expect(Object.keys((await c.findOne({ _id: 'k1' }))!.meta as object)).toEqual([
        'a.b',
        '$schema',
        'nul\u0000key',
        '%24',
        'plain',
        'new.key',
      ]);
    });

    it('stores arrays inside arrays (JSON Schema enums, tool settings) and objects that look like their wrapping', async () => {
      const c = store.collection<Item>({ name: unique('nested') });
      const value = {
        enum: [[1, 2], [[3]], [], [{ '%a': [4] }]],
        wrapped: [{ '%a': [5] }],
        plain: [{ '%a': 'x' }],
      };
      await c.insertOne({ _id: 'n1', value });
      expect((await c.findOne({ _id: 'n1' }))?.value).toEqual(value);
      await c.updateOne({ _id: 'n1' }, { $set: { value: { ...value, more: [[['deep']]] } } });
      expect((await c.find({ _id: 'n1' }))[0]?.value).toEqual({ ...value, more: [[['deep']]] });
    });

    it('returns copies: mutating inputs or results does not change the store', async () => {
      const c = store.collection<Item>({ name: unique('copies') });
      const input: Item = { _id: 'x', nested: { a: 1 }, tags: ['t'] };
      await c.insertOne(input);
      input.nested!.a = 99;
      input.tags!.push('u');
      const got = (await c.findOne({ _id: 'x' }))!;
      expect(got).toEqual({ _id: 'x', nested: { a: 1 }, tags: ['t'] });
      got.nested!.a = 5;
      got.tags!.push('v');
      const list = await c.find({});
      list[0].nested!.a = 6;
      const upd = (await c.findOneAndUpdate(
        { _id: 'x' },
        { $set: { n: 1 } },
        { returnDocument: 'after' },
      ))!;
      upd.tags!.push('w');
      const value = { deep: [1] };
      await c.updateOne({ _id: 'x' }, { $set: { value } });
      value.deep.push(2);
      expect(await c.findOne({ _id: 'x' })).toEqual({
        _id: 'x',
        nested: { a: 1 },
        tags: ['t'],
        n: 1,
        value: { deep: [1] },
      });
    });

    it('keeps every resolved write across a reopen', async () => {
      if (!h.reopen) return;
      const spec: CollectionSpec = {
        name: unique('durable'),
        indexes: [{ fields: { k: 1 }, unique: true }],
      };
      const c = store.collection<Item>(spec);
      await Promise.all(
        Array.from({ length: 50 }, (_, i) => c.insertOne({ _id: `d${i}`, k: i, n: 0 })),
      );
      await c.updateOne({ _id: 'd1' }, { $inc: { n: 5 } });
      await c.updateOne({ _id: 'up' }, { $set: { k: 'up' } }, { upsert: true });
      await c.deleteOne({ _id: 'd2' });
      await c.deleteMany({ k: { $gte: 40 } });
      store = await h.reopen();
      const r = store.collection<Item>(spec);
      expect(await r.count({})).toBe(40);
      expect((await r.findOne({ _id: 'd1' }))?.n).toBe(5);
      expect(await r.findOne({ _id: 'd2' })).toBeNull();
      expect(await r.findOne({ k: 'up' })).toEqual({ _id: 'up', k: 'up' });
      await expect(r.insertOne({ _id: 'dup', k: 3 })).rejects.toBeInstanceOf(DuplicateKeyError);
      await r.insertOne({ _id: 'd40', k: 40 });
      expect(await r.count({})).toBe(41);
    });
  });
}
