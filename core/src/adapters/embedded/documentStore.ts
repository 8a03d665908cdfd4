/**
 * Embedded DocumentStore: every document lives in memory; with `dir` the store is durable
 * through a write-ahead log of whole documents. Guarantees, beyond the port's:
 * - operations take effect in call order, each fully or not at all: validation and unique
 *   checks run before memory changes, and one operation is one log line;
 * - with `dir`, an operation resolves only once its log record and every earlier one is
 *   fdatasync'ed; reads also wait for earlier writes to be durable, so no caller observes a
 *   state a crash could undo. Records appended while a sync is in flight share the next sync;
 * - recovery loads the newest complete snapshot N and replays logs N, N+1, ... in order. Only
 *   an invalid last line of the newest log (a torn write) is dropped and truncated away; any
 *   other invalid line fails the open;
 * - compaction switches appends to log N+1, then writes snapshot N+1 (tmp, fsync, rename, fsync
 *   dir) from the documents as of the switch, then deletes older files. Records hold whole
 *   documents or deletions, so replaying log N+1 over snapshot N+1 is idempotent, and until
 *   snapshot N+1 exists recovery replays logs N and N+1 over snapshot N: a crash loses nothing;
 * - a LOCK file holding the owner's pid keeps a second process (or a second open in this
 *   process) out of the dir; a lock whose pid is dead is taken over;
 * - after a failed log write the store refuses every operation (memory may hold changes that
 *   are not durable) and healthy() is false.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import {
  DuplicateKeyError,
  type Collection, type CollectionSpec, type Doc, type DocumentStore, type Filter,
  type FindOptions, type IndexSpec, type SortSpec, type Update, type UpdateResult,
} from '../../ports/store.js';
import {
  applyUpdate, clone, compareBy, compileFilter, eqLookupKeys, indexValues, storable,
  uniqueKeys, upsertSeed, validateUpdate, valuesEqual,
} from './query.js';

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

type Raw = Doc & Record<string, unknown>;
type Rec = { c: string; op: 'put'; doc: Raw } | { c: string; op: 'del'; id: string };
interface Index { name: string; fields: string[]; unique: boolean; keys: Map<string, string> }

class State {
  readonly docs = new Map<string, Raw>();
  readonly indexes: Index[] = [];
  /** Equality index on the first field of every declared index: value → ids. */
  readonly eq = new Map<string, Map<unknown, Set<string>>>();
}

const pad = (gen: number) => String(gen).padStart(12, '0');
const walName = (gen: number) => `wal-${pad(gen)}.log`;
const snapName = (gen: number) => `snapshot-${pad(gen)}.jsonl`;
const WAL_RE = /^wal-(\d{12})\.log$/;
const SNAP_RE = /^snapshot-(\d{12})\.jsonl$/;
const gens = (names: string[], re: RegExp) =>
  names.map((n) => re.exec(n)).filter((m) => m !== null).map((m) => Number(m[1])).sort((a, b) => a - b);

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try { await fh.sync(); } finally { await fh.close(); }
}

async function writeAll(fh: FileHandle, buf: Buffer): Promise<void> {
  for (let off = 0; off < buf.length; ) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
}

/** Calls `fn` per line with its byte offset; returns the file size. */
async function eachLine(file: string, fn: (text: string, start: number, terminated: boolean) => void): Promise<number> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    let carry = Buffer.alloc(0), pos = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) break;
      const data = carry.length ? Buffer.concat([carry, buf.subarray(0, bytesRead)]) : buf.subarray(0, bytesRead);
      let s = 0;
      for (let nl = data.indexOf(10, s); nl !== -1; nl = data.indexOf(10, s)) {
        fn(data.toString('utf8', s, nl), pos + s, true);
        s = nl + 1;
      }
      carry = Buffer.from(data.subarray(s));
      pos += s;
    }
    if (carry.length) fn(carry.toString('utf8'), pos, false);
    return pos + carry.length;
  } finally { await fh.close(); }
}

function asRecord(v: unknown): Rec | undefined {
  const r = v as Record<string, unknown> | null;
  if (typeof r !== 'object' || r === null || typeof r.c !== 'string') return undefined;
  const doc = r.doc as Raw | null;
  if (r.op === 'put' && typeof doc === 'object' && doc !== null && typeof doc._id === 'string') return r as Rec;
  if (r.op === 'del' && typeof r.id === 'string') return r as Rec;
  return undefined;
}

async function readSnapshot(file: string, apply: (r: Rec) => void): Promise<void> {
  let n = 0, count = 0, end: number | undefined;
  await eachLine(file, (text, _start, terminated) => {
    n++;
    const fail = (why: string): never => { throw new Error(`embedded store: snapshot ${file} line ${n} ${why}; refusing to open`); };
    if (end !== undefined) fail('follows the end marker');
    let v: Record<string, unknown> | null = null;
    try { v = JSON.parse(text); } catch { fail('is not valid JSON'); }
    if (!terminated) fail('is truncated');
    if (n === 1) {
      if (v?.snapshot !== 1) fail('is not a snapshot header');
      return;
    }
    if (typeof v?.end === 'number') {
      if (v.end !== count) fail(`declares ${v.end} documents but ${count} precede it`);
      end = v.end;
      return;
    }
    const rec = asRecord(v);
    if (rec?.op !== 'put') return fail('is not a document record');
    apply(rec);
    count++;
  });
  if (end === undefined) throw new Error(`embedded store: snapshot ${file} has no end marker; refusing to open`);
}

/** Replays one log; a bad last line of the newest log is truncated away, anywhere else it fails. */
async function replay(file: string, apply: (r: Rec) => void, newest: boolean): Promise<number> {
  let n = 0, bad: { line: number; offset: number } | undefined;
  const corrupt = () => new Error(
    `embedded store: log ${file} line ${bad?.line} (byte ${bad?.offset}) is corrupt; refusing to open ` +
    '(only a torn last line of the newest log is skipped)');
  const size = await eachLine(file, (text, start, terminated) => {
    n++;
    if (bad) throw corrupt();
    let rec: Rec | undefined;
    try { rec = terminated ? asRecord(JSON.parse(text)) : undefined; } catch { rec = undefined; }
    if (rec) apply(rec);
    else bad = { line: n, offset: start };
  });
  if (!bad) return size;
  if (!newest) throw corrupt();
  const fh = await open(file, 'r+');
  try { await fh.truncate(bad.offset); await fh.sync(); } finally { await fh.close(); }
  return bad.offset;
}

/** Loads snapshot + logs into `apply`; returns the newest log opened for appending. */
async function recover(dir: string, apply: (r: Rec) => void): Promise<{ fh: FileHandle; gen: number; bytes: number }> {
  const names = await readdir(dir);
  const snaps = gens(names, SNAP_RE), wals = gens(names, WAL_RE);
  const base = snaps.length ? snaps[snaps.length - 1] : 0;
  for (const n of names) if (n.endsWith('.tmp')) await unlink(join(dir, n));
  for (const g of snaps) if (g < base) await unlink(join(dir, snapName(g)));
  for (const g of wals) if (g < base) await unlink(join(dir, walName(g)));
  const live = wals.filter((g) => g >= base);
  live.forEach((g, i) => {
    if (g !== base + i) throw new Error(`embedded store ${dir}: ${walName(base + i)} is missing before ${walName(g)}; refusing to open`);
  });
  if (snaps.length) await readSnapshot(join(dir, snapName(base)), apply);
  let bytes = 0;
  for (const [i, g] of live.entries()) bytes = await replay(join(dir, walName(g)), apply, i === live.length - 1);
  const gen = live.length ? live[live.length - 1] : base;
  const fh = await open(join(dir, walName(gen)), 'a');
  if (!live.length) await fsyncDir(dir);
  return { fh, gen, bytes };
}

class Log {
  syncs = 0;
  records = 0;
  compactions = 0;
  compactionError?: string;
  failed?: Error;
  private pending: string[] = [];
  private appended = 0;
  private durable = 0;
  private waiters: Array<{ seq: number; resolve: () => void; reject: (e: Error) => void }> = [];
  private running?: Promise<void>;
  private compaction?: Promise<void>;

  constructor(
    private readonly dir: string,
    private fh: FileHandle,
    private gen: number,
    public bytes: number,
    private readonly compactAfter: number,
    private readonly cut: () => Rec[],
  ) {}

  append(rec: Rec): void {
    this.pending.push(`${JSON.stringify(rec)}\n`);
    this.appended++;
    this.running ??= new Promise<void>((r) => setImmediate(r)).then(() => this.flush());
  }

  /** Resolves once everything appended so far is durable. */
  settle(): Promise<void> {
    if (this.failed) return Promise.reject(this.failed);
    const seq = this.appended;
    if (this.durable >= seq) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ seq, resolve, reject }));
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending, upTo = this.appended;
        this.pending = [];
        const buf = Buffer.from(batch.join(''));
        await writeAll(this.fh, buf);
        await this.fh.datasync();
        this.syncs++;
        this.records += batch.length;
        this.bytes += buf.length;
        this.durable = upTo;
        let n = 0;
        while (n < this.waiters.length && this.waiters[n].seq <= upTo) n++;
        for (const w of this.waiters.splice(0, n)) w.resolve();
        if (this.bytes > this.compactAfter && !this.compaction) await this.rotate();
      }
    } catch (err) {
      this.failed = new Error(`embedded store ${this.dir}: log write failed; the store refuses further operations`, { cause: err });
      for (const w of this.waiters.splice(0)) w.reject(this.failed);
    } finally {
      this.running = undefined;
    }
  }

  /** Runs between batches: switches appends to a new log, then snapshots in the background. */
  private async rotate(): Promise<void> {
    const gen = this.gen + 1;
    let fh: FileHandle | undefined;
    try {
      fh = await open(join(this.dir, walName(gen)), 'w');
      await fsyncDir(this.dir);
    } catch (err) {
      await fh?.close().catch(() => undefined);
      this.compactionError = String(err);
      return;
    }
    const cut = this.cut(), old = this.fh;
    [this.fh, this.gen, this.bytes] = [fh, gen, 0];
    await old.close().catch(() => undefined);
    this.compaction = this.snapshot(gen, cut).then(
      () => { this.compactions++; this.compactionError = undefined; },
      (err) => { this.compactionError = String(err); },
    ).finally(() => { this.compaction = undefined; });
  }

  private async snapshot(gen: number, cut: Rec[]): Promise<void> {
    const tmp = join(this.dir, `${snapName(gen)}.tmp`);
    const fh = await open(tmp, 'w');
    try {
      let chunk = `${JSON.stringify({ snapshot: 1, gen })}\n`;
      for (const rec of cut) {
        chunk += `${JSON.stringify(rec)}\n`;
        if (chunk.length >= 1 << 20) {
          await writeAll(fh, Buffer.from(chunk));
          chunk = '';
        }
      }
      await writeAll(fh, Buffer.from(`${chunk}${JSON.stringify({ end: cut.length })}\n`));
      await fh.sync();
    } catch (err) {
      await fh.close();
      await unlink(tmp).catch(() => undefined);
      throw err;
    }
    await fh.close();
    await rename(tmp, join(this.dir, snapName(gen)));
    await fsyncDir(this.dir);
    const names = await readdir(this.dir);
    for (const g of gens(names, SNAP_RE)) if (g < gen) await unlink(join(this.dir, snapName(g)));
    for (const g of gens(names, WAL_RE)) if (g < gen) await unlink(join(this.dir, walName(g)));
  }

  /** Drains pending records and any compaction, then closes the log file. */
  async close(): Promise<void> {
    while (this.running || this.compaction) await (this.running ?? this.compaction);
    await this.fh.close();
    if (this.failed) throw this.failed;
  }
}

const lockedHere = new Set<string>();

async function readPid(file: string): Promise<number | undefined> {
  try {
    return Number.parseInt(await readFile(file, 'utf8'), 10);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Creates `dir/LOCK` (pid inside) atomically via link; returns the release function. */
async function acquireLock(dir: string): Promise<() => Promise<void>> {
  const file = join(dir, 'LOCK');
  const mine = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  await writeFile(mine, `${process.pid}\n`);
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        await link(mine, file);
        lockedHere.add(dir);
        return async () => {
          lockedHere.delete(dir);
          await unlink(file).catch(() => undefined);
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const pid = await readPid(file);
      if (pid === undefined) continue;
      // The same pid without an in-process holder is a previous incarnation (e.g. pid 1 in a container).
      if (isAlive(pid) && (pid !== process.pid || lockedHere.has(dir))) {
        throw new Error(`embedded store dir ${dir} is locked by pid ${pid} (${file}); stop that process, or delete the lock file if no process uses the dir`);
      }
      const aside = `${mine}.stale`;
      try {
        await rename(file, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const moved = await readPid(aside);
      if (!Object.is(moved, pid)) {
        await link(aside, file).catch(() => undefined);
        await unlink(aside);
        throw new Error(`embedded store dir ${dir}: another process took over the stale lock concurrently`);
      }
      await unlink(aside);
    }
    throw new Error(`embedded store dir ${dir}: could not acquire ${file}`);
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}

const EMPTY: ReadonlySet<string> = new Set();
const copy = <T>(doc: Raw | undefined): T | null => (doc ? (clone(doc) as unknown as T) : null);
const newId = () => Math.floor(Date.now() / 1000).toString(16).padStart(8, '0') + randomBytes(8).toString('hex');
const keyObject = (fields: string[], key: string) => {
  const vals = JSON.parse(key) as unknown[];
  return Object.fromEntries(fields.map((f, i) => [f, vals[i]]));
};

/** Ids that are a superset of the filter's matches, from `_id` or equality indexes; null = scan. */
function lookup(st: State, filter: Filter): ReadonlySet<string> | null {
  let best: ReadonlySet<string> | null = null;
  const consider = (s: ReadonlySet<string>) => { if (!best || s.size < best.size) best = s; };
  for (const [field, cond] of Object.entries(filter)) {
    if (field === '$or') {
      const sets = Array.isArray(cond) ? cond.map((f: Filter) => lookup(st, f)) : [null];
      if (sets.length && sets.every((s) => s)) consider(new Set(sets.flatMap((s) => [...s!])));
      continue;
    }
    const keys = eqLookupKeys(cond);
    const m = field === '_id' ? undefined : st.eq.get(field);
    if (!keys || (field !== '_id' && !m)) continue;
    if (field === '_id') consider(new Set(keys.filter((k): k is string => typeof k === 'string' && st.docs.has(k))));
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
  for (const ix of st.indexes) if (ix.unique) for (const k of uniqueKeys(doc, ix.fields)) ix.keys.set(k, doc._id);
  for (const [field, m] of st.eq) addEq(m, field, doc);
}

function dropIndexes(st: State, doc: Raw): void {
  for (const ix of st.indexes) {
    if (ix.unique) for (const k of uniqueKeys(doc, ix.fields)) if (ix.keys.get(k) === doc._id) ix.keys.delete(k);
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
  const name = spec.name ?? Object.entries(spec.fields).map(([f, d]) => `${f}_${d}`).join('_');
  const unique = spec.unique === true;
  const same = st.indexes.find((ix) => ix.name === name);
  if (same) {
    if (same.unique !== unique || same.fields.join() !== fields.join()) throw new Error(`index ${name} on ${coll} is already declared differently`);
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
    try { await this.log?.close(); } finally { await this.unlock?.(); }
  }

  stats(): EmbeddedStoreStats {
    const l = this.log;
    return {
      syncs: l?.syncs ?? 0, records: l?.records ?? 0, logBytes: l?.bytes ?? 0,
      compactions: l?.compactions ?? 0, docsExamined: this.examined, compactionError: l?.compactionError,
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
    if (cmp && skip + limit === 1) return out.length ? [out.reduce((a, b) => (cmp(b, a) < 0 ? b : a))] : [];
    if (cmp) out.sort(cmp);
    return skip > 0 || limit !== Infinity ? out.slice(skip, skip + limit) : out;
  }

  /** Stores `next` (replacing `prev`) after the unique checks; throws before any change. */
  put(coll: string, st: State, prev: Raw | undefined, next: Raw): void {
    if (!prev && st.docs.has(next._id)) throw new DuplicateKeyError(coll, '_id_', { _id: next._id });
    for (const ix of st.indexes) {
      if (!ix.unique) continue;
      for (const k of uniqueKeys(next, ix.fields)) {
        const owner = ix.keys.get(k);
        if (owner !== undefined && owner !== next._id) throw new DuplicateKeyError(coll, ix.name, keyObject(ix.fields, k));
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
  constructor(private readonly db: Embedded, readonly name: string, private readonly st: State) {}

  insertOne(doc: T): Promise<void> {
    return this.db.run(() => {
      const next = storable(doc) as Raw;
      if (typeof next._id !== 'string') throw new TypeError(`${this.name}: _id must be a string`);
      this.db.put(this.name, this.st, undefined, next);
    });
  }

  findOne(filter: Filter, options?: FindOptions): Promise<T | null> {
    return this.db.run(() => copy<T>(this.db.select(this.st, filter, { ...options, limit: 1 })[0]));
  }

  find(filter: Filter, options?: FindOptions): Promise<T[]> {
    return this.db.run(() => this.db.select(this.st, filter, options).map((d) => copy<T>(d)!));
  }

  count(filter: Filter): Promise<number> {
    return this.db.run(() => (Object.keys(filter).length ? this.db.select(this.st, filter).length : this.st.docs.size));
  }

  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<UpdateResult> {
    return this.db.run(() => {
      validateUpdate(update);
      const [cur] = this.db.select(this.st, filter, { limit: 1 });
      if (cur) return { matched: 1, modified: this.db.modify(this.name, this.st, cur, update) ? 1 : 0 };
      if (!options?.upsert) return { matched: 0, modified: 0 };
      return { matched: 0, modified: 0, upsertedId: this.db.upsert(this.name, this.st, filter, update)._id };
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

export async function openEmbeddedStore(options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
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
      for (const [c, st] of states) for (const doc of st.docs.values()) out.push({ c, op: 'put', doc });
      return out;
    };
    const log = new Log(dir, fh, gen, bytes, options.compactAfterBytes ?? 64 * 1024 * 1024, cut);
    return new Embedded(states, log, unlock);
  } catch (err) {
    await unlock();
    throw err;
  }
}
