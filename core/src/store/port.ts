/**
 * Store port: a document store with MongoDB's single-document semantics and nothing more.
 *
 * Guarantees every adapter must keep (see core/test/store.contract.ts):
 * - every write is atomic on one document; there are no multi-document transactions and no
 *   change streams (FerretDB, used in CI, has neither). An adapter MAY offer `transaction`
 *   (the embedded one does); callers keep a path that works without it;
 * - a write that resolved is durable: a crash of the process after the promise resolved loses
 *   nothing (the embedded adapter resolves only after its SQLite transaction committed);
 * - unique indexes are enforced on insert and update; a violation throws DuplicateKeyError and
 *   writes nothing.
 *
 * The filter and update languages are the subset of MongoDB's that the domain uses, so the
 * MongoDB adapter passes them through unchanged.
 */

export type Primitive = string | number | boolean | null;

/** Field conditions: a value (equality; `null` also matches a missing field) or operators. */
export interface FieldOps {
  $eq?: unknown;
  $ne?: unknown;
  $in?: unknown[];
  $nin?: unknown[];
  $gt?: string | number;
  $gte?: string | number;
  $lt?: string | number;
  $lte?: string | number;
  $exists?: boolean;
}

/** Keys are top-level or dotted field paths. `$or` takes a list of filters. */
export type Filter = { [field: string]: unknown } & { $or?: Filter[] };

export interface Update {
  $set?: Record<string, unknown>;
  $unset?: Record<string, true | 1 | ''>;
  $inc?: Record<string, number>;
  $max?: Record<string, number | string>;
  $setOnInsert?: Record<string, unknown>;
}

export type SortSpec = Record<string, 1 | -1>;

export interface FindOptions {
  sort?: SortSpec;
  limit?: number;
  skip?: number;
}

export interface IndexSpec {
  /** Fields in order; 1 ascending, -1 descending. */
  fields: Record<string, 1 | -1>;
  unique?: boolean;
  /** Optional name; defaults to the fields joined. */
  name?: string;
}

export interface CollectionSpec {
  name: string;
  indexes?: IndexSpec[];
}

export interface Doc {
  _id: string;
}

export interface UpdateResult {
  matched: number;
  modified: number;
  upsertedId?: string;
}

export interface Collection<T extends Doc> {
  readonly name: string;
  /** Throws DuplicateKeyError when `_id` or a unique index already holds the key. */
  insertOne(doc: T): Promise<void>;
  /**
   * Ordered insert (MongoDB `ordered: true`): documents are inserted in order until the first
   * failure, which is thrown; the ones before it stay. A DuplicateKeyError carries
   * `insertedCount`. One durable write for the whole batch.
   */
  insertMany(docs: T[]): Promise<void>;
  findOne(filter: Filter, options?: FindOptions): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  count(filter: Filter): Promise<number>;
  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<UpdateResult>;
  /** Atomic read-modify-write of one document; returns the document before or after, or null. */
  findOneAndUpdate(
    filter: Filter,
    update: Update,
    options?: { upsert?: boolean; returnDocument?: 'before' | 'after'; sort?: SortSpec },
  ): Promise<T | null>;
  deleteOne(filter: Filter): Promise<number>;
  deleteMany(filter: Filter): Promise<number>;
}

/**
 * A collection's synchronous view inside `DocumentStore.transaction`. `insertMany` is all or
 * nothing there: the first failure throws, and the transaction rolls back.
 */
export interface TxCollection<T extends Doc> {
  findOne(filter: Filter, options?: FindOptions): T | null;
  insertMany(docs: T[]): void;
  /**
   * `update` may be a function of the matched document (called once, only when one matched;
   * what it throws aborts the transaction): a read-then-update of one document in one step.
   */
  updateOne(
    filter: Filter,
    update: Update | ((doc: Readonly<T>) => Update),
    options?: { upsert?: boolean },
  ): UpdateResult;
}

/** Opens a collection of the same store inside a transaction. */
export type TxScope = <T extends Doc>(collection: Collection<T>) => TxCollection<T>;

export interface DocumentStore {
  /** Declares (idempotently) and returns a collection; indexes are created if missing. */
  collection<T extends Doc>(spec: CollectionSpec): Collection<T>;
  /**
   * Optional: runs `fn` synchronously as one transaction over any documents of this store.
   * It commits (durably, like a single write) when `fn` returns and writes nothing when it
   * throws; the promise rejects with what `fn` threw. No other operation interleaves with it.
   */
  transaction?<R>(fn: (tx: TxScope) => R): Promise<R>;
  /** Resolves when the store is reachable and its collections are ready. */
  ready(): Promise<void>;
  /** True while the store can serve requests (readiness endpoint). */
  healthy(): Promise<boolean>;
  close(): Promise<void>;
}

export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';
  constructor(
    readonly collection: string,
    readonly index: string,
    readonly key: unknown,
    /** For insertMany: how many documents before the failing one were inserted. */
    public insertedCount = 0,
  ) {
    super(`duplicate key in ${collection} index ${index}: ${JSON.stringify(key)}`);
  }
}
