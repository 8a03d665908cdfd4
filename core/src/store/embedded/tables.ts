/**
 * One SQLite table per collection, `(_id TEXT PRIMARY KEY, doc TEXT NOT NULL)` with the document
 * as JSON (a rowid table: event documents of ~1 KB are past the size WITHOUT ROWID suits), plus
 * one column `"f:<field>"` per indexed field (other than `_id`) holding `json_extract(doc,
 * '$.<field>')`, and one index per declared index on those columns in order (UNIQUE for unique
 * ones). Why columns and not indexes on the expression: SQLite maintains an index on an
 * UPDATE only when the statement sets a column the index reads. An expression index reads
 * `doc`, which every update sets, so each update rewrote every index entry of the document
 * (a session's log-head move rewrote three); a column is set only when its value changed
 * (`update` compares `columnValues` before and after), so most updates touch no index page.
 * Writes compute the columns in SQL from the same JSON text (`json_extract`), so a column
 * always equals the expression it replaces. A store written before the columns existed (indexes on the expression) is
 * converted once when the store opens (`upgradeIndexes`, through documentStore.ts
 * openIndexed). Guarantees:
 * - index declarations persist in `_af_indexes`; declaring a name again with other fields or
 *   uniqueness throws; field names other than dotted identifiers are refused at declaration;
 * - `plain(field)` is true only for `_id` and indexed fields that never held an array (anywhere
 *   along the path), a boolean or an object in any document (tracked in `_af_fields`, checked
 *   by a scan when a field is first indexed and on every write after): sqlFilter.ts pushes
 *   conditions and sorts on those fields; `arrayFree(field)` (no array ever) lets it push
 *   type-checked equality through the index on fields holding booleans or objects too;
 * - unique indexes keep MongoDB's semantics for the values the domain uses — strings, numbers,
 *   null and missing (missing counts as null, so at most one document per key lacks the field:
 *   SQLite's UNIQUE treats NULLs as distinct, so `checkUnique` looks those up before the
 *   write). A boolean, object or array in a unique-indexed field is refused with a TypeError
 *   (MongoDB's per-element array keys are not supported by this store);
 * - SQLite unique violations become DuplicateKeyError naming the declared index and the key.
 * Tests: core/test/store.contract.ts (unique cases) and store.embedded.test.ts "refuses
 * booleans and arrays in unique-indexed fields …", "missing and null collide in a unique index".
 */
import type { Database, Statement } from 'better-sqlite3';
import { DuplicateKeyError, type Doc, type IndexSpec } from '../port.js';
import { fieldExpr, indexableField, jsonPath } from './sqlFilter.js';

export type Raw = Doc & Record<string, unknown>;

export const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;

interface IndexInfo {
  name: string;
  sqlName: string;
  fields: string[];
  unique: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The value under a dotted path, NON_PLAIN for a boolean or object, ARRAY when an array is met. */
const NON_PLAIN = Symbol('non-plain');
const ARRAY = Symbol('array');
function plainValueAt(doc: unknown, field: string): unknown {
  let cur: unknown = doc;
  for (const seg of field.split('.')) {
    if (Array.isArray(cur)) return ARRAY;
    if (!isObj(cur)) return undefined;
    cur = cur[seg];
  }
  if (cur === undefined || cur === null || typeof cur === 'string' || typeof cur === 'number')
    return cur;
  return Array.isArray(cur) ? ARRAY : NON_PLAIN;
}

/** SQL condition true for rows holding an array at or along `field`. */
function arraySql(field: string): string {
  const segs = field.split('.');
  return segs
    .map((_, i) => `json_type(doc,'${jsonPath(segs.slice(0, i + 1).join('.'))}') = 'array'`)
    .join(' OR ');
}

/** SQL condition true for rows holding a non-plain value at `field` (see plainValueAt). */
function nonPlainSql(field: string): string {
  return `${arraySql(field)} OR json_type(doc,'${jsonPath(field)}') IN ('true','false','object')`;
}

interface FieldState {
  /** Some document held a boolean, object or array there. */
  mixed: boolean;
  /** Some document held an array there or along the path. */
  arrays: boolean;
}

export function createMetaTables(db: Database): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS _af_indexes (coll TEXT NOT NULL, name TEXT NOT NULL, fields TEXT NOT NULL, uniq INTEGER NOT NULL, PRIMARY KEY (coll, name));
     CREATE TABLE IF NOT EXISTS _af_fields (coll TEXT NOT NULL, field TEXT NOT NULL, mixed INTEGER NOT NULL, arrays INTEGER NOT NULL, PRIMARY KEY (coll, field));`,
  );
}

export const tableName = (coll: string) => quoteIdent(`d:${coll}`);

export function createTable(db: Database, coll: string): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${tableName(coll)} (_id TEXT PRIMARY KEY, doc TEXT NOT NULL)`,
  );
}

/** The column of an indexed field (`_id` is its own column). */
export const columnOf = (field: string) => quoteIdent(`f:${field}`);

/** A document's indexed values as `update` compares them (objects as their JSON text). */
export type ColumnValues = unknown[];

/** The value under a dotted path the way json_extract finds it: objects only, no array steps. */
function extractLike(doc: unknown, field: string): unknown {
  let cur: unknown = doc;
  for (const seg of field.split('.')) {
    if (!isObj(cur)) return undefined;
    cur = cur[seg];
  }
  return typeof cur === 'object' && cur !== null ? JSON.stringify(cur) : cur;
}

export class Table {
  readonly t: string;
  /** Indexed field → its column, for the fields that have one. */
  private readonly cols = new Map<string, string>();
  private colFields: string[] = [];
  private insertSql = '';
  private readonly indexes = new Map<string, IndexInfo>();
  private readonly bySqlName = new Map<string, IndexInfo>();
  /** SQLite's "UNIQUE constraint failed: …" column list → the index. */
  private readonly byColumns = new Map<string, IndexInfo>();
  /** Indexed field → whether some document held a non-plain value there. */
  private readonly fields = new Map<string, FieldState>();
  private uniques: IndexInfo[] = [];

  constructor(
    private readonly db: Database,
    readonly coll: string,
    private readonly stmt: (sql: string) => Statement,
  ) {
    this.t = tableName(coll);
    createTable(db, coll);
    const idx = db
      .prepare('SELECT name, fields, uniq FROM _af_indexes WHERE coll = ?')
      .all(coll) as Array<{ name: string; fields: string; uniq: number }>;
    for (const r of idx) this.remember(r.name, JSON.parse(r.fields) as string[], r.uniq === 1);
    const fs = db
      .prepare('SELECT field, mixed, arrays FROM _af_fields WHERE coll = ?')
      .all(coll) as Array<{ field: string; mixed: number; arrays: number }>;
    for (const r of fs) this.fields.set(r.field, { mixed: r.mixed === 1, arrays: r.arrays === 1 });
    const columns = db.prepare(`PRAGMA table_info(${this.t})`).all() as Array<{ name: string }>;
    for (const { name } of columns)
      if (name.startsWith('f:')) this.cols.set(name.slice(2), quoteIdent(name));
    this.columnsChanged();
    this.upgraded = this.upgradeIndexes();
  }

  /** Indexes converted from expressions to columns when this table was opened. */
  readonly upgraded: number;

  /** The SQL expression of a field in queries: `_id`, its column, or json_extract. */
  readonly expr = (field: string): string => this.cols.get(field) ?? fieldExpr(field);

  private columnsChanged(): void {
    this.colFields = [...this.cols.keys()];
    const names = this.colFields.map((f) => `, ${this.cols.get(f)}`).join('');
    const values = this.colFields.map((f) => `, json_extract(@doc,'${jsonPath(f)}')`).join('');
    this.insertSql = `INSERT INTO ${this.t} (_id, doc${names}) VALUES (@id, @doc${values})`;
  }

  /** Adds the column of `field` (filled from every document) unless it exists. */
  private ensureColumn(field: string): void {
    if (field === '_id' || this.cols.has(field)) return;
    const col = columnOf(field);
    this.db.exec(`ALTER TABLE ${this.t} ADD COLUMN ${col}`);
    this.db.exec(`UPDATE ${this.t} SET ${col} = ${fieldExpr(field)}`);
    this.cols.set(field, col);
    this.columnsChanged();
  }

  private createIndex(info: IndexInfo, directions: Array<1 | -1>): void {
    for (const f of info.fields) this.ensureColumn(f);
    const cols = info.fields
      .map((f, i) => `${this.expr(f)}${directions[i] === -1 ? ' DESC' : ''}`)
      .join(', ');
    this.db.exec(
      `CREATE ${info.unique ? 'UNIQUE ' : ''}INDEX IF NOT EXISTS ${quoteIdent(info.sqlName)} ON ${this.t} (${cols})`,
    );
  }

  /**
   * Indexes a store made before the columns existed (on json_extract of `doc`) are rebuilt on
   * columns, once, in one transaction. Sort directions come from the old definition.
   */
  private upgradeIndexes(): number {
    const old = [...this.indexes.values()].flatMap((info) => {
      const row = this.db
        .prepare(`SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?`)
        .get(info.sqlName) as { sql: string | null } | undefined;
      return row?.sql?.includes('json_extract(') ? [{ info, sql: row.sql }] : [];
    });
    if (!old.length) return 0;
    this.db.transaction(() => {
      for (const { info, sql } of old) {
        const inner = sql.slice(sql.indexOf(' ON ') + 4);
        const dirs = info.fields.map((f) =>
          inner.includes(`${fieldExpr(f)} DESC`) ? (-1 as const) : (1 as const),
        );
        this.db.exec(`DROP INDEX ${quoteIdent(info.sqlName)}`);
        this.createIndex(info, dirs);
      }
    })();
    return old.length;
  }

  /** The indexed values of `doc`, to compare before and after an update. */
  columnValues(doc: Raw): ColumnValues {
    return this.colFields.map((f) => extractLike(doc, f));
  }

  /** Inserts `doc` (its JSON text `json`), columns computed from the same text. */
  insert(id: string, json: string): void {
    this.stmt(this.insertSql).run({ id, doc: json });
  }

  /**
   * Rewrites the document `next` (JSON text `json`); sets only the columns whose value differs
   * from `before` (columnValues of the document as it was), so indexes on the others are not
   * touched.
   */
  update(next: Raw, json: string, before: ColumnValues): void {
    let set = '';
    for (let i = 0; i < this.colFields.length; i++) {
      const f = this.colFields[i]!;
      if (i < before.length && extractLike(next, f) === before[i]) continue;
      set += `, ${this.cols.get(f)} = json_extract(@doc,'${jsonPath(f)}')`;
    }
    this.stmt(`UPDATE ${this.t} SET doc = @doc${set} WHERE _id = @id`).run({
      id: next._id,
      doc: json,
    });
  }

  readonly plain = (field: string): boolean =>
    field === '_id' || this.fields.get(field)?.mixed === false;

  /** An indexed field that never held an array (booleans and objects allowed). */
  readonly arrayFree = (field: string): boolean =>
    field === '_id' || this.fields.get(field)?.arrays === false;

  private remember(name: string, fields: string[], unique: boolean): IndexInfo {
    const info = { name, sqlName: `ix:${this.coll}:${name}`, fields, unique };
    this.indexes.set(name, info);
    this.bySqlName.set(info.sqlName, info);
    const key = fields.map((f) => `d:${this.coll}.${f === '_id' ? '_id' : `f:${f}`}`).join(', ');
    this.byColumns.set(key, info);
    this.uniques = [...this.indexes.values()].filter((i) => i.unique);
    return info;
  }

  declare(spec: IndexSpec): void {
    const entries = Object.entries(spec.fields);
    if (entries.length === 0) throw new Error(`index on ${this.coll} needs at least one field`);
    const fields = entries.map(([f]) => f);
    const bad = fields.find((f) => !indexableField(f));
    if (bad !== undefined)
      throw new Error(
        `index on ${this.coll}: field ${JSON.stringify(bad)} is not supported by the embedded store (dotted identifiers only)`,
      );
    const name = spec.name ?? entries.map(([f, d]) => `${f}_${d}`).join('_');
    const unique = spec.unique === true;
    const same = this.indexes.get(name);
    if (same) {
      if (same.unique !== unique || same.fields.join() !== fields.join())
        throw new Error(`index ${name} on ${this.coll} is already declared differently`);
      return;
    }
    for (const f of fields) {
      if (f === '_id' || this.fields.has(f)) continue;
      const probe = (cond: string) =>
        this.db.prepare(`SELECT 1 FROM ${this.t} WHERE ${cond} LIMIT 1`).get() !== undefined;
      const mixed = probe(nonPlainSql(f));
      const arrays = mixed && probe(arraySql(f));
      if (unique && mixed)
        throw new TypeError(
          `unique index ${name} on ${this.coll}: documents hold booleans, objects or arrays in ${f}; the embedded store supports strings, numbers, null or missing there`,
        );
      this.db
        .prepare(
          'INSERT OR REPLACE INTO _af_fields (coll, field, mixed, arrays) VALUES (?, ?, ?, ?)',
        )
        .run(this.coll, f, mixed ? 1 : 0, arrays ? 1 : 0);
      this.fields.set(f, { mixed, arrays });
    }
    const info = { name, sqlName: `ix:${this.coll}:${name}`, fields, unique };
    try {
      this.createIndex(
        info,
        entries.map(([, d]) => d),
      );
    } catch (err) {
      throw this.duplicate(err, null, info) ?? err;
    }
    this.db
      .prepare('INSERT INTO _af_indexes (coll, name, fields, uniq) VALUES (?, ?, ?, ?)')
      .run(this.coll, name, JSON.stringify(fields), unique ? 1 : 0);
    this.remember(name, fields, unique);
  }

  /**
   * Before writing `doc`: refuses non-plain values in unique fields, throws DuplicateKeyError
   * for a null/missing key another document already holds, and records indexed fields that
   * turn non-plain.
   */
  checkWrite(doc: Raw): void {
    for (const ix of this.uniques) {
      const vals = ix.fields.map((f) => (f === '_id' ? doc._id : plainValueAt(doc, f)));
      const i = vals.findIndex((v) => v === NON_PLAIN || v === ARRAY);
      if (i >= 0)
        throw new TypeError(
          `${this.coll}: unique index ${ix.name} takes strings, numbers, null or missing in ${ix.fields[i]}; the embedded store refuses booleans, objects and arrays there`,
        );
      if (!vals.some((v) => v === undefined || v === null)) continue;
      const where = ix.fields.map((f) => `${this.expr(f)} IS ?`).join(' AND ');
      const other = this.stmt(`SELECT _id FROM ${this.t} WHERE ${where} AND _id <> ? LIMIT 1`).get(
        ...vals.map((v) => v ?? null),
        doc._id,
      );
      if (other !== undefined) throw new DuplicateKeyError(this.coll, ix.name, keyOf(ix, doc));
    }
    for (const [field, st] of this.fields) {
      if (st.arrays) continue;
      const v = plainValueAt(doc, field);
      if (v !== ARRAY && (st.mixed || v !== NON_PLAIN)) continue;
      const next = { mixed: true, arrays: v === ARRAY };
      this.stmt('UPDATE _af_fields SET mixed = ?, arrays = ? WHERE coll = ? AND field = ?').run(
        1,
        next.arrays ? 1 : 0,
        this.coll,
        field,
      );
      this.fields.set(field, next);
    }
  }

  /** DuplicateKeyError for a SQLite constraint error, or null when `err` is something else. */
  duplicate(err: unknown, doc: Raw | null, only?: IndexInfo): DuplicateKeyError | null {
    const e = err as { code?: string; message?: string };
    if (e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
      return new DuplicateKeyError(this.coll, '_id_', { _id: doc?._id });
    if (e?.code !== 'SQLITE_CONSTRAINT_UNIQUE') return null;
    // SQLite names an index on expressions ("index 'ix:…'"), or the columns of an index on
    // columns ("d:coll.f:a, d:coll.f:b").
    const msg = e.message ?? '';
    const m = /index '(.*)'$/.exec(msg);
    const cols = /^UNIQUE constraint failed: (.*)$/.exec(msg);
    const ix =
      only ?? (m ? this.bySqlName.get(m[1]!) : cols ? this.byColumns.get(cols[1]!) : undefined);
    if (!ix) return new DuplicateKeyError(this.coll, '_id_', { _id: doc?._id });
    return new DuplicateKeyError(this.coll, ix.name, doc ? keyOf(ix, doc) : {});
  }
}

function keyOf(ix: IndexInfo, doc: Raw): Record<string, unknown> {
  return Object.fromEntries(
    ix.fields.map((f) => {
      const v = f === '_id' ? doc._id : plainValueAt(doc, f);
      return [f, v === undefined ? null : v];
    }),
  );
}
