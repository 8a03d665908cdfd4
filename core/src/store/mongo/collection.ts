/**
 * One collection of the MongoDB DocumentStore (documentStore.ts): the port's Collection
 * operations mapped 1:1 onto the driver's native collection. Guarantees: every operation waits
 * for the collection's declared indexes first (a unique index is in force before the first
 * write); documents are written escaped and read unescaped (keyEscaping.ts), filters and updates
 * validated and translated (queryTranslation.ts); reads return copies; a duplicate key is a
 * DuplicateKeyError naming the index (duplicateKeys.ts); inserts need a string `_id`; an ordered
 * insertMany stops at the first duplicate. Proved by core/test/store.contract.ts, run on
 * FerretDB by core/test/store.mongo.test.ts.
 */
import type mongoose from 'mongoose';
import type {
  Collection,
  CollectionSpec,
  Doc,
  Filter,
  FindOptions,
  IndexSpec,
  SortSpec,
  Update,
  UpdateResult,
} from '../port.js';
import { firstWriteError, toDuplicateKeyError } from './duplicateKeys.js';
import { escapeKeys, unescapeKeys } from './keyEscaping.js';
import {
  checkFilter,
  checkId,
  findOptions,
  prepareUpdate,
  upsertCandidate,
  type MongoDoc,
} from './queryTranslation.js';

export type NativeCollection = mongoose.mongo.Collection<MongoDoc>;

/** What a collection needs from its store. */
export interface CollectionHost {
  /** Throws once the store is closed. */
  live(): void;
  /** Resolves once the indexes exist (each created once per store). */
  ensureIndexes(native: NativeCollection, specs: IndexSpec[]): Promise<unknown>;
}

export class MongoCollection<T extends Doc> implements Collection<T> {
  constructor(
    private readonly store: CollectionHost,
    private readonly c: NativeCollection,
    private readonly spec: CollectionSpec,
  ) {}

  indexesReady(): Promise<unknown> {
    return this.store.ensureIndexes(this.c, this.spec.indexes ?? []);
  }

  get name(): string {
    return this.spec.name;
  }

  /** Runs `op` once the collection's indexes exist, mapping duplicate-key errors. */
  private async run<R>(
    op: () => Promise<R>,
    candidate?: (err: unknown) => MongoDoc | undefined,
  ): Promise<R> {
    this.store.live();
    await this.indexesReady();
    try {
      return await op();
    } catch (err) {
      throw await toDuplicateKeyError(this.c, this.name, err, candidate);
    }
  }

  async insertOne(doc: T): Promise<void> {
    const d = escapeKeys(doc) as MongoDoc;
    checkId(this.name, d);
    await this.run(
      () => this.c.insertOne(d),
      () => d,
    );
  }

  async insertMany(docs: T[]): Promise<void> {
    const ds = docs.map((doc) => escapeKeys(doc) as MongoDoc);
    for (const d of ds) checkId(this.name, d);
    if (ds.length === 0) return this.run(async () => {});
    await this.run(
      () => this.c.insertMany(ds, { ordered: true }),
      (err) => ds[firstWriteError(err)?.index ?? 0],
    );
  }

  async findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    const f = checkFilter(filter);
    return this.run(
      async () => unescapeKeys(await this.c.findOne(f, findOptions(options))) as T | null,
    );
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const f = checkFilter(filter);
    return this.run(
      async () =>
        (await this.c.find(f, findOptions(options)).toArray()).map(unescapeKeys) as unknown as T[],
    );
  }

  async count(filter: Filter): Promise<number> {
    const f = checkFilter(filter);
    return this.run(() => this.c.countDocuments(f));
  }

  async updateOne(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean } = {},
  ): Promise<UpdateResult> {
    const f = checkFilter(filter);
    const u = prepareUpdate(f, update, options.upsert === true);
    const r = await this.run(
      () => this.c.updateOne(f, u, { upsert: options.upsert === true }),
      () => (options.upsert ? upsertCandidate(f, u) : undefined),
    );
    const out: UpdateResult = { matched: r.matchedCount, modified: r.modifiedCount };
    if (r.upsertedCount > 0 && r.upsertedId !== null && r.upsertedId !== undefined)
      out.upsertedId = String(r.upsertedId);
    return out;
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean; returnDocument?: 'before' | 'after'; sort?: SortSpec } = {},
  ): Promise<T | null> {
    const f = checkFilter(filter);
    const u = prepareUpdate(f, update, options.upsert === true);
    return this.run(
      async () =>
        unescapeKeys(
          await this.c.findOneAndUpdate(f, u, {
            upsert: options.upsert === true,
            returnDocument: options.returnDocument ?? 'before',
            ...(options.sort ? { sort: options.sort } : {}),
            includeResultMetadata: false,
          }),
        ) as T | null,
      () => (options.upsert ? upsertCandidate(f, u) : undefined),
    );
  }

  async deleteOne(filter: Filter): Promise<number> {
    const f = checkFilter(filter);
    return (await this.run(() => this.c.deleteOne(f))).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    const f = checkFilter(filter);
    return (await this.run(() => this.c.deleteMany(f))).deletedCount;
  }
}
