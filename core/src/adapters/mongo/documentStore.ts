/**
 * MongoDB DocumentStore (MongoDB 5–8, FerretDB v1 in CI) through mongoose's connection
 * management and the driver's native collections: the port is schemaless and its filter and
 * update languages are a MongoDB subset, so operations map 1:1.
 *
 * - Filters and updates are validated against the port's subset (the embedded adapter's rules,
 *   so both adapters reject the same operators), then passed through unchanged.
 * - Writes use write concern `{ w: 'majority', j: true }`: a resolved write is journaled (on
 *   FerretDB/SQLite: committed with synchronous=FULL, see test/ferretdb/main.go).
 * - Documents are plain JSON; `undefined` fields are dropped (`ignoreUndefined`). Object keys
 *   the server cannot store (a `.` anywhere, a leading `$`, a NUL: tenant-chosen metadata keys,
 *   JSON Schema `$schema`, tool settings) are stored percent-escaped (`%2E`, `%24`, `%00`, and
 *   `%` itself as `%25`) and unescaped on read, so documents round-trip exactly as on the
 *   embedded store (store.contract.ts "stores any object key"). An array directly inside an
 *   array (FerretDB v1 refuses nested arrays) is stored wrapped as `{"%a": [...]}`, a key no
 *   escaped user key can equal, and unwrapped on read. Filters and update paths are
 *   the platform's own field names and are not escaped. Upserts whose
 *   filter has no `_id` equality get a generated string `_id` through `$setOnInsert`.
 * - Duplicate keys (code 11000, and FerretDB's "UNIQUE constraint failed" on updates) become
 *   DuplicateKeyError(collection, MongoDB index name, key). When the server does not name the
 *   index (FerretDB), the adapter finds it by looking up the conflicting document.
 * - No transactions and no change streams (FerretDB has neither).
 * - Single-document writes rely on the server being atomic per document. MongoDB is; FerretDB
 *   v1 is not on its own (update/findAndModify/delete are read-modify-write without a lock), which
 *   is why CI runs it behind the serializing proxy in test/ferretdb.
 */
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import {
  DuplicateKeyError,
  type Collection,
  type CollectionSpec,
  type Doc,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type SortSpec,
  type Update,
  type UpdateResult,
} from '../../ports/store.js';
import { applyUpdate, compileFilter, upsertSeed, validateUpdate } from '../embedded/query.js';

type MongoDoc = mongoose.mongo.Document;
type NativeCollection = mongoose.mongo.Collection<MongoDoc>;
type NativeDb = mongoose.mongo.Db;

export interface MongoStoreOptions {
  /** Connection string, e.g. mongodb://127.0.0.1:27017/agentfleet. Ignored with `connection`. */
  url?: string;
  /** Database; default: the one in the URL (or the connection's). */
  dbName?: string;
  /** An open connection to share (e.g. for per-tenant databases); it is not closed by close(). */
  connection?: mongoose.Connection;
  /** Extra connection options for a new connection (merged over the defaults). */
  connectOptions?: mongoose.ConnectOptions;
}

export interface MongoStore extends DocumentStore {
  readonly dbName: string;
  readonly connection: mongoose.Connection;
  /** Another database on the same connection (shares the pool; close() does not close it). */
  forDatabase(dbName: string): MongoStore;
}

/** Durable acknowledgement for every write. */
const WRITE_CONCERN = { w: 'majority', j: true } as const;
const HEALTH_TIMEOUT_MS = 2000;

export async function openMongoStore(opts: MongoStoreOptions): Promise<MongoStore> {
  if (opts.connection) {
    const conn = opts.connection;
    await conn.asPromise();
    return new Store(conn, dbOf(conn, opts.dbName), false);
  }
  if (!opts.url) throw new Error('openMongoStore needs a url or a connection');
  const conn = mongoose.createConnection(opts.url, {
    ignoreUndefined: true,
    writeConcern: WRITE_CONCERN,
    autoIndex: false,
    autoCreate: false,
    bufferCommands: false,
    ...opts.connectOptions,
  });
  try {
    await conn.asPromise();
  } catch (err) {
    await conn.close().catch(() => {});
    throw err;
  }
  return new Store(conn, dbOf(conn, opts.dbName), true);
}

function dbOf(conn: mongoose.Connection, dbName?: string): NativeDb {
  // Set here too, so a connection opened elsewhere gets the same document and durability rules.
  return conn
    .getClient()
    .db(dbName ?? conn.name ?? undefined, { ignoreUndefined: true, writeConcern: WRITE_CONCERN });
}

const newId = () =>
  Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0') + randomBytes(8).toString('hex');
const defaultIndexName = (spec: IndexSpec) =>
  spec.name ??
  Object.entries(spec.fields)
    .map(([f, d]) => `${f}_${d}`)
    .join('_');
const copy = <T>(v: T): T => structuredClone(v);

class Store implements MongoStore {
  private closed = false;
  /** Index creations by collection and index spec: each is sent once per store (again after a failure). */
  private readonly indexes = new Map<string, { done: Promise<void>; failed: boolean }>();

  constructor(
    readonly connection: mongoose.Connection,
    private readonly db: NativeDb,
    private readonly owner: boolean,
  ) {}

  get dbName(): string {
    return this.db.databaseName;
  }

  forDatabase(dbName: string): MongoStore {
    this.live();
    return new Store(this.connection, dbOf(this.connection, dbName), false);
  }

  collection<T extends Doc>(spec: CollectionSpec): Collection<T> {
    this.live();
    const native = this.db.collection<MongoDoc>(spec.name);
    for (const ix of spec.indexes ?? []) {
      if (Object.keys(ix.fields).length === 0)
        throw new Error(`index on ${spec.name} needs at least one field`);
    }
    const handle = new Handle<T>(this, native, spec);
    void handle.indexesReady().catch(() => {}); // start now; failures surface in operations and ready()
    return handle;
  }

  /** Resolves once the spec's indexes exist; creates each once (retrying one that failed). */
  ensureIndexes(native: NativeCollection, specs: IndexSpec[]): Promise<unknown> {
    return Promise.all(
      specs.map((spec) => {
        const name = defaultIndexName(spec);
        // A different declaration under the same name is sent too, so the server rejects the conflict.
        const key = JSON.stringify([
          native.collectionName,
          name,
          spec.fields,
          spec.unique === true,
        ]);
        let entry = this.indexes.get(key);
        if (!entry || entry.failed) {
          const e = { failed: false, done: Promise.resolve() };
          e.done = native.createIndex(spec.fields, { name, unique: spec.unique === true }).then(
            () => {},
            (err: unknown) => {
              e.failed = true;
              throw err;
            },
          );
          e.done.catch(() => {});
          this.indexes.set(key, (entry = e));
        }
        return entry.done;
      }),
    );
  }

  async ready(): Promise<void> {
    this.live();
    await this.db.command({ ping: 1 });
    await Promise.all([...this.indexes.values()].map((e) => e.done));
  }

  async healthy(): Promise<boolean> {
    if (this.closed) return false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS);
    });
    const ping = this.db.command({ ping: 1 }, { timeoutMS: HEALTH_TIMEOUT_MS }).then(
      (r) => r.ok === 1,
      () => false,
    );
    try {
      return await Promise.race([ping, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.owner) await this.connection.close();
  }

  live(): void {
    if (this.closed) throw new Error('mongo store is closed');
  }
}

class Handle<T extends Doc> implements Collection<T> {
  constructor(
    private readonly store: Store,
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
      throw await this.mapError(err, candidate);
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

  /**
   * Turns a duplicate-key failure into DuplicateKeyError. MongoDB names the index in the message
   * ("... index: email_1 dup key: ..."); FerretDB does so only for updates (SQLite's "UNIQUE
   * constraint failed: index '<table>_<index>'", code 1). Otherwise the index is found by
   * looking up the document that holds the key of `candidate` (the document being written).
   */
  private async mapError(
    err: unknown,
    candidate?: (err: unknown) => MongoDoc | undefined,
  ): Promise<unknown> {
    const info = duplicateInfo(err);
    if (!info) return err;
    const doc = candidate?.(err);
    const indexes = await this.uniqueIndexes().catch(() => [] as UniqueIndex[]);
    let ix: UniqueIndex | undefined;
    if (info.index) ix = indexes.find((i) => i.name === info.index);
    else if (info.sqliteIndex) {
      ix = indexes
        .filter((i) => info.sqliteIndex === i.name || info.sqliteIndex!.endsWith(`_${i.name}`))
        .sort((a, b) => b.name.length - a.name.length)[0];
    }
    if (!ix && doc) ix = await this.holderIndex(doc, indexes).catch(() => undefined);
    const name = ix?.name ?? info.index ?? (indexes.length === 1 ? indexes[0].name : 'unknown');
    const key =
      info.keyValue ??
      (ix && doc
        ? Object.fromEntries(ix.fields.map((f) => [f, getPath(doc, f) ?? null]))
        : undefined);
    const dup = new DuplicateKeyError(this.name, name, key, info.insertedCount);
    (dup as { cause?: unknown }).cause = err;
    return dup;
  }

  private async uniqueIndexes(): Promise<UniqueIndex[]> {
    const list = await this.c.listIndexes().toArray();
    return list
      .filter((i) => i.name === '_id_' || i.unique === true)
      .map((i) => ({ name: String(i.name), fields: Object.keys(i.key as object) }));
  }

  /** The unique index under which another document already holds `doc`'s key. */
  private async holderIndex(
    doc: MongoDoc,
    indexes: UniqueIndex[],
  ): Promise<UniqueIndex | undefined> {
    const ordered = [...indexes].sort(
      (a, b) => Number(b.name === '_id_') - Number(a.name === '_id_'),
    );
    for (const ix of ordered) {
      const q: MongoDoc = {};
      for (const f of ix.fields) q[f] = getPath(doc, f) ?? null;
      if (await this.c.findOne(q, { projection: { _id: 1 } })) return ix;
    }
    return undefined;
  }
}

interface UniqueIndex {
  name: string;
  fields: string[];
}

interface DuplicateInfo {
  index?: string;
  sqliteIndex?: string;
  keyValue?: unknown;
  insertedCount: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function firstWriteError(
  err: unknown,
): { index: number; code?: number; errmsg?: string } | undefined {
  if (!isObject(err) || !Array.isArray(err.writeErrors) || err.writeErrors.length === 0)
    return undefined;
  return err.writeErrors[0] as { index: number; code?: number; errmsg?: string };
}

function duplicateInfo(err: unknown): DuplicateInfo | null {
  if (!isObject(err)) return null;
  const we = firstWriteError(err);
  const code = we?.code ?? err.code;
  const msg = String(we?.errmsg ?? err.errmsg ?? err.message ?? '');
  // With ordered inserts the failing document's position is the number inserted before it.
  const insertedCount = we ? we.index : 0;
  if (code === 11000 || code === 11001) {
    const index = /\bindex: (\S+) dup key/.exec(msg)?.[1];
    const keyValue = isObject(err.keyValue) ? err.keyValue : undefined;
    return { index, keyValue, insertedCount };
  }
  const sqlite = /UNIQUE constraint failed: index '([^']+)'/.exec(msg);
  if (sqlite) return { sqliteIndex: sqlite[1], insertedCount };
  return null;
}

function checkId(collection: string, doc: MongoDoc): void {
  if (typeof doc._id !== 'string') throw new TypeError(`${collection}: _id must be a string`);
}

/** Validates against the port's filter language (throws naming an unknown operator). */
function checkFilter(filter: Filter): MongoDoc {
  compileFilter(filter);
  return copy(filter) as MongoDoc;
}

/** Validates the update; an upsert without an `_id` equality in the filter gets a string `_id`. */
function prepareUpdate(filter: MongoDoc, update: Update, upsert: boolean): MongoDoc {
  validateUpdate(update);
  // Operators and paths are the platform's; the values they write are documents (escaped).
  const u = Object.fromEntries(
    Object.entries(update).map(([op, fields]) => [
      op,
      Object.fromEntries(
        Object.entries(fields as Record<string, unknown>).map(([path, v]) => [path, escapeKeys(v)]),
      ),
    ]),
  ) as Record<string, Record<string, unknown>>;
  if (
    upsert &&
    !hasIdEquality(filter) &&
    !(u.$set && '_id' in u.$set) &&
    !(u.$setOnInsert && '_id' in u.$setOnInsert)
  ) {
    u.$setOnInsert = { ...u.$setOnInsert, _id: newId() };
  }
  return u;
}

function hasIdEquality(filter: MongoDoc): boolean {
  if (!('_id' in filter)) return false;
  const v = filter._id;
  return (
    !isObject(v) || Array.isArray(v) || !Object.keys(v).some((k) => k.startsWith('$')) || '$eq' in v
  );
}

/** The document an upsert would insert (for naming the index it collided on). */
function upsertCandidate(filter: MongoDoc, update: MongoDoc): MongoDoc | undefined {
  try {
    return applyUpdate(upsertSeed(filter as Filter), update as Update, true) as MongoDoc;
  } catch {
    return undefined;
  }
}

/** Keys MongoDB/FerretDB refuse in stored documents, plus `%` (the escape character). */
const UNSAFE_KEY = /[.%\0]|^\$/;
const escapeKey = (k: string): string =>
  UNSAFE_KEY.test(k)
    ? k.replace(/%/g, '%25').replace(/\./g, '%2E').replace(/\0/g, '%00').replace(/^\$/, '%24')
    : k;
const unescapeKey = (k: string): string =>
  k.includes('%')
    ? k.replace(/%(25|2E|00|24)/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    : k;

/** The wrapper of an array inside an array: `%` alone never starts an escaped key's `%XX`. */
const NESTED_ARRAY = '%a';

/** A deep copy of a JSON value whose object keys are escaped (`escapeKey`) and inner arrays wrapped. */
function escapeKeys(v: unknown): unknown {
  if (Array.isArray(v))
    return v.map((x) => (Array.isArray(x) ? { [NESTED_ARRAY]: escapeKeys(x) } : escapeKeys(x)));
  if (!isPlainObject(v)) return v === undefined ? v : copy(v);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[escapeKey(k)] = escapeKeys(x);
  return out;
}

/** The inverse of escapeKeys (key order kept). */
function unescapeKeys<V>(v: V): V {
  if (Array.isArray(v)) {
    return v.map((x) => {
      const inner = isPlainObject(x) && Object.keys(x).length === 1 ? x[NESTED_ARRAY] : undefined;
      return unescapeKeys(Array.isArray(inner) ? inner : x);
    }) as V;
  }
  if (!isPlainObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[unescapeKey(k)] = unescapeKeys(x);
  return out as V;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function getPath(doc: unknown, path: string): unknown {
  let cur: unknown = doc;
  for (const part of path.split('.')) {
    if (!isObject(cur)) return undefined;
    cur = cur[part];
  }
  return cur;
}

function findOptions(o: FindOptions): mongoose.mongo.FindOptions {
  const out: mongoose.mongo.FindOptions = {};
  if (o.sort && Object.keys(o.sort).length) out.sort = o.sort;
  if (o.skip && o.skip > 0) out.skip = o.skip;
  if (o.limit && o.limit > 0) out.limit = o.limit;
  return out;
}
