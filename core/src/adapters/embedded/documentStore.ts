/**
 * Embedded DocumentStore: every document lives in memory; with `dir` the store is durable
 * through a write-ahead log of whole documents (see wal.ts for the log, snapshots, recovery
 * and the lock file, and their guarantees). Guarantees, beyond the port's:
 * - operations take effect in call order, each fully or not at all: validation and unique
 *   checks run before memory changes, and one operation is one log line;
 * - with `dir`, an operation resolves only once its log record and every earlier one is
 *   fdatasync'ed; reads also wait for earlier writes to be durable, so no caller observes a
 *   state a crash could undo;
 * - after a failed log write the store refuses every operation (memory may hold changes that
 *   are not durable) and healthy() is false.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
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
import {
  applyUpdate,
  clone,
  compareBy,
  compileFilter,
  eqLookupKeys,
  indexValues,
  storable,
  uniqueKeys,
  upsertSeed,
  validateUpdate,
  valuesEqual,
} from './query.js';
import { acquireLock, fsyncDir, Log, recover, type Raw, type Rec } from './wal.js';

export interface EmbeddedStoreOptions {
  /** Data directory; without it the store is memory only. */
  dir?: string;
  /** Log size that triggers compaction; default 64 MiB. */
  compactAfterBytes?: number;
}

export interface EmbeddedStoreStats {
  /** fdatasync calls on the log; `records / syncs` is the group-commit factor. */
  syncs: number;
  records: number;
  /** Size of the current log file. */
  logBytes: number;
  compactions: number;
  /** Documents examined by queries since open (index effectiveness). */
  docsExamined: number;
  /** Last compaction failure; the logs still hold everything, compaction is retried later. */
  compactionError?: string;
}

export interface EmbeddedStore extends DocumentStore {
  stats(): EmbeddedStoreStats;
}

interface Index {
  name: string;
  fields: string[];
  unique: boolean;
  keys: Map<string, string>;
}

class State {
  readonly docs = new Map<string, Raw>();
  readonly indexes: Index[] = [];
  /** Equality index on the first field of every declared index: value → ids. */
  readonly eq = new Map<string, Map<unknown, Set<string>>>();
}

const EMPTY: ReadonlySet<string> = new Set();
const copy = <T>(doc: Raw | undefined): T | null => (doc ? (clone(doc) as unknown as T) : null);
const newId = () =>
  Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, '0') + randomBytes(8).toString('hex');
const keyObject = (fields: string[], key: string) => {
  const vals = JSON.parse(key) as unknown[];
  return Object.fromEntries(fields.map((f, i) => [f, vals[i]]));
};

/** Ids that are a superset of the filter's matches, from `_id` or equality indexes; null = scan. */
function lookup(st: State, filter: Filter): ReadonlySet<string> | null {
  let best: ReadonlySet<string> | null = null;
  const consider = (s: ReadonlySet<string>) => {
    if (!best || s.size < best.size) best = s;
  };
  for (const [field, cond] of Object.entries(filter)) {
    if (field === '$or') {
      const sets = Array.isArray(cond) ? cond.map((f: Filter) => lookup(st, f)) : [null];
      if (sets.length && sets.every((s) => s)) consider(new Set(sets.flatMap((s) => [...s!])));
      continue;
    }
    const keys = eqLookupKeys(cond);
    const m = field === '_id' ? undefined : st.eq.get(field);
    if (!keys || (field !== '_id' && !m)) continue;
    if (field === '_id')
      consider(new Set(keys.filter((k): k is string => typeof k === 'string' && st.docs.has(k))));
    else if (keys.length === 1) consider(m!.get(keys[0]) ?? EMPTY);
    else consider(new Set(keys.flatMap((k) => [...(m!.get(k) ?? EMPTY)])));
  }
  return best;
}

function addEq(m: Map<unknown, Set<string>>, field: string, doc: Raw): void {
  for (const v of indexValues(doc, field)) {
    const ids = m.get(v);
    if (ids) ids.add(doc._id);
    else m.set(v, new Set([doc._id]));
  }
}

function addIndexes(st: State, doc: Raw): void {
  for (const ix of st.indexes)
    if (ix.unique) for (const k of uniqueKeys(doc, ix.fields)) ix.keys.set(k, doc._id);
  for (const [field, m] of st.eq) addEq(m, field, doc);
}

function dropIndexes(st: State, doc: Raw): void {
  for (const ix of st.indexes) {
    if (ix.unique)
      for (const k of uniqueKeys(doc, ix.fields)) if (ix.keys.get(k) === doc._id) ix.keys.delete(k);
  }
  for (const [field, m] of st.eq) {
    for (const v of indexValues(doc, field)) {
      const ids = m.get(v);
      if (ids?.delete(doc._id) && ids.size === 0) m.delete(v);
    }
  }
}

function declareIndex(coll: string, st: State, spec: IndexSpec): void {
  const fields = Object.keys(spec.fields);
  if (fields.length === 0) throw new Error(`index on ${coll} needs at least one field`);
  const name =
    spec.name ??
    Object.entries(spec.fields)
      .map(([f, d]) => `${f}_${d}`)
      .join('_');
  const unique = spec.unique === true;
  const same = st.indexes.find((ix) => ix.name === name);
  if (same) {
    if (same.unique !== unique || same.fields.join() !== fields.join())
      throw new Error(`index ${name} on ${coll} is already declared differently`);
    return;
  }
  const ix: Index = { name, fields, unique, keys: new Map() };
  if (unique) {
    for (const doc of st.docs.values()) {
      for (const k of uniqueKeys(doc, fields)) {
        if (ix.keys.has(k)) throw new DuplicateKeyError(coll, name, keyObject(fields, k));
        ix.keys.set(k, doc._id);
      }
    }
  }
  st.indexes.push(ix);
  if (fields[0] !== '_id' && !st.eq.has(fields[0])) {
    const m = new Map<unknown, Set<string>>();
    for (const doc of st.docs.values()) addEq(m, fields[0], doc);
    st.eq.set(fields[0], m);
  }
}

class Embedded implements EmbeddedStore {
  private closed = false;
  private examined = 0;

  constructor(
    private readonly states: Map<string, State>,
    private readonly log?: Log,
    private readonly unlock?: () => Promise<void>,
  ) {}

  collection<T extends Doc>(spec: CollectionSpec): Collection<T> {
    this.live();
    let st = this.states.get(spec.name);
    if (!st) this.states.set(spec.name, (st = new State()));
    for (const ix of spec.indexes ?? []) declareIndex(spec.name, st, ix);
    return new Handle<T>(this, spec.name, st);
  }

  async ready(): Promise<void> {
    this.live();
  }

  async healthy(): Promise<boolean> {
    return !this.closed && !this.log?.failed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.log?.close();
    } finally {
      await this.unlock?.();
    }
  }

  stats(): EmbeddedStoreStats {
    const l = this.log;
    return {
      syncs: l?.syncs ?? 0,
      records: l?.records ?? 0,
      logBytes: l?.bytes ?? 0,
      compactions: l?.compactions ?? 0,
      docsExamined: this.examined,
      compactionError: l?.compactionError,
    };
  }

  live(): void {
    if (this.closed) throw new Error('embedded store is closed');
    if (this.log?.failed) throw this.log.failed;
  }

  /** Runs `op` against memory now (call order), then resolves once everything so far is durable. */
  async run<R>(op: () => R): Promise<R> {
    this.live();
    const result = op();
    if (this.log) await this.log.settle();
    return result;
  }

  /** Matching stored documents (not copies) in sort order, after skip/limit. */
  select(st: State, filter: Filter, opts: FindOptions = {}): Raw[] {
    const pred = compileFilter(filter);
    const cmp = opts.sort && Object.keys(opts.sort).length ? compareBy(opts.sort) : undefined;
    const skip = Math.max(0, opts.skip ?? 0);
    const limit = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
    const ids = lookup(st, filter);
    const out: Raw[] = [];
    for (const item of ids ?? st.docs.values()) {
      const doc = typeof item === 'string' ? st.docs.get(item) : item;
      this.examined++;
      if (doc && pred(doc)) {
        out.push(doc);
        if (!cmp && out.length >= skip + limit) break;
      }
    }
    if (cmp && skip + limit === 1)
      return out.length ? [out.reduce((a, b) => (cmp(b, a) < 0 ? b : a))] : [];
    if (cmp) out.sort(cmp);
    return skip > 0 || limit !== Infinity ? out.slice(skip, skip + limit) : out;
  }

  /** Stores `next` (replacing `prev`) after the unique checks; throws before any change. */
  put(coll: string, st: State, prev: Raw | undefined, next: Raw): void {
    if (!prev && st.docs.has(next._id))
      throw new DuplicateKeyError(coll, '_id_', { _id: next._id });
    for (const ix of st.indexes) {
      if (!ix.unique) continue;
      for (const k of uniqueKeys(next, ix.fields)) {
        const owner = ix.keys.get(k);
        if (owner !== undefined && owner !== next._id)
          throw new DuplicateKeyError(coll, ix.name, keyObject(ix.fields, k));
      }
    }
    if (prev) dropIndexes(st, prev);
    st.docs.set(next._id, next);
    addIndexes(st, next);
    this.log?.append({ c: coll, op: 'put', doc: next });
  }

  remove(coll: string, st: State, doc: Raw): void {
    dropIndexes(st, doc);
    st.docs.delete(doc._id);
    this.log?.append({ c: coll, op: 'del', id: doc._id });
  }

  /** Applies `update` to `cur`; returns the new document, or undefined when nothing changed. */
  modify(coll: string, st: State, cur: Raw, update: Update): Raw | undefined {
    const next = storable(applyUpdate(cur, update, false)) as Raw;
    if (valuesEqual(next, cur)) return undefined;
    this.put(coll, st, cur, next);
    return next;
  }

  upsert(coll: string, st: State, filter: Filter, update: Update): Raw {
    const seeded = applyUpdate(upsertSeed(filter), update, true);
    const doc = storable(seeded._id === undefined ? { _id: newId(), ...seeded } : seeded) as Raw;
    if (typeof doc._id !== 'string') throw new TypeError(`${coll}: _id must be a string`);
    this.put(coll, st, undefined, doc);
    return doc;
  }
}

class Handle<T extends Doc> implements Collection<T> {
  constructor(
    private readonly db: Embedded,
    readonly name: string,
    private readonly st: State,
  ) {}

  insertOne(doc: T): Promise<void> {
    return this.db.run(() => {
      const next = storable(doc) as Raw;
      if (typeof next._id !== 'string') throw new TypeError(`${this.name}: _id must be a string`);
      this.db.put(this.name, this.st, undefined, next);
    });
  }

  insertMany(docs: T[]): Promise<void> {
    return this.db.run(() => {
      docs.forEach((doc, i) => {
        const next = storable(doc) as Raw;
        if (typeof next._id !== 'string') throw new TypeError(`${this.name}: _id must be a string`);
        try {
          this.db.put(this.name, this.st, undefined, next);
        } catch (err) {
          if (err instanceof DuplicateKeyError) err.insertedCount = i;
          throw err;
        }
      });
    });
  }

  findOne(filter: Filter, options?: FindOptions): Promise<T | null> {
    return this.db.run(() => copy<T>(this.db.select(this.st, filter, { ...options, limit: 1 })[0]));
  }

  find(filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.db.run(() => this.db.select(this.st, filter, options).map((d) => copy<T>(d)!));
  }

  count(filter: Filter): Promise<number> {
    return this.db.run(() =>
      Object.keys(filter).length ? this.db.select(this.st, filter).length : this.st.docs.size,
    );
  }

  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<UpdateResult> {
    return this.db.run(() => {
      validateUpdate(update);
      const [cur] = this.db.select(this.st, filter, { limit: 1 });
      if (cur)
        return { matched: 1, modified: this.db.modify(this.name, this.st, cur, update) ? 1 : 0 };
      if (!options?.upsert) return { matched: 0, modified: 0 };
      return {
        matched: 0,
        modified: 0,
        upsertedId: this.db.upsert(this.name, this.st, filter, update)._id,
      };
    });
  }

  findOneAndUpdate(
    filter: Filter,
    update: Update,
    options?: { upsert?: boolean; returnDocument?: 'before' | 'after'; sort?: SortSpec },
  ): Promise<T | null> {
    return this.db.run(() => {
      validateUpdate(update);
      const [cur] = this.db.select(this.st, filter, { sort: options?.sort, limit: 1 });
      let after: Raw | undefined;
      if (cur) after = this.db.modify(this.name, this.st, cur, update) ?? cur;
      else if (options?.upsert) after = this.db.upsert(this.name, this.st, filter, update);
      return copy<T>(options?.returnDocument === 'after' ? after : cur);
    });
  }

  deleteOne(filter: Filter): Promise<number> {
    return this.db.run(() => {
      const [doc] = this.db.select(this.st, filter, { limit: 1 });
      if (doc) this.db.remove(this.name, this.st, doc);
      return doc ? 1 : 0;
    });
  }

  deleteMany(filter: Filter): Promise<number> {
    return this.db.run(() => {
      const docs = this.db.select(this.st, filter);
      for (const doc of docs) this.db.remove(this.name, this.st, doc);
      return docs.length;
    });
  }
}

export async function openEmbeddedStore(
  options: EmbeddedStoreOptions = {},
): Promise<EmbeddedStore> {
  const states = new Map<string, State>();
  if (options.dir === undefined) return new Embedded(states);
  const dir = resolve(options.dir);
  const created = await mkdir(dir, { recursive: true });
  if (created) await fsyncDir(dirname(dir));
  const unlock = await acquireLock(dir);
  try {
    const { fh, gen, bytes } = await recover(dir, (rec) => {
      let st = states.get(rec.c);
      if (!st) states.set(rec.c, (st = new State()));
      if (rec.op === 'put') st.docs.set(rec.doc._id, rec.doc);
      else st.docs.delete(rec.id);
    });
    const cut = () => {
      const out: Rec[] = [];
      for (const [c, st] of states)
        for (const doc of st.docs.values()) out.push({ c, op: 'put', doc });
      return out;
    };
    const log = new Log(dir, fh, gen, bytes, options.compactAfterBytes ?? 64 * 1024 * 1024, cut);
    return new Embedded(states, log, unlock);
  } catch (err) {
    await unlock();
    throw err;
  }
}
