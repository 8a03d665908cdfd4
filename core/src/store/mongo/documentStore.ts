/**
 * MongoDB DocumentStore (MongoDB 5–8, FerretDB v1 in CI) through mongoose's connection
 * management and the driver's native collections: the port is schemaless and its filter and
 * update languages are a MongoDB subset, so operations map 1:1. This file holds the store
 * (connections, databases, indexes, health, close); its parts, one job each: collection.ts (the
 * Collection operations), queryTranslation.ts (filters, updates, find options), keyEscaping.ts
 * (the stored form of documents), duplicateKeys.ts (DuplicateKeyError naming the index).
 *
 * - Filters and updates are validated against the port's subset (the embedded adapter's rules,
 *   so both adapters reject the same operators), then passed through unchanged.
 * - Writes use write concern `{ w: 'majority', j: true }`: a resolved write is journaled (on
 *   FerretDB/SQLite: committed with synchronous=FULL, see test/kit/ferretdb/main.go).
 * - Documents are plain JSON; `undefined` fields are dropped (`ignoreUndefined`). Object keys
 *   the server cannot store (a `.` anywhere, a leading `$`, a NUL) are stored percent-escaped
 *   and arrays inside arrays wrapped (keyEscaping.ts), so documents round-trip exactly as on the
 *   embedded store (store.contract.ts "stores any object key"). Filters and update paths are
 *   the platform's own field names and are not escaped. Upserts whose filter has no `_id`
 *   equality get a generated string `_id` through `$setOnInsert`.
 * - Duplicate keys (code 11000, and FerretDB's "UNIQUE constraint failed" on updates) become
 *   DuplicateKeyError(collection, MongoDB index name, key). When the server does not name the
 *   index (FerretDB), the adapter finds it by looking up the conflicting document.
 * - Each index is created once per store (again after a failure); operations wait for their
 *   collection's indexes.
 * - No transactions and no change streams (FerretDB has neither).
 * - Single-document writes rely on the server being atomic per document. MongoDB is; FerretDB
 *   v1 is not on its own (update/findAndModify/delete are read-modify-write without a lock), which
 *   is why CI runs it behind the serializing proxy in test/ferretdb.
 * Proved by core/test/store.contract.ts and the MongoDB-only tests, both run against FerretDB by
 * core/test/store.mongo.test.ts (MONGODB_URL).
 */
import mongoose from 'mongoose';
import type { Collection, CollectionSpec, Doc, DocumentStore, IndexSpec } from '../port.js';
import { MongoCollection, type CollectionHost, type NativeCollection } from './collection.js';
import type { MongoDoc } from './queryTranslation.js';

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

const defaultIndexName = (spec: IndexSpec) =>
  spec.name ??
  Object.entries(spec.fields)
    .map(([f, d]) => `${f}_${d}`)
    .join('_');

class Store implements MongoStore, CollectionHost {
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
    const handle = new MongoCollection<T>(this, native, spec);
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
