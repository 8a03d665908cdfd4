/**
 * The Collection port over one SQLite table (tables.ts). Every write is a read-modify-write in
 * JS (query.ts updateInPlace on the freshly parsed document, applyUpdate for upserts) run inside
 * the store's group transaction (documentStore.ts `write`): an operation takes effect fully or
 * not at all, in call order.
 * Queries go through sqlFilter.ts; when the filter or the sort cannot be pushed down exactly,
 * SQL narrows the rows and query.ts compileFilter/compareBy finish in JS.
 * Tests: core/test/store.contract.ts via core/test/store.embedded.test.ts.
 */
import { randomBytes } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type {
  Collection,
  Doc,
  Filter,
  FindOptions,
  SortSpec,
  TxCollection,
  Update,
  UpdateResult,
} from '../port.js';
import {
  applyUpdate,
  clone,
  compareBy,
  compileFilter,
  storable,
  updateInPlace,
  upsertSeed,
  validateUpdate,
  valuesEqual,
} from './query.js';
import { toOrderBy, toWhere } from './sqlFilter.js';
import type { ColumnValues, Raw, Table } from './tables.js';

/** What a collection needs from the store: statements, the group transaction, counters. */
export interface StoreCore {
  stmt(sql: string): Statement;
  write<R>(op: () => R): Promise<R>;
  read<R>(op: () => R): Promise<R>;
  examined(n: number): void;
  /** Bytes handed to SQLite (paces WAL checkpoints). */
  wrote(bytes: number): void;
}

const newId = () =>
  Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0') + randomBytes(8).toString('hex');

export class SqliteCollection<T extends Doc> implements Collection<T> {
  readonly name: string;
  constructor(
    private readonly core: StoreCore,
    private readonly table: Table,
  ) {
    this.name = table.coll;
  }

  /** Matching documents (fresh objects) in sort order, after skip/limit. */
  private select(filter: Filter, opts: FindOptions = {}): Raw[] {
    const skip = Math.max(0, opts.skip ?? 0);
    const limit = opts.limit && opts.limit > 0 ? opts.limit : 0;
    const { t } = this.table;
    const where = toWhere(filter, this.table);
    const order = where.exact ? toOrderBy(opts.sort, this.table) : null;
    if (order !== null) {
      const params = [...where.params];
      let sql = `SELECT doc FROM ${t} WHERE ${where.sql}${order}`;
      // Written into the SQL, not bound: with a bound LIMIT this SQLite build (STAT4) plans an
      // _id lookup ~4x slower (20-36 µs vs 4-6 µs); both are integers checked here, and the
      // statement cache keeps the few distinct page sizes the domain uses.
      if (limit || skip) sql += ` LIMIT ${Math.floor(limit) || -1} OFFSET ${Math.floor(skip)}`;
      const rows = this.core.stmt(sql).all(...params) as string[];
      this.core.examined(rows.length);
      return rows.map((r) => JSON.parse(r) as Raw);
    }
    // Not exact in SQL: the JS predicate and sort, compiled only here (most queries never need them).
    const pred = compileFilter(filter);
    const cmp = opts.sort && Object.keys(opts.sort).length ? compareBy(opts.sort) : undefined;
    const rows = this.core.stmt(`SELECT doc FROM ${t} WHERE ${where.sql}`).all(...where.params);
    this.core.examined(rows.length);
    const out: Raw[] = [];
    for (const r of rows as string[]) {
      const doc = JSON.parse(r) as Raw;
      if (pred(doc)) out.push(doc);
    }
    if (cmp) out.sort(cmp);
    return skip || limit ? out.slice(skip, limit ? skip + limit : undefined) : out;
  }

  /**
   * Writes `next`: an insert, or (with `before`, the indexed values of the stored document) an
   * update that sets only the index columns whose value changed.
   */
  private put(next: Raw, before?: ColumnValues): void {
    if (typeof next._id !== 'string') throw new TypeError(`${this.name}: _id must be a string`);
    this.table.checkWrite(next);
    const json = JSON.stringify(next);
    this.core.wrote(json.length);
    try {
      if (before) this.table.update(next, json, before);
      else this.table.insert(next._id, json);
    } catch (err) {
      throw this.table.duplicate(err, next) ?? err;
    }
  }

  private remove(id: string): void {
    this.core.wrote(100);
    this.core.stmt(`DELETE FROM ${this.table.t} WHERE _id = ?`).run(id);
  }

  /**
   * Applies `update` to `cur`, a document select() just parsed (so this call owns it): in place
   * when it can (updateInPlace), otherwise on a copy. Returns the new document, or undefined
   * when nothing changed (then nothing is written).
   */
  private modify(cur: Raw, update: Update): Raw | undefined {
    const before = this.table.columnValues(cur);
    const changed = updateInPlace(cur, update);
    if (changed === false) return undefined;
    if (changed) {
      this.put(cur, before);
      return cur;
    }
    const next = storable(applyUpdate(cur, update, false)) as Raw;
    if (valuesEqual(next, cur)) return undefined;
    this.put(next, before);
    return next;
  }

  private upsert(filter: Filter, update: Update): Raw {
    const seeded = applyUpdate(upsertSeed(filter), update, true);
    const doc = storable(seeded._id === undefined ? { _id: newId(), ...seeded } : seeded) as Raw;
    this.put(doc);
    return doc;
  }

  private view?: TxCollection<T>;

  /** The synchronous view used inside the store's transaction (documentStore.ts); made once. */
  txView(core: StoreCore): TxCollection<T> | null {
    if (core !== this.core) return null;
    this.view ??= {
      findOne: (filter, options) => this.findOneNow(filter, options),
      insertMany: (docs) => {
        for (const doc of docs) this.put(storable(doc) as Raw);
      },
      updateOne: (filter, update, options) => this.updateNow(filter, update, options),
    };
    return this.view;
  }

  insertOne(doc: T): Promise<void> {
    return this.core.write(() => this.put(storable(doc) as Raw));
  }

  insertMany(docs: T[]): Promise<void> {
    // Ordered: the documents before a failure stay (they commit with the group), so the error
    // is returned from the savepoint and thrown after the commit.
    return this.core
      .write(() => {
        for (const [i, doc] of docs.entries()) {
          try {
            this.put(storable(doc) as Raw);
          } catch (err) {
            if (i === 0) throw err;
            if (err && typeof err === 'object' && 'insertedCount' in err)
              (err as { insertedCount: number }).insertedCount = i;
            return err as Error;
          }
        }
        return undefined;
      })
      .then((err) => {
        if (err) throw err;
      });
  }

  private findOneNow(filter: Filter, options?: FindOptions): T | null {
    return (this.select(filter, { ...options, limit: 1 })[0] as T | undefined) ?? null;
  }

  findOne(filter: Filter, options?: FindOptions): Promise<T | null> {
    return this.core.read(() => this.findOneNow(filter, options));
  }

  find(filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.core.read(() => this.select(filter, options) as unknown as T[]);
  }

  count(filter: Filter): Promise<number> {
    return this.core.read(() => {
      compileFilter(filter);
      const where = toWhere(filter, this.table);
      if (!where.exact) return this.select(filter).length;
      const sql = `SELECT count(*) FROM ${this.table.t} WHERE ${where.sql}`;
      return this.core.stmt(sql).get(...where.params) as number;
    });
  }

  private updateNow(
    filter: Filter,
    update: Update | ((doc: Readonly<T>) => Update),
    options?: { upsert?: boolean },
  ): UpdateResult {
    if (typeof update !== 'function') validateUpdate(update);
    const [cur] = this.select(filter, { limit: 1 });
    if (cur) {
      let u = update;
      if (typeof u === 'function') {
        // Frozen while the caller reads it: the document is changed in place afterwards.
        u = u(Object.freeze(cur) as unknown as T);
        validateUpdate(u);
        return { matched: 1, modified: this.modify({ ...cur }, u) ? 1 : 0 };
      }
      return { matched: 1, modified: this.modify(cur, u) ? 1 : 0 };
    }
    if (!options?.upsert || typeof update === 'function') return { matched: 0, modified: 0 };
    return { matched: 0, modified: 0, upsertedId: this.upsert(filter, update)._id };
  }

  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<UpdateResult> {
    return this.core.write(() => this.updateNow(filter, update, options));
  }

  findOneAndUpdate(
    filter: Filter,
    update: Update,
    options?: { upsert?: boolean; returnDocument?: 'before' | 'after'; sort?: SortSpec },
  ): Promise<T | null> {
    return this.core.write(() => {
      validateUpdate(update);
      const [found] = this.select(filter, { sort: options?.sort, limit: 1 });
      const wantAfter = options?.returnDocument === 'after';
      // modify() may change its argument in place: the document before is a copy then.
      const before = found && !wantAfter ? clone(found) : found;
      let after: Raw | undefined;
      if (found) after = this.modify(found, update) ?? found;
      else if (options?.upsert) after = this.upsert(filter, update);
      return ((wantAfter ? after : before) as T | undefined) ?? null;
    });
  }

  deleteOne(filter: Filter): Promise<number> {
    return this.core.write(() => {
      const [doc] = this.select(filter, { limit: 1 });
      if (doc) this.remove(doc._id);
      return doc ? 1 : 0;
    });
  }

  deleteMany(filter: Filter): Promise<number> {
    return this.core.write(() => {
      compileFilter(filter);
      const where = toWhere(filter, this.table);
      if (where.exact) {
        const sql = `DELETE FROM ${this.table.t} WHERE ${where.sql}`;
        const { changes } = this.core.stmt(sql).run(...where.params);
        this.core.wrote(changes * 100);
        return changes;
      }
      const docs = this.select(filter);
      for (const doc of docs) this.remove(doc._id);
      return docs.length;
    });
  }
}
