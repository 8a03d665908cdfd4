/**
 * Embedded DocumentStore on SQLite (better-sqlite3): documents live in `<dir>/store.sqlite3`
 * (tables.ts, collection.ts), or in an in-memory database without `dir`. Guarantees, beyond
 * the port's:
 * - GROUP COMMIT: the first write of a tick opens `BEGIN IMMEDIATE` (if it fails, the
 *   transaction is rolled back and the next write opens it again); each later write of the tick
 *   runs in its own SAVEPOINT (a failing one rolls back only itself and rejects only its own
 *   promise) and a setImmediate commits the group. A write resolves only after its COMMIT
 *   returned. Reads run at once, in call order (they see earlier writes of the open group), and
 *   resolve after that group commits too, so no caller observes a state a crash could undo;
 * - durability: WAL journal. `sync: 'normal'` (default) — a committed transaction is in the
 *   OS's hands, so it survives kill -9 of the process; power loss may roll back the last commits
 *   but never corrupts the file. `sync: 'full'` (STORE_SYNC=full) fsyncs the WAL on every
 *   commit, so it also survives power loss. stats().synchronous reads the PRAGMA back;
 * - if COMMIT fails, every operation of the group rejects and the store refuses every later
 *   one; healthy() is false;
 * - the WAL is checkpointed off the event loop (checkpointer.ts, PASSIVE) each time about
 *   `checkpointAfterBytes` of documents were written since the last one (stats().compactions),
 *   then emptied between two commits on this connection (stats().walTruncations), so the WAL
 *   stays bounded under writes that never pause (checkpointer.ts);
 * - one process owns a dir (lock.ts); the first open of a dir holding the pre-SQLite store's
 *   files imports them once (migrate.ts).
 * Why a rowid table and not WITHOUT ROWID: see tables.ts.
 * Tests: core/test/store.embedded.test.ts (contract on memory, dir and a checkpointing dir;
 * kill -9 rounds; lock; STORE_SYNC; group commit; pushdown), core/test/store.checkpoint.test.ts,
 * core/test/store.transaction.test.ts, core/test/store.columns.test.ts,
 * core/test/store.upgrade.test.ts.
 */
import { existsSync, statSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import type { Statement } from 'better-sqlite3';
import type { Collection, CollectionSpec, Doc, DocumentStore, TxScope } from '../port.js';
import { createLogger, type Logger } from '../../log.js';
import { Checkpointer } from './checkpointer.js';
import { SqliteCollection, type StoreCore } from './collection.js';
import { acquireLock, fsyncDir } from './lock.js';
import { importLegacyStore } from './migrate.js';
import { createMetaTables, Table } from './tables.js';

export type StoreSync = 'normal' | 'full';

export interface EmbeddedStoreOptions {
  /** Data directory; without it the database is in memory. */
  dir?: string;
  /** Document bytes written between WAL checkpoints; default 4 MiB. */
  checkpointAfterBytes?: number;
  /** Pre-SQLite name of checkpointAfterBytes, still accepted. */
  compactAfterBytes?: number;
  /** 'normal' (default): survives kill -9; 'full': fsync per commit, survives power loss. */
  sync?: StoreSync;
  /** Where the one-time import of a pre-SQLite store is reported. */
  logger?: Logger;
}

export interface EmbeddedStoreStats {
  /** Commits; `records / syncs` is the group-commit factor. */
  syncs: number;
  /** Write operations committed or pending. */
  records: number;
  /** Size of the WAL file (0 in memory). */
  logBytes: number;
  /** WAL checkpoints. */
  compactions: number;
  /** Checkpoints that emptied the WAL file (the step after the worker's rounds). */
  walTruncations: number;
  /** Rows read from SQLite by queries since open. */
  docsExamined: number;
  /** Last checkpoint failure; the WAL still holds everything, the checkpoint is retried. */
  compactionError?: string;
  /** PRAGMA synchronous as SQLite reports it. */
  synchronous: 'off' | 'normal' | 'full' | 'extra';
}

export interface EmbeddedStore extends DocumentStore {
  stats(): EmbeddedStoreStats;
  transaction<R>(fn: (tx: TxScope) => R): Promise<R>;
}

const STATEMENT_CACHE = 512;
const SYNC_NAMES = ['off', 'normal', 'full', 'extra'] as const;

type Waiter = { resolve: () => void; reject: (e: Error) => void };

class Embedded implements EmbeddedStore, StoreCore {
  private closed = false;
  private failed?: Error;
  private group: Waiter[] | null = null;
  private readonly tables = new Map<string, Table>();
  private readonly stmts = new Map<string, Statement>();
  private readonly begin: Statement;
  private readonly commitGroup: Statement;
  private readonly savepoint: Statement;
  private readonly release: Statement;
  private readonly rollbackTo: Statement;
  private syncs = 0;
  private records = 0;
  private rowsRead = 0;
  private bytesSinceCheckpoint = 0;
  private truncatePending = false;
  private truncations = 0;

  constructor(
    private readonly db: Database.Database,
    private readonly walFile: string | null,
    private readonly checkpointAfter: number,
    private readonly checkpointer?: Checkpointer,
    private readonly unlock?: () => Promise<void>,
  ) {
    // Prepared once: the group's BEGIN and COMMIT run on every tick that writes.
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commitGroup = db.prepare('COMMIT');
    this.savepoint = db.prepare('SAVEPOINT op');
    if (checkpointer) checkpointer.onCaughtUp = () => this.caughtUp();
    this.release = db.prepare('RELEASE op');
    this.rollbackTo = db.prepare('ROLLBACK TO op');
  }

  stmt(sql: string): Statement {
    let s = this.stmts.get(sql);
    if (!s) {
      if (this.stmts.size >= STATEMENT_CACHE) this.stmts.clear();
      s = this.db.prepare(sql);
      if (s.reader) s.pluck();
      this.stmts.set(sql, s);
    }
    return s;
  }

  examined(n: number): void {
    this.rowsRead += n;
  }

  wrote(bytes: number): void {
    this.bytesSinceCheckpoint += bytes;
  }

  private live(): void {
    if (this.closed) throw new Error('embedded store is closed');
    if (this.failed) throw this.failed;
  }

  private wait<R>(value: R): Promise<R> {
    if (!this.group) return Promise.resolve(value);
    const g = this.group;
    return new Promise((resolve, reject) => g.push({ resolve: () => resolve(value), reject }));
  }

  write<R>(op: () => R): Promise<R> {
    try {
      this.live();
      if (!this.group) return this.firstWrite(op);
      this.savepoint.run();
      let result: R;
      try {
        result = op();
      } catch (err) {
        this.rollbackTo.run();
        this.release.run();
        throw err;
      }
      this.release.run();
      this.records++;
      return this.wait(result);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The write that opens a group needs no savepoint: nothing else is in the transaction yet, so
   * if it throws, rolling the whole transaction back undoes exactly its own changes (the
   * commit already scheduled then finds no group). A sequential writer saves two statements
   * per write.
   */
  private firstWrite<R>(op: () => R): Promise<R> {
    this.begin.run();
    let result: R;
    try {
      result = op();
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
    this.group = [];
    setImmediate(() => this.commit());
    this.records++;
    return this.wait(result);
  }

  read<R>(op: () => R): Promise<R> {
    try {
      this.live();
      return this.wait(op());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private commit(): void {
    const waiters = this.group;
    if (!waiters) return;
    this.group = null;
    try {
      this.commitGroup.run();
    } catch (err) {
      this.failed = err as Error;
      try {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
      } catch {
        // the failure above is the one reported
      }
      for (const w of waiters) w.reject(err as Error);
      return;
    }
    this.syncs++;
    for (const w of waiters) w.resolve();
    if (this.truncatePending) this.caughtUp();
    this.maybeCheckpoint();
  }

  private walBytes(): number {
    try {
      return this.walFile ? statSync(this.walFile).size : 0;
    } catch {
      return 0;
    }
  }

  /**
   * The checkpointer's passive rounds are done: the few frames committed since its last round
   * are copied here, on this connection, between two commits (never inside a group), and the
   * WAL file is emptied (checkpointer.ts says why).
   */
  private caughtUp(): void {
    if (this.closed || this.failed) return;
    if (this.group) {
      this.truncatePending = true;
      return;
    }
    this.truncatePending = false;
    try {
      const [r] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
      if (r?.busy === 0) this.truncations++;
    } catch (err) {
      // The WAL still holds everything; the next request tries again.
      if (this.checkpointer) this.checkpointer.error = String(err);
    }
  }

  private maybeCheckpoint(): void {
    if (!this.checkpointer || this.bytesSinceCheckpoint < this.checkpointAfter) return;
    if (this.checkpointer.request()) this.bytesSinceCheckpoint = 0;
  }

  private readonly scope: TxScope = <T extends Doc>(c: Collection<T>) => {
    const view = c instanceof SqliteCollection ? (c as SqliteCollection<T>).txView(this) : null;
    if (!view) throw new TypeError('transaction: the collection is not of this store');
    return view;
  };

  /** One savepoint of the group for the whole of `fn`: its writes commit together or not at all. */
  transaction<R>(fn: (tx: TxScope) => R): Promise<R> {
    return this.write(() => fn(this.scope));
  }

  private table(name: string): Table {
    let table = this.tables.get(name);
    if (!table) {
      table = new Table(this.db, name, (sql) => this.stmt(sql));
      this.tables.set(name, table);
    }
    return table;
  }

  /**
   * Opens every collection that has indexes, so a store whose indexes are still on expressions
   * is converted now, once (tables.ts upgradeIndexes), not in the first request to touch it.
   */
  openIndexed(logger?: Logger): void {
    const names = this.db
      .prepare('SELECT DISTINCT coll FROM _af_indexes ORDER BY coll')
      .pluck()
      .all() as string[];
    const started = Date.now();
    let indexes = 0;
    let collections = 0;
    for (const name of names) {
      const n = this.table(name).upgraded;
      indexes += n;
      if (n) collections++;
    }
    if (indexes)
      logger?.info(
        `store: moved ${indexes} indexes of ${collections} collections from expressions onto columns in ${Date.now() - started} ms (once)`,
      );
  }

  collection<T extends Doc>(spec: CollectionSpec): Collection<T> {
    this.live();
    const table = this.table(spec.name);
    for (const ix of spec.indexes ?? []) table.declare(ix);
    return new SqliteCollection<T>(this, table);
  }

  async ready(): Promise<void> {
    this.live();
  }

  async healthy(): Promise<boolean> {
    return !this.closed && !this.failed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.commit();
    this.closed = true;
    try {
      await this.checkpointer?.close();
      this.db.close();
    } finally {
      await this.unlock?.();
    }
  }

  stats(): EmbeddedStoreStats {
    const level = this.closed ? 1 : (this.db.pragma('synchronous', { simple: true }) as number);
    return {
      syncs: this.syncs,
      records: this.records,
      logBytes: this.walBytes(),
      compactions: this.checkpointer?.checkpoints ?? 0,
      walTruncations: this.truncations,
      docsExamined: this.rowsRead,
      compactionError: this.checkpointer?.error,
      synchronous: SYNC_NAMES[level] ?? 'normal',
    };
  }
}

function tune(db: Database.Database, sync: StoreSync, onDisk: boolean): void {
  if (onDisk) {
    db.pragma('journal_mode = WAL');
    db.pragma('wal_autocheckpoint = 0');
  }
  db.pragma(`synchronous = ${sync === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('cache_size = -32768');
  db.pragma('mmap_size = 134217728');
  db.pragma('temp_store = MEMORY');
  createMetaTables(db);
}

export async function openEmbeddedStore(
  options: EmbeddedStoreOptions = {},
): Promise<EmbeddedStore> {
  const sync = options.sync ?? 'normal';
  const checkpointAfter = options.checkpointAfterBytes ?? options.compactAfterBytes ?? 4 << 20;
  if (options.dir === undefined) {
    const db = new Database(':memory:');
    tune(db, sync, false);
    return new Embedded(db, null, checkpointAfter);
  }
  const dir = resolve(options.dir);
  const created = await mkdir(dir, { recursive: true });
  if (created) await fsyncDir(dirname(dir));
  const unlock = await acquireLock(dir);
  try {
    const file = join(dir, 'store.sqlite3');
    if (!existsSync(file))
      await importLegacyStore(dir, file, options.logger ?? createLogger('info'));
    const db = new Database(file);
    try {
      tune(db, sync, true);
    } catch (err) {
      db.close();
      throw err;
    }
    const store = new Embedded(db, `${file}-wal`, checkpointAfter, new Checkpointer(file), unlock);
    try {
      store.openIndexed(options.logger ?? createLogger('info'));
    } catch (err) {
      db.close(); // the checkpointer has not started; the lock is released below
      throw err;
    }
    return store;
  } catch (err) {
    await unlock();
    throw err;
  }
}
